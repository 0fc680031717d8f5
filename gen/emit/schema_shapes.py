"""The JSON Schema of a built-in kind, checked once per template shape and then per value.

A render knows, for every object of a plain template, where its template shape put each
value (:class:`gen.emit.skeleton.Holes`); the rest of the object, the fixed part, is the same
in every object of the shape. Once one object of a shape has passed the kind's whole schema
(``jsonschema_rs``'s ``is_valid``), every other object of it passes exactly when each of its
values passes the subschema that governs its path — provided the schema checks each node on
the way to a value only by keywords whose verdict on the node does not depend on the values
below it. A *program* (:func:`learn`) records, per (compiled validator, shape), the
subschema validator of each value; :func:`passes` runs it. It answers True only when the
whole object's ``is_valid`` would; anything else (a value that fails, a conversion error) is
answered False, and the caller takes the whole-object path, which words the errors.

Soundness, node by node on the path from the root to a value (:func:`_step`): only the
keywords in :data:`_ANCESTOR` (and annotations) may stand there. ``type``, ``required``,
``minProperties``/``maxProperties`` and ``minItems``/``maxItems`` judge what the shape fixes
(that the node is a map or a list, its keys, its length); ``properties``,
``additionalProperties`` and ``items`` send each child to its own subschema. A node with any
other keyword — ``oneOf``/``anyOf``/``allOf``/``not``/``if``, ``enum``/``const``,
``uniqueItems``, ``patternProperties``, ``prefixItems``, ``contains``, ``unevaluated*``,
``dependentSchemas``, a nested ``$id``, a ``$ref`` beside constraints — makes the whole shape
fall back to the whole-object check, as does a path through ``additionalProperties: false``
or a key that cannot be written as a plain JSON pointer. At the value itself any keyword may
stand: the value is checked against its whole subschema.

``$ref`` is resolved through the version's ``jsonschema_rs.Registry`` (the one the kind's
validator was compiled with): the definitions are not kept in Python beyond what the walks
reach (:data:`_NODES`, with descriptions left out). A value's subschema is compiled once per
(schema version, location), as a ``$ref`` to its JSON pointer (or, inside the kind's own
schema file, the node itself under the file's ``$id``), with ``format`` off, as
:func:`gen.emit.validate.compiled` does. A map or list value passes once per JSON text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urljoin

from gen.caches import BoundedCache

if TYPE_CHECKING:
    from gen.emit.skeleton import Holes

__all__ = ["learn", "passes"]

_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "format", "$comment",
                          "deprecated", "readOnly", "writeOnly"})
"""Keywords that never fail an instance (``format`` is not checked: ``validate_formats``
is off). Keywords starting with ``x-`` are unknown to JSON Schema, so annotations too."""

_ANCESTOR = frozenset({"type", "properties", "additionalProperties", "items", "required",
                       "minProperties", "maxProperties", "minItems", "maxItems"})
"""The keywords a node on the way to a value may have (see the module's docstring)."""

_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions",
                          "dependentSchemas"})
_SCHEMA_LISTS = frozenset({"allOf", "anyOf", "oneOf", "prefixItems"})
_SCHEMAS = frozenset({"additionalProperties", "items", "not", "if", "then", "else", "contains",
                      "propertyNames", "unevaluatedProperties", "unevaluatedItems",
                      "additionalItems"})
_DRAFT = "https://json-schema.org/draft/2020-12/schema"
_POINTER_KEY = re.compile(r"^[A-Za-z0-9._$-]+$")
"""A property name that is its own JSON-pointer token and URI fragment text."""

_Leaf = tuple[int, str]
"""(schema minor, the absolute location of a subschema)."""

_Step = tuple[int, int, Any, Any, _Leaf]
"""(value index, quick check (:data:`_TYPES` …), its argument, the compiled subschema
validator, its :data:`_Leaf`)."""

_TYPES, _ENUM, _SCHEMA = range(3)
"""Quick checks of a scalar value before the compiled subschema, each True only where
jsonschema-rs would pass it: ``_TYPES`` (argument :data:`_Quick`) a value of one of these
types; ``_ENUM`` (a set of strings) one of them; ``_SCHEMA`` none. A map or list value passes
once per JSON text (:data:`_PASSED`), by the compiled subschema."""

