"""The benchmark suite keeps working: its chart, its growth figure, and one small run."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
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
