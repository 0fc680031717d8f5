"""The lint corpus: mutations of the example fleet, each with the rule, file and line it must
be reported at, and near misses that must lint clean (tests/corpus/README.md).

Every rule id of :mod:`gen.rules` has at least one case that fires it and one near miss,
except the few listed in :data:`NOT_FROM_PROFILES` with the test that covers them instead.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from gen.errors import Finding, GenError
from gen.rules import RULES
from tests.corpus.edits import apply_edit
from tests.helpers import REPO

CORPUS = Path(__file__).resolve().parent / "cases"

NOT_FROM_PROFILES = {
    "GEN012": "two objects of one cluster would have to render to one file, which gen's own "
    "file names never do; tests/emit/test_render.py builds such a plan directly",
    "GEN021": "needs the kubeconform binary; tests/emit/test_kubeconform.py drives a fake one",
    # gen verify: a live cluster's answers, which no profile holds.
    "GEN800": "a cluster gen verify cannot ask: tests/verify/test_client.py, "
    "tests/cli/test_verify.py, tests/verify/test_live.py (RBAC, 401)",
    "GEN801": "the API server's dry-run refusal: tests/verify/test_apply.py, "
    "tests/verify/test_live.py (a hand-broken copy of out/)",
    "GEN802": "a kind the cluster does not serve: tests/verify/test_apply.py, "
    "tests/verify/test_live.py",
    "GEN803": "a namespace the same apply creates: tests/verify/test_apply.py, "
    "tests/verify/test_live.py",
    "GEN804": "the API server's Warning headers: tests/verify/test_apply.py",
    **{rule: "hardware drift of a live cluster: tests/verify/test_drift.py, "
       "tests/verify/test_live.py" for rule in (
           "GEN810", "GEN811", "GEN812", "GEN813", "GEN814", "GEN815", "GEN816", "GEN817",
           "GEN818", "GEN819")},
}
"""Rules no mutation of the example fleet can reach, and where they are tested instead."""

NOT_YET: dict[str, str] = {}
"""Rules with no case yet, each with why and which test covers it instead: a known gap
(none at present), listed so that a new rule without a case fails the coverage test."""


@dataclass(frozen=True)
class Case:
    """One corpus entry."""

    name: str
    group: str
    edits: tuple[Mapping[str, Any], ...]
    expect: Mapping[str, Any] | None
    """rule, file, at (text of the expected line) or line; None: a near miss."""
    near: str
    """The rule a near miss is near to ('' for firing cases)."""
    mode: str
    cel: Mapping[str, Any] | None
    setup: tuple[Mapping[str, Any], ...] = ()
    """Edits applied before ``edits``: the files the mistake is made in (a new cluster, a
    CRD), not the mistake; docs/lint-examples.md names their files only."""
    xfail: str = ""
    """Why gen does not behave as the case says yet (a known gen bug): the case is expected
    to fail (strictly: it fails the run once gen is fixed, so that the mark is removed)."""


def _cases() -> Iterator[Case]:
    for file in sorted(CORPUS.glob("*.yaml")):
        for raw in yaml.safe_load(file.read_text(encoding="utf-8")) or ():
            yield Case(
                raw["name"], file.stem, tuple(raw.get("edits", ())), raw.get("expect"),
                raw.get("near", ""), raw.get("mode", "lint"), raw.get("cel"),
                tuple(raw.get("setup", ())), raw.get("xfail", ""),
            )


CASES = list(_cases())


@pytest.fixture(scope="session")
def example_fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One pristine copy of the example fleet (profiles/, out/) to copy per case."""
    root = tmp_path_factory.mktemp("corpus-base")
    for folder in ("profiles", "out", "templates"):
        shutil.copytree(REPO / folder, root / folder, symlinks=True)
    return root


_apply = apply_edit


def _run(case: Case, root: Path) -> list[Finding]:
    """The findings of the case's command on the mutated fleet (errors included)."""
    from gen.pipeline import lint, render

    # As the CLI does: the CRD folder is crds/ beside profiles/, when a case writes one.
    crds = root / "crds" if (root / "crds").is_dir() else None
    try:
        if case.mode == "lint":
            return lint(root / "profiles", base=root, crds_dir=crds)
        if case.mode in ("render", "check"):
            result = render(root / "profiles", root / "out", base=root,
                            templates_dir=root / "templates" if (root / "templates").is_dir()
                            else None, check=case.mode == "check", validator="embedded",
                            crds_dir=crds)
            return list(result.findings)
        if case.mode == "cel":
            return _cel(case)
    except GenError as err:
        return list(err.findings) or [Finding(err.default_rule, err.message)]
    raise AssertionError(f"unknown mode {case.mode!r}")


def _cel(case: Case) -> list[Finding]:
    from gen.dra.cel import compile_selector
    from gen.dra.devices import device_from_resourceslice_entry

    assert case.cel is not None
    selector = compile_selector(case.cel["expression"])
    if "device" in case.cel:
        selector.evaluate(device_from_resourceslice_entry(case.cel["device"], "gpu.nvidia.com"))
    return []


def _shown(root: Path, path: str) -> str:
    """A finding's path relative to the fleet (templates are named by absolute path)."""
    pure = Path(path)
    return pure.relative_to(root).as_posix() if pure.is_absolute() and pure.is_relative_to(
        root) else path


