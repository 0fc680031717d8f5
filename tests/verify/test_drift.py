"""Tests for gen.verify.drift: fake cluster state as data, each difference at its profile line.

The state of a cluster that matches its profile is gen's own simulation of what the NVIDIA DRA
driver publishes (tests/verify/fake.py); each test edits it the way a real cluster drifts (a
node gone, another GPU, a MIG layout not applied, another driver) and checks the finding's
rule and the line of the profile it points at, read from the profile file itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from gen.errors import Finding, Severity
from gen.fleet.plan import ClusterPlan, Plan
from gen.pipeline import load_plan
from gen.verify.drift import assign_nodes, drift
from gen.verify.state import node_state, read_state
from tests.helpers import REPO, copy_fleet, write_tree
from tests.verify.fake import matching_nodes, matching_slices, profile_line

PROD = REPO / "profiles" / "clusters" / "prod-us-east.yaml"
EDGE = REPO / "profiles" / "clusters" / "edge-l4.yaml"
DYN = REPO / "tests" / "fixtures" / "dynamic-mig" / "clusters" / "dyn.yaml"

Objects = list[dict[str, Any]]


@pytest.fixture(scope="module")
def fleet() -> Plan:
    return load_plan(REPO / "profiles")


@pytest.fixture(scope="module")
def dynamic_fleet() -> Plan:
    return load_plan(REPO / "tests" / "fixtures" / "dynamic-mig")


def _cluster(plan: Plan, name: str) -> ClusterPlan:
    return next(c for c in plan.clusters if c.name == name)


def _drift(cluster: ClusterPlan, edit: Callable[[Objects, Objects], None] | None = None,
           version: str | None = None) -> list[Finding]:
    nodes, slices = matching_nodes(cluster), matching_slices(cluster)
    if edit is not None:
        edit(nodes, slices)
    state = read_state(version or f"v{cluster.kubernetes_version}", nodes,
                       slices if cluster.cluster.allocation == "dra" else None)
    return drift(cluster, state)


def _one(findings: list[Finding]) -> Finding:
    assert len(findings) == 1, [f.format() for f in findings]
    return findings[0]


def _slices_of(slices: Objects, node: str) -> Objects:
    return [s for s in slices if s["spec"]["nodeName"] == node]


@pytest.mark.parametrize("name", ["prod-us-east", "research-eu", "edge-l4", "mac-lab"])
def test_a_cluster_that_matches_its_profile_has_no_drift(fleet: Plan, name: str) -> None:
    """Every example cluster, published as its profile says: no finding."""
    assert _drift(_cluster(fleet, name)) == []


def test_dynamic_mig_cluster_that_matches_has_no_drift(dynamic_fleet: Plan) -> None:
    assert _drift(dynamic_fleet.clusters[0]) == []


def test_a_pool_with_fewer_nodes(fleet: Plan) -> None:
    """A node gone: GEN811 at the pool's nodes, naming the nodes the cluster has."""
    def edit(nodes: Objects, slices: Objects) -> None:
        nodes[:] = [n for n in nodes if n["metadata"]["name"] != "h100-full-3"]
        slices[:] = [s for s in slices if s["spec"]["nodeName"] != "h100-full-3"]

    finding = _one(_drift(_cluster(fleet, "prod-us-east"), edit))
    assert finding.rule == "GEN811" and finding.severity is Severity.ERROR
    assert finding.location is not None
    assert finding.location.path == "profiles/clusters/prod-us-east.yaml"
    assert finding.location.line == profile_line(PROD, "nodes: 4", after="name: h100-full")
    assert finding.key_path == "node_pools[0].nodes"
    assert "3 node(s) labelled gen.dev/pool=h100-full" in finding.message
    assert "h100-full-0, h100-full-1, h100-full-2" in finding.message
    assert finding.cluster == "prod-us-east"


