"""gen.emit.schema_shapes: the JSON Schema of a built-in kind, once per shape and then per
value, gives exactly the findings of the whole-object check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gen.caches
from gen.emit import schema_shapes
from gen.emit.render import make_environment, render_cluster
from gen.emit.skeleton import Holes, ShapeHoles
from gen.emit.validate import SchemaValidator, schema_version_for
from gen.errors import SourceLocation
from gen.pipeline import load_plan
from tests.helpers import copy_fleet, replaced_at

WHERE = SourceLocation("out/c1/workloads/ns/x.yaml")

REPLACEMENTS: list[Any] = [
    None, 0, 1, -1, 80, 65536, 2**31, 2**63, 2**64, 2**70, -(2**64), 1.0, 1.5, -0.5,
    True, False, "", "ok", "web", "Bad_Name", "a b", "-lead", "x" * 64, "x" * 300, "80",
    "http", "TCP", "Always", "IfNotPresent", "ClusterIP", "RuntimeDefault", "1Gi", "ü",
    "\ud800", {}, {"a": "b"}, {"a": 1}, {"a": None}, {"Bad Key": "v"}, {"name": "x"},
    {"a": {"b": []}}, [], ["x"], [1], [None], [{}], [{"name": "x", "value": "y"}],
    [["x"]], "x" * (70 * 1024),
]
"""Values for any hole: nulls, integers up to 2⁷⁰, floats, booleans, good and bad names,
strings where integers go (and the reverse), enum members and not, a lone surrogate (which
jsonschema-rs cannot convert), maps and lists of every kind."""


def _outcome(call: Any, *args: Any) -> Any:
    """What ``call(*args)`` gives, or the type of what it raised."""
    try:
        return call(*args)
    except Exception as error:  # noqa: BLE001 - compared between the two paths
        return ("raised", type(error).__name__)


def _shapes(root: Path) -> dict[tuple[str, str, str], list[tuple[int, Any]]]:
    """(apiVersion, kind, shape digest) → every (cluster minor, object) of the example
    fleet's render with that shape, the built-in kinds only."""
    plan = load_plan(copy_fleet(root) / "profiles", base=root)
    env = make_environment(None)
    validator = SchemaValidator()
    shapes: dict[tuple[str, str, str], list[tuple[int, Any]]] = {}
    for cluster in plan.clusters:
        for obj in render_cluster(env, cluster)[0]:
            data = obj.data
            if obj.holes is None or validator.crds.lookup(
                    str(data.get("apiVersion")), str(data.get("kind"))) is not None:
                continue
            key = (str(data.get("apiVersion")), str(data.get("kind")), obj.holes.shape.shape)
            shapes.setdefault(key, []).append((cluster.minor, obj))
    return shapes


@pytest.fixture(scope="module")
def example_shapes(tmp_path_factory: pytest.TempPathFactory,
                   ) -> dict[tuple[str, str, str], list[tuple[int, Any]]]:
    return _shapes(tmp_path_factory.mktemp("fleet"))


def _with(obj: Any, index: int, value: Any) -> tuple[Any, Holes]:
    """The object with value ``index`` of its shape replaced (data and holes alike)."""
    holes = obj.holes
    path = holes.shape.paths[index]
    values, texts = list(holes.values), list(holes.texts)
    values[index], texts[index] = value, json.dumps(value)
    return replaced_at(obj.data, path, value), Holes(holes.shape, tuple(values), tuple(texts))


def test_every_shape_of_the_example_fleet_has_a_program(
        example_shapes: dict[tuple[str, str, str], list[tuple[int, Any]]]) -> None:
    """Every built-in shape of the example fleet is split (none falls back whole): the
    measurements rely on it. A shape that gains an unsound keyword on a path would fail here
    and be checked whole, which is still correct."""
    gen.caches.clear()
    validator = SchemaValidator()
    for minor, obj in (objects[0] for objects in example_shapes.values()):
        assert validator.validate(obj.data, minor, WHERE, None, obj.holes) == []
    programs = schema_shapes._PROGRAMS.data
    assert len(programs) == len(example_shapes) > 20
    assert all(program is not None for program in programs.values()), \
        [key[1:3] for key, program in programs.items() if program is None]


