"""``gen mig check`` through click's CliRunner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gen.cli import cli


@pytest.fixture
def runner() -> CliRunner:
    """A click test runner."""
    return CliRunner()


def test_valid_layout_json(runner: CliRunner) -> None:
    """A valid layout exits 0 with placements in JSON."""
    result = runner.invoke(
        cli,
        ["mig", "check", "--gpu", "0x233010DE", "--json", "1g.10gb=2", "2g.20gb=1", "3g.40gb=1"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["gpu"] == "h100-sxm5-80gb"
    assert data["valid"] is True
    assert {p["profile"] for p in data["placements"]} == {"1g.10gb", "2g.20gb", "3g.40gb"}


def test_invalid_layout_json(runner: CliRunner) -> None:
    """An invalid layout exits 1 with valid false and the errors."""
    result = runner.invoke(
        cli, ["mig", "check", "--gpu", "h100-sxm5-80gb", "--json", "3g.40gb=2", "1g.10gb=1"]
    )
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["valid"] is False
    assert any(e.startswith("placement:") for e in data["errors"])


def test_text_output(runner: CliRunner) -> None:
    """Without --json a short placement table is printed."""
    result = runner.invoke(
        cli, ["mig", "check", "--gpu", "NVIDIA A30", "4g.24gb=1"], catch_exceptions=False
    )
    assert result.exit_code == 0
    assert "valid" in result.stdout
    assert "4g.24gb" in result.stdout and "START" in result.stdout


def test_text_output_invalid(runner: CliRunner) -> None:
    """Without --json an invalid layout prints its errors and exits 1."""
    result = runner.invoke(cli, ["mig", "check", "--gpu", "a30", "4g.24gb=2"])
    assert result.exit_code == 1
    assert "error: max-count" in result.stdout


def test_unknown_gpu(runner: CliRunner) -> None:
    """An unknown GPU exits 1 with the message (and JSON when asked)."""
    result = runner.invoke(cli, ["mig", "check", "--gpu", "h100-sxm5", "1g.10gb=1"])
    assert result.exit_code == 1
    assert "unknown GPU 'h100-sxm5'" in result.stderr
    result = runner.invoke(cli, ["mig", "check", "--gpu", "h100-sxm5", "--json", "1g.10gb=1"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["valid"] is False


@pytest.mark.parametrize("arg", ["1g.10gb", "1g.10gb=x", "nonsense=1"])
def test_bad_syntax_is_usage_error(runner: CliRunner, arg: str) -> None:
    """Malformed PROFILE=COUNT arguments exit 2."""
    result = runner.invoke(cli, ["mig", "check", "--gpu", "h100-sxm5-80gb", arg])
    assert result.exit_code == 2
    assert "PROFILE=COUNT" in result.stderr


def test_missing_layout_is_usage_error(runner: CliRunner) -> None:
    """No PROFILE=COUNT at all exits 2."""
    assert runner.invoke(cli, ["mig", "check", "--gpu", "a30"]).exit_code == 2


def test_driver_option(runner: CliRunner) -> None:
    """--driver enforces driver minimums."""
    args = ["mig", "check", "--gpu", "a100-sxm4-40gb", "--json", "1g.10gb=1"]
    assert runner.invoke(cli, [*args, "--driver", "470.82.01"]).exit_code == 1
    assert runner.invoke(cli, [*args, "--driver", "570.124.06"]).exit_code == 0


def test_svg_written(runner: CliRunner, tmp_path: Path) -> None:
    """--svg writes the picture of the layout."""
    out = tmp_path / "layout.svg"
    result = runner.invoke(
        cli,
        ["mig", "check", "--gpu", "b200", "--svg", str(out), "1g.23gb=7"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0
    assert out.read_text(encoding="utf-8").count(">1g.23gb<") == 7
