"""gen.emit.crd_convert and gen.emit.crd_rules: Kubernetes' structural-schema semantics."""

from __future__ import annotations

from typing import Any

import pytest

from gen.emit.crd_convert import (
    CRDSchema,
    compact_crd,
    inline_subschemas,
    share_subschemas,
    to_json_schema,
)
from gen.emit.crd_rules import compile_rule, schema_checks, unevaluable_rules
from gen.emit.crd_schemas import CRDSet
from gen.emit.validate import SchemaValidator
from gen.errors import SourceLocation

WHERE = SourceLocation("out/x.yaml")


def verdict(spec_schema: dict[str, Any], spec: Any) -> list[tuple[str, str, str]]:
    """(rule, key path, message) of gen's findings on a Thing with ``spec`` under a CRD whose
    spec has ``spec_schema``."""
    schema = {"type": "object", "properties": {"spec": spec_schema}}
    crd = CRDSchema("example.com/v1", "Thing", True, schema, "test", None, repr(schema))
    obj = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"},
           "spec": spec}
    return [(f.rule, f.key_path, f.message.split("): ", 1)[-1])
            for f in SchemaValidator(CRDSet((crd,))).validate(obj, 34, WHERE)]


OBJ = {"type": "object", "properties": {"a": {"type": "string"}}}


def test_unknown_fields_are_rejected_at_every_depth() -> None:
    """An object node without additionalProperties accepts only its properties."""
    nested = {"type": "object", "properties": {"inner": OBJ}}
    assert verdict(nested, {"inner": {"a": "x"}}) == []
    assert verdict(nested, {"inner": {"b": "x"}}) == [
        ("GEN020", "spec.inner", "Additional properties are not allowed ('b' was unexpected)")]


def test_an_object_without_properties_takes_no_field() -> None:
    """``{type: object}`` alone: Kubernetes prunes (strict: refuses) every field."""
    assert verdict({"type": "object"}, {}) == []
    assert verdict({"type": "object"}, {"x": 1})[0][0] == "GEN020"


def test_preserve_unknown_fields_opens_an_object() -> None:
    """x-kubernetes-preserve-unknown-fields keeps unknown fields, declared ones still typed."""
    schema = {**OBJ, "x-kubernetes-preserve-unknown-fields": True}
    assert verdict(schema, {"a": "x", "anything": {"deep": [1]}}) == []
    assert [v[1] for v in verdict(schema, {"a": 1})] == ["spec.a"]


def test_additional_properties_schema_types_the_values() -> None:
    """A map (additionalProperties: schema) types every value."""
    schema = {"type": "object", "additionalProperties": {"type": "string"}}
    assert verdict(schema, {"k": "v"}) == []
    assert [v[1] for v in verdict(schema, {"k": 1})] == ["spec.k"]


def test_int_or_string() -> None:
    """x-kubernetes-int-or-string takes an integer or a string, nothing else."""
    schema = {"type": "object", "properties": {"port": {"x-kubernetes-int-or-string": True}}}
    assert verdict(schema, {"port": 8080}) == []
    assert verdict(schema, {"port": "http"}) == []
    assert [v[1] for v in verdict(schema, {"port": 1.5})] == ["spec.port"]
    assert [v[1] for v in verdict(schema, {"port": True})] == ["spec.port"]


def test_nullable_and_null_pruning() -> None:
    """null is a value only where nullable; elsewhere the API server drops the field first."""
    schema = {"type": "object", "required": ["b"], "properties": {
        "a": {"type": "string", "nullable": True},
        "b": {"type": "string"},
        "c": {"type": "string"},
        "e": {"type": "string", "enum": ["x"], "nullable": True},
    }}
    assert verdict(schema, {"a": None, "b": "x", "c": None, "e": None}) == []
    # b is required: its null is pruned, and then it is missing.
    assert verdict(schema, {"b": None}) == [("GEN020", "spec", '"b" is a required property')]
    # In a list, a null item is not pruned: it is a wrong type.
    listed = {"type": "object", "properties": {"l": {"type": "array", "items": {"type": "string"}}}}
    assert [v[1] for v in verdict(listed, {"l": [None]})] == ["spec.l[0]"]


