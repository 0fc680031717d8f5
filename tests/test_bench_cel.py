"""bench/cel_eval.py runs without cel-python installed and says so; gen's side agrees with the
selectors' expected results on the benchmark device."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.helpers import REPO

sys.path.insert(0, str(REPO / "bench"))
import cel_eval as cel_bench


def test_bench_runs_without_cel_python(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "cel.json"
    status = cel_bench.main(
        ["--celpy", str(tmp_path / "missing"), "--loops", "2", "--repeat", "1", "--json", str(out)]
    )
    assert status == 0
    assert "cel-python: skipped: no cel-python interpreter" in capsys.readouterr().out
    assert out.is_file()


def test_every_benchmark_selector_matches_the_h100() -> None:
    rows = cel_bench.measure_gen(loops=1, repeat=1)
    assert [row["result"] for row in rows] == [True] * len(cel_bench.SELECTORS)
