"""The Kueue queues of a cluster, as data: what the builder renders and the checks read.

On a cluster with ``quota_engine: kueue`` every namespace with ``quotas`` gets one
ClusterQueue (``gpu-<namespace>``, admitting only that namespace) and one LocalQueue
(:data:`LOCAL_QUEUE` in the namespace). The quotas of the namespace are its
``coveredResources``, in the unit the cluster allocates in:

- device-plugin clusters: the extended resource the pods request (``nvidia.com/gpu``, or
  ``nvidia.com/mig-<profile>`` under the mixed MIG strategy);
- DRA clusters: one logical resource per DeviceClass (:func:`dra_resource`), which Kueue's
  Configuration maps to the class (``resources.deviceClassMappings``): Kueue counts the
  devices each ResourceClaimTemplate requests of the class (kubernetes-sigs/kueue
  pkg/dra/claims.go @v0.19.2, ``countDevicesPerClass``).

Each pool whose devices a quota's class can take (or the pools its ``node_pools`` names) is
a ResourceFlavor; the quota's devices are split over them in order, each pool's share up to
its devices of the class, the rest on the last. A pod is admitted to one flavor, so what
one replica can get is its flavor's share plus what it may borrow there.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from gen.fleet.manifests import extended_resource_name
from gen.fleet.placement import Candidate, class_candidates
from gen.fleet.plan import ClusterPlan, PoolPlan
from gen.models.cluster import GPUQuota

__all__ = [
    "LOCAL_QUEUE",
    "ClusterQueuePlan",
    "FlavorQuota",
    "QuotaPart",
    "cluster_queue_name",
    "dra_resource",
    "flavor_pools",
    "kueue_enabled",
    "pool_devices",
    "queues",
    "quota_resource",
]

LOCAL_QUEUE = "gpu"
"""The LocalQueue of every namespace with a quota (the ``kueue.x-k8s.io/queue-name`` value)."""
DRA_RESOURCE_PREFIX = "deviceclass.gen.dev/"
"""Prefix of the logical resource Kueue counts a DeviceClass's devices as."""


def kueue_enabled(plan: ClusterPlan) -> bool:
    """Whether the cluster's quotas are Kueue queues."""
    return plan.cluster.quota_engine == "kueue"


def cluster_queue_name(namespace: str) -> str:
    """The ClusterQueue of a namespace's quotas."""
    return f"gpu-{namespace}"


def dra_resource(class_name: str) -> str:
    """The logical resource of a DeviceClass (a Kueue ``deviceClassMappings`` name, which must
    be a qualified name: a DNS-label-like name of at most 63 characters after the prefix)."""
    if len(class_name) <= 63:
        return DRA_RESOURCE_PREFIX + class_name
    digest = hashlib.sha256(class_name.encode()).hexdigest()[:8]
    return f"{DRA_RESOURCE_PREFIX}{class_name[:54].rstrip('.-')}-{digest}"


def quota_resource(plan: ClusterPlan, class_name: str) -> str:
    """The resource a quota of the class counts, in the cluster's allocation unit."""
    if plan.dra_api_version is not None:
        return dra_resource(class_name)
    gpu_class = plan.gpu_classes[class_name].value
    profile = gpu_class.match.mig_profile if gpu_class.device_type == "mig" else None
    return extended_resource_name(profile, "single" if plan.mig_strategy == "single"
                                  else "mixed")


def pool_devices(cand: Candidate) -> int:
    """How many devices of the candidate's kind its pool has: GPUs, or MIG slices of the
    profile (the static layout's, or as many as fit on every GPU for dynamic MIG)."""
    pool = cand.pool
    if not cand.is_mig:
        return pool.total_gpus
    if pool.pool.mig == "dynamic":
        profile = pool.gpu.mig_profile(cand.mig_profile) if pool.gpu is not None else None
        return pool.total_gpus * (profile.max_count if profile is not None else 0)
    per_node = sum(len(indices) * sum(1 for p in check.placements
                                      if p.profile == cand.mig_profile)
                   for indices, check in pool.mig_checks)
    return per_node * pool.pool.nodes


