"""Full renders of two checkouts, in fresh processes, taking turns.

Writes one bench fleet (``bench/fleet.py``), then, round by round and checkout by checkout,
renders it into an empty out/ with ``gen render --validator embedded --no-cache -j N``
(each child's own wall and CPU seconds, from ``wait4``). Prints the medians of each
checkout, the median of the paired differences (new minus base, round by round: on a
shared machine a pair sees the same load, a median of each side alone does not) and how
many pairs the new checkout won. Run it on tmpfs (``--root /dev/shm/...``).

    python bench/render_ab.py --base /tmp/gen-base --root /dev/shm/render-ab --size 40x32
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fleet import write_fleet
from noop_ab import _run

RENDER = ("render", "-q", "--validator", "embedded", "--no-cache")
"""What each turn runs (its warnings discarded: thousands on a bench fleet)."""

Run = tuple[float, float, int]
"""Wall seconds, CPU seconds, peak RSS (KiB) of one render."""


def paired(base: Sequence[Run], new: Sequence[Run]) -> dict[str, Any]:
    """Medians of each side and of the paired differences (new − base), wall and CPU, and
    the pairs in which the new checkout was quicker."""
    out: dict[str, Any] = {}
    for index, name in ((0, "wall"), (1, "cpu")):
        diffs = [n[index] - b[index] for b, n in zip(base, new, strict=True)]
        out[name] = {"base": statistics.median(r[index] for r in base),
                     "new": statistics.median(r[index] for r in new),
                     "median_difference": statistics.median(diffs),
                     "new_quicker": sum(d < 0 for d in diffs), "pairs": len(diffs)}
    return out


def main() -> None:
    """Take turns and print the comparison (a table, then one JSON line)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", type=Path, required=True, help="the other checkout")
    parser.add_argument("--new", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--size", default="40x32", help="clusters x services per cluster")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    clusters, services = (int(x) for x in args.size.split("x"))
    fleet = args.root / f"fleet-{args.size}"
    if not (fleet / "profiles").is_dir():
        write_fleet(fleet, clusters, services)
    codes = {"base": args.base.resolve(), "new": args.new.resolve()}
    runs: dict[str, list[Run]] = {name: [] for name in codes}
    out = fleet / "out"
    for code in codes.values():  # once each, untimed: byte-compiled modules, warm caches
        shutil.rmtree(out, ignore_errors=True)
        _run(code, fleet, *RENDER, quiet=True)
    for _ in range(args.rounds):
        for name, code in codes.items():
            shutil.rmtree(out, ignore_errors=True)
            runs[name].append(_run(code, fleet, *RENDER, "-j", str(args.jobs), quiet=True))
    report = paired(runs["base"], runs["new"])
    for measure, row in report.items():
        print(f"{measure:4}  base {row['base']:6.2f} s  new {row['new']:6.2f} s  "
              f"paired difference {row['median_difference']:+6.2f} s  "
              f"new quicker in {row['new_quicker']} of {row['pairs']}")
    print(json.dumps({"size": args.size, "jobs": args.jobs, "load": os.getloadavg(),
                      "runs": runs, **report}))


if __name__ == "__main__":
    main()
