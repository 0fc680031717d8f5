"""gen.routing.build: the example fleet's routed service, as rendered in out/ (test_golden keeps
out/ equal to the render), and the builder's choices on variants of it."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from gen.errors import SourceLocation
from gen.fleet.endpoints import picker_selector, pool_selector
from gen.pipeline import load_plan
from gen.routing import rendered
from gen.routing.build import build
from gen.routing.picker import config_problems
from gen.security.podsecurity import check as pod_security
from tests.helpers import REPO

WORKLOADS = REPO / "out" / "prod-us-east" / "workloads"


def _objects() -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for path in sorted(WORKLOADS.rglob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        data = yaml.safe_load(path.read_text())
        found[(data["kind"], data["metadata"]["name"])] = data
    return found


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def test_the_pool_selects_exactly_the_services_vllm_pods() -> None:
    objects = _objects()
    pool = objects[("InferencePool", "llama-70b")]["spec"]
    selected = sorted(name for (kind, name), obj in objects.items()
                      if kind == "Deployment" and _selects(
                          pool["selector"]["matchLabels"],
                          obj["spec"]["template"]["metadata"]["labels"]))
    assert selected == ["llama-70b"]
    ports = {p["containerPort"] for c in objects[("Deployment", "llama-70b")]["spec"][
        "template"]["spec"]["containers"] for p in c["ports"]}
    assert {p["number"] for p in pool["targetPorts"]} <= ports
    assert pool["endpointPickerRef"]["name"] == "llama-70b-epp"
    picker_ports = {p["port"] for p in objects[("Service", "llama-70b-epp")]["spec"]["ports"]}
    assert pool["endpointPickerRef"]["port"]["number"] in picker_ports


def test_the_picker_runs_restricted_with_its_config_and_leader_election() -> None:
    objects = _objects()
    deployment = objects[("Deployment", "llama-70b-epp")]
    assert pod_security(deployment) == []
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--ha-enable-leader-election" in args
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == "llama-70b-epp"
    text = objects[("ConfigMap", "llama-70b-epp")]["data"]["config.yaml"]
    assert config_problems(yaml.safe_load(text)) == []
    rules = objects[("Role", "llama-70b-epp")]["rules"]
    assert any("leases" in r["resources"] for r in rules)


def test_the_route_objective_and_policies() -> None:
    objects = _objects()
    route = objects[("HTTPRoute", "llama-70b")]["spec"]
    assert route["parentRefs"][0] == {"group": "gateway.networking.k8s.io", "kind": "Gateway",
                                      "name": "inference-gateway",
                                      "namespace": "gateway-system"}
    assert route["rules"][0]["timeouts"] == {"request": "300s"}
    assert route["rules"][0]["matches"][0]["path"] == {"type": "PathPrefix", "value": "/v1"}
    assert objects[("InferenceObjective", "llama-70b")]["spec"]["priority"] == 10
    pods = objects[("NetworkPolicy", "llama-70b")]["spec"]
    peers = pods["ingress"][0]["from"]
    namespaces = {p["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]
                  for p in peers if "namespaceSelector" in p}
    assert namespaces == {"gateway-system", "monitoring"}  # not the whole namespace
    assert {"podSelector": {}} not in peers
    picker = objects[("NetworkPolicy", "llama-70b-epp")]["spec"]
    assert picker["podSelector"]["matchLabels"] == picker_selector_of("llama-70b")


def picker_selector_of(name: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": f"{name}-epp",
            "app.kubernetes.io/component": "endpoint-picker"}


def test_out_passes_the_rendered_routing_rules() -> None:
    objects = [rendered.Object(SourceLocation(str(path)), yaml.safe_load(path.read_text()),
                               SourceLocation("profiles/services/llama-70b.yaml"
                                              if "llama-70b" in path.name else str(path)),
                               "")
               for path in sorted(WORKLOADS.rglob("*.yaml")) if path.name != "kustomization.yaml"]
    assert rendered.check(objects) == []


def test_no_priority_no_objective_and_no_addon_no_objects(tmp_path: Path) -> None:
    plan = load_plan(REPO / "profiles")
    cluster = next(c for c in plan.clusters if c.name == "prod-us-east")
    svc = next(s for s in cluster.services if s.service.name == "llama-70b")
    assert svc.service.routing is not None
    quiet = dataclasses.replace(svc, located=dataclasses.replace(
        svc.located, value=svc.service.model_copy(update={
            "routing": svc.service.routing.model_copy(update={"priority": None})})))
    plain = dataclasses.replace(cluster, services=(quiet,))
    templates = [s.template for s in build(plain).specs]
    assert "routing/inferenceobjective.yaml.j2" not in templates
    assert "routing/inferencepool.yaml.j2" in templates
    bare = dataclasses.replace(cluster, located=dataclasses.replace(
        cluster.located, value=cluster.cluster.model_copy(update={"addons": ("keda",)})))
    assert list(build(bare).specs) == []
    assert pool_selector(svc.service) != picker_selector(svc.service)


def test_a_routed_service_scales_on_the_pickers_queue_metrics() -> None:
    objects = _objects()
    query = objects[("ScaledObject", "llama-70b")]["spec"]["triggers"][0]["metadata"]["query"]
    assert query == ('max(llm_d_epp_average_queue_size{namespace="inference",name="llama-70b"})'
                     ' * max(llm_d_epp_ready_endpoints{namespace="inference",name="llama-70b"})')
    monitor = objects[("ServiceMonitor", "llama-70b-epp")]["spec"]
    service = objects[("Service", "llama-70b-epp")]
    assert monitor["endpoints"][0]["port"] in {p["name"] for p in service["spec"]["ports"]}
    assert _selects(monitor["selector"]["matchLabels"], service["metadata"]["labels"])


def test_without_the_pickers_metrics_it_scales_on_vllms() -> None:
    from gen.serving.build import build_service

    plan = load_plan(REPO / "profiles")
    cluster = next(c for c in plan.clusters if c.name == "prod-us-east")
    svc = next(s for s in cluster.services if s.service.name == "llama-70b")
    unscraped = dataclasses.replace(cluster, located=dataclasses.replace(
        cluster.located, value=cluster.cluster.model_copy(update={
            "addons": ("keda", "inference-extension")})))
    (scaled,) = [s for s in build_service(unscraped, svc)
                 if s.template == "vllm/scaledobject.yaml.j2"]
    assert scaled.context["query"].startswith("sum(vllm:num_requests_waiting{")
    assert "routing/servicemonitor.yaml.j2" not in [s.template for s in build(unscraped).specs]
