"""Tests for tools.judge.kubeconform_category: the real kubeconform, built from its Go module
at the pinned release, judges a seeded subset of the differential mutants, the YAML scalars
and the example fleet as gen's embedded validator does; and the comparison catches a gen
that is wrong in each of the ways it can be."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tools.judge import kubeconform_category as category_module
from tools.judge.known import KNOWN
from tools.judge.kubeconform_category import (
    NAME,
    SCALARS,
    Case,
    crd_cases,
    judge,
    run,
    validate_cases,
    yaml_cases,
)
from tools.judge.report import Category

pytestmark = pytest.mark.kubeconform


@pytest.fixture(scope="module")
def kubeconform() -> Path:
    """The pinned kubeconform (a build that fails fails the tests: they never skip)."""
    from tools.judge.build import ensure

    return ensure("kubeconform", log=False)


def _undocumented(category: Category) -> list[Any]:
    return [v for v in category.disagreements() if v.case not in KNOWN]


def test_seeded_subset_agrees(kubeconform: Path) -> None:
    """Every cluster of the example fleet, every YAML scalar, a third of the validate mutants
    and a fifteenth of the CRD mutants: kubeconform's verdicts are gen's, paths included."""
    category = run(kubeconform, validate_keep=3, crd_keep=15)
    assert category.name == NAME
    assert _undocumented(category) == []
    families = Counter(v.case.split(":")[0].split("/")[0] for v in category.verdicts)
    clusters = list((Path(__file__).parents[2] / "out").glob("*/kustomization.yaml"))
    assert families["fleet"] == len(clusters)
    assert families["yaml"] == len(SCALARS)
    assert families["mutant"] > 700
    verdicts = Counter(v.gen.split(" at ")[0] for v in category.verdicts)
    assert verdicts["valid"] > 200
    assert verdicts["invalid"] > 200  # with their paths: "invalid at spec.replicas, ..."
    assert verdicts["no schema"] > 0 and verdicts["rejected"] > 0
    fleet = [v for v in category.verdicts if v.case.startswith("fleet/")]
    assert all(v.gen.endswith("objects, all valid") for v in fleet), fleet


def test_case_ids_are_stable() -> None:
    """Case ids number the differentials' own sequences: the same seed, the same objects."""
    first = [c.case for c, _ in zip(validate_cases(), range(3), strict=False)]
    assert first == ["mutant/validate:0", "mutant/validate:1", "mutant/validate:2"]
    kept = [c.case for c, _ in zip(crd_cases(keep=100), range(3), strict=False)]
    assert kept == ["mutant/crd:0", "mutant/crd:100", "mutant/crd:200"]
    again = next(iter(validate_cases()))
    assert again.obj == next(iter(validate_cases())).obj
    ids = [c.case for c in yaml_cases()]
    assert ids == [f"yaml:{json.dumps(text)}" for text in SCALARS]
    assert len(set(ids)) == len(ids)


def _sample(keep: int = 20) -> list[Case]:
    return [*validate_cases(keep=keep), *crd_cases(keep=keep * 5)]


def test_catches_a_validator_that_accepts_everything(
        kubeconform: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A gen whose embedded validator finds nothing disagrees on every invalid mutant."""
    from gen.emit.validate import SchemaValidator

    monkeypatch.setattr(SchemaValidator, "validate", lambda *_args, **_kw: [])
    category = Category(NAME, "test")
    judge(_sample(), kubeconform, category)
    wrong = category.disagreements()
    assert len(wrong) > 30
    assert all(v.gen == "valid" and v.upstream.startswith(("invalid", "rejected"))
               for v in wrong), wrong[:3]


def test_catches_a_writer_that_leaves_go_yaml_booleans_plain(
        kubeconform: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """YAML written as plain PyYAML writes it: kubectl's reader takes y and 1e3 for a
    boolean and a number, and the comparison sees it."""
    import yaml

    from gen.emit import yamlfast

    monkeypatch.setattr(yamlfast, "dump", lambda data: yaml.safe_dump(data, sort_keys=True))
    category = Category(NAME, "test")
    judge(yaml_cases(), kubeconform, category)
    wrong = {v.case: v.upstream for v in category.disagreements()}
    assert {'yaml:"y"', 'yaml:"n"', 'yaml:"1e3"', 'yaml:"0o17"'} <= set(wrong)
    assert wrong['yaml:"y"'] == "invalid at data.value"


def test_catches_kubeconform_without_gen_crd_schemas(
        kubeconform: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Had gen not given kubeconform the CRDs' schemas, every custom resource would be
    'no schema' for kubeconform and a disagreement."""
    from gen.emit import kubeconform as module

    real = module.write_schemas

    def without_crds(folder: Path, version: str, crds: Any = None,
                     kinds: Any = None) -> tuple[str, str]:
        _, builtin = real(folder, version, crds, kinds)
        return builtin, builtin

    monkeypatch.setattr(module, "write_schemas", without_crds)
    category = Category(NAME, "test")
    judge(list(crd_cases(keep=200)), kubeconform, category)
    # kubeconform refuses an object it cannot even decode (metadata not a mapping) before it
    # looks for a schema, so those mutants agree with or without the schemas.
    judged = {v.case for v in category.verdicts if v.upstream != "rejected"}
    assert len(judged) > 30
    assert {v.case for v in category.disagreements()} == judged
    assert {v.upstream for v in category.disagreements()} == {"no schema"}


def test_a_missing_report_is_a_disagreement(
        kubeconform: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An object kubeconform says nothing about (or says two things about) is not taken for
    valid: the case disagrees."""
    from gen.emit import kubeconform as module

    real = module.kubeconform_resources
    monkeypatch.setattr(module, "kubeconform_resources",
                        lambda *a, **kw: real(*a, **kw)[1:])
    category = Category(NAME, "test")
    judge(list(yaml_cases())[:3], kubeconform, category)
    (wrong,) = category.disagreements()
    assert wrong.upstream == "0 resources reported for one object"


def test_a_null_in_a_required_custom_field_counts_at_its_parent() -> None:
    """kubeconform's 'got null' at a custom resource's field is the API server's missing
    field at the parent (its nulls are dropped first); a built-in kind's is not moved."""
    msg = ("jsonschema validation failed with 'file:///s.json#' - at '/spec/url': got null, "
           "want string - at '/spec/items/0': got null, want object")
    obj = {"spec": {"url": None, "items": [None]}}
    paths = category_module._upstream_paths
    assert paths(msg, obj, custom=True) == frozenset({"spec", "spec.items[0]"})
    assert paths(msg, obj, custom=False) == frozenset({"spec.url", "spec.items[0]"})


def test_verdict_words() -> None:
    """Paths are part of an invalid verdict, sorted, the root shown as (root)."""
    words = category_module._words
    assert words("invalid", frozenset({"spec.b", "", "spec.a"})) == \
        "invalid at (root), spec.a, spec.b"
    assert words("invalid", None) == "invalid"
    assert words("valid", frozenset()) == "valid"
