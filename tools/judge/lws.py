"""A stand-in for the LeaderWorkerSet controller: the pods of each group, as StatefulSets.

No LWS controller runs on the judge's plane (it is not part of Kubernetes), so a rendered
LeaderWorkerSet alone would make no pods and its groups' placement would go unjudged. Like the
fixtures stand in for the kubelet and the drivers, :func:`group_workloads` makes what the LWS
controller makes for it (kubernetes-sigs/lws v0.10.0 ``pkg/controllers``: a StatefulSet of
the leaders and, per group, one of its workers), one StatefulSet per group of ``size`` pods
(the statefulset controller of the plane makes the pods, the scheduler places them), with the
labels the LWS pod webhook sets (``leaderworkerset.sigs.k8s.io/name``, ``group-index``,
``group-key``: ``pkg/webhooks/pod_webhook.go``), so that the pod (anti-)affinity on the group's
key means what it means in a cluster.

What it leaves out, and so does not judge: the leader's own template (the same devices as the
workers'), the model-cache ``volumeClaimTemplates`` (an ``emptyDir`` instead: storage is not
judged, docs/conformance.md), and the ComputeDomain's IMEX channel claim (no ComputeDomain
controller creates its template on the plane).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

__all__ = ["GROUP_OF", "group_workloads", "merged_groups"]

GROUP_OF = "judge.gen.dev/group-of"
"""The annotation of a stand-in StatefulSet: the LeaderWorkerSet whose group it is."""

NAME = "leaderworkerset.sigs.k8s.io/name"
GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
GROUP_KEY = "leaderworkerset.sigs.k8s.io/group-key"
CHANNEL_CLAIM = "imex"
"""The claim name gen gives a pod's ComputeDomain channel (gen.serving.multinode)."""


def _replicas(lws: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]) -> int:
    """Groups to run: ``spec.replicas``, else (autoscaled) the ScaledObject's minimum, as
    KEDA leaves it while idle, else the CRD's default 1."""
    spec = lws["spec"]
    if "replicas" in spec:
        return int(spec["replicas"])
    for other in objects:
        target = other.get("spec", {}).get("scaleTargetRef", {}) if other["kind"] == \
            "ScaledObject" else {}
        if target.get("kind") == "LeaderWorkerSet" and target.get("name") == \
                lws["metadata"]["name"]:
            return int(other["spec"].get("minReplicaCount", 0))
    return 1


def _pod_template(lws: Mapping[str, Any], index: int) -> dict[str, Any]:
    name = lws["metadata"]["name"]
    template = copy.deepcopy(dict(lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]))
    labels = {**template.get("metadata", {}).get("labels", {}), NAME: name,
              GROUP_INDEX: str(index), GROUP_KEY: f"{name}-{index}"}
    template["metadata"] = {**template.get("metadata", {}), "labels": labels}
    pod = template["spec"]
    cached = {v["metadata"]["name"] for v in
              lws["spec"]["leaderWorkerTemplate"].get("volumeClaimTemplates") or ()}
    pod["volumes"] = [*pod.get("volumes", ()), *({"name": v, "emptyDir": {}}
                                                 for v in sorted(cached))]
    if pod.get("resourceClaims"):
        pod["resourceClaims"] = [c for c in pod["resourceClaims"] if c["name"] != CHANNEL_CLAIM]
        for container in pod["containers"]:
            claims = container.get("resources", {}).get("claims")
            if claims:
                container["resources"]["claims"] = [c for c in claims
                                                    if c["name"] != CHANNEL_CLAIM]
    return template


def group_workloads(lws: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]
                    ) -> list[dict[str, Any]]:
    """One StatefulSet per group of ``lws`` (``size`` pods each, all at once)."""
    meta = lws["metadata"]
    size = int(lws["spec"]["leaderWorkerTemplate"].get("size", 1))
    out = []
    for index in range(_replicas(lws, objects)):
        template = _pod_template(lws, index)
        out.append({
            "apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": f"{meta['name']}-g{index}", "namespace": meta["namespace"],
                         "labels": dict(meta.get("labels", {})),
                         "annotations": {GROUP_OF: str(meta["name"])}},
            "spec": {"replicas": size, "serviceName": meta["name"],
                     "podManagementPolicy": "Parallel",
                     "selector": {"matchLabels": {NAME: meta["name"], GROUP_INDEX: str(index)}},
                     "template": template},
        })
    return out


Outcome = TypeVar("Outcome")


def merged_groups(outcomes: Mapping[str, Outcome], workloads: Sequence[Mapping[str, Any]],
                  key: Callable[[Mapping[str, Any]], str],
                  ) -> tuple[dict[str, Outcome], list[Mapping[str, Any]]]:
    """One verdict per LeaderWorkerSet: its first group's stand-in stays, with the outcome of
    the first of its groups that did not schedule (else the first group's), since gen's
    verdict is about every replica of the service at once; other workloads stay as they are.
    An outcome's ``state`` is "scheduled" when all its pods were bound."""
    merged: dict[str, Outcome] = {}
    kept: list[Mapping[str, Any]] = []
    first: dict[str, str] = {}
    for workload in workloads:
        owner = workload["metadata"].get("annotations", {}).get(GROUP_OF)
        oid = key(workload)
        if owner is None:
            merged[oid] = outcomes[oid]
            kept.append(workload)
            continue
        group = f"{workload['metadata']['namespace']}/{owner}"
        if group not in first:
            first[group] = oid
            merged[oid] = outcomes[oid]
            kept.append(workload)
        elif getattr(merged[first[group]], "state", "") == "scheduled":
            merged[first[group]] = outcomes[oid]
    return merged, kept