def test_defaults_are_applied_before_validation() -> None:
    """An absent field with a default is filled in; a required one with a default is never
    missing, and rules see the default."""
    schema = {"type": "object", "required": ["mode"], "properties": {
        "mode": {"type": "string", "default": "fast"},
        "limit": {"type": "integer", "default": 100},
        "floor": {"type": "integer"},
    }, "x-kubernetes-validations": [
        {"rule": "self.floor <= self.limit", "message": "floor above limit"}]}
    assert verdict(schema, {"floor": 5}) == []
    assert verdict(schema, {"floor": 500}) == [("GEN024", "spec", "floor above limit")]
    checks = schema_checks({"properties": {"spec": schema}})
    assert checks.prepare({"spec": {"floor": None}}) == {"spec": {"mode": "fast", "limit": 100}}
    assert checks.prepare({"spec": {}}) == {"spec": {"mode": "fast", "limit": 100}}
    untouched = {"spec": {"mode": "slow", "limit": 1}}
    assert checks.prepare(untouched) is untouched


def test_numeric_and_string_bounds() -> None:
    """minimum, exclusiveMinimum (OpenAPI v3.0's boolean), maxLength, pattern, enum, items."""
    schema = {"type": "object", "properties": {
        "n": {"type": "integer", "minimum": 1, "exclusiveMinimum": True},
        "s": {"type": "string", "maxLength": 3, "pattern": "^[a-z]+$"},
        "e": {"type": "string", "enum": ["A", "B"]},
        "l": {"type": "array", "maxItems": 1, "items": {"type": "integer"}},
    }}
    assert verdict(schema, {"n": 2, "s": "abc", "e": "A", "l": [1]}) == []
    bad = verdict(schema, {"n": 1, "s": "abcd", "e": "C", "l": [1, 2]})
    assert sorted(v[1] for v in bad) == ["spec.e", "spec.l", "spec.n", "spec.s"]
    assert [v[1] for v in verdict(schema, {"s": "AB"})] == ["spec.s"]


def test_junctors_constrain_but_do_not_close() -> None:
    """properties under oneOf/anyOf are value validations: they never make a field unknown."""
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}},
              "oneOf": [{"required": ["a"]}, {"required": ["b"]}]}
    converted = to_json_schema({"type": "object", "properties": {"spec": schema}}, "x/v1", "T")
    assert "additionalProperties" not in converted["properties"]["spec"]["oneOf"][0]
    assert verdict(schema, {"a": "x"}) == []
    assert verdict(schema, {"a": "x", "b": "y"})[0][:2] == ("GEN020", "spec")
    assert verdict(schema, {})[0][:2] == ("GEN020", "spec")


def test_list_types() -> None:
    """x-kubernetes-list-type set: unique items; map: unique by its keys."""
    schema = {"type": "object", "properties": {
        "set": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
        "map": {"type": "array", "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {
                    "name": {"type": "string"}, "v": {"type": "integer"}}}},
    }}
    assert verdict(schema, {"set": ["a", "b"], "map": [{"name": "a", "v": 1}, {"name": "b"}]}) \
        == []
    assert [v[1] for v in verdict(schema, {"set": ["a", "a"]})] == ["spec.set"]
    assert verdict(schema, {"map": [{"name": "a", "v": 1}, {"name": "a", "v": 2}]}) == [
        ("GEN024", "spec.map[1]", "Duplicate value: {name='a'}")]


def test_embedded_resource() -> None:
    """x-kubernetes-embedded-resource: apiVersion and kind required, metadata is ObjectMeta."""
    schema = {"type": "object", "properties": {"tpl": {
        "type": "object", "x-kubernetes-embedded-resource": True,
        "x-kubernetes-preserve-unknown-fields": True}}}
    assert verdict(schema, {"tpl": {"apiVersion": "v1", "kind": "Pod", "spec": {}}}) == []
    assert [v[2] for v in verdict(schema, {"tpl": {"kind": "Pod"}})] == [
        '"apiVersion" is a required property']
    assert [v[1] for v in verdict(
        schema, {"tpl": {"apiVersion": "v1", "kind": "Pod", "metadata": {"bogus": 1}}})] == [
        "spec.tpl.metadata"]


