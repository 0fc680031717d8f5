"""The GitOps decisions that span clusters: which clusters one Argo CD root syncs, and how.

Argo CD runs once for many clusters, so its root object and, in fleet mode, its
ApplicationSet serve a *group*: the Argo CD clusters with the same controller namespace,
repository, revision and ``path_prefix``. Every member renders the group's shared objects
with the same bytes (the same origin, the same context), so a render of any subset of the
fleet writes the same files. Flux runs in each cluster: each cluster is its own group and
has its own root.

The pipeline computes the view once from the whole fleet (:func:`fleet_view`) and records
it in every ``ClusterPlan.gitops_fleet`` before the builders run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gen.errors import SourceLocation
from gen.fleet.plan import ClusterPlan

__all__ = [
    "ARGO_NAMESPACE",
    "FLEET_MODE_THRESHOLD",
    "FLUX_NAMESPACE",
    "ArgoGroup",
    "FleetView",
    "fleet_view",
]

ARGO_NAMESPACE = "argocd"
FLUX_NAMESPACE = "flux-system"

FLEET_MODE_THRESHOLD = 10
"""With ``fleet_mode: auto``, a group of more than this many Argo CD clusters is delivered
by one ApplicationSet with progressive syncs instead of one Application per cluster."""


@dataclass(frozen=True)
class ArgoGroup:
    """The Argo CD clusters one root Application syncs."""

    namespace: str
    repo_url: str
    revision: str
    path_prefix: str
    members: tuple[str, ...]
    """Cluster names, sorted."""
    waves: tuple[int, ...]
    """The distinct rollout waves of the members, ascending."""
    applicationset: bool
    """Fleet mode: the members' cluster Applications come from one ApplicationSet."""
    root: str
    """Name of the root Application (and of the group's ApplicationSet, with ``-clusters``)."""
    origin: SourceLocation
    """Where the group's shared objects come from: the first member's ``gitops`` block."""
    project: str
    """Argo CD project of the root and the ApplicationSet (the first member's)."""


@dataclass(frozen=True)
class FleetView:
    """Cluster name → the Argo CD group it belongs to (Argo CD clusters only)."""

    argo: Mapping[str, ArgoGroup]


def _key(plan: ClusterPlan) -> tuple[str, str, str, str]:
    gitops = plan.cluster.gitops
    assert gitops is not None
    return (gitops.namespace or ARGO_NAMESPACE, gitops.repo_url, gitops.revision,
            gitops.path_prefix.strip("/"))


def fleet_view(clusters: Sequence[ClusterPlan]) -> FleetView:
    """The Argo CD groups of the fleet.

    A group's mode is the first explicit ``fleet_mode`` of its members in name order
    (members that disagree are a lint error, GEN703), else ``auto``: an ApplicationSet above
    :data:`FLEET_MODE_THRESHOLD` members. The root is ``gen-root`` when the fleet has one
    group, else ``gen-root-<hash>`` of the group's key, so two groups that share a
    controller namespace never share a name.
    """
    grouped: dict[tuple[str, str, str, str], list[ClusterPlan]] = {}
    for plan in clusters:
        gitops = plan.cluster.gitops
        if gitops is not None and gitops.engine == "argocd":
            grouped.setdefault(_key(plan), []).append(plan)
    argo: dict[str, ArgoGroup] = {}
    for key, plans in sorted(grouped.items()):
        plans.sort(key=lambda p: p.name)
        settings = [p.cluster.gitops for p in plans if p.cluster.gitops is not None]
        modes = [g.fleet_mode for g in settings if g.fleet_mode != "auto"]
        mode = modes[0] if modes else (
            "applicationset" if len(plans) > FLEET_MODE_THRESHOLD else "applications")
        digest = hashlib.sha256("\0".join(key).encode("utf-8")).hexdigest()[:6]
        first = plans[0]
        assert first.cluster.gitops is not None
        group = ArgoGroup(
            namespace=key[0], repo_url=key[1], revision=key[2], path_prefix=key[3],
            members=tuple(p.name for p in plans),
            waves=tuple(sorted({g.wave for g in settings})),
            applicationset=mode == "applicationset",
            root="gen-root" if len(grouped) == 1 else f"gen-root-{digest}",
            origin=first.located.at("gitops"),
            project=first.cluster.gitops.project,
        )
        for plan in plans:
            argo[plan.name] = group
    return FleetView(argo)
