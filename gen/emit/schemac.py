"""Compile JSON Schemas into nested Python closures: validation several times faster.

``jsonschema`` interprets a schema on every call: each keyword is looked up, each ``$ref``
resolved through the registry, a new validator evolved per subschema. The Kubernetes
schemas use a small subset of JSON Schema, so :class:`Compiler` turns a schema into plain
closures once: ``$ref`` is resolved at compile time (recursive schemas such as
``JSONSchemaProps`` bind lazily), ``properties`` become a dict lookup, ``type`` a set lookup.

A compiled check is a function ``check(instance) -> errors``: a sequence of
``(path, message)`` pairs, empty when the instance is valid. ``path`` is the tuple of keys and
indices from the checked instance to the failing value (jsonschema's ``absolute_path``) and
the message is word for word the one jsonschema gives, one per violation, every violation.

Supported: ``type``, ``properties``, ``additionalProperties``, ``required``, ``items``,
``enum``, ``const``, ``oneOf``, ``anyOf``, ``allOf``, ``not``, ``if``/``then``/``else``,
``pattern``, ``minimum``, ``maximum``, ``exclusiveMinimum``, ``exclusiveMaximum``,
``minItems``, ``maxItems``, ``minLength``, ``maxLength``, ``minProperties``,
``maxProperties``, ``$ref`` to JSON pointers in known documents; annotations and ``x-*``
extensions are ignored, and so is ``format`` (jsonschema checks it only when asked to). Any
other keyword raises :class:`UnsupportedSchema` at compile time, so a caller can fall back to
jsonschema for that schema instead of silently skipping a constraint.
"""

from __future__ import annotations

import functools
import json
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urldefrag, urljoin

__all__ = [
    "Check",
    "Compiler",
    "Draft",
    "Error",
    "UnsupportedSchema",
    "compile_file",
    "compile_schema",
    "compile_shared",
]

Error = tuple[tuple[Any, ...], str]
Errors = Sequence[Error]
Check = Callable[[Any], Errors]
Draft = Literal["2020-12", "draft-07"]

_OK: Errors = ()

# Keywords that never constrain an instance (annotations, containers, extensions).
_IGNORED = frozenset({
    "$schema", "$id", "$comment", "$defs", "definitions", "description", "title",
    "default", "examples", "readOnly", "writeOnly", "deprecated", "format",
    "contentEncoding", "contentMediaType", "then", "else",
})
# Keywords the fused object check handles (when no other constraining keyword is present).
_OBJECT_GROUP = frozenset({"type", "properties", "additionalProperties", "required"})


class UnsupportedSchema(ValueError):
    """The schema uses something the compiler does not implement: use jsonschema instead."""


def _ok(_instance: Any) -> Errors:
    return _OK


def _prefix(key: Any, errors: Errors) -> list[Error]:
    return [((key, *path), message) for path, message in errors]


# ---------------------------------------------------------------- equality as jsonschema has it


def _equal(one: Any, two: Any) -> bool:
    """jsonschema's ``equal``: ``True`` is not ``1``, also inside lists and objects."""
    if one is two:
        return True
    if isinstance(one, str) or isinstance(two, str):
        return bool(one == two)
    if isinstance(one, Sequence) and isinstance(two, Sequence):
        return len(one) == len(two) and all(_equal(i, j) for i, j in zip(one, two, strict=True))
    if isinstance(one, Mapping) and isinstance(two, Mapping):
        return len(one) == len(two) and all(
            key in two and _equal(value, two[key]) for key, value in one.items()
        )
    return bool(_unbool(one) == _unbool(two))


_TRUE, _FALSE = object(), object()


def _unbool(value: Any) -> Any:
    if value is True:
        return _TRUE
    if value is False:
        return _FALSE
    return value


# ---------------------------------------------------------------- types


def _is_integer(x: Any) -> bool:
    if isinstance(x, bool):
        return False
    return isinstance(x, int) or (isinstance(x, float) and x.is_integer())


def _is_number(x: Any) -> bool:
    return not isinstance(x, bool) and isinstance(x, numbers.Number)