_Quick = tuple[frozenset[type], bool]
"""(Python types that pass as they are, whether an ASCII string passes). A non-ASCII string
goes to the compiled subschema: one jsonschema-rs cannot convert (a lone surrogate) raises."""

_Program = Callable[[tuple[Any, ...], tuple[str, ...]], bool]
"""A shape's program: (the values, their JSON texts) → they all pass."""


ShapeKey = tuple[int, str, str, str]
"""(schema minor, apiVersion, kind, shape digest)."""

_PROGRAMS: BoundedCache[ShapeKey, _Program | None] = BoundedCache(
    "gen.emit.schema_shapes.programs", 4096)
"""The program of a shape of a built-in kind, learnt from an object of it that passed
(None: the shape is checked whole)."""

_LEAVES: BoundedCache[_Leaf, Any] = BoundedCache("gen.emit.schema_shapes.subschemas", 4096)
"""A subschema → its compiled validator."""

_NODES: BoundedCache[tuple[int, str], Any] = BoundedCache("gen.emit.schema_shapes.nodes", 2048)
"""(schema minor, absolute ``$ref``) → the schema there, without annotations
(:func:`_bare`): what the walks read of the definitions."""

_PASSED: BoundedCache[tuple[_Leaf, str], bool] = BoundedCache(
    "gen.emit.schema_shapes.passed", 65536)
"""(a subschema, the JSON text of a map or list value) → it passed (only passes are kept;
the value is the text's parse)."""


def passes(key: ShapeKey, holes: Holes) -> bool:
    """True only when the kind's ``is_valid`` of the object ``holes`` describes is True: an
    object of the shape passed before (:func:`learn`) and every value passes its subschema."""
    program = _PROGRAMS.data.get(key)
    if program is None:
        return False
    try:
        return program(holes.values, holes.texts)
    except Exception:  # noqa: BLE001 - e.g. a string jsonschema-rs cannot convert
        return False  # the whole-object path raises it, or says what is wrong


def learn(key: ShapeKey, holes: Holes, schema: Callable[[], Mapping[str, Any]],
          registry: Any) -> bool:
    """Make the program of the shape of ``key`` and ``holes``, once an object of it passed
    the kind's validator whole (compiled from the schema ``schema()`` reads, with
    ``registry``; read only for a shape not met before). True when the shape has a
    program: its later objects can pass by :func:`passes`."""
    if key not in _PROGRAMS.data:
        steps = _program(holes.shape.paths, key[0], schema(), registry)
        _PROGRAMS.put(key, None if steps is None else _function(steps))
    return _PROGRAMS.data.get(key) is not None


def _function(steps: tuple[_Step, ...]) -> _Program:
    """The steps as one Python function (one test per value, no loop; as
    :func:`gen.emit.skeleton.filler` compiles a fill plan): for each value, a map or list
    passes once per JSON text by its compiled subschema; a scalar passes by its quick check
    (:data:`_TYPES`, :data:`_ENUM`) or else by the compiled subschema."""
    names: dict[str, Any] = {"_passed": _PASSED.data, "_put": _PASSED.put}
    lines = ["def program(values, texts):"]
    for n, (index, quick, argument, check, leaf) in enumerate(steps):
        names[f"c{n}"], names[f"l{n}"] = check.is_valid, leaf
        quick_test = ""
        if quick == _TYPES:
            tests = [f"t is {_TYPE_NAMES[kind]}" if kind is not type(None) else "v is None"
                     for kind in sorted(argument[0], key=lambda k: k.__name__)]
            if argument[1]:
                tests.append("(t is str and v.isascii())")
            quick_test = "".join(f"{test} or " for test in tests)
        elif quick == _ENUM:
            names[f"e{n}"] = argument
            quick_test = f"(t is str and v in e{n}) or "
        lines += [
            f"    v = values[{index}]",
            "    t = type(v)",
            "    if t is dict or t is list:",
            f"        if (l{n}, texts[{index}]) not in _passed:",
            f"            if not c{n}(v):",
            "                return False",
            f"            _put((l{n}, texts[{index}]), True)",
            f"    elif not ({quick_test}c{n}(v)):",
            "        return False",
        ]
    lines.append("    return True")
    exec("\n".join(lines), names)  # noqa: S102 - text made here from names, no input
    function: _Program = names["program"]
    return function


