"""GEN330: replicas on a device-plugin cluster that cannot all run at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from gen.errors import Finding
from tests.helpers import LINT_BASE, lint_fleet

DEVICE_PLUGIN = LINT_BASE["cluster.yaml"].replace('"1.34.2"', '"1.31.6"').replace(
    "allocation: dra", "allocation: device-plugin")
"""16 whole H100s (2 nodes × 8) and one MIG node (mixed layout), through the device plugin."""


def _capacity(tmp_path: Path, service: str, cluster: str = DEVICE_PLUGIN) -> list[Finding]:
    findings = lint_fleet(tmp_path, **{"cluster.yaml": cluster, "service.yaml": service})
    return [f for f in findings if f.rule == "GEN330"]


def _service(gpu: str, replicas: int, name: str = "llama-70b") -> str:
    return LINT_BASE["service.yaml"].replace(
        "gpu: {gpu_class: h100, count: 4}", f"gpu: {gpu}\nreplicas: {replicas}").replace(
        "name: llama-70b", f"name: {name}").replace("parallelism: {tensor: 4}\n", "")


@pytest.mark.parametrize(("count", "replicas", "fires"), [
    (1, 16, False), (1, 17, True), (4, 4, False), (4, 5, True), (8, 2, False), (8, 3, True),
])
def test_whole_gpus(tmp_path: Path, count: int, replicas: int, fires: bool) -> None:
    """16 H100s on 2 nodes of 8: 16 one-GPU replicas fit, 17 do not; 8-GPU replicas need a
    node each. The finding is at the service's replicas line, the pool as related."""
    service = _service(f"{{gpu_class: h100, count: {count}}}", replicas)
    found = _capacity(tmp_path, service)
    assert bool(found) is fires
    if fires:
        (finding,) = found
        assert finding.key_path == "replicas"
        lines = service.splitlines()
        assert finding.location is not None
        assert lines[finding.location.line - 1] == f"replicas: {replicas}"
        assert [r.note for r in finding.related] == ["pool 'h100': 2 node(s) × 8 nvidia.com/gpu"]


def test_mig_slices_are_their_own_resource(tmp_path: Path) -> None:
    """Under the mixed strategy the MIG node advertises nvidia.com/mig-3g.40gb × 8 (one per
    GPU): 8 replicas fit, 9 do not."""
    for replicas, fires in ((8, False), (9, True)):
        service = _service("{gpu_class: mig-3g}", replicas)
        service = service.replace("meta-llama/Llama-3.1-70B-Instruct",
                                  "meta-llama/Llama-3.2-3B-Instruct")
        (tmp_path / str(replicas)).mkdir()
        found = _capacity(tmp_path / str(replicas), service)
        assert bool(found) is fires, found
        if fires:
            assert "nvidia.com/mig-3g.40gb" in found[0].message


def test_services_share_the_gpus(tmp_path: Path) -> None:
    """Two services that each fit alone but not together: the second one is named."""
    files = {"cluster.yaml": DEVICE_PLUGIN,
             "service.yaml": _service("{gpu_class: h100, count: 1}", 10, "a-first"),
             "classes.yaml": LINT_BASE["classes.yaml"]}
    root = tmp_path / "profiles"
    root.mkdir()
    for name, text in {**LINT_BASE, **files}.items():
        (root / name).write_text(text)
    (root / "second.yaml").write_text(_service("{gpu_class: h100, count: 1}", 10, "b-second"))
    from gen.pipeline import lint

    (finding,) = [f for f in lint(root, base=tmp_path) if f.rule == "GEN330"]
    assert finding.service == "b-second"
    assert "other services take the rest" in finding.message


def test_dra_clusters_are_not_checked_here(tmp_path: Path) -> None:
    """The near miss: on a DRA cluster the claim capacity rule (GEN205) applies instead."""
    service = _service("{gpu_class: h100, count: 1}", 17)
    assert _capacity(tmp_path, service, LINT_BASE["cluster.yaml"]) == []
