"""The part of a cluster that a kubelet and the NVIDIA drivers would create, made by hand.

For each node pool of a gen cluster: the Nodes (labels, taints, Ready, capacity), and on DRA
clusters the ResourceSlices the NVIDIA DRA driver would publish (gen's own simulation,
:func:`gen.dra.simulate.resource_slices`, the same ``gen explain --slices`` prints), plus the
driver chart's DeviceClasses. On device-plugin clusters the Nodes advertise the extended
resources the NVIDIA device plugin would (:func:`gen.serving.capacity.units_per_node`). The
custom resources gen emits get the CRDs gen validates them against (the bundled upstream CRDs,
``gen/data/crd-schemas/``).

What no profile says — CPU, memory and pod slots of a node — is generous on purpose (256 CPUs,
2 TiB, 110 pods, like an 8-GPU server), so that only GPUs, claims and policies decide. The Node
fixture follows kubernetes/kubernetes ``test/integration/dra/dra.go`` (``createNodes``):
create, set the status Ready, then remove the not-ready taint the TaintNodesByCondition
admission plugin adds.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Iterator, Mapping
from importlib import resources
from typing import Any

from gen.dra.simulate import DRIVER, node_name, resource_slices
from gen.fleet.plan import ClusterPlan, PoolPlan
from gen.serving.capacity import units_per_node
from tools.judge.cluster import ControlPlane

__all__ = ["bootstrap_namespaces", "bundled_crds", "chart_device_classes", "install_cluster",
           "nodes", "slices", "volume_for"]

BOOTSTRAP_NAMESPACES = frozenset({"flux-system", "argocd"})
"""Namespaces the GitOps engine's own bootstrap creates (``flux bootstrap``, the Argo CD
install), so gen's output uses them without rendering them."""

NODE_CAPACITY = {"cpu": "256", "memory": "2Ti", "pods": "110", "ephemeral-storage": "4Ti"}


def chart_device_classes(api_version: str = "resource.k8s.io/v1") -> list[dict[str, Any]]:
    """The DeviceClasses the NVIDIA DRA driver chart installs (``gpu.nvidia.com`` with the
    ``nvidia.com/gpu`` extended resource name, ``mig.nvidia.com``): kubernetes-sigs/
    dra-driver-nvidia-gpu
    ``deployments/helm/nvidia-dra-driver-gpu/templates/deviceclass-{gpu,mig}.yaml``@v25.12.0."""
    def cls(name: str, device_type: str, extended: str | None) -> dict[str, Any]:
        spec: dict[str, Any] = {"selectors": [{"cel": {"expression": (
            f"device.driver == '{DRIVER}' && "
            f"device.attributes['{DRIVER}'].type == '{device_type}'")}}]}
        if extended and api_version == "resource.k8s.io/v1":
            spec["extendedResourceName"] = extended
        return {"apiVersion": api_version, "kind": "DeviceClass", "metadata": {"name": name},
                "spec": spec}
    return [cls("gpu.nvidia.com", "gpu", "nvidia.com/gpu"), cls("mig.nvidia.com", "mig", None)]


def bundled_crds() -> list[dict[str, Any]]:
    """The upstream CRDs gen bundles (compact: schemas without descriptions), ready to create."""
    folder = resources.files("gen") / "data" / "crd-schemas"
    crds = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".json.gz"):
            crds.append(json.loads(gzip.decompress(entry.read_bytes()))["crd"])
    return crds


def _is_dra(cluster: ClusterPlan) -> bool:
    return cluster.dra_api_version is not None


def nodes(cluster: ClusterPlan) -> Iterator[tuple[PoolPlan, dict[str, Any]]]:
    """(pool, Node) for every node of every NVIDIA pool of the cluster."""
    for pool in cluster.pools:
        if pool.pool.platform != "nvidia":
            continue
        capacity = dict(NODE_CAPACITY)
        if not _is_dra(cluster):
            for resource, count in sorted(units_per_node(pool, cluster.mig_strategy).items()):
                capacity[resource] = str(count)
        for index in range(pool.pool.nodes):
            name = node_name(pool, index)
            labels = {**pool.node_labels, "kubernetes.io/hostname": name,
                      "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64"}
            yield pool, {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": {"taints": [{"key": t.key, "value": t.value, "effect": t.effect}
                                    for t in pool.pool.taints]},
                "status": {"capacity": capacity, "allocatable": capacity,
                           "phase": "Running",
                           "conditions": [{"type": "Ready", "status": "True",
                                           "reason": "KubeletReady",
                                           "message": "made by gen's judge"}]},
            }


