"""GitOps delivery: the bootstrap objects of a cluster and its NVIDIA platform charts.

Argo CD clusters get, in ``out/_bootstrap/<cluster>/<namespace>/`` (never synced):

- one ``Application`` ``<cluster>`` that syncs ``<path_prefix>/<cluster>`` (Kustomize: the
  top ``kustomization.yaml`` lists the stages; objects inside are ordered by sync waves);
- one Helm ``Application`` per platform chart (GPU Operator; the DRA driver on DRA
  clusters), at sync waves before the cluster's Application.

Flux clusters get a ``GitRepository`` and a chain of Flux Kustomizations
``<cluster>-platform`` → ``<cluster>-gpu`` → ``<cluster>-workloads`` (``dependsOn``,
``wait``) in the bootstrap folder, and the platform charts as ``HelmRepository`` +
``HelmRelease`` (plus their privileged Namespaces) in ``out/<cluster>/platform/``.
A Kustomization is emitted only for a stage that holds objects, so every path it names
exists; the chain links the stages that do.

Clusters without ``gitops`` get nothing from this module; clusters without NVIDIA node
pools get no platform charts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gen.errors import SourceLocation
from gen.fleet.manifests import MIG_CONFIGMAP_NAME, labels, manifest, tolerations
from gen.fleet.plan import BOOTSTRAP_DIR, STAGES, ClusterPlan, ManifestSpec, PoolPlan

__all__ = [
    "ARGO_NAMESPACE",
    "FLUX_NAMESPACE",
    "NVIDIA_HELM_REPO",
    "Chart",
    "build",
    "dra_driver_values",
    "flux_git_url",
    "gpu_operator_values",
    "platform_charts",
]

ARGO_NAMESPACE = "argocd"
FLUX_NAMESPACE = "flux-system"

NVIDIA_HELM_REPO = "https://helm.ngc.nvidia.com/nvidia"
"""NGC Helm repository: ``gpu-operator`` and the calendar-versioned ``nvidia-dra-driver-gpu``."""
DRA_OCI_REPO = "oci://registry.k8s.io/dra-driver-nvidia/charts"
"""Where the SemVer (0.x) DRA driver chart ``dra-driver-nvidia-gpu`` is published."""

GPU_OPERATOR_RELEASE = "gpu-operator"
DRA_DRIVER_RELEASE = "nvidia-dra-driver-gpu"
DRA_DRIVER_RELEASE_OCI = "dra-driver-nvidia-gpu"

DRIVER_ROOT = "/run/nvidia/driver"
"""Where GPU Operator-managed drivers live on the host (the DRA driver's ``nvidiaDriverRoot``)."""
DEFAULT_OPERATOR_TOLERATION = {
    "key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule",
}
"""The GPU Operator chart's default ``daemonsets.tolerations`` entry."""
PRIVILEGED_NAMESPACE = {
    "pod-security.kubernetes.io/enforce": "privileged",
    "pod-security.kubernetes.io/enforce-version": "latest",
}
"""Driver DaemonSets are privileged: their namespaces must not enforce 'restricted'."""
GPU_OPERATOR_EXCEPTION = (
    "the NVIDIA GPU Operator's DaemonSets (driver, container toolkit, device plugin, "
    "MIG manager, DCGM exporter, validator) run privileged with hostPath mounts; they come "
    "from the pinned Helm chart, not from gen"
)
DRA_DRIVER_EXCEPTION = (
    "the NVIDIA DRA driver's kubelet plugin runs privileged with hostPath mounts (driver "
    "root, CDI specs, kubelet plugin registry); it comes from the pinned Helm chart, not "
    "from gen"
)
"""Why each chart's namespace enforces 'privileged' (inherent to node drivers, so not a
profile setting); written as the gen.dev/pod-security-exception annotation."""

WAVE_GPU_OPERATOR = -20
WAVE_DRA_DRIVER = -15
WAVE_CLUSTER = 0

ARGO_RETRY = {"limit": 10, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"}}
FLUX_SOURCE_INTERVAL = "1m"
FLUX_HELM_REPO_INTERVAL = "1h"
FLUX_INTERVAL = "10m"
FLUX_RETRY_INTERVAL = "2m"
FLUX_TIMEOUTS = {"platform": "15m", "gpu": "5m", "workloads": "30m"}
"""Kustomization timeouts per stage: charts install slowly; vLLM pods load models for minutes."""
HELM_TIMEOUT = "15m"


@dataclass(frozen=True)
class Chart:
    """A pinned Helm chart the cluster's platform stage installs."""

    release: str
    """Release name (and the object name of its Argo Application / Flux HelmRelease)."""
    chart: str
    repo_url: str
    """``https://`` Helm repository or ``oci://`` registry path."""
    version: str
    namespace: str
    values: dict[str, Any]
    wave: int
    """Argo CD sync wave of its Application (before the cluster's own Application)."""
    depends_on: tuple[str, ...] = ()
    """Releases that must be ready first (Flux ``dependsOn``)."""
    pod_security_exception: str = ""
    """Why its namespace enforces Pod Security 'privileged'."""

    @property
    def oci(self) -> bool:
        """True when the chart comes from an OCI registry."""
        return self.repo_url.startswith("oci://")

    @property
    def repo_name(self) -> str:
        """Name of the Flux HelmRepository that serves this chart."""
        return "dra-driver-nvidia" if self.oci else "nvidia"


def _nvidia_pools(plan: ClusterPlan) -> list[PoolPlan]:
    return [p for p in plan.pools if p.pool.platform == "nvidia"]


def _pool_tolerations(plan: ClusterPlan) -> list[dict[str, str]]:
    """One ``Exists`` toleration per distinct (key, effect) taint of the NVIDIA pools."""
    return tolerations(_nvidia_pools(plan), any_value=True)


def gpu_operator_values(plan: ClusterPlan) -> dict[str, Any]:
    """GPU Operator Helm values derived from the plan.

    The device plugin runs only on device-plugin clusters (the DRA driver replaces it);
    MIG clusters point mig-manager at gen's mig-parted ConfigMap, with the plan's strategy,
    and reboot virtualized nodes when a MIG mode change needs a GPU reset.
    """
    dra = plan.cluster.allocation == "dra"
    values: dict[str, Any] = {"devicePlugin": {"enabled": not dra}}
    if dra:
        # CDI is required by the DRA driver (default on from chart v25.10.0, explicit here).
        values["cdi"] = {"enabled": True}
    if plan.mig_strategy != "none":
        values["mig"] = {"strategy": plan.mig_strategy}
        mig_manager: dict[str, Any] = {
            "enabled": True,
            "config": {"name": MIG_CONFIGMAP_NAME, "default": "all-disabled"},
        }
        if any(pool.pool.virtualized for pool in plan.mig_pools):
            mig_manager["env"] = [{"name": "WITH_REBOOT", "value": "true"}]
        values["migManager"] = mig_manager
    extra = [t for t in _pool_tolerations(plan) if t != DEFAULT_OPERATOR_TOLERATION]
    if extra:
        values["daemonsets"] = {"tolerations": [DEFAULT_OPERATOR_TOLERATION, *extra]}
    return values


def dra_driver_values(plan: ClusterPlan) -> dict[str, Any]:
    """NVIDIA DRA driver Helm values: GPU allocation on, ComputeDomains off, gen's gates."""
    values: dict[str, Any] = {
        "nvidiaDriverRoot": DRIVER_ROOT,
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}},
    }
    from gen.nvidia.dynamic import driver_gates

    gates = driver_gates(plan.cluster)  # DynamicMIG on exactly for clusters with dynamic pools
    if gates:
        values["featureGates"] = gates
    tolerations = _pool_tolerations(plan)
    if tolerations:
        values["kubeletPlugin"] = {"tolerations": tolerations}
    return values


