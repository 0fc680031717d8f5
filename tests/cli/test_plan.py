"""``gen plan``: text, --json and --layouts on the example fleet and the dynamic-MIG fleet."""

from __future__ import annotations

import json

import yaml
from click.testing import CliRunner

from gen.cli import cli
from gen.nvidia.gpus import gpu_catalog
from gen.nvidia.mig import check_layout
from tests.helpers import REPO

FIXTURE = REPO / "tests" / "fixtures" / "dynamic-mig"


def test_example_fleet_plan_passes_mig_check() -> None:
    """On the example fleet's MIG demand the proposed layout is valid (gen mig check: exit 0)
    and its waste is stated."""
    runner = CliRunner()
    result = runner.invoke(cli, ["plan", "--json", "--profiles", str(REPO / "profiles")])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["schema_version"] == 1
    (pool,) = data["pools"]
    assert (pool["pool"], pool["demand"]) == ("h100-mig", {"3g.40gb": 2})
    uniform = pool["uniform"]
    assert uniform["layouts"] == [{"3g.40gb": 2}] and uniform["gpus_needed"] == 1
    assert uniform["waste"] == {"memory_slices": 0, "compute_slices": 1, "idle_instances": {}}
    args = [f"{p}={n}" for p, n in uniform["layouts"][0].items()]
    check = runner.invoke(cli, ["mig", "check", "--gpu", pool["gpu"], *args])
    assert check.exit_code == 0, check.output


def test_layouts_are_miglayout_profiles_that_load() -> None:
    """--layouts prints MIGLayout documents a fleet can commit: they load and are valid."""
    result = CliRunner().invoke(cli, ["plan", "--layouts", "--profiles", str(FIXTURE)])
    assert result.exit_code == 0, result.output
    docs = list(yaml.safe_load_all(result.output))
    assert {d["kind"] for d in docs} == {"MIGLayout"}
    gpus = gpu_catalog()
    for doc in docs:
        entries = [doc["profiles"]] if "profiles" in doc else [e["profiles"] for e in
                                                               doc["per_gpu"]]
        for counts in entries:
            assert check_layout(gpus.lookup(doc["gpu"]), counts).valid, counts


def test_text_output_names_the_waste() -> None:
    """The text form says the layout, the GPUs it needs, its waste and the dynamic count."""
    result = CliRunner().invoke(cli, ["plan", "--profiles", str(FIXTURE)])
    assert result.exit_code == 0
    assert "one layout: every GPU: 1g.10gb=2 2g.20gb=1 3g.40gb=1" in result.output
    assert "waste on those GPUs" in result.output
    assert "dynamic MIG: 8 GPU(s), fewer than the 10" in result.output
