"""Tests for the `gen fit` command."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gen.cli import cli
from gen.nvidia.gpus import gpu_catalog
from gen.serving.model_catalog import model_catalog


@pytest.fixture
def runner() -> CliRunner:
    """A click test runner."""
    return CliRunner()


def test_fits_exits_0_with_json(runner: CliRunner) -> None:
    """A model that fits prints {"fits": true, ...} and exits 0."""
    result = runner.invoke(cli, ["fit", "--model", "meta-llama/Llama-3.1-8B-Instruct",
                                 "--gpu", "NVIDIA H100 80GB HBM3", "--json"],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["fits"] is True
    assert data["errors"] == []
    assert data["per_gpu_bytes"]["weights"] > 0


def test_does_not_fit_exits_1_with_errors(runner: CliRunner) -> None:
    """A model that does not fit prints {"fits": false, "errors": [...]} and exits 1."""
    result = runner.invoke(cli, ["fit", "--model", "meta-llama/Llama-3.1-70B-Instruct",
                                 "--gpu", "h100-sxm5-80gb", "--json"])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["fits"] is False
    assert data["errors"]


def test_tp_and_mig_options(runner: CliRunner) -> None:
    """--gpus/--tp split the model; --mig sizes against the slice."""
    tp4 = runner.invoke(cli, ["fit", "--model", "meta-llama/Llama-3.1-70B-Instruct",
                              "--gpu", "0x2330", "--gpus", "4", "--tp", "4", "--json"])
    assert tp4.exit_code == 0, tp4.output
    assert json.loads(tp4.stdout)["parallelism"]["tensor_parallel"] == 4
    mig = runner.invoke(cli, ["fit", "--model", "meta-llama/Llama-3.1-8B-Instruct",
                              "--gpu", "h100-sxm5-80gb", "--mig", "3g.40gb",
                              "--max-model-len", "32768", "--kv-cache-dtype", "fp8",
                              "--gpu-memory-utilization", "0.85", "--json"])
    assert mig.exit_code == 0, mig.output
    data = json.loads(mig.stdout)
    assert data["device"]["is_mig"] is True
    assert data["settings"] == {
        "max_model_len": 32768, "gpu_memory_utilization": 0.85, "kv_cache_dtype": "fp8",
        "max_num_seqs": 256, "max_num_batched_tokens": 2048,
    }


def test_text_output_shows_the_budget_table(runner: CliRunner) -> None:
    """Without --json the command prints the per-GPU budget table."""
    result = runner.invoke(cli, ["fit", "--model", "Qwen/Qwen3-8B", "--gpu", "l4"],
                           catch_exceptions=False)
    assert result.exit_code in (0, 1)
    for label in ("budget (0.90)", "− weights", "= KV cache available", "= headroom",
                  "largest max_model_len that fits"):
        assert label in result.stdout


def test_unknown_model_is_a_lookup_error(runner: CliRunner) -> None:
    """An unknown model exits 1 with the nearest names on stderr and no traceback."""
    result = runner.invoke(cli, ["fit", "--model", "meta-llama/Llama-3.1-8B",
                                 "--gpu", "h100-sxm5-80gb"])
    assert result.exit_code == 1
    assert "unknown model" in result.stderr
    assert "meta-llama/Llama-3.1-8B-Instruct" in result.stderr
    assert "Traceback" not in result.output


def test_unknown_mig_profile_is_a_lookup_error(runner: CliRunner) -> None:
    """A MIG profile the GPU lacks exits 1 and lists the GPU's profiles."""
    result = runner.invoke(cli, ["fit", "--model", "Qwen/Qwen3-8B", "--gpu", "h100-sxm5-80gb",
                                 "--mig", "3g.20gb"])
    assert result.exit_code == 1
    assert "3g.40gb" in result.stderr


@pytest.mark.parametrize("args", [["--tp", "0"], ["--gpu-memory-utilization", "1.5"],
                                  ["--kv-cache-dtype", "int4"]])
def test_bad_option_values_are_usage_errors(runner: CliRunner, args: list[str]) -> None:
    """Out-of-range option values exit 2 (usage)."""
    result = runner.invoke(cli, ["fit", "--model", "Qwen/Qwen3-8B", "--gpu", "l4", *args])
    assert result.exit_code == 2


@pytest.mark.slow  # the whole catalog: every model on every GPU and MIG profile
def test_every_model_on_every_device_gets_a_decision(runner: CliRunner) -> None:
    """Every catalog model on every catalog GPU and MIG profile yields a decision, no crash."""
    models = [m.id for m in model_catalog().all()]
    devices: list[list[str]] = []
    for gpu in gpu_catalog().all():
        devices.append(["--gpu", gpu.id])
        devices.extend(["--gpu", gpu.id, "--mig", name] for name in gpu.mig_profile_names)
    assert len(models) >= 20 and len(devices) > 30
    for model in models:
        for device in devices:
            result = runner.invoke(cli, ["fit", "--model", model, *device, "--json"])
            assert result.exit_code in (0, 1), (model, device, result.output)
            data = json.loads(result.stdout)
            assert data["fits"] is (result.exit_code == 0)
            assert data["fits"] or data["errors"]
