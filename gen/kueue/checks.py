"""The Kueue rules (GEN450–GEN457): what a cluster with ``quota_engine: kueue`` would leave
waiting forever, or let through uncounted. Each finding is located at the value to change."""

from __future__ import annotations

import dataclasses

from gen.errors import Finding, Severity
from gen.fleet.placement import candidates, class_candidates
from gen.fleet.plan import ClusterPlan, Plan, ServicePlan
from gen.kueue.config import FEATURE_GATES, device_classes
from gen.kueue.queues import (
    LOCAL_QUEUE,
    ClusterQueuePlan,
    flavor_pools,
    kueue_enabled,
    queues,
    quota_resource,
)
from gen.rules import finding

__all__ = ["admissible", "check_clusters"]

V1 = "resource.k8s.io/v1"


def check_clusters(plan: Plan) -> list[Finding]:
    """The Kueue rules, on each cluster with ``quota_engine: kueue`` alone."""
    findings: list[Finding] = []
    for cluster in plan.clusters:
        if not kueue_enabled(cluster):
            continue
        findings += _versions(cluster)
        findings += _quota_pools(cluster)
        by_ns = {q.namespace: q for q in queues(cluster)}
        for svc in cluster.services:
            if svc.service.gpu is None or svc.gpu_class is None or not any(
                    p.pool.platform == "nvidia" for p in svc.pools):
                continue  # Apple VM devices are no quota's (Kueue admits them uncounted)
            findings += _service(cluster, svc, by_ns)
    return findings


def _versions(cluster: ClusterPlan) -> list[Finding]:
    """GEN455: a Kubernetes or Kueue version without what gen's Kueue objects use."""
    found = []
    if cluster.cluster.allocation == "dra" and cluster.dra_api_version != V1:
        found.append(finding(
            "GEN455",
            f"Kueue v0.19 counts DRA claims through resource.k8s.io/v1 (pkg/dra/claims.go), "
            f"which Kubernetes {cluster.kubernetes_version} does not serve "
            f"({cluster.dra_api_version or 'no DRA API'}): every claim of the cluster's "
            "workloads would stay unadmitted",
            cluster.located.at("kubernetes_version"), key_path="kubernetes_version",
            hint="run Kueue on Kubernetes 1.34 or later (resource.k8s.io/v1), or keep "
                 "quota_engine: resourcequota on this cluster",
            cluster=cluster.name))
    have = _minor(cluster.cluster.kueue.version)
    missing = sorted(g for g, since in FEATURE_GATES.items()
                     if have < _minor(since)
                     and (g != "KueueDRAIntegration" or cluster.dra_api_version is not None))
    if missing:
        found.append(finding(
            "GEN455",
            f"Kueue {cluster.cluster.kueue.version} does not have the feature gate(s) "
            f"{', '.join(missing)} that gen's Configuration turns on "
            "(quotaCheckStrategy IgnoreUndeclared; DRA device-class mappings): its manager "
            "refuses to start on an unknown gate",
            cluster.located.at("kueue", "version"), key_path="kueue.version",
            hint="use Kueue v0.18 or later (gen's pin: leave kueue.version out)",
            cluster=cluster.name))
    return found


def _minor(version: str) -> tuple[int, int]:
    """(major, minor) of ``v0.19.2``, ``0.19.2`` or ``0.19``."""
    parts = version.removeprefix("v").split(".")
    return int(parts[0]), int(parts[1])


