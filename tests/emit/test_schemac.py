"""Tests for gen.emit.schemac: compiled schema checks agree with jsonschema, error for error."""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator, Draft202012Validator

from gen.emit import schemac
from gen.emit.crd_schemas import custom_schema
from gen.emit.validate import SchemaValidator, _registry, _schema_file, schema_version_for
from gen.errors import SourceLocation
from gen.pipeline import load_plan, render_outputs
from tests.helpers import REPO

DEFS_URI = "https://kubernetes.io/api/_definitions.json"
Pair = tuple[schemac.Check, Any]


# ---------------------------------------------------------------- helpers


@functools.cache
def _example_objects() -> tuple[tuple[int, dict[str, Any]], ...]:
    """(schema minor, object) for every manifest of the example fleet's render."""
    plan = load_plan(REPO / "profiles")
    minors = {c.name: schema_version_for(c.minor) for c in plan.clusters}
    outputs, _, _ = render_outputs(plan, templates_dir=None, out_label="out")
    objects = []
    for path, data in outputs.items():
        if path.suffix != ".yaml" or path.name == "kustomization.yaml":
            continue
        cluster = path.parts[1] if path.parts[0].startswith("_") else path.parts[0]
        if cluster not in minors:
            continue
        for doc in yaml.safe_load_all(data):
            if isinstance(doc, dict) and "kind" in doc:
                objects.append((minors[cluster], doc))
    return tuple(objects)


@functools.cache
def _pair(minor: int, api_version: str, kind: str) -> Pair:
    """The compiled check and the jsonschema validator of one kind."""
    file = _schema_file(minor, api_version, kind)
    if file.is_file():
        check = schemac.compile_file(file, file.parent / "_definitions.json", DEFS_URI)
        schema = json.loads(file.read_text(encoding="utf-8"))
        return check, Draft202012Validator(schema, registry=_registry(minor))
    custom = custom_schema(api_version, kind)
    assert custom is not None, (api_version, kind)
    return schemac.compile_shared(custom, "draft-07"), Draft7Validator(custom)


def _ours(check: schemac.Check, instance: Any) -> list[tuple[tuple[Any, ...], str]]:
    return sorted(((tuple(p), m) for p, m in check(instance)), key=repr)


def _theirs(validator: Any, instance: Any) -> list[tuple[tuple[Any, ...], str]]:
    return sorted(((tuple(e.absolute_path), e.message) for e in validator.iter_errors(instance)),
                  key=repr)


def _kind(message: str) -> str:
    """A message's error kind: the text with quoted values and numbers taken out."""
    for marker in ("is not of type", "is a required property", "Additional properties",
                   "is not one of", "was expected", "does not match", "is valid under each",
                   "is not valid under any", "is too", "should be non-empty", "is less than",
                   "is greater than", "is expected to be empty", "properties"):
        if marker in message:
            return marker
    return message


def _assert_same(pair: Pair, instance: Any) -> None:
    check, validator = pair
    ours, theirs = _ours(check, instance), _theirs(validator, instance)
    # Paths exactly, messages by kind; then the exact messages too (they are the same text).
    assert sorted((p, _kind(m)) for p, m in ours) == sorted((p, _kind(m)) for p, m in theirs)
    assert ours == theirs


