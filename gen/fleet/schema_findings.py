"""pydantic's validation errors as located GEN002 findings, worded for a profile's author:
the key path to edit, the expected value, and a did-you-mean for a misspelt key or kind."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from gen.errors import Finding
from gen.fleet.loader import Document, KeyPath, format_key_path
from gen.models import Cluster, GPUClass, InferenceService, MIGLayout, ModelProfile
from gen.rules import finding

__all__ = ["did_you_mean", "pydantic_findings"]


def pydantic_findings(err: ValidationError, doc: Document) -> list[Finding]:
    """A GEN002 for each of pydantic's errors, located in ``doc``."""
    findings = []
    issues = err.errors(include_url=False)
    for issue in issues:
        loc: Sequence[str | int] = issue["loc"]
        if issue["type"] == "too_short" and any(
            len(other["loc"]) > len(loc) and tuple(other["loc"][: len(loc)]) == tuple(loc)
            for other in issues
        ):
            # pydantic counts only the tuple items that validated; the items' own
            # errors are reported, a "too short" on top of them would be wrong.
            continue
        where, path = doc.locate(loc)
        message, hint = _words(issue, doc, path)
        # Segments pydantic reports beyond what exists in the YAML (a missing key) are
        # still part of the path the user must fix.
        shown: list[str | int] = list(path)
        missing = [s for s in loc[len(_matched_prefix(loc, path)):] if not _is_tag(s)]
        if issue["type"] == "missing":
            shown.extend(missing)
        findings.append(
            finding("GEN002", message, where, key_path=format_key_path(shown), hint=hint)
        )
    return findings


def did_you_mean(word: str, choices: Iterable[str], cutoff: float = 0.6) -> str:
    """``; did you mean 'x'?`` for the closest choice, or nothing."""
    import difflib

    close = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=cutoff)
    return f"; did you mean {close[0]!r}?" if close else ""


def _words(issue: Mapping[str, Any], doc: Document, path: KeyPath) -> tuple[str, str]:
    """The message and hint of one pydantic error, in words: no class names, what YAML
    read when a type is wrong and how to quote it, did-you-mean for names."""
    from gen.models import KINDS
    from gen.models._base import WrongScalar, describe_scalar

    kind = issue["type"]
    message = str(issue["msg"])
    value = issue.get("input")
    raw = doc.scalars.get(path)
    read = f"YAML read {raw!r} as {describe_scalar(value)}" if raw is not None else (
        f"YAML read {describe_scalar(value)}")
    if isinstance(value, WrongScalar):
        if isinstance(value.value, str):
            if _reads_as_scalar(value.value):
                return (f"expected {value.expected}, but this is the quoted string "
                        f"{value.value!r}", "remove the quotes")
            return f"expected {value.expected}, not the text {value.value!r}", ""
        raw = doc.scalars.get(path, str(value.value))
        example = "true or false" if "boolean" in value.expected else "a number, e.g. 1"
        return (f"expected {value.expected}, but YAML read {raw!r} as "
                f"{describe_scalar(value.value)}", f"write {example}")
    if kind == "extra_forbidden":
        # pydantic's loc ends at the unknown key, which exists in the YAML.
        key = str(issue["loc"][-1])
        allowed = _allowed_keys(issue["loc"])
        return (f"unknown key {key!r}{did_you_mean(key, allowed)}",
                "allowed keys here: " + ", ".join(sorted(allowed)) if allowed else
                "check the spelling; 'gen schema' lists every allowed key")
    if kind == "union_tag_not_found":
        return ("missing key 'kind'", "add 'kind:' with one of: " + ", ".join(KINDS))
    if kind == "union_tag_invalid":
        tag = str((issue.get("ctx") or {}).get("tag", ""))
        return (f"unknown kind {tag!r}{did_you_mean(tag, KINDS)}",
                "kind must be one of: " + ", ".join(KINDS))
    if kind == "string_type" and not isinstance(value, str):
        quoted = raw if raw is not None else str(value)
        return f"expected a string, but {read}", f'quote it: "{quoted}"'
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        keys = _class_keys(str((issue.get("ctx") or {}).get("class_name", "")))
        hint = ("keys: " + ", ".join(keys)) if keys else ""
        return f"expected a mapping (key: value lines), but {read}", hint
    if kind in ("tuple_type", "list_type"):
        return (f"expected a list, but {read}",
                "write [a, b] or one '- item' line per entry")
    if kind == "value_error":
        return message.removeprefix("Value error, "), ""
    if kind == "string_pattern_mismatch":
        return _pattern_message(issue, message), ""
    if kind in ("int_type", "float_type", "bool_type", "int_parsing", "float_parsing",
                "bool_parsing") and not isinstance(value, dict | list):
        expected = {"int": "an integer", "flo": "a number", "boo": "a boolean (true or false)"}
        return f"expected {expected[kind[:3]]}, but {read}", ""
    return message, ""


