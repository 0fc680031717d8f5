"""``gen fit``: does a model fit a GPU or a MIG slice; the memory budget per GPU."""

from __future__ import annotations

import json

import click

from gen.cli._boundary import handle_errors
from gen.serving.fit import GIB, FitReport, FitRequest, check_fit, resolve_device
from gen.serving.model_catalog import model_catalog

__all__ = ["fit_command", "format_report"]


def _gib(value: int) -> str:
    return f"{value / GIB:10.2f} GiB"


def format_report(report: FitReport) -> str:
    """The human-readable budget table of ``gen fit``."""
    verdict = "fits" if report.fits else "does NOT fit"
    lines = [
        f"{report.model} on {report.gpus} × {report.device}: {verdict}",
        (f"  TP={report.tensor_parallel} PP={report.pipeline_parallel}  "
        f"max_model_len={report.max_model_len}  kv_cache_dtype={report.kv_cache_dtype}  "
        f"max_num_seqs={report.max_num_seqs}  max_num_batched_tokens="
        f"{report.max_num_batched_tokens}"),
        "",
        "  per GPU",
        f"    device memory          {_gib(report.device_memory)}",
        f"    budget ({report.gpu_memory_utilization:.2f})          {_gib(report.budget)}",
        f"    − weights              {_gib(report.weights)}",
        f"    − runtime (non-torch)  {_gib(report.non_torch)}",
        f"    − activation peak      {_gib(report.activation)}",
        f"    = KV cache available   {_gib(report.kv_cache_available)}",
        f"    − one full sequence    {_gib(report.kv_cache_min)}",
        f"    = headroom             {_gib(report.headroom)}",
        "",
        (f"  KV cache: {report.kv_bytes_per_token:,} bytes/token/GPU, "
        f"{report.kv_cache_tokens:,} tokens, "
        f"{report.max_concurrent_sequences} concurrent full-length sequences"),
        f"  largest max_model_len that fits: {report.max_model_len_fit}",
    ]
    lines += [f"  error: {e}" for e in report.errors]
    lines += [f"  warning: {w}" for w in report.warnings]
    return "\n".join(lines)


@click.command("fit")
@click.option("--model", "model_name", required=True, help="Hugging Face id of a catalog model.")
@click.option("--gpu", required=True, help="GPU: catalog id, PCI device id or product name.")
@click.option("--mig", "mig_profile", default=None, help="MIG profile of that GPU, e.g. 3g.40gb.")
@click.option("--gpus", type=click.IntRange(min=1), default=1, show_default=True,
              help="GPUs in the claim.")
@click.option("--tp", type=click.IntRange(min=1), default=None,
              help="Tensor-parallel size [default: --gpus].")
@click.option("--pp", type=click.IntRange(min=1), default=1, show_default=True,
              help="Pipeline-parallel size.")
@click.option("--max-model-len", type=click.IntRange(min=1), default=None,
              help="Context length [default: the model's maximum].")
@click.option("--gpu-memory-utilization", type=click.FloatRange(0, 1, min_open=True),
              default=0.90, show_default=True, help="vLLM's share of device memory.")
@click.option("--kv-cache-dtype", type=click.Choice(["auto", "fp8"]), default="auto",
              show_default=True, help="KV cache element type.")
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON report.")
@handle_errors
def fit_command(model_name: str, gpu: str, mig_profile: str | None,
                gpus: int, tp: int | None, pp: int, max_model_len: int | None,
                gpu_memory_utilization: float, kv_cache_dtype: str, as_json: bool) -> int:
    """Does a model fit a GPU or MIG slice under vLLM? Exit 0 if it fits, 1 if not."""
    report = check_fit(FitRequest(
        model=model_catalog().lookup(model_name), device=resolve_device(gpu, mig_profile),
        gpus=gpus, tensor_parallel=tp, pipeline_parallel=pp, max_model_len=max_model_len,
        gpu_memory_utilization=gpu_memory_utilization,
        kv_cache_dtype="fp8" if kv_cache_dtype == "fp8" else "auto",
    ))
    click.echo(json.dumps(report.to_json(), indent=2) if as_json else format_report(report))
    return 0 if report.fits else 1
