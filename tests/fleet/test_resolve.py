"""gen.fleet.resolve: reference errors located at the referring line, with known names and hints."""

from __future__ import annotations

from pathlib import Path

import pytest

from gen.errors import Finding, UnresolvedReferenceError
from gen.fleet.profiles import load_profiles
from gen.fleet.resolve import build_plan
from tests.helpers import copy_fleet


def _edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in {rel}"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _line_of(root: Path, rel: str, needle: str) -> int:
    lines = (root / rel).read_text(encoding="utf-8").splitlines()
    return next(i for i, line in enumerate(lines, 1) if needle in line)


def _ref_errors(root: Path) -> list[Finding]:
    with pytest.raises(UnresolvedReferenceError) as info:
        build_plan(load_profiles(root / "profiles", base=root))
    assert all(f.rule == "GEN003" for f in info.value.findings)
    return list(info.value.findings)


def test_example_fleet_resolves(tmp_path: Path) -> None:
    """The example fleet resolves into one ClusterPlan per cluster with its DRA API version."""
    root = copy_fleet(tmp_path)
    plan = build_plan(load_profiles(root / "profiles", base=root))
    versions = {c.name: c.dra_api_version for c in plan.clusters}
    assert versions.items() >= {
        "edge-l4": None, "prod-us-east": "resource.k8s.io/v1",
        "research-eu": "resource.k8s.io/v1",
    }.items()


def test_unknown_gpu_class_suggests(tmp_path: Path) -> None:
    """A service's unknown gpu_class is located at its line with 'did you mean' and 'known:'."""
    root = copy_fleet(tmp_path)
    rel = "profiles/services/llama-70b.yaml"
    _edit(root, rel, "gpu_class: h100", "gpu_class: h10o")
    (finding,) = _ref_errors(root)
    assert str(finding.location) == f"{rel}:{_line_of(root, rel, 'gpu_class')}:3"
    assert finding.key_path == "gpu.gpu_class"
    assert "did you mean 'h100'?" in finding.message
    known = sorted(load_profiles(root / "profiles", base=root).gpu_classes)
    assert f"known: {', '.join(known)}" in finding.message


def test_unknown_cluster(tmp_path: Path) -> None:
    """An unknown cluster in a service's list is located at that list item."""
    root = copy_fleet(tmp_path)
    rel = "profiles/services/qwen-32b.yaml"
    _edit(root, rel, "clusters: [research-eu]", "clusters: [research-eu, research-us]")
    (finding,) = _ref_errors(root)
    assert finding.location is not None
    assert finding.location.line == _line_of(root, rel, "clusters:")
    assert finding.location.column == len("clusters: [research-eu, ") + 1
    assert finding.key_path == "clusters[1]"
    assert "cluster 'research-us' not found; did you mean 'research-eu'?" in finding.message


def test_unknown_mig_layout(tmp_path: Path) -> None:
    """A node pool's unknown mig_layout is located at the pool's mig_layout key."""
    root = copy_fleet(tmp_path)
    rel = "profiles/clusters/prod-us-east.yaml"
    _edit(root, rel, "mig_layout: h100-mixed", "mig_layout: h100-mixd")
    (finding,) = _ref_errors(root)
    assert str(finding.location) == f"{rel}:{_line_of(root, rel, 'mig_layout')}:5"
    assert finding.key_path == "node_pools[1].mig_layout"
    assert "did you mean 'h100-mixed'? known: h100-mixed" in finding.message


def test_unknown_model(tmp_path: Path) -> None:
    """An unknown model is located at the model key with a hint to add a Model profile."""
    root = copy_fleet(tmp_path)
    rel = "profiles/services/qwen-7b-edge.yaml"
    _edit(root, rel, "model: Qwen/Qwen2.5-7B-Instruct", "model: example/Unknown-7B")
    (finding,) = _ref_errors(root)
    assert str(finding.location) == f"{rel}:{_line_of(root, rel, 'model:')}:1"
    assert finding.key_path == "model"
    assert "kind: Model" in finding.hint


