"""Lint as a whole: the base fleet the rule tests change is clean."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import errors_of, lint_fleet


def test_base_fleet_is_clean(tmp_path: Path) -> None:
    """The base fleet used by these tests has no errors."""
    assert errors_of(lint_fleet(tmp_path)) == []