def _dra_chart(plan: ClusterPlan) -> Chart:
    driver = plan.cluster.dra_driver
    version = driver.version.removeprefix("v")
    semver = int(version.split(".")[0]) < 25  # 25.x, 26.x: calendar releases on NGC
    return Chart(
        release=DRA_DRIVER_RELEASE_OCI if semver else DRA_DRIVER_RELEASE,
        chart=DRA_DRIVER_RELEASE_OCI if semver else DRA_DRIVER_RELEASE,
        repo_url=DRA_OCI_REPO if semver else NVIDIA_HELM_REPO,
        version=version,
        namespace=driver.namespace,
        values=dra_driver_values(plan),
        wave=WAVE_DRA_DRIVER,
        depends_on=(GPU_OPERATOR_RELEASE,),
        pod_security_exception=DRA_DRIVER_EXCEPTION,
    )


def platform_charts(plan: ClusterPlan) -> list[Chart]:
    """The GPU Operator (and, on DRA clusters, the DRA driver) for clusters with NVIDIA GPUs."""
    if not _nvidia_pools(plan):
        return []
    operator = plan.cluster.gpu_operator
    charts = [Chart(
        release=GPU_OPERATOR_RELEASE,
        chart="gpu-operator",
        repo_url=NVIDIA_HELM_REPO,
        version=operator.version,
        namespace=operator.namespace,
        values=gpu_operator_values(plan),
        wave=WAVE_GPU_OPERATOR,
        pod_security_exception=GPU_OPERATOR_EXCEPTION,
    )]
    if plan.cluster.allocation == "dra":
        charts.append(_dra_chart(plan))
    return charts


