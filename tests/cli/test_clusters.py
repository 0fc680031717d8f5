"""Tests for the `gen clusters` command (CI fan-out)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from gen.cli import cli
from gen.pipeline import render
from tests.helpers import copy_fleet


def _clusters(root: Path) -> dict[str, dict[str, object]]:
    result = CliRunner().invoke(
        cli, ["clusters", "--profiles", str(root / "profiles"), "--json"],
        catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["version"] == 1
    return {row["name"]: row for row in data["clusters"]}


def test_names_and_the_render_caches_fingerprints(tmp_path: Path) -> None:
    """Every cluster, in name order, with the fingerprint the render cache records for it."""
    root = copy_fleet(tmp_path)
    cwd = Path.cwd()
    os.chdir(root)  # the paths shown in the output are relative to the fleet repository
    try:
        rows = _clusters(root)
        render(root / "profiles", root / "out", validator="embedded")
    finally:
        os.chdir(cwd)
    assert list(rows) == sorted(p.stem for p in (root / "profiles/clusters").glob("*.yaml"))
    for name, row in rows.items():
        record = json.loads((root / "out/.gen-cache" / f"{name}.json").read_text("utf-8"))
        assert row["fingerprint"] == record["fingerprint"], name
        assert row["env"] == record["env"], name
    assert rows["prod-us-east"]["engine"] == "argocd"
    assert rows["prod-us-east"]["wave"] == 1


def test_a_change_moves_only_its_clusters_fingerprints(tmp_path: Path) -> None:
    """Editing a service changes the fingerprints of the clusters it runs in, only."""
    root = copy_fleet(tmp_path)
    before = _clusters(root)
    service = root / "profiles/services/qwen-32b.yaml"
    service.write_text(service.read_text("utf-8").replace("replicas: 1\n", "replicas: 2\n"),
                       encoding="utf-8")
    after = _clusters(root)
    changed = {n for n in before if before[n]["fingerprint"] != after[n]["fingerprint"]}
    assert changed == {"research-eu"}


def test_text_output_is_one_line_per_cluster(tmp_path: Path) -> None:
    """Without --json: name, a tab, the fingerprint."""
    root = copy_fleet(tmp_path)
    result = CliRunner().invoke(cli, ["clusters", "--profiles", str(root / "profiles")],
                                catch_exceptions=False)
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert [line.split("\t")[0] for line in lines] == sorted(_clusters(root))
    assert all(len(line.split("\t")[1]) == 64 for line in lines)
