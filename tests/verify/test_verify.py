"""Tests for gen.verify (the package API): one call, the dry-run and the drift together."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from gen.errors import UnresolvedReferenceError
from gen.fleet.plan import Plan
from gen.pipeline import load_plan
from gen.verify import read_cluster_state, verify
from gen.verify.objects import read_out
from gen.verify.state import ApplyAnswer, ServedKind
from tests.helpers import REPO
from tests.verify.fake import FakeCluster, matching_nodes, matching_slices
from tests.verify.test_apply import served_by


@pytest.fixture(scope="module")
def fleet() -> Plan:
    return load_plan(REPO / "profiles")


def _cluster_fake(plan: Plan, name: str, slices_version: str = "resource.k8s.io/v1",
                  **kwargs: Any) -> FakeCluster:
    cluster = next(c for c in plan.clusters if c.name == name)
    objects, _ = read_out(cluster, REPO / "out", None)
    discovery = served_by(objects)
    if cluster.cluster.allocation == "dra":
        discovery.setdefault(slices_version, {})["ResourceSlice"] = ServedKind(
            "resourceslices", False)
    namespaces = [{"metadata": {"name": n}} for n in ("default", "kube-system", "inference",
                                                      "gpu-operator", "nvidia-dra-driver-gpu")]
    lists = {("v1", "nodes"): matching_nodes(cluster), ("v1", "namespaces"): namespaces,
             (slices_version, "resourceslices"): matching_slices(cluster, slices_version)}
    return FakeCluster(version=f"v{cluster.kubernetes_version}", discovery=discovery,
                       lists=lists, **kwargs)


@pytest.mark.parametrize("name", ["prod-us-east", "edge-l4", "mac-lab"])
def test_a_cluster_that_matches_its_out_and_profile(fleet: Plan, name: str) -> None:
    fake = _cluster_fake(fleet, name)
    result = verify(fleet, name, fake, out_dir=REPO / "out")
    assert result.findings == () and result.ok
    assert result.objects == result.accepted > 0
    cluster = next(c for c in fleet.clusters if c.name == name)
    assert result.nodes == sum(p.pool.nodes for p in cluster.pools)
    assert result.pools == len(cluster.pools)
    assert result.server == "fake cluster"
    # Read-only: reads, and dry-runs of out/'s objects, nothing else.
    assert {method for method, _ in fake.requests} == {"GET", "PATCH"}
    assert sum(method == "PATCH" for method, _ in fake.requests) == result.objects


def test_slices_are_listed_from_the_newest_served_version(fleet: Plan) -> None:
    """research-eu runs 1.33: ResourceSlices are served as v1beta2 only."""
    fake = _cluster_fake(fleet, "research-eu", "resource.k8s.io/v1beta2")
    state = read_cluster_state(fake)
    assert state.slices is not None and len(state.slices) == 2
    assert ("GET", "list resource.k8s.io/v1beta2 resourceslices") in fake.requests
    assert verify(fleet, "research-eu", fake, out_dir=REPO / "out").findings == ()


def test_refusals_and_drift_together_sorted(fleet: Plan) -> None:
    def answer(obj: Mapping[str, Any]) -> ApplyAnswer:
        if obj["kind"] == "DeviceClass":
            return ApplyAnswer(422, {"reason": "Invalid", "message": "bad selector"})
        return ApplyAnswer(200, dict(obj))

    fake = _cluster_fake(fleet, "prod-us-east", answer=answer)
    fake.lists[("v1", "nodes")] = fake.lists[("v1", "nodes")][1:]
    result = verify(fleet, "prod-us-east", fake, out_dir=REPO / "out")
    assert not result.ok
    assert [f.rule for f in result.findings] == ["GEN811", "GEN801", "GEN801"]
    assert [f.location.path for f in result.findings if f.location] == [
        "profiles/clusters/prod-us-east.yaml", "profiles/gpu-classes/h100.yaml",
        "profiles/gpu-classes/mig-3g-40gb.yaml"]
    assert result.refused == 2


def test_unknown_cluster(fleet: Plan) -> None:
    with pytest.raises(UnresolvedReferenceError):
        verify(fleet, "nope", FakeCluster(), out_dir=REPO / "out")
