"""Tests for gen.gitops.checks: GEN700–GEN703, each firing at the line to change and its
nearest case not firing."""

from __future__ import annotations

from pathlib import Path

from gen.errors import Finding
from tests.helpers import LINT_BASE, errors_of, lint_fleet

CLUSTER = LINT_BASE["cluster.yaml"]
SERVICE = LINT_BASE["service.yaml"]


def _rule(findings: list[Finding], rule: str) -> list[Finding]:
    return [f for f in errors_of(findings) if f.rule == rule]


def _lint(tmp_path: Path, case: str, **changes: str) -> list[Finding]:
    folder = tmp_path / case
    folder.mkdir()
    return lint_fleet(folder, **changes)


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_gen700_service_monitors_without_prometheus_operator(tmp_path: Path) -> None:
    """Asking for ServiceMonitors without declaring the Prometheus Operator is an error at
    the setting; declaring it, or leaving the default (nothing rendered), is not."""
    asked = CLUSTER.replace("allocation: dra\n", "allocation: dra\nmonitoring:\n"
                            "  service_monitors: true\n")
    [finding] = _rule(_lint(tmp_path, "a", **{"cluster.yaml": asked}), "GEN700")
    assert finding.location is not None
    assert finding.location.path.endswith("cluster.yaml")
    assert finding.location.line == _line(asked, "service_monitors")
    declared = asked.replace("monitoring:\n", "addons: [prometheus-operator]\nmonitoring:\n")
    assert not _rule(_lint(tmp_path, "b", **{"cluster.yaml": declared}), "GEN700")
    assert not _rule(_lint(tmp_path, "c"), "GEN700")


def test_gen701_autoscaling_without_keda(tmp_path: Path) -> None:
    """An autoscaled service on a cluster without KEDA is an error at its autoscaling."""
    scaled = SERVICE + "autoscaling: {min_replicas: 1, max_replicas: 2}\n"
    [finding] = _rule(_lint(tmp_path, "a", **{"service.yaml": scaled}), "GEN701")
    assert finding.location is not None
    assert finding.location.path.endswith("service.yaml")
    assert finding.location.line == _line(scaled, "autoscaling")
    keda = CLUSTER.replace("allocation: dra\n", "allocation: dra\naddons: [keda]\n")
    assert not _rule(_lint(tmp_path, "b", **{"service.yaml": scaled,
                                                   "cluster.yaml": keda}), "GEN701")


STORAGE = """\
storage:
  classes:
    - {name: gp3, access_modes: [ReadWriteOnce]}
    - {name: cephfs, access_modes: [ReadWriteOnce, ReadWriteMany]}
"""


def test_gen702_rwx_on_a_class_that_cannot(tmp_path: Path) -> None:
    """Two replicas on a ReadWriteOnce-only class: an error at the service's storage_class;
    the same replicas on a class with ReadWriteMany, or one replica, are fine."""
    cluster = CLUSTER.replace("allocation: dra\n", "allocation: dra\n" + STORAGE)
    two = SERVICE + "replicas: 2\nstorage: {storage_class: gp3}\n"
    [finding] = _rule(_lint(tmp_path, "a", **{"cluster.yaml": cluster,
                                                    "service.yaml": two}), "GEN702")
    assert finding.location is not None
    assert finding.location.line == _line(two, "storage_class")
    assert "ReadWriteMany" in finding.message
    fine = two.replace("gp3", "cephfs")
    assert not _rule(_lint(tmp_path, "b", **{"cluster.yaml": cluster,
                                                   "service.yaml": fine}), "GEN702")
    one = two.replace("replicas: 2\n", "replicas: 1\n")
    assert not _rule(_lint(tmp_path, "c", **{"cluster.yaml": cluster,
                                                   "service.yaml": one}), "GEN702")


def test_gen702_default_class_and_explicit_mode(tmp_path: Path) -> None:
    """The cluster's model_cache_class counts; an explicit access_mode is pointed at."""
    cluster = CLUSTER.replace("allocation: dra\n", "allocation: dra\n" + STORAGE.replace(
        "storage:\n", "storage:\n  model_cache_class: gp3\n"))
    explicit = SERVICE + "storage: {access_mode: ReadWriteMany}\n"
    [finding] = _rule(_lint(tmp_path, "a", **{"cluster.yaml": cluster,
                                                    "service.yaml": explicit}), "GEN702")
    assert finding.location is not None
    assert finding.location.line == _line(explicit, "access_mode")
    # A class the cluster does not describe is not judged.
    undeclared = explicit.replace("storage: {access_mode", "storage: {storage_class: nfs, "
                                    "access_mode")
    assert not _rule(_lint(tmp_path, "b", **{"cluster.yaml": cluster,
                                                   "service.yaml": undeclared}), "GEN702")


def _argo(name: str, mode: str) -> str:
    return CLUSTER.replace("name: prod\n", f"name: {name}\n").replace(
        "allocation: dra\n",
        "allocation: dra\ngitops:\n  engine: argocd\n"
        f"  repo_url: https://github.com/org/fleet.git\n  fleet_mode: {mode}\n")


def test_gen703_one_root_one_fleet_mode(tmp_path: Path) -> None:
    """Clusters of one Argo CD root with different fleet modes: an error at each cluster
    that differs from the mode most of them set, at every explicit one on a tie (whatever
    the names' order); 'auto' agrees with anything; another revision is another root."""
    second = _argo("prod-b", "applications")
    findings = _lint(tmp_path, "a", **{"cluster.yaml": _argo("prod", "applicationset"),
                                             "b.yaml": second,
                                             "c.yaml": _argo("prod-c", "applicationset")})
    [finding] = _rule(findings, "GEN703")
    assert finding.location is not None
    assert finding.location.path.endswith("b.yaml")
    assert finding.location.line == _line(second, "fleet_mode")
    assert {r.path.rsplit("/", 1)[-1] for r in finding.related} == {"cluster.yaml", "c.yaml"}
    # the odd one out sorts first by name: still the one reported
    first = _argo("a-first", "applications")
    findings = _lint(tmp_path, "first", **{"cluster.yaml": _argo("prod", "applicationset"),
                                                 "b.yaml": first,
                                                 "c.yaml": _argo("prod-c", "applicationset")})
    assert [f.location.path.rsplit("/", 1)[-1] for f in _rule(findings, "GEN703")
            if f.location is not None] == ["b.yaml"]
    # one against one: both are reported, each naming the other
    findings = _lint(tmp_path, "tie", **{"cluster.yaml": _argo("prod", "applicationset"),
                                               "b.yaml": second})
    tie = _rule(findings, "GEN703")
    assert sorted(f.location.path.rsplit("/", 1)[-1] for f in tie if f.location) == [
        "b.yaml", "cluster.yaml"]
    auto = _argo("prod-b", "auto")
    assert not _rule(_lint(tmp_path, "b", **{
        "cluster.yaml": _argo("prod", "applicationset"), "b.yaml": auto}), "GEN703")
    other = second.replace("fleet.git\n", "fleet.git\n  revision: release\n")
    assert not _rule(_lint(tmp_path, "c", **{
        "cluster.yaml": _argo("prod", "applicationset"), "b.yaml": other}), "GEN703")
