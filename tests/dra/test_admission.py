"""Pools a class's raw CEL admits (gen.dra.admission), recorded on the plan's pools."""

from __future__ import annotations

from pathlib import Path

from gen.dra.admission import cel_refusals
from gen.fleet.placement import candidates
from gen.fleet.plan import ClusterPlan
from gen.pipeline import load_plan
from tests.helpers import LINT_BASE, write_tree

_L40S_POOL = """\
  - name: l40s
    gpu: l40s
    gpus_per_node: 4
    nodes: 1
    driver_version: "580.95.05"
"""


def _plan(tmp_path: Path, cel: str) -> ClusterPlan:
    classes = LINT_BASE["classes.yaml"].replace(
        "match: {product: h100-sxm5-80gb}", f"cel:\n  - '{cel}'", 1)
    root = write_tree(tmp_path / "profiles", {
        **LINT_BASE, "classes.yaml": classes,
        "cluster.yaml": LINT_BASE["cluster.yaml"] + _L40S_POOL,
    })
    return load_plan(root, base=tmp_path).clusters[0]


def test_raw_cel_refuses_the_pools_it_selects_nothing_of(tmp_path: Path) -> None:
    cluster = _plan(tmp_path, 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA L40S"')
    # The MIG pool publishes MIG devices only: a whole-GPU class's DeviceClass takes none.
    assert cel_refusals(cluster) == {"h100": {"h100"}, "mig": {"h100"}}
    svc = cluster.services[0]
    assert [c.pool.name for c in candidates(svc)] == ["l40s"]
    assert {p.name: p.refused_classes for p in svc.pools}["h100"] == {"h100"}


def test_a_run_time_error_admits_nothing(tmp_path: Path) -> None:
    cluster = _plan(tmp_path, 'device.attributes["gpu.nvidia.com"].noSuchAttribute == "x"')
    assert cel_refusals(cluster) == {"h100": {"h100"}, "l40s": {"h100"}, "mig": {"h100"}}


def test_cel_admitting_every_pool_refuses_none(tmp_path: Path) -> None:
    cluster = _plan(tmp_path, 'device.attributes["gpu.nvidia.com"].architecture != "Ampere"')
    assert cel_refusals(cluster) == {"mig": {"h100"}}
    assert {c.pool.name for c in candidates(cluster.services[0])} == {"h100", "l40s"}
