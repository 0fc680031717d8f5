"""Compile-time checks Kubernetes' CEL environment runs after type-checking.

From Kubernetes 1.29 (kubernetes/kubernetes ``staging/src/k8s.io/apiserver/pkg/cel/
environment/base.go`` @ v1.36.0) the base environment adds cel-go's AST validators
(google/cel-go ``cel/validator.go`` @ v0.26.0): literal arguments of ``duration``,
``timestamp`` and ``matches`` must be valid ("invalid duration argument"), and list and map
literals must be homogeneous ("expected type 'int' but found 'string'"), except inside a
``format`` call. Before 1.29 the checker option ``HomogeneousAggregateLiterals`` already
rejected mixed literals; gen applies the same rule at every version.

cel-go's sets extension declares its functions over ``list(T)``, both arguments with the
same type parameter (google/cel-go ``ext/sets.go`` @ v0.26.0): ``sets.contains([1], [1.0])``
has no matching overload. cel-expr-python has no type parameters, so gen declares them over
``list(dyn)`` and :func:`overload_errors` refuses what cel-go's unification would (found by
the judge's oracle, tools/judge/oracle.py).
"""

from __future__ import annotations

import re
from datetime import datetime

from gen.dra.cel._ast import Node, type_name

__all__ = [
    "RE2_ONLY",
    "aggregate_errors",
    "literal_errors",
    "overload_errors",
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


def _constant_pattern(node: Node) -> tuple[Node, bool] | None:
    """(the string constant, whether it was wrapped) of a pattern that is a constant, maybe
    inside ``dyn()``: cel-go plans ``dyn(x)`` as ``x`` itself, so the regex optimisation sees
    the constant through it."""
    wrapped = False
    while node.kind == "call" and node.name == "dyn" and len(node.args) == 1:
        node, wrapped = node.args[0], True
    return (node, wrapped) if node.kind == "const" and isinstance(node.value, str) else None


def regex_program_errors(root: Node) -> list[tuple[Node, str]]:
    """(pattern node, message) for each constant pattern of ``find`` / ``findAll`` (or of
    ``matches``, written inside ``dyn()``) that RE2 refuses: the regex library and cel-go
    compile constant patterns when the program is instantiated (``cel.OptimizeRegex``),
    which DRA's compiler does at validation ("program instantiation failed: error parsing
    regexp: unexpected ): `)`"). A plain constant of ``matches`` is refused earlier, by the
    literal validator (:func:`literal_errors`); the judge's oracle (tools/judge/oracle.py)
    found the ``dyn()`` cases."""
    out = []
    for node in root.walk():
        if node.kind != "call" or node.name not in {"find", "findAll", "matches"}:
            continue
        args = node.args if node.has_target else node.args[1:]
        found = _constant_pattern(args[0]) if args else None
        if found is None or (node.name == "matches" and not found[1]):
            continue
        pattern = found[0]
        if not valid_regex(str(pattern.value)):
            out.append((pattern, "program instantiation failed: error parsing regexp: "
                        + _go_regex_error(str(pattern.value))))
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


_SETS_FUNCTIONS = frozenset({"sets.contains", "sets.equivalent", "sets.intersects"})


def _type_arguments(name: str, kind: str) -> list[str] | None:
    """The parameters of ``kind(...)`` in a type name (``map(string, list(int))``)."""
    if not (name.startswith(f"{kind}(") and name.endswith(")")):
        return None
    inner, parts, depth, start = name[len(kind) + 1:-1], [], 0, 0
    for i, char in enumerate(inner):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            parts.append(inner[start:i].strip())
            start = i + 1
    return [*parts, inner[start:].strip()]


def _unifies(a: str, b: str) -> bool:
    """Whether one type parameter can stand for both types (dyn stands for any)."""
    if a == b or "dyn" in (a, b):
        return True
    for kind in ("list", "map", "optional_type"):
        left, right = _type_arguments(a, kind), _type_arguments(b, kind)
        if left is not None and right is not None:
            return len(left) == len(right) and all(map(_unifies, left, right))
    return False


def overload_errors(root: Node, types: dict[int, bytes]) -> list[tuple[Node, str]]:
    """(call, message) for each sets-extension call whose two lists' element types do not
    unify, in cel-go's words."""
    out = []
    for node in root.walk():
        if node.kind != "call" or node.name not in _SETS_FUNCTIONS or len(node.args) != 2:
            continue
        first, second = (type_name(types.get(arg.id, b"")) for arg in node.args)
        a, b = _type_arguments(first, "list"), _type_arguments(second, "list")
        if a is not None and b is not None and not _unifies(a[0], b[0]):
            out.append((node, f"found no matching overload for '{node.name}' applied to "
                              f"'({first}, {second})'"))
    return out
