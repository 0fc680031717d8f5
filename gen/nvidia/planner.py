"""``gen plan``: static MIG layouts for the services' demand on a pool, and dynamic MIG's count.

The demand on a pool is the MIG slices its services ask for at their autoscaling maximum:
a class by ``mig_profile`` asks for that profile; a MIG class by ``min_memory`` alone asks
for the smallest plain profile (fewest compute, then memory slices) of the pool's GPU with
that much memory. Services that may
run on several pools count on each of them (each pool is planned as if it served them
alone).

For each pool the planner proposes:

* **one layout for every GPU** (a ``MIGLayout`` with ``profiles``): among the valid layouts
  of the GPU (every combination of the demanded profiles that passes
  :func:`gen.nvidia.mig.check_layout`, so placement-exact), the one that needs the fewest
  GPUs, then leaves the fewest memory and compute slices unused on those GPUs;
* **one layout per GPU index** (``per_gpu``, the same on every node): the node's GPUs are
  filled one by one with the valid layout that serves the most of the remaining demand
  (largest slices first), then the layout repeats on as many nodes as needed;
* **dynamic MIG**: the GPUs that first-fit decreasing needs when any valid layout may sit
  on any GPU (what partitionable devices allow at best; the arrival order of pods can need
  more: GEN241).

Waste is counted on the GPUs the layout needs: memory slices and compute slices no instance
holds, plus instances no service uses.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gen.fleet.plan import ClusterPlan, Plan, PoolPlan
from gen.fleet.roles import workloads
from gen.nvidia.gpus import GPU, MIGProfile
from gen.nvidia.mig import check_layout

__all__ = ["LayoutProposal", "PoolPlanProposal", "plan_fleet", "to_json", "valid_layouts"]

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class LayoutProposal:
    """A static layout (one per GPU index, or one for all GPUs) and what it costs."""

    per_gpu: tuple[Mapping[str, int], ...]
    """One layout per GPU index of a node (from index 0; later indices keep MIG off), or
    the one layout of every GPU."""
    uniform: bool
    """True: ``per_gpu[0]`` is applied to every GPU of the pool."""
    gpus_needed: int
    nodes_needed: int
    fits: bool
    """Whether the pool's nodes hold the demand with this layout."""
    unused_memory_slices: int
    unused_compute_slices: int
    idle_instances: Mapping[str, int]
    """Instances of the needed GPUs that no replica uses."""

    def to_json(self) -> dict[str, Any]:
        """The documented JSON form."""
        return {
            "layouts": [dict(sorted(c.items())) for c in self.per_gpu],
            "uniform": self.uniform,
            "gpus_needed": self.gpus_needed,
            "nodes_needed": self.nodes_needed,
            "fits": self.fits,
            "waste": {"memory_slices": self.unused_memory_slices,
                      "compute_slices": self.unused_compute_slices,
                      "idle_instances": dict(sorted(self.idle_instances.items()))},
        }


@dataclass(frozen=True)
class PoolPlanProposal:
    """The demand on one pool and the proposals for it."""

    cluster: str
    pool: PoolPlan
    demand: Mapping[str, int]
    unknown: tuple[str, ...]
    """Services whose class names no profile of the pool's GPU."""
    uniform: LayoutProposal | None
    per_index: LayoutProposal | None
    dynamic_gpus: int | None

    def to_json(self) -> dict[str, Any]:
        """The documented JSON form."""
        assert self.pool.gpu is not None
        static = [p.gpus_needed for p in (self.uniform, self.per_index) if p is not None]
        return {
            "cluster": self.cluster,
            "pool": self.pool.name,
            "gpu": self.pool.gpu.id,
            "nodes": self.pool.pool.nodes,
            "gpus_per_node": self.pool.pool.gpus_per_node,
            "mig": self.pool.pool.mig or ("static" if self.pool.mig_layout else None),
            "demand": dict(sorted(self.demand.items())),
            "unknown_profiles": list(self.unknown),
            "uniform": self.uniform.to_json() if self.uniform else None,
            "per_gpu_index": self.per_index.to_json() if self.per_index else None,
            "dynamic": {
                "gpus_needed": self.dynamic_gpus,
                "fewer_gpus_than_static": (self.dynamic_gpus is not None and bool(static)
                                           and self.dynamic_gpus < min(static)),
            },
        }


def _plain(profile: MIGProfile) -> bool:
    return "+" not in profile.name and "-" not in profile.name


def _profile_for(gpu: GPU, svc_class: Any) -> str | None:
    """The profile a MIG class asks for on ``gpu`` (by name, or the smallest by memory)."""
    from gen.k8s.quantity import parse_quantity

    match = svc_class.match
    if match.mig_profile is not None:
        return str(match.mig_profile) if gpu.mig_profile(match.mig_profile) else None
    if match.min_memory is None:
        return None
    need = parse_quantity(str(match.min_memory))
    fitting = [p for p in gpu.mig_profiles if _plain(p) and p.memory_mib * 2**20 >= need]
    # The smallest slice: fewest compute slices, then memory slices (as the driver's device
    # order, 1g before 2g, offers them to the allocator).
    return (min(fitting, key=lambda p: (p.compute_slices, p.size, p.memory_mib)).name
            if fitting else None)


