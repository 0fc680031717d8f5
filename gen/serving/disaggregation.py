"""Prefill/decode disaggregation: a service's two role Deployments and their KV contract.

A service with ``disaggregation`` renders ``<service>-prefill`` and ``<service>-decode``
instead of its one Deployment (each role sized by its own replicas, parallelism and GPU
request, :mod:`gen.fleet.roles`), as llm-d's P/D guide runs them:

- pods labelled ``llm-d.ai/role: prefill|decode`` beside the service's labels; each
  Deployment selects its own role only, the Service, PDB and NetworkPolicy select both;
- vLLM ``--kv-transfer-config`` with the same connector on both sides, ``kv_producer`` on
  prefill and ``kv_consumer`` on decode (:mod:`gen.serving.kv_transfer`);
- on decode pods the routing sidecar of llm-d-router as a native sidecar (an init
  container with ``restartPolicy: Always``) on port 8000, the port every pod of the
  service serves on, and vLLM behind it on 8200 (the sidecar's ``--model-server-port``
  default, ``pkg/sidecar/proxy/options.go`` @ v0.10.0): the sidecar asks the prefill pod
  the endpoint picker chose (``x-prefiller-host-port``) to prefill, then decodes locally;
- a NetworkPolicy that lets the service's pods reach each other on every port: the
  connectors' side channels (NIXL 5600, Mooncake bootstrap 8998) and their transports
  (UCX over TCP picks its ports at run time).

Capabilities: none are added, and the pods stay Pod Security "restricted". llm-d's guides add
``IPC_LOCK`` (RDMA memory registration) and ``SYS_RAWIO`` together with RDMA devices
(``rdma/ib`` resources, host networking); gen requests no RDMA device, so NIXL's UCX runs
over TCP and CUDA IPC, which need no capability.
"""

from __future__ import annotations

from typing import Any

from gen.fleet.endpoints import (
    PORT_NAME,
    ROLE_LABEL,
    SIDECAR_ENGINE_PORT,
    Role,
    engine_port,
    workload_selector,
)
from gen.fleet.manifests import manifest
from gen.fleet.plan import Built, ClusterPlan, ManifestSpec, ServicePlan
from gen.fleet.roles import Unit, units
from gen.pins import pin
from gen.serving.build import (
    CONTAINER_PORT,
    deployment,
    engine_args,
    engine_env,
    service_labels,
    shared_objects,
)
from gen.serving.kv_transfer import CONNECTORS, KV_FLAG, kv_transfer_config

__all__ = [
    "DECODE_VLLM_PORT",
    "ROLE_LABEL",
    "SIDECAR_RESOURCES",
    "build",
    "build_disaggregated",
    "role_labels",
    "sidecar_container",
    "sidecar_image",
]

DECODE_VLLM_PORT = SIDECAR_ENGINE_PORT
"""Where vLLM listens on a decode pod (:mod:`gen.fleet.endpoints`): behind the sidecar, its
``--model-server-port`` default (``defaultVLLMPort``, llm-d-router
``pkg/sidecar/proxy/options.go``, v0.10.0)."""
VLLM_PORT_NAME = "vllm"
SIDECAR_RESOURCES = {
    "requests": {"cpu": "250m", "memory": "256Mi"},
    "limits": {"memory": "1Gi"},
}
"""The sidecar is a Go reverse proxy that buffers request bodies (whole prompts): a
quarter core and 256 MiB, with room to 1 GiB for long prompts under load."""


def sidecar_image() -> str:
    """The routing sidecar image, from pins.yaml (``llm-d-router-disagg-sidecar``)."""
    return f"ghcr.io/llm-d/llm-d-router-disagg-sidecar:{pin('llm-d-router-disagg-sidecar').version}"


