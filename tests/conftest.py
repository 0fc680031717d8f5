"""Shared pytest configuration: the ``--update-golden`` option and the ``runner`` fixture."""

from __future__ import annotations

import pytest
from click.testing import CliRunner


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--update-golden`` (rewrite the repo's out/ instead of comparing)."""
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite the committed out/ with 'gen render' instead of comparing with it.",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True when the run was started with ``--update-golden``."""
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def runner() -> CliRunner:
    """A click CliRunner (stdout and stderr kept apart, click >= 8.2)."""
    return CliRunner()
