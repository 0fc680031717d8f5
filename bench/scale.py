"""Fleet scale, up to 1,000 clusters: ``python bench/scale.py``.

Options: ``[--sizes 10,100,300,1000] [--services 56] [--fleet plain|serving] [--repeat 1]
[--json F]``.

For each size (clusters × ``--services`` services per cluster, a fleet from
``bench/fleet.py``, in a scratch folder under ``TMPDIR``; use tmpfs), the command users run,
``gen render`` with its default workers, in a fresh process:

- **full**: into an empty ``out/``: wall seconds, files written and files per second;
  the peak memory of the whole process tree (the parent and its workers together: the sum
  of their proportional set sizes, so that pages a worker inherited count once, sampled
  from ``/proc`` every 50 ms) and of its largest single process (``ru_maxrss`` from
  ``wait4``); and where the time went, stage by stage (below);
- **no-op render** and **no-op --check** (nothing changed), and **one cluster changed**
  (one service's replica count in the first cluster's file);

then, across the sizes, each stage's **slope**: the least-squares milliseconds per cluster
and the log-log growth between the two largest sizes (1.0 = linear), and from the slopes
the fleet size at which one machine ends: where a full render would pass ``--memory-gib``
(default: this machine's memory) or ``--minutes`` of wall time (default 10, a CI step).

The stages are timed inside the real command: the child process wraps the functions of
:mod:`gen.pipeline` that ``render`` calls (``STAGES``, by name; a missing one is an error,
so a refactor cannot silently drop a stage), then runs gen's own entry point. What the
stages do not cover is start-up (imports) and the glue between them ("other").
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from fleet import FLEETS, one_cluster_changes, write_fleet  # noqa: E402 - beside this script

MIB = 1024 * 1024
STAGES = {  # stage: the function of gen.pipeline that render() calls for it
    "load (parse, validate, resolve)": "resolve_fleet",
    "clusters (build, lint, render, validate)": "run_cluster_tasks",
    "fleet lint": "lint_findings",
    "gather": "collected",
    "write (staging and swap)": "write_tree",
}
CHILD_ENV = "GEN_SCALE_STAGES"


def _child(argv: list[str]) -> None:
    """Run ``gen`` with ``argv``, timing each of ``STAGES``; the seconds go to the file named
    by ``$GEN_SCALE_STAGES`` as JSON when the process exits."""
    import atexit

    from gen import pipeline

    seconds: dict[str, float] = {}
    for stage, name in STAGES.items():
        original = getattr(pipeline, name, None)
        if not callable(original):
            raise SystemExit(f"bench/scale.py: gen.pipeline.{name} is gone: update STAGES")

        def timed(*args: Any, _stage: str = stage, _fn: Any = original, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return _fn(*args, **kwargs)
            finally:
                seconds[_stage] = seconds.get(_stage, 0.0) + time.perf_counter() - start

        setattr(pipeline, name, timed)
    target = Path(os.environ[CHILD_ENV])
    atexit.register(lambda: target.write_text(json.dumps(seconds)))
    from gen._entry import main

    sys.argv = ["gen", *argv]
    main()


def _pss(pid: int) -> int:
    """Bytes of ``pid``'s proportional set size: its private pages and its share of those
    it shares (a forked worker's inherited pages count once over the tree, not per
    process, as a sum of RSS would)."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_bytes().splitlines():
        if line.startswith(b"Pss:"):
            return int(line.split()[1]) * 1024
    return 0


