"""Lint as a whole: the base fleet the rule tests change is clean; the examples of
docs/lint.md are what gen prints and does; SARIF output validates against the SARIF 2.1.0
schema with related locations and suppressions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import jsonschema_rs
from click.testing import CliRunner

from gen.cli import cli
from gen.pipeline import lint_report
from tests.helpers import REPO, copy_fleet, errors_of, lint_fleet

DOC = (REPO / "docs" / "lint.md").read_text(encoding="utf-8")
SARIF_SCHEMA = REPO / "tests" / "emit" / "data" / "sarif-schema-2.1.0.json"


def _block(marker: str, lang: str) -> str:
    at = DOC.index(marker)
    match = re.compile(rf"```{lang}\n(.*?)```", re.DOTALL).search(DOC, at)
    assert match is not None, marker
    return match.group(1)


def _class_80gi(fleet: Path) -> None:
    """The mutation docs/lint.md's first example shows: min_memory 80Gi after product."""
    path = fleet / "profiles/gpu-classes/h100.yaml"
    text = path.read_text()
    path.write_text(text.replace("  product: h100-sxm5-80gb\n",
                                 "  product: h100-sxm5-80gb\n  min_memory: 80Gi\n"))


def _lint(fleet: Path, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["lint", "--profiles", str(fleet / "profiles"), *args])
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout, result.stderr


def test_base_fleet_is_clean(tmp_path: Path) -> None:
    """The base fleet used by these tests has no errors."""
    assert errors_of(lint_fleet(tmp_path)) == []


def test_docs_example_output_is_what_lint_prints(tmp_path: Path, monkeypatch: object) -> None:
    """docs/lint.md's example: the location (the class's min_memory line), the related
    location (the service) and the hint are what gen prints."""
    fleet = copy_fleet(tmp_path / "fleet")
    _class_80gi(fleet)
    import os

    here = Path.cwd()
    os.chdir(fleet)
    try:
        code, out, _ = _lint(fleet)
    finally:
        os.chdir(here)
    shown = _block("<!-- lint-output:", "text").splitlines()
    printed = out.splitlines()
    assert code == 1
    head = shown[0].removesuffix("…")
    assert printed[0].startswith(head.rstrip("; ")), (printed[0], head)
    assert printed[1:3] == shown[1:3]
    line = printed[0].split(":")[1]
    edited = (fleet / "profiles/gpu-classes/h100.yaml").read_text().splitlines()
    assert edited[int(line) - 1].strip() == "min_memory: 80Gi"


def test_docs_fleet_config_example_silences_what_it_says(tmp_path: Path) -> None:
    """docs/lint.md's gen.yaml silences GEN301 of qwen-7b on edge-l4, and only that."""
    fleet = copy_fleet(tmp_path / "fleet")
    (fleet / "gen.yaml").write_text(_block("<!-- lint-example: gen.yaml -->", "yaml"))
    edge = fleet / "profiles/services/qwen-7b-edge.yaml"
    edge.write_text(edge.read_text().replace("max_model_len: 8192", "max_model_len: 131072"))
    report = lint_report(fleet / "profiles", base=fleet)
    assert errors_of(list(report.findings)) == []
    assert [f.rule for f, _ in report.suppressed] == ["GEN301"]
    (_, suppression), = report.suppressed
    assert suppression.scope == "fleet" and "patched vLLM" in suppression.reason


def test_docs_inline_example_silences_gen301(tmp_path: Path) -> None:
    """docs/lint.md's inline marker, put on qwen-7b-edge's max_model_len line, silences the
    GEN301 that line causes."""
    fleet = copy_fleet(tmp_path / "fleet")
    example = next(line for line in _block("**On the line**", "yaml").splitlines()
                   if "# gen: ignore" in line)
    edge = fleet / "profiles/services/qwen-7b-edge.yaml"
    edge.write_text(edge.read_text().replace("  max_model_len: 8192", example))
    report = lint_report(fleet / "profiles", base=fleet)
    assert errors_of(list(report.findings)) == []
    assert [f.rule for f, _ in report.suppressed] == ["GEN301"]


def test_sarif_validates_against_the_schema(tmp_path: Path) -> None:
    """gen lint --format sarif, with an error that has a related location, a suppressed
    finding and an unused suppression (a warning), validates against the OASIS SARIF 2.1.0
    schema (tests/emit/data/README.md says where it comes from)."""
    fleet = copy_fleet(tmp_path / "fleet")
    _class_80gi(fleet)
    edge = fleet / "profiles/services/qwen-7b-edge.yaml"
    edge.write_text(edge.read_text().replace(
        "max_model_len: 8192", "max_model_len: 131072  # gen: ignore[GEN301] measured"))
    (fleet / "gen.yaml").write_text(
        "lint:\n  ignore:\n    - {rule: GEN303, reason: not on this fleet}\n")
    code, out, _ = _lint(fleet, "--format", "sarif")
    assert code == 1
    log = json.loads(out)
    validator = jsonschema_rs.validator_for(json.loads(SARIF_SCHEMA.read_text()))
    errors = [str(e) for e in validator.iter_errors(log)]
    assert errors == []
    results = log["runs"][0]["results"]
    gen204 = next(r for r in results if r["ruleId"] == "GEN204")
    (related,) = gen204["relatedLocations"]
    assert related["message"]["text"] == "used by service 'llama-70b' (gpu)"
    assert related["physicalLocation"]["artifactLocation"]["uri"].endswith("llama-70b.yaml")
    assert any("suppressions" in r for r in results if r["ruleId"] == "GEN301")
    assert any(r["ruleId"] == "GEN004" and r["level"] == "warning" for r in results)


def test_sarif_of_unreadable_profiles_validates(tmp_path: Path) -> None:
    """A syntax error: the SARIF log is still valid SARIF."""
    fleet = copy_fleet(tmp_path / "fleet")
    (fleet / "profiles/broken.yaml").write_text('kind: Cluster\nname: "prod\n')
    code, out, _ = _lint(fleet, "--format", "sarif")
    assert code == 1
    validator = jsonschema_rs.validator_for(json.loads(SARIF_SCHEMA.read_text()))
    assert validator.is_valid(json.loads(out))
