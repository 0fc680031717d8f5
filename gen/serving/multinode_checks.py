"""Multi-node rules GEN420–GEN428: the group shape, its pods, its nodes, its launch.

Every rule reads the one shape of :func:`gen.fleet.parallelism.service_shape` and the one
placement of :func:`gen.serving.groups.place`, so lint says what the LWS builder renders.
"""

from __future__ import annotations

from dataclasses import replace

from gen.errors import Finding, Severity, SourceLocation
from gen.fleet.manifests import has_addon
from gen.fleet.parallelism import (
    GroupShape,
    derived_gpus_per_pod,
    nvlink_domain_nodes,
    service_shape,
    shape_pool,
)
from gen.fleet.plan import ClusterPlan, Plan, ServicePlan
from gen.rules import finding

__all__ = ["check"]


def _count_at(svc: ServicePlan) -> tuple[SourceLocation, str]:
    gpu = svc.service.gpu
    if gpu is not None and "count" in gpu.model_fields_set:
        return svc.located.at("gpu", "count"), "gpu.count"
    return svc.located.at("parallelism"), "parallelism"


def _shape_findings(cluster: ClusterPlan, svc: ServicePlan, shape: GroupShape) -> list[Finding]:
    service = svc.service
    par = service.parallelism
    findings: list[Finding] = []
    suggested = derived_gpus_per_pod(par.tensor, par.pipeline, par.data, shape.gpus_per_node)
    hint = (f"on nodes of {shape.gpus_per_node} GPUs, gpu.count: {suggested} gives "
            f"{shape.gpus // suggested} pod(s) of {suggested} (or leave gpu.count out and gen "
            "derives it)")
    if not shape.multi_node:
        if par.data > 1 and service.gpu is not None and shape.gpus != service.gpu.count:
            where, key = _count_at(svc)
            findings.append(finding(
                "GEN420",
                f"TP×PP×DP = {par.tensor}×{par.pipeline}×{par.data} = {shape.gpus} GPUs, but "
                f"the replica claims {service.gpu.count}: vLLM's {par.data} data-parallel "
                f"engines of {shape.rank_gpus} GPU(s) need exactly {shape.gpus}",
                where, key_path=key, hint=f"set gpu.count: {shape.gpus}",
                service=service.name, cluster=cluster.name))
        return findings
    where, key = _count_at(svc)
    for problem in shape.problems:
        if problem.kind == "pod-above-node":
            findings.append(finding(
                "GEN421", problem.text, where, key_path=key, hint=hint,
                related=(_pool_at(svc),), service=service.name, cluster=cluster.name))
        elif problem.kind == "rank-above-node":
            findings.append(finding(
                "GEN425", problem.text, svc.located.at("parallelism"), key_path="parallelism",
                hint=f"keep tensor × pipeline at most {shape.gpus_per_node} (one node) and "
                "raise data instead, or set data: 1",
                service=service.name, cluster=cluster.name))
        else:
            findings.append(finding("GEN420", problem.text, where, key_path=key, hint=hint,
                                    service=service.name, cluster=cluster.name))
    return findings


def _pool_at(svc: ServicePlan) -> SourceLocation:
    pool = shape_pool(svc)
    assert pool is not None
    return replace(pool.located_at, note=f"pool {pool.name!r}: {pool.pool.nodes} node(s) × "
                   f"{pool.pool.gpus_per_node} GPUs")


def _launch_findings(cluster: ClusterPlan, svc: ServicePlan) -> list[Finding]:
    from gen.serving.image import service_image

    service = svc.service
    findings: list[Finding] = []
    if not has_addon(cluster, "lws"):
        findings.append(finding(
            "GEN423",
            f"service {service.name!r} spans nodes, so gen renders a LeaderWorkerSet, but "
            f"cluster {cluster.name!r} does not declare the add-on 'lws': without its CRD the "
            "whole sync fails",
            svc.located.at("parallelism"), key_path="parallelism",
            hint="install LeaderWorkerSet (kubernetes-sigs/lws) and add 'lws' to the "
            "cluster's addons, or fit the replica in one node",
            related=(cluster.located.at("addons"),), service=service.name, cluster=cluster.name))
    for key, what in (("routing", "routed through an InferencePool"),
                      ("disaggregation", "split into prefill and decode")):
        if getattr(service, key) is not None:
            findings.append(finding(
                "GEN429",
                f"service {service.name!r} spans nodes and is {what}: gen does not yet render "
                "a multi-node group behind the endpoint picker (the pool would select the "
                "group's headless workers, and the role workloads are one-node Deployments)",
                svc.located.at(key), key_path=key,
                hint=f"remove '{key}' and serve the group through its leader-only Service, or "
                "fit one replica (of each role) in one node",
                related=(svc.located.at("parallelism"),), service=service.name,
                cluster=cluster.name))
    pool = shape_pool(svc)
    if pool is not None and pool.pool.interconnect in (None, "ethernet"):
        what = ("declares no interconnect" if pool.pool.interconnect is None
                else "has only Ethernet (TCP sockets)")
        findings.append(finding(
            "GEN424",
            f"service {service.name!r} spans nodes of pool {pool.name!r}, which {what}: "
            "NCCL between the nodes falls back to sockets, far slower than NVLink inside a "
            "node",
            pool.located_at, key_path="interconnect",
            hint="declare the pool's interconnect (infiniband, roce or nvlink) once the nodes "
            "have it, or keep tensor × pipeline × data within one node",
            related=(svc.located.at("parallelism"),), service=service.name, cluster=cluster.name))
    if service.multi_node.executor == "ray" and service.serving.image is None:
        findings.append(finding(
            "GEN426",
            f"multi_node.executor: ray with gen's pinned image {service_image(service).pulled}, "
            "whose vLLM requirements list no ray: 'ray start' in the group's pods exits 127",
            svc.located.at("multi_node", "executor"), key_path="multi_node.executor",
            hint="use executor: mp (vLLM's own multi-node launcher), or set serving.image to "
            "an image that ships ray", service=service.name, cluster=cluster.name))
    return findings


