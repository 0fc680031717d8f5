"""Compile-time checks Kubernetes' CEL environment runs after type-checking.

From Kubernetes 1.29 (kubernetes/kubernetes ``staging/src/k8s.io/apiserver/pkg/cel/
environment/base.go`` @ v1.36.0) the base environment adds cel-go's AST validators
(google/cel-go ``cel/validator.go`` @ v0.26.0): literal arguments of ``duration``,
``timestamp`` and ``matches`` must be valid ("invalid duration argument"), and list and map
literals must be homogeneous ("expected type 'int' but found 'string'"), except inside a
``format`` call. Before 1.29 the checker option ``HomogeneousAggregateLiterals`` already
rejected mixed literals; gen applies the same rule at every version.
"""

from __future__ import annotations

import re
from datetime import datetime

from gen.dra.cel._ast import Node, type_name

__all__ = [
    "RE2_ONLY",
    "aggregate_errors",
    "literal_errors",
    "regex_program_errors",
    "valid_duration",
    "valid_regex",
    "valid_timestamp",
]

_UNIT = r"(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h)"
_DURATION = re.compile(rf"[-+]?(?:(?:\d+(?:\.\d*)?|\.\d+){_UNIT})+|[-+]?0")
_UNIT_NS = {"ns": 1, "us": 1_000, "\u00b5s": 1_000, "\u03bcs": 1_000, "ms": 1_000_000,
            "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9}
_PART = re.compile(rf"(\d*)(?:\.(\d*))?({_UNIT})")
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(Z|[+-]\d{2}:\d{2})"
)
# What Go's regexp (RE2) refuses and Python's re accepts: look-around, back-references,
# possessive and atomic groups, conditionals.
_NOT_RE2 = re.compile(r"\(\?(?:=|!|<=|<!|>|\(|P=)|\\[1-9]|(?<!\\)[*+?}]\+")
RE2_ONLY = re.compile(r"\\[pPQEzC]|\[\[:")
"""RE2 syntax Python's ``re`` lacks or reads differently: Unicode classes, POSIX classes,
quoting, ``\\z``."""


def valid_duration(text: str) -> bool:
    """Go's ``time.ParseDuration`` (what cel-go's ``duration()`` calls) accepts ``text``."""
    if _DURATION.fullmatch(text) is None:
        return False
    total = 0
    for whole, frac, unit in _PART.findall(text):
        scale = _UNIT_NS[unit]
        total += int(whole or 0) * scale + (int(frac) * scale // 10 ** len(frac) if frac else 0)
    return total <= (1 << 63) - 1 or (text.startswith("-") and total == 1 << 63)


def valid_timestamp(text: str) -> bool:
    """Go's ``time.Parse(time.RFC3339, text)`` accepts it and the year is 1–9999."""
    match = _RFC3339.fullmatch(text)
    if match is None:
        return False
    year, month, day, hour, minute, second = (int(g) for g in match.groups()[:6])
    offset = match[8]
    if offset != "Z" and (int(offset[1:3]) > 23 or int(offset[4:6]) > 59):
        return False
    try:
        datetime(year, month, day, hour, minute, second)
    except ValueError:
        return False
    return year >= 1


def valid_regex(pattern: str) -> bool:
    """RE2 (Go's ``regexp.Compile``) accepts ``pattern``, as far as Python's ``re`` can tell.

    A pattern with RE2-only syntax (:data:`RE2_ONLY`) is taken as valid: Python cannot check
    it, and refusing it would refuse what the API server may accept.
    """
    if _NOT_RE2.search(pattern):
        return False
    if RE2_ONLY.search(pattern):
        return True
    try:
        re.compile(pattern)
    except (re.error, OverflowError, RecursionError):
        return False
    return True


_LITERAL_CHECKS = {"duration": valid_duration, "timestamp": valid_timestamp,
                   "matches": valid_regex}


def _go_regex_error(pattern: str) -> str:
    """Go's ``regexp.Compile`` wording for the commonest mistakes; a generic one otherwise."""
    depth = 0
    for ch in re.sub(r"\\.|\[(?:\\.|[^\]])*\]", "", pattern):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            return f"unexpected ): `{pattern}`"
    if depth > 0:
        return f"missing closing ): `{pattern}`"
    return f"invalid regular expression: `{pattern}`"


def regex_program_errors(root: Node) -> list[tuple[Node, str]]:
    """(pattern node, message) for each constant pattern of ``find`` / ``findAll`` that RE2
    refuses: Kubernetes' regex library compiles constant patterns when the program is
    instantiated (``cel.OptimizeRegex``), which DRA's compiler does at validation
    ("program instantiation failed: error parsing regexp: unexpected ): `)`")."""
    out = []
    for node in root.walk():
        if node.kind != "call" or node.name not in {"find", "findAll"} or not node.has_target:
            continue
        arg = node.args[0] if node.args else None
        if arg is not None and arg.kind == "const" and isinstance(arg.value, str) and (
            not valid_regex(arg.value)
        ):
            out.append((arg, "program instantiation failed: error parsing regexp: "
                        + _go_regex_error(arg.value)))
    return out


def literal_errors(root: Node) -> list[tuple[Node, str]]:
    """(argument node, message) for each invalid literal argument."""
    out = []
    for node in root.walk():
        check = _LITERAL_CHECKS.get(node.name) if node.kind == "call" else None
        if check is None or not node.args:
            continue
        arg = node.args[0]
        if arg.kind == "const" and isinstance(arg.value, str) and not check(arg.value):
            out.append((arg, f"invalid {node.name} argument"))
    return out


def _element_type(raw: bytes) -> str:
    name = type_name(raw)
    # An optional element ([?x], {?k: v}) is checked by the type it holds.
    match = re.fullmatch(r"optional_type\((.*)\)", name)
    return match[1] if match else name


def aggregate_errors(root: Node, types: dict[int, bytes]) -> list[tuple[Node, str]]:
    """(element node, message) for each list or map literal that mixes types."""
    out: list[tuple[Node, str]] = []
    stack: list[tuple[Node, bool]] = [(root, False)]
    while stack:
        node, exempt = stack.pop()
        if node.kind in {"list", "map"} and not exempt:
            groups = [node.children] if node.kind == "list" else [
                node.children[0::2], node.children[1::2]
            ]
            for group in groups:
                first: str | None = None
                for element in group:
                    kind = _element_type(types.get(element.id, b""))
                    if first is None:
                        first = kind
                    elif kind != first:
                        out.append((element, f"expected type '{first}' but found '{kind}'"))
                        break
        for child in node.children:
            inside = node.kind == "call" and node.name == "format"
            stack.append((child, inside or (exempt and node.kind in {"list", "map"})))
    return out
