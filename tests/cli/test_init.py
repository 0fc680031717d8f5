"""gen init: a new fleet in an absent, empty or freshly 'git init'-ed folder, and next steps
that run as written."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from gen.cli import cli
from gen.cli._init import gen_command
from tests.helpers import REPO


def _init(runner: CliRunner, directory: Path) -> tuple[int, str, str]:
    result = runner.invoke(cli, ["init", str(directory)])
    assert "Traceback" not in result.output
    return result.exit_code, result.stdout, result.stderr


def test_init_in_a_new_git_repository(runner: CliRunner, tmp_path: Path) -> None:
    """A folder holding only .git (what 'git init' leaves) is a new fleet: init writes it."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    code, out, err = _init(runner, tmp_path)
    assert code == 0, err
    assert (tmp_path / "profiles").is_dir() and (tmp_path / "schema").is_dir()
    assert "Next:" in out


def test_init_refuses_a_folder_with_content(runner: CliRunner, tmp_path: Path) -> None:
    """The near miss: any other entry makes the folder not empty; it is named."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    code, _, err = _init(runner, tmp_path)
    assert code == 1
    assert "not empty (notes.txt)" in err
    assert not (tmp_path / "profiles").exists()


def test_next_steps_run_as_written(runner: CliRunner, tmp_path: Path) -> None:
    """The printed next step is a shell command that works without an activated venv: run
    it as printed, from the folder init was run in."""
    code, out, _ = _init(runner, tmp_path / "fleet")
    assert code == 0
    step = out.splitlines()[-1].strip()
    assert not step.split("&&")[1].strip().startswith("gen ")  # no bare 'gen' off PATH
    env = {**os.environ, "PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(["bash", "-c", step], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "fleet" / "out").is_dir()


@pytest.mark.parametrize("on_path", [True, False])
def test_gen_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, on_path: bool) -> None:
    """'gen' only when the gen on PATH is the one running; else the running script's path."""
    script = tmp_path / "bin" / "gen"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    monkeypatch.setattr("sys.argv", [str(script), "init", "x"])
    monkeypatch.setenv("PATH", str(script.parent) if on_path else "/nonexistent")
    assert gen_command() == ("gen" if on_path else str(script))