def test_cel_rule_message_expression_and_field_path() -> None:
    """A false rule fails with messageExpression, else message, else the rule, at fieldPath."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}},
              "x-kubernetes-validations": [
                  {"rule": "self.a > 1", "messageExpression": "'a is ' + string(self.a)",
                   "fieldPath": ".a"},
                  {"rule": "self.a > 2"},
              ]}
    assert verdict(schema, {"a": 3}) == []
    assert verdict(schema, {"a": 1}) == [
        ("GEN024", "spec.a", "a is 1"), ("GEN024", "spec", "failed rule: self.a > 2")]


def test_cel_rule_that_errors_rejects() -> None:
    """A rule that errors at run time (a missing field) fails the object, as in Kubernetes."""
    schema = {"type": "object", "properties": {"a": {"type": "integer"}},
              "x-kubernetes-validations": [{"rule": "self.a > 1"}]}
    ((rule, path, message),) = verdict(schema, {})
    assert (rule, path) == ("GEN024", "spec")
    assert "no such key: a" in message


def test_rules_run_only_where_the_node_is() -> None:
    """A rule on an absent optional field is not evaluated."""
    schema = {"type": "object", "properties": {"o": {
        "type": "object", "properties": {"a": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.a > 1"}]}}}
    assert verdict(schema, {}) == []
    assert verdict(schema, {"o": {"a": 0}})[0][:2] == ("GEN024", "spec.o")


def test_rules_on_list_items_and_map_values() -> None:
    """Rules under items and additionalProperties run on every element, located at it."""
    rule = {"type": "integer", "x-kubernetes-validations": [{"rule": "self % 2 == 0"}]}
    schema = {"type": "object", "properties": {
        "l": {"type": "array", "items": rule},
        "m": {"type": "object", "additionalProperties": rule}}}
    assert [v[1] for v in verdict(schema, {"l": [2, 3], "m": {"x": 4, "y": 5}})] == [
        "spec.l[1]", "spec.m.y"]


def test_transition_rules_are_not_evaluated_on_create() -> None:
    """A rule reading oldSelf runs only on update; a render creates."""
    schema = {"type": "object", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}
    assert verdict(schema, {}) == []


def test_rule_gen_cannot_compile_is_skipped_and_listed() -> None:
    """A rule using a library gen lacks is not evaluated; unevaluable_rules names it."""
    schema = {"type": "object", "properties": {"u": {"type": "string"}},
              "x-kubernetes-validations": [{"rule": "isURL(self.u)"}, {"rule": "self == oldSelf"}]}
    assert verdict(schema, {"u": "https://x"}) == []
    ((path, rule, why),) = unevaluable_rules({"properties": {"spec": schema}})
    assert (path, rule) == (("properties", "spec", "x-kubernetes-validations", 0, "rule"),
                            "isURL(self.u)")
    assert "isURL" in why


def test_compile_rule_is_cached_and_never_raises() -> None:
    """compile_rule returns an error value for a bad rule, and the same object twice."""
    assert compile_rule("self.a >") is compile_rule("self.a >")
    assert compile_rule("self.a >").error
    assert compile_rule("true").evaluate({}) == (True, "")


def test_rule_errors_skip_the_root_metadata() -> None:
    """metadata, apiVersion and kind are ObjectMeta and TypeMeta, not the CRD's to judge."""
    schema = {"type": "object", "properties": {"metadata": {
        "type": "object", "x-kubernetes-validations": [{"rule": "false"}]}}}
    assert schema_checks(schema).errors({"metadata": {"name": "x"}}) == []


def test_metadata_name_constraints_of_the_crd_apply() -> None:
    """A CRD may bound metadata.name (a maxLength); ObjectMeta stays the shape."""
    schema = {"type": "object", "properties": {
        "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 3}}},
        "spec": {"type": "object"}}}
    crd = CRDSchema("example.com/v1", "Thing", True, schema, "test", None, "m")
    obj = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "long"}}
    (finding,) = SchemaValidator(CRDSet((crd,))).validate(obj, 34, WHERE)
    assert finding.key_path == "metadata.name"


