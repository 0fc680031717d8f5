"""Kubernetes' CEL list, regex, sets, URL and lists-extension cases, run through gen.

Corpus: tests/dra/cel/corpus/validation.yaml (kubernetes/kubernetes
staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/validation_test.go @ v1.36.0,
TestValidationExpressions). Each rule reads the test object as ``self``; the corpus gives each
field as a CEL literal, substituted here. Every applicable case agrees with Kubernetes. A case
marked ``too_complex`` is a selector the 1.36 API server refuses as too complex (measured by
the judge's oracle, tools/judge/oracle.py): gen refuses it too, and its result is checked on
the program compiled without the cost limit (Kubernetes' test runs it as a CRD rule).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from gen.cli import cli
from gen.dra.cel import SelectorResult, compile_selector
from gen.dra.cel._engine import compile_ignoring_cost
from gen.dra.devices import Device
from gen.errors import CELCompileError, CELRuntimeError

CORPUS = Path(__file__).parent / "corpus" / "validation.yaml"
DATA = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = DATA["cases"]
DEVICE = Device("", "device-0", {}, {})


def _selector(case: dict[str, Any]) -> str:
    fields = DATA["self"][case["section"]]
    return re.sub(r"\bself\.(\w+)", lambda m: f"({fields[m[1]]})", case["expression"])


def _params(cases: list[dict[str, Any]]) -> list[Any]:
    return [pytest.param(c, id=c["source"]["test"]) for c in cases]


def test_corpus_counts() -> None:
    """Cases by section and kind of expectation, pinned; every source is complete."""
    assert Counter(c["section"] for c in CASES) == {
        "stdlib list functions": 80, "stdlib regex functions": 15, "URL parsing": 31,
        "listSets": 38, "ext lists version 3": 38,
    }
    assert Counter(next(iter(c["expect"])) for c in CASES) == {
        "value": 183, "runtime_error": 11, "compile_error": 8,
    }
    assert len(DATA["not_applicable"]) == 4
    assert sum(bool(c.get("too_complex")) for c in CASES) == 16
    for case in CASES + DATA["not_applicable"]:
        assert set(case["source"]) == {"repo", "path", "ref", "test"}


@pytest.mark.parametrize("case", _params(CASES))
def test_validation_case(case: dict[str, Any]) -> None:
    expression, expect = _selector(case), case["expect"]
    if "compile_error" in expect:
        with pytest.raises(CELCompileError) as info:
            compile_selector(expression)
        assert re.search(expect["compile_error"], info.value.message), info.value.message
        return
    if case.get("too_complex"):
        with pytest.raises(CELCompileError, match="too complex, exceeds cost limit"):
            compile_selector(expression)
    compiled = (compile_ignoring_cost if case.get("too_complex") else compile_selector)(
        expression)
    try:
        outcome = SelectorResult(compiled.evaluate(DEVICE))
    except CELRuntimeError as err:
        outcome = SelectorResult(False, err.message)
    if "runtime_error" in expect:
        assert outcome.error is not None and expect["runtime_error"] in outcome.error, outcome
    else:
        assert outcome == SelectorResult(True)


@pytest.mark.parametrize("case", _params(CASES[::9]))
def test_validation_case_through_the_cli(case: dict[str, Any], tmp_path: Path) -> None:
    device = tmp_path / "device.yaml"
    device.write_text("name: device-0\n")
    result = CliRunner().invoke(
        cli, ["cel", "eval", "--device", str(device), "--json", "--", _selector(case)]
    )
    data, expect = json.loads(result.stdout), case["expect"]
    if case.get("too_complex"):
        assert result.exit_code == 1 and "too complex, exceeds cost limit" in data["error"]
    elif "value" in expect:
        assert (result.exit_code, data["result"]) == (0, True), data
    elif "runtime_error" in expect:
        assert result.exit_code == 1 and expect["runtime_error"] in data["error"]
    else:
        assert result.exit_code == 1 and re.search(expect["compile_error"], data["error"])
