"""The units a service runs as: itself, or its two roles with their own settings."""

from __future__ import annotations

from gen.fleet.roles import units, workloads
from gen.pipeline import load_plan
from tests.helpers import REPO


def test_roles_take_their_settings_and_default_to_the_service() -> None:
    """Role replicas/parallelism/gpu override the service's; the rest is the service's."""
    plan = load_plan(REPO / "profiles", base=REPO)
    (cluster,) = [c for c in plan.clusters if c.name == "prod-us-east"]
    (svc,) = [s for s in cluster.services if s.service.name == "qwen-7b-pd"]
    prefill, decode = units(cluster, svc)
    assert (prefill.role, decode.role) == ("prefill", "decode")
    assert prefill.plan.service.name == "qwen-7b-pd-prefill"
    assert prefill.plan.service.replicas == 2
    assert prefill.plan.service.parallelism.tensor == 1
    assert prefill.plan.service.gpu == svc.service.gpu
    assert decode.plan.service.parallelism.tensor == 2
    assert decode.plan.service.gpu is not None and decode.plan.service.gpu.count == 2
    assert decode.plan.service.serving.served_model_name == "qwen-7b-pd"
    assert decode.plan.replicas_at()[1] == "disaggregation.decode.replicas"
    names = [w.service.name for w in workloads(cluster)]
    assert "qwen-7b-pd" not in names
    assert {"llama-70b", "qwen-7b-pd-prefill", "qwen-7b-pd-decode"} <= set(names)
    assert names.index("qwen-7b-pd-decode") < names.index("qwen-7b-pd-prefill")
    (other,) = units(cluster, next(s for s in cluster.services
                                   if s.service.name == "llama-70b"))
    assert other.role is None and other.plan is other.parent
