"""docs/quotas.md stays true: its example fleet renders the ClusterQueue it shows, and the
variant it describes (four replicas) gives the finding it shows."""

from __future__ import annotations

import re
from pathlib import Path

from gen.pipeline import lint, render
from tests.helpers import REPO

DOC = (REPO / "docs" / "quotas.md").read_text(encoding="utf-8")


def _block(marker: str, lang: str = "yaml") -> str:
    match = re.search(re.escape(marker) + rf"\n```{lang}\n(.*?)```", DOC, re.DOTALL)
    assert match is not None, marker
    return match.group(1)


def _profiles(tmp_path: Path, text: str) -> Path:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "fleet.yaml").write_text(text)
    return profiles


def test_example_renders_the_cluster_queue_shown(tmp_path: Path) -> None:
    """The profile renders, clean, to exactly the ClusterQueue the page shows."""
    profiles = _profiles(tmp_path, _block("<!-- quotas-profile -->"))
    assert lint(profiles, base=tmp_path) == []
    marker = re.search(r"<!-- quotas-output: (\S+) -->", DOC)
    assert marker is not None
    render(profiles, tmp_path / "out", base=tmp_path, validator="embedded")
    produced = (tmp_path / "out" / marker.group(1)).read_text()
    assert produced == _block(marker.group(0))


def test_four_replicas_give_the_finding_shown(tmp_path: Path) -> None:
    """With four replicas, lint reports the GEN457 line the page shows, and nothing else."""
    text = _block("<!-- quotas-profile -->")
    assert "replicas: 3\n" in text
    profiles = _profiles(tmp_path, text.replace("replicas: 3\n", "replicas: 4\n"))
    [found] = lint(profiles, base=tmp_path)
    shown = _block("<!-- quotas-lint -->", "").strip()
    assert found.format().splitlines()[0] == shown
