"""Consumer check: ``kubectl kustomize out/<cluster>`` builds every object gen rendered."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gen.fleet.plan import BOOTSTRAP_DIR
from gen.pipeline import load_plan, render
from tests.helpers import copy_fleet

KUBECTL = shutil.which("kubectl")

pytestmark = [
    pytest.mark.slow,  # kubectl builds of every folder of a whole-fleet render
    pytest.mark.skipif(
        KUBECTL is None, reason="kubectl is not installed: 'kubectl kustomize' cannot be checked"
    ),
]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh render of a copy of the example fleet; returns the fleet root."""
    root = copy_fleet(tmp_path_factory.mktemp("kustomize"))
    render(root / "profiles", root / "out", validator="embedded", base=root)
    return root


def _clusters(root: Path) -> list[str]:
    return sorted(c.name for c in load_plan(root / "profiles", base=root).clusters)


def _kustomize(folder: Path) -> list[dict[str, object]]:
    assert KUBECTL is not None
    result = subprocess.run(
        [KUBECTL, "kustomize", str(folder)],
        capture_output=True, text=True, check=False, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d is not None]


def _rendered(out: Path, cluster: str) -> list[dict[str, object]]:
    return [
        yaml.safe_load(p.read_text("utf-8"))
        for p in sorted((out / cluster).rglob("*.yaml"))
        if p.name != "kustomization.yaml"
    ]


def test_every_cluster_builds_with_all_its_objects(fleet: Path) -> None:
    """kubectl kustomize out/<cluster> yields exactly the objects gen rendered there."""
    clusters = _clusters(fleet)
    assert clusters
    for cluster in clusters:
        built = _kustomize(fleet / "out" / cluster)
        rendered = _rendered(fleet / "out", cluster)
        assert len(built) == len(rendered), cluster

        def key(obj: dict[str, object]) -> tuple[str, str, str]:
            meta = obj["metadata"]
            assert isinstance(meta, dict)
            return (str(obj["kind"]), str(meta.get("namespace", "")), str(meta["name"]))

        assert sorted(map(key, built)) == sorted(map(key, rendered)), cluster


def test_every_stage_folder_builds_alone(fleet: Path) -> None:
    """Each stage folder a Flux Kustomization points at builds on its own."""
    for cluster in _clusters(fleet):
        for stage in sorted((fleet / "out" / cluster).iterdir()):
            if stage.is_dir():
                assert _kustomize(stage), f"{cluster}/{stage.name} builds no object"


def test_bootstrap_folders_are_not_kustomize_roots(fleet: Path) -> None:
    """No kustomization.yaml is written into out/_bootstrap (it is applied, not synced)."""
    assert not list((fleet / "out" / BOOTSTRAP_DIR).rglob("kustomization.yaml"))