def _draft7(schema: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": "http://json-schema.org/draft-07/schema#", **schema}


# ---------------------------------------------------------------- the example render


def test_example_render_has_objects_of_many_kinds() -> None:
    """The example fleet renders objects of at least a dozen (version, kind) pairs."""
    kinds = {(m, o["apiVersion"], o["kind"]) for m, o in _example_objects()}
    assert len(kinds) >= 12


def test_example_objects_valid_under_both() -> None:
    """Every example object is valid under the compiled check and under jsonschema."""
    for minor, obj in _example_objects():
        check, validator = _pair(minor, obj["apiVersion"], obj["kind"])
        assert list(check(obj)) == []
        assert _theirs(validator, obj) == []


_SCALARS = st.sampled_from([0, 1, -3, 2.5, True, False, None, "", "x", "80", "1Gi"])
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(["a", "name", "zz", "image"]), inner, max_size=3),
    max_leaves=5,
)


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], Any]]:
    """Every (path, node) of a JSON value, the root included."""
    out = [(path, value)]
    if isinstance(value, dict):
        for key, child in value.items():
            out.extend(_nodes(child, (*path, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out.extend(_nodes(child, (*path, index)))
    return out


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        value = value[part]
    return value


def _set(root: Any, path: tuple[Any, ...], new: Any) -> None:
    _get(root, path[:-1])[path[-1]] = new


def _mutate(draw: Callable[..., Any], obj: dict[str, Any]) -> None:
    """One random mutation of ``obj`` in place."""
    nodes = _nodes(obj)
    mutation = draw(st.sampled_from(["delete", "add", "retype", "wrap"]))
    if mutation == "delete":
        keyed = [(p, k) for p, n in nodes if isinstance(n, dict) for k in n]
        path, key = draw(st.sampled_from(keyed))
        del _get(obj, path)[key]
    elif mutation == "add":
        path = draw(st.sampled_from([p for p, n in nodes if isinstance(n, dict)]))
        key = draw(st.sampled_from(["zzUnknown", "Name", "spec", "items"]))
        _get(obj, path)[key] = draw(_JSON)
    elif mutation == "retype":
        leaves = [p for p, n in nodes if p and not isinstance(n, dict | list)]
        path = draw(st.sampled_from(leaves))
        old = _get(obj, path)
        new = draw(_SCALARS.filter(lambda v: type(v) is not type(old)) | _JSON)
        _set(obj, path, new)
    else:
        path = draw(st.sampled_from([p for p, _ in nodes if p]))
        _set(obj, path, [_get(obj, path)])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_example_objects_same_errors(data: st.DataObject) -> None:
    """Randomly broken example objects get the same (path, message) errors as jsonschema."""
    objects = _example_objects()
    minor, original = data.draw(st.sampled_from(objects))
    obj = copy.deepcopy(original)
    for _ in range(data.draw(st.integers(1, 3))):
        _mutate(data.draw, obj)
    _assert_same(_pair(minor, original["apiVersion"], original["kind"]), obj)


def test_every_example_schema_checked_against_mutations() -> None:
    """Each example kind, with each mutation at the first eligible spot, agrees with jsonschema."""
    for minor, original in _example_objects():
        pair = _pair(minor, original["apiVersion"], original["kind"])
        for path, node in _nodes(original):
            for edit in ("wrap", "retype", "add", "delete"):
                obj = copy.deepcopy(original)
                if edit == "wrap" and path:
                    _set(obj, path, [node])
                elif edit == "retype" and path and not isinstance(node, dict | list):
                    _set(obj, path, 7 if isinstance(node, str) else "7")
                elif edit == "add" and isinstance(node, dict):
                    _get(obj, path)["zzUnknown"] = 1
                elif edit == "delete" and isinstance(node, dict) and node:
                    del _get(obj, path)[next(iter(node))]
                else:
                    continue
                _assert_same(pair, obj)


def test_mutation_paths_and_messages_as_documented() -> None:
    """A wrong image type is reported at the JSON path with jsonschema's message."""
    minor, deployment = next((m, o) for m, o in _example_objects() if o["kind"] == "Deployment")
    obj = copy.deepcopy(deployment)
    obj["spec"]["template"]["spec"]["containers"][0]["image"] = 5
    obj["spec"]["bogus"] = 1
    del obj["spec"]["selector"]
    check, _ = _pair(minor, "apps/v1", "Deployment")
    errors = set(check(obj))
    assert (("spec", "template", "spec", "containers", 0, "image"),
            "5 is not of type 'string', 'null'") in errors
    assert (("spec",), "Additional properties are not allowed ('bogus' was unexpected)") in errors
    assert (("spec",), "'selector' is a required property") in errors


# ---------------------------------------------------------------- keywords, one by one

_CASES: list[tuple[dict[str, Any], list[Any]]] = [
    ({"type": ["string", "null"]}, ["a", None, 1, True, [], {}]),
    ({"type": "integer"}, [1, 1.0, 1.5, True, "1", None]),
    ({"type": "number"}, [1, 1.5, True, "1"]),
    ({"type": "boolean"}, [True, 0, "true"]),
    ({"type": ["integer", "string"]}, [1, "a", 1.5, None]),
    ({"enum": ["a", "b"]}, ["a", "c", None, 1]),
    ({"enum": [1, True, None, [1], {"a": 1}]}, [1, True, False, 1.0, 0, None, [1], [True],
                                               {"a": 1}, {"a": True}, "1"]),
    ({"const": "x"}, ["x", "y", None]),
    ({"const": 1}, [1, 1.0, True]),
    ({"pattern": "^a+$"}, ["aa", "ab", 3, None]),
    ({"minimum": 1, "maximum": 3}, [0, 1, 3, 4, 2.5, "9", True]),
    ({"exclusiveMinimum": 1, "exclusiveMaximum": 3}, [1, 2, 3]),
    ({"minLength": 1, "maxLength": 3}, ["", "a", "abcd", 5]),
    ({"minLength": 2, "maxLength": 0}, ["", "a"]),
    ({"minItems": 1, "maxItems": 2}, [[], [1], [1, 2, 3], "ab"]),
    ({"minItems": 2, "maxItems": 0}, [[], [1]]),
    ({"minProperties": 1, "maxProperties": 1}, [{}, {"a": 1}, {"a": 1, "b": 2}]),
    ({"minProperties": 2, "maxProperties": 0}, [{}, {"a": 1}]),
    ({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}},
      "required": ["b", "a"], "additionalProperties": False},
     [{}, {"a": 1, "b": "x", "c": 1, "d": 2}, {"a": "x", "b": 1}, None, [], {3: 1}]),
    ({"additionalProperties": {"type": "integer"}}, [{"a": 1, "b": "x", "c": None}, 5]),
    ({"properties": {"a": {"type": "string"}}, "additionalProperties": True}, [{"a": 1, "b": 1}]),
    ({"required": ["a"], "minProperties": 2, "properties": {"a": {"minLength": 2}},
      "additionalProperties": False}, [{}, {"a": "x", "z": 1}, "str"]),
    ({"items": {"type": "string"}, "type": "array"}, [[], ["a", 1, None], "a", {"a": 1}]),
    ({"items": True}, [[1]]),
    ({"oneOf": [{"type": ["string", "null"]}, {"type": ["number", "null"]}]},
     ["1Gi", 1, None, True, []]),
    ({"oneOf": [{"type": "string"}, {"minLength": 2}, {"maxLength": 3}]}, ["ab", 1, "abcdef"]),
    ({"anyOf": [{"type": "string"}, {"type": "integer"}]}, ["a", 1, None]),
    ({"allOf": [{"type": "string"}, {"minLength": 2}]}, ["a", 1, "ab"]),
    ({"not": {"type": "string"}}, ["a", 1]),
    ({"if": {"properties": {"t": {"const": "oci"}}, "required": ["t"]},
      "then": {"properties": {"u": {"pattern": "^oci://"}}},
      "else": {"properties": {"u": {"pattern": "^https?://"}}}},
     [{"t": "oci", "u": "oci://x"}, {"t": "oci", "u": "https://x"}, {"u": "oci://x"}, {}]),
    ({"if": {"type": "string"}, "then": {"minLength": 2}}, ["a", 1]),
    ({"then": {"type": "string"}}, [1]),
    ({"properties": {"b": True}, "allOf": [True, {"not": False}]}, [{"a": 1, "b": 1}]),
    ({"type": "object", "x-kubernetes-list-type": "atomic", "format": "int32",
      "description": "d", "title": "t", "default": {}}, [{}, 1]),
]


@pytest.mark.parametrize(("schema", "instances"), _CASES, ids=lambda v: json.dumps(v)[:60])
def test_keyword_messages_match_jsonschema(schema: dict[str, Any], instances: list[Any]) -> None:
    """Each supported keyword gives jsonschema's errors, in jsonschema's order, for both drafts."""
    # jsonschema checks additionalProperties subschemas in set order: compare those unordered.
    unordered = isinstance(schema.get("additionalProperties"), dict)
    for draft, validator in (("2020-12", Draft202012Validator(schema)),
                             ("draft-07", Draft7Validator(_draft7(schema)))):
        check = schemac.compile_schema(schema, draft=draft)  # type: ignore[arg-type]
        for instance in instances:
            ours = [(tuple(p), m) for p, m in check(instance)]
            theirs = [(tuple(e.absolute_path), e.message) for e in validator.iter_errors(instance)]
            if unordered:
                ours, theirs = sorted(ours, key=repr), sorted(theirs, key=repr)
            assert ours == theirs, (draft, instance)


def test_items_false() -> None:
    """2020-12 ``items: false`` has its own message; in draft-07 it is left to jsonschema."""
    check = schemac.compile_schema({"items": False})
    validator = Draft202012Validator({"items": False})
    for instance in ([], [1], [1, 2], "x"):
        assert _ours(check, instance) == _theirs(validator, instance)
    with pytest.raises(schemac.UnsupportedSchema):
        schemac.compile_schema({"items": False}, draft="draft-07")


def test_boolean_schemas() -> None:
    """A true schema accepts anything; a false one rejects with jsonschema's message."""
    assert schemac.compile_schema(True)(1) == ()
    assert list(schemac.compile_schema(False)(1)) == [((), "False schema does not allow 1")]


def test_draft7_ref_hides_siblings() -> None:
    """In draft-07 the siblings of $ref are ignored; in 2020-12 they apply too."""
    schema = {"definitions": {"s": {"type": "string"}},
              "properties": {"a": {"$ref": "#/definitions/s", "minLength": 5}}}
    seven = schemac.compile_schema(schema, draft="draft-07")
    twenty = schemac.compile_schema(schema)
    assert list(seven({"a": "ab"})) == []
    assert list(twenty({"a": "ab"})) == [(("a",), "'ab' is too short")]
    assert _theirs(Draft7Validator(_draft7(schema)), {"a": "ab"}) == []


def test_ref_into_another_document() -> None:
    """A $ref relative to the root's $id resolves into a registered document."""
    defs = {"$defs": {"n": {"type": "integer"}, "a~/b": {"type": "string"}}}
    schema = {"$id": "https://example.com/api/thing/v1",
              "properties": {"n": {"$ref": "/api/_defs.json#/$defs/n"},
                             "s": {"$ref": "/api/_defs.json#/$defs/a~0~1b"}}}
    check = schemac.compile_schema(schema, documents={"https://example.com/api/_defs.json": defs})
    assert list(check({"n": "x", "s": 1})) == [
        (("n",), "'x' is not of type 'integer'"), (("s",), "1 is not of type 'string'")]


# ---------------------------------------------------------------- recursion

_TREE = {
    "$ref": "#/$defs/node",
    "$defs": {"node": {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
            "props": {"additionalProperties": {"$ref": "#/$defs/node"}},
        },
        "required": ["name"],
        "additionalProperties": False,
    }},
}


