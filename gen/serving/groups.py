"""Whole-node placement of the replicas of a cluster's vLLM services on their pools.

A replica that spans nodes (:mod:`gen.fleet.parallelism`) is a LeaderWorkerSet group of
``pods`` pods with ``gpus_per_pod`` GPUs each, every pod on one node; a group runs only when
all its pods are placed (the leader alone schedules and the workers strand: lws issue #167).
:func:`place` packs every service's replicas (``min_replicas``) on the nodes of the pool its
shape is for, first fit, groups first (largest pods first), then single-node replicas, in
plan order. The LWS builder reads :func:`spare_group` (``maxSurge``: a rolling update with a
surge needs room for one more whole group, else it waits forever); GEN422 reads
:func:`place`'s stranded groups.
"""

from __future__ import annotations

from dataclasses import dataclass

from gen.fleet.parallelism import GroupShape, service_shape, shape_pool
from gen.fleet.plan import ClusterPlan, ServicePlan

__all__ = ["Placement", "place", "spare_group"]


@dataclass(frozen=True)
class Placement:
    """Where the replicas of a cluster went, per pool."""

    free: dict[str, list[int]]
    """Pool name → free GPUs of each node after placing everything."""
    placed: dict[str, int]
    """Service name → replicas (groups) placed whole."""
    wanted: dict[str, int]
    """Service name → replicas to place."""


def _demand(shape: GroupShape) -> tuple[int, int]:
    """(pods per replica, GPUs per pod) of a service."""
    return (shape.pods, shape.gpus_per_pod) if shape.multi_node else (1, shape.gpus_per_pod)


def _fits(free: list[int], pods: int, per_pod: int) -> list[int] | None:
    """Nodes (indices) taking ``pods`` pods of ``per_pod`` GPUs, first fit; None: no room."""
    left = list(free)
    chosen = []
    for _ in range(pods):
        index = next((i for i, gpus in enumerate(left) if gpus >= per_pod), None)
        if index is None:
            return None
        left[index] -= per_pod
        chosen.append(index)
    return chosen


def place(cluster: ClusterPlan, extra: ServicePlan | None = None) -> Placement:
    """Pack every vLLM service's replicas on its shape's pool (one more group of ``extra``
    after them, when given: :func:`spare_group`)."""
    free: dict[str, list[int]] = {}
    entries: list[tuple[int, int, ServicePlan, GroupShape, str]] = []
    for order, svc in enumerate(cluster.services):
        shape = service_shape(svc)
        pool = shape_pool(svc)
        if shape is None or pool is None:
            continue
        free.setdefault(pool.name, [pool.pool.gpus_per_node] * pool.pool.nodes)
        entries.append((0 if shape.multi_node else 1, order, svc, shape, pool.name))
    entries.sort(key=lambda e: (e[0], -e[3].gpus_per_pod, e[1]))
    placed: dict[str, int] = {}
    wanted: dict[str, int] = {}
    for _, _, svc, shape, pool_name in entries:
        name = svc.service.name
        wanted[name] = svc.service.min_replicas
        placed[name] = 0
        pods, per_pod = _demand(shape)
        for _ in range(svc.service.min_replicas):
            chosen = _fits(free[pool_name], pods, per_pod)
            if chosen is None:
                break
            for index in chosen:
                free[pool_name][index] -= per_pod
            placed[name] += 1
    if extra is not None:
        shape, pool = service_shape(extra), shape_pool(extra)
        if shape is not None and pool is not None and pool.name in free:
            pods, per_pod = _demand(shape)
            if _fits(free[pool.name], pods, per_pod) is not None:
                placed[f"{extra.service.name}+spare"] = 1
    return Placement(free, placed, wanted)


def spare_group(cluster: ClusterPlan, svc: ServicePlan) -> bool:
    """Whether the pool has room for one more whole group of ``svc`` beside every service's
    replicas (so a rolling update may surge by one group)."""
    return f"{svc.service.name}+spare" in place(cluster, extra=svc).placed