_TYPE_NAMES = {int: "int", bool: "bool", str: "str"}


def _program(paths: tuple[tuple[str | int, ...], ...], minor: int, schema: Mapping[str, Any],
             registry: Any) -> tuple[_Step, ...] | None:
    root_uri = schema.get("$id")
    if not isinstance(root_uri, str) or not paths or \
            schema.get("$schema", _DRAFT) != _DRAFT:
        return None
    root = _bare({k: v for k, v in schema.items() if k not in ("$id", "$schema")})
    steps: list[_Step] = []
    for index, path in enumerate(paths):
        if not path:
            return None
        found = _walk(root, schema, root_uri, path, minor, registry)
        if found is None:
            return None
        if found is True:
            continue  # nothing constrains this value
        location, compile_, bare, base = found
        leaf: _Leaf = (minor, location)
        check = _LEAVES.data.get(leaf)
        if check is None:
            import jsonschema_rs

            check = _LEAVES.put(leaf, jsonschema_rs.Draft202012Validator(
                compile_, registry=registry, validate_formats=False))
        steps.append((index, *_classify(bare, base, minor, registry), check, leaf))
    return tuple(steps)


def _walk(root: Any, raw: Mapping[str, Any], root_uri: str, path: tuple[str | int, ...],
          minor: int, registry: Any) -> tuple[str, Any, Any, str] | Literal[True] | None:
    """The subschema of the value at ``path``: (its location, the schema to compile, the
    bare subschema, the URI its references are relative to), True
    when nothing constrains it, None when the split is not proved sound on the way. ``root``
    is the kind's schema without annotations, ``raw`` the file as it is."""
    node, base, pointer = root, root_uri, ""
    for key in path:
        deref = _deref(node, base, pointer, minor, registry)
        if deref is None:
            return None
        node, base, pointer = deref
        if node is True:
            return True
        if not isinstance(node, dict) or not _ancestor_ok(node):
            return None
        if type(key) is str:
            properties = node.get("properties", {})
            if not isinstance(properties, dict):
                return None
            if key in properties:
                if _POINTER_KEY.match(key) is None:
                    return None
                node, pointer = properties[key], f"{pointer}/properties/{key}"
            else:
                node, pointer = node.get("additionalProperties", True), \
                    f"{pointer}/additionalProperties"
        else:
            node, pointer = node.get("items", True), f"{pointer}/items"
        if node is True:
            return True
        if node is False:
            return None
    if isinstance(node, dict) and all(k in _ANNOTATIONS or k.startswith("x-") for k in node):
        return True
    if base == root_uri:  # inside the kind's own file, which no registry holds
        original = _at(raw, pointer)
        if not isinstance(original, dict) or not _inline_safe(original, root_uri):
            return None
        return f"{root_uri}#{pointer}", {"$id": root_uri, **original}, node, base
    return f"{base}#{pointer}", {"$ref": f"{base}#{pointer}"}, node, base


_PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "integer": (int,), "number": (int,), "boolean": (bool,), "null": (type(None),)}
"""JSON Schema types → Python types whose every value jsonschema-rs accepts as one (any
``int``, however large; floats go to the compiled subschema)."""


def _classify(node: Any, base: str, minor: int, registry: Any) -> tuple[int, Any]:
    """The quick check of a value whose subschema is ``node`` (bare): :data:`_SCHEMA`
    unless the node is one of a few plain forms, judged keyword by keyword."""
    deref = _deref(node, base, "", minor, registry)
    if deref is None or not isinstance(deref[0], dict):
        return _SCHEMA, None
    node = deref[0]
    keywords = {k for k in node if k not in _ANNOTATIONS and not k.startswith("x-")}
    types = _types(node)
    if keywords == {"type"} and types is not None:
        return _TYPES, types
    if keywords == {"type", "enum"} and types is not None and types[1] and \
            isinstance(node["enum"], list) and all(type(v) is str for v in node["enum"]):
        return _ENUM, frozenset(node["enum"])
    if keywords in ({"oneOf"}, {"anyOf"}) and isinstance(node[next(iter(keywords))], list):
        branches = [_types(b) if isinstance(b, dict) and {
            k for k in b if k not in _ANNOTATIONS and not k.startswith("x-")} == {"type"}
            else None for b in node[next(iter(keywords))]]
        if branches and all(b is not None for b in branches):
            return _TYPES, _union([b for b in branches if b is not None], keywords == {"oneOf"})
    return _SCHEMA, None


