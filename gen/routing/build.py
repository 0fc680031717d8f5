"""Routed services' objects: InferencePool, endpoint picker, HTTPRoute, objective, policies.

A service with ``routing`` in a cluster that has the ``inference-extension`` add-on and
declares the Gateway it names (:func:`gen.fleet.endpoints.routed`) gets, in its namespace:

* ``InferencePool`` ``inference.networking.k8s.io/v1`` named as the service, selecting the
  service's serving pods (:func:`gen.fleet.endpoints.pool_selector`), targeting the routed port,
  its ``endpointPickerRef`` the picker's Service (``FailClose``: a request no picker scored is
  refused rather than sent to an arbitrary pod);
* the endpoint picker ``<service>-epp`` (llm-d-router, :mod:`gen.routing.picker`): Deployment
  (Recreate, one leader when replicas > 1), Service (ext-proc and metrics ports),
  ServiceAccount, Role and RoleBinding, its ``EndpointPickerConfig`` in a ConfigMap;
* ``HTTPRoute`` ``gateway.networking.k8s.io/v1`` from the declared Gateway to the pool;
* ``InferenceObjective`` ``llm-d.ai/v1alpha2`` when ``routing.priority`` is set, and the
  route then names it in each request's ``x-llm-d-inference-objective`` header (a request
  without the header has no objective, so the priority would not apply);
* two NetworkPolicies: the picker's (ext-proc from the Gateway's namespace, metrics from the
  monitoring namespace) and the serving pods' (the routed port from the Gateway's namespace,
  the picker, the monitoring namespace and ``exposure.allow_from_namespaces``; any port from
  the service's own pods, which hand the KV cache over when disaggregated).
"""

from __future__ import annotations

import hashlib
from typing import Any

import yaml

from gen.fleet.endpoints import (
    PICKER_COMPONENT,
    endpoints,
    gateway_of,
    picker_selector,
    pool_selector,
    routed,
)
from gen.fleet.manifests import has_addon, labels, manifest
from gen.fleet.plan import Built, ClusterPlan, ManifestSpec, ServicePlan
from gen.routing import picker

__all__ = ["build", "build_service", "picker_config_text", "picker_scraped"]


def picker_config_text(svc: ServicePlan) -> str:
    """The picker's config file (YAML): the service's picker profile, or llm-d-router's P/D
    configuration for a disaggregated service."""
    routing = svc.service.routing
    assert routing is not None
    doc = (picker.pd_config() if svc.service.disaggregation is not None
           else picker.config(routing.picker.profile))
    text: str = yaml.safe_dump(doc, sort_keys=False)
    return text


def _namespace_peer(namespace: str) -> dict[str, Any]:
    return {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}}


