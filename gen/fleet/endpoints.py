"""The serving endpoints of a service: the pods an InferencePool selects and the port it targets.

Two capabilities read this and never each other: routing (the InferencePool's
``selector.matchLabels`` and ``targetPorts``, the picker's NetworkPolicies) and the workloads
that run the pods (the aggregated vLLM Deployment, the prefill and decode role workloads of a
disaggregated service). Whatever pods a workload creates carry :func:`pod_labels`; the pool
selects them by :func:`pool_selector`, a subset of those labels no other pod carries:

* ``app.kubernetes.io/name`` is the service's name, unique in the fleet (a second
  InferenceService of the same name is refused, GEN002), so another service's pods, in this
  namespace or any other, never match;
* ``app.kubernetes.io/component: inference`` leaves out gen's other pods of the same name
  (the endpoint picker's pods are ``<name>-epp`` / ``endpoint-picker``);
* ``app.kubernetes.io/managed-by: gen`` leaves out pods a person or another tool labels with
  the same name and component (llm-d PR #2212: a pool selector that also matched GPU-holding
  requester pods sent requests to pods that refused them).

The role label ``llm-d.ai/role`` is what llm-d-router's ``prefill-filter`` and
``decode-filter`` read (llm-d/llm-d-router, v0.10.0,
pkg/epp/framework/plugins/scheduling/filter/bylabel/README.md): it is on the pod labels of a
disaggregated service's role workloads, and never in the pool selector, which holds the pods of
both roles.

The pool targets port 8000 on every serving pod. On aggregated and prefill pods vLLM listens
there; on decode pods the routing sidecar listens there and vLLM on 8200, as llm-d's guides
run them (llm-d/llm-d, guides/pd-disaggregation; the sidecar's ``--port=8000``, vLLM's
``--port 8200``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from gen.fleet.manifests import MANAGED_BY

if TYPE_CHECKING:
    from gen.fleet.plan import ClusterPlan, ServicePlan
    from gen.models import InferenceService
    from gen.models.cluster import Gateway

__all__ = [
    "COMPONENT",
    "PICKER_COMPONENT",
    "PORT_NAME",
    "ROLES",
    "ROLE_LABEL",
    "ROUTED_PORT",
    "SIDECAR_ENGINE_PORT",
    "Endpoints",
    "Role",
    "endpoints",
    "engine_port",
    "gateway_of",
    "picker_name",
    "picker_selector",
    "pod_labels",
    "pool_name",
    "pool_selector",
    "routed",
    "workload_selector",
]

Role = Literal["prefill", "decode"]
ROLES: tuple[Role, ...] = ("prefill", "decode")
ROLE_LABEL = "llm-d.ai/role"
"""The pod label llm-d-router's prefill/decode filters read."""
COMPONENT = "inference"
"""``app.kubernetes.io/component`` of every serving pod."""
PICKER_COMPONENT = "endpoint-picker"
"""``app.kubernetes.io/component`` of the endpoint picker's pods."""
PORT_NAME = "http"
ROUTED_PORT = 8000
"""The port the InferencePool targets: vLLM's on aggregated and prefill pods, the routing
sidecar's on decode pods."""
SIDECAR_ENGINE_PORT = 8200
"""vLLM's port on a decode pod, behind the routing sidecar."""


@dataclass(frozen=True)
class Endpoints:
    """What an InferencePool of a service targets."""

    pool: str
    """The InferencePool's name (the service's)."""
    selector: tuple[tuple[str, str], ...]
    """``selector.matchLabels``, sorted by key: every serving pod of the service, both roles."""
    target_ports: tuple[int, ...]
    """``targetPorts[].number``."""
    picker: str
    """The endpoint picker's Deployment, Service and ServiceAccount name."""
    roles: tuple[Role, ...]
    """The roles of a disaggregated service; empty for an aggregated one."""


def pool_name(service: InferenceService) -> str:
    """The InferencePool's name: the service's."""
    return service.name


def picker_name(service: InferenceService) -> str:
    """The endpoint picker's name: ``<service>-epp``."""
    return f"{service.name}-epp"


def pool_selector(service: InferenceService) -> dict[str, str]:
    """The InferencePool's ``selector.matchLabels`` (see the module's docstring)."""
    return {
        "app.kubernetes.io/name": service.name,
        "app.kubernetes.io/component": COMPONENT,
        **MANAGED_BY,
    }


def workload_selector(service: InferenceService, role: Role | None = None) -> dict[str, str]:
    """A workload's ``spec.selector.matchLabels`` (immutable once applied): the service's name
    and component, and the role for a role workload, so the two role workloads never adopt each
    other's pods."""
    selector = {"app.kubernetes.io/name": service.name, "app.kubernetes.io/component": COMPONENT}
    if role is not None:
        selector[ROLE_LABEL] = role
    return selector


def pod_labels(service: InferenceService, role: Role | None = None) -> dict[str, str]:
    """The labels every serving pod of ``service`` carries (of ``role`` when disaggregated):
    the pool selector, the workload selector, and the role label."""
    labels = {**pool_selector(service), **workload_selector(service, role)}
    return labels


def picker_selector(service: InferenceService) -> dict[str, str]:
    """The endpoint picker's pod labels (its Deployment's selector): never the pool's."""
    return {
        "app.kubernetes.io/name": picker_name(service),
        "app.kubernetes.io/component": PICKER_COMPONENT,
    }


def engine_port(service: InferenceService, role: Role | None = None) -> int:
    """The port vLLM listens on in a pod of ``role``: behind the routing sidecar on a decode
    pod, else the routed port."""
    if role == "decode" and service.disaggregation is not None:
        return SIDECAR_ENGINE_PORT
    return ROUTED_PORT


def endpoints(svc: ServicePlan) -> Endpoints:
    """The pool, its selector, its target ports and its picker for a service in a cluster."""
    service = svc.service
    return Endpoints(
        pool=pool_name(service),
        selector=tuple(sorted(pool_selector(service).items())),
        target_ports=(ROUTED_PORT,),
        picker=picker_name(service),
        roles=ROLES if service.disaggregation is not None else (),
    )


def gateway_of(plan: ClusterPlan, service: InferenceService) -> Gateway | None:
    """The declared Gateway ``routing.gateway`` names in the cluster (``name``, or
    ``namespace/name``); ``None`` when the service is not routed, or names no Gateway the
    cluster declares, or a bare name two declared Gateways share (GEN401 says which)."""
    if service.routing is None:
        return None
    namespace, _, name = service.routing.gateway.rpartition("/")
    found = [g for g in plan.cluster.gateways
             if g.name == name and (not namespace or g.namespace == namespace)]
    return found[0] if len(found) == 1 else None


def routed(plan: ClusterPlan, svc: ServicePlan) -> bool:
    """Whether the service is served through its InferencePool in this cluster: it asks for
    routing, the cluster has the ``inference-extension`` add-on (the InferencePool CRD) and
    declares the Gateway (GEN401 / GEN402 report why not). Its pods' NetworkPolicy is then
    the routing one (only the gateway and the picker reach them), not the plain Service's."""
    service = svc.service
    return (service.routing is not None and service.gpu is not None
            and "inference-extension" in plan.cluster.addons
            and gateway_of(plan, service) is not None)
