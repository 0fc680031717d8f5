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
