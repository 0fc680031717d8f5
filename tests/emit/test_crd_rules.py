"""gen.emit.crd_rules: which fields a CEL rule reads, and verdicts shared between nodes."""

from __future__ import annotations

from typing import Any

import pytest

import gen.caches
from gen.emit import crd_rules
from gen.emit.crd_rules import compile_rule, plain, reads_of, schema_checks, verdict


@pytest.mark.parametrize(("rule", "reads"), [
    ("has(self.a) && self.b > 1", (("a", False), ("b", True))),
    ("has(self.a) && self.a > 1", (("a", True),)),
    ("has(self.a.b)", (("a", True),)),
    ("self.a.size() > 0", (("a", True),)),
    ("!has(self.chart) || !has(self.chartRef)", (("chart", False), ("chartRef", False))),
    ("'self.x' == self.y", (("y", True),)),
    ('"""self""" == self.y', (("y", True),)),
    ("'it\\'s self.x' + self.q == ''", (("q", True),)),
    ("true", ()),
    # a literal that starts with R or B is not a raw or bytes prefix (Flux's strategy rules)
    ("!has(self.retryInterval) || self.name != 'RemediateOnFailure'",
     (("name", True), ("retryInterval", False))),
    ('self.a == "Bytes" || self.b == b\'x\'', (("a", True), ("b", True))),
    # anything that may read more than named fields shares nothing
    ("self.all(x, x != '')", None),
    ("size(self) > 1", None),
    ("self == self", None),
    ("self['a'] == 1", None),
    ("self.?a.orValue(1) == 1", None),
    ("self.a.exists(s, s == self)", None),
    ('r"\\\\" == self.a || size(self) > 0', None),
    ("self.x // comment", None),
    ("self.a == r'x'", None),
    ("self.a == Rb'x'", None),
])
def test_reads_of(rule: str, reads: Any) -> None:
    """The fields of self a rule reads, or None when it may read anything else."""
    assert reads_of(rule) == reads


@pytest.mark.parametrize("rule", [
    "self.all(k, k != 'b')", "size(self) < 3", "has(self.a) && self.a > 1",
    "!has(self.b) || self.b == 'x'", "has(self.c)", "self.a == 1 || has(self.z)",
    "type(self.a) == int", "string(self.a) == '0'", "1.0 / self.a < 0.0",
])
def test_shared_verdicts_equal_evaluating_each_node(rule: str) -> None:
    """On nodes that differ in read and unread fields, values and types, the shared verdict is
    always the node's own."""
    compiled = compile_rule(rule)
    assert not compiled.error
    nodes: list[dict[str, Any]] = [
        {}, {"a": 1}, {"a": 2}, {"a": 1.0}, {"a": True}, {"a": "1"}, {"a": 2, "b": "x"},
        {"a": 2, "b": "y"}, {"a": 2, "b": None}, {"a": 2, "c": [1]}, {"a": 2, "c": {"d": 1}},
        {"b": "x", "c": 0}, {"a": 0.0}, {"a": -0.0}, {"z": None}, {"a": 2, "q": 2 ** 70},
        {"a": [1, 2]}, {"a": {"x": 1}},
    ]
    gen.caches.clear()
    for _ in range(2):
        for node in nodes:
            assert verdict(compiled, node, plain(node)) == compiled.evaluate(node), node


def test_a_node_cel_cannot_take_in_is_evaluated_as_it_is() -> None:
    """A field CEL cannot convert makes the whole evaluation fail, read or not; such a node
    never takes a verdict another node left."""
    compiled = compile_rule("has(self.a)")
    gen.caches.clear()
    assert verdict(compiled, {"a": 1, "b": 2}, True) == (True, "")
    odd = {"a": 1, "b": 2 ** 70}
    assert not plain(odd)
    ok, error = verdict(compiled, odd, plain(odd))
    assert ok is None and "out of range" in error
    assert not plain({"a": (1, 2)}) and not plain({1: "x"}) and plain({"a": [None, 1.5]})