def _line(root: Path, expect: Mapping[str, Any]) -> int:
    if "line" in expect:
        return int(expect["line"])
    lines = (root / expect["file"]).read_text(encoding="utf-8").splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if expect["at"] in line]
    assert len(hits) == 1, f"{expect['at']!r} is on lines {hits} of {expect['file']}"
    return hits[0]


@pytest.mark.parametrize("case", [
    pytest.param(c, id=f"{c.group}:{c.name}", marks=pytest.mark.xfail(reason=c.xfail, strict=True))
    if c.xfail else pytest.param(c, id=f"{c.group}:{c.name}") for c in CASES])
def test_case(case: Case, example_fleet: Path, tmp_path: Path) -> None:
    """A firing case is reported with its rule at its file and line; a near miss lints (or
    renders) with no finding at all."""
    root = tmp_path / "fleet"
    # out/ only where the case compares with it (render --check); lint never reads it. There
    # the templates/ folder too: the committed out/ (its render-cache records) was rendered
    # with it, as 'gen render' in the repository root finds it beside profiles/.
    folders = ("profiles", "out", "templates") if case.mode == "check" else ("profiles",)
    for folder in folders:
        shutil.copytree(example_fleet / folder, root / folder, symlinks=True)
    for edit in (*case.setup, *case.edits):
        _apply(root, edit)
    _check(case, root, _run(case, root))


def _check(case: Case, root: Path, findings: list[Finding]) -> None:
    if case.expect is None:
        assert findings == [], "\n".join(f.format() for f in findings)
        return
    rule = case.expect["rule"]
    assert rule in RULES
    of_rule = [f for f in findings if f.rule == rule]
    assert of_rule, f"no {rule}; got:\n" + "\n".join(f.format() for f in findings)
    if "message" in case.expect:
        of_rule = [f for f in of_rule if case.expect["message"] in f.message]
        assert of_rule, f"no {rule} saying {case.expect['message']!r}; got:\n" + "\n".join(
            f.format() for f in findings)
    if case.expect.get("file") is None:
        return
    where = {(_shown(root, f.location.path), f.location.line)
             for f in of_rule if f.location is not None}
    assert (case.expect["file"], _line(root, case.expect)) in where, "\n".join(
        f.format() for f in of_rule)


FLEETS = Path(__file__).resolve().parent / "fleets"
"""Realistic fleets written from the docs only (``fleets/<name>/profiles``), each with its
variants in ``fleets/<name>.yaml``: one deliberate mistake per variant."""

VARIANTS = [Case(raw["name"], file.stem, tuple(raw["edits"]), raw["expect"], "", "lint", None)
            for file in sorted(FLEETS.glob("*.yaml"))
            for raw in yaml.safe_load(file.read_text(encoding="utf-8"))]


@pytest.mark.parametrize("fleet", sorted(p.stem for p in FLEETS.glob("*.yaml")))
def test_fleet_lints_and_renders_clean(fleet: str, tmp_path: Path) -> None:
    """The fleet as the docs teach it: no finding at all, and it renders (validated)."""
    from gen.pipeline import lint, render

    root = tmp_path / "fleet"
    shutil.copytree(FLEETS / fleet / "profiles", root / "profiles")
    findings = lint(root / "profiles", base=root)
    assert findings == [], "\n".join(f.format() for f in findings)
    result = render(root / "profiles", root / "out", base=root, validator="embedded", jobs=1)
    assert list(result.findings) == [] and result.objects > 0


@pytest.mark.parametrize("case", VARIANTS, ids=[f"{c.group}:{c.name}" for c in VARIANTS])
def test_fleet_variant(case: Case, tmp_path: Path) -> None:
    """Each variant of a docs-written fleet is reported with its rule at its file and line."""
    root = tmp_path / "fleet"
    shutil.copytree(FLEETS / case.group / "profiles", root / "profiles")
    for edit in case.edits:
        _apply(root, edit)
    _check(case, root, _run(case, root))


def test_fleet_variants_count() -> None:
    """Variants are bad inputs, at least 20 per fleet, names unique within a fleet."""
    assert all(c.expect is not None for c in VARIANTS)
    for fleet in {c.group for c in VARIANTS}:
        names = [c.name for c in VARIANTS if c.group == fleet]
        assert len(names) >= 20 and len(names) == len(set(names)), fleet


def test_every_rule_fires_and_has_a_near_miss() -> None:
    """Each rule id has a case that fires it and a near miss (or is listed as unreachable);
    a case marked xfail does not count."""
    fired = {c.expect["rule"] for c in CASES if c.expect is not None and not c.xfail}
    near = {c.near for c in CASES if c.expect is None and not c.xfail}
    exempt = NOT_FROM_PROFILES.keys() | NOT_YET.keys()
    missing = {r for r in RULES if r not in exempt and not (r in fired and r in near)}
    assert missing == set(), sorted(missing)
    assert {c.near for c in CASES if c.expect is None} <= set(RULES)


def test_corpus_size() -> None:
    """At least 150 bad inputs, and names unique within a group."""
    assert sum(c.expect is not None for c in CASES) >= 150
    names = [(c.group, c.name) for c in CASES]
    assert len(names) == len(set(names))
