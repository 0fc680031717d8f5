"""A progress bar for long renders: one step per cluster, on stderr, only for people.

Shown only when stderr is a terminal, ``--quiet`` is off, and the render has already
taken longer than :data:`DELAY_S` (short renders never flash a bar). It is refreshed by
hand from the render's progress callback, never by a background thread, so worker
processes can be forked safely while it is on screen.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any, Self, TextIO

__all__ = ["DELAY_S", "ClusterProgress"]

DELAY_S = 0.5


class ClusterProgress:
    """Context manager; call the instance as ``progress(cluster, done, total)``."""

    def __init__(self, *, enabled: bool, stream: TextIO | None = None,
                 delay_s: float = DELAY_S) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled and self.stream.isatty()
        self.delay_s = delay_s
        self._start = time.monotonic()
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> Self:
        self._start = time.monotonic()
        return self

    def __call__(self, cluster: str, done: int, total: int) -> None:
        if not self.enabled:
            return
        if self._bar is None:
            if time.monotonic() - self._start < self.delay_s or done >= total:
                return
            self._open(total)
        self._bar.update(self._task, completed=done, description=f"rendered {cluster}")
        self._bar.refresh()

    def _open(self, total: int) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self._bar = Progress(
            TextColumn("{task.description:<28}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("clusters"), TimeElapsedColumn(),
            console=Console(file=self.stream), transient=True, auto_refresh=False,
        )
        self._task = self._bar.add_task("rendering", total=total)
        self._bar.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
