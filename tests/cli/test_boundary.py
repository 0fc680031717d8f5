"""gen.cli._boundary: the one place where results and GenErrors become exit codes."""

from __future__ import annotations

import ast
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from gen.cli._boundary import handle_errors
from gen.errors import Finding, GenError, UnresolvedReferenceError
from tests.helpers import REPO


def _command(outcome: int | GenError | click.UsageError | None) -> click.Command:
    @click.command()
    @handle_errors
    def command() -> int | None:
        click.echo("out")
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    return command


@pytest.mark.parametrize(("outcome", "code"), [(None, 0), (0, 0), (1, 1)])
def test_returned_code_is_the_exit_code(outcome: int | None, code: int) -> None:
    """A command's return value is its exit code; None is 0."""
    result = CliRunner().invoke(_command(outcome))
    assert (result.exit_code, result.stdout) == (code, "out\n")


def test_gen_error_is_its_message_and_exit_code() -> None:
    """A GenError prints its findings and message on stderr and exits with its code."""
    err = UnresolvedReferenceError("1 unresolved reference(s)",
                                   findings=[Finding("GEN003", "x not found")])
    result = CliRunner().invoke(_command(err))
    assert result.exit_code == GenError.exit_code == 1
    assert result.stderr == "error GEN003: x not found\n1 unresolved reference(s)\n"
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_usage_errors_keep_exit_2() -> None:
    """click's usage errors pass through the boundary: exit 2, click's message."""
    result = CliRunner().invoke(_command(click.UsageError("give a SERVICE")))
    assert result.exit_code == 2
    assert "Error: give a SERVICE" in result.stderr


def _exits(path: Path) -> list[str]:
    """Calls that end the process: sys.exit, ctx.exit, click's Exit, SystemExit."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        target = node.func if isinstance(node, ast.Call) else None
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = exc.attr if isinstance(exc, ast.Attribute) else getattr(exc, "id", "")
            if name in {"Exit", "SystemExit"}:
                found.append(f"{path.name}:{node.lineno}")
        elif isinstance(target, ast.Attribute) and target.attr in {"exit", "_exit", "abort"}:
            found.append(f"{path.name}:{target.lineno}")
    return found


def test_only_the_boundary_exits() -> None:
    """No module of gen/ but the CLI boundary ends the process."""
    exits = [e for p in sorted((REPO / "gen").rglob("*.py")) if p.name != "_boundary.py"
             for e in _exits(p)]
    assert exits == []
    assert _exits(REPO / "gen" / "cli" / "_boundary.py")
