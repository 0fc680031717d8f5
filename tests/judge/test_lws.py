"""tools/judge/lws.py: the LWS controller's stand-in makes one StatefulSet of size pods a group."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tools.judge.lws import GROUP_INDEX, GROUP_KEY, NAME, group_workloads, merged_groups


def _lws(**spec: Any) -> dict[str, Any]:
    pod = {"containers": [{"name": "vllm", "resources": {"claims": [{"name": "gpu"},
                                                                     {"name": "imex"}]}}],
           "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "big-gpu-1"},
                              {"name": "imex", "resourceClaimTemplateName": "big-imex-channel"}]}
    return {
        "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
        "metadata": {"name": "big", "namespace": "ns", "labels": {"app.kubernetes.io/name": "big"}},
        "spec": {**spec, "leaderWorkerTemplate": {
            "size": 2, "workerTemplate": {"metadata": {"labels": {"a": "b"}}, "spec": pod},
            "volumeClaimTemplates": [{"metadata": {"name": "model-cache"}}]}},
    }


def test_one_statefulset_a_group() -> None:
    """Two groups of two: two StatefulSets of two pods with the webhook's labels."""
    groups = group_workloads(_lws(replicas=2), [])
    assert [g["metadata"]["name"] for g in groups] == ["big-g0", "big-g1"]
    assert all(g["spec"]["replicas"] == 2 for g in groups)
    labels = groups[1]["spec"]["template"]["metadata"]["labels"]
    assert labels == {"a": "b", NAME: "big", GROUP_INDEX: "1", GROUP_KEY: "big-1"}
    assert groups[1]["spec"]["selector"]["matchLabels"] == {NAME: "big", GROUP_INDEX: "1"}


def test_channel_claim_and_cache_left_out() -> None:
    """The IMEX channel claim goes (no ComputeDomain controller), the cache is an emptyDir."""
    pod = group_workloads(_lws(replicas=1), [])[0]["spec"]["template"]["spec"]
    assert [c["name"] for c in pod["resourceClaims"]] == ["gpu"]
    assert pod["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    assert {"name": "model-cache", "emptyDir": {}} in pod["volumes"]


def test_autoscaled_groups_follow_keda_minimum() -> None:
    """Without spec.replicas: the ScaledObject's minReplicaCount, else one group."""
    scaled = {"kind": "ScaledObject", "spec": {"minReplicaCount": 3, "scaleTargetRef": {
        "kind": "LeaderWorkerSet", "name": "big"}}}
    assert len(group_workloads(_lws(), [scaled])) == 3
    assert len(group_workloads(_lws(), [])) == 1


@dataclass
class _Seen:
    state: str


def test_groups_judged_as_one() -> None:
    """The groups of one LWS give one verdict: the first that did not schedule."""
    groups = group_workloads(_lws(replicas=2), [])
    other = {"kind": "Deployment", "metadata": {"name": "d", "namespace": "ns"}}
    ids = {"big-g0": _Seen("scheduled"), "big-g1": _Seen("unschedulable"), "d": _Seen("scheduled")}
    merged, kept = merged_groups(ids, [*groups, other], lambda w: str(w["metadata"]["name"]))
    assert [w["metadata"]["name"] for w in kept] == ["big-g0", "d"]
    assert merged == {"big-g0": _Seen("unschedulable"), "d": _Seen("scheduled")}