def test_recursive_schema_matches_jsonschema() -> None:
    """A self-referencing schema validates to any depth, like jsonschema."""
    check = schemac.compile_schema(_TREE)
    validator = Draft202012Validator(_TREE)
    deep: dict[str, Any] = {"name": "leaf", "extra": 1}
    for depth in range(30):
        deep = {"name": f"n{depth}", "children": [{"name": "ok"}, deep], "props": {"p": {}}}
    _assert_same((check, validator), deep)
    errors = list(check(deep))
    assert len(errors) == 31
    assert (("children", 1) * 30, "Additional properties are not allowed ('extra' was "
            "unexpected)") in errors


@settings(max_examples=150, deadline=None)
@given(st.recursive(
    st.fixed_dictionaries({"name": st.sampled_from(["a", 1])},
                          optional={"x": st.just(1)}),
    lambda inner: st.fixed_dictionaries(
        {}, optional={"name": st.just("n"), "children": st.lists(inner, max_size=3),
                      "props": st.dictionaries(st.sampled_from(["p", "q"]), inner,
                                               max_size=2)}),
    max_leaves=12,
))
def test_recursive_schema_random_trees(tree: dict[str, Any]) -> None:
    """Random trees get jsonschema's errors under the recursive schema."""
    _assert_same((schemac.compile_schema(_TREE), Draft202012Validator(_TREE)), tree)