def _domain_findings(cluster: ClusterPlan, svc: ServicePlan,
                     shape: GroupShape) -> list[Finding]:
    """GEN427 and GEN428: a replica across the trays of an NVLink domain."""
    pool = shape_pool(svc)
    nodes = nvlink_domain_nodes(pool) if pool is not None else None
    if pool is None or nodes is None:
        return []
    service = svc.service
    findings = []
    if shape.pods > nodes:
        findings.append(finding(
            "GEN427",
            f"a replica of {service.name!r} is {shape.pods} pods on {shape.pods} nodes, but one "
            f"NVLink domain of pool {pool.name!r} has {nodes} nodes: the group cannot stay in "
            "one clique and share its IMEX channel",
            svc.located.at("parallelism"), key_path="parallelism",
            hint=f"keep tensor × pipeline × data within {nodes * shape.gpus_per_node} GPUs "
            f"({nodes} nodes × {shape.gpus_per_node}), or set the pool's nvlink_domain_nodes "
            "to its real clique size", related=(_pool_at(svc),),
            service=service.name, cluster=cluster.name))
    if cluster.dra_api_version is None:
        findings.append(finding(
            "GEN428",
            f"service {service.name!r} spans trays of the NVLink domain of pool {pool.name!r}, "
            f"but cluster {cluster.name!r} uses the device plugin: without the DRA driver there "
            "is no ComputeDomain, so no IMEX channel, and the trays talk over the network",
            cluster.located.at("allocation"), key_path="allocation", severity=Severity.WARNING,
            hint="use allocation: dra (the NVIDIA DRA driver's ComputeDomains) on this cluster",
            related=(svc.located.at("parallelism"),),
            service=service.name, cluster=cluster.name))
    elif cluster.dra_api_version != "resource.k8s.io/v1":
        findings.append(finding(
            "GEN428",
            f"service {service.name!r} gets a ComputeDomain, whose controller creates its "
            "channel's ResourceClaimTemplate as resource.k8s.io/v1, but cluster "
            f"{cluster.name!r} serves {cluster.dra_api_version}: the template is never "
            "created and the group's pods stay Pending",
            cluster.located.at("kubernetes_version"), key_path="kubernetes_version",
            hint="upgrade the cluster to Kubernetes 1.34 or later (resource.k8s.io/v1)",
            related=(svc.located.at("parallelism"),),
            service=service.name, cluster=cluster.name))
    return findings


def _placement_findings(cluster: ClusterPlan) -> list[Finding]:
    from gen.serving.groups import place

    placement = place(cluster)
    findings = []
    for svc in cluster.services:
        shape = service_shape(svc)
        name = svc.service.name
        if shape is None or not shape.multi_node or name not in placement.wanted or any(
                p.kind == "pod-above-node" for p in shape.problems):
            continue  # a pod larger than every node is GEN421's
        wanted, placed = placement.wanted[name], placement.placed[name]
        if placed >= wanted:
            continue
        pool = shape_pool(svc)
        assert pool is not None
        where, key = svc.replicas_at()
        findings.append(finding(
            "GEN422",
            f"{wanted} replica(s) × {shape.pods} pods of {shape.gpus_per_pod} GPUs need "
            f"{wanted * shape.pods} pod slots on pool {pool.name!r} ({pool.pool.nodes} node(s) "
            f"× {pool.pool.gpus_per_node} GPUs), but beside the other services only {placed} "
            "group(s) fit whole: the other leaders schedule and their workers stay Pending",
            where, key_path=key,
            hint="lower the replicas, add nodes to the pool, or move other services off it",
            related=(_pool_at(svc),), service=name, cluster=cluster.name))
    return findings


def check(plan: Plan) -> list[Finding]:
    """GEN420–GEN429 on every cluster's vLLM services."""
    findings: list[Finding] = []
    for cluster in plan.clusters:
        for svc in cluster.services:
            shape = service_shape(svc)
            if shape is None:
                continue
            findings += _shape_findings(cluster, svc, shape)
            if shape.multi_node:
                findings += _launch_findings(cluster, svc)
                findings += _domain_findings(cluster, svc, shape)
        findings += _placement_findings(cluster)
    return findings