def flavor_pools(plan: ClusterPlan, quota: GPUQuota) -> list[tuple[PoolPlan, int]]:
    """The pools a quota's devices come from, with their devices of its class: those of
    ``node_pools`` that have any (in that order), else every pool that has any."""
    located = plan.gpu_classes.get(quota.gpu_class)
    if located is None:
        return []
    found = {c.pool.name: pool_devices(c)
             for c in class_candidates(located.value, plan.pools)}
    names = quota.node_pools or tuple(p.name for p in plan.pools)
    by_name = {p.name: p for p in plan.pools}
    return [(by_name[n], found[n]) for n in names if n in found and found[n] > 0]


@dataclass(frozen=True)
class QuotaPart:
    """One quota entry's share on one flavor."""

    resource: str
    nominal: int
    borrowing_limit: int | None
    lending_limit: int | None


@dataclass(frozen=True)
class FlavorQuota:
    """One flavor of a ClusterQueue: its resources' quotas (summed over the entries)."""

    flavor: str
    parts: dict[str, QuotaPart] = field(default_factory=dict)

    def nominal(self, resource: str) -> int:
        """The flavor's nominal quota of ``resource`` (0 when it has none)."""
        part = self.parts.get(resource)
        return part.nominal if part is not None else 0


@dataclass(frozen=True)
class ClusterQueuePlan:
    """One namespace's ClusterQueue."""

    name: str
    namespace: str
    quotas: tuple[tuple[int, GPUQuota], ...]
    """The namespace's quota entries, with their index in the cluster's ``quotas``."""
    resources: tuple[str, ...]
    flavors: tuple[FlavorQuota, ...]

    @property
    def cohort(self) -> str | None:
        """The cohort (every entry of the namespace names the same one)."""
        return self.quotas[0][1].cohort

    def lendable(self, flavor: str, resource: str) -> int:
        """What the queue lends the cohort of ``resource`` on ``flavor`` at most."""
        for fq in self.flavors:
            part = fq.parts.get(resource)
            if fq.flavor == flavor and part is not None:
                return part.nominal if part.lending_limit is None else part.lending_limit
        return 0


def _split(total: int, capacities: list[int]) -> list[int]:
    """``total`` over the flavors in order, each up to its capacity, the rest on the last."""
    shares, left = [], total
    for cap in capacities:
        share = min(cap, left)
        shares.append(share)
        left -= share
    if shares and left:
        shares[-1] += left
    return shares


def queues(plan: ClusterPlan) -> list[ClusterQueuePlan]:
    """Every namespace's ClusterQueue, by namespace (none unless the engine is Kueue)."""
    if not kueue_enabled(plan):
        return []
    by_ns: dict[str, list[tuple[int, GPUQuota]]] = {}
    for index, quota in enumerate(plan.cluster.quotas):
        by_ns.setdefault(quota.namespace, []).append((index, quota))
    out = []
    for namespace, entries in sorted(by_ns.items()):
        flavors: dict[str, dict[str, QuotaPart]] = {}
        resources: list[str] = []
        for _, quota in entries:
            if quota.gpu_class not in plan.gpu_classes:
                continue
            resource = quota_resource(plan, quota.gpu_class)
            if resource not in resources:
                resources.append(resource)
            pools = flavor_pools(plan, quota)
            nominal = _split(quota.devices, [cap for _, cap in pools])
            reserved = _split(quota.devices - quota.lending_limit, nominal) \
                if quota.lending_limit is not None else None
            for i, ((pool, _), share) in enumerate(zip(pools, nominal, strict=True)):
                lending = share - reserved[i] if reserved is not None else None
                old = flavors.setdefault(pool.name, {}).get(resource)
                if old is not None:
                    share += old.nominal
                    if lending is not None and old.lending_limit is not None:
                        lending += old.lending_limit
                    elif old.lending_limit is None:
                        lending = None
                flavors[pool.name][resource] = QuotaPart(
                    resource, share, quota.borrowing_limit, lending)
        order = list(flavors)  # the entries' pools, in the order they name them
        out.append(ClusterQueuePlan(
            cluster_queue_name(namespace), namespace, tuple(entries), tuple(resources),
            tuple(FlavorQuota(name, flavors[name]) for name in order)))
    return out