@pytest.mark.parametrize("key", ["description", "example"])
def test_compact_crd_drops_annotations_not_fields(key: str) -> None:
    """compact_crd strips descriptions and examples, but keeps a property named like one."""
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "things.example.com", "annotations": {"a": "b"}},
           "spec": {"group": "example.com", "scope": "Namespaced",
                    "names": {"kind": "Thing", "plural": "things", "shortNames": ["t"]},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "additionalPrinterColumns": [],
                                  "schema": {"openAPIV3Schema": {
                                      key: "text", "type": "object", "properties": {
                                          key: {"type": "string", key: "text"}}}}}]}}
    compact = compact_crd(crd)
    schema = compact["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    assert schema == {"type": "object", "properties": {key: {"type": "string"}}}
    assert compact["spec"]["names"] == {"kind": "Thing", "plural": "things"}
    assert compact["metadata"] == {"name": "things.example.com"}


def test_every_bundled_rule_compiles() -> None:
    """gen evaluates every rule of the bundled upstream CRDs (none is skipped)."""
    from gen.emit.crd_schemas import bundled

    crds = bundled()
    assert sum(str(s.schema).count("x-kubernetes-validations") for s in crds) >= 8
    assert [(s.kind, unevaluable_rules(s.schema)) for s in crds
            if unevaluable_rules(s.schema)] == []


# ------------------------------------------------------------------- shared subschemas

_BIG = {"type": "object", "additionalProperties": False,
        "properties": {f"field{i}": {"type": "string", "minLength": 1} for i in range(12)}}


def test_share_subschemas_writes_a_repeated_subschema_once() -> None:
    """A large subschema met twice is one $defs entry, referred to from both places; small
    ones and values (enum, default, const) stay where they are; inlining gives it back."""
    schema = {"type": "object", "additionalProperties": False, "properties": {
        "a": _BIG, "b": {"type": "array", "items": _BIG},
        "c": {"anyOf": [_BIG, {"type": "string"}]},
        "d": {"enum": [_BIG, _BIG]}, "e": {"default": _BIG, "type": "object"},
        "f": {"type": "string"}, "g": {"type": "string"}}}
    shared = share_subschemas(schema)
    ref = {"$ref": "#/$defs/gen-shared-0"}
    assert shared["$defs"] == {"gen-shared-0": _BIG}
    props = shared["properties"]
    assert props["a"] == ref and props["b"]["items"] == ref and props["c"]["anyOf"][0] == ref
    assert props["d"] == {"enum": [_BIG, _BIG]} and props["e"]["default"] == _BIG
    assert props["f"] == {"type": "string"}
    assert inline_subschemas(shared) == schema
    assert share_subschemas(schema, min_chars=10**6) == schema


def test_share_subschemas_nests_and_keeps_verdicts() -> None:
    """A shared subschema may hold another; jsonschema-rs gives the same errors, at the
    same instance paths, on the shared and the inline form."""
    import jsonschema_rs

    outer = {"type": "object", "additionalProperties": False,
             "properties": {"x": _BIG, "y": _BIG, "n": {"type": "integer", "minimum": 3}}}
    schema = {"type": "object", "properties": {"p": outer, "q": outer, "r": _BIG}}
    shared = share_subschemas(schema)
    assert len(shared["$defs"]) == 2
    assert inline_subschemas(shared) == schema
    plain, compact = (jsonschema_rs.Draft202012Validator(s) for s in (schema, shared))
    for instance in ({"p": {"x": {"field1": ""}}, "q": {"n": 1, "z": 0}, "r": {"u": 1}},
                     {"q": {"y": {"field3": 5}}}, {"p": {"x": {"bad": 1}}, "q": {}}):
        mine = sorted((tuple(e.instance_path), e.message) for e in compact.iter_errors(instance))
        theirs = sorted((tuple(e.instance_path), e.message) for e in plain.iter_errors(instance))
        assert mine == theirs and mine


def test_share_subschemas_leaves_a_schema_with_defs_alone() -> None:
    """A schema that already has $defs is not one of to_json_schema's: left as it is."""
    schema = {"$defs": {"x": _BIG}, "properties": {"a": _BIG, "b": _BIG}}
    assert share_subschemas(schema) == schema
