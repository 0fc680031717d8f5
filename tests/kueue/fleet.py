"""A Kueue fleet for the tests of gen.kueue: :data:`tests.helpers.LINT_BASE` with its
cluster on Kueue, two teams sharing the cohort 'lab' (the 70B service in 'inference')."""

from __future__ import annotations

from pathlib import Path

from gen.fleet.plan import ClusterPlan
from gen.pipeline import build_cluster, load_plan
from tests.helpers import LINT_BASE

KUEUE_CLUSTER = LINT_BASE["cluster.yaml"].replace(
    "allocation: dra\n", "allocation: dra\naddons: [kueue]\nquota_engine: kueue\n"
) + """\
quotas:
  - namespace: inference
    gpu_class: h100
    devices: 8
    cohort: lab
    preemption: LowerPriority
    priority_class: {name: serving, value: 100}
  - namespace: batch
    gpu_class: h100
    devices: 8
    cohort: lab
    lending_limit: 4
  - namespace: batch
    gpu_class: mig-3g
    devices: 1
    cohort: lab
"""


def write(tmp_path: Path, **changes: str) -> Path:
    """The fleet's profiles folder (``name=text`` replaces a file), under ``tmp_path``."""
    root = tmp_path / "profiles"
    root.mkdir(parents=True)
    for name, text in {**LINT_BASE, "cluster.yaml": KUEUE_CLUSTER, **changes}.items():
        (root / name).write_text(text)
    return root


def cluster(tmp_path: Path, **changes: str) -> ClusterPlan:
    """The built cluster 'prod' of the fleet."""
    plan = load_plan(write(tmp_path, **changes), base=tmp_path)
    [only] = plan.clusters
    return build_cluster(only)
