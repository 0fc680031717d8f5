"""tools.judge.live and tools.judge.fixtures against the real control plane: the example
fleet agrees in every category, the simulated slices are accepted, and a wrong gen verdict is
caught (the judge can fail)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gen.pipeline import load_plan
from tools.judge import live
from tools.judge.cluster import ControlPlane
from tools.judge.fixtures import install_cluster, nodes
from tools.judge.live import Fleet, LiveCategories, judge_fleet, reset

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = Fleet("example", REPO / "profiles", REPO)
DYNAMIC = Fleet("fixtures/dynamic-mig", REPO / "tests" / "fixtures" / "dynamic-mig",
                REPO / "tests" / "fixtures")


def test_nodes_follow_the_pools() -> None:
    """One Node per declared node, labelled and tainted as its pool; device-plugin nodes
    advertise the GPUs the device plugin would."""
    plan = load_plan(REPO / "profiles", base=REPO)
    edge = next(c for c in plan.clusters if c.name == "edge-l4")
    made = list(nodes(edge))
    assert len(made) == sum(p.pool.nodes for p in edge.pools if p.pool.platform == "nvidia")
    for pool, node in made:
        assert pool.node_labels.items() <= node["metadata"]["labels"].items()
        assert node["status"]["capacity"]["nvidia.com/gpu"] == str(pool.pool.gpus_per_node)


@pytest.mark.parametrize("fleet", [EXAMPLE, DYNAMIC], ids=lambda f: f.name)
def test_simulated_slices_are_accepted(control_plane: ControlPlane, fleet: Fleet) -> None:
    """The API server accepts every ResourceSlice gen simulates (static and dynamic MIG)."""
    plan = load_plan(fleet.profiles, base=fleet.base)
    for cluster in plan.clusters:
        if cluster.dra_api_version is None:
            continue
        reset(control_plane)
        assert install_cluster(control_plane, cluster) == []
        assert control_plane.list("resource.k8s.io/v1", "ResourceSlice")


def test_example_fleet_agrees(control_plane: ControlPlane) -> None:
    """Every verdict gen gives on the example fleet equals the real components'."""
    categories = LiveCategories()
    assert judge_fleet(control_plane, EXAMPLE, categories) is None
    by_name = {c.name: c for c in categories.all()}
    assert by_name["objects"].total >= 50
    assert by_name["allocation"].total >= 4
    assert by_name["pool selection"].total >= 1
    for category in categories.all():
        assert category.disagreements() == [], category.name


def test_a_wrong_gen_verdict_is_caught(control_plane: ControlPlane, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """With gen's CEL verdict taken away (GEN203 ignored), a selector that does not compile is
    called valid by gen and refused by the API server: the judge reports the difference."""
    import shutil

    shutil.copytree(REPO / "profiles", tmp_path / "profiles")
    h200 = tmp_path / "profiles" / "gpu-classes" / "h200.yaml"
    h200.write_text(h200.read_text(encoding="utf-8").replace(
        "  product: h200-sxm", "  product: h200-sxm\ncel:\n  - \"device.driver ==\""),
        encoding="utf-8")
    monkeypatch.setattr(live, "OBJECT_RULES", frozenset())
    categories = LiveCategories()
    judge_fleet(control_plane, Fleet("mutant", tmp_path / "profiles", tmp_path), categories,
                ("research-eu",))
    differs = {v.case: v for v in categories.objects.disagreements()}
    verdict = differs["mutant/research-eu/DeviceClass/h200"]
    assert (verdict.gen, verdict.upstream) == ("valid", "invalid")
    assert "compilation failed" in verdict.detail


def test_a_pool_selecting_other_pods_is_caught(control_plane: ControlPlane,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """With the pool's selector cut down to ``managed-by: gen``, the API server selects the
    endpoint picker's pods too: the pool-selection verdict differs."""
    from gen.fleet import endpoints

    monkeypatch.setattr(endpoints, "pool_selector",
                        lambda *_: {"app.kubernetes.io/managed-by": "gen"})
    categories = LiveCategories()
    judge_fleet(control_plane, EXAMPLE, categories, ("prod-us-east",))
    differs = {v.case: v for v in categories.pool_selection.disagreements()}
    verdict = differs["example/prod-us-east/InferencePool/inference/llama-70b"]
    assert (verdict.gen, verdict.upstream) == ("exact", "differs")
    assert "llama-70b-epp" in verdict.detail
