"""The render progress bar: only on a terminal, only when asked, only when slow."""

from __future__ import annotations

import io
from pathlib import Path

from click.testing import CliRunner

from gen.cli import cli
from gen.cli._progress import ClusterProgress
from tests.helpers import copy_fleet, snapshot_tree


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _drive(progress: ClusterProgress, total: int = 3) -> None:
    with progress:
        for done in range(1, total + 1):
            progress(f"c{done}", done, total)


def test_a_slow_render_on_a_terminal_shows_the_bar() -> None:
    stream = _Terminal()
    _drive(ClusterProgress(enabled=True, stream=stream, delay_s=0))
    text = stream.getvalue()
    assert "clusters" in text and "rendered c1" in text


def test_no_bar_when_not_a_terminal_or_quiet_or_fast() -> None:
    for progress in (
        ClusterProgress(enabled=True, stream=io.StringIO(), delay_s=0),   # piped, CI logs
        ClusterProgress(enabled=False, stream=_Terminal(), delay_s=0),    # --quiet
        ClusterProgress(enabled=True, stream=_Terminal(), delay_s=60),    # over in a moment
    ):
        _drive(progress)
        assert isinstance(progress.stream, io.StringIO)
        assert progress.stream.getvalue() == ""


def test_render_jobs_option(runner: CliRunner, tmp_path: Path) -> None:
    root = copy_fleet(tmp_path / "fleet")
    one = runner.invoke(cli, ["render", "--profiles", str(root / "profiles"), "--out",
                               str(root / "one"), "--jobs", "1", "--validator", "embedded"])
    two = runner.invoke(cli, ["render", "--profiles", str(root / "profiles"), "--out",
                               str(root / "two"), "-j", "2", "--validator", "embedded"])
    assert one.exit_code == 0 and two.exit_code == 0, one.output + two.output
    # the same bytes, but for the stat table: machine-local inodes and times (helpers)
    assert snapshot_tree(root / "one") == snapshot_tree(root / "two")
    bad = runner.invoke(cli, ["render", "--profiles", str(root / "profiles"), "--jobs", "0"])
    assert bad.exit_code == 2
