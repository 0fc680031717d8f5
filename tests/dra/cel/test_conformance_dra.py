"""The DRA CEL compiler's own tests, run through gen (tests/dra/cel/corpus/dra.yaml).

Every applicable ``TestCEL`` scenario of kubernetes/dynamic-resource-allocation
``cel/compile_test.go`` @ v0.36.0 goes through :func:`gen.dra.cel.compile_selector` and the
evaluator on the scenario's device, and a sample through ``gen cel eval --device``. gen's
cost estimate is checked against the upstream estimate where the scenario gives one. A
compile error is checked in the environment of that release (1.36): a function that a later
Kubernetes adds (``includes``, new objects from 1.38) is undeclared there, and gen names the
same function with the version that has it.
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from gen.cli import cli
from gen.dra.cel import MAX_COST, compile_selector, evaluate
from gen.dra.devices import AttrValue, Device
from gen.errors import CELCompileError
from gen.k8s.quantity import parse_quantity
from gen.k8s.semver import parse_version

CORPUS = Path(__file__).parent / "corpus" / "dra.yaml"
DATA = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))
CASES: list[dict[str, Any]] = DATA["cases"]
CORPUS_MINOR = 36
"""The Kubernetes minor of the corpus' release (compile_test.go @ v0.36.0)."""


def _device(case: dict[str, Any]) -> Device:
    attributes: dict[str, AttrValue] = {}
    for name, typed in case.get("attributes", {}).items():
        ((kind, value),) = typed.items()
        attributes[name] = parse_version(value) if kind == "version" else value
    capacity: dict[str, Decimal] = {
        name: parse_quantity(text) for name, text in case.get("capacity", {}).items()
    }
    return Device(case.get("driver", ""), "device-0", attributes, capacity,
                  bool(case.get("allow_multiple_allocations", False)))


def _params() -> list[Any]:
    return [pytest.param(c, id=c["source"]["test"]) for c in CASES]


def test_corpus_counts() -> None:
    """Every upstream scenario is either a case or listed as not applicable, with its source."""
    assert (len(CASES), len(DATA["not_applicable"])) == (38, 31)
    for entry in CASES + DATA["not_applicable"]:
        assert entry["source"]["path"] == "cel/compile_test.go"
        assert entry["source"]["ref"] == "v0.36.0"


@pytest.mark.parametrize("case", _params())
def test_dra_compiler_case(case: dict[str, Any]) -> None:
    expression = case["expression"]
    gate = case.get("consumable_capacity")
    if "compile_error" in case:
        with pytest.raises(CELCompileError) as info:
            compile_selector(expression, CORPUS_MINOR, gate)
        undeclared = re.fullmatch(r"undeclared reference to '(\w+)'", case["compile_error"])
        if undeclared and "is available to new objects from" in info.value.message:
            assert f"'{undeclared[1]}' (" in info.value.message
        else:
            assert case["compile_error"] in info.value.message
        return
    if case.get("upstream_cost", 0) > MAX_COST:
        # Validation refuses such a selector on create; gen refuses it when compiling.
        with pytest.raises(CELCompileError, match="too complex, exceeds cost limit"):
            compile_selector(expression)
        return
    outcome = evaluate(expression, _device(case), CORPUS_MINOR, gate)
    if "runtime_error" in case:
        assert outcome.error is not None and case["runtime_error"] in outcome.error
    else:
        assert (outcome.matched, outcome.error) == (case["match"], None)


@pytest.mark.parametrize("case", [c for c in _params() if 0 < c.values[0].get(
    "upstream_cost", 0) <= MAX_COST])
def test_dra_compiler_cost(case: dict[str, Any]) -> None:
    """gen's worst-case estimate is of the same order as Kubernetes': never below it (or a
    selector the API server refuses as too complex could pass lint), at most 3× above it."""
    upstream = case["upstream_cost"]
    estimate = compile_selector(case["expression"]).cost
    assert upstream <= estimate <= 3 * upstream, (estimate, upstream)


_CLI_SAMPLE = [c for c in CASES if c.get("consumable_capacity") is not False][::4]


@pytest.mark.parametrize("case", _CLI_SAMPLE, ids=lambda c: c["source"]["test"])
def test_dra_compiler_case_through_the_cli(case: dict[str, Any], tmp_path: Path) -> None:
    """A sample through ``gen cel eval --device --json``, with the device as a ResourceSlice
    entry (the CLI compiles with the gates' defaults: a scenario with DRAConsumableCapacity
    off is not in the sample)."""
    device = tmp_path / "device.yaml"
    entry = {
        "name": "device-0",
        "attributes": {
            name: (typed if "version" not in typed else {"version": typed["version"]})
            for name, typed in case.get("attributes", {}).items()
        },
        "capacity": {name: {"value": v} for name, v in case.get("capacity", {}).items()},
    }
    if "allow_multiple_allocations" in case:
        entry["allowMultipleAllocations"] = case["allow_multiple_allocations"]
    device.write_text(yaml.safe_dump(entry))
    args = ["cel", "eval", "--device", str(device), "--json", "--driver", case.get("driver", "")]
    result = CliRunner().invoke(cli, [*args, "--", case["expression"]])
    data = json.loads(result.stdout)
    if "compile_error" in case or case.get("upstream_cost", 0) > MAX_COST:
        assert (result.exit_code, data["compiled"]) == (1, False)
    elif "runtime_error" in case:
        assert result.exit_code == 1 and case["runtime_error"] in data["error"]
    else:
        assert (result.exit_code, data["result"]) == (0, case["match"])
