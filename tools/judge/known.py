"""Disagreements between gen and the upstream components that are documented, with the reason.

Each key is a case id (:class:`tools.judge.report.Verdict.case`); the value is the reason, which
``docs/conformance.md`` repeats for users. A case listed here that agrees again is reported as
stale, so the list cannot outlive the difference it explains.
"""

from __future__ import annotations

__all__ = ["KNOWN"]

KNOWN: dict[str, str] = {}
