"""The Plan: what resolve produces and render consumes. Immutable, one entry per cluster.

A :class:`ClusterPlan` holds the resolved profiles of one cluster (node pools with their
catalog GPUs and MIG layouts, the GPU classes and services that run there) and the list of
:class:`ManifestSpec` to render: which template, with which context, to which file, and
which profile location produced it. Templates only loop and branch over that context.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, NamedTuple

from gen.errors import Finding, SourceLocation, UnresolvedReferenceError

if TYPE_CHECKING:
    from gen.fleet.profiles import Located, ProfileSet
    from gen.models import Cluster, GPUClass, InferenceService, MIGLayout, NodePool
    from gen.nvidia.gpus import GPU
    from gen.nvidia.mig import LayoutCheck
    from gen.serving.model_catalog import LLMSpec

__all__ = [
    "BOOTSTRAP_DIR",
    "HOSTS_DIR",
    "META_DIR",
    "REPORTS_DIR",
    "ROOT_DIR",
    "STAGES",
    "Built",
    "ClusterPlan",
    "FileSpec",
    "ManifestSpec",
    "Plan",
    "PoolPlan",
    "ServicePlan",
]

# Folders beside out/<cluster>/ that are never synced; '_' cannot start a cluster name.
BOOTSTRAP_DIR = "_bootstrap"
STAGES = ("platform", "gpu", "workloads")
"""Sub-folders of out/<cluster>/, applied in this order (Flux dependsOn, Argo sync waves)."""
ROOT_DIR = "_root"
"""Root GitOps objects, applied once by hand; they sync ``_bootstrap`` (never synced themselves)."""
META_DIR = "_meta"
"""Per-cluster metadata for tools (provenance, ApplicationSet generator files); never synced."""
REPORTS_DIR = "_reports"
HOSTS_DIR = "_hosts"


@dataclass(frozen=True)
class ManifestSpec:
    """One Kubernetes object to render from a template."""

    template: str
    context: Mapping[str, Any]
    origin: SourceLocation
    note: str = ""
    """A comment written at the top of the output file (e.g. immutability warnings)."""
    folder: str = ""
    """Empty: the cluster's synced folder. Otherwise a folder under out/ (bootstrap)."""
    stage: str = "workloads"
    """Apply stage inside out/<cluster>/: 'platform', 'gpu' or 'workloads' (in that order)."""
    owner: str = ""
    """With a ``folder``: the folder under it instead of the cluster's name, for an object
    several clusters share (each renders the same bytes there); starts with ``_``."""


@dataclass(frozen=True)
class FileSpec:
    """A non-manifest file (report, diagram, launchd plist) written outside synced paths."""

    path: PurePosixPath
    content: bytes
    origin: SourceLocation


class Built(NamedTuple):
    """What one capability's builder makes for a cluster (:func:`gen.pipeline.build_cluster`
    walks the builders): its objects and its files."""

    specs: Sequence[ManifestSpec] = ()
    files: Sequence[FileSpec] = ()


@dataclass(frozen=True)
class PoolPlan:
    """A node pool with its catalog GPU and MIG layout resolved."""

    pool: NodePool
    located_at: SourceLocation
    gpu: GPU | None
    mig_layout: MIGLayout | None = None
    mig_checks: tuple[tuple[tuple[int, ...], LayoutCheck], ...] = ()
    """(GPU indices, placement check) per distinct per-GPU layout."""
    refused_classes: frozenset[str] = frozenset()
    """GPU classes with raw CEL selectors (``cel:``) whose DeviceClass selects none of the
    pool's devices: the pipeline evaluates them on the pool's simulated devices
    (:func:`gen.dra.admission.cel_refusals`) before the builders run, and placement
    (:func:`gen.fleet.placement.candidates`) leaves the pool out for those classes."""

    @property
    def name(self) -> str:
        """Pool name."""
        return self.pool.name

    @property
    def node_labels(self) -> dict[str, str]:
        """Labels the pool's nodes carry, with the MIG layout label gen requires."""
        labels = dict(self.pool.labels)
        if self.mig_layout is not None:
            labels["nvidia.com/mig.config"] = self.mig_layout.name
        return labels

    @property
    def total_gpus(self) -> int:
        """GPUs in the pool."""
        return self.pool.nodes * self.pool.gpus_per_node


