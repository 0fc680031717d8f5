"""Tests for gen.verify.apply: the dry-run's outcomes as findings, against a fake API server.

The fake answers as kube-apiserver does (a ``Status`` with ``details.causes`` for an invalid
object, 404 with ``details.kind: namespaces`` from NamespaceLifecycle, ``Warning`` headers);
the same outcomes against the real API server are in tests/verify/test_live.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from gen.errors import Severity
from gen.fleet.plan import ClusterPlan
from gen.pipeline import load_plan
from gen.verify.apply import dry_run
from gen.verify.objects import OutObject, read_out
from gen.verify.state import ApplyAnswer, ServedKind
from tests.helpers import REPO
from tests.verify.fake import FakeCluster


@pytest.fixture(scope="module")
def prod() -> tuple[ClusterPlan, list[OutObject]]:
    plan = load_plan(REPO / "profiles")
    cluster = next(c for c in plan.clusters if c.name == "prod-us-east")
    objects, findings = read_out(cluster, REPO / "out", None)
    assert findings == []
    return cluster, objects


def served_by(objects: list[OutObject], without: tuple[str, ...] = ()
              ) -> dict[str, dict[str, ServedKind]]:
    """Discovery that serves every kind of ``objects`` except the group-versions ``without``."""
    table: dict[str, dict[str, ServedKind]] = {}
    for obj in objects:
        if obj.api_version in without:
            continue
        table.setdefault(obj.api_version, {})[obj.kind] = ServedKind(
            obj.kind.lower() + "s", bool(obj.namespace))
    return table


def _fake(objects: list[OutObject], **kwargs: Any) -> FakeCluster:
    return FakeCluster(discovery=served_by(objects, kwargs.pop("without", ())), **kwargs)


def test_everything_accepted(prod: tuple[ClusterPlan, list[OutObject]]) -> None:
    cluster, objects = prod
    fake = _fake(objects)
    report = dry_run(cluster, fake, objects, ["default", "inference", "gpu-operator"])
    assert report.findings == []
    assert (report.accepted, report.refused, report.not_served, report.not_checked) == (
        len(objects), 0, 0, 0)
    patches = [r for r in fake.requests if r[0] == "PATCH"]
    assert len(patches) == len(objects)
    assert patches[0] == ("PATCH", "dry-run namespaces inference")  # namespaces first


def test_a_refusal_is_one_finding_per_cause_at_the_profile(
        prod: tuple[ClusterPlan, list[OutObject]]) -> None:
    cluster, objects = prod

    def answer(obj: Mapping[str, Any]) -> ApplyAnswer:
        if obj["kind"] != "Deployment" or obj["metadata"]["name"] != "llama-70b":
            return ApplyAnswer(200, dict(obj))
        return ApplyAnswer(422, {
            "kind": "Status", "status": "Failure", "reason": "Invalid",
            "message": 'Deployment.apps "llama-70b" is invalid: [...]',
            "details": {"name": "llama-70b", "group": "apps", "kind": "Deployment", "causes": [
                {"reason": "FieldValueInvalid", "field": "spec.replicas",
                 "message": "Invalid value: -1: must be greater than or equal to 0"},
                {"reason": "FieldValueRequired", "field": "spec.selector",
                 "message": "Required value"},
            ]}})

    report = dry_run(cluster, _fake(objects, answer=answer), objects, ["inference"])
    assert report.refused == 1 and report.accepted == len(objects) - 1
    assert [f.key_path for f in report.findings] == ["spec.replicas", "spec.selector"]
    first = report.findings[0]
    assert first.rule == "GEN801" and first.severity is Severity.ERROR
    assert first.location is not None
    assert first.location.path == "profiles/services/llama-70b.yaml"
    assert "refuses Deployment inference/llama-70b (Invalid): Invalid value: -1" in first.message
    assert first.related[0].path.endswith("deployment-llama-70b.yaml")
    assert first.related[0].note == "rendered to"


def test_a_refusal_without_causes_uses_the_message(
        prod: tuple[ClusterPlan, list[OutObject]]) -> None:
    """PodSecurity and quotas answer 403 with a message only."""
    cluster, objects = prod

    def answer(obj: Mapping[str, Any]) -> ApplyAnswer:
        if obj["kind"] == "Deployment":
            return ApplyAnswer(403, {"reason": "Forbidden", "message": "violates PodSecurity"})
        return ApplyAnswer(200, dict(obj))

    report = dry_run(cluster, _fake(objects, answer=answer), objects, ["inference"])
    assert {f.message.split(": ", 1)[1] for f in report.findings} == {"violates PodSecurity"}
    deployments = [o for o in objects if o.kind == "Deployment"]
    assert len(deployments) >= 2  # the services' and the endpoint pickers'
    assert len(report.findings) == len(deployments)


def test_custom_resources_without_their_crd(prod: tuple[ClusterPlan, list[OutObject]]) -> None:
    """No ServiceMonitor CRD: GEN802 at each service, saying to install the add-on."""
    cluster, objects = prod
    fake = _fake(objects, without=("monitoring.coreos.com/v1",))
    report = dry_run(cluster, fake, objects, ["inference"])
    monitors = [o for o in objects if o.kind == "ServiceMonitor"]
    assert len(monitors) >= 2
    assert [f.rule for f in report.findings] == ["GEN802"] * len(monitors)
    assert report.not_served == len(monitors)
    finding = report.findings[0]
    assert "the cluster has no CRD for ServiceMonitor (monitoring.coreos.com/v1)" in \
        finding.message
    assert "install the add-on" in finding.message
    assert finding.location is not None and finding.location.path.startswith(
        "profiles/services/")
    assert not any(r[0] == "PATCH" and "servicemonitors" in r[1] for r in fake.requests)


def test_a_built_in_api_not_served(prod: tuple[ClusterPlan, list[OutObject]]) -> None:
    cluster, objects = prod
    report = dry_run(cluster, _fake(objects, without=("resource.k8s.io/v1",)), objects,
                     ["inference"])
    assert {f.rule for f in report.findings} == {"GEN802"}
    assert all("does not serve resource.k8s.io/v1" in f.message for f in report.findings)


def _namespace_missing(namespace: str) -> ApplyAnswer:
    return ApplyAnswer(404, {"kind": "Status", "reason": "NotFound",
                             "message": f'namespaces "{namespace}" not found',
                             "details": {"name": namespace, "kind": "namespaces"}})


def test_objects_in_a_namespace_this_apply_creates(
        prod: tuple[ClusterPlan, list[OutObject]]) -> None:
    """inference does not exist yet and out/ creates it: its objects are not checked (info),
    the Namespace itself and the cluster-scoped objects are."""
    cluster, objects = prod

    def answer(obj: Mapping[str, Any]) -> ApplyAnswer:
        namespace = obj["metadata"].get("namespace")
        return _namespace_missing(namespace) if namespace == "inference" else \
            ApplyAnswer(200, dict(obj))

    report = dry_run(cluster, _fake(objects, answer=answer), objects, ["default",
                                                                      "gpu-operator"])
    in_inference = [o for o in objects if o.namespace == "inference"]
    assert report.not_checked == len(in_inference) > 0
    assert {f.rule for f in report.findings} == {"GEN803"}
    assert {f.severity for f in report.findings} == {Severity.INFO}
    assert report.accepted == len(objects) - len(in_inference)
    assert "its namespace 'inference' is created by this apply" in report.findings[0].message


def test_a_namespace_nobody_creates_is_a_refusal(
        prod: tuple[ClusterPlan, list[OutObject]]) -> None:
    """gpu-operator is not created by out/ (the operator's chart makes it): a refusal."""
    cluster, objects = prod

    def answer(obj: Mapping[str, Any]) -> ApplyAnswer:
        namespace = obj["metadata"].get("namespace")
        return _namespace_missing(namespace) if namespace == "gpu-operator" else \
            ApplyAnswer(200, dict(obj))

    report = dry_run(cluster, _fake(objects, answer=answer), objects, ["inference"])
    assert [f.rule for f in report.findings] == ["GEN801"]
    assert 'namespaces "gpu-operator" not found' in report.findings[0].message


def test_another_refusal_in_a_new_namespace_still_counts(
        prod: tuple[ClusterPlan, list[OutObject]]) -> None:
    """Only a NotFound for that very namespace means "not checked"."""
    cluster, objects = prod

    def answer(obj: Mapping[str, Any]) -> ApplyAnswer:
        if obj["kind"] == "Service":
            return ApplyAnswer(422, {"reason": "Invalid", "message": "bad port"})
        return ApplyAnswer(200, dict(obj))

    report = dry_run(cluster, _fake(objects, answer=answer), objects, [])
    assert {f.rule for f in report.findings} == {"GEN801"}


def test_warnings_are_findings(prod: tuple[ClusterPlan, list[OutObject]]) -> None:
    cluster, objects = prod

    def answer(obj: Mapping[str, Any]) -> ApplyAnswer:
        warnings = ('299 - "policy/v1beta1 is deprecated"',) if obj["kind"] == \
            "PodDisruptionBudget" else ()
        return ApplyAnswer(200, dict(obj), warnings)

    report = dry_run(cluster, _fake(objects, answer=answer), objects, ["inference"])
    # One per PodDisruptionBudget in 'inference' (llama-70b, llama-8b-mig, qwen-7b-pd).
    assert [f.rule for f in report.findings] == ["GEN804", "GEN804", "GEN804"]
    assert report.findings[0].severity is Severity.WARNING
    assert report.accepted == len(objects)


def test_a_crd_created_by_the_same_out(prod: tuple[ClusterPlan, list[OutObject]]) -> None:
    """A custom resource whose CRD is in out/ too: not checked (the CRD's dry-run creates
    nothing), not "no CRD"."""
    cluster, objects = prod
    monitor = next(o for o in objects if o.kind == "ServiceMonitor")
    crd = OutObject(monitor.path.with_name("crd.yaml"), "out/crd.yaml", {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "servicemonitors.monitoring.coreos.com"},
        "spec": {"group": "monitoring.coreos.com", "names": {"kind": "ServiceMonitor"}}},
        monitor.origin)
    with_crd = [*objects, crd]
    fake = FakeCluster(discovery={
        **served_by(with_crd, ("monitoring.coreos.com/v1",)),
        "apiextensions.k8s.io/v1": {"CustomResourceDefinition": ServedKind(
            "customresourcedefinitions", False)}})
    report = dry_run(cluster, fake, with_crd, ["inference"])
    monitors = [o for o in objects if o.kind == "ServiceMonitor"]
    assert len(monitors) >= 2
    assert [f.rule for f in report.findings] == ["GEN803"] * len(monitors)
    assert "its CRD is created by this apply" in report.findings[0].message
