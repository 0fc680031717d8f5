"""``gen fit``: does a model fit a GPU or a MIG slice; the memory budget per GPU, term by term."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gen.cli._boundary import handle_errors
from gen.cli._options import profiles_option
from gen.errors import VersionError
from gen.fleet.parallelism import GroupShape, pod_layout
from gen.serving.assumptions import Assumption, assumed_settings
from gen.serving.fit import FitReport, FitRequest, check_fit, resolve_device
from gen.serving.memory import GIB, KV_CACHE_DTYPES, QUANTIZATIONS
from gen.serving.memory_profiles import PINNED_VLLM_VERSION, format_version, parse_vllm_version
from gen.serving.model_catalog import model_catalog

if TYPE_CHECKING:
    from gen.fleet.plan import Plan

__all__ = ["fit_command", "format_assumed", "format_report", "service_reports"]


def _gib(value: int) -> str:
    return f"{value / GIB:10.2f} GiB"


def format_report(report: FitReport) -> str:
    """The human-readable budget table of ``gen fit``, one line per term with its source."""
    verdict = "fits" if report.fits else "does NOT fit"
    settings = (f"  vLLM {format_version(report.vllm_version)}  TP={report.tensor_parallel} "
                f"PP={report.pipeline_parallel}  "
                f"max_model_len={report.max_model_len}  kv_cache_dtype={report.kv_cache_dtype}  "
                f"max_num_seqs={report.max_num_seqs}  max_num_batched_tokens="
                f"{report.max_num_batched_tokens}")
    if report.quantization:
        settings += f"  quantization={report.quantization}"
    if report.enforce_eager:
        settings += "  enforce_eager"
    sources = {t.name: t.source for t in report.terms}
    rows = [
        ("device memory (NVML)", report.device_memory, ""),
        ("CUDA-visible total", report.cuda_total, sources.get("cuda_total", "")),
        (f"budget ({report.gpu_memory_utilization:.2f})", report.budget,
         sources.get("budget", "")),
        ("− weights", report.weights, sources.get("weights", "")),
        ("− activation peak", report.activation, sources.get("activation", "")),
        ("− runtime (non-torch)", report.non_torch, sources.get("non_torch", "")),
        ("− CUDA graphs", report.cuda_graphs, sources.get("cuda_graphs", "")),
        ("= KV cache available", report.kv_cache_available,
         sources.get("kv_cache_available", "")),
        ("− one full sequence", report.kv_cache_min, sources.get("kv_cache_min", "")),
        ("= headroom", report.headroom, ""),
    ]
    lines = [f"{report.model} on {report.gpus} × {report.device}: {verdict}", settings, "",
             "  per GPU"]
    lines += [f"    {label:<23}{_gib(value)}" + (f"   {source}" if source else "")
              for label, value, source in rows]
    lines += [
        "",
        (f"  KV cache: {report.kv_bytes_per_token:,} bytes/token/GPU, "
         f"{report.kv_cache_tokens:,} tokens, "
         f"{report.max_concurrent_sequences} concurrent full-length sequences"),
        f"  largest max_model_len that fits: {report.max_model_len_fit}",
    ]
    lines += [f"  error: {e}" for e in report.errors]
    lines += [f"  warning: {w}" for w in report.warnings]
    return "\n".join(lines)


def service_reports(plan: Plan, service: str) -> list[dict[str, Any]]:
    """What lint decided for ``service`` in each cluster of ``plan``: the resolved
    max_model_len and the fit report of every device the service can get there.

    Raises:
        UnresolvedReferenceError: no in-cluster vLLM service of that name in the plan.
    """
    from gen.errors import UnresolvedReferenceError
    from gen.fleet.parallelism import service_shape
    from gen.fleet.roles import units
    from gen.fleet.sizing import service_fit

    out: list[dict[str, Any]] = []
    names: set[str] = set()
    other: str | None = None
    for cluster in plan.clusters:
        for svc in cluster.services:
            names.add(svc.service.name)
            if svc.service.name != service:
                continue
            if svc.service.engine != "vllm" or svc.service.gpu is None or svc.model is None:
                other = (f"service {service!r} is not an in-cluster vLLM service with a catalog "
                         f"model (engine {svc.service.engine}); see `gen explain {service}`")
                continue
            # A disaggregated service: each role with its own parallelism and devices.
            for unit in units(cluster, svc):
                length, reports = service_fit(unit.plan)
                shape = service_shape(unit.plan)
                out.append({"cluster": cluster.name, "role": unit.role, "max_model_len": length,
                            "reports": [(cand.pool.name, report) for cand, report in reports],
                            "group": shape if shape is not None and shape.multi_node else None})
    if not out:
        raise UnresolvedReferenceError(other or (
            f"unknown service {service!r} in the selected clusters; known: "
            f"{', '.join(sorted(names)) or 'none defined'}"
        ))
    return out


def _service_output(plan: Plan, service: str, as_json: bool) -> tuple[str, bool]:
    found = service_reports(plan, service)
    # A cluster with no device for the service is GEN304's, and no fit.
    fits = all(entry["reports"] and all(r.fits for _, r in entry["reports"]) for entry in found)
    if as_json:
        data = {
            "schema_version": 1,
            "service": service,
            "fits": fits,
            "clusters": [
                {"cluster": e["cluster"], **({"role": e["role"]} if e["role"] else {}),
                 "max_model_len": e["max_model_len"],
                 "devices": [{"pool": pool, **r.to_json()} for pool, r in e["reports"]],
                 "group": _group_json(e["group"])}
                for e in found
            ],
        }
        return json.dumps(data, indent=2), fits
    blocks = []
    for entry in found:
        where = f"cluster {entry['cluster']}" + (f", role {entry['role']}" if entry["role"]
                                                  else "")
        if not entry["reports"]:
            blocks.append(f"{where}: no node pool offers the devices this "
                          "service asks for (GEN304)")
        for pool, report in entry["reports"]:
            blocks.append(f"{where}, pool {pool}:\n{format_report(report)}"
                          + _group_text(entry["group"]))
    return "\n\n".join(blocks), fits


def _group_text(shape: GroupShape | None) -> str:
    """The per-node lines of a replica that spans nodes (the per-GPU budget above holds on
    every GPU of every node: each rank has the worst stage's weights, its shard and its KV)."""
    if shape is None:
        return ""
    lines = [f"\n  per node (one pod a node): {shape.describe()}"]
    lines += [f"    {line}" for line in pod_layout(shape)]
    return "\n".join(lines)


def _group_json(shape: GroupShape | None) -> dict[str, Any] | None:
    if shape is None:
        return None
    return {"pods": shape.pods, "gpus_per_pod": shape.gpus_per_pod,
            "gpus_per_node": shape.gpus_per_node, "data_local": shape.data_local,
            "pod_layout": list(pod_layout(shape))}


def _release(text: str | None) -> tuple[int, int, int]:
    if text is None:
        return PINNED_VLLM_VERSION
    try:
        return parse_vllm_version(text)
    except VersionError as err:
        raise VersionError(f"--vllm-version: {err}") from None


@click.command("fit")
@click.option("--model", "model_name", default=None, help="Hugging Face id of a catalog model.")
@click.option("--gpu", default=None, help="GPU: catalog id, PCI device id or product name.")
@click.option("--mig", "mig_profile", default=None, help="MIG profile of that GPU, e.g. 3g.40gb.")
@click.option("--gpus", type=click.IntRange(min=1), default=1, show_default=True,
              help="GPUs in the claim.")
@click.option("--tp", type=click.IntRange(min=1), default=None,
              help="Tensor-parallel size [default: --gpus].")
@click.option("--pp", type=click.IntRange(min=1), default=1, show_default=True,
              help="Pipeline-parallel size.")
@click.option("--max-model-len", type=click.IntRange(min=1), default=None,
              help="Context length [default: the model's maximum].")
@click.option("--max-num-seqs", type=click.IntRange(min=1), default=None,
              help="Concurrent sequences [default: vLLM's for the device and release].")
@click.option("--max-num-batched-tokens", type=click.IntRange(min=1), default=None,
              help="Tokens per scheduler step [default: vLLM's for the device and release].")
@click.option("--vllm-version", default=None, metavar="VERSION",
              help="vLLM release (0.28.0) or image tag (v0.28.0-cu129) whose defaults and "
              "memory accounting apply [default: gen's pinned release].")
@click.option("--gpu-memory-utilization", type=click.FloatRange(0, 1, min_open=True),
              default=0.90, show_default=True, help="vLLM's share of device memory.")
@click.option("--kv-cache-dtype", type=click.Choice(KV_CACHE_DTYPES), default="auto",
              show_default=True, help="KV cache element type (vLLM's choices).")
@click.option("--quantization", type=click.Choice(QUANTIZATIONS), default=None,
              help="vLLM --quantization [default: the checkpoint's own].")
@click.option("--enforce-eager", is_flag=True, help="No CUDA graphs (vLLM --enforce-eager).")
@click.option("--service", default=None,
              help="Reproduce lint's decision for this InferenceService of the profiles.")
@click.option("--cluster", "clusters", multiple=True,
              help="With --service: only this cluster (repeatable).")
@profiles_option
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON report.")
@handle_errors
def fit_command(model_name: str | None, gpu: str | None, mig_profile: str | None,
                gpus: int, tp: int | None, pp: int, max_model_len: int | None,
                max_num_seqs: int | None, max_num_batched_tokens: int | None,
                vllm_version: str | None,
                gpu_memory_utilization: float, kv_cache_dtype: str, quantization: str | None,
                enforce_eager: bool, service: str | None, clusters: tuple[str, ...],
                profiles_dir: Path, as_json: bool) -> int:
    """Does a model fit a GPU or MIG slice under vLLM? Exit 0 if it fits, 1 if not.

    With --service, the budget lint computed for that service on every device it can get
    (the same settings the rendered Deployment passes to vLLM).
    """
    if service is not None:
        if model_name is not None or gpu is not None or vllm_version is not None:
            raise click.UsageError("--service takes the model, GPUs and image from the "
                                   "profiles: drop --model/--gpu/--vllm-version")
        from gen.pipeline import load_plan

        text, fits = _service_output(load_plan(profiles_dir).select(clusters), service, as_json)
        click.echo(text)
        return 0 if fits else 1
    if model_name is None or gpu is None:
        raise click.UsageError("give --model and --gpu, or --service")
    model = model_catalog().lookup(model_name)
    report = check_fit(FitRequest(
        model=model, device=resolve_device(gpu, mig_profile),
        gpus=gpus, tensor_parallel=tp, pipeline_parallel=pp, max_model_len=max_model_len,
        gpu_memory_utilization=gpu_memory_utilization, kv_cache_dtype=kv_cache_dtype,
        max_num_seqs=max_num_seqs, max_num_batched_tokens=max_num_batched_tokens,
        quantization=quantization, enforce_eager=enforce_eager,
        vllm_version=_release(vllm_version),
    ))
    assumed = assumed_settings(report, model, _given_options(click.get_current_context()))
    if as_json:
        click.echo(json.dumps({**report.to_json(), "assumed": [a.to_json() for a in assumed]},
                              indent=2))
    else:
        click.echo(format_report(report) + format_assumed(assumed))
    return 0 if report.fits else 1


def _given_options(ctx: click.Context) -> set[str]:
    """The options of this invocation the user set (command line or environment), by their
    long name without ``--``."""
    from click.core import ParameterSource

    given: set[str] = set()
    for param in ctx.command.params:
        source = ctx.get_parameter_source(param.name) if param.name else None
        if source in (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT):
            given.update(o.removeprefix("--") for o in param.opts if o.startswith("--"))
    return given


def format_assumed(assumed: list[Assumption]) -> str:
    """The settings a ``--model`` question left to defaults: each value and why, then what a
    service that leaves the same key out runs with."""
    if not assumed:
        return ""
    named = [f"{a.setting.replace('-', '_')}={a.value}" for a in assumed]
    width = max(map(len, named)) + 3
    lines = ["", "", "  assumed (not given; then what a service leaving the key out runs with)"]
    for a, name in zip(assumed, named, strict=True):
        lines.append(f"    {name.ljust(width)}{a.why}")
        lines.append(f"    {''.ljust(width)}service: {a.service}")
    return "\n".join(lines)
