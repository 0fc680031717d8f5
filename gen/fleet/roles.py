"""The units a service runs as: the service itself, or its prefill and decode roles.

A disaggregated service (``disaggregation``) runs two workloads, each with its own
replicas, parallelism and GPU request (defaults: the service's). Every capability that
counts or places a service's pods (the DRA claim templates, fit, capacity, the serving
builder) walks :func:`units`: a role is a :class:`~gen.fleet.plan.ServicePlan` of its own
whose profile is the service with the role's settings in place, named ``<service>-<role>``
(the name of its Deployment and of its claim template), serving the service's model name.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gen.fleet.endpoints import ROLES, Role
from gen.fleet.plan import ClusterPlan, ServicePlan
from gen.fleet.profile_set import Located

if TYPE_CHECKING:
    from gen.models import GPUClass, InferenceService

__all__ = ["ROLE_NAMES", "Unit", "role_view", "units", "workloads"]

ROLE_NAMES: tuple[Role, ...] = ROLES


@dataclass(frozen=True)
class Unit:
    """One workload of a service: ``role`` is None for a service that is not disaggregated
    (``plan`` is then the service's own)."""

    plan: ServicePlan
    role: Role | None
    parent: ServicePlan

    @property
    def key(self) -> tuple[str | int, ...]:
        """The profile key of the role's settings (``disaggregation.prefill``), ``()``."""
        return ("disaggregation", self.role) if self.role else ()


def _gpu_class(plan: ClusterPlan, name: str) -> GPUClass | None:
    located = plan.gpu_classes.get(name)
    return located.value if located is not None else None


def role_view(plan: ClusterPlan, svc: ServicePlan, role: Role) -> ServicePlan:
    """The ServicePlan of one role of a disaggregated service."""
    service = svc.service
    assert service.disaggregation is not None
    settings = getattr(service.disaggregation, role)
    served = service.serving.served_model_name or service.name
    view: InferenceService = service.model_copy(update={
        "name": f"{service.name}-{role}",
        "replicas": service.replicas if settings.replicas is None else settings.replicas,
        "autoscaling": None,
        "parallelism": settings.parallelism or service.parallelism,
        "gpu": settings.gpu or service.gpu,
        "serving": service.serving.model_copy(update={"served_model_name": served}),
    })
    gpu_class, alternatives = svc.gpu_class, svc.alternatives
    if settings.gpu is not None:
        gpu_class = _gpu_class(plan, settings.gpu.gpu_class)
        alternatives = tuple(
            (cls, alt.count) for alt in settings.gpu.alternatives
            if (cls := _gpu_class(plan, alt.gpu_class)) is not None
        )
    return dataclasses.replace(
        svc, located=Located(view, svc.located.document), gpu_class=gpu_class,
        alternatives=alternatives, role=role,
    )


def units(plan: ClusterPlan, svc: ServicePlan) -> tuple[Unit, ...]:
    """The workloads ``svc`` runs as in ``plan``'s cluster (see the module docstring)."""
    if svc.service.disaggregation is None:
        return (Unit(svc, None, svc),)
    return tuple(Unit(role_view(plan, svc, role), role, svc) for role in ROLE_NAMES)


def workloads(plan: ClusterPlan) -> tuple[ServicePlan, ...]:
    """Every workload of the cluster: each service, a disaggregated one as its two roles
    (what fit, capacity, placement and the claim templates count), in namespace/name order
    as the capacity rules place them (``<service>-decode`` before ``<service>-prefill``,
    as the API server lists the Deployments)."""
    return tuple(sorted((unit.plan for svc in plan.services for unit in units(plan, svc)),
                        key=lambda w: (w.service.namespace, w.service.name)))

