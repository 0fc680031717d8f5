"""gen's vLLM memory fit against real start-up logs (tests/serving/data/vllm_startup_logs.yaml).

Every entry is predicted with :func:`gen.serving.fit.check_fit` and must stay within tolerance:
weights ±5 %, the KV pool ±15 % (±0.75 GiB when the pool is small enough that 15 % is less
than the profiler's own run-to-run noise), KV tokens ±15 % where the source gives them, and the
fits / does-not-fit verdict exact. A few entries also go through ``gen fit --json``.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from gen.cli import cli
from gen.serving.fit import FitDevice, FitReport, FitRequest, check_fit, resolve_device
from gen.serving.memory import GIB
from gen.serving.memory_profiles import PINNED_VLLM_VERSION, parse_vllm_version
from gen.serving.model_catalog import LLMSpec, model_catalog

CORPUS = Path(__file__).parent / "data" / "vllm_startup_logs.yaml"
ENTRIES: list[dict[str, Any]] = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))["entries"]

WEIGHTS_TOLERANCE = 0.05
KV_TOLERANCE = 0.15
KV_FLOOR_GIB = 0.75


def _model(entry: dict[str, Any]) -> LLMSpec:
    if "spec" in entry:
        return LLMSpec.from_mapping(entry["spec"])
    return model_catalog().lookup(entry["model"])


def _device(entry: dict[str, Any]) -> FitDevice:
    device = resolve_device(entry["gpu"])
    if "cuda_total_mib" in entry:  # the total this log prints (e.g. WSL2 shows the whole card)
        return replace(device, cuda_total_mib=entry["cuda_total_mib"], cuda_total_logged=True)
    return device


def _request(entry: dict[str, Any]) -> FitRequest:
    return FitRequest(
        model=_model(entry),
        device=_device(entry),
        gpus=entry["gpus"],
        tensor_parallel=entry["tensor_parallel"],
        pipeline_parallel=entry.get("pipeline_parallel", 1),
        max_model_len=entry["max_model_len"],
        gpu_memory_utilization=entry["gpu_memory_utilization"],
        max_num_seqs=entry["max_num_seqs"],
        max_num_batched_tokens=entry["max_num_batched_tokens"],
        estimate_cudagraphs=entry.get("estimate_cudagraphs"),
        flashinfer_sampler=entry.get("flashinfer_sampler"),
        mxfp4_kernel=entry.get("mxfp4_kernel"),
        vllm_version=parse_vllm_version(entry["vllm"]),
    )


def _ids(entry: dict[str, Any]) -> str:
    return str(entry["name"])


def test_the_corpus_is_large_and_sourced() -> None:
    """At least 20 start-ups, each with a public address, a vLLM version and quoted lines."""
    assert len(ENTRIES) >= 20
    assert len({e["name"] for e in ENTRIES}) == len(ENTRIES)
    for entry in ENTRIES:
        assert entry["url"].startswith("https://"), entry["name"]
        assert entry["vllm"] and entry["quoted"], entry["name"]
        assert isinstance(entry["fits"], bool), entry["name"]


@pytest.mark.parametrize("entry", ENTRIES, ids=_ids)
def test_prediction_matches_the_log(entry: dict[str, Any]) -> None:
    """Weights, KV pool and tokens within tolerance; the verdict exactly vLLM's."""
    report = check_fit(_request(entry))
    logged = entry["logged"]
    assert report.fits is entry["fits"], report.errors
    if "weights_gib" in logged:
        weights = report.weights / GIB
        assert weights == pytest.approx(logged["weights_gib"], rel=WEIGHTS_TOLERANCE)
    if "kv_cache_gib" in logged:
        kv, want = report.kv_cache_available / GIB, logged["kv_cache_gib"]
        assert abs(kv - want) <= max(KV_TOLERANCE * abs(want), KV_FLOOR_GIB), (kv, want)
    if "kv_tokens" in logged:
        assert report.kv_cache_tokens == pytest.approx(logged["kv_tokens"], rel=KV_TOLERANCE)


def _cli_args(entry: dict[str, Any]) -> list[str]:
    args = ["fit", "--model", entry["model"], "--gpu", entry["gpu"], "--json",
            "--gpus", str(entry["gpus"]), "--tp", str(entry["tensor_parallel"]),
            "--max-model-len", str(entry["max_model_len"]),
            "--gpu-memory-utilization", str(entry["gpu_memory_utilization"]),
            "--max-num-seqs", str(entry["max_num_seqs"]),
            "--max-num-batched-tokens", str(entry["max_num_batched_tokens"])]
    return args


@pytest.mark.parametrize("name", ["llmd-llama-3.1-8b-h100", "llmd-qwen3-32b-h100-32k",
                                  "vllama-mistral-7b-rtx4090"])
def test_the_cli_reports_the_library_figures(name: str) -> None:
    """`gen fit --json` gives what check_fit gives for the pinned vLLM and its defaults."""
    entry = next(e for e in ENTRIES if e["name"] == name)
    result = CliRunner().invoke(cli, _cli_args(entry))
    data = json.loads(result.stdout)
    pinned = replace(_request(entry), vllm_version=PINNED_VLLM_VERSION,
                     estimate_cudagraphs=None, flashinfer_sampler=None)
    report: FitReport = check_fit(pinned)
    assert result.exit_code == (0 if report.fits else 1), result.output
    per_gpu = data["per_gpu_bytes"]
    assert per_gpu["weights"] == report.weights
    assert per_gpu["activation"] == report.activation
    assert per_gpu["cuda_graphs"] == report.cuda_graphs
    assert per_gpu["kv_cache_available"] == report.kv_cache_available
    assert data["fits"] is report.fits