def test_a_pool_with_more_nodes(fleet: Plan) -> None:
    """A node added with the pool's labels: GEN811 too (capacity is counted from nodes)."""
    cluster = _cluster(fleet, "prod-us-east")

    def edit(nodes: Objects, slices: Objects) -> None:
        extra = {**nodes[0], "metadata": {**nodes[0]["metadata"], "name": "h100-full-9"}}
        nodes.append(extra)
        for published in _slices_of(slices, "h100-full-0"):
            spec = {**published["spec"], "nodeName": "h100-full-9"}
            slices.append({**published, "spec": spec})

    finding = _one(_drift(cluster, edit))
    assert (finding.rule, finding.key_path) == ("GEN811", "node_pools[0].nodes")
    assert "the cluster has 5 node(s)" in finding.message


def test_another_gpu_product(fleet: Plan) -> None:
    """Nodes publishing H100 NVLs in an H100 SXM pool: GEN812 at the pool's gpu."""
    def edit(nodes: Objects, slices: Objects) -> None:
        for node in ("h100-full-1", "h100-full-2"):
            for published in _slices_of(slices, node):
                for device in published["spec"]["devices"]:
                    device["attributes"]["productName"] = {"string": "NVIDIA H100 NVL"}

    finding = _one(_drift(_cluster(fleet, "prod-us-east"), edit))
    assert finding.rule == "GEN812"
    assert finding.location is not None
    assert finding.location.line == profile_line(PROD, "gpu: h100-sxm5-80gb",
                                                 after="name: h100-full")
    assert "h100-full-1, h100-full-2 publish GPUs 'NVIDIA H100 NVL'" in finding.message
    assert "'NVIDIA H100 80GB HBM3'" in finding.message


def test_a_gpu_missing_from_a_node(fleet: Plan) -> None:
    """A node publishing 7 of its 8 GPUs: GEN813 only (the GPU is gone, not re-partitioned)."""
    def edit(nodes: Objects, slices: Objects) -> None:
        for published in _slices_of(slices, "h100-full-2"):
            published["spec"]["devices"] = [d for d in published["spec"]["devices"]
                                            if d["name"] != "gpu-7"]

    finding = _one(_drift(_cluster(fleet, "prod-us-east"), edit))
    assert finding.rule == "GEN813"
    assert finding.location is not None
    assert finding.location.line == profile_line(PROD, "gpus_per_node: 8",
                                                 after="name: h100-full")
    assert "h100-full-2 publish 7 GPU(s) each" in finding.message


def test_a_mig_pool_missing_its_larger_devices(fleet: Plan) -> None:
    """The MIG devices of one profile missing on a node: GEN814 at the pool's mig_layout."""
    def edit(nodes: Objects, slices: Objects) -> None:
        for published in _slices_of(slices, "h100-mig-1"):
            published["spec"]["devices"] = [d for d in published["spec"]["devices"]
                                            if "-mig-3g40gb-" not in d["name"]]

    finding = _one(_drift(_cluster(fleet, "prod-us-east"), edit))
    assert finding.rule == "GEN814"
    assert finding.location is not None
    assert finding.location.line == profile_line(PROD, "mig_layout: h100-mixed")
    assert finding.key_path == "node_pools[1].mig_layout"
    assert "h100-mig-1 publish MIG 3g.40gb ×0" in finding.message
    assert "mig_layout 'h100-mixed'" in finding.message


def test_mig_still_disabled_on_a_mig_pool(fleet: Plan) -> None:
    """A MIG pool whose node publishes full GPUs (mig-manager never ran): GEN814."""
    cluster = _cluster(fleet, "prod-us-east")
    full = _cluster(fleet, "prod-us-east").pools[0]

    def edit(nodes: Objects, slices: Objects) -> None:
        from gen.dra.simulate import resource_slices

        slices[:] = [s for s in slices if s["spec"]["nodeName"] != "h100-mig-0"]
        for published in resource_slices(full, 0, cluster.minor):
            published["spec"]["nodeName"] = published["spec"]["pool"]["name"] = "h100-mig-0"
            published["metadata"]["name"] = "h100-mig-0-gpu.nvidia.com-0"
            slices.append(published)

    finding = _one(_drift(cluster, edit))
    assert finding.rule == "GEN814"
    assert "h100-mig-0 publish" in finding.message and "full GPU ×8" in finding.message


