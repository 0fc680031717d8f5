"""Where a service can land: the devices of its pools that its first-choice class can take.

Resolve records the pools a service may run on (``ServicePlan.pools``: its ``node_pool``
pin and its platform); this module narrows them to the devices the service's GPU class
asks for. It is a placement decision several capabilities read: the vLLM builder (node
selectors, the default context length through :mod:`gen.fleet.sizing`), the serving
rules (GEN304: no pool offers the devices) and the DRA satisfiability rules (which leave a
service GEN304 reports alone). It lives in the fleet layer so that none of them imports
another.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from gen.fleet.plan import ClusterPlan, PoolPlan, ServicePlan

if TYPE_CHECKING:
    from gen.models.gpu_class import GPUClass
    from gen.nvidia.gpus import GPU, MIGProfile

__all__ = ["Candidate", "candidates", "class_admits", "class_candidates", "with_refused_classes"]


@dataclass(frozen=True)
class Candidate:
    """One kind of device a service's replica can get, on one pool."""

    pool: PoolPlan
    name: str
    memory_mib: int
    is_mig: bool
    unified_memory: bool = False
    cuda_total_mib: int | None = None
    compute_capability: str = ""
    cuda_total_logged: bool = False
    mig_profile: str = ""
    """The MIG profile of a slice candidate ('' for a whole GPU)."""


def candidates(svc: ServicePlan, *, match_class: bool = True) -> list[Candidate]:
    """Devices of the eligible pools that the first-choice class can take.

    A pool whose devices the class's raw CEL rejects (``PoolPlan.refused_classes``, which
    the pipeline records from the DRA capability's evaluation) offers nothing. With
    ``match_class=False`` a whole-GPU class takes every pool's full GPUs (the DRA rules
    then say, selector by selector, why a device does not match).
    """
    return class_candidates(svc.gpu_class, svc.pools, match_class=match_class)


def class_candidates(gpu_class: GPUClass | None, pools: Iterable[PoolPlan], *,
                     match_class: bool = True) -> list[Candidate]:
    """The devices of ``pools`` that ``gpu_class`` can take (:func:`candidates` for a
    service's pools; a quota's pools for the queues that count the class)."""
    out = []
    for pool in pools:
        gpu = pool.gpu
        if gpu is None:
            continue
        if match_class and gpu_class is not None and gpu_class.name in pool.refused_classes:
            continue  # the class's raw CEL selects none of the pool's devices
        if gpu_class is not None and gpu_class.device_type == "mig":
            dynamic = pool.pool.mig == "dynamic"  # every profile of the GPU, carved on demand
            if pool.mig_layout is None and not dynamic:
                continue
            if match_class and not class_admits(gpu_class, pool):
                continue  # a MIG class of another product: none of the pool's slices
            offered = {p.profile for _, check in pool.mig_checks for p in check.placements}
            for profile in _mig_profiles_of(gpu_class, gpu):
                if dynamic or profile.name in offered:
                    out.append(Candidate(pool, f"{gpu.name} MIG {profile.name}",
                                         profile.memory_mib, True,
                                         compute_capability=gpu.compute_capability,
                                         mig_profile=profile.name))
                    break
        elif pool.mig_layout is None and (
            gpu_class is None or not match_class or class_admits(gpu_class, pool)
        ):
            out.append(Candidate(pool, gpu.product_name, gpu.memory_mib, False,
                                 gpu.unified_memory, gpu.cuda_visible_mib,
                                 gpu.compute_capability, gpu.cuda_total_mib is not None))
    return out


def _mig_profiles_of(gpu_class: GPUClass, gpu: GPU) -> list[MIGProfile]:
    """The profiles of ``gpu`` a MIG class asks for: the one it names, or (a class by
    ``min_memory``) every profile with that much memory, smallest slice first."""
    from gen.errors import QuantityError
    from gen.k8s.quantity import parse_quantity

    match = gpu_class.match
    if match.mig_profile is not None:
        named = gpu.mig_profile(match.mig_profile)
        return [named] if named is not None else []
    if match.min_memory is None:
        return []
    try:
        need = parse_quantity(str(match.min_memory))
    except QuantityError:
        return []
    fitting = [p for p in gpu.mig_profiles if p.memory_mib * (1 << 20) >= need]
    return sorted(fitting, key=lambda p: (p.compute_slices, p.size, p.memory_mib, p.name))


def class_admits(gpu_class: GPUClass, pool: PoolPlan) -> bool:
    """Whether a whole-GPU class's structured match can take the GPUs of an NVIDIA pool.

    Product, architecture, memory and compute capability are compared with the catalog's
    figures for the pool's GPU (the driver reports the same ones), so a service of an
    "H200" class is never placed on, or sized for, an L4 pool. Classes of other drivers,
    raw CEL selectors and non-NVIDIA pools are left to the DRA satisfiability rules.
    """
    from gen.errors import QuantityError
    from gen.k8s.quantity import parse_quantity
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


def with_refused_classes(
    plan: ClusterPlan, refused: Mapping[str, frozenset[str]]
) -> ClusterPlan:
    """The cluster plan with ``refused`` (pool name → classes whose raw CEL selects none of
    its devices) recorded on its pools, in the cluster's list and in every service's."""
    if not refused:
        return plan
    pools = {p.name: replace(p, refused_classes=refused.get(p.name, frozenset()))
             for p in plan.pools}
    services = tuple(replace(s, pools=tuple(pools.get(p.name, p) for p in s.pools))
                     for s in plan.services)
    return replace(plan, pools=tuple(pools[p.name] for p in plan.pools), services=services)
