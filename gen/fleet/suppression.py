"""A suppression: one lint rule silenced in a place, with its reason, and which findings it
silences (:mod:`gen.fleet.suppress` reads suppressions and applies them)."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Literal

from gen.errors import Finding, SourceLocation
from gen.redact import redact

__all__ = ["About", "Scope", "Suppression"]

Scope = Literal["inline", "profile", "fleet"]
About = tuple[str, frozenset[str]]
"""The service and the clusters a finding is about."""


@dataclass(frozen=True)
class Suppression:
    """One rule silenced somewhere, and why."""

    rule: str
    reason: str
    location: SourceLocation
    """Where the suppression is written."""
    scope: Scope
    path: str = ""
    """inline and profile: the file the findings must be located in."""
    first_line: int = 0
    last_line: int = 0
    """inline and profile: the lines the findings must be located on."""
    service: str = ""
    """profile of an InferenceService: findings about it match wherever they are."""
    paths: tuple[str, ...] = ()
    services: tuple[str, ...] = ()
    clusters: tuple[str, ...] = ()
    """fleet: what the findings must be about (each empty: anything)."""

    def __post_init__(self) -> None:
        # The reason is printed (--show-suppressed, JSON, SARIF's justification): no
        # credential pasted into it reaches any of them.
        object.__setattr__(self, "reason", redact(self.reason))

    def matches(self, finding: Finding, about: About = ("", frozenset())) -> bool:
        """Whether this suppression silences ``finding``; ``about``: the service and the
        clusters the finding is about where its rule did not say (from the profile it is
        located in: a service runs in its clusters)."""
        if finding.rule != self.rule:
            return False
        loc = finding.location
        in_lines = (
            loc is not None and loc.path == self.path
            and self.first_line <= loc.line <= self.last_line
        )
        if self.scope == "inline":
            return in_lines
        if self.scope == "profile":
            service = finding.service or about[0]
            return in_lines or bool(self.service and service == self.service)
        if self.paths and not (
            loc is not None and any(fnmatch.fnmatchcase(loc.path, p) for p in self.paths)
        ):
            return False
        if self.services and (finding.service or about[0]) not in self.services:
            return False
        if not self.clusters:
            return True
        if finding.cluster:
            return finding.cluster in self.clusters
        return bool(about[1]) and about[1] <= set(self.clusters)