SYSTEM_NODE = "system-0"
"""A CPU node without taints, made for clusters with routed services: gen's profiles model the
GPU pools only, and a real cluster runs its system pods (here the endpoint picker, which asks
for CPUs and tolerates no GPU taint) on CPU nodes."""


def system_nodes(cluster: ClusterPlan) -> Iterator[dict[str, Any]]:
    """The CPU node of a cluster with a routed service (none otherwise)."""
    if not any(s.service.routing is not None for s in cluster.services):
        return
    labels = {"kubernetes.io/hostname": SYSTEM_NODE, "kubernetes.io/os": "linux",
              "kubernetes.io/arch": "amd64"}
    yield {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": SYSTEM_NODE, "labels": labels},
        "spec": {"taints": []},
        "status": {"capacity": dict(NODE_CAPACITY), "allocatable": dict(NODE_CAPACITY),
                   "phase": "Running",
                   "conditions": [{"type": "Ready", "status": "True",
                                   "reason": "KubeletReady",
                                   "message": "made by gen's judge"}]},
    }


def slices(cluster: ClusterPlan) -> Iterator[tuple[PoolPlan, dict[str, Any]]]:
    """(pool, ResourceSlice) the NVIDIA DRA driver would publish, for every node."""
    if not _is_dra(cluster):
        return
    for pool in cluster.pools:
        if pool.pool.platform != "nvidia" or pool.gpu is None:
            continue
        for index in range(pool.pool.nodes):
            for body in resource_slices(pool, index, cluster.minor):
                body = {**body, "apiVersion": "resource.k8s.io/v1"}
                yield pool, body


def create_node(plane: ControlPlane, node: dict[str, Any]) -> None:
    """Create a Node, make it Ready and keep only the taints gen's profile declares."""
    status = node["status"]
    taints = node["spec"]["taints"]
    body = {k: v for k, v in node.items() if k != "status"}
    plane.must(plane.create(body), f"create Node {node['metadata']['name']}")
    path = plane.object_path(node)
    plane.must(plane.request("PATCH", path + "/status", {"status": status},
                             content_type="application/merge-patch+json"), "Node status")
    plane.must(plane.request("PATCH", path, {"spec": {"taints": taints or None}},
                             content_type="application/merge-patch+json"), "Node taints")


def install_cluster(plane: ControlPlane, cluster: ClusterPlan) -> list[tuple[str, str]]:
    """Nodes and (DRA) slices and chart classes for ``cluster``; returns the refusals of
    slices as (slice name, API server message): gen's simulation must be accepted."""
    for _, node in nodes(cluster):
        create_node(plane, node)
    for node in system_nodes(cluster):
        create_node(plane, node)
    refused: list[tuple[str, str]] = []
    if _is_dra(cluster):
        for cls in chart_device_classes():
            plane.must(plane.apply(cls), f"DeviceClass {cls['metadata']['name']}")
        for _, body in slices(cluster):
            response = plane.create(body)
            if not response.ok:
                refused.append((body["metadata"]["name"], response.message))
    return refused


def bootstrap_namespaces(cluster: ClusterPlan, objects: Iterable[Mapping[str, Any]]
                         ) -> list[dict[str, Any]]:
    """The namespaces that ``objects`` use but that something other than ``out/<cluster>/``
    creates: the GitOps engine's, and the GPU Operator's and DRA driver's (installed by the
    fleet's root Applications with ``CreateNamespace=true``, or by the platform team)."""
    objects = list(objects)
    rendered = {str(o["metadata"]["name"]) for o in objects if o["kind"] == "Namespace"}
    used = {str(o["metadata"].get("namespace", "")) for o in objects}
    spec = cluster.cluster
    platform = {*BOOTSTRAP_NAMESPACES, spec.gpu_operator.namespace, spec.dra_driver.namespace}
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            for name in sorted((used & platform) - rendered)]


def volume_for(claim: Mapping[str, Any]) -> dict[str, Any]:
    """A PersistentVolume pre-bound to ``claim``, standing in for the cluster's storage
    provisioner (the harness has none): same size, access modes and class. Whether the
    cluster's storage can really serve the access mode is gen's lint (GEN702), not this."""
    meta, spec = claim["metadata"], claim["spec"]
    name = f"judge-{meta['namespace']}-{meta['name']}"[:253]
    return {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": spec["resources"]["requests"]["storage"]},
            "accessModes": list(spec.get("accessModes", ["ReadWriteOnce"])),
            "storageClassName": spec.get("storageClassName") or "",
            "persistentVolumeReclaimPolicy": "Delete",
            "claimRef": {"namespace": meta["namespace"], "name": meta["name"]},
            "csi": {"driver": "judge.gen.invalid", "volumeHandle": name},
        },
    }
