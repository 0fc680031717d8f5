"""Kubernetes' CEL environment as gen models it: versions, validators, the result rule."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gen.dra.cel import SelectorResult, compile_selector, evaluate, kubernetes_minor
from gen.dra.cel._versions import FEATURES, first_new_object_minor
from gen.dra.devices import Device
from gen.errors import CELCompileError
from gen.k8s.semver import parse_version

DEVICE = Device(
    "dra.example.com",
    "device-0",
    {"name": True, "count": 3, "version": parse_version("1.2.3")},
    {},
)


def _error(expression: str, version: str | int | None = None) -> str:
    with pytest.raises(CELCompileError) as info:
        compile_selector(expression, version)
    return info.value.message


@pytest.mark.parametrize(
    ("expression", "first"),
    [
        ("semver('1.2', true) == semver('1.2.0')", 34),  # SemverLib(SemverVersion(1)) at 1.33
        ("isSemver('v1.0.0', true)", 34),
        ("'%s'.format(['a']) == 'a'", 30),  # ext.Strings(2) at 1.29
        ("sets.contains([1], [1])", 30),  # ext.Sets() at 1.29
        ("isIP('::1')", 31),  # library.IP at 1.30
        ("cidr('10.0.0.0/8').containsIP('10.1.2.3')", 31),
        ("quantity('1').isInteger()", 29),  # library.Quantity at 1.28
        ("[1, 2].includes(2)", 38),  # library.Lists(ListsVersion(1)) at 1.37
    ],
)
def test_function_newer_than_the_cluster(expression: str, first: int) -> None:
    """A new object may use a function from the minor after the one that introduced it."""
    message = _error(expression, first - 1)
    assert f"is available to new objects from Kubernetes 1.{first}; this cluster runs " \
        f"1.{first - 1}" in message
    compile_selector(expression, first)
    compile_selector(expression, f"v1.{first}.2")


@pytest.mark.parametrize(("expression", "matched"), [
    ("[1, 2, 3].includes(2)", True),
    ("[1, 2, 3].includes(4)", False),
    ("'model-a'.includes('model-a')", True),
    ("'model-a'.includes('model')", False),
    ("device.attributes['dra.example.com'].count.includes(3)", True),
    ("[[1], [2]].includes([2])", True),
    ("[1, 2].includes('1')", False),
])
def test_includes(expression: str, matched: bool) -> None:
    """Kubernetes' ``includes`` (lists.go@v0.37.2): list membership, else equality."""
    assert evaluate(expression, DEVICE, 38) == SelectorResult(matched)


def test_the_newest_environment_has_everything_gen_implements() -> None:
    compile_selector("semver('1.2', true) == semver('1.2.0')")
    compile_selector("[3, 1].max() == 3 && 'a1'.find('[0-9]') == '1'")


def test_every_feature_of_the_base_environment_is_implemented() -> None:
    assert all(feature.implemented for feature in FEATURES)
    assert evaluate("[1, 2].first() == optional.of(1) && [1, 2].last() == optional.of(2) && "
                    "[].first() == optional.none()", DEVICE) == SelectorResult(True)
    assert "is available to new objects from Kubernetes 1.35; this cluster runs 1.34" in _error(
        "[1].last() == optional.of(1)", 34
    )
    assert "'transformMap' (two-variable comprehensions) is available to new objects from " \
        "Kubernetes 1.33; this cluster runs 1.32" in _error(
            "{'a': 1}.transformMap(k, v, v) == {'a': 1}", 32
        )


@pytest.mark.parametrize("expression", [
    "[1, 2].all(i, v, v > i)",
    "{'a': 1}.exists(k, v, k == 'a' && v == 1)",
    "[1, 2, 1].existsOne(i, v, v == 2)",
    "[1, 2].transformList(i, v, v * i) == [0, 2]",
    "[1, 2].transformList(i, v, i > 0, v) == [2]",
    "{'a': 1}.transformMap(k, v, v + 1) == {'a': 2}",
    "{'a': 1, 'b': 2}.transformMap(k, v, k != 'a', v) == {'b': 2}",
    "{'a': 1}.transformMapEntry(k, v, {v: k}) == {1: 'a'}",
    "[1, 2].indexOf(2) == 1 && [[1], [2]].lastIndexOf([2]) == 1 && 'ab'.indexOf('b') == 1",
    "url('https://example.com:80/x').getPort() == '80' && isURL('/path')",
])
def test_two_variable_comprehensions_urls_and_list_search(expression: str) -> None:
    """Kubernetes 1.33's two-variable comprehensions (new objects from 1.33, the base
    environment of 1.32), the list library's indexOf / lastIndexOf and the URL library."""
    assert evaluate(expression, DEVICE, 33) == SelectorResult(True)


