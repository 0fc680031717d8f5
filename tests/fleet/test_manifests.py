"""gen.fleet.manifests: the names and tolerations several capabilities share."""

from __future__ import annotations

import re
from pathlib import Path

from gen.errors import SourceLocation
from gen.fleet.manifests import (
    PROGRESS_MARGIN_SECONDS,
    claim_template_name,
    extended_resource_name,
    progress_deadline_seconds,
    tolerations,
)
from gen.fleet.plan import PoolPlan
from gen.models import InferenceService, NodePool


def _pool(name: str, *taints: tuple[str, str, str]) -> PoolPlan:
    pool = NodePool.model_validate({
        "name": name, "gpu": "h100-sxm", "gpus_per_node": 8, "nodes": 1,
        "driver_version": "580.95.05",
        "taints": [{"key": k, "value": v, "effect": e} for k, v, e in taints],
    })
    return PoolPlan(pool=pool, located_at=SourceLocation("cluster.yaml"), gpu=None)


POOLS = (
    _pool("a", ("nvidia.com/gpu", "", "NoSchedule"), ("team", "ml", "NoSchedule")),
    _pool("b", ("team", "ml", "NoSchedule"), ("team", "infra", "NoExecute"),
          ("nvidia.com/gpu", "", "NoSchedule")),
)


def test_tolerations_of_a_workload_match_each_distinct_taint() -> None:
    """One per (key, value, effect), Equal with a value, Exists without; sorted."""
    assert tolerations(POOLS) == [
        {"key": "nvidia.com/gpu", "effect": "NoSchedule", "operator": "Exists"},
        {"key": "team", "effect": "NoExecute", "operator": "Equal", "value": "infra"},
        {"key": "team", "effect": "NoSchedule", "operator": "Equal", "value": "ml"},
    ]


def test_tolerations_of_any_value_are_one_exists_per_key_and_effect() -> None:
    assert tolerations(POOLS, any_value=True) == [
        {"key": "nvidia.com/gpu", "effect": "NoSchedule", "operator": "Exists"},
        {"key": "team", "effect": "NoExecute", "operator": "Exists"},
        {"key": "team", "effect": "NoSchedule", "operator": "Exists"},
    ]
    assert tolerations(()) == []


def test_claim_template_name() -> None:
    service = InferenceService.model_validate({
        "kind": "InferenceService", "name": "llama", "namespace": "inference",
        "model": "meta-llama/Llama-3.1-8B-Instruct", "clusters": ["c"],
        "gpu": {"gpu_class": "h100"},
    })
    content = {"spec": {"devices": {"requests": [{"name": "gpu"}]}}}
    name = claim_template_name(service, content)
    assert re.fullmatch(r"llama-gpu-[0-9a-f]{8}", name)
    # The same content (any key order) keeps the name; other content gets another.
    assert claim_template_name(service, dict(reversed(list(content.items())))) == name
    other = {"spec": {"devices": {"requests": [{"name": "gpu", "count": 2}]}}}
    assert claim_template_name(service, other) != name


def test_progress_deadline_covers_the_startup_budget() -> None:
    """The deadline is the startup budget plus the margin, in whole minutes, at least 600."""
    assert progress_deadline_seconds(10, 3) == 660  # 30 + 600 → 11 minutes
    assert progress_deadline_seconds(10, 111) == 1740  # 1110 + 600 → 29 minutes
    assert progress_deadline_seconds(1, 1) >= 600
    for period, threshold in ((10, 5), (10, 200), (7, 33)):
        deadline = progress_deadline_seconds(period, threshold)
        assert deadline % 60 == 0
        assert deadline >= period * threshold + PROGRESS_MARGIN_SECONDS


def test_extended_resource_name() -> None:
    """Resource names follow the device plugin: + becomes . under mixed; single is gpu."""
    assert extended_resource_name("1g.10gb", "mixed") == "nvidia.com/mig-1g.10gb"
    assert extended_resource_name("1g.10gb+me", "mixed") == "nvidia.com/mig-1g.10gb.me"
    assert extended_resource_name("1g.24gb-me", "mixed") == "nvidia.com/mig-1g.24gb-me"
    assert extended_resource_name("3g.40gb", "single") == "nvidia.com/gpu"
    assert extended_resource_name(None, "mixed") == "nvidia.com/gpu"


def test_queue_labels_read_the_recorded_queue(tmp_path: Path) -> None:
    """queue_labels gives the LocalQueue (and priority class) the pipeline recorded, and
    nothing for a service without one."""
    import dataclasses

    from gen.fleet.manifests import PRIORITY_LABEL, QUEUE_LABEL, queue_labels
    from gen.pipeline import load_plan
    from tests.helpers import LINT_BASE

    root = tmp_path / "profiles"
    root.mkdir()
    for name, text in LINT_BASE.items():
        (root / name).write_text(text)
    [cluster] = load_plan(root, base=tmp_path).clusters
    [svc] = cluster.services
    assert queue_labels(cluster, svc) == {}
    queued = dataclasses.replace(cluster, local_queues={svc.service.name: "gpu"},
                                 workload_priorities={svc.service.name: "serving"})
    assert queue_labels(queued, svc) == {QUEUE_LABEL: "gpu", PRIORITY_LABEL: "serving"}
