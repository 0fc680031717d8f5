"""Kubernetes' CEL cost tests, run through gen (tests/dra/cel/corpus/cost.yaml).

Each case compiles in gen as the selector ``(expression) == (expression)`` (a DRA selector must
be a bool) unless gen documents otherwise, or unless the case is marked ``too_complex``: the
1.36 API server refuses that selector as too complex (DRA's cost estimator, unlike the cost
test's, knows no size for literal list elements or for the strings a URL or a format returns;
measured by the judge's oracle, tools/judge/oracle.py), and so does gen. gen's static estimate
of the expression itself, without the checker's types (the cost test's view), is never below
Kubernetes' worst case there and at most three times it.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from gen.dra.cel import compile_selector
from gen.dra.cel._ast import decode_parsed_expr
from gen.dra.cel._cost import estimate_cost
from gen.dra.cel._library import checker_env
from gen.errors import CELCompileError

CORPUS = Path(__file__).parent / "corpus" / "cost.yaml"
DATA = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = DATA["cases"]


def _test(case: dict[str, Any]) -> str:
    return str(case["source"]["test"]).split("/")[0]


def test_corpus_counts() -> None:
    """Cases by upstream test, pinned, and how many gen refuses (and why)."""
    assert Counter(map(_test, CASES)) == {
        "TestSetsCost": 42, "TestListsCost": 28, "TestStringLibrary": 20, "TestIndexOfCost": 18,
        "TestQuantityCost": 17, "TestTwoVariableComprehensionCost": 12, "TestSemverCost": 10,
        "TestURLsCost": 8, "TestNameFormatCost": 5,
    }
    assert not [c for c in CASES if "known_difference" in c]
    assert sum("base_environment" in c for c in CASES) == 19
    assert sum(bool(c.get("too_complex")) for c in CASES) == 22
    assert len(DATA["not_applicable"]) == 10


def _gen_cost(expression: str) -> int:
    return estimate_cost(
        decode_parsed_expr(checker_env().compile(expression, disable_check=True).serialize()).root
    )


@pytest.mark.parametrize("case", [
    pytest.param(c, id=c["source"]["test"]) for c in CASES if "gen" not in c
])
def test_cost_case(case: dict[str, Any]) -> None:
    expression = case["expression"]
    if case.get("too_complex"):
        with pytest.raises(CELCompileError, match="too complex, exceeds cost limit"):
            compile_selector(f"({expression}) == ({expression})")
    else:
        compile_selector(f"({expression}) == ({expression})")
    upstream = case["upstream_cost"]["max"]
    assert upstream <= _gen_cost(expression) <= 3 * upstream


@pytest.mark.parametrize("case", [
    pytest.param(c, id=c["source"]["test"]) for c in CASES if "gen" in c
])
def test_cost_case_gen_refuses(case: dict[str, Any]) -> None:
    """The API server's base environment refuses it too, or gen documents the difference."""
    expression = case["expression"]
    with pytest.raises(CELCompileError) as info:
        compile_selector(f"({expression}) == ({expression})")
    assert re.search(case["gen"]["compile_error"], info.value.message), info.value.message
