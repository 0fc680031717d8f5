"""What ``gen explain`` and ``gen plan`` say of Kueue: which queue admits a service and how
much room it leaves, and each queue's quota against the demand of its namespace.

Both read the queues as the builder renders them (:mod:`gen.kueue.queues`) and the room a
queue has as the rules count it (:func:`gen.kueue.checks.admissible`: nominal quota plus
what may be borrowed, on the pools the service can run on).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gen.fleet.placement import candidates
from gen.fleet.plan import ClusterPlan, ServicePlan
from gen.kueue.checks import admissible
from gen.kueue.queues import LOCAL_QUEUE, ClusterQueuePlan, queues, quota_resource

__all__ = [
    "QueueAdmission", "QueueQuota", "admission", "admission_lines", "queue_quotas",
    "quota_lines",
]


@dataclass(frozen=True)
class QueueAdmission:
    """How a service's pods are admitted (``gen explain``)."""

    service: str
    local_queue: str
    cluster_queue: str
    cohort: str | None
    resource: str
    covered: bool
    """Whether the ClusterQueue covers the resource (else it is admitted uncounted)."""
    per_replica: int
    replicas: int
    """Replicas at the least (``replicas``, or ``autoscaling.min_replicas``)."""
    nominal: int
    """The queue's own quota of the resource on the pools the service can run on."""
    room: int
    """What it can admit there at most, borrowing included."""

    @property
    def admissible_replicas(self) -> int:
        """Replicas the room admits (each whole on one pool: counted as the rules count)."""
        return self.room // self.per_replica if self.per_replica else 0

    @property
    def headroom(self) -> int:
        """Devices left once the least replicas are admitted (negative: short)."""
        return self.room - self.per_replica * self.replicas

    def to_json(self) -> dict[str, Any]:
        """The ``queue`` entry of a service in ``gen explain --json``."""
        return {
            "local_queue": self.local_queue, "cluster_queue": self.cluster_queue,
            "cohort": self.cohort, "resource": self.resource, "covered": self.covered,
            "per_replica": self.per_replica, "replicas": self.replicas,
            "nominal": self.nominal, "room": self.room,
            "admissible_replicas": self.admissible_replicas, "headroom": self.headroom,
        }


def _queue_of(cluster: ClusterPlan, namespace: str) -> ClusterQueuePlan | None:
    return next((q for q in queues(cluster) if q.namespace == namespace), None)


def admission(cluster: ClusterPlan, svc: ServicePlan) -> QueueAdmission | None:
    """The queue that admits ``svc``; None when the cluster is not on Kueue, the service
    needs no GPU, or its namespace has no LocalQueue (``gen lint`` says so, GEN452)."""
    service, gpu = svc.service, svc.service.gpu
    if gpu is None or svc.gpu_class is None or service.name not in cluster.local_queues:
        return None
    queue = _queue_of(cluster, service.namespace)
    if queue is None:
        return None
    resource = quota_resource(cluster, svc.gpu_class.name)
    pools = {c.pool.name for c in candidates(svc)}
    room = admissible(cluster, queue, resource, pools)
    per_pod = gpu.count
    replicas = service.autoscaling.min_replicas if service.autoscaling else service.replicas
    nominal = sum(f.nominal(resource) for f in queue.flavors if f.flavor in pools)
    return QueueAdmission(
        service.name, cluster.local_queues[service.name], queue.name, queue.cohort, resource,
        resource in queue.resources, per_pod, replicas, nominal,
        sum(r // per_pod * per_pod for r in room.values()))


def admission_lines(found: QueueAdmission) -> list[str]:
    """The ``gen explain`` lines of a service's queue."""
    cohort = f", cohort {found.cohort}" if found.cohort else ""
    lines = [f"  queue: LocalQueue {found.local_queue} -> ClusterQueue "
             f"{found.cluster_queue}{cohort}"]
    if not found.covered:
        lines.append(f"    {found.resource} is not covered: admitted without counting "
                     "(GEN456)")
        return lines
    lines.append(
        f"    {found.per_replica} × {found.resource} a replica, {found.replicas} replica(s): "
        f"nominal {found.nominal}, at most {found.room} with borrowing "
        f"({found.admissible_replicas} replica(s)); headroom {found.headroom}")
    return lines


@dataclass(frozen=True)
class QueueQuota:
    """One resource of a ClusterQueue against its namespace's demand (``gen plan``)."""

    cluster: str
    cluster_queue: str
    namespace: str
    cohort: str | None
    resource: str
    nominal: int
    lendable: int
    demand_min: int
    """Devices of the resource the namespace's services take at their least replicas."""
    demand_max: int
    """… at their most (``autoscaling.max_replicas``)."""

    def to_json(self) -> dict[str, Any]:
        """One entry of ``quotas`` in ``gen plan --json``."""
        return {
            "cluster": self.cluster, "cluster_queue": self.cluster_queue,
            "namespace": self.namespace, "cohort": self.cohort, "resource": self.resource,
            "nominal": self.nominal, "lendable": self.lendable,
            "demand_min": self.demand_min, "demand_max": self.demand_max,
        }


def queue_quotas(cluster: ClusterPlan) -> list[QueueQuota]:
    """Every ClusterQueue resource of the cluster with its namespace's demand."""
    out = []
    for queue in queues(cluster):
        for resource in queue.resources:
            low = high = 0
            for svc in cluster.services:
                gpu = svc.service.gpu
                if (svc.service.namespace != queue.namespace or gpu is None
                        or svc.gpu_class is None
                        or quota_resource(cluster, svc.gpu_class.name) != resource):
                    continue
                auto = svc.service.autoscaling
                low += gpu.count * (auto.min_replicas if auto else svc.service.replicas)
                high += gpu.count * (auto.max_replicas if auto else svc.service.replicas)
            out.append(QueueQuota(
                cluster.name, queue.name, queue.namespace, queue.cohort, resource,
                sum(f.nominal(resource) for f in queue.flavors),
                sum(queue.lendable(f.flavor, resource) for f in queue.flavors), low, high))
    return out


def quota_lines(quotas: list[QueueQuota]) -> list[str]:
    """The ``gen plan`` lines of the Kueue quotas."""
    lines = []
    for q in quotas:
        cohort = f", cohort {q.cohort}" if q.cohort else ""
        lines.append(f"cluster {q.cluster}, ClusterQueue {q.cluster_queue} (namespace "
                     f"{q.namespace}, LocalQueue {LOCAL_QUEUE}{cohort})")
        lines.append(f"  {q.resource}: nominal {q.nominal}, lends up to {q.lendable}; "
                     f"demand {q.demand_min} (autoscaling max {q.demand_max}), "
                     f"{q.nominal - q.demand_min} left at the least")
    return lines