def test_rule_errors_are_the_same_with_verdicts_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """SchemaChecks.errors gives the same answer with the verdict cache on and off."""
    schema = {"type": "object", "properties": {"spec": {
        "type": "object", "x-kubernetes-validations": [
            {"rule": "!has(self.min) || self.min <= (has(self.max) ? self.max : 100)",
             "message": "min above max"},
            {"rule": "has(self.a) || has(self.b)", "messageExpression": "'need a or b'"}],
        "properties": {"min": {"type": "integer"}, "max": {"type": "integer"},
                       "a": {"type": "string"}, "b": {"type": "string"},
                       "name": {"type": "string"}}}}}
    checks = schema_checks(schema)
    specs = [{"min": 1, "max": 2, "a": "x"}, {"min": 3, "max": 2, "a": "x", "name": "n1"},
             {"min": 3, "max": 2, "a": "y", "name": "n2"}, {"min": 200}, {"name": "n3"},
             {"min": 3, "max": 4, "b": "x"}]
    objects = [{"spec": s} for s in specs]
    gen.caches.clear()
    shared = [checks.errors(o) for o in objects * 2]
    monkeypatch.setattr(crd_rules, "verdict", lambda rule, value, _plain: rule.evaluate(value))
    assert shared == [checks.errors(o) for o in objects * 2]
    assert [len(e) for e in shared[:6]] == [0, 1, 1, 2, 1, 0]


@pytest.mark.parametrize("rule", ["size(self) < 3", "self.all(x, x != 'b')",
                                  "self.exists_one(x, x == 1)", "self.matches('^a')"])
def test_a_rule_that_reads_its_whole_node_is_shared_between_equal_nodes(rule: str) -> None:
    """A rule that may read anything of its node shares its verdict between nodes equal as
    CEL sees them (lists, strings, maps; 1, 1.0 and true apart), and is always the node's own."""
    compiled = compile_rule(rule)
    assert not compiled.error and compiled.reads is None
    nodes: list[Any] = [[], [1], [1, 1], [1.0], [True], ["b"], ["a", "b", "c"], "abc", "b",
                        {"a": 1}, {"b": 1, "c": 2, "d": 3}, [[1]], [{"x": None}]]
    gen.caches.clear()
    for _ in range(2):
        for node in nodes:
            assert verdict(compiled, node, plain(node)) == compiled.evaluate(node), node


# --------------------------------------------------------------- per template shape

SCALED = """apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata:
  name: {{ name|tojson }}
  namespace: ns
spec:
  scaleTargetRef:
    name: {{ target|tojson }}
  minReplicaCount: {{ lo|tojson }}
  maxReplicaCount: {{ hi|tojson }}
  fallback: {{ fallback|tojson }}
  triggers:
  - type: prometheus
    metadata: {{ trigger|tojson }}
"""
"""A KEDA ScaledObject whose rule (``minReplicaCount <= maxReplicaCount``) reads values,
with a default below a value (``fallback.behavior``)."""

SCALED_BROKEN = SCALED.replace("{{ lo|tojson }}", "5").replace("{{ hi|tojson }}", "2")
"""The same with the rule broken by the template itself, whatever the values."""

GOOD: dict[str, Any] = {"name": "web", "target": "web", "lo": 1, "hi": 3, "fallback": None,
                        "trigger": {"query": "sum(up)", "threshold": "1"}}
CASES: list[dict[str, Any]] = [
    GOOD,
    {**GOOD, "lo": 5, "hi": 2},                                  # the rule broken by values
    {**GOOD, "hi": None},                                        # a null pruned
    {**GOOD, "lo": "one"},                                       # the schema broken
    {**GOOD, "hi": 2 ** 70},                                     # CEL cannot take it in
    {**GOOD, "fallback": {"failureThreshold": 3, "replicas": 1}},  # a default below a value
    {**GOOD, "fallback": {"failureThreshold": 3, "replicas": 1, "behavior": None}},
    {**GOOD, "trigger": {"query": None}},
    {**GOOD, "name": "Not_A_Name"},                              # metadata
    {**GOOD, "trigger": []},
]


