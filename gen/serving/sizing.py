"""What devices a service can land on, and the memory-fit verdict on each.

Shared by the vLLM builder (the default ``--max-model-len`` is the largest that fits
every device the service can get) and the fit lint rule.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gen.caches import BoundedCache
from gen.fleet.plan import PoolPlan, ServicePlan

if TYPE_CHECKING:
    from gen.models.gpu_class import GPUClass
    from gen.serving.fit import FitReport, FitRequest

__all__ = ["Candidate", "candidates", "class_admits", "default_max_model_len", "fit_reports"]

_FALLBACK_LEN = 8192


@dataclass(frozen=True)
class Candidate:
    """One kind of device a service's replica can get, on one pool."""

    pool: PoolPlan
    name: str
    memory_mib: int
    is_mig: bool
    unified_memory: bool = False


def candidates(svc: ServicePlan, *, match_class: bool = True) -> list[Candidate]:
    """Devices of the eligible pools that the first-choice class can take.

    With ``match_class=False`` a whole-GPU class takes every pool's full GPUs (the DRA
    rules then say, selector by selector, why a device does not match).
    """
    gpu_class = svc.gpu_class
    out = []
    for pool in svc.pools:
        gpu = pool.gpu
        if gpu is None:
            continue
        if gpu_class is not None and gpu_class.device_type == "mig":
            profile_name = gpu_class.match.mig_profile
            if profile_name is None or pool.mig_layout is None:
                continue
            present = any(
                p.profile == profile_name for _, check in pool.mig_checks
                for p in check.placements
            )
            profile = gpu.mig_profile(profile_name)
            if present and profile is not None:
                out.append(Candidate(pool, f"{gpu.name} MIG {profile.name}",
                                     profile.memory_mib, True))
        elif pool.mig_layout is None and (
            gpu_class is None or not match_class or class_admits(gpu_class, pool)
        ):
            out.append(Candidate(pool, gpu.product_name, gpu.memory_mib, False,
                                 gpu.unified_memory))
    return out


def class_admits(gpu_class: GPUClass, pool: PoolPlan) -> bool:
    """Whether a whole-GPU class's structured match can take the GPUs of an NVIDIA pool.

    Product, architecture, memory and compute capability are compared with the catalog's
    figures for the pool's GPU (the driver reports the same ones), so a service of an
    "H200" class is never placed on, or sized for, an L4 pool. Classes of other drivers,
    raw CEL selectors and non-NVIDIA pools are left to the DRA satisfiability rules.
    """
    from gen.k8s.quantity import QuantityError, parse_quantity
    from gen.models.gpu_class import NVIDIA_DRIVER
    from gen.nvidia.gpus import gpu_catalog

    gpu, match = pool.gpu, gpu_class.match
    if gpu is None or pool.pool.platform != "nvidia" or gpu_class.driver != NVIDIA_DRIVER:
        return True
    if match.product is not None:
        known = gpu_catalog().find(match.product)
        names = {gpu.product_name, *gpu.other_product_names}
        if (known.product_name if known is not None else match.product) not in names:
            return False
    if match.architecture is not None and match.architecture.lower() != gpu.architecture.lower():
        return False
    if match.min_memory is not None:
        try:
            if parse_quantity(str(match.min_memory)) > gpu.memory_mib * (1 << 20):
                return False
        except QuantityError:
            return True
    if match.min_compute_capability is not None:
        def version(text: str) -> tuple[int, ...]:
            return tuple(int(part) for part in text.split("."))
        if version(gpu.compute_capability) < version(match.min_compute_capability):
            return False
    return True


def _request(svc: ServicePlan, cand: Candidate, max_model_len: int | None) -> FitRequest:
    from gen.serving.fit import FitDevice, FitRequest

    service = svc.service
    assert svc.model is not None
    gpus = service.gpu.count if service.gpu is not None else 1
    return FitRequest(
        model=svc.model,
        device=FitDevice(cand.name, cand.memory_mib, cand.is_mig, cand.unified_memory),
        gpus=gpus,
        tensor_parallel=service.parallelism.tensor,
        pipeline_parallel=service.parallelism.pipeline,
        max_model_len=max_model_len,
        gpu_memory_utilization=service.serving.gpu_memory_utilization,
        kv_cache_dtype=service.serving.kv_cache_dtype,
        max_num_seqs=service.serving.max_num_seqs,
        max_num_batched_tokens=service.serving.max_num_batched_tokens,
    )


def fit_reports(
    svc: ServicePlan, max_model_len: int | None = None
) -> list[tuple[Candidate, FitReport]]:
    """(candidate, FitReport) for every distinct device the service can get."""
    if svc.model is None:
        return []
    seen: dict[tuple[str, int, bool], FitReport] = {}
    out = []
    for cand in candidates(svc):
        key = (cand.name, cand.memory_mib, cand.is_mig)
        if key not in seen:
            seen[key] = _check_fit(_request(svc, cand, max_model_len))
        out.append((cand, seen[key]))
    return out


_FIT_CACHE: BoundedCache[FitRequest, FitReport] = BoundedCache("gen.serving.sizing.fit", 10_000)


def _check_fit(request: FitRequest) -> FitReport:
    """``check_fit``, once per distinct request: a fleet repeats the same few shapes."""
    from gen.serving.fit import check_fit

    try:
        return _FIT_CACHE.data[request]
    except KeyError:
        pass
    except TypeError:  # an unhashable field: answer without caching
        return check_fit(request)
    return _FIT_CACHE.put(request, check_fit(request))


def _default_len(svc: ServicePlan) -> int:
    if svc.model is None:
        return _FALLBACK_LEN
    fits = [r.max_model_len_fit for _, r in fit_reports(svc)]
    fits = [f for f in fits if f > 0]
    if not fits:
        return min(svc.model.max_context, _FALLBACK_LEN)
    return min(min(fits), svc.model.max_context)


def default_max_model_len(svc: ServicePlan) -> int:
    """The profile's max_model_len, else the largest that fits every candidate device."""
    if svc.service.serving.max_model_len is not None:
        return svc.service.serving.max_model_len
    return _default_len(svc)