def test_json_schema_props_recursion() -> None:
    """The real CRD schema (JSONSchemaProps recurses) agrees with jsonschema."""
    pair = _pair(34, "apiextensions.k8s.io/v1", "CustomResourceDefinition")
    leaf: dict[str, Any] = {"type": "string", "maxLength": "ten", "bogus": True}
    props: dict[str, Any] = leaf
    for _ in range(6):
        props = {"type": "object", "properties": {"a": props, "b": {"items": {"schema": leaf}}},
                 "x-kubernetes-preserve-unknown-fields": "yes"}
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "things", "kind": "Thing"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": props}}]},
    }
    _assert_same(pair, crd)
    errors = list(pair[0](crd))
    assert len(errors) >= 7
    assert max(len(path) for path, _ in errors) > 15  # errors found deep inside the recursion


# ---------------------------------------------------------------- unsupported → fallback


@pytest.mark.parametrize("schema", [
    {"uniqueItems": True},
    {"patternProperties": {"^a": {}}, "additionalProperties": False},
    {"multipleOf": 2},
    {"prefixItems": [{}]},
    {"items": [{"type": "string"}]},
    {"$dynamicRef": "#x"},
    {"propertyNames": {"pattern": "^a"}},
    {"dependentRequired": {"a": ["b"]}},
    {"unevaluatedProperties": False},
    {"made-up-keyword": 1},
    {"properties": {"a": {"$ref": "https://elsewhere.example/x.json"}}},
    {"properties": {"a": {"$ref": "#anchor"}}},
    {"properties": {"a": {"$ref": "#/$defs/missing"}}},
    {"type": "float"},
    {"properties": {"a": False}},
    {"minLength": "3"},
    {"pattern": "(unclosed"},
    {"properties": {"a": {"$id": "https://other.example/", "type": "string"}}},
])
def test_unsupported_keywords_raise(schema: dict[str, Any]) -> None:
    """Anything the compiler does not implement raises instead of being skipped."""
    with pytest.raises(schemac.UnsupportedSchema):
        schemac.compile_schema(schema)