def test_every_value_of_every_shape_replaced_gives_the_whole_object_findings(
        example_shapes: dict[tuple[str, str, str], list[tuple[int, Any]]]) -> None:
    """Each value of each built-in shape of the example fleet, replaced in turn by every
    value of :data:`REPLACEMENTS` and by the values other objects of the shape have there;
    the first object of a shape a bad one or a good one: the findings with the holes are the
    findings without them (or both raise the same error)."""
    compared = rejected = 0
    for bad_first in (True, False):
        gen.caches.clear()
        validator = SchemaValidator()
        for objects in example_shapes.values():
            minor, obj = objects[0]
            cases: list[tuple[Any, Holes]] = []
            for index in range(len(obj.holes.shape.paths)):
                others = {json.dumps(o.holes.values[index], sort_keys=True): o.holes.values[index]
                          for _, o in objects[:8]}
                for value in [*REPLACEMENTS, *others.values()]:
                    cases.append(_with(obj, index, value))
            first = [(obj.data, obj.holes)]
            cases = [*cases, *first] if bad_first else [*first, *cases]
            for data, holes in cases:
                shaped = _outcome(validator.validate, data, minor, WHERE, None, holes)
                whole = _outcome(validator.validate, data, minor, WHERE)
                assert shaped == whole, (obj.holes.shape.paths, holes.values)
                compared += 1
                rejected += bool(whole)
    assert compared > 5000 and 0 < rejected < compared


def test_other_objects_of_each_shape_take_the_split(
        example_shapes: dict[tuple[str, str, str], list[tuple[int, Any]]]) -> None:
    """The render's own objects, all of them, pass by their values once one object of their
    shape passed whole: the split is taken (and agrees with the whole check)."""
    gen.caches.clear()
    validator = SchemaValidator()
    for (api_version, kind, shape), objects in example_shapes.items():
        for minor, obj in objects:
            assert validator.validate(obj.data, minor, WHERE, None, obj.holes) == []
        key = (schema_version_for(objects[0][0]), api_version, kind, shape)
        for minor, obj in objects:
            key = (schema_version_for(minor), api_version, kind, shape)
            assert schema_shapes.passes(key, obj.holes)


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) |
    st.floats(allow_nan=False, allow_infinity=False) |
    st.sampled_from(["", "web", "Bad_Name", "TCP", "Always", "80", "1Gi", "x" * 64]),
    lambda inner: st.lists(inner, max_size=3) |
    st.dictionaries(st.sampled_from(["name", "a", "Bad Key", "value", "port"]), inner,
                    max_size=3),
    max_leaves=8)


@settings(max_examples=400, deadline=None, derandomize=True)
@given(pick=st.integers(min_value=0), index=st.integers(min_value=0), value=_JSON,
       learn_bad=st.booleans())
def test_random_values_give_the_whole_object_findings(
        example_shapes: dict[tuple[str, str, str], list[tuple[int, Any]]], pick: int,
        index: int, value: Any, learn_bad: bool) -> None:
    """A random JSON value in a random hole of a random shape, after the shape's own first
    object passed (or after the bad one was seen first): the same findings either way."""
    gen.caches.clear()
    validator = SchemaValidator()
    shapes = list(example_shapes.values())
    minor, obj = shapes[pick % len(shapes)][0]
    data, holes = _with(obj, index % len(obj.holes.shape.paths), value)
    order = [(data, holes), (obj.data, obj.holes)] if learn_bad else \
        [(obj.data, obj.holes), (data, holes)]
    for d, h in order:
        assert validator.validate(d, minor, WHERE, None, h) == \
            validator.validate(d, minor, WHERE)


# Synthetic schemas: each keyword that makes the split unsound, on a node above a value.

_DEFS_URI = "https://kubernetes.io/api/_definitions.json"
_ID = "https://kubernetes.io/api/thing/v1"


def _kind(spec: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": _ID,
            "type": "object", "additionalProperties": False,
            "properties": {"spec": {"$ref": "/api/_definitions.json#/$defs/Spec"}}}


_UNSOUND: list[tuple[str, dict[str, Any], Any, Any]] = [
    # (case, the Spec definition, the learnt value of spec.a.b, a value the split would pass)
    ("uniqueItems", {"type": "object", "properties": {"a": {
        "type": "array", "uniqueItems": True, "items": {"type": "object", "properties": {
            "b": {}}}}}}, 1, 2),
    ("oneOf", {"type": "object", "properties": {"a": {"type": "object", "oneOf": [
        {"properties": {"b": {"type": "string"}}}, {"properties": {"b": {"type": "integer"}}}],
        "properties": {"b": {}}}}}, "x", None),
    ("anyOf", {"type": "object", "properties": {"a": {"anyOf": [
        {"properties": {"b": {"type": "string"}}}, {"required": ["c"]}]}}}, "x", 1),
    ("enum", {"type": "object", "properties": {"a": {
        "enum": [{"b": "x"}], "properties": {"b": {}}}}}, "x", "y"),
    ("patternProperties", {"type": "object", "properties": {"a": {
        "patternProperties": {"^b$": {"type": "string"}}}}}, "x", 1),
    ("not", {"type": "object", "properties": {"a": {"not": {"properties": {
        "b": {"type": "integer"}}}}}}, "x", 1),
    ("$ref beside a constraint", {"type": "object", "properties": {"a": {
        "$ref": "#/$defs/A", "minProperties": 1}}}, "x", 1),
    ("const", {"type": "object", "properties": {"a": {"const": {"b": "x"}}}}, "x", "y"),
]


