"""Names and labels every builder shares."""

from __future__ import annotations

from typing import Any

from gen.errors import SourceLocation
from gen.fleet.plan import ClusterPlan, ManifestSpec

MANAGED_BY = {"app.kubernetes.io/managed-by": "gen"}


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
