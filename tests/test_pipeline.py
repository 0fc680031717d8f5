"""gen.pipeline: the lint / render façade over load → resolve → render → validate → write."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from gen.errors import LintError, StaleOutputError, UnresolvedReferenceError
from gen.pipeline import RenderResult, lint, render
from tests.helpers import copy_fleet, snapshot_tree, stat_tree


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    """A scratch copy of the example fleet."""
    return copy_fleet(tmp_path / "fleet")


def _render(root: Path, *, check: bool = False, clusters: Sequence[str] = ()) -> RenderResult:
    return render(root / "profiles", root / "out", validator="embedded", base=root,
                  check=check, clusters=clusters)


def _break_fit(root: Path) -> None:
    svc = root / "profiles/services/qwen-7b-edge.yaml"
    svc.write_text(svc.read_text().replace(
        "model: Qwen/Qwen2.5-7B-Instruct", "model: meta-llama/Llama-3.1-70B-Instruct"))


def test_lint_example_fleet_is_clean(fleet: Path) -> None:
    """The example fleet has no lint errors; every finding is located."""
    findings = lint(fleet / "profiles", base=fleet)
    assert [f for f in findings if f.severity.value == "error"] == []
    assert all(f.location is not None for f in findings)


def test_lint_returns_located_findings(fleet: Path) -> None:
    """A model that does not fit is a located lint error, not an exception."""
    _break_fit(fleet)
    (finding,) = [f for f in lint(fleet / "profiles", base=fleet) if f.severity.value == "error"]
    assert finding.location is not None
    assert finding.location.path == "profiles/services/qwen-7b-edge.yaml"
    assert finding.severity.value == "error"


def test_render_then_rerender_is_unchanged(fleet: Path) -> None:
    """A second render of the same profiles reports no change and touches no file."""
    first = _render(fleet)
    assert first.changes.added and not first.changes.changed
    before = stat_tree(fleet / "out")
    second = _render(fleet)
    assert second.changes.empty
    assert stat_tree(fleet / "out") == before


def test_lint_error_stops_render_before_writing(fleet: Path) -> None:
    """Lint errors raise LintError and out/ is not created."""
    _break_fit(fleet)
    with pytest.raises(LintError, match="nothing was written"):
        _render(fleet)
    assert not (fleet / "out").exists()


def test_check_mode(fleet: Path) -> None:
    """check=True writes nothing, passes on a current out/ and raises on a stale one."""
    with pytest.raises(StaleOutputError, match="is stale"):
        _render(fleet, check=True)
    assert not (fleet / "out").exists()
    _render(fleet)
    result = _render(fleet, check=True)
    assert result.changes.empty


def test_cluster_selection_keeps_other_clusters(fleet: Path) -> None:
    """Rendering one cluster leaves the other clusters' files as they are."""
    _render(fleet)
    before = snapshot_tree(fleet / "out")
    (fleet / "out/edge-l4/kustomization.yaml").unlink()
    result = _render(fleet, clusters=("edge-l4",))
    assert result.changes.added == ("edge-l4/kustomization.yaml",)
    assert not result.changes.removed
    assert snapshot_tree(fleet / "out") == before


@pytest.mark.parametrize("index", [
    b"\xff\xfe not UTF-8\n",
    b"../profiles/clusters/edge-l4.yaml\n/etc/hostname\n",
])
def test_cluster_selection_never_trusts_a_damaged_index(fleet: Path, index: bytes) -> None:
    """A corrupt or hostile out/.gen-files: no traceback, nothing read from outside out/,
    and the other clusters' files (known by gen's header) are kept, not pruned."""
    _render(fleet)
    before = snapshot_tree(fleet / "out")
    (fleet / "out/.gen-files").write_bytes(index)
    result = _render(fleet, clusters=("edge-l4",))
    assert all(not str(p).startswith(("..", "/")) for p in result.outputs)
    assert snapshot_tree(fleet / "out") == before  # the damaged index is rebuilt in full


def test_unknown_cluster_selection(fleet: Path) -> None:
    """An unknown --cluster name is a reference error listing the known clusters."""
    with pytest.raises(UnresolvedReferenceError, match="unknown cluster") as info:
        _render(fleet, clusters=("nope",))
    known = sorted(p.stem for p in (fleet / "profiles/clusters").glob("*.yaml"))
    assert f"known: {', '.join(known)}" in str(info.value)