def pool_demand(cluster: ClusterPlan, pool: PoolPlan) -> tuple[dict[str, int], list[str]]:
    """Profile → slices the pool's services ask for (autoscaling maximum), and the services
    whose class has no profile on the pool's GPU."""
    from gen.fleet.placement import class_admits

    demand: Counter[str] = Counter()
    unknown = []
    gpu = pool.gpu
    assert gpu is not None
    for svc in workloads(cluster):
        cls = svc.gpu_class
        if cls is None or cls.device_type != "mig" or svc.service.gpu is None:
            continue
        if all(p.name != pool.name for p in svc.pools):
            continue
        if cls.name in pool.refused_classes or not class_admits(cls, pool):
            continue  # the class takes none of this pool's GPUs (another product): no demand
        profile = _profile_for(gpu, cls)
        if profile is None:
            unknown.append(svc.service.name)
            continue
        demand[profile] += svc.service.gpu.count * svc.service.max_replicas
    return dict(demand), unknown


def valid_layouts(gpu: GPU, profiles: Sequence[str]) -> list[dict[str, int]]:
    """Every non-empty valid layout of ``gpu`` made of ``profiles`` (placement-checked)."""
    known = [gpu.mig_profile(p) for p in profiles]
    kinds = [p for p in known if p is not None]
    out: list[dict[str, int]] = []

    def walk(i: int, counts: dict[str, int], compute: int, units: int) -> None:
        if i == len(kinds):
            if counts and check_layout(gpu, counts).valid:
                out.append(dict(counts))
            return
        profile = kinds[i]
        walk(i + 1, counts, compute, units)
        for n in range(1, profile.max_count + 1):
            if (compute + n * profile.compute_slices > gpu.mig_compute_slices
                    or units + n * profile.size > gpu.mig_units):
                break
            counts[profile.name] = n
            walk(i + 1, counts, compute + n * profile.compute_slices, units + n * profile.size)
        counts.pop(profile.name, None)

    walk(0, {}, 0, 0)
    return out


def _waste(gpu: GPU, layouts: Sequence[Mapping[str, int]], demand: Mapping[str, int]
           ) -> tuple[int, int, dict[str, int]]:
    memory = compute = 0
    held: Counter[str] = Counter()
    for layout in layouts:
        used_units = sum(_size(gpu, p)[0] * n for p, n in layout.items())
        used_compute = sum(_size(gpu, p)[1] * n for p, n in layout.items())
        memory += gpu.mig_units - used_units
        compute += gpu.mig_compute_slices - used_compute
        held.update(layout)
    idle = {p: held[p] - demand.get(p, 0) for p in held if held[p] > demand.get(p, 0)}
    return memory, compute, idle


def _uniform(pool: PoolPlan, demand: Mapping[str, int]) -> LayoutProposal | None:
    gpu = pool.gpu
    assert gpu is not None
    best: tuple[tuple[int, int, int, str], dict[str, int], int] | None = None
    for layout in valid_layouts(gpu, sorted(demand)):
        if any(layout.get(p, 0) == 0 for p in demand):
            continue
        gpus = max(math.ceil(n / layout[p]) for p, n in demand.items())
        memory, compute, _ = _waste(gpu, [layout] * gpus, demand)
        key = (gpus, memory, compute, repr(sorted(layout.items())))
        if best is None or key < best[0]:
            best = (key, layout, gpus)
    if best is None:
        return None
    _, layout, gpus = best
    return _proposal(pool, [layout], gpus, demand, uniform=True)


def _proposal(pool: PoolPlan, per_gpu: Sequence[Mapping[str, int]], gpus: int,
              demand: Mapping[str, int], uniform: bool) -> LayoutProposal:
    gpu = pool.gpu
    assert gpu is not None
    if uniform:
        used = [per_gpu[0]] * gpus
        nodes = math.ceil(gpus / pool.pool.gpus_per_node)
    else:
        nodes = gpus // len(per_gpu)
        used = list(per_gpu) * nodes
    memory, compute, idle = _waste(gpu, used, demand)
    return LayoutProposal(tuple(dict(c) for c in per_gpu), uniform, len(used), nodes,
                          nodes <= pool.pool.nodes, memory, compute, idle)


def _size(gpu: GPU, profile: str) -> tuple[int, int]:
    p = gpu.mig_profile(profile)
    assert p is not None
    return p.size, p.compute_slices


_MAX_NODES_TRIED = 1000