def _tree_memory(root: int) -> int:
    """Bytes of memory ``root`` and all its descendants use now, as the sum of their
    proportional set sizes (0 once it is gone)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_bytes().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue  # it ended between the listing and the read
        parents[int(entry.name)] = int(fields[1])
    total = 0
    for pid in parents:
        p = pid
        while p > 1 and p != root:
            p = parents.get(p, 0)
        if p == root:
            with contextlib.suppress(OSError, ValueError):
                total += _pss(pid)
    return total


def run_gen(args: list[str], cwd: Path, *, stages: bool = False,
            tree: bool = False) -> dict[str, Any]:
    """One ``gen`` process: wall seconds and the peak memory of its largest process; with
    ``tree`` the peak of the whole process tree too, with ``stages`` the seconds of each
    stage. Exits on failure, with the end of what gen printed."""
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="gen-scale-stages-") as scratch, \
            tempfile.TemporaryFile() as errors:
        if stages:
            env[CHILD_ENV] = str(Path(scratch) / "stages.json")
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", *args]
        else:
            cmd = [sys.executable, "-m", "gen", *args]
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL,
                                stderr=errors)
        peak = [0]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.05):
                peak[0] = max(peak[0], _tree_memory(proc.pid))

        sampler = threading.Thread(target=sample, daemon=True)
        if tree:
            sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        done.set()
        if tree:
            sampler.join()
        proc.returncode = code = os.waitstatus_to_exitcode(status)  # reaped: tell Popen
        if code:
            errors.seek(0)
            text = errors.read().decode(errors="replace")
            raise SystemExit(f"gen {' '.join(args)} exited {code}:\n{text[-3000:]}")
        row: dict[str, Any] = {"s": elapsed, "process_peak_mib": usage.ru_maxrss / 1024}
        if tree:
            row["tree_peak_mib"] = peak[0] / MIB
        if stages:
            row["stages_s"] = json.loads((Path(scratch) / "stages.json").read_text())
    return row


def bench_size(clusters: int, services: int, repeat: int,
               serving: bool = False) -> dict[str, Any]:
    """Every figure for one fleet size."""
    row: dict[str, Any] = {"clusters": clusters, "services": clusters * services}
    with tempfile.TemporaryDirectory(prefix="gen-scale-") as tmp:
        root = Path(tmp)
        profiles = write_fleet(root, clusters, services, serving=serving)
        out = root / "out"
        base = ["render", "-q", "--profiles", str(profiles), "--out", str(out)]
        full = []
        for _ in range(repeat):
            shutil.rmtree(out, ignore_errors=True)
            full.append(run_gen(base, root, stages=True, tree=True))
        row["files"] = sum(1 for p in out.rglob("*") if p.is_file())
        pick = sorted(full, key=lambda r: r["s"])[len(full) // 2]  # the median run
        row["full_s"] = pick["s"]
        row["full_runs_s"] = [r["s"] for r in full]
        row["files_per_s"] = row["files"] / pick["s"]
        row["tree_peak_mib"] = max(r["tree_peak_mib"] for r in full)
        row["process_peak_mib"] = max(r["process_peak_mib"] for r in full)
        row["stages_s"] = dict(pick["stages_s"])
        row["stages_s"]["start-up and other"] = pick["s"] - sum(pick["stages_s"].values())
        row["noop_render_s"] = statistics.median(run_gen(base, root)["s"]
                                                 for _ in range(repeat))
        row["noop_check_s"] = statistics.median(run_gen([*base, "--check"], root)["s"]
                                                for _ in range(repeat))
        row["one_cluster_changed_s"] = statistics.median(
            run_gen(base, root)["s"] for _ in one_cluster_changes(profiles, repeat))
    return row


def slopes(rows: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per stage (and the whole render, and the tree's peak memory): the least-squares
    slope per cluster and intercept over every size, and the log-log growth between the
    two largest sizes."""
    series: dict[str, list[float]] = {"full render": [r["full_s"] for r in rows],
                                      "peak memory (MiB)": [r["tree_peak_mib"] for r in rows]}
    for stage in rows[-1]["stages_s"]:
        series[stage] = [r["stages_s"].get(stage, 0.0) for r in rows]
    xs = [float(r["clusters"]) for r in rows]
    mean_x = statistics.fmean(xs)
    spread = sum((x - mean_x) ** 2 for x in xs)
    out: dict[str, dict[str, float]] = {}
    for name, ys in series.items():
        mean_y = statistics.fmean(ys)
        slope = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread
        entry = {"per_cluster": slope, "intercept": mean_y - slope * mean_x}
        (x1, y1), (x2, y2) = list(zip(xs, ys, strict=True))[-2:]
        if y1 > 0 and y2 > 0:
            entry["loglog_growth"] = math.log(y2 / y1) / math.log(x2 / x1)
        out[name] = entry
    return out


def machine_limits(fit: dict[str, dict[str, float]], memory_gib: float,
                   minutes: float) -> dict[str, int | None]:
    """Clusters (of the bench fleet's shape) at which a full render on this machine would
    need ``memory_gib`` of memory or ``minutes`` of wall time, from the linear fits (None
    where the fit does not grow: the sizes were too small or too noisy to tell)."""
    def reach(entry: dict[str, float], limit: float) -> int | None:
        if entry["per_cluster"] <= 0:
            return None
        return max(0, int((limit - entry["intercept"]) / entry["per_cluster"]))

    return {"clusters_at_memory_limit": reach(fit["peak memory (MiB)"], memory_gib * 1024),
            "clusters_at_time_limit": reach(fit["full render"], minutes * 60)}


def _memory_gib() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) / 1024 / 1024
    raise SystemExit("no MemTotal in /proc/meminfo")


def main() -> None:
    """Run each size; print one JSON line per size, the slopes and the limits."""
    if sys.argv[1:2] == ["--child"]:
        _child(sys.argv[2:])
        return
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,100,300,1000")
    parser.add_argument("--services", type=int, default=56)
    parser.add_argument("--fleet", choices=FLEETS, default="plain",
                        help="the bench fleet, or it with routing, multi-node and Kueue")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--memory-gib", type=float, default=None)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    if len(sizes) < 2:
        parser.error("--sizes needs at least two sizes for the slopes")
    rows = []
    for clusters in sizes:
        rows.append(bench_size(clusters, args.services, args.repeat,
                               serving=args.fleet == "serving"))
        print(json.dumps(rows[-1]), flush=True)
    fit = slopes(rows)
    memory = args.memory_gib if args.memory_gib is not None else _memory_gib()
    limits = machine_limits(fit, memory, args.minutes)
    print(json.dumps({"slopes": fit, "limits": limits}), flush=True)
    print("\n| stage | ms per cluster | growth (log-log, last two sizes) |\n| --- | --- | --- |")
    for name, entry in fit.items():
        unit = 1 if name.startswith("peak memory") else 1000
        print(f"| {name} | {entry['per_cluster'] * unit:.1f}"
              f"{' MiB' if unit == 1 else ''} | {entry.get('loglog_growth', float('nan')):.2f} |")
    def shown(n: int | None) -> str:
        return "(no growth measured)" if n is None else f"{n:,} clusters"

    print(f"\nOne machine ({memory:.0f} GiB, {os.cpu_count()} CPUs): memory runs out near "
          f"{shown(limits['clusters_at_memory_limit'])}, {args.minutes:g} minutes near "
          f"{shown(limits['clusters_at_time_limit'])}.")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, {memory:.0f} GiB, "
                       f"Python {platform.python_version()}",
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "services_per_cluster": args.services, "fleet": args.fleet,
            "sizes": rows, "slopes": fit, "limits": limits,
            "memory_gib": memory, "minutes": args.minutes,
        }, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
