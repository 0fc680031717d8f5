"""The README and docs stay true: their examples are run, their lists are complete."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from gen.cli import _COMMANDS, cli
from gen.pipeline import render

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _block_after(marker: str) -> str:
    index = README.index(marker)
    match = re.compile(r"```yaml\n(.*?)```", re.DOTALL).search(README, index)
    assert match is not None
    return match.group(1)


def test_readme_example_renders_as_shown(tmp_path: Path) -> None:
    """The README's example profile renders to exactly the manifest the README shows."""
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "fleet.yaml").write_text(_block_after("<!-- example-profile -->"))
    marker = re.search(r"<!-- example-output: (\S+) -->", README)
    assert marker is not None
    render(profiles, tmp_path / "out", base=tmp_path, validator="embedded")
    produced = (tmp_path / "out" / marker.group(1)).read_text()
    assert produced == _block_after(marker.group(0))


@pytest.mark.parametrize("name", sorted(_COMMANDS))
def test_every_command_is_documented_and_has_help(name: str) -> None:
    """Each command appears in the README's table and answers --help."""
    assert f"`gen {name}" in README
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


def test_lint_rules_doc_lists_every_rule() -> None:
    """docs/lint-rules.md names every rule id gen can report (it is generated: test_rules)."""
    from gen.rules import RULES

    text = (ROOT / "docs" / "lint-rules.md").read_text(encoding="utf-8")
    for rule in RULES:
        assert f"| `{rule}` |" in text, rule


def test_readme_links_exist() -> None:
    """Every docs/ link in the README points at a file in the repository."""
    for link in re.findall(r"\((docs/[^)]+)\)", README):
        assert (ROOT / link).is_file(), link


def _doc_block(text: str, marker: str, lang: str) -> str:
    match = re.compile(rf"```{lang}\n(.*?)```", re.DOTALL).search(text, text.index(marker))
    assert match is not None
    return match.group(1)


def test_dynamic_mig_worked_example_is_true(tmp_path: Path) -> None:
    """docs/dynamic-mig.md shows the fixture fleet, its driver values, its packing picture
    and its plan exactly as gen produces them."""
    doc = (ROOT / "docs" / "dynamic-mig.md").read_text(encoding="utf-8")
    fleet = ROOT / "tests" / "fixtures" / "dynamic-mig"
    cluster = (fleet / "clusters" / "dyn.yaml").read_text(encoding="utf-8")
    assert _doc_block(doc, "<!-- dynamic-mig-cluster -->", "yaml") == cluster
    result = render(fleet, tmp_path / "out", base=tmp_path, validator="embedded")
    values = next(b.decode() for p, b in result.outputs.items()
                  if "nvidia-dra-driver-gpu" in str(p))
    assert "featureGates:\n          DynamicMIG: true" in values
    assert _doc_block(doc, "<!-- dynamic-mig-values -->", "yaml") == (
        "featureGates:\n  DynamicMIG: true\n")
    runner = CliRunner()
    explained = runner.invoke(cli, ["explain", "--slices", "--profiles", str(fleet)])
    assert explained.exit_code == 0, explained.output
    assert _doc_block(doc, "<!-- dynamic-mig-packing -->", "text") in explained.output
    planned = runner.invoke(cli, ["plan", "--profiles", str(fleet)])
    assert planned.exit_code == 0, planned.output
    assert _doc_block(doc, "<!-- dynamic-mig-plan -->", "text") in planned.output
