"""Dynamic MIG: which clusters can have it, and the DRA driver gates gen sets for it.

Dynamic MIG is the NVIDIA DRA driver's ``DynamicMIG`` feature gate on top of Kubernetes'
partitionable devices (KEP-4815): the driver announces every MIG profile at every placement
as a device that consumes shared counters of its GPU, and the scheduler carves the slice a
claim needs. Facts, with their sources:

* Kubernetes: ``DRAPartitionableDevices`` is alpha (off by default) in 1.33–1.35, beta and on
  by default from 1.36, GA and locked on in 1.38 (the gate table, :mod:`gen.k8s.gates`, read
  from kubernetes/kubernetes ``pkg/features/kube_features.go`` at each minor's tag).
* The driver: the ``DynamicMIG`` gate exists from chart 25.12 (kubernetes-sigs/
  dra-driver-nvidia-gpu ``pkg/featuregates/featuregates.go``@v25.12.0, alpha, off by
  default; absent at v25.8.1) and in the project's later semver releases (v0.4.0 on). It
  cannot be combined with ``PassthroughSupport``, ``NVMLDeviceHealthCheck`` or
  ``MPSSupport`` (``ValidateFeatureGates`` in the same file: the plugin does not start).
* On 25.12.x a node whose GPUs cannot do MIG (L4, T4, L40S) publishes no ResourceSlice at
  all with ``DynamicMIG`` on (dra-driver-nvidia-gpu issue 1092); PR 1113 ("check if a device
  is MIG capable", first released in v0.4.0) fixed it.
* The gate is chart-wide and the plugin then owns MIG on every node it runs on: at start it
  destroys the MIG devices its checkpoint does not name (``DestroyUnknownMIGDevices`` in
  ``cmd/gpu-kubelet-plugin/device_state.go``, called from ``driver.go``@v25.12.0) and
  announces every MIG-capable GPU as partitionable (``GetPerGpuAllocatableDevices`` in
  ``nvlib.go``). Static mig-parted layouts and dynamic MIG therefore cannot share a cluster.
* The GPU Operator's mig-manager runs on every MIG-capable node (its DaemonSet selects
  ``nvidia.com/gpu.deploy.mig-manager=true``, which the operator adds to MIG-capable nodes)
  and applies the default ``all-disabled`` config. The operator adds that label only when
  the node has none, so a node labelled ``nvidia.com/gpu.deploy.mig-manager=false`` keeps
  mig-manager off (NVIDIA/gpu-operator ``controllers/state_manager.go``@v26.7.0,
  ``addGPUStateLabels`` and ``hasMIGManagerLabel``). The whole mig-manager is off with the
  chart value ``migManager.enabled: false``: the ClusterPolicy's ``migManager.enabled``
  (``deployments/gpu-operator/templates/clusterpolicy.yaml``@v26.7.0) makes
  ``isStateEnabled("state-mig-manager")`` false, and the operator deletes the DaemonSet
  (``controllers/state_manager.go`` and ``object_controls.go``@v26.7.0). gen renders it so
  for a cluster whose MIG pools are all dynamic (GEN116 refuses static layouts beside
  them), so that no node label is needed; only a cluster that still has static layouts
  keeps mig-manager on, and its dynamic pools need the label (GEN118).
"""

from __future__ import annotations

import re

from gen.k8s.versions import kubernetes_minor
from gen.models.cluster import Cluster, NodePool

__all__ = [
    "CONFLICTING_DRIVER_GATES",
    "DRIVER_GATE",
    "K8S_GATE",
    "MIG_MANAGER_LABEL",
    "chart_fixes_issue_1092",
    "chart_supports_dynamic_mig",
    "driver_gates",
    "dynamic_pools",
    "k8s_gate_default_on",
    "k8s_gate_since",
    "mig_manager_off",
    "partitionable_devices_problem",
]

DRIVER_GATE = "DynamicMIG"
K8S_GATE = "DRAPartitionableDevices"
MIG_MANAGER_LABEL = "nvidia.com/gpu.deploy.mig-manager"
CONFLICTING_DRIVER_GATES = ("PassthroughSupport", "NVMLDeviceHealthCheck", "MPSSupport")

