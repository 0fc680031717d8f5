"""What a category of the judge found: cases judged, cases agreed, and each disagreement.

A category is a function that returns a :class:`Category`. Each case it judges is a
:class:`Verdict` pair: gen's answer and the upstream component's, reduced to the same terms
(``"valid"``/``"invalid"``, ``"schedulable"``/``"unschedulable"``, a set of device names, …).
A disagreement whose case id is listed in :data:`tools.judge.known.KNOWN` is *documented*: it
is counted as a difference but does not fail the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Category", "Verdict"]


@dataclass(frozen=True)
class Verdict:
    """One case: what gen said and what the upstream component said."""

    case: str
    """A stable id: ``<source>:<name>``, e.g. ``corpus/dra.yaml:cel-syntax``."""
    gen: str
    upstream: str
    detail: str = ""
    """The upstream component's own words when they disagree (an error message, an event)."""

    @property
    def agrees(self) -> bool:
        return self.gen == self.upstream


@dataclass
class Category:
    """The verdicts of one category (objects, CEL, allocation, …)."""

    name: str
    judge: str
    """Which upstream component decided, in words."""
    verdicts: list[Verdict] = field(default_factory=list)

    def add(self, case: str, gen: str, upstream: str, detail: str = "") -> None:
        self.verdicts.append(Verdict(case, gen, upstream, detail))

    @property
    def total(self) -> int:
        return len(self.verdicts)

    @property
    def agreeing(self) -> int:
        return sum(v.agrees for v in self.verdicts)

    def disagreements(self) -> list[Verdict]:
        return [v for v in self.verdicts if not v.agrees]