def _quota_pools(cluster: ClusterPlan) -> list[Finding]:
    """GEN451: a quota whose flavors match no pool with devices of its class."""
    found = []
    pools = {p.name: p for p in cluster.pools}
    for index, quota in enumerate(cluster.cluster.quotas):
        located = cluster.gpu_classes.get(quota.gpu_class)
        if located is None:
            continue  # an unknown class is reported where the reference is resolved
        for i, name in enumerate(quota.node_pools):
            pool = pools.get(name)
            has = pool is not None and bool(class_candidates(located.value, [pool]))
            if not has:
                why = (f"the cluster has no pool {name!r} (pools: "
                       f"{', '.join(sorted(pools))})" if pool is None else
                       f"pool {name!r} has no device of class {quota.gpu_class!r}")
                found.append(finding(
                    "GEN451",
                    f"quota of namespace {quota.namespace!r} names the flavor {name!r}, "
                    f"but {why}: Kueue would admit its pods to nodes that cannot run them, "
                    "or to none",
                    cluster.located.at("quotas", index, "node_pools", i),
                    key_path=f"quotas[{index}].node_pools[{i}]",
                    hint="name a pool whose GPUs the class selects, or leave node_pools out",
                    cluster=cluster.name))
        served = any(s.gpu_class is not None and s.gpu_class.name == quota.gpu_class
                     for s in cluster.services)
        # A class some service claims: the rules on its claims (GEN204, GEN304) say why no
        # device matches it; the queue follows.
        if not quota.node_pools and not served and not flavor_pools(cluster, quota):
            found.append(finding(
                "GEN451",
                f"quota of namespace {quota.namespace!r}: no pool of the cluster has devices "
                f"of class {quota.gpu_class!r}, so its ClusterQueue has no ResourceFlavor "
                "and admits nothing",
                cluster.located.at("quotas", index, "gpu_class"),
                key_path=f"quotas[{index}].gpu_class",
                hint="count a class whose devices a pool has", cluster=cluster.name))
    return found


def admissible(cluster: ClusterPlan, queue: ClusterQueuePlan, resource: str,
               flavors: set[str]) -> dict[str, int]:
    """The most of ``resource`` the queue can ever admit on each of ``flavors`` (its own and
    those it may borrow): its nominal quota there plus its borrowing limit, or, without a
    limit, what the other queues of its cohort lend there (an upper bound: they may be
    using it)."""
    others = [q for q in queues(cluster)
              if queue.cohort is not None and q.cohort == queue.cohort and q.name != queue.name]
    out = {}
    for fq in queue.flavors:
        if fq.flavor not in flavors:
            continue
        part = fq.parts.get(resource)
        nominal = fq.nominal(resource)
        if queue.cohort is None:
            borrow = 0
        elif part is not None and part.borrowing_limit is not None:
            borrow = min(part.borrowing_limit, sum(o.lendable(fq.flavor, resource)
                                                   for o in others))
        else:
            borrow = sum(o.lendable(fq.flavor, resource) for o in others)
        out[fq.flavor] = nominal + borrow
    return out


def _service(cluster: ClusterPlan, svc: ServicePlan,
             by_ns: dict[str, ClusterQueuePlan]) -> list[Finding]:
    service, gpu = svc.service, svc.service.gpu
    assert gpu is not None and svc.gpu_class is not None
    ns = service.namespace
    queue = by_ns.get(ns)
    name = service.name
    if queue is None:
        return [finding(
            "GEN452",
            f"service {name!r} runs in namespace {ns!r}, which has no quota and so no "
            "LocalQueue: Kueue does not manage its pods, which take GPUs outside every "
            "queue's quota",
            svc.located.at("namespace"), key_path="namespace",
            hint=f"add a quota for namespace {ns!r} to the cluster's quotas (its LocalQueue "
                 f"'{LOCAL_QUEUE}'), or move the service to a namespace with one",
            service=name, cluster=cluster.name)]
    if gpu.alternatives or gpu.allocation_mode == "All":
        key = ("gpu", "alternatives") if gpu.alternatives else ("gpu", "allocation_mode")
        if cluster.dra_api_version is not None:
            what = ("FirstAvailable device selection" if gpu.alternatives
                    else "AllocationMode 'All'")
            return [finding(
                "GEN454",
                f"service {name!r}: Kueue cannot count a claim with {what} "
                "(kubernetes-sigs/kueue pkg/dra/claims.go @v0.19.2: \"... is not "
                "supported\"): its workload is inadmissible and its pods never start",
                svc.located.at(*key), key_path=".".join(key),
                hint="request an exact count of one class on a Kueue cluster",
                service=name, cluster=cluster.name)]
    class_name = svc.gpu_class.name
    resource = quota_resource(cluster, class_name)
    if resource not in queue.resources:
        if cluster.dra_api_version is not None and class_name not in device_classes(cluster):
            return [finding(
                "GEN453",
                f"service {name!r} claims devices of class {class_name!r}, which no quota "
                "counts, so Kueue's deviceClassMappings do not map it: Kueue rejects the "
                f"workload (\"DeviceClass {class_name} is not mapped in DRA "
                "configuration\", pkg/dra/claims.go @v0.19.2) and its pods never start",
                svc.located.at("gpu", "gpu_class"), key_path="gpu.gpu_class",
                hint=f"add a quota of class {class_name!r} for namespace {ns!r}",
                service=name, cluster=cluster.name)]
        return [finding(
            "GEN456",
            f"service {name!r} requests {resource}, which the ClusterQueue of namespace "
            f"{ns!r} does not cover: with quotaCheckStrategy IgnoreUndeclared Kueue admits "
            "it without counting its GPUs",
            svc.located.at("gpu", "gpu_class"), key_path="gpu.gpu_class",
            hint=f"add a quota of class {class_name!r} for namespace {ns!r}",
            service=name, cluster=cluster.name)]
    return _admission(cluster, svc, queue, resource)


