"""Tests for `gen catalog`: the GPU and model tables, their filters and --json."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gen.cli import cli
from gen.serving.model_catalog import model_catalog


@pytest.fixture
def runner() -> CliRunner:
    """A click test runner."""
    return CliRunner()


def test_models_json_lists_every_model(runner: CliRunner) -> None:
    """--json without filters is the whole catalog, with the MoE and MLA fields."""
    result = runner.invoke(cli, ["catalog", "models", "--json"], catch_exceptions=False)
    assert result.exit_code == 0
    rows = json.loads(result.stdout)
    assert [r["id"] for r in rows] == [s.id for s in model_catalog().all()]
    deepseek = next(r for r in rows if r["id"] == "deepseek-ai/DeepSeek-V3")
    assert (deepseek["kv_lora_rank"], deepseek["shared_experts"]) == (512, 1)


def test_family_filter_matches_organisation_name_or_architecture(runner: CliRunner) -> None:
    """--family qwen keeps Qwen models and the Qwen-based distills, nothing else."""
    result = runner.invoke(cli, ["catalog", "models", "--family", "QWEN", "--json"],
                           catch_exceptions=False)
    ids = [r["id"] for r in json.loads(result.stdout)]
    assert "Qwen/Qwen3-30B-A3B" in ids
    assert "deepseek-ai/DeepSeek-R1-Distill-Qwen-7B" in ids
    assert "meta-llama/Llama-3.1-8B-Instruct" not in ids
    assert all("qwen" in i.lower() or "Qwen" in r["architecture"]
               for i, r in ((r["id"], r) for r in json.loads(result.stdout)))


def test_size_filters_take_suffixes(runner: CliRunner) -> None:
    """--min-params/--max-params accept 7B, 500M, 1T and bound the total parameter count."""
    result = runner.invoke(cli, ["catalog", "models", "--min-params", "300B",
                                 "--max-params", "1.1T", "--json"], catch_exceptions=False)
    rows = json.loads(result.stdout)
    assert rows
    assert all(300e9 <= r["parameters"] <= 1.1e12 for r in rows)
    assert "moonshotai/Kimi-K2-Instruct" in [r["id"] for r in rows]


def test_table_shows_attention_and_experts(runner: CliRunner) -> None:
    """The text table marks MLA models and lists active/routed(+shared) experts."""
    result = runner.invoke(cli, ["catalog", "models", "--family", "deepseek-v3"],
                           catch_exceptions=False)
    header, row = result.stdout.splitlines()
    assert header.split()[:7] == ["MODEL", "PARAMS", "DTYPE", "LAYERS", "HEADS/KV", "ATTN",
                                  "EXPERTS"]
    assert row.split()[:7] == ["deepseek-ai/DeepSeek-V3", "671.0B", "fp8", "61", "128/128",
                               "mla", "8/256+1"]


def test_no_match_says_so_on_stderr(runner: CliRunner) -> None:
    """Filters that match nothing print a note on stderr and exit 0."""
    result = runner.invoke(cli, ["catalog", "models", "--family", "no-such-family"])
    assert result.exit_code == 0
    assert result.stdout == ""
    assert "no catalog model matches" in result.stderr


def test_bad_size_is_a_usage_error(runner: CliRunner) -> None:
    """A size that is not a count exits 2 with click's message."""
    result = runner.invoke(cli, ["catalog", "models", "--min-params", "lots"])
    assert result.exit_code == 2
    assert "'lots' is not a parameter count" in result.stderr


def test_gpus_include_the_ampere_workstation_cards(runner: CliRunner) -> None:
    """RTX 3090, A5000 and A6000 are in the GPU catalog with their PCI ids."""
    result = runner.invoke(cli, ["catalog", "gpus", "--json"], catch_exceptions=False)
    rows = {r["id"]: r for r in json.loads(result.stdout)}
    assert rows["rtx-3090"]["pci_device_ids"] == ["0x2204"]
    assert rows["rtx-a5000"]["memory_mib"] == 24564
    assert rows["rtx-a6000"]["product_name"] == "NVIDIA RTX A6000"


def test_gpus_json_gives_the_total_vllm_budgets_from(runner: CliRunner) -> None:
    """--json carries the CUDA-visible total gen fit uses: logged where a vLLM log gave it,
    else NVML's memory less the documented reserve."""
    from gen.nvidia.gpus import CUDA_RESERVE_MIB

    result = runner.invoke(cli, ["catalog", "gpus", "--json"], catch_exceptions=False)
    rows = {r["id"]: r for r in json.loads(result.stdout)}
    h100 = rows["h100-sxm5-80gb"]
    assert h100["cuda_total_logged"] is True
    assert h100["cuda_visible_mib"] < h100["memory_mib"]
    a6000 = rows["rtx-a6000"]
    assert a6000["cuda_total_logged"] is False
    assert a6000["cuda_visible_mib"] == a6000["memory_mib"] - CUDA_RESERVE_MIB


def test_gpus_table_lists_the_mig_profile_names_it_counts(runner: CliRunner) -> None:
    """Below the table, each MIG-capable GPU appears once with the profile names its MIG
    column counts; GPUs without MIG appear in no profile line."""
    from gen.nvidia.gpus import gpu_catalog

    result = runner.invoke(cli, ["catalog", "gpus"], catch_exceptions=False)
    assert result.exit_code == 0
    table, _, profiles = result.stdout.partition("\nMIG PROFILES")
    counted = {line.split()[0]: line.split()[-1] for line in table.splitlines()[1:] if line}
    lines = profiles.splitlines()[1:]
    named: dict[str, list[str]] = {}
    for ids_line, names_line in zip(lines[::2], lines[1::2], strict=True):
        for gpu_id in ids_line.strip().rstrip(":").split(", "):
            assert gpu_id not in named
            named[gpu_id] = names_line.split()
    catalog = {g.id: g for g in gpu_catalog().all()}
    assert set(named) == {i for i, g in catalog.items() if g.mig_profiles}
    for gpu_id, names in named.items():
        assert names == [p.name for p in catalog[gpu_id].mig_profiles]
        assert counted[gpu_id] == str(len(names))
    assert "3g.71gb" in named["h200-sxm"]