def test_unknown_node_pool(tmp_path: Path) -> None:
    """A node_pool pin that names no pool of the cluster lists the cluster's pools."""
    root = copy_fleet(tmp_path)
    rel = "profiles/services/llama-70b.yaml"
    pin = "clusters: [prod-us-east]\nnode_pool: h100-ful\n"
    _edit(root, rel, "clusters: [prod-us-east]\n", pin)
    (finding,) = _ref_errors(root)
    assert str(finding.location) == f"{rel}:{_line_of(root, rel, 'node_pool:')}:1"
    assert "did you mean 'h100-full'?" in finding.message
    assert "known: h100-full, h100-mig" in finding.message


def test_unknown_gpu_of_pool(tmp_path: Path) -> None:
    """A node pool GPU the catalog lacks is located at the pool's gpu key."""
    root = copy_fleet(tmp_path)
    rel = "profiles/clusters/research-eu.yaml"
    _edit(root, rel, "gpu: h200-sxm", "gpu: h900")
    (finding,) = _ref_errors(root)
    assert str(finding.location) == f"{rel}:{_line_of(root, rel, 'gpu: h900')}:5"
    assert finding.key_path == "node_pools[0].gpu"


def test_all_reference_errors_reported_together(tmp_path: Path) -> None:
    """Reference errors of several files come back in one error, sorted by file."""
    root = copy_fleet(tmp_path)
    _edit(root, "profiles/services/llama-70b.yaml", "gpu_class: h100", "gpu_class: nope")
    _edit(root, "profiles/clusters/prod-us-east.yaml", "gpu_class: h100", "gpu_class: nada")
    findings = _ref_errors(root)
    assert [f.key_path for f in findings] == ["quotas[0].gpu_class", "gpu.gpu_class"]
    assert "known: none" not in findings[0].message


def test_unknown_node_pool_names_the_cluster(tmp_path: Path) -> None:
    """The node-pool message says in which cluster the pool was looked for."""
    root = copy_fleet(tmp_path)
    rel = "profiles/services/llama-70b.yaml"
    _edit(root, rel, "clusters: [prod-us-east]\n", "clusters: [prod-us-east]\nnode_pool: x\n")
    (finding,) = _ref_errors(root)
    assert finding.message.startswith("node pool 'x' not found in cluster 'prod-us-east'; ")
    assert finding.key_path == "node_pool"


def test_every_llmspec_field_is_carried_by_a_model_profile() -> None:
    """A Model profile can give every LLMSpec field (and ``config``, where they come from).

    A field added to either class fails here until the other has it too.
    """
    import dataclasses

    from gen.models.model import ModelProfile
    from gen.serving.model_catalog import LLMSpec

    carried = {LLMSpec.PROFILE_NAMES.get(f.name, f.name) for f in dataclasses.fields(LLMSpec)}
    assert carried == set(ModelProfile.model_fields) - {"kind", "config", "lint"}


def test_model_profile_becomes_its_llmspec() -> None:
    """Every value of a Model profile reaches the LLMSpec, the name as its id."""
    from gen.models.model import ModelProfile
    from gen.serving.model_catalog import LLMSpec

    profile = ModelProfile(
        kind="Model", name="example/Moe-1", parameters=21_000_000_000,
        active_parameters=3_600_000_000, layers=24, hidden_size=2880, attention_heads=64,
        kv_heads=8, head_dim=64, max_context=131072, weight_dtype="mxfp4",
        quantization="mxfp4", experts=32, experts_per_token=4, license_gated=True,
    )
    spec = LLMSpec.from_profile(profile)
    assert spec.id == "example/Moe-1"
    for key in set(ModelProfile.model_fields) - {"kind", "name", "config", "lint"}:
        assert getattr(spec, key) == getattr(profile, key), key
    assert spec.intermediate_size is None
    assert spec.compute_dtype == "bf16"


def test_plan_select(tmp_path: Path) -> None:
    """Plan.select keeps the named clusters in plan order; unknown names are one error."""
    root = copy_fleet(tmp_path)
    plan = build_plan(load_profiles(root / "profiles", base=root))
    assert plan.select(()) is plan
    names = [c.name for c in plan.clusters]
    assert [c.name for c in plan.select(list(reversed(names[:2]))).clusters] == names[:2]
    with pytest.raises(UnresolvedReferenceError) as info:
        plan.select(["nope", names[0], "nada"])
    assert info.value.message == (
        f"unknown cluster(s): nope, nada; known: {', '.join(sorted(names))}"
    )
