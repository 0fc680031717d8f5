"""Names, labels and pod placement every builder shares, each written once.

Capabilities do not import each other: a name one capability gives an object and another
one refers to (the ResourceClaimTemplate a vLLM pod claims, the ConfigMap mig-manager
reads, the extended resource the device plugin advertises) is defined here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from gen.errors import SourceLocation
from gen.fleet.plan import ClusterPlan, ManifestSpec, PoolPlan

if TYPE_CHECKING:
    from gen.models import InferenceService

__all__ = [
    "MANAGED_BY",
    "MIG_CONFIGMAP_NAME",
    "claim_template_name",
    "extended_resource_name",
    "labels",
    "manifest",
    "namespaces",
    "tolerations",
]

MANAGED_BY = {"app.kubernetes.io/managed-by": "gen"}

MIG_CONFIGMAP_NAME = "gen-mig-parted-config"
"""The ConfigMap that holds the cluster's mig-parted config: the MIG builder writes it, the
GPU Operator's values name it (``migManager.config.name``) for mig-manager to read."""


def claim_template_name(service: InferenceService) -> str:
    """Name of the service's ResourceClaimTemplate (the DRA builder's object, the vLLM pod's
    ``resourceClaimTemplateName``)."""
    return f"{service.name}-gpu"


def extended_resource_name(profile: str | None, strategy: Literal["single", "mixed"]) -> str:
    """The device plugin's resource for a MIG profile under a MIG strategy.

    ``nvidia.com/gpu`` for whole GPUs and under the single strategy (every GPU of a node
    has the same slices, advertised as GPUs), else ``nvidia.com/mig-<profile>`` with a
    ``+`` (media extensions) written as ``.``, as the NVIDIA device plugin names them.
    """
    if profile is None or strategy == "single":
        return "nvidia.com/gpu"
    return "nvidia.com/mig-" + profile.replace("+", ".")


def tolerations(pools: Iterable[PoolPlan], *, any_value: bool = False) -> list[dict[str, str]]:
    """Tolerations of every distinct taint of ``pools``, sorted by key, value and effect.

    By default one toleration per distinct (key, value, effect): ``operator: Equal`` with
    the taint's value, or ``operator: Exists`` for a taint without a value (what a
    workload placed on those pools needs). With ``any_value=True`` one ``Exists``
    toleration per distinct (key, effect), whatever the values (what a DaemonSet that must
    run on every node of the pools, such as a driver or a device plugin, needs).
    """
    found: dict[tuple[str, str, str], dict[str, str]] = {}
    for pool in pools:
        for taint in pool.pool.taints:
            value = "" if any_value else taint.value
            toleration = {"key": taint.key, "effect": taint.effect}
            if value:
                toleration.update(operator="Equal", value=value)
            else:
                toleration["operator"] = "Exists"
            found.setdefault((taint.key, value, taint.effect), toleration)
    return [found[key] for key in sorted(found)]


def labels(name: str, component: str, **extra: str) -> dict[str, str]:
    """Standard labels of an object gen renders."""
    return {
        "app.kubernetes.io/name": name,
        "app.kubernetes.io/component": component,
        **MANAGED_BY,
        **extra,
    }


def manifest(
    template: str,
    origin: SourceLocation,
    note: str = "",
    folder: str = "",
    stage: str = "workloads",
    **context: Any,
) -> ManifestSpec:
    """A ManifestSpec with its context as keyword arguments."""
    return ManifestSpec(
        template=template, context=context, origin=origin, note=note, folder=folder,
        stage=stage,
    )


def namespaces(plan: ClusterPlan) -> list[ManifestSpec]:
    """The namespaces of the cluster's services and quotas, Pod Security "restricted"."""
    names = {svc.service.namespace for svc in plan.services}
    names |= {q.namespace for q in plan.cluster.quotas}
    origin = plan.located.document.location
    return [
        manifest(
            "core/namespace.yaml.j2", origin, name=ns, stage="gpu",
            labels={
                **labels(ns, "namespace"),
                "pod-security.kubernetes.io/enforce": "restricted",
                "pod-security.kubernetes.io/enforce-version": "latest",
            },
        )
        for ns in sorted(names)
    ]
