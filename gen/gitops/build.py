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

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from gen.errors import SourceLocation
from gen.fleet.manifests import MIG_CONFIGMAP_NAME, labels, manifest, tolerations
from gen.fleet.plan import (
    BOOTSTRAP_DIR,
    META_DIR,
    ROOT_DIR,
    STAGES,
    Built,
    ClusterPlan,
    FileSpec,
    ManifestSpec,
    PoolPlan,
)
from gen.gitops.fleet import ARGO_NAMESPACE, FLUX_NAMESPACE, ArgoGroup, FleetView, fleet_view

__all__ = [
    "ARGO_NAMESPACE",
    "FLUX_NAMESPACE",
    "NVIDIA_HELM_REPO",
    "Chart",
    "build",
    "dra_driver_values",
    "files",
    "flux_git_url",
    "gpu_operator_values",
    "platform_charts",
]

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
RESTRICTED_NAMESPACE = {
    "pod-security.kubernetes.io/enforce": "restricted",
    "pod-security.kubernetes.io/enforce-version": "latest",
}
"""The namespace of a chart whose pods meet 'restricted' (Kueue's manager: non-root,
RuntimeDefault seccomp, no privilege escalation, all capabilities dropped,
kubernetes-sigs/kueue charts/kueue/values.yaml @v0.19.2)."""
KUEUE_OCI_REPO = "oci://registry.k8s.io/kueue/charts"
"""Where the Kueue chart is published (kubernetes-sigs/kueue charts/kueue/README.md @v0.19.2)."""
KUEUE_RELEASE = "kueue"
KUEUE_IGNORE_DIFFERENCES = (
    {"group": "admissionregistration.k8s.io", "kind": "MutatingWebhookConfiguration",
     "jqPathExpressions": [".webhooks[]?.clientConfig.caBundle"]},
    {"group": "admissionregistration.k8s.io", "kind": "ValidatingWebhookConfiguration",
     "jqPathExpressions": [".webhooks[]?.clientConfig.caBundle"]},
    {"group": "apiextensions.k8s.io", "kind": "CustomResourceDefinition",
     "jqPathExpressions": [".spec.conversion.webhook.clientConfig.caBundle"]},
)
"""Kueue's internal certificate management writes the CA bundle into its webhook
configurations and its CRDs' conversion webhooks (the chart renders none): ignored, or
the Application never reports Synced."""
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
WAVE_KUEUE = -10
WAVE_CLUSTER = 0

