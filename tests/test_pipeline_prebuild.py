"""The pre-build key (gen.emit.cache.prebuild_key): a render takes an unchanged cluster
from its record without building, linting or rendering it, and its recorded findings then
count as if just found. Each case renders the edited fleet with the cache and a copy with
``--no-cache``: same status, same findings (every field, lines included), same out/."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from gen import pipeline
from gen.emit.cache import FLEET_RECORD, read_lint_record
from gen.errors import GenError
from gen.pipeline import RenderResult, render
from tests.helpers import copy_fleet, snapshot_tree

CLUSTERS = ("edge-l4", "mac-lab", "prod-us-east", "research-eu", "research-multinode",
            "shared-lab")
PROD = "profiles/clusters/prod-us-east.yaml"
LAYOUT = "profiles/mig-layouts/h100-mixed.yaml"


def _render(root: Path, **kwargs: Any) -> RenderResult:
    kwargs.setdefault("validator", "embedded")
    return render(root / "profiles", root / "out", base=root, **kwargs)


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example fleet with a GEN103 warning in prod-us-east, rendered once."""
    root = copy_fleet(tmp_path_factory.mktemp("base") / "fleet")
    _edit(root, PROD, "    mig_layout: h100-mixed\n",
          "    mig_layout: h100-mixed\n    previous_mig_layout: all-1g\n")
    _render(root)
    return root


def _edit(root: Path, rel: str, old: str, new: str) -> None:
    target = root / rel
    text = target.read_text(encoding="utf-8") if target.exists() else ""
    assert old == "" or text.count(old) == 1, (rel, old)
    target.write_text(text.replace(old, new, 1) if old else new + text, encoding="utf-8")


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The clusters built (jobs=1: the tasks run in this process)."""
    built: list[str] = []
    real = pipeline.build_one

    def counting(cluster: Any, root: Path) -> Any:
        built.append(cluster.name)
        return real(cluster, root)

    monkeypatch.setattr(pipeline, "build_one", counting)
    return built


def _outcome(root: Path, **kwargs: Any) -> tuple[str, list[str], dict[str, bytes]]:
    try:
        findings = list(_render(root, jobs=1, **kwargs).findings)
        status = "ok"
    except GenError as err:
        status, findings = type(err).__name__, list(err.findings)
    return status, [repr(f) for f in findings], snapshot_tree(root / "out")


def _same(rendered: Path, tmp_path: Path, edits: list[tuple[str, str, str]]) -> tuple[
        str, list[str], dict[str, bytes]]:
    """The edited fleet rendered with the cache equals it rendered without; returns it."""
    cached = tmp_path / "cached"
    uncached = tmp_path / "uncached"
    for root in (cached, uncached):
        shutil.copytree(rendered, root)
        for rel, old, new in edits:
            _edit(root, rel, old, new)
    outcome = _outcome(cached)
    assert outcome == _outcome(uncached, no_cache=True)
    return outcome


def test_a_noop_builds_nothing(rendered: Path, tmp_path: Path, builds: list[str]) -> None:
    root = tmp_path / "fleet"
    shutil.copytree(rendered, root)
    (root / "out" / FLEET_RECORD).unlink()
    before = snapshot_tree(rendered / "out")
    result = _render(root, jobs=1)
    assert builds == []
    assert result.skipped == CLUSTERS
    assert [f.rule for f in result.findings] == ["GEN103"]
    assert snapshot_tree(root / "out") == before
    check = _render(root, jobs=1, check=True)
    assert builds == [] and check.skipped == CLUSTERS and check.findings == result.findings


def test_a_one_service_edit_builds_its_cluster_only(rendered: Path, tmp_path: Path,
                                                    builds: list[str]) -> None:
    root = tmp_path / "fleet"
    shutil.copytree(rendered, root)
    _edit(root, "profiles/services/qwen-7b-edge.yaml", "replicas: 3", "replicas: 2")
    result = _render(root, jobs=1)
    assert builds == ["edge-l4"]
    assert result.skipped == ("mac-lab", "prod-us-east", "research-eu", "research-multinode",
            "shared-lab")


def test_a_comment_that_moves_lines_moves_the_findings(rendered: Path, tmp_path: Path,
                                                       builds: list[str]) -> None:
    """The output stays (the fingerprint still matches), the finding's line does not."""
    line = _render(_copy(rendered, tmp_path / "before"), jobs=1).findings[0].location
    builds.clear()
    status, findings, _ = _same(rendered, tmp_path, [(PROD, "kind: Cluster\n",
                                                      "# a new comment\nkind: Cluster\n")])
    assert status == "ok" and len(findings) == 1
    assert "prod-us-east" in builds
    record = read_lint_record(tmp_path / "cached" / "out", "prod-us-east")
    assert record is not None and record.findings
    moved = record.findings[0].location
    assert line is not None and moved is not None and moved.line == line.line + 1


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_an_inline_suppression_in_the_shared_layout_follows_its_line(
        rendered: Path, tmp_path: Path) -> None:
    """A layout error silenced on its line: after a comment above it, a stale line in a
    record would no longer meet the marker and the render would stop."""
    broken = _copy(rendered, tmp_path / "broken")
    _edit(broken, LAYOUT, "  1g.10gb: 2\n", "  1g.10gb: 3  # gen: ignore[GEN101] testing\n")
    _edit(broken, LAYOUT, "profiles:\n", "profiles:  # gen: ignore[GEN101] testing the cache\n")
    # without the 3g.40gb slices the layout no longer makes, the MIG service has no pool
    _edit(broken, "profiles/services/llama-8b-mig.yaml", "  gpu_class: mig-3g-40gb\n",
          "  gpu_class: mig-3g-40gb  # gen: ignore[GEN304] testing the cache\n")
    assert _outcome(broken)[0] == "ok"
    status, _, _ = _same(broken, tmp_path / "moved", [(LAYOUT, "kind: MIGLayout\n",
                                                       "# moved\nkind: MIGLayout\n")])
    assert status == "ok"