def _admission(cluster: ClusterPlan, svc: ServicePlan, queue: ClusterQueuePlan,
               resource: str) -> list[Finding]:
    """GEN450 (a replica never fits) and GEN457 (replicas that never all fit)."""
    service, gpu = svc.service, svc.service.gpu
    assert gpu is not None
    per_pod = gpu.count
    pools = {c.pool.name for c in candidates(svc)}
    room = admissible(cluster, queue, resource, pools)
    where = cluster.located.at("quotas", queue.quotas[0][0], "devices")
    related = (dataclasses.replace(where, note=f"quota of namespace {service.namespace!r}"),)
    best = max(room.values(), default=0)
    if best < per_pod:
        detail = (f"at most {best} on any pool it can run on ({', '.join(sorted(room))})"
                  if room else "none of the pools it can run on is one of its flavors")
        return [finding(
            "GEN450",
            f"a replica of {service.name!r} needs {per_pod} × {resource} on one pool, but "
            f"ClusterQueue {queue.name!r} can admit {detail}, borrowing included: the pod "
            "is never admitted and waits forever",
            svc.located.at("gpu", "count") if "count" in gpu.model_fields_set
            else svc.located.at("gpu"), key_path="gpu.count",
            hint="raise the quota's devices (or its borrowing_limit, or the cohort's "
                 "lending), or request fewer devices per replica",
            related=related, service=service.name, cluster=cluster.name)]
    pods = sum(amount // per_pod for amount in room.values())
    wanted = service.autoscaling.min_replicas if service.autoscaling else service.replicas
    at, key = svc.replicas_at()
    if wanted > pods:
        return [finding(
            "GEN457",
            f"{service.name!r} wants {wanted} replicas of {per_pod} × {resource}, but "
            f"ClusterQueue {queue.name!r} can admit at most {pods} of them, borrowing "
            "included: the others wait forever, so the Deployment never becomes Available "
            "and its rollout never completes (Argo CD: Degraded; Flux: health check fails)",
            at, key_path=key,
            hint=f"lower {key} to {pods} or raise the namespace's quota",
            related=related, service=service.name, cluster=cluster.name)]
    if service.autoscaling is not None and service.autoscaling.max_replicas > pods:
        at, key = svc.replicas_at(at_max=True)
        return [finding(
            "GEN457",
            f"{service.name!r} scales up to {service.autoscaling.max_replicas} replicas, but "
            f"ClusterQueue {queue.name!r} can admit at most {pods}: replicas above that "
            "wait for quota that never comes",
            at, key_path=key, severity=Severity.WARNING,
            hint=f"lower {key} to {pods} or raise the namespace's quota",
            related=related, service=service.name, cluster=cluster.name)]
    return []