ARGO_RETRY = {"limit": 10, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "5m"}}
ARGO_SYNC_OPTIONS = ("ServerSideApply=true", "ApplyOutOfSyncOnly=true")
"""Every Application: server-side apply (the GPU Operator's CRDs are too large for the
last-applied annotation); apply only what is out of sync (a sync touches only changed
objects, not every object of the cluster)."""
RESOURCES_FINALIZER = "resources-finalizer.argocd.argoproj.io"
"""Deleting an Application deletes what it deployed (a cluster removed from the profiles is
removed from the cluster); the root has none, so deleting the root orphans everything."""
GENERATE_PATHS = {"argocd.argoproj.io/manifest-generate-paths": "."}
"""A Git webhook refreshes an Application only when a commit touches its own path."""
APPLICATIONSET_GUARD = {"argocd.argoproj.io/sync-options": "Prune=confirm,Delete=confirm"}
"""The root never prunes or deletes the ApplicationSet (and so every cluster) unconfirmed."""
WAVE_LABEL = "gen.dev/wave"
"""Label of a cluster Application with its rollout wave (the RollingSync steps select on it)."""
FLEET_OWNER = "_fleet"
"""The folder under ``_root``/``_bootstrap`` of the objects a group of clusters shares."""
GENERATOR_FILE = "argocd.json"
"""Per-cluster ApplicationSet generator file, in ``_meta/<cluster>/``."""
IN_CLUSTER = "https://kubernetes.default.svc"
ROOT_NOTE = (
    "The root of the GitOps tree: apply this file once by hand (see docs/gitops.md).\n"
    "It syncs everything else under _bootstrap from Git, prune on; it is never synced."
)
FLUX_SOURCE_INTERVAL = "1m"
FLUX_HELM_REPO_INTERVAL = "1h"
FLUX_INTERVAL = "10m"
FLUX_RETRY_INTERVAL = "2m"
FLUX_TIMEOUTS = {"platform": "15m", "gpu": "5m", "workloads": "30m"}
"""Kustomization timeouts per stage: charts install slowly; vLLM pods load models for minutes
(the workloads stage waits longer when a Deployment's progress deadline is longer)."""
FLUX_WORKLOADS_TIMEOUT_MINUTES = 30
HELM_TIMEOUT = "15m"
HELM_RETRY_INTERVAL = "5m"
"""``install``/``upgrade.strategy.retryInterval`` of ``RetryOnFailure`` (helm-controller's
recommended settings)."""
HELM_CHART_LAYER = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
"""The OCI layer of a Helm chart (the OCIRepository ``layerSelector``)."""


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
    privileged: bool = True
    """Whether its namespace enforces Pod Security 'privileged' (node drivers), or
    'restricted' (a controller whose chart's pods meet it)."""
    origin_key: str = ""
    """The Cluster key that configures it (where its findings and objects point)."""
    ignore_differences: tuple[dict[str, Any], ...] = ()
    """Argo CD ``ignoreDifferences`` of its Application: fields its controller writes."""

    @property
    def namespace_labels(self) -> dict[str, str]:
        """The Pod Security labels of its namespace."""
        return PRIVILEGED_NAMESPACE if self.privileged else RESTRICTED_NAMESPACE

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
    and reboot virtualized nodes when a MIG mode change needs a GPU reset; a cluster whose
    MIG pools are all dynamic turns mig-manager off (the DRA driver owns MIG there:
    :func:`gen.nvidia.dynamic.mig_manager_off`).
    """
    from gen.nvidia.dynamic import mig_manager_off

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
    elif mig_manager_off(plan.cluster):
        values["migManager"] = {"enabled": False}
    extra = [t for t in _pool_tolerations(plan) if t != DEFAULT_OPERATOR_TOLERATION]
    if extra:
        values["daemonsets"] = {"tolerations": [DEFAULT_OPERATOR_TOLERATION, *extra]}
    return values


def dra_driver_values(plan: ClusterPlan) -> dict[str, Any]:
    """NVIDIA DRA driver Helm values: GPU allocation on, ComputeDomains on exactly where a
    service renders one (a replica across the trays of an NVLink domain:
    :func:`gen.fleet.parallelism.compute_domain`), gen's gates."""
    from gen.fleet.parallelism import compute_domain

    domains = any(compute_domain(svc) is not None for svc in plan.services
                  if svc.service.engine == "vllm" and svc.service.gpu is not None)
    values: dict[str, Any] = {
        "nvidiaDriverRoot": DRIVER_ROOT,
        "gpuResourcesEnabledOverride": True,
        "resources": {"gpus": {"enabled": True}, "computeDomains": {"enabled": domains}},
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
    """The GPU Operator (and, on DRA clusters, the DRA driver) for clusters with NVIDIA GPUs;
    Kueue for clusters whose quotas it enforces."""
    if not _nvidia_pools(plan):
        return _kueue_chart(plan)
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
    return charts + _kueue_chart(plan)


def _kueue_chart(plan: ClusterPlan) -> list[Chart]:
    """Kueue, on clusters with ``quota_engine: kueue``: the pinned chart with the
    Configuration the Kueue capability decided (``ClusterPlan.kueue_values``)."""
    if plan.cluster.quota_engine != "kueue":
        return []
    kueue = plan.cluster.kueue
    return [Chart(
        release=KUEUE_RELEASE, chart="kueue", repo_url=KUEUE_OCI_REPO,
        version=kueue.version.removeprefix("v"), namespace=kueue.namespace,
        values=dict(plan.kueue_values), wave=WAVE_KUEUE, privileged=False,
        origin_key="kueue", ignore_differences=KUEUE_IGNORE_DIFFERENCES,
    )]


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
    key = chart.origin_key or (
        "gpu_operator" if chart.release == GPU_OPERATOR_RELEASE else "dra_driver")
    return plan.located.at(key)


def _exception(charts: Sequence[Chart], namespace: str) -> dict[str, str]:
    """The Pod Security exception annotation of a chart namespace (every chart's reason)."""
    from gen.security.podsecurity import EXCEPTION_ANNOTATION

    reasons = [c.pod_security_exception for c in charts if c.namespace == namespace]
    return {EXCEPTION_ANNOTATION: "; ".join(r for r in reasons if r)}


def _wave(value: int) -> dict[str, str]:
    return {"argocd.argoproj.io/sync-wave": str(value)}


def _argo_sync_policy(*options: str) -> dict[str, Any]:
    """Automated sync with prune and self-heal, never to an empty source, with retries."""
    return {
        "automated": {"prune": True, "selfHeal": True, "allowEmpty": False},
        "syncOptions": [*ARGO_SYNC_OPTIONS, *options],
        "retry": ARGO_RETRY,
    }


def _argo_cluster_app(plan: ClusterPlan) -> dict[str, Any]:
    """What the cluster's own Application syncs: ``<path_prefix>/<cluster>`` (Kustomize)."""
    gitops = plan.cluster.gitops
    assert gitops is not None
    return {
        "path": f"{gitops.path_prefix.strip('/')}/{plan.name}",
        "server": gitops.destination_server,
        "project": gitops.project,
        "wave": str(gitops.wave),
    }


def _argo(plan: ClusterPlan, charts: Sequence[Chart]) -> list[ManifestSpec]:
    gitops = plan.cluster.gitops
    assert gitops is not None
    group = _group(plan)
    namespace = group.namespace
    common: dict[str, Any] = {"namespace": namespace, "finalizers": [RESOURCES_FINALIZER]}
    specs: list[ManifestSpec] = []
    if not group.applicationset:
        app = _argo_cluster_app(plan)
        specs.append(manifest(
            "gitops/application.yaml.j2", plan.located.at("gitops"), folder=BOOTSTRAP_DIR,
            name=plan.name, labels=_cluster_labels(plan.name, app["wave"]),
            annotations={**_wave(WAVE_CLUSTER), **GENERATE_PATHS},
            project=app["project"], server=app["server"],
            repo_url=gitops.repo_url, revision=gitops.revision, chart="",
            path=app["path"], directory=None, destination_namespace="",
            sync_policy=_argo_sync_policy(), ignore_differences=[], **common,
        ))
    for chart in charts:
        is_operator = chart.release == GPU_OPERATOR_RELEASE
        policy = _argo_sync_policy(
            "CreateNamespace=true",
            *(["RespectIgnoreDifferences=true"] if is_operator else []),
        )
        policy["managedNamespaceMetadata"] = {
            "labels": chart.namespace_labels,
            "annotations": _exception(charts, chart.namespace) if chart.privileged else {},
        }
        if chart.ignore_differences and not is_operator:
            policy["syncOptions"].append("RespectIgnoreDifferences=true")
        specs.append(manifest(
            "gitops/application.yaml.j2", _chart_origin(plan, chart), folder=BOOTSTRAP_DIR,
            name=f"{plan.name}-{chart.release}",
            labels=labels(chart.release, "platform", **{"gen.dev/cluster": plan.name}),
            annotations=_wave(chart.wave),
            project=gitops.project, server=gitops.destination_server,
            # Argo CD names an OCI Helm repository without the scheme.
            repo_url=chart.repo_url.removeprefix("oci://"), revision=chart.version,
            chart=chart.chart, release=chart.release, values=chart.values,
            destination_namespace=chart.namespace, sync_policy=policy,
            # ClusterPolicy.spec.cdi.default: a CRD default the chart no longer renders
            # (NVIDIA/gpu-operator#2795); without this the app never reports Synced.
            ignore_differences=[{
                "group": "nvidia.com", "kind": "ClusterPolicy",
                "jsonPointers": ["/spec/cdi/default"],
            }] if is_operator else list(chart.ignore_differences),
            **common,
        ))
    return specs + _argo_shared(group)


def _group(plan: ClusterPlan) -> ArgoGroup:
    view = plan.gitops_fleet
    if not isinstance(view, FleetView) or plan.name not in view.argo:
        view = fleet_view([plan])  # built alone (tests, library callers): a group of one
    return view.argo[plan.name]


def _cluster_labels(cluster: str, wave: str) -> dict[str, str]:
    return labels(cluster, "gitops", **{"gen.dev/cluster": cluster, WAVE_LABEL: wave})


def _argo_shared(group: ArgoGroup) -> list[ManifestSpec]:
    """The objects every member of the group renders alike: the root Application (applied
    by hand, in ``_root/_fleet``) and, in fleet mode, the ApplicationSet it syncs."""
    prefix = group.path_prefix
    # Argo CD matches directory.include against each file's path relative to source.path
    # (argo-cd reposerver/repository/repository.go, findManifests): only the Argo CD
    # folders of the group's members, never a Flux cluster's objects in the same tree.
    include = [f"{m}/{group.namespace}/*" for m in group.members]
    if group.applicationset:
        include.append(f"{FLEET_OWNER}/{group.namespace}/*")
    specs = [manifest(
        "gitops/application.yaml.j2", group.origin, folder=ROOT_DIR, owner=FLEET_OWNER,
        note=ROOT_NOTE,
        name=group.root, namespace=group.namespace, labels=labels(group.root, "gitops-root"),
        annotations=GENERATE_PATHS, finalizers=[], project=group.project,
        server=IN_CLUSTER, repo_url=group.repo_url, revision=group.revision, chart="",
        path=f"{prefix}/{BOOTSTRAP_DIR}",
        directory={"recurse": True, "include": "{" + ",".join(include) + "}"},
        destination_namespace=group.namespace, sync_policy=_argo_sync_policy(),
        ignore_differences=[],
    )]
    if not group.applicationset:
        return specs
    name = f"{group.root}-clusters"
    template = {
        "metadata": {
            "name": "{{.cluster}}",
            "labels": {**labels("{{.cluster}}", "gitops"),
                       "gen.dev/cluster": "{{.cluster}}", WAVE_LABEL: "{{.wave}}"},
            "annotations": {**GENERATE_PATHS},
            "finalizers": [RESOURCES_FINALIZER],
        },
        "spec": {
            "project": "{{.project}}",
            "source": {"repoURL": group.repo_url, "targetRevision": group.revision,
                       "path": "{{.path}}"},
            "destination": {"server": "{{.server}}"},
            "syncPolicy": _argo_sync_policy(),
        },
    }
    specs.append(manifest(
        "gitops/applicationset.yaml.j2", group.origin, folder=BOOTSTRAP_DIR,
        owner=FLEET_OWNER, name=name, namespace=group.namespace,
        labels=labels(name, "gitops"), annotations=APPLICATIONSET_GUARD,
        repo_url=group.repo_url, revision=group.revision,
        files=[{"path": f"{prefix}/{META_DIR}/{m}/{GENERATOR_FILE}"} for m in group.members],
        steps=[{"matchExpressions": [
            {"key": WAVE_LABEL, "operator": "In", "values": [str(wave)]},
        ]} for wave in group.waves],
        app_template=template,
    ))
    return specs


def files(plan: ClusterPlan) -> list[FileSpec]:
    """Files outside synced paths: in fleet mode, the cluster's ApplicationSet generator
    file ``_meta/<cluster>/argocd.json`` (the parameters of its Application)."""
    gitops = plan.cluster.gitops
    if gitops is None or gitops.engine != "argocd" or not _group(plan).applicationset:
        return []
    from gen.fleet.generated import JSON_KEY, json_header

    origin = plan.located.at("gitops")
    params = {JSON_KEY: json_header(origin.path), "cluster": plan.name,
              **_argo_cluster_app(plan)}
    text = json.dumps(params, indent=2, sort_keys=True) + "\n"
    return [FileSpec(PurePosixPath(META_DIR, plan.name, GENERATOR_FILE), text.encode("utf-8"),
                     origin)]


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
            name=ns, labels={**labels(ns, "namespace"), **chart.namespace_labels},
            annotations=_exception(charts, ns) if chart.privileged else {},
        ))
    for name, chart in sorted({c.repo_name: c for c in charts if not c.oci}.items()):
        specs.append(manifest(
            "gitops/helmrepository.yaml.j2", _chart_origin(plan, chart), stage="platform",
            name=name, namespace=namespace, labels=labels(name, "platform"),
            url=chart.repo_url, type="default", interval=FLUX_HELM_REPO_INTERVAL,
        ))
    for chart in charts:
        if chart.oci:
            # helm-controller's recommended source for OCI charts: an OCIRepository pinned
            # to the chart's tag, named by the HelmRelease's chartRef.
            specs.append(manifest(
                "gitops/ocirepository.yaml.j2", _chart_origin(plan, chart), stage="platform",
                name=chart.release, namespace=namespace, labels=labels(chart.release, "platform"),
                url=f"{chart.repo_url}/{chart.chart}", tag=chart.version,
                interval=FLUX_HELM_REPO_INTERVAL, layer_media_type=HELM_CHART_LAYER,
            ))
        specs.append(manifest(
            "gitops/helmrelease.yaml.j2", _chart_origin(plan, chart), stage="platform",
            name=chart.release, namespace=namespace, labels=labels(chart.release, "platform"),
            chart=chart.chart, version=chart.version, repo=chart.repo_name,
            chart_ref={"kind": "OCIRepository", "name": chart.release} if chart.oci else None,
            release=chart.release, target_namespace=chart.namespace,
            values=chart.values, timeout=HELM_TIMEOUT, interval=FLUX_INTERVAL,
            retry_interval=HELM_RETRY_INTERVAL,
            depends_on=[{"name": d} for d in chart.depends_on],
        ))
    return specs


