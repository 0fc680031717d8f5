"""Tests for gen.kueue.explain: the queue that admits a service, its headroom, and each
queue's quota against its namespace's demand."""

from __future__ import annotations

from pathlib import Path

from gen.kueue.explain import admission, admission_lines, queue_quotas, quota_lines
from tests.helpers import LINT_BASE
from tests.kueue.fleet import KUEUE_CLUSTER, cluster


def test_admission_counts_own_quota_and_what_the_cohort_lends(tmp_path: Path) -> None:
    """llama-70b (4 GPUs a replica) in 'inference': 8 own + 4 that 'batch' lends on the
    h100 pool: three replicas, headroom 8 for its one."""
    built = cluster(tmp_path)
    [svc] = built.services
    found = admission(built, svc)
    assert found is not None
    assert (found.cluster_queue, found.local_queue, found.cohort) == (
        "gpu-inference", "gpu", "lab")
    assert (found.nominal, found.room, found.admissible_replicas, found.headroom) == (
        8, 12, 3, 8)
    assert "headroom 8" in admission_lines(found)[1]


def test_no_admission_off_kueue(tmp_path: Path) -> None:
    """Without Kueue, no queue admits anything."""
    built = cluster(tmp_path, **{"cluster.yaml": KUEUE_CLUSTER.replace(
        "quota_engine: kueue\n", "")})
    [svc] = built.services
    assert admission(built, svc) is None


def test_queue_quotas_against_demand(tmp_path: Path) -> None:
    """Each queue resource with the devices its namespace's services take."""
    autoscaled = LINT_BASE["service.yaml"] + "autoscaling: {min_replicas: 1, max_replicas: 2}\n"
    built = cluster(tmp_path, **{"service.yaml": autoscaled})
    rows = {(q.cluster_queue, q.resource): q for q in queue_quotas(built)}
    inference = rows[("gpu-inference", "deviceclass.gen.dev/h100")]
    assert (inference.nominal, inference.lendable, inference.demand_min,
            inference.demand_max) == (8, 8, 4, 8)
    assert rows[("gpu-batch", "deviceclass.gen.dev/h100")].lendable == 4
    assert any("demand 4 (autoscaling max 8), 4 left" in line
               for line in quota_lines(list(rows.values())))
