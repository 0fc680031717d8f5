"""Names, labels and pod placement every builder shares, each written once.

Capabilities do not import each other: a name one capability gives an object and another
one refers to (the ResourceClaimTemplate a vLLM pod claims, the ConfigMap mig-manager
reads, the extended resource the device plugin advertises) is defined here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from gen.errors import SourceLocation
from gen.fleet.plan import ClusterPlan, ManifestSpec, PoolPlan, ServicePlan

if TYPE_CHECKING:
    from gen.models import InferenceService

__all__ = [
    "MANAGED_BY",
    "MIG_CONFIGMAP_NAME",
    "PRIORITY_LABEL",
    "PROGRESS_MARGIN_SECONDS",
    "QUEUE_LABEL",
    "claim_template_name",
    "extended_resource_name",
    "has_addon",
    "labels",
    "manifest",
    "model_cache_storage",
    "namespaces",
    "progress_deadline_seconds",
    "queue_labels",
    "tolerations",
]

MANAGED_BY = {"app.kubernetes.io/managed-by": "gen"}

MIG_CONFIGMAP_NAME = "gen-mig-parted-config"
"""The ConfigMap that holds the cluster's mig-parted config: the MIG builder writes it, the
GPU Operator's values name it (``migManager.config.name``) for mig-manager to read."""


CLAIM_HASH_LENGTH = 8
"""Hex digits of the content hash in a claim template's name (32 bits: a collision needs
two templates of one service in one namespace, alive together, with the same 8 digits)."""


def claim_template_name(service: InferenceService, content: Mapping[str, Any]) -> str:
    """Name of the service's ResourceClaimTemplate (the DRA builder's object, the vLLM pod's
    ``resourceClaimTemplateName``): ``<service>-gpu-<hash>``.

    ``content`` is what the template holds under ``spec`` (the claim's metadata and device
    requests), which the API server never lets change. The name carries a short SHA-256 of
    it, so a changed claim is a new template with a new name, the Deployment that names it
    changes and rolls, and the GitOps engine prunes the old template: no object is ever
    updated in place, deleted and recreated, or forced.
    """
    digest = hashlib.sha256(
        json.dumps(content, sort_keys=True, separators=(",", ":")).encode("utf-8")
    ).hexdigest()
    return f"{service.name}-gpu-{digest[:CLAIM_HASH_LENGTH]}"


PROGRESS_MARGIN_SECONDS = 600
"""What a new pod may take beyond its startup probe before the rollout counts as stuck:
pulling the image (a vLLM image is about 10 GB), scheduling, allocating its claim, and
its first readiness probe."""
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600
"""Kubernetes' default ``progressDeadlineSeconds``."""


def progress_deadline_seconds(probe_period: int, startup_failure_threshold: int) -> int:
    """A Deployment's ``progressDeadlineSeconds``, from its startup probe.

    The deployment controller marks a rollout failed (``ProgressDeadlineExceeded``; Argo CD
    reports the Deployment Degraded, Flux fails the Kustomization's health check) when no
    new pod has become available for that long. A pod is allowed ``periodSeconds ×
    failureThreshold`` by its startup probe, so the deadline is that budget plus
    :data:`PROGRESS_MARGIN_SECONDS`, rounded up to a whole minute, and never below the
    Kubernetes default of 600 s.
    """
    seconds = probe_period * startup_failure_threshold + PROGRESS_MARGIN_SECONDS
    return max(DEFAULT_PROGRESS_DEADLINE_SECONDS, -(-seconds // 60) * 60)


def model_cache_storage(
    plan: ClusterPlan, service: InferenceService, replicas: int
) -> tuple[str, str | None]:
    """(access mode, StorageClass or None for the cluster default) of a service's model
    cache PVC: the service's own, else ReadWriteOnce for one replica and ReadWriteMany for
    more (every replica mounts the same cache), and the cluster's ``model_cache_class``."""
    storage = service.storage
    mode = storage.access_mode or ("ReadWriteOnce" if replicas <= 1 else "ReadWriteMany")
    return mode, storage.storage_class or plan.cluster.storage.model_cache_class


def has_addon(plan: ClusterPlan, addon: str) -> bool:
    """Whether the cluster declares ``addon`` (so the CRDs of its kinds exist there)."""
    return addon in plan.cluster.addons


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


QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
"""The label that hands a workload to Kueue: the LocalQueue of its namespace that admits it
(kubernetes-sigs/kueue pkg/controller/constants/constants.go @v0.19.2, QueueLabel)."""
PRIORITY_LABEL = "kueue.x-k8s.io/priority-class"
"""The label naming a workload's WorkloadPriorityClass (same file, WorkloadPriorityClassLabel)."""


def queue_labels(plan: ClusterPlan, svc: ServicePlan) -> dict[str, str]:
    """The Kueue labels of every workload object of ``svc`` (a Deployment, a
    LeaderWorkerSet, each role workload of disaggregated serving): its LocalQueue and
    priority class as the pipeline recorded them (``ClusterPlan.local_queues``); empty on
    clusters whose quotas are ResourceQuotas, and for a service whose namespace has no
    LocalQueue. Kueue's webhooks copy them to the pod templates."""
    name = svc.service.name
    found: dict[str, str] = {}
    if name in plan.local_queues:
        found[QUEUE_LABEL] = plan.local_queues[name]
        if name in plan.workload_priorities:
            found[PRIORITY_LABEL] = plan.workload_priorities[name]
    return found


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
    owner: str = "",
    **context: Any,
) -> ManifestSpec:
    """A ManifestSpec with its context as keyword arguments."""
    return ManifestSpec(
        template=template, context=context, origin=origin, note=note, folder=folder,
        stage=stage, owner=owner,
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
