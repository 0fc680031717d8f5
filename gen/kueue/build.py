"""Kueue objects of a cluster with ``quota_engine: kueue``, and the decisions others read.

- a ResourceFlavor per NVIDIA pool (its node labels and the tolerations of its taints), so
  that Kueue admits a pod to a pool its quota covers;
- a ClusterQueue per namespace with quotas (:mod:`gen.kueue.queues`): one resource group
  whose ``coveredResources`` are the quotas' resources, a flavor per pool they come from,
  its ``cohortName``, borrowing and lending limits and ``preemption``;
- a LocalQueue ``gpu`` in the namespace, and a WorkloadPriorityClass per distinct
  ``priority_class``.

These replace the namespaces' ResourceQuotas (the DRA builder renders none on a Kueue
cluster): Kueue admits a pod only once its queue has the quota, where a ResourceQuota would
refuse the claim of a full namespace, so a rollout waits instead of failing.

:func:`decide` records, per service, the LocalQueue and priority class of its namespace
(``ClusterPlan.local_queues``, ``workload_priorities``; the builders of workloads read them
through :func:`gen.fleet.manifests.queue_labels`) and the Kueue chart's values
(``ClusterPlan.kueue_values``; the GitOps builder installs the chart with them).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from gen.fleet.manifests import labels, manifest, tolerations
from gen.fleet.plan import Built, ClusterPlan, ManifestSpec
from gen.kueue import config
from gen.kueue.queues import LOCAL_QUEUE, ClusterQueuePlan, kueue_enabled, queues
from gen.models.cluster import GPUQuota

__all__ = ["build", "decide", "flavor_pools_of", "resource_groups"]


def decide(plan: ClusterPlan) -> ClusterPlan:
    """The cluster plan with each service's LocalQueue and priority class, and the Kueue
    chart's values, recorded (nothing on a cluster whose quotas are ResourceQuotas)."""
    if not kueue_enabled(plan):
        return plan
    first: dict[str, GPUQuota] = {}
    for quota in plan.cluster.quotas:
        first.setdefault(quota.namespace, quota)
    local = {s.service.name: LOCAL_QUEUE for s in plan.services
             if s.service.namespace in first}
    priorities = {}
    for svc in plan.services:
        found = first.get(svc.service.namespace)
        if found is not None and found.priority_class is not None:
            priorities[svc.service.name] = found.priority_class.name
    return dataclasses.replace(plan, local_queues=local, workload_priorities=priorities,
                               kueue_values=config.values(plan))


def flavor_pools_of(plan: ClusterPlan) -> list[str]:
    """The pools that are ResourceFlavors: every NVIDIA pool with a catalog GPU."""
    return [p.name for p in plan.pools if p.pool.platform == "nvidia" and p.gpu is not None]


def resource_groups(queue: ClusterQueuePlan) -> list[dict[str, Any]]:
    """The ClusterQueue's ``resourceGroups``: one group, every flavor listing every covered
    resource (a CEL rule of the CRD), 0 where the flavor has none of it."""
    flavors = []
    for fq in queue.flavors:
        resources = []
        for resource in queue.resources:
            entry: dict[str, Any] = {"name": resource, "nominalQuota": str(fq.nominal(resource))}
            part = fq.parts.get(resource)
            if part is not None and part.borrowing_limit is not None:
                entry["borrowingLimit"] = str(part.borrowing_limit)
            if part is not None and part.lending_limit is not None:
                entry["lendingLimit"] = str(part.lending_limit)
            resources.append(entry)
        flavors.append({"name": fq.flavor, "resources": resources})
    if not flavors:
        return []
    return [{"coveredResources": list(queue.resources), "flavors": flavors}]


def _cluster_queue(plan: ClusterPlan, queue: ClusterQueuePlan) -> ManifestSpec:
    quota = queue.quotas[0][1]
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": queue.namespace}},
        "resourceGroups": resource_groups(queue),
    }
    if quota.cohort is not None:
        spec["cohortName"] = quota.cohort
        spec["preemption"] = {"reclaimWithinCohort": quota.preemption,
                              "withinClusterQueue": "LowerPriority"
                              if quota.priority_class is not None else "Never"}
    return manifest(
        "kueue/clusterqueue.yaml.j2", plan.located.at("quotas", queue.quotas[0][0]),
        stage="gpu", name=queue.name, labels=labels(queue.name, "gpu-queue"), spec=spec)


def build(plan: ClusterPlan) -> Built:
    """The Kueue objects of the cluster (none unless ``quota_engine`` is ``kueue``)."""
    if not kueue_enabled(plan):
        return Built()
    specs: list[ManifestSpec] = []
    by_name = {p.name: p for p in plan.pools}
    for name in flavor_pools_of(plan):
        pool = by_name[name]
        spec: dict[str, Any] = {}
        if pool.node_labels:
            spec["nodeLabels"] = dict(sorted(pool.node_labels.items()))
        found = tolerations([pool])
        if found:
            spec["tolerations"] = found
        specs.append(manifest(
            "kueue/resourceflavor.yaml.j2", pool.located_at, stage="gpu",
            name=name, labels=labels(name, "gpu-flavor"), spec=spec))
    priorities: dict[str, tuple[int, int]] = {}
    for index, quota in enumerate(plan.cluster.quotas):
        if quota.priority_class is not None:
            priorities.setdefault(quota.priority_class.name,
                                  (index, quota.priority_class.value))
    for name, (index, value) in sorted(priorities.items()):
        specs.append(manifest(
            "kueue/workloadpriorityclass.yaml.j2",
            plan.located.at("quotas", index, "priority_class"), stage="gpu",
            name=name, labels=labels(name, "gpu-priority"), value=value))
    for queue in queues(plan):
        if not queue.flavors:
            continue  # no pool has its devices: GEN451 says so, nothing to admit to
        specs.append(_cluster_queue(plan, queue))
        specs.append(manifest(
            "kueue/localqueue.yaml.j2", plan.located.at("quotas", queue.quotas[0][0]),
            stage="gpu", name=LOCAL_QUEUE, namespace=queue.namespace,
            labels=labels(LOCAL_QUEUE, "gpu-queue"), cluster_queue=queue.name))
    return Built(specs)
