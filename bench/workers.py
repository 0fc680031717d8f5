"""Time ``gen render`` in fresh processes on the bench fleets: the figures of "Build and lint
in the workers" in docs/benchmarks.md.

    python -m bench.workers [--root /dev/shm/gen-workers] [--repeat 3] [--python PY]

Writes the 40- and 100-cluster fleets of :mod:`bench.fleet` under ``--root`` (use tmpfs), then
times, each as the median of ``--repeat`` new processes: a full render into an empty out/
at 40 clusters with ``-j 1`` and ``-j 2``; a render after one service of one cluster changed
(its replicas) at 40 and 100 clusters (``-j 2``); a no-op ``render --check`` on the fleet
fast path and on the per-cluster records alone (fleet record removed); and the peak RSS
(``/usr/bin/time -f %M``) of a full render at 100 clusters. ``--python`` (default: this
interpreter) and ``PYTHONPATH`` choose the gen that runs, so two checkouts can be compared
in one session. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fleet import write_fleet


def _gen(python: str, args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run([python, "-m", "gen", *args], cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


def _rss_mib(python: str, args: list[str], cwd: Path) -> float:
    done = subprocess.run(["/usr/bin/time", "-f", "%M", python, "-m", "gen", *args], cwd=cwd,
                          check=True, capture_output=True, text=True)
    return int(done.stderr.strip().splitlines()[-1]) / 1024


def _fleet(root: Path, clusters: int, services: int) -> Path:
    folder = root / f"fleet-{clusters}"
    if folder.exists():
        shutil.rmtree(folder)
    write_fleet(folder, clusters, services)
    return folder


def _toggle(profiles: Path, run: int) -> None:
    first = profiles / "c0000.yaml"
    old, new = ("replicas: 2", "replicas: 3") if run % 2 == 0 else ("replicas: 3", "replicas: 2")
    first.write_text(first.read_text().replace(old, new, 1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--root", type=Path, default=Path("/dev/shm/gen-workers"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--python", default=sys.executable)
    opts = parser.parse_args()
    py, n = opts.python, opts.repeat
    opts.root.mkdir(parents=True, exist_ok=True)
    row: dict[str, Any] = {"load": os.getloadavg()}
    med = statistics.median

    f40 = _fleet(opts.root, 40, 32)
    for jobs in (1, 2):
        times = []
        for _ in range(n):
            shutil.rmtree(f40 / "out", ignore_errors=True)
            times.append(_gen(py, ["render", "-j", str(jobs)], f40))
        row[f"full_40_j{jobs}_s"] = med(times)
    row["one_change_40_s"] = med(_one_change(py, f40, n))
    row["noop_check_fast_40_s"] = med([_gen(py, ["render", "--check"], f40) for _ in range(n)])
    (f40 / "out" / ".gen-cache" / "_fleet.json").unlink()
    row["noop_check_records_40_s"] = med(
        [_gen(py, ["render", "--check"], f40) for _ in range(n)])

    f100 = _fleet(opts.root, 100, 56)
    row["peak_rss_100_mib"] = _rss_mib(py, ["render"], f100)
    row["one_change_100_s"] = med(_one_change(py, f100, n))
    row["load_after"] = os.getloadavg()
    print(json.dumps(row, indent=1))


def _one_change(py: str, fleet: Path, n: int) -> list[float]:
    _gen(py, ["render", "-j", "2"], fleet)
    times = []
    for run in range(n):
        _toggle(fleet / "profiles", run)
        times.append(_gen(py, ["render", "-j", "2"], fleet))
    return times


if __name__ == "__main__":
    main()
