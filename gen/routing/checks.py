"""Routing lint on the profiles: GEN401–GEN404 and GEN409 (one cluster at a time)."""

from __future__ import annotations

import dataclasses

from gen.errors import Finding
from gen.fleet.endpoints import gateway_of, picker_name
from gen.fleet.plan import ClusterPlan, Plan, ServicePlan
from gen.rules import finding

__all__ = ["MIN_GATEWAY_API", "MIN_KUBERNETES_MINOR", "check"]

MIN_KUBERNETES_MINOR = 29
"""Sidecar containers on by default (kubernetes-sigs/gateway-api-inference-extension,
site-src/_includes/prereqs.md@v1.6.0)."""
MIN_GATEWAY_API = (1, 2)
"""HTTPRoute ``timeouts`` in the standard channel (kubernetes-sigs/gateway-api,
config/crd/standard/gateway.networking.k8s.io_httproutes.yaml: absent at v1.1.0, present at
v1.2.0)."""


def _gateway(cluster: ClusterPlan, svc: ServicePlan) -> list[Finding]:
    routing = svc.service.routing
    assert routing is not None
    if gateway_of(cluster, svc.service) is not None:
        return []
    namespace, _, name = routing.gateway.rpartition("/")
    same = [g for g in cluster.cluster.gateways if g.name == name]
    declared = ", ".join(f"{g.namespace}/{g.name}" for g in cluster.cluster.gateways)
    if len(same) > 1 and not namespace:
        message = (f"Gateway {name!r} is declared in {len(same)} namespaces of cluster "
                   f"{cluster.name!r}: say which")
        hint = "write 'namespace/name', one of: " + ", ".join(
            f"{g.namespace}/{g.name}" for g in same)
    else:
        message = (f"cluster {cluster.name!r} declares no Gateway {routing.gateway!r}: the "
                   "HTTPRoute would attach to nothing")
        hint = (f"use one of its gateways ({declared})" if declared else
                "declare the Gateway in the cluster's 'gateways' ({name, namespace, class})")
    return [finding("GEN401", message, svc.located.at("routing", "gateway"),
                    key_path="routing.gateway", hint=hint,
                    related=(cluster.located.at("gateways"),))]


def _gateway_api(version: str) -> tuple[int, int]:
    major, minor = version.lstrip("v").split(".")[:2]
    return int(major), int(minor)


def _service(cluster: ClusterPlan, svc: ServicePlan) -> list[Finding]:
    found: list[Finding] = []
    at_cluster = cluster.located.at
    if "inference-extension" not in cluster.cluster.addons:
        found.append(finding(
            "GEN402", f"cluster {cluster.name!r} lacks the 'inference-extension' add-on: "
            "without the InferencePool CRD the sync fails, so gen renders no routing objects",
            svc.located.at("routing"), key_path="routing",
            hint="add 'inference-extension' to the cluster's addons once the CRDs are "
            "installed (with the Gateway implementation), or remove 'routing'",
            related=(at_cluster("addons"),),
        ))
    found += _gateway(cluster, svc)
    if cluster.minor < MIN_KUBERNETES_MINOR:
        found.append(finding(
            "GEN403", f"Kubernetes {cluster.cluster.kubernetes_version} is older than "
            f"1.{MIN_KUBERNETES_MINOR}, which routed serving needs (sidecar containers)",
            at_cluster("kubernetes_version"), key_path="kubernetes_version",
            hint=f"upgrade the cluster to 1.{MIN_KUBERNETES_MINOR} or newer",
            related=(svc.located.at("routing"),),
        ))
    if _gateway_api(cluster.cluster.gateway_api_version) < MIN_GATEWAY_API:
        found.append(finding(
            "GEN404", f"Gateway API {cluster.cluster.gateway_api_version} has no HTTPRoute "
            "'timeouts' in its standard channel (from v1.2.0): the request timeout would be "
            "dropped", at_cluster("gateway_api_version"), key_path="gateway_api_version",
            hint="install Gateway API v1.2.0 or newer and set gateway_api_version",
            related=(svc.located.at("routing", "request_timeout_seconds"),),
        ))
    return found


def _picker_names(cluster: ClusterPlan) -> list[Finding]:
    by_key = {(s.service.namespace, s.service.name): s for s in cluster.services}
    found = []
    for svc in cluster.services:
        if svc.service.routing is None:
            continue
        other = by_key.get((svc.service.namespace, picker_name(svc.service)))
        if other is not None:
            found.append(finding(
                "GEN409", f"service {other.service.name!r} has the name of the endpoint picker "
                f"of routed service {svc.service.name!r} (namespace "
                f"{svc.service.namespace!r}): their objects would collide",
                other.located.at("name"), key_path="name",
                hint="rename this service, or move it to another namespace",
                related=(svc.located.at("routing"),),
                service=other.service.name, cluster=cluster.name,
            ))
    return found


def check(plan: Plan) -> list[Finding]:
    """GEN401–GEN404, GEN409."""
    findings: list[Finding] = []
    for cluster in plan.clusters:
        for svc in cluster.services:
            if svc.service.routing is None:
                continue
            findings += [dataclasses.replace(f, service=svc.service.name, cluster=cluster.name)
                         for f in _service(cluster, svc)]
        findings += _picker_names(cluster)
    return findings
