"""Apple decisions are made once per cluster, recorded in the plan, and read by build and checks."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

import pytest

import gen.apple.build
import gen.apple.decide
from gen.apple.decide import AppleDecisions, decide, decisions
from gen.fleet.plan import ClusterPlan
from gen.pipeline import lint, load_plan
from tests.apple.test_checks import CLUSTER, MACS, MODELS, VULKAN
from tests.helpers import REPO, write_tree


def lab(tmp_path: Path, **overrides: str) -> ClusterPlan:
    """The built plan of cluster 'lab' of the small Apple fleet, some documents replaced."""
    files = {"cluster.yaml": CLUSTER, "models.yaml": MODELS, "vulkan.yaml": VULKAN,
             "macs.yaml": MACS, **{f"{k}.yaml": v for k, v in overrides.items()}}
    plan = load_plan(write_tree(tmp_path / "profiles", files))
    return next(c for c in plan.clusters if c.name == "lab")


def recorded(plan: ClusterPlan) -> AppleDecisions:
    """The decisions the pipeline recorded (not decided again)."""
    assert isinstance(plan.apple, AppleDecisions)
    return plan.apple


def test_pipeline_records_the_decisions(tmp_path: Path) -> None:
    """A built cluster plan carries its Apple decisions: pools, services, server config."""
    plan = lab(tmp_path)
    decided = recorded(plan)
    assert decisions(plan) is decided
    (pool,) = decided.pools
    assert (pool.name, pool.index, pool.chip_error, pool.plugin_error) == ("studio", 0, None, None)
    assert pool.device is not None and "Venus" in pool.device.name
    assert pool.plugin_args is not None and pool.plugin_args[:2] == ("--domain", "squat.ai")
    llama = decided.llama["llama-vk"]
    assert llama.ready and llama.pools == (pool,)
    assert llama.context_length == 16384
    assert llama.args is not None and llama.args[llama.args.index("-c") + 1] == "16384"
    assert all(r is not None and r.fits for r in llama.fits)
    mac = decided.macs["llama-mac"]
    assert mac.ready and mac.server is not None and mac.server.engine == "vllm-mlx"
    assert mac.plist is not None and mac.plist.startswith(b"<?xml")
    assert decided.vllm == {}


def test_decided_once_per_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """lint decides each cluster once; the builder and the rules only read the record."""
    calls: list[str] = []

    def counting(plan: ClusterPlan) -> AppleDecisions:
        calls.append(plan.name)
        return decide(plan)

    monkeypatch.setattr(gen.apple.build, "decide", counting)
    monkeypatch.setattr(gen.apple.decide, "decide", counting)
    files = {"cluster.yaml": CLUSTER, "models.yaml": MODELS, "vulkan.yaml": VULKAN,
             "macs.yaml": MACS}
    assert lint(write_tree(tmp_path / "profiles", files)) == []
    assert calls == ["lab"]


def test_errors_are_recorded_not_raised(tmp_path: Path) -> None:
    """An unknown chip and a malformed resource are recorded; nothing is built from them."""
    cluster = CLUSTER.replace("m2-ultra", "m2-ultraa").replace(
        "vm_memory_gb: 24}", "vm_memory_gb: 24, resource_name: dri}")
    macs = MACS.replace("m2-ultra", "m9-ultra")
    plan = lab(tmp_path, cluster=cluster, macs=macs)
    decided = recorded(plan)
    (pool,) = decided.pools
    assert pool.chip is None and pool.device is None and pool.plugin_args is None
    assert pool.chip_error is not None and "m2-ultraa" in pool.chip_error
    assert pool.plugin_error is not None and "'dri'" in pool.plugin_error
    llama = decided.llama["llama-vk"]
    assert not llama.ready and llama.fits == (None,)
    mac = decided.macs["llama-mac"]
    assert not mac.devices_known and mac.server is None and mac.server_error is None
    templates = {s.template for s in plan.manifests}
    assert "apple/daemonset.yaml.j2" not in templates
    assert "apple/deployment.yaml.j2" not in templates
    assert not any(f.path.parts[0] == "_hosts" for f in plan.files)


def test_vllm_on_apple_pool_is_recorded(tmp_path: Path) -> None:
    """A vLLM service that would land on an Apple VM pool is recorded for GEN601."""
    service = VULKAN.replace("engine: llama-server", "engine: vllm").replace(
        "org/Llama-8B-GGUF/llama-8b-q8_0.gguf", "meta-llama/Llama-3.1-8B-Instruct")
    decided = recorded(lab(tmp_path, vulkan=service))
    assert [p.name for p in decided.vllm["llama-vk"]] == ["studio"]
    assert decided.llama == {}


def test_context_without_max_model_len_is_the_longest_that_fits(tmp_path: Path) -> None:
    """Without serving.max_model_len the context is what fits the GPU, capped by the model."""
    service = VULKAN.replace("    serving: {max_model_len: 16384}\n", "")
    llama = recorded(lab(tmp_path, vulkan=service)).llama["llama-vk"]
    (report,) = llama.fits
    assert report is not None
    assert llama.context_length == min(report.max_model_len_fit, 131072)


def test_blank_served_name_is_reported_not_skipped(tmp_path: Path) -> None:
    """llama-server arguments that cannot be built are a GEN608 finding, and no Deployment."""
    service = VULKAN.replace("{max_model_len: 16384}",
                             "{max_model_len: 16384, served_model_name: '  '}")
    plan = lab(tmp_path, vulkan=service)
    llama = recorded(plan).llama["llama-vk"]
    assert llama.args is None and llama.args_error == "served model name must not be empty"
    assert not any(s.template == "apple/deployment.yaml.j2" for s in plan.manifests)
    files = {"cluster.yaml": CLUSTER, "models.yaml": MODELS, "vulkan.yaml": service,
             "macs.yaml": MACS}
    findings = lint(write_tree(tmp_path / "lint", files))
    assert [(f.rule, f.key_path, f.message) for f in findings] == [
        ("GEN608", "serving", "served model name must not be empty")]


def test_decisions_survive_pickling(tmp_path: Path) -> None:
    """Render workers receive the plan pickled: the decisions travel with it."""
    plan = lab(tmp_path)
    copy = pickle.loads(pickle.dumps(plan))
    assert recorded(copy) == recorded(plan)


def test_unrecorded_plan_is_decided_on_the_spot(tmp_path: Path) -> None:
    """A plan that skipped the pipeline's record still builds the same objects."""
    import dataclasses

    plan = lab(tmp_path)
    bare = dataclasses.replace(plan, apple=None)
    assert decisions(bare) == recorded(plan)
    assert gen.apple.build.build(bare) == gen.apple.build.build(plan)


def test_checks_import_nothing_from_the_builder() -> None:
    """The rules read recorded decisions; they never import builder code."""
    tree = ast.parse((REPO / "gen/apple/checks.py").read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert "gen.apple.build" not in imported
