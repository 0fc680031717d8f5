"""The calibration corpus per vLLM version range: ``python -m tests.serving.calibration_report``.

For each range of :data:`gen.serving.memory_profiles.MEMORY_PROFILES` that has start-ups in
``tests/serving/data/vllm_startup_logs.yaml``: how many, on which GPUs, and the largest and median
error of gen's predicted KV pool against the logged one (in % of the logged pool, and in GiB).
``--entries`` also prints every entry's own figures.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gen.serving.fit import check_fit
from gen.serving.memory import GIB
from gen.serving.memory_profiles import memory_profile_for, parse_vllm_version
from tests.serving.test_calibration import ENTRIES, _request

__all__ = ["EntryError", "RangeSummary", "entry_errors", "main", "summaries"]


@dataclass(frozen=True)
class EntryError:
    """One start-up against gen's prediction."""

    name: str
    range_label: str
    gpu: str
    logged_gib: float | None
    predicted_gib: float
    verdict_ok: bool

    @property
    def error_gib(self) -> float | None:
        """Predicted − logged KV pool, GiB (None: the log gives no pool)."""
        return None if self.logged_gib is None else self.predicted_gib - self.logged_gib

    @property
    def error_pct(self) -> float | None:
        """The error in % of the logged pool."""
        if self.logged_gib is None or self.error_gib is None or self.logged_gib == 0:
            return None
        return 100 * self.error_gib / abs(self.logged_gib)


@dataclass(frozen=True)
class RangeSummary:
    """The corpus entries of one vLLM version range."""

    label: str
    count: int
    gpus: tuple[str, ...]
    max_error_pct: float | None
    median_error_pct: float | None
    verdicts_ok: int


def entry_errors(entries: Sequence[dict[str, Any]] = ENTRIES) -> list[EntryError]:
    """Every entry predicted with :func:`check_fit`."""
    out = []
    for entry in entries:
        report = check_fit(_request(entry))
        logged = entry["logged"].get("kv_cache_gib")
        profile = memory_profile_for(parse_vllm_version(entry["vllm"]))
        out.append(EntryError(entry["name"], profile.label, entry["gpu"],
                              None if logged is None else float(logged),
                              report.kv_cache_available / GIB, report.fits is entry["fits"]))
    return out


def summaries(errors: Sequence[EntryError]) -> list[RangeSummary]:
    """Per version range, in release order."""
    labels = list(dict.fromkeys(e.range_label for e in errors))
    out = []
    for label in labels:
        rows = [e for e in errors if e.range_label == label]
        pcts = [abs(p) for p in (e.error_pct for e in rows) if p is not None]
        out.append(RangeSummary(
            label=label, count=len(rows), gpus=tuple(sorted({e.gpu for e in rows})),
            max_error_pct=max(pcts) if pcts else None,
            median_error_pct=statistics.median(pcts) if pcts else None,
            verdicts_ok=sum(e.verdict_ok for e in rows),
        ))
    return out


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} %"


def main(argv: Sequence[str] = ()) -> int:
    """Print the table (and with ``--entries`` every entry)."""
    errors = sorted(entry_errors(), key=lambda e: parse_vllm_version(
        next(x["vllm"] for x in ENTRIES if x["name"] == e.name)))
    print("| vLLM | start-ups | GPUs | max KV-pool error | median | verdicts exact |")
    print("|---|---|---|---|---|---|")
    for s in summaries(errors):
        print(f"| {s.label} | {s.count} | {', '.join(s.gpus)} | {_pct(s.max_error_pct)} | "
              f"{_pct(s.median_error_pct)} | {s.verdicts_ok}/{s.count} |")
    if "--entries" in argv:
        print()
        for e in errors:
            logged = "-" if e.logged_gib is None else f"{e.logged_gib:.2f}"
            print(f"{e.range_label:10} {e.name:48} logged {logged:>7} GiB  predicted "
                  f"{e.predicted_gib:7.2f} GiB  error {_pct(e.error_pct):>9}  "
                  f"verdict {'ok' if e.verdict_ok else 'WRONG'}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