def build_service(plan: ClusterPlan, svc: ServicePlan) -> list[ManifestSpec]:
    """Every routing object of one routed service in one cluster."""
    service = svc.service
    routing = service.routing
    gateway = gateway_of(plan, service)
    assert routing is not None and gateway is not None
    found = endpoints(svc)
    origin = svc.located.document.location
    ns = service.namespace
    monitoring = plan.cluster.monitoring.namespace
    pool_meta = labels(service.name, "inference-pool")
    picker_meta = labels(found.picker, PICKER_COMPONENT)
    replicas = routing.picker.replicas
    text = picker_config_text(svc)
    specs = [
        manifest(
            "routing/inferencepool.yaml.j2", origin,
            name=found.pool, namespace=ns, labels=pool_meta, selector=dict(found.selector),
            target_ports=list(found.target_ports), picker=found.picker,
            picker_port=picker.EXT_PROC_PORT,
        ),
        manifest(
            "routing/httproute.yaml.j2", origin,
            name=service.name, namespace=ns, labels=pool_meta,
            gateway=gateway.name, gateway_namespace=gateway.namespace,
            hostnames=list(routing.hostnames), path_prefix=routing.path_prefix,
            pool=found.pool, timeout=f"{routing.request_timeout_seconds}s",
            objective=service.name if routing.priority is not None else None,
            objective_header=picker.OBJECTIVE_HEADER,
        ),
    ]
    if routing.priority is not None:
        specs.append(manifest(
            "routing/inferenceobjective.yaml.j2", origin,
            name=service.name, namespace=ns, labels=pool_meta, priority=routing.priority,
            pool=found.pool,
        ))
    specs += [
        manifest("routing/serviceaccount.yaml.j2", origin,
                 name=found.picker, namespace=ns, labels=picker_meta),
        manifest("routing/role.yaml.j2", origin,
                 name=found.picker, namespace=ns, labels=picker_meta,
                 rules=picker.rbac_rules(replicas)),
        manifest("routing/rolebinding.yaml.j2", origin,
                 name=found.picker, namespace=ns, labels=picker_meta),
        manifest("routing/configmap.yaml.j2", origin,
                 name=found.picker, namespace=ns, labels=picker_meta,
                 data={picker.CONFIG_FILE: text}),
        manifest(
            "routing/deployment.yaml.j2", origin,
            name=found.picker, namespace=ns, labels=picker_meta,
            selector=picker_selector(service), replicas=replicas,
            config_digest=hashlib.sha256(text.encode()).hexdigest()[:16],
            image=picker.picker_image(),
            args=picker.picker_args(found.pool, ns, replicas),
            ext_proc_port=picker.EXT_PROC_PORT, health_port=picker.HEALTH_PORT,
            metrics_port=picker.METRICS_PORT, resources=picker.RESOURCES,
            # With leader election the health server answers 'liveness' and 'readiness'
            # (only the leader is ready); one replica answers 'inference-extension'.
            liveness_service="liveness" if replicas > 1 else "inference-extension",
            readiness_service="readiness" if replicas > 1 else "inference-extension",
        ),
        manifest(
            "routing/service.yaml.j2", origin,
            name=found.picker, namespace=ns, labels=picker_meta,
            selector=picker_selector(service),
            ext_proc_port=picker.EXT_PROC_PORT, metrics_port=picker.METRICS_PORT,
        ),
        manifest(
            "routing/networkpolicy.yaml.j2", origin,
            name=found.picker, namespace=ns, labels=picker_meta,
            selector=picker_selector(service),
            ingress=[
                {"from": [_namespace_peer(gateway.namespace)],
                 "ports": [{"port": picker.EXT_PROC_PORT, "protocol": "TCP"}]},
                {"from": [_namespace_peer(monitoring)],
                 "ports": [{"port": picker.METRICS_PORT, "protocol": "TCP"}]},
            ],
        ),
        manifest(
            "routing/networkpolicy.yaml.j2", origin,
            name=service.name, namespace=ns, labels=pool_meta,
            selector=pool_selector(service),
            ingress=[
                {"from": [
                    {"podSelector": {"matchLabels": picker_selector(service)}},
                    *(_namespace_peer(n) for n in sorted({
                        gateway.namespace, monitoring,
                        *service.exposure.allow_from_namespaces})),
                ], "ports": [{"port": p, "protocol": "TCP"} for p in found.target_ports]},
                {"from": [{"podSelector": {"matchLabels": pool_selector(service)}}]},
            ],
        ),
    ]
    if picker_scraped(plan):
        specs.append(manifest(
            "routing/servicemonitor.yaml.j2", origin,
            name=found.picker, namespace=ns, labels=picker_meta,
            selector=picker_selector(service), port_name="http-metrics",
        ))
    return specs


def picker_scraped(plan: ClusterPlan) -> bool:
    """Whether Prometheus scrapes the pickers of the cluster (a ServiceMonitor each)."""
    return plan.cluster.monitoring.service_monitors and has_addon(plan, "prometheus-operator")


def build(plan: ClusterPlan) -> Built:
    """The routing objects of every routed service of the cluster."""
    specs: list[ManifestSpec] = []
    for svc in plan.services:
        if routed(plan, svc):
            specs.extend(build_service(plan, svc))
    return Built(specs)
