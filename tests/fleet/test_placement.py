"""gen.fleet.placement: which pools a service's class can take, and so where its pods may land."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gen.fleet.placement import candidates
from gen.pipeline import lint, load_plan, render
from tests.helpers import write_tree

MIXED = {
    "profiles/cluster.yaml": """\
        kind: Cluster
        name: mixed
        kubernetes_version: "1.31.6"
        allocation: device-plugin
        node_pools:
          - {name: big, gpu: h200-sxm, gpus_per_node: 8, nodes: 2,
             driver_version: "580.95.05", labels: {gen.dev/pool: big}}
          - {name: small, gpu: l4, gpus_per_node: 1, nodes: 4,
             driver_version: "580.95.05", labels: {gen.dev/pool: small}}
        """,
    "profiles/classes.yaml": """\
        kind: GPUClass
        name: h200
        match: {product: h200-sxm}
        ---
        kind: GPUClass
        name: big-memory
        match: {min_memory: 100Gi}
        ---
        kind: GPUClass
        name: blackwell
        match: {architecture: Blackwell}
        """,
    "profiles/svc.yaml": """\
        kind: InferenceService
        name: llama-70b
        namespace: inference
        model: meta-llama/Llama-3.1-70B-Instruct
        clusters: [mixed]
        gpu: {gpu_class: CLASS, count: 2}
        parallelism: {tensor: 2}
        replicas: 1
        serving: {max_model_len: 8192}
        """,
}


def _fleet(tmp_path: Path, gpu_class: str) -> Path:
    files = dict(MIXED)
    files["profiles/svc.yaml"] = files["profiles/svc.yaml"].replace("CLASS", gpu_class)
    return write_tree(tmp_path, files)


@pytest.mark.parametrize("gpu_class", ["h200", "big-memory"])
def test_a_device_plugin_service_lands_only_on_pools_its_class_matches(
    tmp_path: Path, gpu_class: str,
) -> None:
    """A 70B model of an H200 class is neither placed on nor sized for the L4 pool."""
    root = _fleet(tmp_path, gpu_class)
    assert [f for f in lint(root / "profiles", base=root) if f.severity.value == "error"] == []
    render(root / "profiles", root / "out", base=root, validator="embedded")
    (path,) = (root / "out").rglob("deployment-llama-70b.yaml")
    deployment: dict[str, Any] = yaml.safe_load(path.read_text())
    assert deployment["spec"]["template"]["spec"]["nodeSelector"]["gen.dev/pool"] == "big"


def test_a_class_no_pool_matches_is_a_located_error(tmp_path: Path) -> None:
    root = _fleet(tmp_path, "blackwell")
    errors = [f for f in lint(root / "profiles", base=root) if f.severity.value == "error"]
    assert [f.rule for f in errors] == ["GEN304"]
    where = errors[0].location
    assert where is not None
    assert where.path.endswith("svc.yaml") and where.line == 6


def test_candidates_follow_the_class(tmp_path: Path) -> None:
    root = _fleet(tmp_path, "h200")
    (cluster,) = load_plan(root / "profiles", base=root).clusters
    (svc,) = cluster.services
    assert {c.pool.name for c in candidates(svc)} == {"big"}


def test_a_dra_class_by_raw_cel_lands_only_on_the_pools_its_cel_selects(tmp_path: Path) -> None:
    """An H200 class written as raw CEL is neither sized for nor placed on the L4 pool (the
    pipeline records the pools its CEL rejects, gen.dra.admission)."""
    files = dict(MIXED)
    files["profiles/cluster.yaml"] = files["profiles/cluster.yaml"].replace(
        '"1.31.6"', '"1.34.2"').replace("device-plugin", "dra")
    files["profiles/classes.yaml"] = (
        "kind: GPUClass\nname: cel-h200\ncel:\n"
        "  - device.attributes[\"gpu.nvidia.com\"].productName == \"NVIDIA H200\"\n")
    files["profiles/svc.yaml"] = files["profiles/svc.yaml"].replace("CLASS", "cel-h200")
    root = write_tree(tmp_path, files)
    assert lint(root / "profiles", base=root) == []
    (cluster,) = load_plan(root / "profiles", base=root).clusters
    (svc,) = cluster.services
    assert {c.pool.name for c in candidates(svc)} == {"big"}
    assert {c.pool.name for c in candidates(svc, match_class=False)} == {"big", "small"}
    render(root / "profiles", root / "out", base=root, validator="embedded", jobs=1)
    (path,) = (root / "out").rglob("deployment-llama-70b.yaml")
    deployment: dict[str, Any] = yaml.safe_load(path.read_text())
    assert deployment["spec"]["template"]["spec"]["nodeSelector"]["gen.dev/pool"] == "big"


def test_a_mig_class_of_one_product_takes_no_slices_of_another(tmp_path: Path) -> None:
    """A 3g.40gb class restricted to H100s is offered the H100 pool's slices only, though the
    A100 80GB of the other dynamic pool has a 3g.40gb profile too."""
    import shutil

    from tests.helpers import REPO

    root = tmp_path / "fleet"
    shutil.copytree(REPO / "tests" / "fixtures" / "dynamic-mig", root)
    path = root / "gpu-classes" / "mig-3g-40gb.yaml"
    path.write_text(path.read_text().replace("match:\n", "match:\n  product: h100-sxm5-80gb\n"))
    (svc,) = [s for s in load_plan(root).clusters[0].services if s.service.name == "large"]
    assert [(c.pool.name, c.mig_profile) for c in candidates(svc)] == [("h100-dyn", "3g.40gb")]
