"""A render builds, lints, fingerprints, renders and validates each cluster in its worker
(gen._render_task.ClusterTask): the result does not depend on how many workers, nor on whether
they are forked or spawned; errors keep their order (lint, then template, then schema)."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from gen import _render_task
from gen.emit import parallel
from gen.errors import LintError, TemplateError, WorkerError
from gen.pipeline import RenderResult, render
from tests.helpers import REPO, snapshot_tree

sys.path.insert(0, str(REPO / "bench"))
from fleet import write_fleet


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fleet")
    write_fleet(root, 4, 4)
    return root


def _render(root: Path, **kwargs: Any) -> RenderResult:
    kwargs.setdefault("validator", "embedded")
    return render(root / "profiles", root / "out", base=root, **kwargs)


def _fields(result: RenderResult) -> tuple[Any, ...]:
    return (dict(result.outputs), result.changes, result.findings, result.objects,
            result.skipped, result.fast_path)


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_jobs_do_not_change_the_render(fleet: Path, tmp_path: Path,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """-j 1, forked -j 3 and spawned -j 2: the same result and out/, from scratch and then
    with one cluster changed (three clusters from their records)."""
    roots = {name: _copy(fleet, tmp_path / name) for name in ("serial", "forked", "spawned")}
    jobs = {"serial": 1, "forked": 3, "spawned": 2}

    def run_all() -> dict[str, tuple[Any, ...]]:
        results = {}
        for name, root in roots.items():
            if name == "spawned":
                monkeypatch.setattr(parallel, "_context",
                                    lambda: multiprocessing.get_context("spawn"))
            results[name] = _fields(_render(root, jobs=jobs[name], no_cache=False))
            monkeypatch.undo()
        return results

    first = run_all()
    assert first["serial"] == first["forked"] == first["spawned"]
    trees = {name: snapshot_tree(root / "out") for name, root in roots.items()}
    assert trees["serial"] == trees["forked"] == trees["spawned"]
    for root in roots.values():
        (root / "out" / ".gen-cache" / "_fleet.json").unlink()
        profile = root / "profiles" / "c0002.yaml"
        profile.write_text(profile.read_text().replace("replicas: 2", "replicas: 3", 1))
    second = run_all()
    assert second["serial"] == second["forked"] == second["spawned"]
    assert second["serial"][4] == ("c0000", "c0001", "c0003")
    trees = {name: snapshot_tree(root / "out") for name, root in roots.items()}
    assert trees["serial"] == trees["forked"] == trees["spawned"]


def test_progress_names_each_selected_cluster_once(fleet: Path, tmp_path: Path) -> None:
    root = _copy(fleet, tmp_path / "fleet")
    seen: list[tuple[str, int, int]] = []
    _render(root, jobs=2, progress=lambda c, d, t: seen.append((c, d, t)))
    assert sorted(c for c, _, _ in seen) == ["c0000", "c0001", "c0002", "c0003"]
    assert [d for _, d, _ in seen] == [1, 2, 3, 4] and {t for _, _, t in seen} == {4}
    seen.clear()
    _render(root, jobs=2, clusters=["c0001", "c0003"], no_cache=True,
            progress=lambda c, d, t: seen.append((c, d, t)))
    assert sorted(seen) == [("c0001", 1, 2), ("c0003", 2, 2)] or sorted(seen) == [
        ("c0001", 2, 2), ("c0003", 1, 2)]


def _lint_error(root: Path) -> None:
    """GEN303 (an error) in c0003 only: its driver is older than the model's CUDA needs."""
    profile = root / "profiles" / "c0003.yaml"
    text = profile.read_text()
    profile.write_text(text.replace('driver_version: "580.95.05"', 'driver_version: "450.51"'))


@pytest.mark.parametrize("jobs", [1, 3])
def test_lint_errors_come_before_template_errors(fleet: Path, tmp_path: Path,
                                                 jobs: int) -> None:
    root = _copy(fleet, tmp_path / "fleet")
    _lint_error(root)
    templates = root / "templates" / "core"
    templates.mkdir(parents=True)
    (templates / "namespace.yaml.j2").write_text("{{ no_such_name|tojson }}\n")
    with pytest.raises(LintError) as info:
        _render(root, jobs=jobs, templates_dir=root / "templates")
    assert {f.cluster for f in info.value.findings} <= {"c0003", ""}
    assert not (root / "out").exists()
    # without the lint error: every cluster's template errors, together
    shutil.rmtree(root / "profiles")
    shutil.copytree(fleet / "profiles", root / "profiles")
    with pytest.raises(TemplateError) as failed:
        _render(root, jobs=jobs, templates_dir=root / "templates")
    assert len({f.hint for f in failed.value.findings}) >= 4


def test_a_lint_error_in_an_unselected_cluster_stops_a_cluster_render(
        fleet: Path, tmp_path: Path) -> None:
    root = _copy(fleet, tmp_path / "fleet")
    _lint_error(root)
    with pytest.raises(LintError):
        _render(root, jobs=2, clusters=["c0000"])


def test_a_dead_worker_names_its_cluster(fleet: Path, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    root = _copy(fleet, tmp_path / "fleet")
    real = _render_task.ClusterTask.__call__

    def dies_on_second(self: _render_task.ClusterTask, index: int) -> Any:
        if index == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(self, index)

    monkeypatch.setattr(_render_task.ClusterTask, "__call__", dies_on_second)
    with pytest.raises(WorkerError) as info:
        _render(root, jobs=2)
    assert "while building and rendering cluster 'c0001'" in str(info.value)
    assert not (root / "out").exists()
