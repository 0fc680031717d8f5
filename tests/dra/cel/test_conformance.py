"""Kubernetes' own quantity tests, run through gen (tests/dra/cel/corpus/quantity.yaml).

apimachinery cases go through :mod:`gen.k8s.quantity`; the CEL library's ``TestQuantity``
cases through :func:`gen.dra.cel.compile_selector` and the evaluator, and a sample of them
through ``gen cel eval``. Every case must agree (docs/cel.md lists the deviations: none).
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from gen.cli import cli
from gen.dra.cel import compile_selector, evaluate
from gen.dra.devices import Device
from gen.errors import CELCompileError, QuantityError
from gen.k8s.quantity import (
    Quantity,
    QuantityFormat,
    add_amounts,
    amount_as_int64,
    compare_quantities,
    format_quantity,
)

CORPUS = Path(__file__).parent / "corpus" / "quantity.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))["cases"]
DEVICE = Device("gpu-0", "gpu.nvidia.com", attributes={}, capacity={})


def _id(case: dict[str, Any]) -> str:
    return f"{case['source']['test']}:{case['kind']}:{case['input']!s}"


def _by_kind(*kinds: str) -> list[Any]:
    return [pytest.param(c, id=_id(c)) for c in CASES if c["kind"] in kinds]


def test_corpus_counts() -> None:
    """The corpus holds every transcribed case, each with its source."""
    assert len(CASES) == 514
    for case in CASES:
        assert set(case["source"]) == {"repo", "path", "ref", "test"}


@pytest.mark.parametrize("case", _by_kind("parse"))
def test_apimachinery_parse(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(QuantityError, match=case["error"] or None):
            Quantity.parse(case["input"])
        return
    q = Quantity.parse(case["input"])
    assert q.value == Decimal(case["value"])
    assert q.format.value == case["format"]


@pytest.mark.parametrize("case", _by_kind("compare"))
def test_apimachinery_compare(case: dict[str, Any]) -> None:
    x, y = (Quantity.parse(t) for t in case["input"])
    assert compare_quantities(x.value, y.value) == case["value"]


@pytest.mark.parametrize("case", _by_kind("canonical"))
def test_apimachinery_canonical(case: dict[str, Any]) -> None:
    assert str(Quantity.parse(case["input"])) == case["value"]


@pytest.mark.parametrize("case", _by_kind("format"))
def test_apimachinery_format(case: dict[str, Any]) -> None:
    value = Decimal(case["input"]["value"])
    assert format_quantity(value, QuantityFormat(case["input"]["format"])) == case["value"]


def _as_selector(case: dict[str, Any]) -> str:
    """A bool selector that holds when the expression yields the expected value."""
    value = case["value"]
    if isinstance(value, bool):
        return case["input"] if value else f"!({case['input']})"
    if isinstance(value, float):
        return f"({case['input']}) == {value!r}"
    return f"({case['input']}) == {value}"


@pytest.mark.parametrize("case", _by_kind("as_int64"))
def test_apimachinery_as_int64(case: dict[str, Any]) -> None:
    value, scale = case["input"]
    assert amount_as_int64((value, scale)) == case["value"]


@pytest.mark.parametrize("case", _by_kind("amount_add"))
def test_apimachinery_amount_add(case: dict[str, Any]) -> None:
    left, right = (tuple(amount) for amount in case["input"])
    expected = None if case["value"] is None else tuple(case["value"])
    assert add_amounts(left, right) == expected
    assert add_amounts(right, left) == expected


@pytest.mark.parametrize("case", _by_kind("cel"))
def test_cel_library(case: dict[str, Any]) -> None:
    if "compile_error" in case:
        with pytest.raises(CELCompileError, match=case["compile_error"]):
            compile_selector(case["input"])
        return
    if "runtime_error" in case:
        outcome = evaluate(f"{case['input']} == {case['input']}", DEVICE)
        assert outcome.error is not None and case["runtime_error"] in outcome.error
        return
    assert evaluate(_as_selector(case), DEVICE).matched


@pytest.mark.parametrize("case", _by_kind("cel")[::6])
def test_cel_library_through_the_cli(case: dict[str, Any], tmp_path: Path) -> None:
    """A sample of the CEL cases through `gen cel eval --json`."""
    entry = case
    device = tmp_path / "d.yaml"
    device.write_text("name: gpu-0\n")
    expression = entry["input"] if "value" not in entry else _as_selector(entry)
    if "runtime_error" in entry:
        expression = f"{entry['input']} == {entry['input']}"
    result = CliRunner().invoke(
        cli, ["cel", "eval", "--device", str(device), "--json", "--", expression]
    )
    data = json.loads(result.stdout)
    if "value" in entry:
        assert (result.exit_code, data["result"]) == (0, True), data
    else:
        assert result.exit_code == 1
        expected = entry.get("compile_error") or entry["runtime_error"]
        assert expected.split(" applied")[0] in data["error"]


DOC = Path(__file__).resolve().parents[3] / "docs" / "cel.md"


def test_docs_cel_examples_compile() -> None:
    """Every ```cel block of docs/cel.md's Quantity section compiles; its table's claims hold."""
    import re

    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## Quantity\n", 1)[1].split("\n## ", 1)[0]  # one expression a block
    blocks = re.findall(r"```cel\n(.*?)```", section, re.DOTALL)
    assert blocks
    for block in blocks:
        compile_selector(block.strip())
    for claim in [
        "quantity('1.5Gi') == quantity('1536Mi')",
        "quantity('0.0000000001') == quantity('1n')",
        "quantity('3.001n') == quantity('4n')",
        "quantity('9Ei') == quantity('9223372036854775807')",
        "quantity('.') == quantity('0') && quantity('-.') == quantity('0')",
        "quantity('+') == quantity('0') && quantity('-') == quantity('0')",
        "!isQuantity('80GB') && !isQuantity('10Mo') && !isQuantity('10Mm')",
        "sign(quantity('-5')) == -1",
    ]:
        assert evaluate(claim, DEVICE).matched, claim
    with pytest.raises(CELCompileError):
        compile_selector("quantity('5').sign() == 1")
    with pytest.raises(CELCompileError):
        compile_selector("quantity('1') < 2")
    assert evaluate("quantity('1x') == quantity('1')", DEVICE).error is not None
    assert str(Quantity.parse("1000E")) == "1e21"