_TYPE_PREDICATES: dict[str, Callable[[Any], bool]] = {
    "string": lambda x: isinstance(x, str),
    "object": lambda x: isinstance(x, dict),
    "array": lambda x: isinstance(x, list),
    "boolean": lambda x: isinstance(x, bool),
    "null": lambda x: x is None,
    "integer": _is_integer,
    "number": _is_number,
}
# Exact Python types that certainly satisfy a JSON type: one set lookup on the fast path.
_FAST_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "object": (dict,), "array": (list,), "boolean": (bool,),
    "null": (type(None),), "integer": (int,), "number": (int, float),
}


def _type_predicate(types: Any) -> tuple[Callable[[Any], bool], Callable[[Any], str]]:
    """A predicate for a ``type`` value and the message for an instance that fails it."""
    names = [types] if isinstance(types, str) else types
    if not isinstance(names, list) or not names or any(n not in _TYPE_PREDICATES for n in names):
        raise UnsupportedSchema(f"type {types!r}")
    fast = frozenset(t for n in names for t in _FAST_TYPES[n])
    slow = tuple(_TYPE_PREDICATES[n] for n in names)
    reprs = ", ".join(repr(n) for n in names)

    def matches(x: Any) -> bool:
        return x.__class__ in fast or any(p(x) for p in slow)

    def message(x: Any) -> str:
        return f"{x!r} is not of type {reprs}"

    return matches, message


# ---------------------------------------------------------------- keyword checks


def _type_check(types: Any) -> Check:
    matches, message = _type_predicate(types)
    names = [types] if isinstance(types, str) else types
    fast = frozenset(t for n in names for t in _FAST_TYPES[n])

    def check(x: Any) -> Errors:
        if x.__class__ in fast or matches(x):
            return _OK
        return (((), message(x)),)

    return check


def _string_enum(types: Any, combined: Check, enums: Any) -> Check:
    """``type`` + ``enum`` of strings: a listed string passes with one set lookup."""
    names = [types] if isinstance(types, str) else types
    if "string" not in names or not all(isinstance(e, str) for e in enums):
        return combined
    strings = frozenset(enums)

    def check(x: Any) -> Errors:
        if x.__class__ is str and x in strings:
            return _OK
        return combined(x)

    return check


def _enum_check(enums: Any) -> Check:
    if not isinstance(enums, list):
        raise UnsupportedSchema(f"enum {enums!r}")
    strings = frozenset(e for e in enums if isinstance(e, str))

    def check(x: Any) -> Errors:
        if x.__class__ is str and x in strings:
            return _OK
        if any(_equal(e, x) for e in enums):
            return _OK
        return (((), f"{x!r} is not one of {enums!r}"),)

    return check


def _const_check(const: Any) -> Check:
    def check(x: Any) -> Errors:
        if _equal(x, const):
            return _OK
        return (((), f"{const!r} was expected"),)

    return check


def _pattern_check(pattern: Any) -> Check:
    try:
        search = re.compile(pattern).search
    except (TypeError, re.error) as exc:
        raise UnsupportedSchema(f"pattern {pattern!r}: {exc}") from None

    def check(x: Any) -> Errors:
        if not isinstance(x, str) or search(x):
            return _OK
        return (((), f"{x!r} does not match {pattern!r}"),)

    return check


def _bound_check(keyword: str, bound: Any) -> Check:
    """minimum, maximum, exclusiveMinimum, exclusiveMaximum."""
    if not _is_number(bound):
        raise UnsupportedSchema(f"{keyword} {bound!r}")
    fails: Callable[[Any], bool]
    if keyword == "minimum":
        fails, text = (lambda x: bool(x < bound)), "less than the minimum of"
    elif keyword == "maximum":
        fails, text = (lambda x: bool(x > bound)), "greater than the maximum of"
    elif keyword == "exclusiveMinimum":
        fails, text = (lambda x: bool(x <= bound)), "less than or equal to the minimum of"
    else:
        fails, text = (lambda x: bool(x >= bound)), "greater than or equal to the maximum of"

    def check(x: Any) -> Errors:
        if _is_number(x) and fails(x):
            return (((), f"{x!r} is {text} {bound!r}"),)
        return _OK

    return check