def _reads_as_scalar(text: str) -> bool:
    """Whether YAML would read ``text``, unquoted, as something other than a string."""
    import yaml

    try:
        return not isinstance(yaml.safe_load(text), str)
    except yaml.YAMLError:
        return False


def _class_keys(class_name: str) -> list[str]:
    """The keys of the profile model called ``class_name`` (pydantic names the class)."""
    from gen import models

    cls = getattr(models, class_name, None)
    from pydantic import BaseModel

    if isinstance(cls, type) and issubclass(cls, BaseModel):
        return list(cls.model_fields)
    return []


def _allowed_keys(loc: Sequence[str | int]) -> list[str]:
    """The keys the model holding the last segment of ``loc`` accepts (for did-you-mean)."""
    import typing

    from pydantic import BaseModel

    kinds: dict[str, Any] = {"Cluster": Cluster, "GPUClass": GPUClass,
                             "InferenceService": InferenceService, "MIGLayout": MIGLayout,
                             "Model": ModelProfile}
    if not loc or loc[0] not in kinds:
        return []
    current: Any = kinds[str(loc[0])]

    def unwrap(annotation: Any) -> list[Any]:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            return unwrap(typing.get_args(annotation)[0])
        if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
            return [m for a in typing.get_args(annotation) for m in unwrap(a)]
        return [annotation]

    for segment in loc[1:-1]:
        nxt: Any = None
        for candidate in unwrap(current):
            origin = typing.get_origin(candidate)
            if isinstance(candidate, type) and issubclass(candidate, BaseModel):
                if isinstance(segment, str) and segment in candidate.model_fields:
                    nxt = candidate.model_fields[segment].annotation
            elif origin in (list, tuple) and isinstance(segment, int):
                nxt = typing.get_args(candidate)[0]
            elif origin is dict:
                nxt = typing.get_args(candidate)[1]
            if nxt is not None:
                break
        if nxt is None:
            return []
        current = nxt
    models = [c for c in unwrap(current) if isinstance(c, type) and issubclass(c, BaseModel)]
    return list(models[0].model_fields) if models else []


def _pattern_message(issue: Mapping[str, Any], message: str) -> str:
    """A pattern mismatch in words where the pattern is a known one; a value with a line
    break is said to be one (it would otherwise look like another line of output)."""
    from gen.models._types import PATTERN_WORDS

    value = issue.get("input")
    context = issue.get("ctx") or {}
    words = PATTERN_WORDS.get(str(context.get("pattern", "")))
    shown = repr(value) if isinstance(value, str) else ""
    if isinstance(value, str) and ("\n" in value or "\r" in value):
        return f"{shown} holds a line break; " + (f"use {words}" if words else message)
    if words is not None:
        return f"{shown} is not valid: use {words}"
    return message


def _is_tag(segment: str | int) -> bool:
    return isinstance(segment, str) and segment in (
        "Cluster", "GPUClass", "InferenceService", "MIGLayout", "Model",
    )


def _matched_prefix(loc: Sequence[str | int], path: KeyPath) -> Sequence[str | int]:
    """The part of ``loc`` that produced ``path`` (tags skipped)."""
    i = 0
    matched = 0
    for n, segment in enumerate(loc):
        if i < len(path) and segment == path[i]:
            i += 1
            matched = n + 1
    return loc[:matched]
