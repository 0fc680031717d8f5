"""GEN330: on a device-plugin cluster, can every service's replicas run at once?

The NVIDIA device plugin advertises whole GPUs as ``nvidia.com/gpu`` and, under the MIG
``mixed`` strategy, each MIG profile as ``nvidia.com/mig-<profile>`` (under ``single``
every slice of a node is an ``nvidia.com/gpu``). A replica asks for ``count`` units of one
resource, all on one node. The check places every service's replicas (``min_replicas``
when autoscaled) on the nodes of the pools each may use, best fit first, services in
plan order, and reports a service whose replicas do not all find a node: DRA clusters have
the same check on their claims (GEN205).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Literal

from gen.errors import Finding
from gen.fleet.manifests import extended_resource_name
from gen.fleet.parallelism import service_shape
from gen.fleet.plan import ClusterPlan, Plan, PoolPlan
from gen.fleet.roles import workloads
from gen.rules import finding

__all__ = ["check", "units_per_node"]


def units_per_node(pool: PoolPlan, strategy: str) -> Counter[str]:
    """Device-plugin resources one node of ``pool`` advertises, and how many of each."""
    gpus = pool.pool.gpus_per_node
    layout = pool.mig_layout
    units: Counter[str] = Counter()
    if layout is None:
        units["nvidia.com/gpu"] = gpus
        return units
    mode: Literal["single", "mixed"] = "single" if strategy == "single" else "mixed"
    if layout.profiles is not None:
        per_gpu = [layout.profiles] * gpus
    else:
        per_gpu = [{} for _ in range(gpus)]
        for entry in layout.per_gpu or ():
            for index in entry.gpus:
                if index < gpus:
                    per_gpu[index] = entry.profiles
    for counts in per_gpu:
        if not any(counts.values()):
            units["nvidia.com/gpu"] += 1  # MIG disabled on this GPU: a whole GPU
        for profile, count in counts.items():
            if count:
                units[extended_resource_name(profile, mode)] += count
    return units




def _take(free: Counter[int], count: int) -> bool:
    """Take ``count`` units from the node with the fewest free units that has enough."""
    fitting = sorted(units for units, nodes in free.items() if nodes and units >= count)
    if not fitting:
        return False
    units = fitting[0]
    free[units] -= 1
    free[units - count] += 1
    return True


def _cluster_findings(cluster: ClusterPlan) -> list[Finding]:
    from gen.serving.build import extended_resource

    state: dict[tuple[str, str], Counter[int]] = {}
    findings = []
    for svc in workloads(cluster):
        gpu = svc.service.gpu
        pools = [p for p in svc.pools if p.pool.platform == "nvidia" and p.gpu is not None]
        if gpu is None or not pools:
            continue
        shape = service_shape(svc)
        if shape is not None and shape.multi_node:
            continue  # a group of pods on several nodes: GEN422 (gen.serving.groups)
        resource = extended_resource(cluster, svc)
        replicas = svc.service.min_replicas
        supply = {p.pool.name: units_per_node(p, cluster.mig_strategy)[resource] for p in pools}
        placed = 0
        for _ in range(replicas):
            if not any(
                _take(state.setdefault((p.pool.name, resource),
                                       Counter({supply[p.pool.name]: p.pool.nodes})), gpu.count)
                for p in pools
            ):
                break
            placed += 1
        if placed == replicas:
            continue
        alone = sum(supply[p.pool.name] // gpu.count * p.pool.nodes for p in pools)
        others = (f"; other services take the rest (alone it would fit {alone})"
                  if alone >= replicas else "")
        where, key = svc.replicas_at()
        findings.append(finding(
            "GEN330",
            f"{replicas} replica(s) × {gpu.count} {resource} cannot all run at once on cluster "
            f"{cluster.name!r}: its node pools hold {placed}{others}; the rest stay Pending",
            where, key_path=key,
            hint="lower the replicas, ask for fewer devices per replica, or add nodes",
            related=tuple(
                replace(p.located_at, note=f"pool {p.pool.name!r}: {p.pool.nodes} node(s) × "
                        f"{supply[p.pool.name]} {resource}")
                for p in pools if supply[p.pool.name]
            ),
            service=svc.service.name, cluster=cluster.name,
        ))
    return findings


def check(plan: Plan) -> list[Finding]:
    """GEN330 on every device-plugin cluster."""
    findings: list[Finding] = []
    for cluster in plan.clusters:
        if cluster.dra_api_version is None:
            findings += _cluster_findings(cluster)
    return findings