# keyword → (JSON type it applies to, is it a lower bound, message when the bound is 1 or 0)
_SIZES: dict[str, tuple[str, bool, str, str]] = {
    "minLength": ("string", True, "should be non-empty", "is too short"),
    "maxLength": ("string", False, "is expected to be empty", "is too long"),
    "minItems": ("array", True, "should be non-empty", "is too short"),
    "maxItems": ("array", False, "is expected to be empty", "is too long"),
    "minProperties": ("object", True, "should be non-empty", "does not have enough properties"),
    "maxProperties": ("object", False, "is expected to be empty", "has too many properties"),
}


def _size_check(keyword: str, limit: Any) -> Check:
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise UnsupportedSchema(f"{keyword} {limit!r}")
    kind, lower, edge, other = _SIZES[keyword]
    applies = _TYPE_PREDICATES[kind]
    text = edge if limit == (1 if lower else 0) else other

    def check(x: Any) -> Errors:
        if applies(x) and (len(x) < limit if lower else len(x) > limit):
            return (((), f"{x!r} {text}"),)
        return _OK

    return check


def _required_check(required: Any) -> Check:
    names = _required_names(required)

    def check(x: Any) -> Errors:
        if not isinstance(x, dict):
            return _OK
        return [((), f"{name!r} is a required property") for name in names if name not in x]

    return check


def _required_names(required: Any) -> tuple[str, ...]:
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise UnsupportedSchema(f"required {required!r}")
    return tuple(required)


def _items_check(item: Check) -> Check:
    def check(x: Any) -> Errors:
        if not isinstance(x, list):
            return _OK
        errors: list[Error] | None = None
        for index, value in enumerate(x):
            found = item(value)
            if found:
                if errors is None:
                    errors = []
                errors.extend(_prefix(index, found))
        return errors or _OK

    return check


def _no_items(x: Any) -> Errors:
    """2020-12 ``items: false`` (no ``prefixItems``): jsonschema's own message."""
    if not isinstance(x, list) or not x:
        return _OK
    rest = x[0] if len(x) == 1 else x
    return (((), f"Expected at most 0 items but found {len(x)} extra: {rest!r}"),)


def _all_of(checks: Sequence[Check]) -> Check:
    """Every check's errors, in order (also how a schema's keywords combine)."""
    checks = tuple(c for c in checks if c is not _ok)
    if not checks:
        return _ok
    if len(checks) == 1:
        return checks[0]
    if len(checks) == 2:
        first, second = checks

        def both(x: Any) -> Errors:
            one = first(x)
            two = second(x)
            if not one:
                return two
            if not two:
                return one
            return [*one, *two]

        return both

    def each(x: Any) -> Errors:
        errors: list[Error] | None = None
        for check in checks:
            found = check(x)
            if found:
                if errors is None:
                    errors = []
                errors.extend(found)
        return errors or _OK

    return each


def _any_of(checks: Sequence[Check]) -> Check:
    def check(x: Any) -> Errors:
        if any(not c(x) for c in checks):
            return _OK
        return (((), f"{x!r} is not valid under any of the given schemas"),)

    return check


def _one_of(checks: Sequence[Check], schemas: Sequence[Any]) -> Check:
    def check(x: Any) -> Errors:
        index = next((i for i, c in enumerate(checks) if not c(x)), None)
        if index is None:
            return (((), f"{x!r} is not valid under any of the given schemas"),)
        more = [s for c, s in zip(checks[index + 1:], schemas[index + 1:], strict=True)
                if not c(x)]
        if not more:
            return _OK
        more.append(schemas[index])
        reprs = ", ".join(repr(s) for s in more)
        return (((), f"{x!r} is valid under each of {reprs}"),)

    return check


def _not(sub: Check, schema: Any) -> Check:
    def check(x: Any) -> Errors:
        if sub(x):
            return _OK
        return (((), f"{x!r} should not be valid under {schema!r}"),)

    return check


def _if_then_else(condition: Check, then: Check, otherwise: Check) -> Check:
    def check(x: Any) -> Errors:
        return otherwise(x) if condition(x) else then(x)

    return check


def _false_schema(x: Any) -> Errors:
    return (((), f"False schema does not allow {x!r}"),)