def _fill_node(gpu: GPU, layouts: Sequence[Mapping[str, int]], share: Mapping[str, int],
               per_node: int) -> tuple[list[Mapping[str, int]], dict[str, int]]:
    """GPU by GPU, the layout that serves the most memory slices of what is left."""
    left = dict(share)
    chosen: list[Mapping[str, int]] = []

    def served(layout: Mapping[str, int]) -> tuple[int, int, str]:
        units = sum(min(n, left.get(p, 0)) * _size(gpu, p)[0] for p, n in layout.items())
        over = sum(max(0, n - left.get(p, 0)) * _size(gpu, p)[0] for p, n in layout.items())
        return units, -over, repr(sorted(layout.items()))

    for _ in range(per_node):
        if not any(left.values()):
            break
        best = max(layouts, key=served)
        if served(best)[0] == 0:
            break
        chosen.append(best)
        for p, n in best.items():
            left[p] = max(0, left.get(p, 0) - n)
    return chosen, left


def _per_index(pool: PoolPlan, demand: Mapping[str, int]) -> LayoutProposal | None:
    """The fewest nodes N whose GPUs, each index with its own layout (the same on every
    node), hold the demand: one node is filled GPU by GPU for ceil(demand / N)."""
    gpu = pool.gpu
    assert gpu is not None
    layouts = valid_layouts(gpu, sorted(demand))
    if not layouts:
        return None
    limit = min(max(pool.pool.nodes, 1), _MAX_NODES_TRIED)
    for nodes in range(1, limit + 1):
        share = {p: math.ceil(n / nodes) for p, n in demand.items()}
        chosen, left = _fill_node(gpu, layouts, share, pool.pool.gpus_per_node)
        if chosen and not any(left.values()):
            return _proposal(pool, chosen, nodes * len(chosen), demand, uniform=False)
    return None


def dynamic_gpus(gpu: GPU, demand: Mapping[str, int]) -> int | None:
    """GPUs first-fit decreasing needs when each GPU may hold any valid layout."""
    slices = sorted((p for p, n in demand.items() for _ in range(n)),
                    key=lambda p: (-_size(gpu, p)[0], -_size(gpu, p)[1], p))
    bins: list[dict[str, int]] = []
    for profile in slices:
        for layout in bins:
            trial = {**layout, profile: layout.get(profile, 0) + 1}
            if check_layout(gpu, trial).valid:
                layout[profile] = trial[profile]
                break
        else:
            if not check_layout(gpu, {profile: 1}).valid:
                return None
            bins.append({profile: 1})
    return len(bins)


def plan_pool(cluster: ClusterPlan, pool: PoolPlan) -> PoolPlanProposal | None:
    """The proposals for one pool, or None when its GPU cannot do MIG or nothing is asked."""
    gpu = pool.gpu
    if gpu is None or not gpu.mig_capable or pool.pool.platform != "nvidia":
        return None
    if pool.mig_layout is None and pool.pool.mig != "dynamic":
        return None  # whole GPUs: MIG classes do not land here
    demand, unknown = pool_demand(cluster, pool)
    if not demand and not unknown:
        return None
    return PoolPlanProposal(
        cluster.name, pool, demand, tuple(unknown),
        _uniform(pool, demand) if demand else None,
        _per_index(pool, demand) if demand else None,
        dynamic_gpus(gpu, demand) if demand else None,
    )


def plan_fleet(plan: Plan, clusters: Sequence[str] = ()) -> list[PoolPlanProposal]:
    """Proposals for every MIG-capable pool with MIG demand (in ``clusters``, default all)."""
    out = []
    for cluster in plan.clusters:
        if clusters and cluster.name not in clusters:
            continue
        for pool in cluster.pools:
            proposal = plan_pool(cluster, pool)
            if proposal is not None:
                out.append(proposal)
    return out


def to_json(proposals: Sequence[PoolPlanProposal]) -> dict[str, Any]:
    """``gen plan --json``."""
    return {"schema_version": SCHEMA_VERSION, "pools": [p.to_json() for p in proposals]}


def layout_documents(proposal: PoolPlanProposal) -> list[dict[str, Any]]:
    """The proposals as ``MIGLayout`` profiles, ready to commit."""
    assert proposal.pool.gpu is not None
    docs: list[dict[str, Any]] = []
    if proposal.uniform is not None:
        docs.append({"kind": "MIGLayout", "name": f"{proposal.pool.name}-planned",
                     "gpu": proposal.pool.gpu.id,
                     "profiles": dict(sorted(proposal.uniform.per_gpu[0].items()))})
    if proposal.per_index is not None and proposal.per_index.per_gpu != (
            proposal.uniform.per_gpu if proposal.uniform else None):
        docs.append({"kind": "MIGLayout", "name": f"{proposal.pool.name}-planned-per-gpu",
                     "gpu": proposal.pool.gpu.id,
                     "per_gpu": [{"gpus": [i], "profiles": dict(sorted(c.items()))}
                                 for i, c in enumerate(proposal.per_index.per_gpu)]})
    return docs
