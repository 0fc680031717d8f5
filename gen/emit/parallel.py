"""Run independent tasks (one per cluster) in worker processes.

The parent hands out task indexes one at a time over a pipe per worker, so a slow
cluster never holds back a queue of others, and results arrive in completion order for
progress reporting. The parent starts no threads, so forking is safe: on Linux workers
are forked and inherit the loaded plan for free; elsewhere (macOS, Windows) they are
spawned and the task object is pickled to each worker once.

While tasks run, the cycle collector is relaxed, as CPython's ``gc`` documentation suggests
for forked workers: the objects that exist when they start (the plan, the modules, the
compiled templates and validators) are frozen out of its walks (``gc.freeze``), in the
parent and in each forked worker, which inherits them frozen (and so does not write to the
pages it shares with the parent either); and it runs after every :data:`_YOUNG_THRESHOLD`
new objects instead of every 700. Both are undone when the tasks are done (or fail).
Reference counting frees objects as before; only garbage cycles wait longer. On the
40-cluster bench fleet, collections took 0.51 s of a ``--jobs 1`` render, and 0.17–0.22 s
with this (most of that is the load, before any task).

A task is a picklable callable ``task(index) -> result``. An exception it raises is sent
back and re-raised in the parent; a worker that dies (killed, out of memory) raises
:class:`~gen.errors.WorkerError` whose ``task`` is the index it was on.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from typing import Any, TypeVar

from gen.errors import WorkerError

__all__ = ["available_cpus", "forks", "run_tasks"]

R = TypeVar("R")


def available_cpus() -> int:
    """CPUs this process may run on (affinity and cgroup-limited where the OS says)."""
    if hasattr(os, "process_cpu_count"):  # Python 3.13+
        count = os.process_cpu_count()
    elif hasattr(os, "sched_getaffinity"):
        count = len(os.sched_getaffinity(0))
    else:
        count = os.cpu_count()
    return max(1, count or 1)


def _context() -> Any:
    forkable = sys.platform == "linux" and threading.active_count() == 1
    return multiprocessing.get_context("fork" if forkable else "spawn")


def forks() -> bool:
    """Whether workers started now are forked (and inherit what the parent holds, such as
    compiled schemas) rather than spawned afresh."""
    return bool(_context().get_start_method() == "fork")


def _worker(conn: Connection, task: Callable[[int], Any]) -> None:
    """Serve indexes until told to stop (``None``) or the parent goes away."""
    try:
        while True:
            index = conn.recv()
            if index is None:
                return
            try:
                reply: tuple[int, bool, Any] = (index, True, task(index))
            except Exception as err:  # noqa: BLE001 - re-raised in the parent
                reply = (index, False, err)
            try:
                conn.send(reply)
            except Exception as err:  # noqa: BLE001 - unpicklable result
                conn.send((index, False, WorkerError(f"task {index}: {err!r}")))
    except (EOFError, KeyboardInterrupt, BrokenPipeError):
        return
    finally:
        conn.close()


def run_tasks(
    task: Callable[[int], R],
    count: int,
    jobs: int,
    on_result: Callable[[int, R], None],
    *,
    meanwhile: Callable[[], None] | None = None,
) -> None:
    """Call ``on_result(i, task(i))`` for every ``i < count``, in completion order.

    With ``jobs <= 1`` (or a single task) everything runs here, in index order.
    ``meanwhile``: called once here while the workers run their first tasks (after the
    last task when there are no workers); what it raises ends the run like a task's error.
    """
    jobs = min(jobs, count)
    with _frozen():
        if jobs <= 1:
            for index in range(count):
                on_result(index, task(index))
            if meanwhile is not None:
                meanwhile()
            return
        _run_workers(task, count, jobs, on_result, meanwhile)


@contextlib.contextmanager
def _frozen() -> Any:
    """The objects alive now out of the collector's walks until the block ends (see the
    module's docstring); a block inside another leaves the freezing to the outer one."""
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], _YOUNG_THRESHOLD), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


_YOUNG_THRESHOLD = 50_000
"""The collector's first threshold while tasks run (CPython's default is 700): a render
allocates millions of small containers, nearly all freed by reference counting."""


def _run_workers(
    task: Callable[[int], R], count: int, jobs: int, on_result: Callable[[int, R], None],
    meanwhile: Callable[[], None] | None,
) -> None:
    ctx = _context()
    workers: list[tuple[Any, Connection]] = []
    try:
        for _ in range(jobs):
            parent_end, child_end = ctx.Pipe()
            process = ctx.Process(target=_worker, args=(child_end, task), daemon=True)
            process.start()
            child_end.close()
            workers.append((process, parent_end))
        _dispatch(workers, count, on_result, meanwhile)
    finally:
        for _, conn in workers:
            with contextlib.suppress(OSError):
                conn.send(None)
            conn.close()
        for process, _ in workers:
            process.join(timeout=5)
            if process.is_alive():
                process.kill()
                process.join()


def _dispatch(
    workers: list[tuple[Any, Connection]], count: int, on_result: Callable[[int, Any], None],
    meanwhile: Callable[[], None] | None = None,
) -> None:
    next_index = 0
    busy: dict[Any, tuple[Any, Connection, int]] = {}  # conn -> (process, conn, its task)
    for process, conn in workers:
        if next_index < count:
            conn.send(next_index)
            busy[conn] = (process, conn, next_index)
            next_index += 1
    if meanwhile is not None:
        meanwhile()
    while busy:
        for ready in wait(list(busy)):
            process, conn, task = busy.pop(ready)
            try:
                index, ok, value = conn.recv()
            except EOFError:
                process.join(timeout=5)
                error = WorkerError(
                    f"a render worker exited unexpectedly (exit code {process.exitcode})"
                )
                error.task = task
                raise error from None
            if not ok:
                raise value
            on_result(index, value)
            if next_index < count:
                conn.send(next_index)
                busy[conn] = (process, conn, next_index)
                next_index += 1