def test_transform_map_entry_refuses_a_repeated_key() -> None:
    outcome = evaluate("{'a': 1, 'b': 2}.transformMapEntry(k, v, {'x': v}) == {}", DEVICE)
    assert outcome.error == "CEL runtime error: insert failed: key x already exists"


def test_feature_table_is_consistent() -> None:
    """Every function belongs to one feature (per arity), and versions are ordered data."""
    seen: dict[tuple[str, int | None], str] = {}
    for feature in FEATURES:
        assert 0 <= feature.introduced <= 37
        for name in feature.functions:
            assert (name, feature.arity) not in seen, name
            seen[name, feature.arity] = feature.name
    assert first_new_object_minor(FEATURES[0]) == 0


@pytest.mark.parametrize("version", ["1.34", "v1.34.2", 34, "1.34.0"])
def test_kubernetes_minor(version: str | int) -> None:
    assert kubernetes_minor(version) == 34


@pytest.mark.parametrize("version", ["2.0", "1", "1.x", "banana", "1.34\n"])
def test_kubernetes_minor_refuses(version: str) -> None:
    with pytest.raises(ValueError, match="not a Kubernetes version"):
        kubernetes_minor(version)


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("[1, 'a'].size() == 2", "<input>:1:5: expected type 'int' but found 'string'"),
        ("{'a': 1, 'b': 'x'}.size() == 2", "expected type 'int' but found 'string'"),
        ("{1: 'a', 'b': 'c'}.size() == 2", "expected type 'int' but found 'string'"),
        ("[1, dyn(2)].size() == 2", "expected type 'int' but found 'dyn'"),
        ("[[1], [1u]].size() == 2", "expected type 'list(int)' but found 'list(uint)'"),
        ("duration('1x') > duration('1s')", "<input>:1:10: invalid duration argument"),
        ("timestamp('not a time') < timestamp('2026-01-01T00:00:00Z')",
         "<input>:1:11: invalid timestamp argument"),
        ("'x'.matches('[')", "<input>:1:13: invalid matches argument"),
        ("'x'.matches('(?=x)')", "invalid matches argument"),  # look-ahead: not RE2
        ("dyn(true)", "must evaluate to bool or the unknown type, not dyn"),
        ("device.attributes['a']", "must evaluate to bool or the unknown type, not map"),
        ("1 == 1.0", "found no matching overload for '_==_' applied to '(int, double)'"),
        # The 1.36 API server's answers, found by the judge's oracle (tools/judge/oracle.py):
        ("['a', 'b'].isSorted()", "too complex, exceeds cost limit"),
        ("['a', 'b'].join('-') == 'a-b'", "too complex, exceeds cost limit"),
        ("url('https://a').getHost() == url('https://b').getHost()",
         "too complex, exceeds cost limit"),
        ("sets.contains([1], [1.0])",
         "found no matching overload for 'sets.contains' applied to '(list(int), list(double))'"),
        ("'x'.find(dyn('(')) == ''",
         "program instantiation failed: error parsing regexp: missing closing ): `(`"),
    ],
)
def test_what_the_api_server_refuses(expression: str, fragment: str) -> None:
    assert fragment in _error(expression)