@dataclass(frozen=True)
class ServicePlan:
    """A service as it runs in one cluster."""

    located: Located[InferenceService]
    gpu_class: GPUClass | None
    alternatives: tuple[tuple[GPUClass, int], ...]
    model: LLMSpec | None
    pools: tuple[PoolPlan, ...]
    """Pools whose nodes may run it (by node_pool pin and platform)."""
    role: str | None = None
    """``prefill`` or ``decode`` for a role of a disaggregated service (its profile is the
    service with the role's settings, :mod:`gen.fleet.roles`); None for a service."""

    @property
    def service(self) -> InferenceService:
        """The profile."""
        return self.located.value

    def replicas_at(self, at_max: bool = False) -> tuple[SourceLocation, str]:
        """Where the replica count a capacity finding asks to lower is written, and its key:
        ``autoscaling.max_replicas`` (``at_max``), ``autoscaling.min_replicas`` or
        ``replicas``; when the profile leaves it to its default, the GPU request that sizes
        each replica (``gpu.count``, else ``gpu``), never the document's first line."""
        service = self.service
        key: tuple[str, ...]
        if self.role is not None:
            where, found = self.located.document.locate(("disaggregation", self.role, "replicas"))
            if len(found) == 3:
                return where, f"disaggregation.{self.role}.replicas"
        if at_max and service.autoscaling is not None:
            key = ("autoscaling", "max_replicas")
        elif service.autoscaling is not None:
            key = ("autoscaling", "min_replicas")
        else:
            key = ("replicas",)
        where, found = self.located.document.locate(key)
        if tuple(found) == key:
            return where, ".".join(key)
        for fallback in (("gpu", "count"), ("gpu",)):
            where, found = self.located.document.locate(fallback)
            if tuple(found) == fallback:
                return where, ".".join(fallback)
        return self.located.at(*key), ".".join(key)


@dataclass(frozen=True)
class ClusterPlan:
    """Everything gen knows about one cluster."""

    located: Located[Cluster]
    minor: int
    pools: tuple[PoolPlan, ...]
    gpu_classes: Mapping[str, Located[GPUClass]]
    services: tuple[ServicePlan, ...]
    dra_api_version: str | None
    manifests: tuple[ManifestSpec, ...] = ()
    files: tuple[FileSpec, ...] = ()
    mig_strategy: str = "none"
    """'single', 'mixed' or 'none' (no MIG pools)."""
    apple: object = None
    """The Apple Silicon decisions (``gen.apple.decide.AppleDecisions``), recorded by the
    pipeline before the builders run; ``None`` until then. Typed ``object``: the fleet layer
    sits below the capabilities and does not know their types."""
    claim_templates: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Service name → the name of its ResourceClaimTemplate (a hash of the template's
    content, :func:`gen.fleet.manifests.claim_template_name`): decided by the DRA builder,
    read by the serving builder; empty until the pipeline records it."""
    local_queues: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Service name → the Kueue LocalQueue (in the service's namespace) that admits its
    workloads, on clusters with ``quota_engine: kueue``: decided by the Kueue capability
    (:mod:`gen.kueue.queues`), read through :func:`gen.fleet.manifests.queue_labels` by every
    builder of a workload; empty elsewhere and until the pipeline records it."""
    workload_priorities: Mapping[str, str] = dataclasses.field(default_factory=dict)
    """Service name → the Kueue WorkloadPriorityClass its workloads are admitted with
    (its namespace's quota's ``priority_class``); recorded with ``local_queues``."""
    kueue_values: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    """The Helm values of the cluster's Kueue chart (its Configuration: integrations, DRA
    device-class mappings, feature gates), decided by the Kueue capability and read by the
    GitOps builder that installs the chart; empty unless ``quota_engine`` is ``kueue``."""
    gitops_fleet: object = None
    """The GitOps decisions that span clusters (``gen.gitops.fleet.FleetView``: the group
    of clusters one root object syncs, fleet mode, rollout waves), recorded by the pipeline
    from the whole fleet before the builders run; ``None`` until then."""

    @property
    def cluster(self) -> Cluster:
        """The profile."""
        return self.located.value

    @property
    def name(self) -> str:
        """Cluster name."""
        return self.located.value.name

    @property
    def kubernetes_version(self) -> str:
        """Full version string, e.g. '1.34.2' (a bare '1.34' becomes '1.34.0')."""
        version = self.cluster.kubernetes_version.lstrip("v")
        return version if version.count(".") == 2 else f"{version}.0"

    @property
    def mig_pools(self) -> tuple[PoolPlan, ...]:
        """The pools with a MIG layout (and a catalog GPU)."""
        return tuple(p for p in self.pools if p.mig_layout is not None and p.gpu is not None)


@dataclass(frozen=True)
class Plan:
    """The resolved fleet."""

    profiles: ProfileSet
    clusters: tuple[ClusterPlan, ...]
    findings: tuple[Finding, ...] = ()
    """Warnings found while resolving (errors are raised)."""

    def select(self, names: Sequence[str]) -> Plan:
        """The plan with only the clusters ``names`` (in plan order); all of them if empty.

        Raises :class:`UnresolvedReferenceError` naming every unknown cluster and the known ones.
        """
        if not names:
            return self
        known = {c.name for c in self.clusters}
        missing = [name for name in names if name not in known]
        if missing:
            raise UnresolvedReferenceError(
                f"unknown cluster(s): {', '.join(missing)}; known: {', '.join(sorted(known))}"
            )
        return dataclasses.replace(
            self, clusters=tuple(c for c in self.clusters if c.name in names)
        )
