"""gen.emit.parallel and parallel renders: same result for any number of workers."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

import pytest

from gen.emit import parallel
from gen.errors import Finding, LintError, SourceLocation, TemplateError, WorkerError
from gen.fleet.plan import Plan
from gen.pipeline import load_plan, render_outputs
from tests.helpers import REPO

sys.path.insert(0, str(REPO / "bench"))
from fleet import write_fleet


def _square(index: int) -> int:
    return index * index


def _fail_on_three(index: int) -> int:
    if index == 3:
        raise LintError("three", findings=[Finding("GEN999", "bad", SourceLocation("p.yaml", 3))])
    return index


def _die_on_two(index: int) -> int:
    if index == 2:
        os.kill(os.getpid(), signal.SIGKILL)
    return index


def _ignore(index: int, result: int) -> None:
    del index, result


def _collector_state(index: int) -> tuple[int, int]:
    """What a task sees of the collector: its young threshold and how many objects are
    frozen (in a forked worker, the parent's, inherited frozen)."""
    import gc

    del index
    return gc.get_threshold()[0], gc.get_freeze_count()


_HELD = [[i] for i in range(1000)]
"""Long-lived objects made before any render: frozen while tasks run."""


@pytest.mark.parametrize("jobs", [1, 2])
def test_tasks_run_with_the_collector_relaxed_and_leave_it_as_it_was(jobs: int) -> None:
    """While tasks run, the objects alive before are frozen out of the collector's walks and
    young collections are rarer (in the parent and in forked workers); afterwards, and after
    a task's error, the collector is exactly as it was."""
    import gc

    before = gc.get_threshold()
    seen: dict[int, tuple[int, int]] = {}
    parallel.run_tasks(_collector_state, 3, jobs, seen.__setitem__)
    assert len(seen) == 3
    for threshold, frozen in seen.values():
        assert threshold >= parallel._YOUNG_THRESHOLD and frozen >= len(_HELD)
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before
    with pytest.raises(LintError):
        parallel.run_tasks(_fail_on_three, 5, jobs, _ignore)
    assert gc.get_freeze_count() == 0 and gc.get_threshold() == before


@pytest.mark.parametrize("jobs", [1, 2, 4])
def test_every_task_runs_once(jobs: int) -> None:
    seen: dict[int, int] = {}
    parallel.run_tasks(_square, 9, jobs, lambda i, r: seen.__setitem__(i, r))
    assert seen == {i: i * i for i in range(9)}


def test_a_task_error_is_raised_in_the_parent_with_its_findings() -> None:
    with pytest.raises(LintError) as info:
        parallel.run_tasks(_fail_on_three, 6, 2, _ignore)
    assert [f.rule for f in info.value.findings] == ["GEN999"]
    assert str(info.value.findings[0].location) == "p.yaml:3"


def test_a_killed_worker_is_a_clear_error_not_a_hang() -> None:
    with pytest.raises(WorkerError, match="exited unexpectedly") as info:
        parallel.run_tasks(_die_on_two, 6, 2, _ignore)
    assert info.value.task == 2


def test_spawned_workers_give_the_same_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """The path macOS and Windows take: the task is pickled to each worker."""
    import multiprocessing

    monkeypatch.setattr(parallel, "_context", lambda: multiprocessing.get_context("spawn"))
    seen: dict[int, int] = {}
    parallel.run_tasks(_square, 5, 2, lambda i, r: seen.__setitem__(i, r))
    assert seen == {i: i * i for i in range(5)}


def test_available_cpus_follows_affinity(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPUs this process may run on, not the machine's; never below one."""
    monkeypatch.delattr(os, "process_cpu_count", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0, 2, 5}, raising=False)
    assert parallel.available_cpus() == 3
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert parallel.available_cpus() == 1


@pytest.fixture(scope="module")
def fleet_plan(tmp_path_factory: pytest.TempPathFactory) -> Plan:
    root = tmp_path_factory.mktemp("fleet")
    return load_plan(write_fleet(root, 3, 4), base=root)


def test_parallel_render_is_byte_identical_to_serial(fleet_plan: Plan) -> None:
    serial = render_outputs(fleet_plan, templates_dir=None, out_label="out", jobs=1)
    done: list[tuple[str, int, int]] = []
    forked = render_outputs(fleet_plan, templates_dir=None, out_label="out", jobs=3,
                            progress=lambda c, d, t: done.append((c, d, t)))
    assert forked == serial
    assert sorted(c for c, _, _ in done) == [c.name for c in fleet_plan.clusters]
    assert [d for _, d, _ in done] == [1, 2, 3]
    assert {t for _, _, t in done} == {3}


def test_template_errors_of_every_cluster_are_reported_together(
    fleet_plan: Plan, tmp_path: Path,
) -> None:
    (tmp_path / "core").mkdir()
    (tmp_path / "core" / "namespace.yaml.j2").write_text("{{ no_such_name|tojson }}\n")
    with pytest.raises(TemplateError) as info:
        render_outputs(fleet_plan, templates_dir=tmp_path, out_label="out", jobs=2)
    assert len({f.hint for f in info.value.findings}) >= len(fleet_plan.clusters)
    assert all(f.location is not None and f.location.path.endswith("namespace.yaml.j2")
               for f in info.value.findings)


def test_default_jobs(fleet_plan: Plan, monkeypatch: pytest.MonkeyPatch) -> None:
    """One worker for small fleets; one per CPU, capped, for large ones."""
    import dataclasses

    from gen import pipeline

    monkeypatch.setattr(parallel, "available_cpus", lambda: 64)
    small = dataclasses.replace(fleet_plan, clusters=fleet_plan.clusters[:1])
    assert pipeline.default_jobs(small) == 1
    monkeypatch.setattr(pipeline, "PARALLEL_MIN_MANIFESTS", 1)
    assert pipeline.default_jobs(fleet_plan) == len(fleet_plan.clusters)  # 3 clusters
    big = dataclasses.replace(fleet_plan, clusters=fleet_plan.clusters * 10)
    assert pipeline.default_jobs(big) == pipeline.MAX_DEFAULT_JOBS


def test_spawned_workers_render_the_same_fleet(fleet_plan: Plan,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """macOS and Windows spawn workers: the plan travels pickled and renders the same bytes."""
    import multiprocessing

    serial = render_outputs(fleet_plan, templates_dir=None, out_label="out", jobs=1)
    monkeypatch.setattr(parallel, "_context", lambda: multiprocessing.get_context("spawn"))
    spawned = render_outputs(fleet_plan, templates_dir=None, out_label="out", jobs=2)
    assert spawned == serial


def test_a_dead_worker_names_its_cluster(fleet_plan: Plan,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A render worker killed mid-cluster: the error says which cluster, and what to try."""
    from gen import _render_task

    real = _render_task.BuiltClusterTask.__call__

    def dies_on_second(self: _render_task.BuiltClusterTask, index: int) -> _render_task.Rendered:
        if index == 1:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(self, index)

    monkeypatch.setattr(_render_task.BuiltClusterTask, "__call__", dies_on_second)
    with pytest.raises(WorkerError) as info:
        render_outputs(fleet_plan, templates_dir=None, out_label="out", jobs=2)
    name = fleet_plan.clusters[1].name
    assert f"while rendering cluster {name!r}" in str(info.value)
    assert "--jobs 1" in str(info.value)