def flux_git_url(url: str) -> str:
    """Flux needs a URL scheme: ``git@host:org/repo`` becomes ``ssh://git@host/org/repo``."""
    match = re.fullmatch(r"([^@/]+@[^:/]+):(?!//)(.+)", url)
    return f"ssh://{match.group(1)}/{match.group(2)}" if match else url


def _flux_ref(revision: str) -> dict[str, str]:
    if re.fullmatch(r"[0-9a-f]{40}", revision):
        return {"commit": revision}
    if revision.startswith("refs/"):
        return {"name": revision}
    return {"branch": revision}


def _chart_origin(plan: ClusterPlan, chart: Chart) -> SourceLocation:
    key = "gpu_operator" if chart.release == GPU_OPERATOR_RELEASE else "dra_driver"
    return plan.located.at(key)


def _exception(charts: Sequence[Chart], namespace: str) -> dict[str, str]:
    """The Pod Security exception annotation of a chart namespace (every chart's reason)."""
    from gen.security.podsecurity import EXCEPTION_ANNOTATION

    reasons = [c.pod_security_exception for c in charts if c.namespace == namespace]
    return {EXCEPTION_ANNOTATION: "; ".join(r for r in reasons if r)}


def _wave(value: int) -> dict[str, str]:
    return {"argocd.argoproj.io/sync-wave": str(value)}


def _argo(plan: ClusterPlan, charts: Sequence[Chart]) -> list[ManifestSpec]:
    gitops = plan.cluster.gitops
    assert gitops is not None
    namespace = gitops.namespace or ARGO_NAMESPACE
    common: dict[str, Any] = {
        "namespace": namespace, "project": gitops.project,
        "server": gitops.destination_server, "retry": ARGO_RETRY,
    }
    specs = [manifest(
        "gitops/application.yaml.j2", plan.located.at("gitops"), folder=BOOTSTRAP_DIR,
        name=plan.name, labels=labels(plan.name, "gitops"), sync_wave=str(WAVE_CLUSTER),
        repo_url=gitops.repo_url, revision=gitops.revision, chart="",
        path=f"{gitops.path_prefix.strip('/')}/{plan.name}",
        destination_namespace="", sync_options=["ServerSideApply=true"],
        managed_namespace_labels={}, managed_namespace_annotations={},
        ignore_differences=[], **common,
    )]
    for chart in charts:
        is_operator = chart.release == GPU_OPERATOR_RELEASE
        specs.append(manifest(
            "gitops/application.yaml.j2", _chart_origin(plan, chart), folder=BOOTSTRAP_DIR,
            name=f"{plan.name}-{chart.release}",
            labels=labels(chart.release, "platform", **{"gen.dev/cluster": plan.name}),
            sync_wave=str(chart.wave),
            # Argo CD names an OCI Helm repository without the scheme.
            repo_url=chart.repo_url.removeprefix("oci://"), revision=chart.version,
            chart=chart.chart, release=chart.release, values=chart.values,
            destination_namespace=chart.namespace,
            sync_options=[
                "CreateNamespace=true", "ServerSideApply=true",
                *(["RespectIgnoreDifferences=true"] if is_operator else []),
            ],
            managed_namespace_labels=PRIVILEGED_NAMESPACE,
            managed_namespace_annotations=_exception(charts, chart.namespace),
            # ClusterPolicy.spec.cdi.default: a CRD default the chart no longer renders
            # (NVIDIA/gpu-operator#2795); without this the app never reports Synced.
            ignore_differences=[{
                "group": "nvidia.com", "kind": "ClusterPolicy",
                "jsonPointers": ["/spec/cdi/default"],
            }] if is_operator else [],
            **common,
        ))
    return specs


