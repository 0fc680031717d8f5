"""Which pools a GPU class's DeviceClass can take devices from, by evaluating its CEL.

Placement (:mod:`gen.fleet.placement`) compares a class's structured ``match`` with the
catalog's figures for a pool's GPU, but it cannot read raw CEL (``cel:``): the CEL
evaluator is this capability's, and the fleet layer sits below it. The pipeline therefore
asks this module, per DRA cluster and before the builders run, which pools each class with
raw CEL selects no device of, and records the answer in the plan as data
(``PoolPlan.refused_classes``). Serving fit (GEN301/GEN302), the driver check (GEN303) and
the Deployment's node selectors then see only the pools the class can land on.

Selectors are evaluated once per distinct device shape (:class:`gen.dra.satisfiability.Matcher`
caches the results and the pools' simulated inventories). A selector that errors at run time
on a device does not select it (the allocator aborts the claim; GEN204 reports the error).
A class whose CEL does not compile refuses no pool: nothing can be evaluated, and the
compile error is GEN201's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from gen.dra.satisfiability import Matcher
from gen.dra.selectors import class_cel
from gen.errors import CELCompileError

if TYPE_CHECKING:
    from gen.fleet.plan import ClusterPlan, PoolPlan
    from gen.models.gpu_class import GPUClass

__all__ = ["admitted_pools", "cel_refusals", "selected_shapes"]


def selected_shapes(
    gpu_class: GPUClass, pools: Iterable[PoolPlan], matcher: Matcher
) -> dict[str, frozenset[int]] | None:
    """Pool name → the indices of its device shapes (``NodeInventory.shapes``) that every
    selector of the class's DeviceClass accepts, for each NVIDIA pool of ``pools`` with
    one; None when a selector does not compile (unknown)."""
    selectors = class_cel(gpu_class)
    out = {}
    try:
        for pool in pools:
            if pool.pool.platform != "nvidia" or pool.gpu is None:
                continue
            shapes = matcher.inventory(pool).shapes
            hit = frozenset(i for i, shape in enumerate(shapes)
                            if all(matcher.result(s, shape.device).matched for s in selectors))
            if hit:
                out[pool.name] = hit
    except CELCompileError:
        return None
    return out


def admitted_pools(
    gpu_class: GPUClass, pools: Iterable[PoolPlan], matcher: Matcher
) -> frozenset[str] | None:
    """The NVIDIA pools (of ``pools``) with a device every selector of the class's
    DeviceClass accepts; None when a selector does not compile (unknown)."""
    selected = selected_shapes(gpu_class, pools, matcher)
    return None if selected is None else frozenset(selected)


def cel_refusals(
    cluster: ClusterPlan, matcher: Matcher | None = None
) -> Mapping[str, frozenset[str]]:
    """Pool name → the classes with raw CEL whose DeviceClass selects none of its devices.

    Only DRA clusters: a device-plugin cluster renders no DeviceClass, and its pods get
    whole GPUs by resource name whatever the class's CEL says.
    """
    if cluster.dra_api_version is None:
        return {}
    matcher = matcher if matcher is not None else Matcher()
    pools = [p for p in cluster.pools if p.pool.platform == "nvidia" and p.gpu is not None]
    refused: dict[str, set[str]] = {}
    for name, located in sorted(cluster.gpu_classes.items()):
        if not located.value.cel:
            continue
        admitted = admitted_pools(located.value, pools, matcher)
        if admitted is None:
            continue
        for pool in pools:
            if pool.name not in admitted:
                refused.setdefault(pool.name, set()).add(name)
    return {pool: frozenset(names) for pool, names in refused.items()}
