"""Determinism: the same profiles render to the same bytes whatever the process environment.

Renders run as subprocesses (``python -m gen render``) so that PYTHONHASHSEED, TZ, LANG and
the working directory really differ between the runs.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import copy_fleet, snapshot_tree

pytestmark = pytest.mark.slow  # whole-fleet renders in fresh interpreters

ENV_A = {"PYTHONHASHSEED": "1", "TZ": "UTC", "LANG": "C", "LC_ALL": "C"}
ENV_B = {"PYTHONHASHSEED": "4242", "TZ": "Pacific/Chatham", "LANG": "de_DE.UTF-8",
         "LC_ALL": "de_DE.UTF-8"}


def _gen_render(cwd: Path, profiles: Path, out: Path, env: dict[str, str]) -> dict[str, bytes]:
    full = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "PYTHONHASH"))}
    full.update(env)
    proc = subprocess.run(
        [sys.executable, "-m", "gen", "render", "--profiles", str(profiles), "--out", str(out),
         "--validator", "embedded", "-q"],
        cwd=cwd, env=full, capture_output=True, text=True, check=False, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return snapshot_tree(cwd / out if not out.is_absolute() else out)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The example fleet rendered from its own root with environment A."""
    root = copy_fleet(tmp_path_factory.mktemp("a") / "fleet")
    return _gen_render(root, Path("profiles"), Path("out"), ENV_A)


def _differences(a: dict[str, bytes], b: dict[str, bytes]) -> list[str]:
    """Paths that differ, each with its first differing line pair."""
    out = []
    for path in sorted(set(a) | set(b)):
        if a.get(path) == b.get(path):
            continue
        old = (a.get(path) or b"<missing>").decode("utf-8", "replace").splitlines()
        new = (b.get(path) or b"<missing>").decode("utf-8", "replace").splitlines()
        first = next(((x, y) for x, y in zip(old, new, strict=False) if x != y), ("", ""))
        out.append(f"{path}: {first[0]!r} != {first[1]!r}")
    return out


def test_same_bytes_across_hash_seed_time_zone_and_locale(
    tmp_path: Path, baseline: dict[str, bytes]
) -> None:
    """Another copy rendered with another PYTHONHASHSEED, TZ and LANG is byte-identical."""
    root = copy_fleet(tmp_path / "fleet")
    tree = _gen_render(root, Path("profiles"), Path("out"), ENV_B)
    assert len(tree) > 10
    assert _differences(baseline, tree) == []


def test_same_bytes_from_another_working_directory(
    tmp_path: Path, baseline: dict[str, bytes]
) -> None:
    """Rendering from an unrelated working directory (absolute paths) is byte-identical."""
    root = copy_fleet(tmp_path / "fleet")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    tree = _gen_render(elsewhere, root / "profiles", root / "out", ENV_B)
    assert _differences(baseline, tree) == []
    assert list(elsewhere.iterdir()) == []