# ---------------------------------------------------------------- the fused object check


def _object_errors(
    keywords: Sequence[str],
    required: tuple[str, ...],
    x: dict[Any, Any],
    found: list[tuple[int, Any, Errors]] | None,
    extras: list[Any] | None,
    extra_found: list[tuple[Any, Errors]] | None,
) -> Errors:
    """The fused object check's errors, in the order jsonschema yields them."""
    out: list[Error] = []
    for keyword in keywords:
        if keyword == "properties" and found:
            for _, key, errs in sorted(found, key=lambda f: f[0]):
                out.extend(_prefix(key, errs))
        elif keyword == "additionalProperties":
            if extras:
                names = sorted(extras, key=str)
                verb = "was" if len(names) == 1 else "were"
                joined = ", ".join(repr(n) for n in names)
                out.append(((), f"Additional properties are not allowed ({joined} {verb} "
                                "unexpected)"))
            for key, errs in extra_found or ():
                out.extend(_prefix(key, errs))
        elif keyword == "required":
            out.extend(((), f"{name!r} is a required property")
                       for name in required if name not in x)
    return out


def _object_check(
    keywords: Sequence[str],
    type_value: Any,
    properties: dict[str, Check],
    additional: Check | bool | None,
    required: tuple[str, ...],
) -> Check:
    """``type`` + ``properties`` + ``additionalProperties`` + ``required`` in one pass.

    The instance's keys are walked once; errors, when there are any, are put in the order
    jsonschema yields them (schema keyword order, then schema property order).
    """
    matches, type_message = _type_predicate(type_value) if type_value is not None else (
        None, None)
    order = {name: index for index, name in enumerate(properties)}
    req = frozenset(required)
    closed = additional is False
    extra_check = additional if callable(additional) else None

    def check(x: Any) -> Errors:
        if not isinstance(x, dict):
            if matches is None or type_message is None or matches(x):
                return _OK
            return (((), type_message(x)),)
        found: list[tuple[int, Any, Errors]] | None = None
        extras: list[Any] | None = None
        extra_found: list[tuple[Any, Errors]] | None = None
        for key, value in x.items():
            sub = properties.get(key)
            if sub is not None:
                errs = sub(value)
                if errs:
                    if found is None:
                        found = []
                    found.append((order[key], key, errs))
            elif closed:
                if extras is None:
                    extras = []
                extras.append(key)
            elif extra_check is not None:
                errs = extra_check(value)
                if errs:
                    if extra_found is None:
                        extra_found = []
                    extra_found.append((key, errs))
        if found is None and extras is None and extra_found is None and x.keys() >= req:
            return _OK
        return _object_errors(keywords, required, x, found, extras, extra_found)

    return check


# ---------------------------------------------------------------- the compiler


