"""The judge's command line (``python tools/judge``); see :mod:`tools.judge.__main__`."""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tools.judge.build import BuildError, ensure
from tools.judge.known import KNOWN
from tools.judge.pins import COMPONENTS
from tools.judge.report import Category

__all__ = ["main", "summarize"]

REPO = Path(__file__).resolve().parents[2]
GROUPS = ("kubeconform", "oracle", "live")


def summarize(categories: Sequence[Category], *, verbose: bool = False) -> tuple[list[str], int]:
    """The report lines and the exit code for finished categories.

    A case id may be judged in several categories (a workload: Pod Security, quotas,
    allocation); a documented case is stale when it was judged and agrees in all of them."""
    lines = []
    agree = total = 0
    undocumented = 0
    judged: set[str] = set()
    differing: set[str] = set()
    for category in categories:
        documented = [v for v in category.disagreements() if v.case in KNOWN]
        new = [v for v in category.disagreements() if v.case not in KNOWN]
        undocumented += len(new)
        agree += category.agreeing
        total += category.total
        judged.update(v.case for v in category.verdicts)
        differing.update(v.case for v in category.disagreements())
        note = f", {len(documented)} documented" if documented else ""
        lines.append(f"{category.name}: {category.agreeing}/{category.total} agree{note}"
                     f" ({category.judge})")
        shown = new if not verbose else category.disagreements()
        for verdict in shown[:50 if not verbose else None]:
            lines.append(f"  DIFFERS {verdict.case}: gen {verdict.gen}, upstream "
                         f"{verdict.upstream}" + (f": {verdict.detail[:300]}" if verdict.detail
                                                  else ""))
    stale = sorted(c for c in KNOWN if c in judged and c not in differing)
    for case in stale:
        lines.append(f"  STALE {case}: agrees now; remove it from known.py")
    lines.append(f"judge: {agree}/{total} agree")
    return lines, 0 if undocumented == 0 and not stale else 1


def _kubeconform() -> list[Category]:
    from tools.judge.kubeconform_category import run

    return [run()]


def _oracle() -> list[Category]:
    from tools.judge import oracle

    return oracle.run()


def _live(keep: Path | None, planes: int) -> list[Category]:
    """The control-plane categories, the fleets shared among ``planes`` control planes (each
    fleet is judged on one plane, serially; the planes work side by side)."""
    import contextlib
    import queue
    import threading

    from tools.judge.cluster import ControlPlane, running
    from tools.judge.fleets import live_fleets
    from tools.judge.live import Fleet, LiveCategories, judge_fleet, prepare

    categories = LiveCategories()
    binary = ensure("controlplane")
    failures: list[BaseException] = []
    with tempfile.TemporaryDirectory(prefix="gen-judge-") as scratch, \
            contextlib.ExitStack() as stack:
        folder = keep or Path(scratch)
        work: queue.Queue[tuple[Fleet, tuple[str, ...]]] = queue.Queue()
        for item in live_fleets(folder / "corpus"):
            work.put(item)
        started: list[ControlPlane] = [
            stack.enter_context(running(folder / f"plane-{i}", binary)) for i in range(planes)]

        def worker(plane: ControlPlane) -> None:
            try:
                prepare(plane)
                while not failures:
                    try:
                        fleet, clusters = work.get_nowait()
                    except queue.Empty:
                        return
                    note = judge_fleet(plane, fleet, categories, clusters)
                    if note:
                        print(f"  note: {note}", flush=True)
            except BaseException as exc:  # noqa: BLE001  re-raised below, once all planes stop
                failures.append(exc)

        threads = [threading.Thread(target=worker, args=(p,)) for p in started]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    if failures:
        raise failures[0]
    for category in categories.all():
        category.verdicts.sort(key=lambda v: v.case)
    return list(categories.all())


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="tools/judge", description=__doc__)
    parser.add_argument("--only", default=",".join(GROUPS))
    parser.add_argument("--fleets", type=int, default=None)
    parser.add_argument("--keep", type=Path, default=None)
    parser.add_argument("--planes", type=int, default=2,
                        help="control planes judging fleets side by side (default 2)")
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--build-only", action="store_true",
                        help="build (or find in the cache) every component, run nothing")
    args = parser.parse_args(argv)
    if args.build_only:
        try:
            for name in COMPONENTS:
                print(f"judge: {name}: {ensure(name)}", flush=True)
        except BuildError as exc:
            print(f"judge: build failed:\n{exc}", flush=True)
            return 2
        return 0
    if args.fleets is not None:
        os.environ["GEN_JUDGE_FLEETS"] = str(args.fleets)
    groups = [g for g in args.only.split(",") if g]
    unknown = set(groups) - set(GROUPS)
    if unknown:
        parser.error(f"unknown group(s) {sorted(unknown)}; choose from {GROUPS}")
    runners: dict[str, Callable[[], list[Category]]] = {
        "kubeconform": _kubeconform, "oracle": _oracle,
        "live": lambda: _live(args.keep, max(1, args.planes))}
    categories: list[Category] = []
    for group in groups:
        started = time.monotonic()
        try:
            found = runners[group]()
        except BuildError as exc:
            print(f"judge: cannot build the {group} components:\n{exc}", flush=True)
            return 2
        categories += found
        print(f"judge: {group} done in {time.monotonic() - started:.0f} s", flush=True)
    lines, code = summarize(categories, verbose=args.verbose)
    print("\n".join(lines), flush=True)
    return code