@pytest.mark.parametrize(
    ("expression", "matched"),
    [
        ("'%s %d'.format(['a', 1]) == 'a 1'", True),  # format() arguments may mix types
        ("[dyn(1), dyn('a')].size() == 2", True),
        ("duration('1h30m') > duration('90s')", True),
        ("timestamp('2026-01-02T03:04:05Z') > timestamp('2026-01-01T00:00:00+01:00')", True),
        ("device.attributes['dra.example.com'].name", True),  # the unknown type: accepted
        ("cel.bind(d, device.attributes['dra.example.com'], d.name)", True),
        ("cel.bind(d, device.attributes['dra.example.com'], true ? d.name : d['name'])", True),
        ("1 < 2.0 && 2u > 1 && -1 <= 0.5 && [1, 2].size() < 2.5", True),
        ("device.attributes['dra.example.com'].count > 2.5", True),
        ("[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3 && [1, 2, 3].sum() == 6", True),
        ("[1, 2, 2].isSorted() && ![2, 1].isSorted()", True),
        ("[1.5, 2.5].sum() == 4.0", True),
        ("'abc 123 def 456'.find('[0-9]+') == '123'", True),
        ("'abc'.find('[0-9]+') == ''", True),
        ("'a1b22c333'.findAll('[0-9]+') == ['1', '22', '333']", True),
        ("'a1b22c333'.findAll('[0-9]+', 2) == ['1', '22']", True),
        ("'a1b22c333'.findAll('[0-9]+', 0) == []", True),
        ("sets.contains([1, 2, 3], [3, 1]) && !sets.contains([1], [2])", True),
        ("sets.equivalent([1, 2, 2], [2, 1]) && sets.intersects([1, 2], [2, 3])", True),
        ("sets.contains([1], [dyn(1.0)])", True),  # CEL equality across numeric types
    ],
)
def test_what_the_api_server_accepts(expression: str, matched: bool) -> None:
    outcome = evaluate(expression, DEVICE)
    assert (outcome.matched, outcome.error) == (matched, None)



@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("[].min() == 1", "min called on empty list"),
        ("dyn([]).max() == 1", "max called on empty list"),
        ("cel.bind(p, '(', 'x'.find(p)) == ''", "Illegal regex"),
        ("ip('1.2.3.4.5') == ip('1.2.3.4')", "IPv4 address too long"),
    ],
)
def test_library_run_time_errors(expression: str, error: str) -> None:
    outcome = evaluate(expression, DEVICE)
    assert outcome.error is not None and error in outcome.error


@pytest.mark.parametrize("expression", [
    "[duration('1s'), duration('2s')].sum() == duration('3s')",
    "[duration('1s')].filter(x, false).sum() == duration('0s')",
    "[duration('2s'), duration('1s')].min() == duration('1s')",
    "[timestamp('2000-01-01T00:00:00Z'), timestamp('2010-01-01T00:00:00Z')].max() == "
    "timestamp('2010-01-01T00:00:00Z')",
    "cel.bind(ds, [duration('1h')], ds.max() + duration('1s') == duration('3601s'))",
])
def test_list_functions_of_durations_and_timestamps(expression: str) -> None:
    assert evaluate(expression, DEVICE) == SelectorResult(True)


def test_durations_in_a_dyn_list_are_a_documented_gap() -> None:
    outcome = evaluate("dyn([duration('1s'), duration('2s')]).sum() == duration('3s')", DEVICE)
    assert outcome.error is not None and "gen cannot evaluate sum() of durations" in outcome.error


# --- docs/cel.md ------------------------------------------------------------------------------

DOC = Path(__file__).resolve().parents[3] / "docs" / "cel.md"


def _section(title: str) -> str:
    text = DOC.read_text(encoding="utf-8")
    return text.split(f"\n{title}\n", 1)[1].split("\n## ", 1)[0]


def test_doc_version_table_is_the_feature_data() -> None:
    """The version table lists every feature of gen.dra.cel._versions, with its versions."""
    section = _section("## The environment, version by version")
    for feature in FEATURES:
        first = f"1.{first_new_object_minor(feature)}" if feature.introduced else "every version"
        row = next(line for line in section.splitlines()
                   if line.startswith(f"| {feature.name}") and f"`{min(feature.functions)}`"
                   in line)
        assert row.endswith(f"| {first} |"), row
        assert ("*not in gen*" in row) == (not feature.implemented), row


