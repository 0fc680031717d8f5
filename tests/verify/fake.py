"""Cluster state as data for the verify tests: what a cluster that matches its profile publishes.

:func:`matching_state` builds, for a built cluster plan, the Nodes (labelled as each pool's
``node_labels``; device-plugin nodes with the capacity and GPU Feature Discovery labels gen
expects) and the ResourceSlices the NVIDIA DRA driver would publish for every node of every
pool (gen's own simulation, :func:`gen.dra.simulate.resource_slices`). The same objects are
created in the real control plane by the live tests. :class:`FakeCluster` answers
:class:`gen.verify.state.ClusterAPI` from such data, and records every request.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gen.dra.simulate import node_name, resource_slices
from gen.fleet.plan import ClusterPlan, PoolPlan
from gen.verify.inventory import DRIVER_LABEL, PRODUCT_LABEL, gfd_product
from gen.verify.state import ApplyAnswer, ServedKind

__all__ = ["FakeCluster", "matching_nodes", "matching_slices"]


def _capacity(cluster: ClusterPlan, pool: PoolPlan) -> dict[str, str]:
    from gen.serving.capacity import units_per_node

    capacity = {"cpu": "96", "memory": "1Ti", "pods": "110"}
    if pool.pool.platform == "apple-vm" and pool.pool.apple_vm is not None:
        capacity[pool.pool.apple_vm.resource_name] = str(pool.pool.apple_vm.sharing)
    elif cluster.cluster.allocation == "device-plugin" and pool.gpu is not None:
        for name, count in units_per_node(pool, cluster.mig_strategy).items():
            capacity[name] = str(count)
    return capacity


def node_object(cluster: ClusterPlan, pool: PoolPlan, index: int) -> dict[str, Any]:
    """The Node ``index`` of ``pool`` as the cluster would show it."""
    name = node_name(pool, index)
    labels = {"kubernetes.io/hostname": name, **pool.node_labels}
    if cluster.cluster.allocation == "device-plugin" and pool.gpu is not None:
        labels[PRODUCT_LABEL] = gfd_product(pool.gpu.product_name)
        labels[DRIVER_LABEL] = pool.pool.driver_version or ""
    capacity = _capacity(cluster, pool)
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"capacity": capacity, "allocatable": dict(capacity)},
    }


def matching_nodes(cluster: ClusterPlan) -> list[dict[str, Any]]:
    """Every node of every pool of the cluster."""
    return [node_object(cluster, pool, i) for pool in cluster.pools
            for i in range(pool.pool.nodes)]


def matching_slices(cluster: ClusterPlan, api_version: str = "resource.k8s.io/v1"
                    ) -> list[dict[str, Any]]:
    """The ResourceSlices of every node of every NVIDIA pool (DRA clusters only)."""
    if cluster.cluster.allocation != "dra":
        return []
    out = []
    for pool in cluster.pools:
        if pool.gpu is None or pool.pool.platform != "nvidia":
            continue
        for i in range(pool.pool.nodes):
            for published in resource_slices(pool, i, cluster.minor):
                published = copy.deepcopy(published)
                published["apiVersion"] = api_version
                out.append(published)
    return out


Answer = Callable[[Mapping[str, Any]], ApplyAnswer]


@dataclass
class FakeCluster:
    """A :class:`ClusterAPI` over data: version, discovery, lists, and apply answers."""

    version: str = "v1.37.2"
    discovery: dict[str, dict[str, ServedKind]] = field(default_factory=dict)
    lists: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    answer: Answer = field(default=lambda obj: ApplyAnswer(200, dict(obj)))
    requests: list[tuple[str, str]] = field(default_factory=list)

    @property
    def description(self) -> str:
        return "fake cluster"

    def server_version(self) -> str:
        self.requests.append(("GET", "/version"))
        return self.version

    def served(self, api_version: str) -> Mapping[str, ServedKind] | None:
        self.requests.append(("GET", f"discovery {api_version}"))
        return self.discovery.get(api_version)

    def list(self, api_version: str, plural: str) -> list[dict[str, Any]]:
        self.requests.append(("GET", f"list {api_version} {plural}"))
        return copy.deepcopy(self.lists.get((api_version, plural), []))

    def dry_run_apply(self, obj: Mapping[str, Any], kind: ServedKind) -> ApplyAnswer:
        self.requests.append(("PATCH", f"dry-run {kind.plural} {obj['metadata']['name']}"))
        return self.answer(obj)



def profile_line(file: Path, text: str, after: str = "") -> int:
    """The 1-based number of the first line of ``file`` that starts with ``text`` (once
    stripped of indentation and a list dash), at or after the first line that holds
    ``after``: where a finding must point, read from the file itself."""
    lines = file.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if after in line) if after else 0
    return next(i + 1 for i, line in enumerate(lines) if i >= start
                and line.strip().lstrip("- ").startswith(text))
