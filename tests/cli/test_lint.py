"""gen lint and gen explain at the CLI: suppressed findings, valid JSON and SARIF on every
error, a missing or wrong profiles/ folder, explain's exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.helpers import invoke

EDGE = "profiles/services/qwen-7b-edge.yaml"


def _too_long(fleet: Path, marker: str = "") -> int:
    """Make qwen-7b-edge's max_model_len longer than the model (GEN301); return the line."""
    path = fleet / EDGE
    lines = path.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if "max_model_len:" in line)
    lines[at] = "  max_model_len: 131072" + (f"  {marker}" if marker else "")
    path.write_text("\n".join(lines) + "\n")
    return at + 1


def test_suppressed_finding_counted_and_shown(runner: CliRunner, fleet: Path) -> None:
    """An inline suppression: exit 0, counted in the summary, listed with --show-suppressed
    with its reason and where it is written."""
    line = _too_long(fleet, "# gen: ignore[GEN301] measured on the edge nodes")
    result = invoke(runner, "lint", "--profiles", fleet / "profiles")
    assert result.exit_code == 0, result.output
    assert "GEN301" not in result.stdout
    assert "1 suppressed (--show-suppressed lists them)." in result.stderr
    shown = invoke(runner, "lint", "--profiles", fleet / "profiles", "--show-suppressed")
    assert shown.exit_code == 0
    assert f"{EDGE}:{line}:3: error GEN301: serving.max_model_len:" in shown.stdout
    assert "suppressed (inline, at " in shown.stdout
    assert shown.stdout.rstrip().endswith("measured on the edge nodes")


def test_suppressed_in_json_and_sarif(runner: CliRunner, fleet: Path) -> None:
    """JSON lists suppressed findings with their suppression; SARIF marks them suppressed."""
    _too_long(fleet, "# gen: ignore[GEN301] measured")
    data = json.loads(invoke(runner, "lint", "--profiles", fleet / "profiles",
                              "--format", "json").stdout)
    assert data["summary"]["suppressed"] == 1 and data["summary"]["error"] == 0
    (item,) = data["suppressed"]
    assert item["rule"] == "GEN301"
    assert item["suppression"]["scope"] == "inline" and item["suppression"]["reason"] == "measured"
    sarif = json.loads(invoke(runner, "lint", "--profiles", fleet / "profiles",
                               "--format", "sarif").stdout)
    (result,) = [r for r in sarif["runs"][0]["results"] if r["ruleId"] == "GEN301"]
    (suppression,) = result["suppressions"]
    assert suppression["kind"] == "inSource" and suppression["justification"] == "measured"


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
@pytest.mark.parametrize("what", ["absent", "file"])
def test_missing_or_wrong_profiles_folder(runner: CliRunner, tmp_path: Path, fmt: str,
                                          what: str) -> None:
    """No profiles/ folder, or a file in its place: a located exit-1 error (not click's exit
    2), valid JSON or SARIF on stdout in those formats."""
    profiles = tmp_path / "profiles"
    if what == "file":
        profiles.write_text("kind: Cluster\n")
    result = invoke(runner, "lint", "--profiles", profiles, "--format", fmt)
    assert result.exit_code == 1, result.output
    if fmt == "text":
        assert f"{profiles.as_posix()}: error GEN001: " in result.stdout
        assert ("is a file, not a folder" if what == "file" else "does not exist") in (
            result.stdout)
    elif fmt == "json":
        (finding,) = json.loads(result.stdout)["findings"]
        assert finding["rule"] == "GEN001" and finding["path"] == profiles.as_posix()
    else:
        (run,) = json.loads(result.stdout)["runs"]
        assert [r["ruleId"] for r in run["results"]] == ["GEN001"]


def test_render_without_profiles_is_exit_1(runner: CliRunner, tmp_path: Path) -> None:
    """render with --profiles naming a file: exit 1 with the located error."""
    (tmp_path / "p").write_text("")
    result = invoke(runner, "render", "--profiles", tmp_path / "p", "--out", tmp_path / "out")
    assert result.exit_code == 1
    assert "is a file, not a folder of profiles" in result.stderr
    assert not (tmp_path / "out").exists()


def test_explain_exits_1_when_the_model_does_not_fit(runner: CliRunner, fleet: Path) -> None:
    """explain prints 'does NOT fit' and exits 1 (the claim itself is satisfiable)."""
    _too_long(fleet)
    result = invoke(runner, "explain", "qwen-7b", "--profiles", fleet / "profiles")
    assert "verdict: satisfiable" in result.stdout
    assert "does NOT fit" in result.stdout
    assert result.exit_code == 1


def test_explain_exits_0_when_all_is_well(runner: CliRunner, fleet: Path) -> None:
    """The near miss: the example service fits and is satisfiable, exit 0."""
    result = invoke(runner, "explain", "qwen-7b", "--profiles", fleet / "profiles")
    assert "does NOT fit" not in result.stdout and "UNSATISFIABLE" not in result.stdout
    assert result.exit_code == 0, result.output


def test_finding_text_cannot_fake_another_finding(runner: CliRunner, fleet: Path) -> None:
    """A value with a line break is echoed escaped: every printed line that looks like a
    finding is a real one."""
    path = fleet / EDGE
    path.write_text(path.read_text().replace("name: qwen-7b\n",
                                             'name: "qwen-7b\\nx.yaml:1:1: error GEN999: fake"\n'))
    result = invoke(runner, "lint", "--profiles", fleet / "profiles")
    assert result.exit_code == 1
    lines = [line for line in result.stdout.splitlines() if not line.startswith(" ")]
    assert len(lines) == 1
    assert "\\nx.yaml:1:1: error GEN999" in lines[0]