def test_mig_on_where_the_profile_says_full_gpus(fleet: Plan) -> None:
    """A full-GPU pool whose node publishes MIG devices: GEN814, hint to set mig_layout."""
    cluster = _cluster(fleet, "prod-us-east")
    mig = cluster.pools[1]

    def edit(nodes: Objects, slices: Objects) -> None:
        from gen.dra.simulate import resource_slices

        slices[:] = [s for s in slices if s["spec"]["nodeName"] != "h100-full-0"]
        for published in resource_slices(mig, 0, cluster.minor):
            published["spec"]["nodeName"] = "h100-full-0"
            slices.append(published)

    finding = _one(_drift(cluster, edit))
    assert finding.rule == "GEN814"
    assert finding.key_path == "node_pools[0].gpu"  # the pool has no mig_layout key
    assert "full GPUs (no MIG)" in finding.message
    assert "set mig_layout" in finding.hint


def test_a_static_mig_node_without_its_config_label(fleet: Plan) -> None:
    """The nvidia.com/mig.config label gen requires, absent: GEN814 with the label command."""
    def edit(nodes: Objects, slices: Objects) -> None:
        node = next(n for n in nodes if n["metadata"]["name"] == "h100-mig-1")
        node["metadata"]["labels"]["nvidia.com/mig.config"] = "all-disabled"

    finding = _one(_drift(_cluster(fleet, "prod-us-east"), edit))
    assert finding.rule == "GEN814"
    assert "nvidia.com/mig.config=all-disabled" in finding.message
    assert "nvidia.com/mig.config=h100-mixed" in finding.hint


def test_another_driver_version(fleet: Plan) -> None:
    """Nodes on another driver: GEN815 at driver_version; 595.91.07 equals 595.91.7."""
    def edit(nodes: Objects, slices: Objects) -> None:
        for published in _slices_of(slices, "h100-mig-0"):
            for device in published["spec"]["devices"]:
                device["attributes"]["driverVersion"] = {"version": "570.124.6"}

    finding = _one(_drift(_cluster(fleet, "prod-us-east"), edit))
    assert finding.rule == "GEN815"
    assert finding.location is not None
    assert finding.location.line == profile_line(PROD, "driver_version:", after="name: h100-mig")
    assert "run NVIDIA driver 570.124.6" in finding.message
    assert "driver_version: 595.91.07" in finding.message


def test_dynamic_mig_counters_differ(dynamic_fleet: Plan) -> None:
    """A counter set with less memory than the GPU's: GEN816 at the pool's mig."""
    cluster = dynamic_fleet.clusters[0]

    def edit(nodes: Objects, slices: Objects) -> None:
        shared = next(s for s in slices if "sharedCounters" in s["spec"]
                      and s["spec"]["nodeName"] == "h100-dyn-0")
        shared["spec"]["sharedCounters"][3]["counters"]["memory"] = {"value": "40Gi"}

    finding = _one(_drift(cluster, edit))
    assert finding.rule == "GEN816"
    assert finding.location is not None
    assert finding.location.line == profile_line(DYN, "mig: dynamic", after="name: h100-dyn")
    assert "gpu-3-counter-set/memory=40Gi" in finding.message


def test_dynamic_mig_gate_off_publishes_full_gpus_only(dynamic_fleet: Plan) -> None:
    """Without the driver's DynamicMIG gate the node publishes full GPUs and no counters:
    GEN814 (devices) and GEN816 (counters)."""
    cluster = dynamic_fleet.clusters[0]

    def edit(nodes: Objects, slices: Objects) -> None:
        for published in _slices_of(slices, "a100-dyn-0"):
            published["spec"].pop("sharedCounters", None)
            devices = [d for d in published["spec"].get("devices", ())
                       if "-mig-" not in d["name"]]
            for device in devices:
                device.pop("consumesCounters", None)
            published["spec"]["devices"] = devices

    findings = _drift(cluster, edit)
    assert sorted(f.rule for f in findings) == ["GEN814", "GEN816"]
    assert all("a100-dyn" in f.message for f in findings)


