"""Golden test: the example fleet renders exactly to the committed out/.

The example fleet (profiles/ and schema/) is copied to a temporary folder and rendered
there; the result must equal the repository's out/ byte for byte, the index file
``out/.gen-files`` included (the render cache ``out/.gen-cache/`` is not compared: see
below). On a mismatch the test lists missing and extra files and the
first lines of a unified diff of the files that differ.

After an intended change, regenerate the committed render and review it::

    .venv/bin/pytest tests/test_golden.py --update-golden
    git diff out/

With ``--update-golden`` the test runs ``gen render`` in the repository root (so out/ is
rewritten by the same code path users run) instead of comparing.
"""

from __future__ import annotations

import difflib
import subprocess
import sys
from pathlib import Path

import pytest

from gen.pipeline import render
from tests.helpers import REPO, copy_fleet, snapshot_tree

DIFF_LINES = 60


def _describe(expected: dict[str, bytes], actual: dict[str, bytes]) -> str:
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    differ = sorted(p for p in set(expected) & set(actual) if expected[p] != actual[p])
    report = []
    if missing:
        report.append("missing from the render (committed only):\n  " + "\n  ".join(missing))
    if extra:
        report.append("extra in the render (not committed):\n  " + "\n  ".join(extra))
    diff: list[str] = []
    for rel in differ:
        diff.extend(difflib.unified_diff(
            expected[rel].decode("utf-8", "replace").splitlines(),
            actual[rel].decode("utf-8", "replace").splitlines(),
            fromfile=f"out/{rel} (committed)", tofile=f"out/{rel} (rendered)", lineterm="",
        ))
    if differ:
        report.append(f"{len(differ)} file(s) differ:\n" + "\n".join(diff[:DIFF_LINES]))
    report.append("if the change is intended: pytest tests/test_golden.py --update-golden")
    return "\n\n".join(report)


def _without_cache(tree: dict[str, bytes]) -> dict[str, bytes]:
    return {rel: data for rel, data in tree.items() if not rel.startswith(".gen-cache/")}


def test_example_fleet_matches_committed_out(tmp_path: Path, update_golden: bool) -> None:
    """Rendering the example fleet reproduces the committed out/ byte for byte."""
    if update_golden:
        proc = subprocess.run(
            [sys.executable, "-m", "gen", "render", "--validator", "embedded"],
            cwd=REPO, capture_output=True, text=True, check=False,
        )
        assert proc.returncode == 0, proc.stderr
        return
    root = copy_fleet(tmp_path / "fleet")
    overrides = REPO / "templates"
    render(root / "profiles", root / "out", base=root, validator="embedded",
           templates_dir=overrides if overrides.is_dir() else None)
    # The render cache (out/.gen-cache/) is left out: its fingerprints name the versions
    # of gen's libraries installed here, and a stale record only costs a render
    # (tests/emit/test_render_cache.py pins that the records are deterministic).
    expected = _without_cache(snapshot_tree(REPO / "out"))
    actual = _without_cache(snapshot_tree(root / "out"))
    if actual != expected:
        pytest.fail(_describe(expected, actual), pytrace=False)