class Compiler:
    """Compiles schemas whose ``$ref``s point into ``documents`` (absolute URI → contents).

    Referenced subschemas are compiled once per compiler and shared by every schema it
    compiles, so one compiler per set of documents (e.g. per Kubernetes version) is the way
    to use it. ``draft`` picks the few rules that differ: in draft-07, ``$ref`` hides its
    sibling keywords.
    """

    def __init__(self, documents: Mapping[str, Any] | None = None,
                 draft: Draft = "2020-12") -> None:
        self._documents: dict[str, Any] = dict(documents or {})
        self._draft = draft
        self._done: dict[tuple[str, str], Check] = {}
        self._pending: dict[tuple[str, str], list[Check]] = {}

    def compile(self, schema: Any) -> Check:
        """The check for ``schema``; raises :class:`UnsupportedSchema` (and compiles nothing)."""
        base = ""
        if isinstance(schema, dict) and isinstance(schema.get("$id"), str):
            base = urldefrag(schema["$id"]).url
        before = set(self._done)
        added = base not in self._documents
        if added:
            self._documents[base] = schema
        try:
            return self._schema(schema, base, root=True)
        except BaseException as exc:
            # Forget what this call compiled: it may hold forwarders to unfinished checks.
            for key in set(self._done) - before:
                del self._done[key]
            self._pending.clear()
            if isinstance(exc, RecursionError):
                raise UnsupportedSchema("schema nested too deeply") from None
            raise
        finally:
            if added:
                # The root is known by its $id only while it compiles: another root may
                # share the id (or have none), so its subschemas are not reused.
                del self._documents[base]
                for key in [k for k in self._done if k[0] == base]:
                    del self._done[key]

    # -- references

    def _ref(self, ref: Any, base: str) -> Check:
        if not isinstance(ref, str):
            raise UnsupportedSchema(f"$ref {ref!r}")
        uri, fragment = urldefrag(urljoin(base, ref))
        if uri not in self._documents:
            raise UnsupportedSchema(f"$ref {ref!r}: unknown document {uri!r}")
        if fragment and not fragment.startswith("/"):
            raise UnsupportedSchema(f"$ref {ref!r}: anchors are not supported")
        key = (uri, fragment)
        done = self._done.get(key)
        if done is not None:
            return done
        pending = self._pending.get(key)
        if pending is not None:  # recursion: bind to the check once it exists

            def forward(x: Any) -> Errors:
                return pending[0](x)

            return forward
        cell: list[Check] = []
        self._pending[key] = cell
        try:
            check = self._schema(_pointer(self._documents[uri], fragment, ref), uri,
                                 root=not fragment)
        finally:
            del self._pending[key]
        cell.append(check)
        self._done[key] = check
        return check

    # -- schemas

    def _subschema(self, schema: Any, base: str) -> Check:
        """The schema of a property or an item: jsonschema reports a ``false`` one without the
        key or index in the error's path; rather than copy that, leave such schemas to it."""
        if schema is False:
            raise UnsupportedSchema("false schema of a property or an item")
        return self._schema(schema, base)

    def _schema(self, schema: Any, base: str, root: bool = False) -> Check:
        if schema is True:
            return _ok
        if schema is False:
            return _false_schema
        if not isinstance(schema, dict):
            raise UnsupportedSchema(f"schema {schema!r}")
        if "$id" in schema and not root and urldefrag(
                urljoin(base, str(schema["$id"]))).url != base:
            raise UnsupportedSchema(f"nested $id {schema['$id']!r}")
        if self._draft == "draft-07" and "$ref" in schema:
            return self._ref(schema["$ref"], base)
        keywords = [k for k in schema if k not in _IGNORED and not k.startswith("x-")]
        if ("properties" in schema or "additionalProperties" in schema
                or "required" in schema) and _OBJECT_GROUP.issuperset(keywords) and (
                "type" not in schema or _has_object_type(schema["type"])):
            return self._object(schema, keywords, base)
        combined = _all_of([self._keyword(k, schema, base) for k in keywords])
        if sorted(keywords) == ["enum", "type"]:
            return _string_enum(schema["type"], combined, schema["enum"])
        return combined

    def _object(self, schema: dict[str, Any], keywords: list[str], base: str) -> Check:
        props = schema.get("properties", {})
        if not isinstance(props, dict):
            raise UnsupportedSchema(f"properties {props!r}")
        compiled = {name: self._subschema(sub, base) for name, sub in props.items()}
        additional: Check | bool | None = None
        if "additionalProperties" in schema:
            value = schema["additionalProperties"]
            if value is False:
                additional = False
            elif value is not True:
                additional = self._schema(value, base)
        required = _required_names(schema.get("required", []))
        return _object_check(keywords, schema.get("type"), compiled, additional, required)

    def _keyword(self, keyword: str, schema: dict[str, Any], base: str) -> Check:
        value = schema[keyword]
        simple = _SIMPLE.get(keyword)
        if simple is not None:
            return simple(keyword, value)
        if keyword == "$ref":
            return self._ref(value, base)
        if keyword in ("allOf", "anyOf", "oneOf"):
            subs = self._list(keyword, value, base)
            if keyword == "allOf":
                return _all_of(subs)
            return _any_of(subs) if keyword == "anyOf" else _one_of(subs, value)
        if keyword == "not":
            return _not(self._schema(value, base), value)
        if keyword == "if":
            then = self._schema(schema["then"], base) if "then" in schema else _ok
            otherwise = self._schema(schema["else"], base) if "else" in schema else _ok
            return _if_then_else(self._schema(value, base), then, otherwise)
        return self._container_keyword(keyword, schema, base)

    def _container_keyword(self, keyword: str, schema: dict[str, Any], base: str) -> Check:
        """items, or properties / additionalProperties beside keywords the fused check lacks."""
        value = schema[keyword]
        if keyword == "items":
            if isinstance(value, list) or "prefixItems" in schema:
                raise UnsupportedSchema("items as a list / prefixItems")
            if value is False and self._draft == "2020-12":
                return _no_items
            sub = self._subschema(value, base)
            return _ok if sub is _ok else _items_check(sub)
        if keyword == "properties":
            return self._object({"properties": value}, [keyword], base)
        if keyword == "additionalProperties":
            if "patternProperties" in schema:
                raise UnsupportedSchema("patternProperties")
            names = schema.get("properties", {})
            if not isinstance(names, dict):
                raise UnsupportedSchema(f"properties {names!r}")
            # Only which names are declared matters here: "properties" checks their values.
            return self._object({"properties": dict.fromkeys(names, True),
                                 "additionalProperties": value}, [keyword], base)
        raise UnsupportedSchema(f"keyword {keyword!r}")

    def _list(self, keyword: str, value: Any, base: str) -> list[Check]:
        if not isinstance(value, list) or not value:
            raise UnsupportedSchema(f"{keyword} {value!r}")
        return [self._schema(sub, base) for sub in value]