def test_failed_compile_leaves_compiler_usable() -> None:
    """A compile that fails half way forgets its partial work; later compiles still work."""
    defs = {"$defs": {
        "node": {"properties": {"next": {"$ref": "#/$defs/node"}, "leaf": {"$ref": "#/$defs/leaf"}},
                 "additionalProperties": False},
        "leaf": {"type": "string"},
        "bad": {"properties": {"n": {"$ref": "#/$defs/node"}}, "uniqueItems": True},
    }}
    uri = "https://example.com/defs.json"
    compiler = schemac.Compiler({uri: defs})
    with pytest.raises(schemac.UnsupportedSchema):
        compiler.compile({"$ref": f"{uri}#/$defs/bad"})
    check = compiler.compile({"$ref": f"{uri}#/$defs/node"})
    assert list(check({"next": {"next": {"leaf": 1, "x": 0}}})) == [
        (("next", "next", "leaf"), "1 is not of type 'string'"),
        (("next", "next"), "Additional properties are not allowed ('x' was unexpected)"),
    ]


def test_compile_file_caches(tmp_path: Path) -> None:
    """compile_file compiles a file once; an unsupported file raises every time."""
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"type": "string"}))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"uniqueItems": True}))
    assert schemac.compile_file(good) is schemac.compile_file(good)
    for _ in range(2):
        with pytest.raises(schemac.UnsupportedSchema):
            schemac.compile_file(bad)