def test_a_node_without_slices(fleet: Plan) -> None:
    """A pool node whose DRA driver publishes nothing: GEN817 at the pool."""
    def edit(nodes: Objects, slices: Objects) -> None:
        slices[:] = [s for s in slices if s["spec"]["nodeName"] != "h100-full-1"]

    finding = _one(_drift(_cluster(fleet, "prod-us-east"), edit))
    assert finding.rule == "GEN817"
    assert finding.location is not None
    assert finding.location.line == profile_line(PROD, "name: h100-full")
    assert "h100-full-1 publish no gpu.nvidia.com device" in finding.message


def test_a_dra_cluster_that_serves_no_slices(fleet: Plan) -> None:
    cluster = _cluster(fleet, "prod-us-east")
    state = read_state("v1.37.2", matching_nodes(cluster), None)
    finding = _one(drift(cluster, state))
    assert (finding.rule, finding.key_path) == ("GEN817", "allocation")


def test_kubernetes_version_differs(fleet: Plan) -> None:
    """Another minor: GEN810 at kubernetes_version; another patch is no drift."""
    cluster = _cluster(fleet, "prod-us-east")
    finding = _one(_drift(cluster, version="v1.36.3"))
    assert (finding.rule, finding.key_path) == ("GEN810", "kubernetes_version")
    assert finding.location is not None
    assert finding.location.line == profile_line(PROD, "kubernetes_version:")
    assert 'kubernetes_version: "1.36.3"' in finding.hint
    assert _drift(cluster, version="v1.37.9-eks-4a1b") == []


def test_undeclared_gpu_nodes_are_a_warning(fleet: Plan) -> None:
    """A node with GPU slices but no pool's labels: GEN818 (warning) at node_pools."""
    cluster = _cluster(fleet, "prod-us-east")

    def edit(nodes: Objects, slices: Objects) -> None:
        stray = {"metadata": {"name": "gpu-spare", "labels": {"gen.dev/pool": "spare"}}}
        nodes.append(stray)
        for published in _slices_of(slices, "h100-full-0"):
            slices.append({**published, "spec": {**published["spec"], "nodeName": "gpu-spare"}})
        nodes.append({"metadata": {"name": "cpu-0", "labels": {}}})  # no GPU: not reported

    finding = _one(_drift(cluster, edit))
    assert (finding.rule, finding.severity) == ("GEN818", Severity.WARNING)
    assert "gpu-spare" in finding.message and "cpu-0" not in finding.message


# ------------------------------------------------------------------ device plugin