def _types(node: Mapping[str, Any]) -> _Quick | None:
    """The :data:`_Quick` of a ``type`` keyword (None where it names no JSON type)."""
    named = node.get("type")
    listed = [named] if isinstance(named, str) else named
    if not isinstance(listed, list) or not all(isinstance(t, str) for t in listed):
        return None
    python: set[type] = set()
    for name in listed:
        python.update(_PYTHON_TYPES.get(name, ()))
    return frozenset(python), "string" in listed


def _union(branches: list[_Quick], one: bool) -> _Quick:
    """The values that pass ``anyOf`` the branches (``one``: ``oneOf``, exactly one)."""
    def count(kind: type | None) -> int:
        return sum((kind in b[0]) if kind is not None else b[1] for b in branches)
    kinds = {kind for b in branches for kind in b[0]}
    if one:
        return frozenset(k for k in kinds if count(k) == 1), count(None) == 1
    return frozenset(kinds), count(None) > 0


def _at(document: Any, pointer: str) -> Any:
    """The node at a JSON pointer :func:`_walk` made (its tokens need no unescaping)."""
    node = document
    for token in pointer.split("/")[1:]:
        if not isinstance(node, dict) or token not in node:
            return None
        node = node[token]
    return node


def _inline_safe(node: Any, root_uri: str) -> bool:
    """Whether a node of the kind's file means the same compiled alone under the file's
    ``$id``: no ``$id``, anchor or dynamic reference in it, and no ``$ref`` into the file
    itself (which would then name the node, not the file)."""
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            if any(k in current for k in ("$id", "$anchor", "$dynamicAnchor", "$dynamicRef",
                                          "$recursiveRef", "$recursiveAnchor")):
                return False
            ref = current.get("$ref")
            if ref is not None and (not isinstance(ref, str) or
                                    urljoin(root_uri, ref).partition("#")[0] == root_uri):
                return False
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return True


def _ancestor_ok(node: dict[str, Any]) -> bool:
    for keyword in node:
        if keyword not in _ANCESTOR and keyword not in _ANNOTATIONS and \
                not keyword.startswith("x-"):
            return False
    return True


def _deref(node: Any, base: str, pointer: str, minor: int,
           registry: Any) -> tuple[Any, str, str] | None:
    """Follow ``$ref`` (only beside annotations) to the schema it names, in the registry."""
    for _ in range(64):
        if not isinstance(node, dict) or "$ref" not in node:
            return node, base, pointer
        if any(k != "$ref" and k not in _ANNOTATIONS and not k.startswith("x-") for k in node):
            return None
        ref = node["$ref"]
        if not isinstance(ref, str):
            return None
        target = urljoin(base, ref)
        document, _, fragment = target.partition("#")
        if fragment and not fragment.startswith("/"):
            return None
        cached = _NODES.data.get((minor, target))
        if cached is None:
            try:
                contents = registry.resolver(document).lookup(target).contents
            except Exception:  # noqa: BLE001 - not in the registry: not proved
                return None
            cached = _NODES.put((minor, target), _bare(contents))
        node, base, pointer = cached, document, fragment
    return None


def _bare(node: Any) -> Any:
    """A schema without its annotations (descriptions are most of the definitions' size),
    keyword by keyword: property names and values of ``enum``, ``const``, ``required`` stay."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for keyword, value in node.items():
        if keyword in _ANNOTATIONS or keyword.startswith("x-"):
            out[keyword] = None  # kept by name: the walk reads names, never these values
        elif keyword in _SCHEMA_MAPS and isinstance(value, dict):
            out[keyword] = {name: _bare(sub) for name, sub in value.items()}
        elif keyword in _SCHEMA_LISTS and isinstance(value, list):
            out[keyword] = [_bare(sub) for sub in value]
        elif keyword in _SCHEMAS:
            out[keyword] = _bare(value)
        else:
            out[keyword] = value
    return out