def _has_object_type(types: Any) -> bool:
    return types == "object" or (isinstance(types, list) and "object" in types)


_SIMPLE: dict[str, Callable[[str, Any], Check]] = {
    "type": lambda _k, v: _type_check(v),
    "enum": lambda _k, v: _enum_check(v),
    "const": lambda _k, v: _const_check(v),
    "pattern": lambda _k, v: _pattern_check(v),
    "required": lambda _k, v: _required_check(v),
    **dict.fromkeys(("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"), _bound_check),
    **dict.fromkeys(_SIZES, _size_check),
}


def _pointer(document: Any, fragment: str, ref: str) -> Any:
    node = document
    for token in fragment.split("/")[1:]:
        part = unquote(token).replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            raise UnsupportedSchema(f"$ref {ref!r} does not resolve")
    return node


# ---------------------------------------------------------------- cached entry points


def compile_schema(schema: Any, *, documents: Mapping[str, Any] | None = None,
                   draft: Draft = "2020-12") -> Check:
    """Compile one schema with a fresh :class:`Compiler` (nothing is cached)."""
    return Compiler(documents, draft).compile(schema)


@functools.cache
def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@functools.cache
def _shared_compiler(definitions: Path | None, uri: str, draft: Draft) -> Compiler:
    documents = {uri: _read_json(definitions)} if definitions is not None else {}
    return Compiler(documents, draft)


@functools.cache
def _compile_file(path: Path, definitions: Path | None, uri: str,
                  draft: Draft) -> Check | UnsupportedSchema:
    try:
        return _shared_compiler(definitions, uri, draft).compile(_read_json(path))
    except UnsupportedSchema as exc:
        return exc


def compile_file(path: Path, definitions: Path | None = None, uri: str = "",
                 draft: Draft = "2020-12") -> Check:
    """The cached check of a schema file whose ``$ref``s may point into ``definitions``
    (read once, known as ``uri``); files sharing ``definitions`` share compiled subschemas.
    Raises :class:`UnsupportedSchema` (every time: the failure is cached too) when it cannot.
    """
    result = _compile_file(path, definitions, uri, draft)
    if isinstance(result, UnsupportedSchema):
        raise UnsupportedSchema(*result.args)
    return result


_SHARED: dict[int, tuple[Any, Check]] = {}


def compile_shared(schema: Mapping[str, Any], draft: Draft = "2020-12") -> Check:
    """The cached check of a schema object that lives as long as the process (treated as
    read-only), e.g. one of :func:`gen.emit.crd_schemas.custom_schema`'s cached schemas."""
    hit = _SHARED.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    check = compile_schema(schema, draft=draft)
    _SHARED[id(schema)] = (schema, check)
    return check
