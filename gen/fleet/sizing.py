"""The memory-fit verdict on every device a service can land on.

Where a service can land is the fleet's placement decision (:mod:`gen.fleet.placement`);
this module budgets the service's model on each of those devices with the service's one
resolved :class:`gen.serving.fit.ServingConfig`. Shared by the vLLM builder (the rendered
``--max-model-len`` is :func:`resolved_max_model_len`), the fit lint rule (GEN301/302, which
reads :func:`service_fit`) and ``gen fit --service`` (which prints the same reports).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gen.caches import BoundedCache
from gen.fleet.placement import Candidate, candidates
from gen.fleet.plan import ServicePlan

if TYPE_CHECKING:
    from gen.serving.fit import FitDevice, FitReport, FitRequest, ServingConfig

__all__ = ["engine_gpus", "fit_reports", "resolved_max_model_len", "service_fit", "serving_config"]


def _device(cand: Candidate) -> FitDevice:
    from gen.serving.fit import FitDevice

    return FitDevice(cand.name, cand.memory_mib, cand.is_mig, cand.unified_memory,
                     cand.cuda_total_mib, cand.compute_capability, cand.cuda_total_logged)


def serving_config(svc: ServicePlan, cands: list[Candidate] | None = None) -> ServingConfig:
    """The service's one :class:`gen.serving.fit.ServingConfig`: its settings, vLLM's
    defaults of its image's release resolved for every device it can get (``cands``, when
    the caller has them already)."""
    from gen.serving.fit import ServingConfig

    devices = candidates(svc) if cands is None else cands
    return ServingConfig.of(svc.service, [_device(c) for c in devices])


def _request(svc: ServicePlan, config: ServingConfig, cand: Candidate,
             max_model_len: int | None) -> FitRequest:
    from gen.serving.fit import FitRequest

    assert svc.model is not None
    return FitRequest.for_service(svc.service, svc.model, _device(cand),
                                  max_model_len=max_model_len, config=config,
                                  gpus=engine_gpus(svc, cand))


def engine_gpus(svc: ServicePlan, cand: Candidate) -> int | None:
    """The GPUs one vLLM engine of the service budgets over on ``cand``'s pool: TP × PP for
    a replica of several data-parallel engines or one that spans nodes (each rank holds the
    worst pipeline stage's weights, its tensor shard and its KV, wherever its pod is:
    :mod:`gen.fleet.parallelism`); None (the claim's ``gpu.count``) otherwise."""
    par = svc.service.parallelism
    if svc.service.gpu is None or cand.is_mig:
        return None
    if par.data > 1 or par.gpus > cand.pool.pool.gpus_per_node:
        return par.tensor * par.pipeline
    return None


def fit_reports(
    svc: ServicePlan, max_model_len: int | None = None
) -> list[tuple[Candidate, FitReport]]:
    """(candidate, FitReport) for every distinct device the service can get."""
    if svc.model is None:
        return []
    seen: dict[tuple[str, int, bool], FitReport] = {}
    out = []
    cands = candidates(svc)
    config = serving_config(svc, cands)
    for cand in cands:
        key = (cand.name, cand.memory_mib, cand.is_mig)
        if key not in seen:
            seen[key] = _check_fit(_request(svc, config, cand, max_model_len))
        out.append((cand, seen[key]))
    return out


UNSIZED_MAX_MODEL_LEN = 8192
"""The ``--max-model-len`` of a service whose model gen has no numbers for (no budget)."""

_FIT_CACHE: BoundedCache[FitRequest, FitReport] = BoundedCache("gen.fleet.sizing.fit", 10_000)


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


def _min_useful(svc: ServicePlan) -> int:
    from gen.serving.memory import MIN_USEFUL_MODEL_LEN

    assert svc.model is not None
    return min(svc.model.max_context, MIN_USEFUL_MODEL_LEN)


def resolved_max_model_len(svc: ServicePlan) -> int:
    """The ``--max-model-len`` the service runs with: the profile's, else the largest that
    fits every device the service can get (capped at the model's context). When not even
    :data:`gen.serving.fit.MIN_USEFUL_MODEL_LEN` fits, that minimum (lint fails the service).
    """
    length = svc.service.serving.max_model_len
    if length is not None:
        return length
    if svc.model is None:
        return UNSIZED_MAX_MODEL_LEN
    fits = [r.max_model_len_fit for _, r in fit_reports(svc)]
    best = min(fits, default=svc.model.max_context)
    return max(best, _min_useful(svc))


def service_fit(svc: ServicePlan) -> tuple[int, list[tuple[Candidate, FitReport]]]:
    """The decision lint makes for a service: its resolved max_model_len and the report of
    every device it can get at that length."""
    length = resolved_max_model_len(svc)
    return length, fit_reports(svc, length)
