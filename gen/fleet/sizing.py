"""The memory-fit verdict on every device a service can land on.

Where a service can land is the fleet's placement decision (:mod:`gen.fleet.placement`);
this module budgets the service's model on each of those devices. Shared by the vLLM
builder (the default ``--max-model-len`` is the largest that fits every device the
service can get) and the fit lint rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gen.caches import BoundedCache
from gen.fleet.placement import Candidate, candidates
from gen.fleet.plan import ServicePlan

if TYPE_CHECKING:
    from gen.serving.fit import FitReport, FitRequest

__all__ = ["default_max_model_len", "fit_reports"]

_FALLBACK_LEN = 8192


def _request(svc: ServicePlan, cand: Candidate, max_model_len: int | None) -> FitRequest:
    from gen.serving.fit import FitDevice, FitRequest

    assert svc.model is not None
    device = FitDevice(cand.name, cand.memory_mib, cand.is_mig, cand.unified_memory)
    return FitRequest.for_service(svc.service, svc.model, device, max_model_len=max_model_len)


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
