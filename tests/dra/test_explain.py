"""gen.dra.explain: a service's claims, matches and misses, fit and findings, as data."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from pathlib import Path

import pytest

from gen.dra import explain as explain_module
from gen.dra.explain import Explanation, explain, to_json
from gen.errors import Finding, Severity, UnresolvedReferenceError
from gen.fleet.plan import Plan
from gen.pipeline import load_plan
from tests.helpers import REPO

FLEET = """\
kind: Cluster
name: c1
kubernetes_version: "1.34.2"
allocation: dra
node_pools:
  - {name: full, gpu: h100-sxm5-80gb, gpus_per_node: 8, nodes: 2, driver_version: "580.95.05"}
---
kind: GPUClass
name: big
match: {min_memory: 80Gi}
---
kind: GPUClass
name: half
match: {min_memory: 40Gi}
---
kind: InferenceService
name: svc
model: meta-llama/Llama-3.2-3B-Instruct
clusters: [c1]
gpu: {gpu_class: big}
serving: {max_model_len: 4096}
---
kind: InferenceService
name: wide
model: meta-llama/Llama-3.2-3B-Instruct
clusters: [c1]
replicas: 40
gpu: {gpu_class: half, count: 4}
"""


@pytest.fixture(scope="module")
def example() -> Plan:
    """The example fleet's plan."""
    return load_plan(REPO / "profiles")


@pytest.fixture
def small(tmp_path: Path) -> Plan:
    """One cluster: 'svc' asks for more memory than an H100 has, 'wide' for 40 replicas."""
    (tmp_path / "fleet.yaml").write_text(textwrap.dedent(FLEET), encoding="utf-8")
    return load_plan(tmp_path)


def test_full_gpu_service_matches_and_misses(example: Plan) -> None:
    """Whole H100s match; the MIG slices of the same pool are rejected by the class's type."""
    result = explain(example, "llama-70b")
    (cluster,) = result.clusters
    assert cluster.name == "prod-us-east" and cluster.slices is None and cluster.runbook is None
    (svc,) = cluster.services
    assert svc.service == "llama-70b" and svc.dra_api_version == "resource.k8s.io/v1"
    first = svc.claims[0]
    assert first.label == "first choice" and first.compiles and first.satisfiable
    assert first.selectors[0].label.startswith("class ")
    shapes = [s for p in first.pools for s in p.shapes]
    matched = [s for s in shapes if s.matched]
    assert matched and all(s.shape == "NVIDIA H100 80GB HBM3" for s in matched)
    missed = [s for s in shapes if s.shape.endswith("MIG 3g.40gb")]
    assert missed and not missed[0].matched
    assert "type 'mig' != 'gpu'" in missed[0].reason
    assert missed[0].selector == first.selectors[0].label
    full = next(p for p in first.pools if any(s.matched for s in p.shapes))
    assert (full.hosting_nodes, full.replicas_per_node, full.why_not) == (4, 2, "")
    assert svc.fit and all(f.model == "meta-llama/Llama-3.1-70B-Instruct" for f in svc.fit)
    assert svc.allocatable and result.ok


def test_unsatisfiable_claim_with_its_finding(small: Plan) -> None:
    """The unsatisfiable claim says which selector rejects the devices; GEN204 comes with it."""
    result = explain(small, "svc")
    (svc,) = result.clusters[0].services
    (claim,) = svc.claims
    assert not claim.satisfiable
    (pool,) = claim.pools
    assert pool.replicas_per_node == 0 and pool.why_not == "no device matches"
    assert pool.shapes[0].reason == "memory 81559Mi < 80Gi"
    assert [(f.rule, f.severity) for f in svc.findings] == [("GEN204", Severity.ERROR)]
    assert not svc.allocatable and not result.ok


def test_findings_belong_to_their_service(small: Plan) -> None:
    """Each service gets the findings about itself only: 'wide' has GEN205, not svc's GEN204."""
    (wide,) = explain(small, "wide").clusters[0].services
    assert [f.rule for f in wide.findings] == ["GEN205"]
    assert all(f.service == "wide" and f.cluster == "c1" for f in wide.findings)
    assert wide.claims[0].satisfiable and not wide.allocatable


def test_findings_are_associated_by_data_not_by_text(
    small: Plan, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A finding whose text names no service still belongs to the service its fields name."""
    quiet = Finding("GEN205", "nothing to match on", service="svc", cluster="c1",
                    severity=Severity.WARNING)
    loud = Finding("GEN205", "service 'svc' in cluster 'c1'", service="wide", cluster="c1")
    other = Finding("GEN999", "ignored rule", service="svc", cluster="c1")
    monkeypatch.setattr("gen.dra.capacity.check", lambda _plan: [quiet, loud, other])
    (svc,) = explain(small, "svc").clusters[0].services
    assert svc.findings == (quiet,)
    assert svc.allocatable  # a warning does not make the claim unallocatable


def test_extras_without_a_service(small: Plan, example: Plan) -> None:
    """Slices and runbook come as data; no service means no service explanation."""
    result = explain(small, None, slices=True)
    (cluster,) = result.clusters
    assert cluster.services == () and result.ok
    assert cluster.slices is not None
    (pool,) = cluster.slices
    assert pool.pool == "full" and pool.documents[0]["kind"] == "ResourceSlice"
    from gen.nvidia.build import runbook as mig_runbook

    runbook = explain(example, None, ["prod-us-east"], runbook=mig_runbook).clusters[0].runbook
    assert runbook is not None and runbook.startswith("# MIG runbook for cluster prod-us-east")


def test_cluster_order_is_the_order_asked(example: Plan) -> None:
    """Clusters come in the order given; all of them, by name, when none is given."""
    names = sorted(c.name for c in example.clusters)
    assert [c.name for c in explain(example, None, slices=True).clusters] == names
    asked = list(reversed(names))
    assert [c.name for c in explain(example, None, asked, slices=True).clusters] == asked


@pytest.mark.parametrize(("service", "clusters", "message"), [
    (None, ["nope"], "unknown cluster(s): nope; known: "),
    ("nope", [], "unknown service 'nope'; known: "),
    ("llama-70b", ["research-eu"], "service 'llama-70b' does not run in research-eu; "
                                   "it runs in: prod-us-east"),
])
def test_unknown_names(example: Plan, service: str | None, clusters: list[str],
                       message: str) -> None:
    """Unknown clusters and services, and clusters a service does not run in, are errors."""
    with pytest.raises(UnresolvedReferenceError) as info:
        explain(example, service, clusters)
    assert info.value.message.startswith(message)


def test_json_form(small: Plan) -> None:
    """The JSON form is versioned, serialisable and carries the findings as lint writes them."""
    result = explain(small, "svc", slices=True)
    data = to_json(result)
    assert json.loads(json.dumps(data)) == data
    assert data["schema_version"] == explain_module.JSON_SCHEMA_VERSION == 1
    assert (data["service"], data["ok"]) == ("svc", False)
    (cluster,) = data["clusters"]
    (svc,) = cluster["services"]
    assert svc["findings"] == [f.to_json() for f in result.clusters[0].services[0].findings]
    assert svc["claims"][0]["pools"][0]["shapes"][0]["reason"] == "memory 81559Mi < 80Gi"
    assert cluster["slices"][0]["documents"][0]["kind"] == "ResourceSlice"


def test_explanations_are_frozen(small: Plan) -> None:
    """Every part of an explanation is an immutable dataclass."""
    result: Explanation = explain(small, "svc")
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.clusters[0].services[0].claims[0].count = 2  # type: ignore[misc]