@pytest.mark.parametrize(("case", "spec", "good", "bad"), _UNSOUND, ids=[c[0] for c in _UNSOUND])
def test_a_keyword_that_spans_a_value_falls_back_whole(
        case: str, spec: dict[str, Any], good: Any, bad: Any) -> None:
    """Where a keyword above a value judges the value with its neighbours, no program is
    made: the shape is checked whole, and a value that breaks the keyword is caught."""
    gen.caches.clear()
    defs = {"$defs": {"Spec": spec, "A": {"type": "object"}}}
    registry = jsonschema_rs.Registry([(_DEFS_URI, defs)])
    schema = _kind(spec)
    whole = jsonschema_rs.Draft202012Validator(schema, registry=registry,
                                               validate_formats=False)
    shape = ShapeHoles.of(f"synthetic-{case}", (("spec", "a", 0, "b") if case == "uniqueItems"
                                                 else ("spec", "a", "b"),))

    def obj(value: Any) -> tuple[Any, Holes]:
        inner = {"b": value}
        a: Any = [inner, {"b": 2}] if case == "uniqueItems" else inner
        return {"spec": {"a": a}}, Holes(shape, (value,), (json.dumps(value),))

    data, holes = obj(good)
    key = (0, "v1", case, shape.shape)
    if whole.is_valid(data):
        assert not schema_shapes.learn(key, holes, lambda: schema, registry), case
        assert schema_shapes._PROGRAMS.data[key] is None, case
    bad_data, bad_holes = obj(bad)
    assert not schema_shapes.passes(key, bad_holes)
    if case in ("uniqueItems", "enum", "const", "oneOf", "not"):
        assert not whole.is_valid(bad_data)  # what a split would have missed


def test_a_sound_synthetic_schema_is_split_and_agrees() -> None:
    """A schema with only per-child keywords above its values is split, and on values of
    every kind the program answers as the whole schema does. (A string jsonschema-rs cannot
    convert fails the program, which only sends the object to the whole check.)"""
    gen.caches.clear()
    spec = {"type": "object", "required": ["a"], "minProperties": 1, "properties": {
        "a": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/Item"}},
        "m": {"type": "object", "additionalProperties": {"type": ["string", "null"]}}}}
    item = {"type": "object", "additionalProperties": False, "properties": {
        "n": {"type": "integer", "maximum": 10}, "s": {"type": "string", "enum": ["x", "y"]},
        "o": {"oneOf": [{"type": "string"}, {"type": "integer"}]}}}
    defs = {"$defs": {"Spec": spec, "Item": item}}
    registry = jsonschema_rs.Registry([(_DEFS_URI, defs)])
    schema = _kind(spec)
    whole = jsonschema_rs.Draft202012Validator(schema, registry=registry,
                                               validate_formats=False)
    paths = (("spec", "a", 0, "n"), ("spec", "a", 0, "s"), ("spec", "a", 0, "o"),
             ("spec", "m", "k"))
    shape = ShapeHoles.of("synthetic-sound", paths)
    good = (1, "x", "p", "v")
    key = (0, "v1", "Sound", shape.shape)

    def obj(values: tuple[Any, ...]) -> tuple[Any, Holes]:
        data = {"spec": {"a": [{"n": values[0], "s": values[1], "o": values[2]}],
                         "m": {"k": values[3]}}}
        return data, Holes(shape, values, tuple(json.dumps(v) for v in values))

    data, holes = obj(good)
    assert whole.is_valid(data)
    reads: list[int] = []

    def read() -> Any:
        reads.append(1)
        return schema

    assert schema_shapes.learn(key, holes, read, registry)
    assert schema_shapes.learn(key, holes, read, registry)
    assert reads == [1]  # the kind's schema is read for a new shape only
    assert schema_shapes._PROGRAMS.data[key] is not None
    for index in range(len(paths)):
        for value in [*REPLACEMENTS, 10, 11, "y", "z"]:
            values = list(good)
            values[index] = value
            data, holes = obj(tuple(values))
            expected = _outcome(whole.is_valid, data)
            split = schema_shapes.passes(key, holes)
            if split:
                assert expected is True, (index, value)
            elif value != "\ud800":  # jsonschema-rs cannot convert it alone: checked whole
                assert expected is not True, (index, value)
