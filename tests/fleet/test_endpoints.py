"""gen.fleet.endpoints: the pods an InferencePool selects, its target port, the role label."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gen.fleet.endpoints import (
    ROLE_LABEL,
    ROUTED_PORT,
    SIDECAR_ENGINE_PORT,
    endpoints,
    engine_port,
    picker_selector,
    pod_labels,
    pool_selector,
    workload_selector,
)
from gen.models import InferenceService
from gen.pipeline import load_plan
from tests.helpers import REPO


def _service(name: str, **extra: Any) -> InferenceService:
    return InferenceService.model_validate({
        "kind": "InferenceService", "name": name, "model": "meta-llama/Llama-3.1-8B-Instruct",
        "clusters": ["c"], "gpu": {"gpu_class": "h100"}, **extra,
    })


ROUTED = {"routing": {"gateway": "inference-gateway"}}
DISAGGREGATED = {**ROUTED, "disaggregation": {"connector": "nixl"}}


def _selects(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def test_the_pool_selects_every_serving_pod_of_both_roles_and_nothing_else() -> None:
    llama = _service("llama", **DISAGGREGATED)
    selector = pool_selector(llama)
    assert _selects(selector, pod_labels(llama, "prefill"))
    assert _selects(selector, pod_labels(llama, "decode"))
    assert _selects(selector, pod_labels(llama))
    assert ROLE_LABEL not in selector
    # Another service (same namespace), the picker's pods, and a pod labelled by hand with
    # the same name and component but not managed by gen.
    assert not _selects(selector, pod_labels(_service("llama-2", **ROUTED)))
    assert not _selects(selector, picker_selector(llama))
    assert not _selects(selector, workload_selector(llama))


def test_role_workloads_never_adopt_each_others_pods() -> None:
    llama = _service("llama", **DISAGGREGATED)
    prefill, decode = workload_selector(llama, "prefill"), workload_selector(llama, "decode")
    assert not _selects(prefill, pod_labels(llama, "decode"))
    assert not _selects(decode, pod_labels(llama, "prefill"))
    assert _selects(prefill, pod_labels(llama, "prefill"))
    assert pod_labels(llama, "decode")[ROLE_LABEL] == "decode"


def test_ports_the_pool_targets_and_vllm_listens_on() -> None:
    plain, split = _service("a", **ROUTED), _service("b", **DISAGGREGATED)
    assert engine_port(plain) == ROUTED_PORT == 8000
    assert engine_port(split, "prefill") == ROUTED_PORT
    assert engine_port(split, "decode") == SIDECAR_ENGINE_PORT == 8200
    assert engine_port(plain, "decode") == ROUTED_PORT  # no sidecar without disaggregation


def test_the_rendered_vllm_pods_are_the_pools_and_listen_on_its_port() -> None:
    """Against the example fleet's built Deployments: every vLLM pod template carries its
    service's pool selector, no other service's, and its container port is a target port."""
    plan = load_plan(REPO / "profiles")
    seen = 0
    for cluster in plan.clusters:
        pods = {
            spec.context["name"]: spec for spec in cluster.manifests
            if spec.template == "vllm/deployment.yaml.j2"
        }
        for svc in cluster.services:
            if svc.service.name not in pods:
                continue
            seen += 1
            found = endpoints(svc)
            selector = dict(found.selector)
            for name, spec in pods.items():
                labels = spec.context["labels"]
                assert _selects(selector, labels) == (name == svc.service.name)
            assert pods[svc.service.name].context["port"] in found.target_ports
            assert found.picker == f"{svc.service.name}-epp"
    assert seen >= 2
