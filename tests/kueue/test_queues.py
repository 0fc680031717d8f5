"""Tests for gen.kueue.queues: one ClusterQueue per namespace, its resources in the
cluster's allocation unit, its quota split over the pools that have the devices."""

from __future__ import annotations

from pathlib import Path

from gen.kueue.queues import cluster_queue_name, dra_resource, queues
from tests.kueue.fleet import KUEUE_CLUSTER, cluster


def test_one_queue_per_namespace_with_dra_resources(tmp_path: Path) -> None:
    """'batch' has two entries (whole GPUs, 3g.40gb slices): one queue covering both
    DeviceClasses, each on the pool that has its devices."""
    by_ns = {q.namespace: q for q in queues(cluster(tmp_path))}
    assert sorted(by_ns) == ["batch", "inference"]
    batch = by_ns["batch"]
    assert batch.name == cluster_queue_name("batch") == "gpu-batch"
    assert batch.resources == (dra_resource("h100"), dra_resource("mig-3g"))
    flavors = {f.flavor: f for f in batch.flavors}
    assert sorted(flavors) == ["h100", "mig"]
    assert flavors["h100"].nominal(dra_resource("h100")) == 8
    assert flavors["h100"].nominal(dra_resource("mig-3g")) == 0
    assert flavors["mig"].nominal(dra_resource("mig-3g")) == 1
    assert batch.lendable("h100", dra_resource("h100")) == 4
    assert by_ns["inference"].lendable("h100", dra_resource("h100")) == 8


def test_quota_split_over_pools_up_to_their_devices(tmp_path: Path) -> None:
    """20 devices over two pools named in order: 16 on the first (all its GPUs), the rest
    on the second; the whole of a pool's share when it has fewer devices than asked."""
    two = KUEUE_CLUSTER.replace("  - name: mig\n", "  - name: more\n"
                                "    gpu: h100-sxm5-80gb\n"
                                "    gpus_per_node: 8\n"
                                "    nodes: 1\n"
                                '    driver_version: "580.95.05"\n'
                                "  - name: mig\n")
    assert "name: more" in two
    two = two.replace("    devices: 8\n    cohort: lab\n    preemption",
                      "    devices: 20\n    node_pools: [h100, more]\n    cohort: lab\n"
                      "    preemption")
    [inference] = [q for q in queues(cluster(tmp_path, **{"cluster.yaml": two}))
                   if q.namespace == "inference"]
    assert [(f.flavor, f.nominal(dra_resource("h100"))) for f in inference.flavors] == [
        ("h100", 16), ("more", 4)]


def test_device_plugin_counts_extended_resources(tmp_path: Path) -> None:
    """On a device-plugin cluster the queue covers what the pods request: nvidia.com/gpu,
    and a MIG profile's own resource under the mixed strategy."""
    plugin = KUEUE_CLUSTER.replace("allocation: dra", "allocation: device-plugin")
    by_ns = {q.namespace: q for q in queues(cluster(tmp_path, **{"cluster.yaml": plugin}))}
    assert by_ns["batch"].resources == ("nvidia.com/gpu", "nvidia.com/mig-3g.40gb")


def test_resourcequota_engine_has_no_queues(tmp_path: Path) -> None:
    """The default engine renders ResourceQuotas: no queue."""
    plain = KUEUE_CLUSTER.replace("quota_engine: kueue\n", "")
    assert queues(cluster(tmp_path, **{"cluster.yaml": plain})) == []


def test_long_device_class_names_stay_qualified_names() -> None:
    """A mapping name is a qualified name: at most 63 characters after the prefix."""
    long = "a" * 70 + ".example.com"
    name = dra_resource(long)
    assert len(name.split("/", 1)[1]) <= 63
    assert name != dra_resource("b" + long[1:])
