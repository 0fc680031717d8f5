"""gen.emit.validate against ``jsonschema``, the pure-Python reference, on broken objects.

The objects are the example fleet's render; each is broken in seeded, repeatable ways (a
field dropped, a value of the wrong type, an unknown field, a value outside an enum or a
pattern, array items changed; :mod:`tests.emit.mutants` makes them) and both validators
must agree: the same verdict and the same set of error JSON paths. Messages are not
compared: jsonschema-rs words some of them its own way (``"x" is not of type "integer"``).
"""

from __future__ import annotations

import copy
import functools
import json
import random
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from gen.emit.crd_convert import CRDSchema
from gen.emit.crd_schemas import CRDSet, custom_schema
from gen.emit.validate import (
    _DEFINITIONS_URI,
    _schema_file,
    _schema_root,
    compiled,
)
from tests.emit.mutants import MUTATIONS, mutate, validate_mutants
from tests.emit.mutants import example_objects as _example_objects

Path_ = tuple[Any, ...]

# ---------------------------------------------------------------- references


@functools.cache
def _reference_registry(minor: int) -> Any:
    path = _schema_root() / f"v1.{minor}.0-local-strict" / "_definitions.json"
    definitions = json.loads(path.read_text(encoding="utf-8"))
    return Registry().with_resource(_DEFINITIONS_URI, Resource.from_contents(definitions))


@functools.cache
def _reference(minor: int, api_version: str, kind: str) -> Any:
    """jsonschema's validator for the schema gen uses for a kind."""
    file = _schema_file(minor, api_version, kind)
    if file.is_file():
        schema = json.loads(file.read_text(encoding="utf-8"))
        return Draft202012Validator(schema, registry=_reference_registry(minor))
    custom = custom_schema(api_version, kind)
    assert custom is not None, (api_version, kind)
    return Draft202012Validator(custom, registry=_reference_registry(minor))


def _verdicts(minor: int, api_version: str, kind: str,
              obj: Any) -> tuple[set[Path_], set[Path_]]:
    """The error paths of gen's validator and of jsonschema for one object."""
    crd = CRDSet().lookup(api_version, kind)
    ours = {tuple(e.instance_path)
            for e in compiled(minor, api_version, kind, crd).iter_errors(obj)}
    theirs = {tuple(e.absolute_path)
              for e in _reference(minor, api_version, kind).iter_errors(obj)}
    return ours, theirs


def _run(seed: int, per_object: int) -> int:
    """Mutate every example object ``per_object`` times; assert agreement; count the cases."""
    cases = 0
    for minor, original, obj, applied in validate_mutants(seed, per_object):
        key = (minor, original["apiVersion"], original["kind"])
        ours, theirs = _verdicts(*key, obj)
        assert ours == theirs, (key, applied, obj)
        cases += 1
    return cases


# ---------------------------------------------------------------- tests


def test_example_render_has_objects_of_many_kinds() -> None:
    """The example fleet renders objects of at least a dozen (version, kind) pairs."""
    kinds = {(m, o["apiVersion"], o["kind"]) for m, o in _example_objects()}
    assert len(kinds) >= 12


def test_example_objects_valid_under_both() -> None:
    """Every example object is valid under gen's validator and under jsonschema."""
    for minor, obj in _example_objects():
        assert _verdicts(minor, obj["apiVersion"], obj["kind"], obj) == (set(), set())


@pytest.mark.parametrize("mutation", MUTATIONS)
def test_each_mutation_same_error_paths(mutation: str) -> None:
    """Each kind of mutation, at a few seeded spots of every example object: same errors."""
    rng = random.Random(f"gen-{mutation}")
    broken = 0
    for minor, original in _example_objects():
        key = (minor, original["apiVersion"], original["kind"])
        for _ in range(3):
            obj = copy.deepcopy(original)
            if not mutate(rng, obj, mutation):
                continue
            ours, theirs = _verdicts(*key, obj)
            assert ours == theirs, (key, mutation, obj)
            broken += bool(theirs)
    assert broken > 0


def test_mixed_mutations_same_error_paths() -> None:
    """One to three mutations at once, seeded: the same verdict and the same error paths."""
    assert _run(seed=12, per_object=6) > 200


@pytest.mark.slow
def test_mixed_mutations_same_error_paths_many() -> None:
    """The same, about 40 times as many cases."""
    assert _run(seed=1234, per_object=240) > 10_000


