"""Suppressions: a lint rule silenced where the user decides it does not apply, with a reason.

Three places, each with a required reason:

- **inline**, a comment ``# gen: ignore[GEN303] reason`` at the end of the line a finding
  points at, or alone on the line above it (it then covers the next line that is neither
  blank nor a comment); several rules: ``ignore[GEN301,GEN303]``;
- **per profile**, ``lint: {ignore: [{rule: GEN303, reason: …}]}`` in a profile document:
  every finding located in that document and, in an ``InferenceService``, every finding about
  that service wherever it is located;
- **fleet-wide**, ``gen.yaml`` in the fleet repository (the folder holding ``profiles/``)::

      lint:
        ignore:
          - rule: GEN303
            reason: the edge nodes get the 570 driver in the next maintenance window
            clusters: [edge-l4]               # optional: only findings about these clusters
            services: [qwen-7b]               # optional: only findings about these services
            paths: ["profiles/services/*"]    # optional: only findings in matching files

A finding is about a service or a cluster when its rule says so, or when it is located in
that service's or cluster's profile (a finding in a service's profile is about the clusters
it runs in: ``clusters`` must name them all). ``paths`` are globs on the file names findings show
(relative to the fleet repository; ``*`` also matches ``/``).

A suppressed finding does not count towards the exit code, is counted in the summary and
listed with ``gen lint --show-suppressed`` and in SARIF's ``suppressions``. A suppression that
matches nothing is itself a warning (``GEN004``); one without a reason, or naming a rule id
gen does not have or one that cannot be suppressed, is an error (``GEN005``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import Field, ValidationError

from gen.errors import Finding, ProfileValidationError, SourceLocation
from gen.fleet.loader import CONFIG_FILE, Document, fleet_config_repo, parse_text
from gen.fleet.schema_findings import did_you_mean, pydantic_findings
from gen.fleet.suppression import About, Suppression
from gen.models._base import Spec
from gen.models._types import DNSLabel, Reason, RuleId
from gen.rules import finding

if TYPE_CHECKING:
    from gen.fleet.profile_set import ProfileSet

__all__ = [
    "CONFIG_FILE",
    "Suppression",
    "SuppressionReport",
    "apply_suppressions",
    "document_suppressions",
    "fleet_config_repo",
    "load_fleet_config",
]


UNSUPPRESSIBLE = frozenset({
    "GEN000", "GEN001", "GEN002", "GEN003", "GEN004", "GEN005", "GEN010", "GEN011",
    "GEN012", "GEN020", "GEN021", "GEN030", "GEN031",
})
"""Rules that cannot be silenced: input that cannot be read stops lint before any rule
runs, render and validation errors are not lint findings, and the suppression rules
themselves would hide their own mistakes."""

@dataclass(frozen=True)
class SuppressionReport:
    """The findings that count, the ones silenced (with what silenced them), and the
    findings about the suppressions themselves (already in ``findings``)."""

    findings: tuple[Finding, ...]
    suppressed: tuple[tuple[Finding, Suppression], ...] = ()
    problems: tuple[Finding, ...] = field(default=())


def document_suppressions(doc: Document, value: object) -> list[Suppression]:
    """The inline markers of a validated profile document and its ``lint.ignore`` list."""
    out = [
        Suppression(rule, marker.reason, marker.location, "inline", doc.path,
                    marker.line, marker.line)
        for marker in doc.markers for rule in marker.rules or ("",)
    ]
    lint = getattr(value, "lint", None)
    if lint is not None:
        service = getattr(value, "name", "") if getattr(value, "kind", "") == (
            "InferenceService") else ""
        first = doc.location.line
        for i, entry in enumerate(lint.ignore):
            where = doc.locate(("lint", "ignore", i, "rule"))[0]
            out.append(Suppression(
                entry.rule, entry.reason, where, "profile", doc.path, first,
                doc.end_line or first, service=service,
            ))
    return out


class _FleetIgnore(Spec):
    rule: RuleId = Field(description="The rule id, e.g. 'GEN303'.")
    reason: Reason
    paths: tuple[str, ...] = Field((), description="File globs, relative to the repository.")
    services: tuple[DNSLabel, ...] = Field((), description="Only findings about these.")
    clusters: tuple[DNSLabel, ...] = Field((), description="Only findings about these.")


class _FleetLint(Spec):
    ignore: tuple[_FleetIgnore, ...] = Field((), description="Rules silenced fleet-wide.")


class FleetConfig(Spec):
    """``gen.yaml``: fleet-wide settings."""

    lint: _FleetLint = Field(default_factory=_FleetLint, description="Lint settings.")


def load_fleet_config(repo: Path, shown: str = CONFIG_FILE) -> list[Suppression]:
    """The fleet-wide suppressions of ``repo/gen.yaml`` (none when there is no such file).

    Raises :class:`ProfileValidationError` (located) when the file cannot be read or does
    not match its schema.
    """
    file = repo / CONFIG_FILE
    if not file.is_file():
        return []
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ProfileValidationError(f"cannot read {shown}", findings=[
            finding("GEN001", f"cannot read: {err}", SourceLocation(shown))]) from None
    documents, problems = parse_text(text, shown)
    if problems:
        raise ProfileValidationError(f"cannot read {shown}", findings=problems)
    out: list[Suppression] = []
    findings: list[Finding] = []
    for doc in documents:
        try:
            config = FleetConfig.model_validate(doc.data)
        except ValidationError as err:
            findings.extend(pydantic_findings(err, doc))
            continue
        for i, entry in enumerate(config.lint.ignore):
            out.append(Suppression(
                entry.rule, entry.reason, doc.locate(("lint", "ignore", i, "rule"))[0],
                "fleet", paths=entry.paths, services=entry.services,
                clusters=entry.clusters,
            ))
    if findings:
        raise ProfileValidationError(f"{len(findings)} problem(s) in {shown}",
                                     findings=findings)
    return out


def _rule_guess(rule: str, rules: set[str]) -> str:
    """``; did you mean 'GEN204'?`` for an id one character off a known one (O for 0)."""
    fixed = rule.upper().replace("O", "0").replace("I", "1").replace("L", "1")
    fixed = "GEN" + fixed[3:] if fixed.startswith("GEN") else fixed
    if fixed in rules:
        return f"; did you mean {fixed!r}?"
    near = sorted(r for r in rules if len(r) == len(rule)
                  and sum(a != b for a, b in zip(r, rule, strict=True)) == 1)
    return f"; did you mean {near[0]!r}?" if len(near) == 1 else did_you_mean(rule, rules, 0.9)


def _problems(suppressions: Sequence[Suppression], known: Iterable[str]) -> tuple[
        list[Suppression], list[Finding]]:
    """The usable suppressions, and a GEN005 error for each unusable one."""
    rules = set(known)
    usable: list[Suppression] = []
    problems: list[Finding] = []
    for s in suppressions:
        if not s.rule:
            problems.append(finding(
                "GEN005", "the suppression names no rule", s.location,
                hint="write '# gen: ignore[GEN303] why the rule does not apply here'",
            ))
        elif s.rule not in rules:
            problems.append(finding(
                "GEN005", f"unknown rule id {s.rule!r}{_rule_guess(s.rule, rules)}",
                s.location, hint="docs/lint-rules.md lists every rule",
            ))
        elif s.rule in UNSUPPRESSIBLE:
            problems.append(finding(
                "GEN005", f"{s.rule} cannot be suppressed", s.location,
                hint="only lint rules can be silenced; fix the input instead",
            ))
        elif not s.reason.strip():
            problems.append(finding(
                "GEN005", f"the suppression of {s.rule} gives no reason", s.location,
                hint=f"say why the rule does not apply: '# gen: ignore[{s.rule}] reason'",
            ))
        else:
            usable.append(s)
    return usable, problems


def _owners(profiles: ProfileSet | None) -> Callable[[Finding], About]:
    """The service and clusters whose profile document holds a finding's location."""
    spans: dict[str, list[tuple[int, int, About]]] = {}
    if profiles is not None:
        for name, svc in profiles.services.items():
            doc = svc.document
            spans.setdefault(doc.path, []).append(
                (doc.location.line, doc.end_line or doc.location.line,
                 (name, frozenset(svc.value.clusters))))
        for name, cluster in profiles.clusters.items():
            doc = cluster.document
            spans.setdefault(doc.path, []).append(
                (doc.location.line, doc.end_line or doc.location.line, ("", frozenset({name}))))

    def owner(finding: Finding) -> About:
        loc = finding.location
        if loc is not None:
            for first, last, about in spans.get(loc.path, ()):
                if first <= loc.line <= last:
                    return about
        return "", frozenset()

    return owner


