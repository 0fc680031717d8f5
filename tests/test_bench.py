"""The benchmark suite keeps working: its chart, its growth figure, and one small run."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import REPO

sys.path.insert(0, str(REPO / "bench"))
from plot import svg_chart
from run import growth

SVG = "{http://www.w3.org/2000/svg}"


def test_chart_is_svg_with_a_line_and_legend_per_series() -> None:
    series = {"render": [(100, 0.1), (1000, 1.0), (10000, 10.0)],
              "lint": [(100, 0.01), (1000, 0.1), (10000, 1.2)]}
    text = svg_chart(series, title="t", x_label="objects", y_label="seconds")
    root = ET.fromstring(text)
    assert len(root.findall(f"{SVG}polyline")) == 2
    assert {t.text for t in root.iter(f"{SVG}text")} >= {"render", "lint"}
    assert text == svg_chart(series, title="t", x_label="objects", y_label="seconds")


def test_growth_is_the_log_log_slope() -> None:
    rows = [{"objects": 100, "stages_s": {s: 0.1 for s in ("load", "resolve_build", "lint",
                                                           "render", "validate", "write")},
             "gen_render_s": 1.0},
            {"objects": 10_000, "stages_s": {s: 10.0 for s in ("load", "resolve_build", "lint",
                                                               "render", "validate", "write")},
             "gen_render_s": 10.0}]
    slopes = growth(rows)
    assert slopes["render"] == pytest.approx(1.0)
    assert slopes["gen_render"] == pytest.approx(0.5)


def test_render_ab_pairs_runs_round_by_round() -> None:
    """The paired difference is the median of the per-round differences (not the difference
    of the medians), and the pairs the new checkout won are counted."""
    from render_ab import paired

    base = [(3.0, 4.0, 1), (2.0, 3.0, 1), (5.0, 6.0, 1)]
    new = [(2.5, 3.9, 1), (2.2, 2.5, 1), (4.0, 5.9, 1)]
    report = paired(base, new)
    assert report["wall"]["median_difference"] == pytest.approx(-0.5)
    assert report["wall"]["new_quicker"] == 2 and report["wall"]["pairs"] == 3
    assert report["cpu"]["base"] == 4.0 and report["cpu"]["new"] == 3.9
    assert report["cpu"]["median_difference"] == pytest.approx(-0.1)
    assert report["cpu"]["new_quicker"] == 3


@pytest.mark.slow
def test_small_benchmark_runs_and_no_op_render_rewrites_nothing() -> None:
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / "run.py"), "--one", "small", "--repeat", "1"],
        capture_output=True, text=True, check=True, timeout=300,
    )
    row = json.loads(proc.stdout)
    assert row["objects"] > 100
    assert row["unchanged_rewrote_nothing"] is True
    assert row["embedded_speedup"] > 10
    assert set(row["stages_s"]) == {"load", "resolve_build", "lint", "render", "validate",
                                    "write"}


def test_budget_table_judges_each_budget_from_the_medians() -> None:
    import budgets

    def row(clusters: int, full: float, noop: float, one: float, rss: float,
            helm: float | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "clusters": clusters, "peak_rss_mib": rss,
            "median_s": {"full": full, "noop_render": noop, "noop_check": noop,
                         "one_cluster_changed": one},
        }
        if helm is not None:
            out["helm"] = {"median_s": helm, "equal": True}
        return out

    table = budgets.verdicts([row(40, 3.0, 0.25, 0.4, 200, helm=1.0),
                              row(100, 12.0, 1.1, 1.5, 260)])
    met = {budget.split(":")[0]: ok for budget, _, ok in table}
    assert met["no-op `gen render`, 40 clusters"] is True   # 8% of full, 1 s applies at 100
    assert met["one cluster changed, 40 clusters"] is True  # 13%
    assert met["full render, 40 clusters"] is True          # 3.0×
    assert met["no-op `gen render`, 100 clusters"] is False  # 9%, but over 1 s
    assert met["one cluster changed, 100 clusters"] is True  # 12.5%
    assert met["peak memory, 100 clusters"] is False
    assert len(table) == 8


def test_scale_stages_name_functions_render_calls() -> None:
    import inspect

    import scale

    from gen import pipeline

    # render() and the function it runs the load, build and render in (its frame, with all
    # it held, is gone before the write)
    source = inspect.getsource(pipeline.render) + inspect.getsource(pipeline._built)
    assert "_built(" in inspect.getsource(pipeline.render)
    for name in scale.STAGES.values():
        assert callable(getattr(pipeline, name)), name
        assert f"{name}(" in source, f"render() no longer calls {name}"


def test_scale_slopes_and_where_one_machine_ends() -> None:
    import scale

    def row(clusters: int, seconds: float, mib: float) -> dict[str, Any]:
        return {"clusters": clusters, "full_s": seconds, "tree_peak_mib": mib,
                "stages_s": {"load": seconds / 2, "write": seconds / 2}}

    rows = [row(10, 2.0, 200.0), row(100, 11.0, 1100.0), row(1000, 101.0, 10100.0)]
    fit = scale.slopes(rows)
    assert fit["full render"]["per_cluster"] == pytest.approx(0.1)
    assert fit["full render"]["intercept"] == pytest.approx(1.0)
    assert fit["load"]["per_cluster"] == pytest.approx(0.05)
    assert fit["peak memory (MiB)"]["per_cluster"] == pytest.approx(10.0)
    assert fit["full render"]["loglog_growth"] == pytest.approx(
        math.log(101 / 11) / math.log(10))
    limits = scale.machine_limits(fit, memory_gib=20.0, minutes=10.0)
    assert limits == {"clusters_at_memory_limit": (20 * 1024 - 100) // 10,
                      "clusters_at_time_limit": 5990}
    flat = scale.slopes([row(10, 2.0, 200.0), row(20, 1.0, 100.0)])
    assert scale.machine_limits(flat, memory_gib=20.0, minutes=10.0) == {
        "clusters_at_memory_limit": None, "clusters_at_time_limit": None}


def test_plain_bench_fleet_lints_clean(tmp_path: Path) -> None:
    """What the budgets time is a fleet that lints clean (no warning per service printed
    and recorded on every run)."""
    from fleet import write_fleet

    import gen

    assert gen.lint(write_fleet(tmp_path, 4, 8)) == []


def test_serving_bench_fleet_lints_clean_and_holds_the_2026_serving_objects(
        tmp_path: Path) -> None:
    from fleet import write_fleet

    import gen

    profiles = write_fleet(tmp_path, 2, 8, serving=True)
    assert gen.lint(profiles) == []
    result = gen.render(profiles, tmp_path / "out", jobs=1)
    kinds = {path.name.split("-")[0] for path in result.outputs}
    assert kinds >= {"inferencepool", "httproute", "leaderworkerset", "clusterqueue",
                     "localqueue", "resourceflavor", "deployment"}


def test_one_cluster_changes_alternate_and_leave_the_file_as_it_was(tmp_path: Path) -> None:
    from fleet import one_cluster_changes, write_fleet

    profiles = write_fleet(tmp_path, 2, 2)
    first = profiles / "c0000.yaml"
    before = first.read_text()
    seen = [first.read_text() for _ in one_cluster_changes(profiles, 3)]
    assert seen[0] != before and seen[1] == before and seen[2] == seen[0]
    assert seen[0].count("replicas: 3") == 1
    assert first.read_text() == before
    assert (profiles / "c0001.yaml").read_text().count("replicas: 3") == 0