@pytest.mark.parametrize("edits", [
    [("gen.yaml", "", "lint:\n  ignore:\n    - {rule: GEN103, reason: planned}\n")],
    [("gen.yaml", "", "lint:\n  ignore:\n    - {rule: GEN301, reason: unused}\n")],
    [(PROD, "allocation: dra\n",
      "allocation: dra\nlint: {ignore: [{rule: GEN103, reason: planned}]}\n")],
    [(PROD, "previous_mig_layout: all-1g\n",
      "previous_mig_layout: all-1g  # gen: ignore[GEN103] planned\n")],
], ids=["gen.yaml", "gen.yaml-unused", "profile", "inline"])
def test_a_suppression_applies_to_recorded_findings(rendered: Path, tmp_path: Path,
                                                    edits: list[tuple[str, str, str]]) -> None:
    _same(rendered, tmp_path, edits)


@pytest.mark.parametrize("edits", [
    [("profiles/gpu-classes/h100.yaml", 'min_compute_capability: "9.0"',
      'min_compute_capability: "8.0"')],
    [("profiles/gpu-classes/h100.yaml", "kind: GPUClass\n", "# moved\nkind: GPUClass\n")],
    [(LAYOUT, "  1g.10gb: 2\n", "  1g.10gb: 1\n")],
    [(LAYOUT, "  1g.10gb: 2\n", "  1g.10gb: 3\n")],
    [("profiles/services/qwen-32b.yaml", "max_model_len: ", "max_model_len: 1")],
], ids=["class", "class-comment", "layout", "layout-error", "model-context"])
def test_a_shared_profile_edit(rendered: Path, tmp_path: Path,
                               edits: list[tuple[str, str, str]]) -> None:
    _same(rendered, tmp_path, edits)


def test_the_keys_hash_every_service_field_and_decide_every_pool_field() -> None:
    """Both keys project a ServicePlan from its dataclass fields, so a field added there is
    hashed without anyone listing it; a field added to PoolPlan must be put among the
    fingerprint's inputs or the fields it leaves out, or this fails."""
    import dataclasses

    from gen.emit.cache._plan import POOL_DERIVED, POOL_INPUTS, service_inputs
    from gen.fleet.plan import PoolPlan, ServicePlan

    names = [f.name for f in dataclasses.fields(ServicePlan)]
    fake: dict[str, Any] = {**{name: name for name in names}, "pools": ()}
    service = ServicePlan(**fake)
    assert service_inputs(service, str) == {**{name: name for name in names}, "pools": []}
    assert set(POOL_INPUTS) | POOL_DERIVED == {f.name for f in dataclasses.fields(PoolPlan)}
    assert not set(POOL_INPUTS) & POOL_DERIVED
