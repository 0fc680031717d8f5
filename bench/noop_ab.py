"""No-op and one-cluster renders of two checkouts, in fresh processes, taking turns.

For each fleet size, writes a bench fleet (``bench/fleet.py``) once per checkout, renders
it fully with that checkout, then times, round by round and checkout by checkout, a no-op
``gen render --check`` and ``gen render``; and, once per round, a render after one service
of one cluster changed (its replicas; then changed back and rendered again, untimed).
Prints medians (wall seconds, and CPU seconds of the child), peak RSS, and a JSON line.
Run it on tmpfs (``--root /dev/shm/...``): the disk is not what is measured.

    python bench/noop_ab.py --base /tmp/gen-base --root /dev/shm/ab --sizes 40,100
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet import write_fleet

SIZES = {40: 32, 100: 56}
"""Clusters → services per cluster, as the benchmark fleets have them."""


def _run(code: Path, fleet: Path, *args: str, quiet: bool = False) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and peak RSS (KiB) of one ``gen`` process (its own
    rusage, from ``wait4``); ``quiet``: its warnings (stderr) discarded too."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    start = time.perf_counter()
    child = subprocess.Popen([sys.executable, "-m", "gen", *args], cwd=fleet, env=env,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL if quiet else None)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"gen {' '.join(args)} failed in {fleet} ({child.returncode})")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def _edit(fleet: Path, replicas: int) -> None:
    path = fleet / "profiles" / "c0000.yaml"
    text = path.read_text(encoding="utf-8")
    old, new = ("replicas: 2", "replicas: 3") if replicas == 3 else ("replicas: 3", "replicas: 2")
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--new", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--sizes", default="40,100")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--one-cluster", type=int, default=1,
                        help="rounds that also time a one-cluster change")
    args = parser.parse_args()
    codes = {"base": args.base.resolve(), "new": args.new.resolve()}
    report = {}
    for size in (int(s) for s in args.sizes.split(",")):
        fleets = {}
        for name, code in codes.items():
            fleet = args.root / f"{name}-{size}"
            if not (fleet / "profiles").is_dir():
                write_fleet(fleet, size, SIZES[size])
            full = _run(code, fleet, "render")
            fleets[name] = fleet
            report[f"{name} {size} full render"] = full
        times: dict[str, list[tuple[float, float, int]]] = {}
        for round_ in range(args.rounds):
            for name, code in codes.items():
                for label, extra in (("--check", ["--check"]), ("render", [])):
                    times.setdefault(f"{name} {size} no-op {label}", []).append(
                        _run(code, fleets[name], "render", *extra))
                if round_ < args.one_cluster:
                    _edit(fleets[name], 3)
                    times.setdefault(f"{name} {size} one cluster", []).append(
                        _run(code, fleets[name], "render"))
                    _edit(fleets[name], 2)
                    _run(code, fleets[name], "render")
        for key, runs in times.items():
            report[key] = (statistics.median(r[0] for r in runs),
                           statistics.median(r[1] for r in runs), max(r[2] for r in runs))
    for key, (wall, cpu, rss) in report.items():
        print(f"{key:40s} wall {wall:6.2f} s  cpu {cpu:6.2f} s  peak RSS {rss / 1024:6.0f} MiB")
    print(json.dumps({k: [round(v[0], 3), round(v[1], 3), v[2]] for k, v in report.items()}))
    print(os.getloadavg())


if __name__ == "__main__":
    main()