def _workloads_timeout(specs: Sequence[ManifestSpec]) -> str:
    """The workloads Kustomization's health-check timeout: the default, or longer than the
    slowest Deployment's ``progressDeadlineSeconds`` plus a minute, so that Flux reports a
    stuck rollout as the deployment controller does instead of giving up first."""
    deadline = max((int(s.context.get("progress_deadline_seconds", 0)) for s in specs),
                   default=0)
    minutes = max(FLUX_WORKLOADS_TIMEOUT_MINUTES, -(-deadline // 60) + 1)
    return f"{minutes}m"


def _flux_bootstrap(
    plan: ClusterPlan, stages: Sequence[str], specs: Sequence[ManifestSpec]
) -> list[ManifestSpec]:
    gitops = plan.cluster.gitops
    assert gitops is not None
    namespace = gitops.namespace or FLUX_NAMESPACE
    origin = plan.located.at("gitops")
    prefix = gitops.path_prefix.strip("/")
    bootstrap = f"{prefix}/{BOOTSTRAP_DIR}/{plan.name}"
    out = [manifest(
        "gitops/gitrepository.yaml.j2", origin, folder=BOOTSTRAP_DIR,
        name=plan.name, namespace=namespace, labels=labels(plan.name, "gitops"),
        url=flux_git_url(gitops.repo_url), ref=_flux_ref(gitops.revision),
        interval=FLUX_SOURCE_INTERVAL,
        # Clone only what this cluster's Kustomizations read.
        sparse_checkout=[f"{prefix}/{plan.name}", bootstrap],
    )]
    timeouts = {**FLUX_TIMEOUTS, "workloads": _workloads_timeout(specs)}
    previous: str | None = None
    for stage in stages:
        name = f"{plan.name}-{stage}"
        out.append(manifest(
            "gitops/kustomization.yaml.j2", origin, folder=BOOTSTRAP_DIR,
            name=name, namespace=namespace,
            labels=labels(plan.name, "gitops", **{"gen.dev/stage": stage}),
            path=f"./{prefix}/{plan.name}/{stage}",
            source=plan.name, interval=FLUX_INTERVAL, retry_interval=FLUX_RETRY_INTERVAL,
            timeout=timeouts[stage], deletion_policy="MirrorPrune",
            depends_on=[{"name": previous}] if previous else [],
        ))
        previous = name
    out.append(manifest(
        "gitops/kustomization.yaml.j2", origin, folder=ROOT_DIR, note=ROOT_NOTE,
        name=f"{plan.name}-bootstrap", namespace=namespace,
        labels=labels(plan.name, "gitops-root"),
        path=f"./{bootstrap}", source=plan.name, interval=FLUX_INTERVAL,
        retry_interval=FLUX_RETRY_INTERVAL, timeout=FLUX_TIMEOUTS["gpu"],
        # Deleting the root leaves everything in place (mass-deletion guard); removing a
        # cluster's files prunes its Kustomizations, which delete what they applied.
        deletion_policy="Orphan", depends_on=[],
    ))
    return out


def build(plan: ClusterPlan) -> Built:
    """Bootstrap objects and platform charts of one cluster, and its :func:`files`.

    It wraps what the other builders made: ``plan.manifests`` holds their objects (the
    builder runs last, :func:`gen.pipeline.build_cluster`), and a Flux Kustomization is
    emitted only for a stage folder that will exist.
    """
    return Built(_specs(plan, plan.manifests), files(plan))


def _specs(plan: ClusterPlan, specs: Sequence[ManifestSpec]) -> list[ManifestSpec]:
    gitops = plan.cluster.gitops
    if gitops is None:
        return []
    charts = platform_charts(plan)
    if gitops.engine == "argocd":
        return _argo(plan, charts)
    out = _flux_platform(plan, charts)
    present = {s.stage for s in (*specs, *out) if not s.folder}
    return out + _flux_bootstrap(plan, [s for s in STAGES if s in present], specs)
