"""Serving rules: a pool to run on, parallelism, memory fit, CUDA driver compatibility."""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Any

from gen.errors import Finding, Severity
from gen.fleet.plan import ClusterPlan, Plan, ServicePlan
from gen.fleet.roles import workloads
from gen.rules import finding

if TYPE_CHECKING:
    from gen.serving.fit import FitReport

_QUANTIZATION = re.compile(r"--quantization|only fp8 quantizes online|quantization must be")
_SCHEDULER = re.compile(r"must be greater than or equal to max_num_seqs")
_PARALLEL = re.compile(
    r"divisible by tensor parallel|TP×PP|cannot be split over TP|not divisible by TP|"
    r"TP shard|exceeds the model's .* layers|cannot run TP across MIG|parallel sizes must"
)


def _fit(cluster: ClusterPlan, svc: ServicePlan) -> list[Finding]:
    from gen.fleet.placement import candidates

    service = svc.service
    findings: list[Finding] = []
    # On DRA clusters a class that matches no pool's GPUs is GEN204's, with the reasons.
    if not candidates(svc, match_class=cluster.dra_api_version is None):
        whole = [p for p in svc.pools if p.gpu is not None and p.mig_layout is None]
        if svc.gpu_class is not None and svc.gpu_class.device_type == "mig":
            what = f"MIG {svc.gpu_class.match.mig_profile} devices"
        elif whole and svc.gpu_class is not None:
            what = (f"GPUs that class {svc.gpu_class.name!r} matches (its pools have "
                    f"{', '.join(sorted({p.gpu.product_name for p in whole if p.gpu}))})")
        else:
            what = "full (non-MIG) GPUs"
        findings.append(finding(
            "GEN304",
            f"no node pool of cluster {cluster.name!r} offers {what} for this service",
            svc.located.at("gpu", "gpu_class"), key_path="gpu.gpu_class",
            hint="add a pool (or a MIG layout with that profile), or change the GPU class",
        ))
        return findings
    length = service.serving.max_model_len
    where_len = (svc.located.at("serving", "max_model_len") if length
                 else svc.located.at("model"))
    if cluster.dra_api_version is not None and not _nvidia_class(svc):
        return findings  # a claim of another driver's class gets no NVIDIA GPU at all
    from gen.fleet.sizing import service_fit

    # service_fit covers only the pools the class admits (gen.fleet.placement.class_admits),
    # at the length the Deployment renders: the profile's, else the largest that fits.
    resolved, reports = service_fit(svc)
    settings = _setting_findings(svc, reports)
    findings += settings
    for cand, report in reports:
        if report.fits or settings:
            continue
        parallel = [e for e in report.errors if _PARALLEL.search(e)]
        if parallel:
            findings.append(finding(
                "GEN302", "; ".join(parallel), svc.located.at("parallelism"),
                key_path="parallelism",
                hint=f"{service.model} has {svc.model.attention_heads if svc.model else '?'} "
                f"attention heads and {svc.model.kv_heads if svc.model else '?'} KV heads; "
                "TP×PP must fit the devices of the claim (gpu.count)",
            ))
            continue
        errors = "; ".join(report.errors)
        best = report.max_model_len_fit
        if best == 0:  # not even one block of KV fits: no max_model_len fixes it
            findings.append(_too_big(cluster, svc, cand, report))
            continue
        if length is None:
            errors = (f"with max_model_len omitted gen serves the largest context that fits, "
                      f"but only {best} tokens fit, less than the useful minimum of {resolved} "
                      f"(one {resolved}-token conversation per replica): {errors}")
        hint = (f"the largest max_model_len that fits is {best}" if best
                else "use more or larger devices, a quantized model, or kv_cache_dtype: fp8")
        findings.append(finding(
            "GEN301",
            f"{service.model} does not fit {cand.name} (pool {cand.pool.name!r}, cluster "
            f"{cluster.name!r}): {errors}",
            where_len, key_path="serving.max_model_len" if length else "model", hint=hint,
        ))
    return findings


def _gpu_line(svc: ServicePlan) -> tuple[Any, str]:
    """The line that decides how much memory a replica gets: the GPU count, else the class."""
    gpu = svc.service.gpu
    if gpu is not None and "count" in gpu.model_fields_set:
        return svc.located.at("gpu", "count"), "gpu.count"
    if gpu is not None and gpu.gpu_class is not None:
        return svc.located.at("gpu", "gpu_class"), "gpu.gpu_class"
    return svc.located.at("gpu"), "gpu"


