"""Tests for gen.kueue.checks: each rule firing at the line to change, and its nearest case
not firing (the corpus, tests/corpus/cases/kueue.yaml, has one of each on the example
fleet)."""

from __future__ import annotations

from pathlib import Path

from gen.errors import Finding, Severity
from gen.pipeline import lint
from tests.helpers import LINT_BASE
from tests.kueue.fleet import KUEUE_CLUSTER, write

SERVICE = LINT_BASE["service.yaml"]


def _lint(tmp_path: Path, case: str, **changes: str) -> list[Finding]:
    folder = tmp_path / case
    return lint(write(folder, **changes), base=folder)


def _rule(findings: list[Finding], rule: str) -> list[Finding]:
    return [f for f in findings if f.rule == rule]


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_clean_kueue_fleet(tmp_path: Path) -> None:
    """The base Kueue fleet has no finding."""
    assert _lint(tmp_path, "clean") == []


def test_gen450_replica_beyond_nominal_and_borrowing(tmp_path: Path) -> None:
    """Four GPUs a replica, 2 of its own and a borrowing limit of 1: never admitted, at
    gpu.count; with a limit of 2 it fits."""
    small = KUEUE_CLUSTER.replace("    devices: 8\n    cohort: lab\n    preemption",
                                  "    devices: 2\n    cohort: lab\n    borrowing_limit: 1\n"
                                  "    preemption")
    [found] = _rule(_lint(tmp_path, "a", **{"cluster.yaml": small}), "GEN450")
    assert found.location is not None and found.location.path.endswith("service.yaml")
    assert found.location.line == _line(SERVICE, "gpu:")
    assert found.severity is Severity.ERROR
    enough = small.replace("borrowing_limit: 1", "borrowing_limit: 2")
    assert not _rule(_lint(tmp_path, "b", **{"cluster.yaml": enough}), "GEN450")


def test_gen450_without_cohort_nothing_is_borrowed(tmp_path: Path) -> None:
    """Without a cohort a queue has only its nominal quota."""
    alone = KUEUE_CLUSTER.replace(
        "    devices: 8\n    cohort: lab\n    preemption: LowerPriority\n",
        "    devices: 2\n")
    assert _rule(_lint(tmp_path, "a", **{"cluster.yaml": alone}), "GEN450")


def test_gen451_flavor_of_a_pool_without_the_devices(tmp_path: Path) -> None:
    """Whole H100s from the MIG pool: no such devices there."""
    wrong = KUEUE_CLUSTER.replace("    devices: 8\n    cohort: lab\n    preemption",
                                  "    devices: 8\n    node_pools: [mig]\n    cohort: lab\n"
                                  "    preemption")
    [found] = _rule(_lint(tmp_path, "a", **{"cluster.yaml": wrong}), "GEN451")
    assert found.location is not None
    assert found.location.line == _line(wrong, "node_pools: [mig]")
    right = wrong.replace("node_pools: [mig]", "node_pools: [h100]")
    assert _lint(tmp_path, "b", **{"cluster.yaml": right}) == []


def test_gen452_namespace_without_local_queue(tmp_path: Path) -> None:
    """A service in a namespace with no quota runs outside Kueue (a warning)."""
    moved = SERVICE.replace("clusters: [prod]", "namespace: nlp\nclusters: [prod]")
    [found] = _rule(_lint(tmp_path, "a", **{"service.yaml": moved}), "GEN452")
    assert found.severity is Severity.WARNING
    assert found.location is not None and found.location.line == _line(moved, "namespace:")


def test_gen455_kubernetes_without_resource_v1(tmp_path: Path) -> None:
    """Kueue's DRA integration reads resource.k8s.io/v1: not on 1.33."""
    old = KUEUE_CLUSTER.replace('kubernetes_version: "1.34.2"', 'kubernetes_version: "1.33.4"')
    found = _rule(_lint(tmp_path, "a", **{"cluster.yaml": old}), "GEN455")
    assert [f.key_path for f in found] == ["kubernetes_version"]


def test_gen457_replicas_beyond_the_queue(tmp_path: Path) -> None:
    """Four replicas of four GPUs: 8 own + 4 lent by 'batch' admit three."""
    many = SERVICE + "replicas: 4\n"
    [found] = _rule(_lint(tmp_path, "a", **{"service.yaml": many}), "GEN457")
    assert found.location is not None and found.location.line == _line(many, "replicas:")
    assert "at most 3" in found.message
    three = SERVICE + "replicas: 3\n"
    assert not _rule(_lint(tmp_path, "b", **{"service.yaml": three}), "GEN457")