def test_device_plugin_fewer_gpus_and_other_product(fleet: Plan) -> None:
    """edge-l4: capacity nvidia.com/gpu 0 → GEN817; GFD product of another GPU → GEN812."""
    cluster = _cluster(fleet, "edge-l4")

    def edit(nodes: Objects, slices: Objects) -> None:
        nodes[0]["status"]["capacity"]["nvidia.com/gpu"] = "0"
        nodes[1]["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-A10G"

    findings = _drift(cluster, edit)
    assert sorted(f.rule for f in findings) == ["GEN812", "GEN817"], findings
    product = next(f for f in findings if f.rule == "GEN812")
    assert product.location is not None
    assert product.location.line == profile_line(EDGE, "gpu: l4")
    assert "nvidia.com/gpu.product=NVIDIA-A10G" in product.message


def test_device_plugin_gpu_count_and_driver(fleet: Plan) -> None:
    cluster = _cluster(fleet, "edge-l4")

    def edit(nodes: Objects, slices: Objects) -> None:
        nodes[2]["status"]["capacity"]["nvidia.com/gpu"] = "2"
        nodes[3]["metadata"]["labels"]["nvidia.com/cuda.driver-version.full"] = "570.86.15"

    findings = _drift(cluster, edit)
    assert sorted(f.rule for f in findings) == ["GEN813", "GEN815"]
    count = next(f for f in findings if f.rule == "GEN813")
    assert count.location is not None
    assert count.location.line == profile_line(EDGE, "gpus_per_node: 1")
    assert "nvidia.com/gpu: 2" in count.message


def test_device_plugin_time_slicing_replicas_are_divided_out(fleet: Plan) -> None:
    """GFD's replicas label: 4 replicas of 1 GPU advertise nvidia.com/gpu 4, one GPU."""
    cluster = _cluster(fleet, "edge-l4")

    def edit(nodes: Objects, slices: Objects) -> None:
        for node in nodes:
            node["status"]["capacity"]["nvidia.com/gpu"] = "4"
            node["metadata"]["labels"]["nvidia.com/gpu.replicas"] = "4"
            node["metadata"]["labels"]["nvidia.com/gpu.product"] = "NVIDIA-L4-SHARED"

    assert _drift(cluster, edit) == []


def test_device_plugin_mig_strategy_mixed(tmp_path: Path) -> None:
    """A MIG pool on a device-plugin cluster: nvidia.com/mig-<profile> counts (mixed)."""
    root = copy_fleet(tmp_path)
    text = (root / "profiles/clusters/prod-us-east.yaml").read_text(encoding="utf-8")
    text = text.replace("allocation: dra", "allocation: device-plugin")
    text = text.replace("quotas:\n  - namespace: inference\n    gpu_class: h100\n"
                        "    devices: 16\n", "")
    write_tree(root, {"profiles/clusters/prod-us-east.yaml": text.encode()})
    cluster = _cluster(load_plan(root / "profiles"), "prod-us-east")
    assert cluster.mig_strategy == "mixed"
    assert _drift(cluster) == []

    def edit(nodes: Objects, slices: Objects) -> None:
        node = next(n for n in nodes if n["metadata"]["name"] == "h100-mig-0")
        node["status"]["capacity"].pop("nvidia.com/mig-3g.40gb")

    finding = _one(_drift(cluster, edit))
    assert (finding.rule, finding.key_path) == ("GEN814", "node_pools[1].mig_layout")
    assert "nvidia.com/mig-3g.40gb: 0" in finding.message


# ------------------------------------------------------------------ assigning nodes


def test_nodes_are_assigned_by_the_pools_labels(fleet: Plan) -> None:
    """Most specific pool wins; a tie is reported and the node left out."""
    cluster = _cluster(fleet, "prod-us-east")
    nodes = [node_state(n) for n in matching_nodes(cluster)]
    assigned = assign_nodes(cluster, nodes)
    assert {k: len(v) for k, v in assigned.by_pool.items()} == {"h100-full": 4, "h100-mig": 2}
    assert assigned.findings == ()
    both = node_state({"metadata": {"name": "x", "labels": {"gen.dev/pool": "h100-full"}}})
    assert assign_nodes(cluster, [both]).by_pool["h100-full"] == (both,)


def test_a_pool_without_labels_is_not_checked(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path)
    path = root / "profiles/clusters/edge-l4.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace(
        "    labels:\n      gen.dev/pool: l4\n", ""), encoding="utf-8")
    cluster = _cluster(load_plan(root / "profiles"), "edge-l4")
    findings = _drift(cluster)
    finding = _one([f for f in findings if f.rule != "GEN818"])
    assert (finding.rule, finding.severity) == ("GEN819", Severity.WARNING)
    assert "has no labels" in finding.message
    # Its nodes carry no pool's labels, so they are GPU nodes no pool declares.
    assert [f.rule for f in findings if f.rule == "GEN818"] == ["GEN818"]


def test_ambiguous_labels(tmp_path: Path) -> None:
    root = copy_fleet(tmp_path)
    path = root / "profiles/clusters/prod-us-east.yaml"
    path.write_text(path.read_text(encoding="utf-8").replace(
        "gen.dev/pool: h100-mig", "gen.dev/pool: h100-full"), encoding="utf-8")
    cluster = _cluster(load_plan(root / "profiles"), "prod-us-east")
    nodes = [node_state(n) for n in matching_nodes(cluster)]
    assigned = assign_nodes(cluster, nodes)
    # h100-mig's nodes also carry nvidia.com/mig.config, but only user labels decide.
    assert assigned.by_pool == {"h100-full": (), "h100-mig": ()}
    finding = _one(list(assigned.findings))
    assert finding.rule == "GEN819"
    assert "'h100-full', 'h100-mig'" in finding.message
