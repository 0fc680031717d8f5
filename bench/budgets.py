"""The render-cache and full-render budgets, measured in one run: ``python bench/budgets.py``.

Options: ``[--fleet plain|serving] [--repeat 5] [--json F] [--venv DIR] [--sizes 40x32,100x56]``.

Every figure is a fresh ``gen render`` process (the real command, start-up included) on a
synthetic fleet from ``bench/fleet.py`` in a scratch folder (``TMPDIR``; use tmpfs). Peak
memory is the process's own ``ru_maxrss`` from ``wait4`` (its workers' peaks count too, as
``/usr/bin/time`` reports them). For each size:

- **full**: ``gen render`` into an empty ``out/`` (median of ``--repeat``), default workers;
- **no-op render** and **no-op --check**: nothing changed since the last render (medians);
- **one cluster changed**: one service of one cluster gets another replica count, then the
  next run puts it back (each run changes something; medians);
- at the first size, **Helm's engine** on the same objects, when the peers are installed
  (``sh bench/peers/setup.sh``): its chart and values are generated from gen's render by
  ``bench/peers/build.py`` and its output is compared with gen's object by object.

The ratios asked for (issue "Instant when nothing changed") are computed within the run and
printed as a table with each budget met or missed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from fleet import FLEETS, one_cluster_changes, write_fleet  # noqa: E402 - beside this script
from peers import build  # noqa: E402
from scale import run_gen  # noqa: E402

VENV = BENCH / "peers" / ".venv-bench"


def _median(values: list[float]) -> float:
    return statistics.median(values)


def bench_size(clusters: int, services: int, repeat: int, venv: Path | None,
               serving: bool = False) -> dict[str, Any]:
    """Every figure for one fleet size."""
    row: dict[str, Any] = {"clusters": clusters, "services": clusters * services}
    runs: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="gen-budgets-") as tmp:
        root = Path(tmp)
        profiles = write_fleet(root, clusters, services, serving=serving)
        out = root / "out"
        base = ["render", "-q", "--profiles", str(profiles), "--out", str(out)]
        full, rss = [], []
        for _ in range(repeat):
            shutil.rmtree(out, ignore_errors=True)
            run = run_gen(base, root)
            full.append(run["s"])
            rss.append(run["process_peak_mib"])
        runs["full"] = full
        row["files"] = sum(1 for p in out.rglob("*") if p.is_file())
        row["peak_rss_mib"] = max(rss)
        runs["noop_render"] = [run_gen(base, root)["s"] for _ in range(repeat)]
        runs["noop_check"] = [run_gen([*base, "--check"], root)["s"] for _ in range(repeat)]
        runs["one_cluster_changed"] = [run_gen(base, root)["s"]
                                       for _ in one_cluster_changes(profiles, repeat)]
        run_gen(base, root)  # out/ back to the fleet as written
        if venv is not None:
            row["helm"] = _helm(root, out, profiles, venv, repeat)
    row["runs_s"] = runs
    row["median_s"] = {name: _median(values) for name, values in runs.items()}
    return row


def _helm(root: Path, out: Path, profiles: Path, venv: Path, repeat: int) -> dict[str, Any]:
    """Helm's engine on gen's objects: median seconds and the object-by-object check."""
    from gen.pipeline import load_plan

    expected = build.read_tree(out)
    minors = {c.name: c.minor for c in load_plan(profiles).clusters}
    projects = build.write_all(build.export(expected, minors), root / "peers")
    helm_out = root / "helm-out"
    cmd = [str(venv / "bin" / "python"), str(BENCH / "peers" / "drivers" / "helm_render.py"),
           str(projects["helm"]), str(root / "peers" / "helm" / "values"), str(helm_out)]
    times = []
    for _ in range(repeat):
        shutil.rmtree(helm_out, ignore_errors=True)
        start = time.perf_counter()
        subprocess.run(cmd, cwd=root, check=True, capture_output=True)
        times.append(time.perf_counter() - start)
    check = build.compare(expected, build.read_helm(helm_out))
    return {"median_s": _median(times), "runs_s": times, "equal": check["ok"],
            "objects": check["objects"]}


def verdicts(rows: list[dict[str, Any]]) -> list[tuple[str, str, bool | None]]:
    """(budget, measured, met) for each budget the rows can judge."""
    out: list[tuple[str, str, bool | None]] = []
    for row in rows:
        m = row["median_s"]
        n = row["clusters"]
        full = m["full"]
        for name in ("noop_render", "noop_check"):
            share = m[name] / full
            label = "`gen render`" if name == "noop_render" else "`gen render --check`"
            met = share <= 0.10 and (n < 100 or m[name] <= 1.0)
            out.append((f"no-op {label}, {n} clusters: ≤ 1 s (at 100) and ≤ 10% of full",
                        f"{m[name]:.2f} s, {share:.0%} of {full:.2f} s", met))
        share = m["one_cluster_changed"] / full
        out.append((f"one cluster changed, {n} clusters: ≤ 15% of full",
                    f"{m['one_cluster_changed']:.2f} s, {share:.0%}", share <= 0.15))
        if "helm" in row:
            ratio = full / row["helm"]["median_s"]
            out.append((f"full render, {n} clusters: ≤ 3× Helm's engine",
                        f"{full:.2f} s / {row['helm']['median_s']:.2f} s = {ratio:.1f}×"
                        + ("" if row["helm"]["equal"] else " (outputs differ!)"),
                        ratio <= 3.0))
        if n >= 100:
            out.append((f"peak memory, {n} clusters: ≤ 253 MiB",
                        f"{row['peak_rss_mib']:.0f} MiB", row["peak_rss_mib"] <= 253))
    return out


def main() -> None:
    """Run each size; print the figures, the budget table, and save them with ``--json``."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="40x32,100x56")
    parser.add_argument("--fleet", choices=FLEETS, default="plain",
                        help="the bench fleet, or it with routing, multi-node and Kueue")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--venv", type=Path, default=VENV)
    args = parser.parse_args()
    venv = args.venv if (args.venv / "bin" / "python").exists() else None
    rows = []
    for i, size in enumerate(args.sizes.split(",")):
        clusters, services = (int(x) for x in size.split("x"))
        rows.append(bench_size(clusters, services, args.repeat, venv if i == 0 else None,
                               serving=args.fleet == "serving"))
        print(json.dumps(rows[-1]), flush=True)
    table = verdicts(rows)
    print("\n| budget | measured | met |\n| --- | --- | --- |")
    for budget, measured, met in table:
        print(f"| {budget} | {measured} | {'yes' if met else 'no'} |")
    if venv is None:
        print("\n(Helm's engine not measured: run `sh bench/peers/setup.sh` first.)")
    if args.json:
        load = os.getloadavg()
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
                       f"Python {platform.python_version()}",
            "load_average": [round(x, 2) for x in load],
            "fleet": args.fleet,
            "sizes": rows,
            "budgets": [{"budget": b, "measured": m, "met": ok} for b, m, ok in table],
        }, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
