"""Kueue's Configuration and the Helm values of its chart, from the cluster's queues.

The chart (``oci://registry.k8s.io/kueue/charts/kueue``, kubernetes-sigs/kueue
charts/kueue/values.yaml @v0.19.2) takes the whole manager Configuration as one string,
``managerConfig.controllerManagerConfigYaml``, and the feature gates as
``controllerManager.featureGates`` (``[{name, enabled}]``). gen writes the chart's default
Configuration with three changes (apis/config/v1beta2/configuration_types.go @v0.19.2):

- ``integrations.frameworks``: ``deployment`` (which enables ``pod`` implicitly,
  pkg/controller/jobs/deployment/deployment_controller.go), and
  ``leaderworkerset.x-k8s.io/leaderworkerset`` where the cluster has the ``lws`` add-on;
  nothing else, so Kueue needs no CRD the cluster lacks;
- ``resources.quotaCheckStrategy: IgnoreUndeclared``: a ClusterQueue counts only what it
  covers (GPUs), not the pods' CPU and memory;
- ``resources.deviceClassMappings`` on DRA clusters: each DeviceClass a quota counts, as its
  own logical resource (:func:`gen.kueue.queues.dra_resource`).

The string is JSON (a YAML subset), written with sorted keys: deterministic.
"""

from __future__ import annotations

import json
from typing import Any

from gen.fleet.manifests import has_addon
from gen.fleet.plan import ClusterPlan
from gen.kueue.queues import dra_resource, kueue_enabled

__all__ = ["FEATURE_GATES", "configuration", "feature_gates", "frameworks", "values"]

CHART_DEFAULTS: dict[str, Any] = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "health": {"healthProbeBindAddress": ":8081"},
    "metrics": {"bindAddress": ":8443"},
    "webhook": {"port": 9443},
    "leaderElection": {"leaderElect": True, "resourceName": "c1f6bfd2.kueue.x-k8s.io"},
    "controller": {"groupKindConcurrency": {
        "Job.batch": 5, "Pod": 5, "Workload.kueue.x-k8s.io": 10,
        "LocalQueue.kueue.x-k8s.io": 5, "ClusterQueue.kueue.x-k8s.io": 5,
        "ResourceFlavor.kueue.x-k8s.io": 1,
    }},
    "clientConnection": {"qps": 300, "burst": 500},
}
"""The chart's default ``controllerManagerConfigYaml`` (charts/kueue/values.yaml @v0.19.2),
less its ``integrations`` (gen sets its own)."""

FEATURE_GATES: dict[str, str] = {
    "QuotaCheckStrategy": "0.18",
    "KueueDRAIntegration": "0.18",
}
"""The Kueue gates gen's Configuration relies on, by the Kueue minor that first has them
(pkg/features/kube_features.go @v0.19.2: QuotaCheckStrategy alpha in 0.18, beta on in 0.19;
KueueDRAIntegration beta on from 0.18, named DynamicResourceAllocation before). A manager
given a gate it does not know refuses to start."""

LWS_FRAMEWORK = "leaderworkerset.x-k8s.io/leaderworkerset"


def frameworks(plan: ClusterPlan) -> list[str]:
    """The integrations the cluster's workloads need."""
    found = ["deployment"]
    if has_addon(plan, "lws"):
        found.append(LWS_FRAMEWORK)
    return found


def device_classes(plan: ClusterPlan) -> list[str]:
    """The DeviceClasses the quotas of a DRA cluster count (each one mapped)."""
    if plan.dra_api_version is None:
        return []
    return sorted({q.gpu_class for q in plan.cluster.quotas})


def feature_gates(plan: ClusterPlan) -> dict[str, bool]:
    """The gates gen turns on explicitly (on at v0.19.2 already; explicit, so that an
    older chart either has them on or refuses to start, never silently drops them)."""
    gates = {"QuotaCheckStrategy": True}
    if plan.dra_api_version is not None:
        gates["KueueDRAIntegration"] = True
    return gates


def configuration(plan: ClusterPlan) -> dict[str, Any]:
    """Kueue's manager Configuration for the cluster."""
    resources: dict[str, Any] = {"quotaCheckStrategy": "IgnoreUndeclared"}
    mappings = [{"name": dra_resource(c), "deviceClassNames": [c]}
                for c in device_classes(plan)]
    if mappings:
        resources["deviceClassMappings"] = mappings
    return {**CHART_DEFAULTS, "integrations": {"frameworks": frameworks(plan)},
            "resources": resources}


def values(plan: ClusterPlan) -> dict[str, Any]:
    """The Kueue chart's Helm values (empty unless the engine is Kueue)."""
    if not kueue_enabled(plan):
        return {}
    return {
        "controllerManager": {"featureGates": [
            {"name": name, "enabled": on} for name, on in sorted(feature_gates(plan).items())
        ]},
        "managerConfig": {"controllerManagerConfigYaml": json.dumps(
            configuration(plan), indent=2, sort_keys=True)},
    }