def test_doc_examples_hold() -> None:
    """Every ```cel line of the environment section marked // true evaluates to true; the
    lint message shown is the one gen prints."""
    section = _section("## The environment, version by version")
    lines = [
        line.rpartition("  // ")
        for block in re.findall(r"```cel\n(.*?)```", section, re.DOTALL)
        for line in block.splitlines()
    ]
    assert len(lines) == 12
    for expression, _, expected in lines:
        assert expected == "true"
        assert evaluate(expression, DEVICE) == SelectorResult(True), expression
    for block in re.findall(r"```cel\n(.*?)```", _section("## Cost"), re.DOTALL):
        compile_selector(block.strip())


def test_doc_lint_example(tmp_path: Path) -> None:
    from tests.helpers import LINT_BASE, lint_fleet

    cluster = LINT_BASE["cluster.yaml"].replace('"1.34.2"', '"1.33.1"')
    classes = LINT_BASE["classes.yaml"].replace(
        "match: {product: h100-sxm5-80gb}",
        "match: {product: h100-sxm5-80gb}\n"
        "cel: [\"semver('580.95.05', true).compareTo(semver('580.0.0')) >= 0\"]",
    )
    (finding,) = [
        f for f in lint_fleet(tmp_path, **{"classes.yaml": classes, "cluster.yaml": cluster})
        if f.rule == "GEN203"
    ]
    shown = _section("## The environment, version by version").split("```text\n", 1)[1]
    assert shown.split("\n", 1)[0].endswith(f"{finding.key_path}: {finding.message}")


@pytest.mark.parametrize(
    ("expression", "outcome"),
    [
        ("cel.bind(a, device.attributes, a['no-such'].size() == 0)", SelectorResult(True)),
        ("cel.bind(a, device.attributes, a['no-such'].x)",
         SelectorResult(False, "CEL runtime error: no such key: x")),
        # Bound, a device map with no domain at all (DEVICE has no capacity) is a plain empty
        # map (the judge's oracle on cel-go v0.29.2; tests/dra/cel/corpus/behaviour.yaml).
        ("cel.bind(c, device.capacity, c['no-such'].size() == 0)",
         SelectorResult(False, "CEL runtime error: no such key: no-such")),
        ("device.attributes.nosuch.size() == 0", SelectorResult(True)),
        ("['a', 'b'].all(k, device.attributes[k].size() == 0)", SelectorResult(True)),
        ("!('no-such' in device.attributes)", SelectorResult(True)),  # `in` sees real domains
        ("device.attributes.all(d, d == 'dra.example.com')", SelectorResult(True)),
    ],
)
def test_unknown_domain_is_an_empty_map_however_reached(
    expression: str, outcome: SelectorResult
) -> None:
    """Kubernetes' device maps answer an unknown domain with an empty map
    (dynamic-resource-allocation cel/compile.go@v0.36.0, newStringInterfaceMapWithDefault),
    but for a map with no domain bound by cel.bind."""
    assert evaluate(expression, DEVICE) == outcome


_TEXT = st.text(alphabet="0123456789abcdef:.%/[]()*+?{}|\\^$ -xzAZ", max_size=40)


@settings(derandomize=True, max_examples=300, deadline=None)
@given(_TEXT, _TEXT)
def test_new_libraries_never_raise(text: str, pattern: str) -> None:
    """Any string through ip/cidr/find/findAll: a result or an error value, no exception."""
    quoted_text, quoted_pattern = json.dumps(text), json.dumps(pattern)
    for expression in (
        f"isIP({quoted_text}) || ip({quoted_text}).family() > 0",
        f"isCIDR({quoted_text}) || cidr({quoted_text}).prefixLength() >= 0",
        f"cidr('::/0').containsIP({quoted_text}) || true",
        # The pattern through cel.bind: a constant (even inside dyn()) is compiled with the
        # program, and one RE2 refuses is a compile error, as in Kubernetes.
        f"cel.bind(p, {quoted_pattern}, {quoted_text}.find(p)) == '' || true",
        f"cel.bind(p, {quoted_pattern}, {quoted_text}.findAll(p, 3)).size() >= 0",
    ):
        outcome = evaluate(expression, DEVICE)
        assert outcome.error is None or outcome.error.startswith("CEL runtime error: ")
