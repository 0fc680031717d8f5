"""Tests for gen.verify.state: the JSON the API server sends, read into records."""

from __future__ import annotations

from decimal import Decimal

from gen.dra.simulate import resource_slices
from gen.pipeline import load_plan
from gen.verify.state import node_state, published_slice, read_state, slices_of
from tests.helpers import REPO


def test_node_labels_and_capacity() -> None:
    node = node_state({"metadata": {"name": "n1", "labels": {"a": "b"}},
                       "status": {"capacity": {"nvidia.com/gpu": "8", "memory": "2Ti",
                                               "odd": {"x": 1}, "bad": "1.2.3"}}})
    assert node.name == "n1" and node.labels == {"a": "b"}
    assert node.capacity == {"nvidia.com/gpu": Decimal(8), "memory": Decimal(2 * 2**40)}
    assert node_state({}).name == ""


def test_a_simulated_v1_slice_reads_back() -> None:
    """What gen's simulation publishes for a MIG node, read as the cluster's own."""
    plan = load_plan(REPO / "profiles")
    cluster = next(c for c in plan.clusters if c.name == "prod-us-east")
    mig = cluster.pools[1]
    raw = resource_slices(mig, 1, cluster.minor)
    read = [published_slice(s) for s in raw]
    assert {s.node for s in read} == {"h100-mig-1"}
    devices = [d for s in read for d in s.devices]
    assert len(devices) == sum(len(s["spec"]["devices"]) for s in raw)
    first = devices[0].device
    assert first.attributes["gpu.nvidia.com/type"] == "mig"
    assert first.attributes["gpu.nvidia.com/productName"] == "NVIDIA H100 80GB HBM3"
    assert all(s.problems == () for s in read)


def test_v1beta1_basic_wrapper_and_counters() -> None:
    published = published_slice({
        "metadata": {"name": "s"},
        "spec": {"driver": "gpu.nvidia.com", "nodeName": "n", "sharedCounters": [
            {"name": "gpu-0-counter-set", "counters": {"memory": {"value": "80Gi"}}}],
            "devices": [{"name": "gpu-0", "basic": {
                "attributes": {"type": {"string": "gpu"}},
                "capacity": {"memory": {"value": "80Gi"}},
                "consumesCounters": [{"counterSet": "gpu-0-counter-set",
                                      "counters": {"memory": {"value": "80Gi"}}}]}}]}})
    device = published.devices[0]
    assert device.device.attributes == {"gpu.nvidia.com/type": "gpu"}
    assert device.consumes == {"gpu-0-counter-set": {"memory": Decimal(80 * 2**30)}}
    assert published.counter_sets == {"gpu-0-counter-set": {"memory": Decimal(80 * 2**30)}}


def test_an_unreadable_device_is_named_and_left_out() -> None:
    published = published_slice({"spec": {"driver": "d", "nodeName": "n", "devices": [
        {"name": "ok", "attributes": {"a": {"int": 1}}},
        {"name": "listy", "attributes": {"a": {"ints": [1, 2]}}}]}})
    assert [d.device.name for d in published.devices] == ["ok"]
    assert len(published.problems) == 1 and "listy" in published.problems[0]


def test_slices_by_node_and_driver() -> None:
    state = read_state("v1.36.0", [], [
        {"spec": {"driver": "gpu.nvidia.com", "nodeName": "a"}},
        {"spec": {"driver": "other.example.com", "nodeName": "a"}},
        {"spec": {"driver": "gpu.nvidia.com"}},  # not bound to a node
    ])
    assert {k: len(v) for k, v in slices_of(state, "gpu.nvidia.com").items()} == {"a": 1}
    assert read_state("v1.30.0", [], None).slices is None
