"""Tests for gen.gitops.provenance: out/_meta/<cluster>/provenance.json."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gen.gitops.provenance import git_blob_id
from gen.pipeline import render
from tests.helpers import copy_fleet, snapshot_tree


def test_git_blob_id_is_gits() -> None:
    """The id of the empty blob and of a small one, as Git computes them."""
    assert git_blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    assert git_blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_blob_ids_match_git_hash_object(tmp_path: Path) -> None:
    """Every profile a cluster came from is listed with the id `git hash-object` prints."""
    root = copy_fleet(tmp_path)
    render(root / "profiles", root / "out", validator="embedded", base=root)
    data = json.loads((root / "out/_meta/prod-us-east/provenance.json").read_text("utf-8"))
    assert data["cluster"] == "prod-us-east"
    assert data["command"] == "gen render --cluster prod-us-east"
    assert "profiles/services/llama-70b.yaml" in data["profiles"]
    for path, blob in data["profiles"].items():
        expected = subprocess.run(["git", "hash-object", str(root / path)], check=True,
                                  capture_output=True, text=True).stdout.strip()
        assert blob == expected, path


def test_stable_across_renders_and_changed_by_any_byte(tmp_path: Path) -> None:
    """Two renders of the same inputs write the same bytes; a comment-only profile edit
    (no change to any object) still updates the provenance, through the render cache."""
    root = copy_fleet(tmp_path)
    render(root / "profiles", root / "out", validator="embedded", base=root)
    first = snapshot_tree(root / "out")
    render(root / "profiles", root / "out", validator="embedded", base=root, no_cache=True)
    assert snapshot_tree(root / "out") == first
    service = root / "profiles/services/qwen-32b.yaml"
    service.write_text(service.read_text("utf-8") + "# a comment\n", encoding="utf-8")
    render(root / "profiles", root / "out", validator="embedded", base=root)
    after = snapshot_tree(root / "out")
    changed = {p for p in after if after[p] != first.get(p)}
    # (and the fleet record, which hashes every input byte, and the trust list, which
    # vouches for the new record)
    assert changed == {"_meta/research-eu/provenance.json", ".gen-cache/research-eu.json",
                       ".gen-cache/_fleet.json", ".gen-cache/_trust.json"}
    render(root / "profiles", root / "out", validator="embedded", base=root, check=True,
           no_cache=True)  # what the cache kept is what a full render writes
