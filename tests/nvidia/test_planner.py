"""gen plan's planner: static layouts for the MIG demand, their waste, dynamic MIG's count."""

from __future__ import annotations

from pathlib import Path

from gen.nvidia.gpus import gpu_catalog
from gen.nvidia.mig import check_layout
from gen.nvidia.planner import dynamic_gpus, plan_fleet, valid_layouts
from gen.pipeline import load_plan
from tests.helpers import REPO

FIXTURE = REPO / "tests" / "fixtures" / "dynamic-mig"


def test_dynamic_packs_fewer_gpus_than_one_static_layout() -> None:
    """1g/2g/3g demand on the A100 pool: one static layout needs 10 GPUs, dynamic MIG 8."""
    proposals = {p.pool.name: p for p in plan_fleet(load_plan(FIXTURE))}
    a100 = proposals["a100-dyn"]
    assert a100.uniform is not None and a100.uniform.gpus_needed == 10
    assert not a100.uniform.fits
    assert a100.dynamic_gpus == 8
    assert a100.to_json()["dynamic"]["fewer_gpus_than_static"] is True
    h100 = proposals["h100-dyn"]
    assert h100.per_index is not None and h100.per_index.fits
    assert h100.per_index.gpus_needed == 8


def test_valid_layouts_are_placement_checked() -> None:
    """Every enumerated layout passes the placement checker; 3g.40gb=2 + 1g is not among them."""
    gpu = gpu_catalog().lookup("h100-sxm5-80gb")
    layouts = valid_layouts(gpu, ["1g.10gb", "3g.40gb"])
    assert all(check_layout(gpu, lay).valid for lay in layouts)
    assert {"3g.40gb": 2} in layouts and {"3g.40gb": 2, "1g.10gb": 1} not in layouts
    assert {"3g.40gb": 1, "1g.10gb": 3} in layouts


def test_dynamic_gpus_first_fit_decreasing() -> None:
    """Two 3g and two 1g slices need two H100s; a 7g does not fit beside anything."""
    gpu = gpu_catalog().lookup("h100-sxm5-80gb")
    assert dynamic_gpus(gpu, {"3g.40gb": 2, "1g.10gb": 2}) == 2
    assert dynamic_gpus(gpu, {"7g.80gb": 1, "1g.10gb": 1}) == 2
    assert dynamic_gpus(gpu, {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}) == 1


def test_plan_is_quiet_about_pools_no_service_asks_slices_of(tmp_path: Path) -> None:
    """The fixture's MIG classes restricted to H100s, and a service of whole A100s: only the
    H100 pool is planned; the A100 pool, whose GPUs no slice class takes, is not mentioned."""
    import shutil

    root = tmp_path / "fleet"
    shutil.copytree(FIXTURE, root)
    for path in sorted((root / "gpu-classes").glob("*.yaml")):
        path.write_text(path.read_text().replace("match:\n", "match:\n  product: h100-sxm5-80gb\n"))
    (root / "gpu-classes" / "a100.yaml").write_text(
        "kind: GPUClass\nname: a100\nmatch: {product: a100-sxm4-80gb}\n")
    (root / "services" / "whole.yaml").write_text(
        "kind: InferenceService\nname: whole\nnamespace: inference\n"
        "model: meta-llama/Llama-3.2-1B-Instruct\nclusters: [dyn]\ngpu: {gpu_class: a100}\n"
        "replicas: 2\nserving: {max_model_len: 4096}\n")
    assert [p.pool.name for p in plan_fleet(load_plan(FIXTURE))] == ["h100-dyn", "a100-dyn"]
    proposals = plan_fleet(load_plan(root))
    assert [p.pool.name for p in proposals] == ["h100-dyn"]
    assert proposals[0].unknown == ()