# ------------------------------------------------- keywords gen's schemas use, one by one

_CASES: list[tuple[dict[str, Any], list[Any]]] = [
    ({"type": ["string", "null"]}, ["a", None, 1, True, [], {}]),
    ({"type": "integer"}, [1, 1.0, 1.5, True, "1", None]),
    ({"type": "number"}, [1, 1.5, True, "1"]),
    ({"type": "boolean"}, [True, 0, "true"]),
    ({"enum": ["a", "b"]}, ["a", "c", None, 1]),
    ({"enum": [1, True, None, [1], {"a": 1}]}, [1, True, False, 1.0, 0, None, [1], [True],
                                               {"a": 1}, {"a": True}, "1"]),
    ({"const": "x"}, ["x", "y", None]),
    ({"const": 1}, [1, 1.0, True]),
    ({"pattern": "^a+$"}, ["aa", "ab", 3, None]),
    ({"format": "date-time"}, ["not a date", 1]),
    ({"format": "byte"}, ["!!"]),
    ({"minimum": 1, "maximum": 3}, [0, 1, 3, 4, 2.5, "9", True]),
    ({"exclusiveMinimum": 1, "exclusiveMaximum": 3}, [1, 2, 3]),
    ({"minLength": 1, "maxLength": 3}, ["", "a", "abcd", 5]),
    ({"minItems": 1, "maxItems": 2}, [[], [1], [1, 2, 3], "ab"]),
    ({"uniqueItems": True}, [[1, 2], [1, 1], [True, 1], [{"a": 1}, {"a": 1}]]),
    ({"minProperties": 1, "maxProperties": 1}, [{}, {"a": 1}, {"a": 1, "b": 2}]),
    ({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
      "required": ["b", "a"], "additionalProperties": False},
     [{}, {"a": 1, "b": "x", "c": 1, "d": 2}, {"a": "x", "b": 1}, None, []]),
    ({"additionalProperties": {"type": "integer"}}, [{"a": 1, "b": "x", "c": None}, 5]),
    ({"items": {"type": "string"}, "type": "array"}, [[], ["a", 1, None], "a", {"a": 1}]),
    ({"oneOf": [{"type": ["string", "null"]}, {"type": ["number", "null"]}]},
     ["1Gi", 1, None, True, []]),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, ["a", 1, None]),
    ({"allOf": [{"type": "string"}, {"minLength": 2}]}, ["a", 1, "ab"]),
    ({"not": {"type": "string"}}, ["a", 1]),
    ({"if": {"properties": {"t": {"const": "oci"}}, "required": ["t"]},
      "then": {"properties": {"u": {"pattern": "^oci://"}}},
      "else": {"properties": {"u": {"pattern": "^https?://"}}}},
     [{"t": "oci", "u": "oci://x"}, {"t": "oci", "u": "https://x"}, {"u": "oci://x"}, {}]),
    ({"properties": {"n": {"properties": {"m": {"items": {"required": ["k"]}}}}}},
     [{"n": {"m": [{"k": 1}, {}, {"j": 1}]}}]),
]


@pytest.mark.parametrize(("schema", "instances"), _CASES, ids=lambda v: json.dumps(v)[:50])
def test_keyword_error_paths_match_jsonschema(
    monkeypatch: pytest.MonkeyPatch, schema: dict[str, Any], instances: list[Any]
) -> None:
    """A CRD's converted schema using one keyword gives jsonschema's verdicts and error paths
    (the converter's output is stood in for by the keyword's schema)."""
    from gen.emit import validate

    full = {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}
    monkeypatch.setattr(validate, "json_schema", lambda _crd: full)
    crd = CRDSchema("example.com/v1", "Case", True, {}, "test", None, json.dumps(full))
    validate._VALIDATORS.clear()  # compile this case's schema, and keep it from later tests
    try:
        ours = compiled(34, "example.com/v1", "Case", crd)
    finally:
        validate._VALIDATORS.clear()
    reference = Draft202012Validator(full)
    for instance in instances:
        mine = sorted(tuple(e.instance_path) for e in ours.iter_errors(instance))
        theirs = sorted(tuple(e.absolute_path) for e in reference.iter_errors(instance))
        assert mine == theirs, instance
