"""Fixtures the render-cache tests of this folder share."""

from __future__ import annotations

from pathlib import Path

import pytest

from gen.pipeline import render
from tests.helpers import copy_fleet


@pytest.fixture
def stat_rendered(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example fleet rendered as a large one is: with the wait before the swap, so the
    stat table vouches for every file."""
    from gen.emit import output

    monkeypatch.setattr(output, "SLEEP_BEFORE_SWAP_FILES", 0)
    root = copy_fleet(tmp_path / "fleet")
    render(root / "profiles", root / "out", base=root, validator="embedded")
    return root