_VERSION = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)$")


def _chart(version: str) -> tuple[int, int, int] | None:
    match = _VERSION.match(version.strip())
    if match is None:
        return None
    major, minor, patch = (int(g) for g in match.groups())
    return major, minor, patch


def chart_supports_dynamic_mig(version: str) -> bool:
    """Whether DRA driver chart ``version`` has the ``DynamicMIG`` gate (25.12+, v0.4.0+)."""
    chart = _chart(version)
    if chart is None:
        return False
    if chart[0] >= 25:  # calendar releases: 25.3, 25.8, 25.12
        return chart[:2] >= (25, 12)
    return chart[:2] >= (0, 4)  # kubernetes-sigs semver releases after 25.12


def chart_fixes_issue_1092(version: str) -> bool:
    """Whether nodes without MIG-capable GPUs still publish slices with DynamicMIG on."""
    chart = _chart(version)
    return chart is not None and chart[0] < 25 and chart[:2] >= (0, 4)


def dynamic_pools(cluster: Cluster) -> list[tuple[int, NodePool]]:
    """(index, pool) of the cluster's ``mig: dynamic`` pools."""
    return [(i, p) for i, p in enumerate(cluster.node_pools) if p.mig == "dynamic"]


def mig_manager_off(cluster: Cluster) -> bool:
    """Whether gen renders the GPU Operator with mig-manager off: the cluster has dynamic
    pools and no static MIG layout for mig-manager to apply."""
    return bool(dynamic_pools(cluster)) and not any(
        p.mig_layout is not None for p in cluster.node_pools
    )


def k8s_gate_since() -> int:
    """The minor that added ``DRAPartitionableDevices`` (alpha)."""
    from gen.k8s.gates import gate_table

    since = gate_table().state(K8S_GATE, gate_table().newest).since
    assert since is not None, "the gate table holds DRAPartitionableDevices"
    return since


def k8s_gate_default_on() -> int:
    """The first minor on which ``DRAPartitionableDevices`` is on by default."""
    from gen.k8s.gates import gate_table

    table = gate_table()
    return next(m for m in range(k8s_gate_since(), table.newest + 1)
                if table.state(K8S_GATE, m).default)


def partitionable_devices_problem(cluster: Cluster) -> str | None:
    """Why the cluster's Kubernetes lacks partitionable devices, or None when it has them."""
    from gen.k8s.gates import gate_table

    minor = kubernetes_minor(cluster.kubernetes_version)
    state = gate_table().state(K8S_GATE, minor)
    declared = cluster.feature_gates.get(K8S_GATE)
    if state.exists is False:
        return (f"Kubernetes 1.{minor} has no partitionable devices ({K8S_GATE} arrived "
                f"in 1.{state.since}, alpha)")
    if state.locked:
        return None  # a declaration of the other value is GEN220: nothing starts with it
    if not state.default and not declared:
        return (f"{K8S_GATE} is {state.stage.lower()} and off by default on 1.{minor}: the "
                "API server drops sharedCounters and consumesCounters and the scheduler "
                "ignores them")
    if declared is False:
        return f"{K8S_GATE} is declared off (it is on by default from 1.{k8s_gate_default_on()})"
    return None


def dynamic_mig_possible(cluster: Cluster) -> bool:
    """Whether the cluster can run the driver with ``DynamicMIG`` at all."""
    return (cluster.allocation == "dra" and partitionable_devices_problem(cluster) is None
            and chart_supports_dynamic_mig(cluster.dra_driver.version))


def driver_gates(cluster: Cluster) -> dict[str, bool]:
    """The DRA driver feature gates gen renders: the declared ones, with ``DynamicMIG`` on
    exactly when the cluster has dynamic pools and can have it, and never otherwise."""
    gates = {k: v for k, v in cluster.dra_driver.feature_gates.items() if k != DRIVER_GATE}
    if dynamic_pools(cluster) and dynamic_mig_possible(cluster):
        gates[DRIVER_GATE] = True
    return dict(sorted(gates.items()))