def _shaped_and_whole(source: str, context: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    """The findings of the rendered object validated with its shape's holes, and without."""
    import jinja2

    from gen.emit import skeleton, yamlfast
    from gen.emit.render import make_environment
    from gen.emit.validate import SchemaValidator
    from gen.errors import SourceLocation

    env = make_environment(None)
    env.loader = jinja2.DictLoader({"t.j2": source})
    filled = skeleton.render_filled(env, env.get_template("t.j2"), context, yamlfast.load_all)
    assert filled is not None and filled.holes is not None
    (doc,) = filled.docs
    validator, where = SchemaValidator(), SourceLocation("out/x.yaml")
    return (validator.validate(doc, 33, where, None, filled.holes),
            validator.validate(doc, 33, where))


def test_a_shape_rejects_exactly_what_the_whole_object_walk_rejects() -> None:
    """Values that break a rule, the schema, CEL's types or metadata, nulls and defaults below
    values: the same findings with the shape's holes as without, whichever object of the
    shape comes first (its programs are made from it)."""
    rejected = [bool(_shaped_and_whole(SCALED, c)[1]) for c in CASES]
    assert rejected == [False, True, False, True, True, False, False, False, True, True]
    for order in (CASES, CASES[::-1]):
        gen.caches.clear()
        for _ in range(2):
            for context in order:
                shaped, whole = _shaped_and_whole(SCALED, context)
                assert shaped == whole, context
    shaped, _ = _shaped_and_whole(SCALED, CASES[1])
    assert [f.rule for f in shaped] == ["GEN024"]
    assert "minReplicaCount must be less than or equal to maxReplicaCount" in shaped[0].message


def test_a_template_that_breaks_a_rule_itself_is_rejected_for_every_object() -> None:
    """The rule broken by the fixed part (walked once per shape): every object of the shape
    is rejected, at the same path, with the same message, as the whole-object walk says."""
    gen.caches.clear()
    broken = 0
    for _ in range(2):
        for context in CASES:
            shaped, whole = _shaped_and_whole(SCALED_BROKEN, context)
            assert shaped == whole, context
            rules = {f.rule for f in shaped}
            assert "GEN024" in rules or "GEN020" in rules, context  # rules run on a valid schema
            broken += "GEN024" in rules
    assert broken == 2 * 9  # all but the one whose value breaks the schema (a list trigger)


REPLACEMENTS: list[Any] = [None, 2 ** 70, "x", "", 0, -1, 1.5, True, {}, [], {"a": None},
                           [None], {"name": "n", "port": 1}]


def test_every_custom_resource_shape_of_the_example_fleet_with_any_value_in_a_hole(
        tmp_path: Any) -> None:
    """Each custom resource shape of the example fleet, each of its values replaced in turn
    by values of every type (nulls, 2⁶⁴-range integers, maps, lists): the findings with the
    holes are the whole-object walk's."""
    import json

    from gen.emit.crd_schemas import CRDSet
    from gen.emit.render import make_environment, render_cluster
    from gen.emit.skeleton import Holes
    from gen.emit.validate import SchemaValidator
    from gen.errors import SourceLocation
    from gen.pipeline import load_plan
    from tests.helpers import copy_fleet, replaced_at

    root = copy_fleet(tmp_path)
    plan = load_plan(root / "profiles", base=root)
    env, crds = make_environment(None), CRDSet()
    seen: dict[str, Any] = {}
    for cluster in plan.clusters:
        for obj in render_cluster(env, cluster)[0]:
            if obj.holes is not None and crds.lookup(obj.api_version, obj.kind) is not None:
                seen.setdefault(obj.holes.shape.shape, (cluster.minor, obj))
    assert len(seen) >= 10
    validator, where = SchemaValidator(), SourceLocation("out/x.yaml")
    gen.caches.clear()
    compared = rejected = 0
    for minor, obj in seen.values():
        holes = obj.holes
        assert validator.validate(obj.data, minor, where, None, holes) == \
            validator.validate(obj.data, minor, where)
        for index, path in enumerate(holes.shape.paths[:16]):
            for value in REPLACEMENTS:
                data = replaced_at(obj.data, path, value)
                values = list(holes.values)
                texts = list(holes.texts)
                values[index], texts[index] = value, json.dumps(value)
                new = Holes(holes.shape, tuple(values), tuple(texts))
                shaped = validator.validate(data, minor, where, None, new)
                assert shaped == validator.validate(data, minor, where), (obj.path, path, value)
                compared += 1
                rejected += bool(shaped)
    assert compared > 500 and 0 < rejected < compared
