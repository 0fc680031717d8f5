"""The checks split by scope (gen.pipeline.check_parts, the one list of checks): each
cluster's parts run on that cluster alone (as a render's worker runs them), the fleet parts
once on the resolved fleet before any build, and together they find exactly what every part
finds run once on the whole built fleet: every finding, as many times, and the same after
the suppressions (gen.pipeline.check_report, lint's).

Each cluster's parts also read no profile beyond its cluster's own that their
``CheckPart.reads`` do not declare (a cluster's pre-build key holds only those).

Run on the example fleet, on every corpus case (tests/corpus) and variant, and on bench
fleets."""

from __future__ import annotations

import dataclasses
import shutil
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from gen.errors import Finding, GenError
from gen.fleet.plan import ClusterPlan, Plan
from gen.pipeline import (
    build_one,
    check_parts,
    check_report,
    cluster_checks,
    fleet_checks,
    load_plan,
    merged_findings,
    resolve_fleet,
)
from tests.corpus.test_corpus import CASES, FLEETS, VARIANTS, Case, _apply
from tests.helpers import REPO

sys.path.insert(0, str(REPO / "bench"))
from fleet import write_fleet


def _ordered(findings: Iterable[Finding]) -> list[tuple[tuple[str, int, int, str, str], str]]:
    """Every finding (duplicates kept) in the sorted order, each with all its fields."""
    return sorted((f.sort_key(), repr(f)) for f in findings)


def _on_whole(whole: Plan) -> list[Finding]:
    """Every part run once on the whole built fleet: the ``cluster`` and ``fleet`` parts on
    every cluster together, the ``once`` lists of each cluster (of those with the same key,
    the first cluster's), with what resolve recorded."""
    findings = list(whole.findings)
    once: dict[str, list[Finding]] = {}
    for part in check_parts():
        if part.once is not None:
            for cluster in whole.clusters:
                for key, found in part.once(cluster).items():
                    once.setdefault(f"{part.check}:{key}", found)
        elif part.run is not None:
            findings.extend(part.run(whole))
    return [*findings, *(f for found in once.values() for f in found)]


class _Recorded(Mapping[str, object]):
    """A section of the fleet's profiles that notes each name read (``*``: all of them)."""

    def __init__(self, section: str, inner: Mapping[str, object],
                 read: set[tuple[str, str]]) -> None:
        self._section, self._inner, self._read = section, inner, read

    def __getitem__(self, name: str) -> object:
        self._read.add((self._section, name))
        return self._inner[name]

    def __iter__(self) -> Iterator[str]:
        self._read.add((self._section, "*"))
        return iter(self._inner)

    def __len__(self) -> int:
        self._read.add((self._section, "*"))
        return len(self._inner)


def _checked_alone(resolved: Plan, cluster: ClusterPlan, built: ClusterPlan) -> tuple[
        list[Finding], dict[str, list[Finding]]]:
    """:func:`cluster_checks` on ``built``, asserting that what it read of the profiles'
    sections is what the parts declare for ``cluster`` (the resolved one)."""
    read: set[tuple[str, str]] = set()
    profiles = resolved.profiles
    sections: dict[str, Any] = {
        f.name: _Recorded(f.name, getattr(profiles, f.name), read)
        for f in dataclasses.fields(profiles) if isinstance(getattr(profiles, f.name), Mapping)}
    recorded = dataclasses.replace(profiles, **sections)
    found = cluster_checks(dataclasses.replace(resolved, profiles=recorded), built)
    declared = {(part.reads.section, name) for part in check_parts() if part.reads is not None
                for name in part.reads.names(cluster)}
    assert read <= declared, f"{cluster.name}: read, not declared: {sorted(read - declared)}"
    return found


def _assert_split_equals_whole(profiles: Path, base: Path) -> int:
    """The parts on one-cluster plans and on the unbuilt fleet against every part on the
    whole built fleet: raw findings, those that count and those suppressed (lint's report).
    Returns how many findings there were (0 when the fleet does not load: nothing to
    compare)."""
    from gen.fleet.suppress import apply_suppressions
    from gen.rules import RULES

    try:
        whole = load_plan(profiles, base=base)
    except GenError as err:
        # The fleet does not load or build: the split path fails the same way.
        with pytest.raises(type(err)):
            resolved, root = resolve_fleet(profiles, base=base)
            for cluster in resolved.clusters:
                build_one(cluster, root)
        return 0
    raw_whole = _on_whole(whole)
    resolved, root = resolve_fleet(profiles, base=base)
    per_cluster = [_checked_alone(resolved, c, build_one(c, root)) for c in resolved.clusters]
    raw_split = merged_findings(resolved, per_cluster, fleet_checks(resolved))
    assert _ordered(raw_split) == _ordered(raw_whole)
    report = check_report(whole)
    for found in (raw_whole, raw_split):
        split = apply_suppressions(found, resolved.profiles.suppressions, RULES,
                                   report_unused=True, profiles=resolved.profiles)
        assert _ordered(split.findings) == _ordered(report.findings)
        assert sorted(map(repr, split.suppressed)) == sorted(map(repr, report.suppressed))
    return len(raw_whole)


def test_every_check_is_split_into_parts() -> None:
    """Each capability check has parts, each part one callable of its scope."""
    parts = check_parts()
    assert {p.check for p in parts} == {
        "mig", "dra", "serving", "routing", "disaggregation", "security", "satisfiability",
        "apple", "gitops", "capacity", "kueue", "multinode"}
    for part in parts:
        assert (part.once is not None) == (part.scope == "once")
        assert (part.run is not None) == (part.scope != "once")
        assert part.reads is None or part.scope == "cluster"


def test_example_fleet(tmp_path: Path) -> None:
    shutil.copytree(REPO / "profiles", tmp_path / "profiles")
    _assert_split_equals_whole(tmp_path / "profiles", tmp_path)


@pytest.mark.parametrize("clusters,services", [(3, 4), (12, 6)])
def test_bench_fleet(tmp_path: Path, clusters: int, services: int) -> None:
    _assert_split_equals_whole(write_fleet(tmp_path, clusters, services), tmp_path)


def _mutated(case: Case, tmp_path: Path) -> Path:
    root = tmp_path / "fleet"
    shutil.copytree(REPO / "profiles", root / "profiles", symlinks=True)
    for edit in (*case.setup, *case.edits):
        _apply(root, edit)
    return root


LINT_CASES = [c for c in CASES if c.mode != "cel"
              and not any(e["file"].startswith("out/") for e in (*c.setup, *c.edits))]
"""The corpus cases on profiles (those that edit the committed out/ need it: test_corpus)."""


@pytest.mark.parametrize("case", LINT_CASES, ids=[f"{c.group}:{c.name}" for c in LINT_CASES])
def test_corpus_case(case: Case, tmp_path: Path) -> None:
    root = _mutated(case, tmp_path)
    _assert_split_equals_whole(root / "profiles", root)


@pytest.mark.parametrize("case", VARIANTS, ids=[f"{c.group}:{c.name}" for c in VARIANTS])
def test_corpus_fleet_variant(case: Case, tmp_path: Path) -> None:
    root = tmp_path / "fleet"
    shutil.copytree(FLEETS / case.group / "profiles", root / "profiles")
    for edit in case.edits:
        _apply(root, edit)
    _assert_split_equals_whole(root / "profiles", root)