def _flux_platform(plan: ClusterPlan, charts: Sequence[Chart]) -> list[ManifestSpec]:
    """Namespaces, HelmRepositories and HelmReleases in ``out/<cluster>/platform/``."""
    gitops = plan.cluster.gitops
    assert gitops is not None
    namespace = gitops.namespace or FLUX_NAMESPACE
    taken = {svc.service.namespace for svc in plan.services}
    taken |= {q.namespace for q in plan.cluster.quotas}
    specs: list[ManifestSpec] = []
    for ns, chart in sorted({c.namespace: c for c in reversed(charts)}.items()):
        if ns in taken:
            continue
        specs.append(manifest(
            "core/namespace.yaml.j2", _chart_origin(plan, chart), stage="platform",
            name=ns, labels={**labels(ns, "namespace"), **PRIVILEGED_NAMESPACE},
            annotations=_exception(charts, ns),
        ))
    repos = {c.repo_name: c for c in charts}
    for name, chart in sorted(repos.items()):
        specs.append(manifest(
            "gitops/helmrepository.yaml.j2", _chart_origin(plan, chart), stage="platform",
            name=name, namespace=namespace, labels=labels(name, "platform"),
            url=chart.repo_url,
            type="oci" if chart.oci else "default",
            interval=FLUX_HELM_REPO_INTERVAL,
        ))
    for chart in charts:
        specs.append(manifest(
            "gitops/helmrelease.yaml.j2", _chart_origin(plan, chart), stage="platform",
            name=chart.release, namespace=namespace, labels=labels(chart.release, "platform"),
            chart=chart.chart, version=chart.version, repo=chart.repo_name,
            release=chart.release, target_namespace=chart.namespace,
            values=chart.values, timeout=HELM_TIMEOUT, interval=FLUX_INTERVAL,
            depends_on=[{"name": d} for d in chart.depends_on],
        ))
    return specs


def _flux_bootstrap(plan: ClusterPlan, stages: Sequence[str]) -> list[ManifestSpec]:
    gitops = plan.cluster.gitops
    assert gitops is not None
    namespace = gitops.namespace or FLUX_NAMESPACE
    origin = plan.located.at("gitops")
    specs = [manifest(
        "gitops/gitrepository.yaml.j2", origin, folder=BOOTSTRAP_DIR,
        name=plan.name, namespace=namespace, labels=labels(plan.name, "gitops"),
        url=flux_git_url(gitops.repo_url), ref=_flux_ref(gitops.revision),
        interval=FLUX_SOURCE_INTERVAL,
    )]
    previous: str | None = None
    for stage in stages:
        name = f"{plan.name}-{stage}"
        specs.append(manifest(
            "gitops/kustomization.yaml.j2", origin, folder=BOOTSTRAP_DIR,
            name=name, namespace=namespace,
            labels=labels(plan.name, "gitops", **{"gen.dev/stage": stage}),
            path=f"./{gitops.path_prefix.strip('/')}/{plan.name}/{stage}",
            source=plan.name, interval=FLUX_INTERVAL, retry_interval=FLUX_RETRY_INTERVAL,
            timeout=FLUX_TIMEOUTS[stage],
            depends_on=[{"name": previous}] if previous else [],
        ))
        previous = name
    return specs


def build(plan: ClusterPlan, specs: Sequence[ManifestSpec] = ()) -> list[ManifestSpec]:
    """Bootstrap objects and platform charts of one cluster.

    ``specs`` are the manifests the other builders made for the cluster: a Flux
    Kustomization is emitted only for a stage folder that will exist.
    """
    gitops = plan.cluster.gitops
    if gitops is None:
        return []
    charts = platform_charts(plan)
    if gitops.engine == "argocd":
        return _argo(plan, charts)
    out = _flux_platform(plan, charts)
    present = {s.stage for s in (*specs, *out) if not s.folder}
    return out + _flux_bootstrap(plan, [s for s in STAGES if s in present])