def _too_big(cluster: ClusterPlan, svc: ServicePlan, cand: Any, report: FitReport) -> Finding:
    """GEN301 for a model no context length fixes: at the GPU request, the model related."""
    from gen.serving.memory import GIB

    where, key = _gpu_line(svc)
    need = report.weights / GIB
    budget = report.budget / GIB
    if report.weights > report.budget:
        what = f"the weights alone need {need:.1f} GiB per GPU"
    else:
        what = (f"the weights ({need:.1f} GiB per GPU) and vLLM's runtime overhead "
                f"({report.overhead / GIB:.1f} GiB) leave no room for the KV cache")
    model = svc.located.at("model")
    return finding(
        "GEN301",
        f"{svc.service.model} does not fit {cand.name} (pool {cand.pool.name!r}, cluster "
        f"{cluster.name!r}) at any context length: {what}, and vLLM may use "
        f"{budget:.1f} GiB of each ({report.gpus} GPU(s), TP={report.tensor_parallel})",
        where, key_path=key,
        related=(dataclasses.replace(model, note="the model"),),
        hint="give each replica more or larger GPUs (gpu.count with parallelism.tensor, or "
        "another gpu_class), or serve a quantized checkpoint of the model",
    )


def _setting_findings(svc: ServicePlan, reports: list[tuple[Any, FitReport]]) -> list[Finding]:
    """GEN305/GEN306: settings vLLM refuses whatever the device (reported once per service)."""
    errors = {e for _, r in reports for e in r.errors}
    out = [finding("GEN305", e, svc.located.at("serving", "quantization"),
                   key_path="serving.quantization",
                   hint="omit quantization (vLLM reads the checkpoint's own), use a checkpoint "
                   "of that method, or quantize a 16-bit checkpoint in flight (fp8, or "
                   "bitsandbytes through vLLM 0.27)")
           for e in sorted(errors) if _QUANTIZATION.search(e)]
    out += [finding("GEN306", e, svc.located.at("serving", "max_num_batched_tokens"),
                    key_path="serving.max_num_batched_tokens",
                    hint="raise max_num_batched_tokens to at least max_num_seqs")
            for e in sorted(errors) if _SCHEDULER.search(e)]
    return out


def _nvidia_class(svc: ServicePlan) -> bool:
    from gen.models.gpu_class import NVIDIA_DRIVER

    gpu_class = svc.gpu_class
    return gpu_class is None or gpu_class.device_type != "gpu" or gpu_class.driver == NVIDIA_DRIVER


def _cuda(cluster: ClusterPlan, svc: ServicePlan) -> list[Finding]:
    from gen.fleet.placement import candidates
    from gen.serving.engines import compatible_image, driver_satisfies
    from gen.serving.image import service_image

    image = service_image(svc.service)
    info = image.info
    where = svc.located.at(*image.key)
    if info is None:
        return [finding(
            "GEN303", f"cannot tell which CUDA runtime {image.reference} ships; driver "
            "compatibility is unchecked", where, key_path=image.field,
            severity=Severity.WARNING,
            hint="use a vllm/vllm-openai release tag gen knows, or name the upstream tag a "
            "mirrored image copies in serving.image_of",
        )]
    findings = []
    # Only the pools the service's class can land on: a pool whose GPUs the class never
    # takes runs none of its replicas, whatever its driver.
    reachable = {c.pool.pool.name for c in candidates(svc)}
    for pool in svc.pools:
        if pool.pool.name not in reachable:
            continue
        driver = pool.pool.driver_version
        if driver is None or driver_satisfies(driver, info.min_driver):
            continue
        index = [p.name for p in cluster.cluster.node_pools].index(pool.name)
        older = compatible_image("vllm", driver)
        mirrored = image.pulled != image.reference
        pin = ("pin an image built for an older CUDA" if older is None else
               f"{'mirror' if mirrored else 'pin'} {older.image} (CUDA {older.cuda_version}, "
               f"driver ≥ {older.min_driver})" + (" and name it in serving.image_of"
                                                  if mirrored else ""))
        findings.append(finding(
            "GEN303",
            f"{image.reference} ships CUDA {info.cuda_version}, which needs NVIDIA driver "
            f"≥ {info.min_driver}; pool {pool.name!r} of cluster {cluster.name!r} has "
            f"{driver}: 'CUDA driver version is insufficient for CUDA runtime version'",
            where if image.explicit else cluster.located.at("node_pools", index,
                                                            "driver_version"),
            key_path=image.field if image.explicit else f"node_pools[{index}].driver_version",
            hint=f"upgrade the pool's driver to ≥ {info.min_driver}, or {pin}",
        ))
    return findings


def check(plan: Plan) -> list[Finding]:
    """GEN301–GEN308."""
    from gen.serving.release_checks import check_service

    findings: list[Finding] = []
    for cluster in plan.clusters:
        for svc in workloads(cluster):
            service = svc.service
            if service.gpu is None or service.engine != "vllm":
                continue
            found: list[Finding] = []
            if not svc.pools:
                found.append(finding(
                    "GEN304", f"cluster {cluster.name!r} has no NVIDIA node pool",
                    svc.located.at("clusters"), key_path="clusters",
                ))
            else:
                found += check_service(svc)
                found += _fit(cluster, svc)
                found += _cuda(cluster, svc)
            # Each is about this service in this cluster (the judge and the SARIF/JSON
            # consumers read it from the finding, not from the message).
            findings += [dataclasses.replace(f, service=f.service or service.name,
                                             cluster=f.cluster or cluster.name) for f in found]
    return findings
