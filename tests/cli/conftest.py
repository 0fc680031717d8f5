"""Fixtures of the CLI tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import copy_fleet


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    """A scratch copy of the example fleet."""
    return copy_fleet(tmp_path / "fleet")