def apply_suppressions(
    findings: Iterable[Finding], suppressions: Sequence[Suppression],
    known_rules: Iterable[str], *, report_unused: bool = True,
    profiles: ProfileSet | None = None,
) -> SuppressionReport:
    """Split ``findings`` into those that count and those a suppression silences.

    ``report_unused``: add a GEN004 warning for each suppression that silences nothing
    (off when only part of the fleet was checked, where "unused" cannot be known).
    ``profiles``: the fleet, to tell which service or cluster a finding is about when its
    rule does not say (the one whose profile holds its location).
    """
    usable, problems = _problems(suppressions, known_rules)
    owner = _owners(profiles if usable else None)
    kept: list[Finding] = []
    silenced: list[tuple[Finding, Suppression]] = []
    used: set[int] = set()
    for found in findings:
        about = owner(found)
        hits = [i for i, s in enumerate(usable) if s.matches(found, about)]
        if not hits:
            kept.append(found)
        else:
            used.update(hits)
            silenced.append((found, usable[hits[0]]))
    if report_unused:
        for i, s in enumerate(usable):
            if i not in used:
                problems.append(finding(
                    "GEN004", f"the suppression of {s.rule} matches no finding", s.location,
                    hint="remove it: the problem it silenced is gone (or it is on the "
                    "wrong line)",
                ))
    return SuppressionReport(tuple(kept + problems), tuple(silenced), tuple(problems))