def test_schema_validator_falls_back_to_jsonschema(monkeypatch: pytest.MonkeyPatch) -> None:
    """A custom schema the compiler cannot take is still enforced, through jsonschema."""
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"items": {"type": "array", "uniqueItems": True}}}
    monkeypatch.setattr("gen.emit.crd_schemas.custom_schema",
                        lambda _api_version, kind: schema if kind == "Odd" else None)
    findings = SchemaValidator().validate(
        {"apiVersion": "example.com/v1", "kind": "Odd", "items": [1, 1]}, 34,
        SourceLocation("out/x.yaml"))
    assert [(f.rule, f.key_path, f.message) for f in findings] == [
        ("GEN020", "items", "Odd does not match the 1.34 schema: [1, 1] has non-unique elements")]


# ---------------------------------------------------------------- SchemaValidator


def test_schema_validator_findings_format() -> None:
    """SchemaValidator reports compiled errors as GEN020 findings with JSON key paths."""
    minor, deployment = next((m, o) for m, o in _example_objects() if o["kind"] == "Deployment")
    obj = copy.deepcopy(deployment)
    obj["spec"]["template"]["spec"]["containers"][0]["image"] = ["x"]
    where = SourceLocation("out/d.yaml")
    findings = SchemaValidator().validate(obj, minor, where)
    assert [(f.rule, f.key_path, f.message, f.location) for f in findings] == [(
        "GEN020", "spec.template.spec.containers[0].image",
        f"Deployment does not match the 1.{minor} schema: ['x'] is not of type 'string', 'null'",
        where,
    )]


def test_schema_validator_same_findings_as_jsonschema() -> None:
    """For broken example objects SchemaValidator's findings equal jsonschema's, in order."""
    validator = SchemaValidator()
    for minor, original in _example_objects():
        obj = copy.deepcopy(original)
        obj["zz"] = 1
        obj.pop("metadata", None)
        findings = validator.validate(obj, minor, SourceLocation("f"))
        _, reference = _pair(minor, original["apiVersion"], original["kind"])
        theirs = [(".".join(map(str, e.absolute_path)), e.message)
                  for e in reference.iter_errors(obj)]
        assert [(f.key_path, f.message.split(" schema: ", 1)[1]) for f in findings] == theirs


def test_schema_validator_no_schema() -> None:
    """A kind without a schema still gives the GEN020 'no schema' finding."""
    findings = SchemaValidator().validate(
        {"apiVersion": "example.com/v1", "kind": "Nothing"}, 34, SourceLocation("f"))
    assert len(findings) == 1
    assert findings[0].rule == "GEN020"
    assert findings[0].message.startswith("no schema for Nothing example.com/v1 in Kubernetes 1.34")


def test_all_bundled_schemas_of_one_version_compile() -> None:
    """Every strict schema of one Kubernetes version compiles (nothing falls back)."""
    folder = _schema_file(34, "v1", "Pod").parent
    files = [f for f in sorted(folder.glob("*.json")) if f.name not in ("_definitions.json",
                                                                         "all.json")]
    assert len(files) > 500
    for file in files:
        schemac.compile_file(file, folder / "_definitions.json", DEFS_URI)