def sidecar_container(connector: str) -> dict[str, Any]:
    """The routing sidecar of a decode pod (a native sidecar: ``restartPolicy: Always``).

    ``--secure-proxy=false``: the gateway and the picker reach the pod over plain HTTP (the
    sidecar's default is TLS with a self-signed certificate); llm-d's guides set the same.
    """
    return {
        "name": "routing-sidecar",
        "image": sidecar_image(),
        "imagePullPolicy": "IfNotPresent",
        "restartPolicy": "Always",
        "args": [
            f"--port={CONTAINER_PORT}",
            f"--model-server-port={DECODE_VLLM_PORT}",
            f"--kv-connector={CONNECTORS[connector].sidecar}",
            "--secure-proxy=false",
        ],
        "ports": [{"name": PORT_NAME, "containerPort": CONTAINER_PORT, "protocol": "TCP"}],
        "readinessProbe": {
            "httpGet": {"path": "/health", "port": PORT_NAME},
            "periodSeconds": 5, "failureThreshold": 3, "timeoutSeconds": 5,
        },
        "resources": SIDECAR_RESOURCES,
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "runAsNonRoot": True,
            "capabilities": {"drop": ["ALL"]},
        },
    }


def role_labels(svc: ServicePlan, role: Role) -> tuple[dict[str, str], dict[str, str]]:
    """(labels, selector) of a role's Deployment and pods: the service's plus the role label
    (:func:`gen.fleet.endpoints.workload_selector`)."""
    meta, _ = service_labels(svc)
    return {**meta, ROLE_LABEL: role}, workload_selector(svc.service, role)


def _role_env(unit: Unit, connector: str) -> list[dict[str, Any]]:
    env = engine_env(unit.plan)
    spec = CONNECTORS[connector]
    if spec.env:
        env.append({"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    for name, value in spec.env:
        env.append({"name": name, "value": "$(POD_IP)" if value == "POD_IP" else value})
    return env


def _role_deployment(plan: ClusterPlan, unit: Unit, connector: str) -> ManifestSpec:
    assert unit.role is not None
    parent = unit.parent
    meta, selector = role_labels(parent, unit.role)
    decode = unit.role == "decode"
    port = engine_port(parent.service, unit.role)
    args = [*engine_args(unit.plan, port=port), KV_FLAG, kv_transfer_config(connector, unit.role)]
    return deployment(
        plan, unit.plan, name=unit.plan.service.name, meta=meta, selector=selector,
        cache_claim=f"{parent.service.name}-model-cache", args=args,
        env=_role_env(unit, connector),
        port=port, port_name=VLLM_PORT_NAME if decode else PORT_NAME,
        extra_ports=tuple({"name": name, "port": number}
                          for name, number in CONNECTORS[connector].ports),
        init_containers=(sidecar_container(connector),) if decode else (),
    )


def _peers_policy(svc: ServicePlan) -> ManifestSpec:
    service = svc.service
    meta, selector = service_labels(svc)
    return manifest(
        "vllm/networkpolicy-peers.yaml.j2", svc.located.at("disaggregation"),
        name=f"{service.name}-kv-transfer", namespace=service.namespace, labels=meta,
        selector=selector,
    )


def build_disaggregated(plan: ClusterPlan, svc: ServicePlan) -> list[ManifestSpec]:
    """Every object of one disaggregated vLLM service in one cluster."""
    disaggregation = svc.service.disaggregation
    assert disaggregation is not None
    roles = units(plan, svc)
    pods = sum(unit.plan.service.replicas for unit in roles)
    return [
        *(_role_deployment(plan, unit, disaggregation.connector) for unit in roles),
        # Port 8000 is the sidecar's on decode pods and vLLM's on prefill pods: the Service
        # targets the number, not a name only one of the containers carries.
        *shared_objects(plan, svc, pods=pods, target_port=CONTAINER_PORT),
        _peers_policy(svc),
    ]


def build(plan: ClusterPlan) -> Built:
    """The objects of every disaggregated in-cluster vLLM service of the cluster."""
    specs: list[ManifestSpec] = []
    for svc in plan.services:
        service = svc.service
        if service.engine == "vllm" and service.gpu is not None \
                and service.disaggregation is not None:
            specs.extend(build_disaggregated(plan, svc))
    return Built(specs)
