"""GEN410–GEN414: a disaggregated service whose KV hand-over would silently not happen.

gen writes the KV contract itself (:mod:`gen.serving.disaggregation`): the same connector on
both sides, ``kv_producer`` on prefill and ``kv_consumer`` on decode, the sidecar's matching
protocol. What a user can still write against it is ``serving.extra_args`` (one list, passed
to both roles), each role's parallelism, and ``autoscaling``; these rules check there:

GEN410
    ``--kv-transfer-config`` in ``serving.extra_args`` naming another connector (or none):
    it reaches both roles, so the engines and the sidecar disagree on the protocol (a
    Mooncake engine behind a nixlv2 sidecar silently ran as aggregated serving, llm-d-router
    PR #1221; no connector: "no KVConnector found. Disabling KVTransfer", kserve #5987).
GEN411
    ``kv_role`` in ``serving.extra_args``: one value for both roles, so one side runs the
    other's role (swapped producer/consumer; llm-d #394).
GEN412
    NIXL with prefill TP larger than decode TP: "Prefill TP > Decode TP is not supported for
    most model architectures" (llm-d guides/pd-disaggregation README; llm-d #394, vllm #43523).
GEN413
    NIXL or Mooncake with TP sizes neither of which divides the other: vLLM asserts the
    divisibility at the handshake (``_get_tp_ratio``, vllm v0.21.0 and v0.33.0,
    ``kv_connector/v1/nixl/tp_mapping.py`` and ``v1/mooncake/mooncake_connector.py``).
GEN414
    ``autoscaling`` on a disaggregated service: the role workloads run their fixed replicas
    (gen renders no ScaledObject for them), so the setting does nothing.
"""

from __future__ import annotations

import dataclasses

from gen.errors import Finding
from gen.fleet.plan import Plan
from gen.fleet.profile_set import Located
from gen.models import InferenceService
from gen.rules import finding
from gen.serving.kv_transfer import CONNECTORS, KV_FLAG, KV_ROLES, parse_kv_transfer_config

__all__ = ["check"]


def _extra_args(svc: Located[InferenceService]) -> list[Finding]:
    service = svc.value
    assert service.disaggregation is not None
    args = service.serving.extra_args
    index, value = parse_kv_transfer_config(args)
    dotted = [i for i, arg in enumerate(args)
              if arg.startswith((f"{KV_FLAG}.", "--kv_transfer_config."))]
    findings: list[Finding] = []
    if index < 0 and not dotted:
        return findings
    connector = service.disaggregation.connector
    expected = CONNECTORS[connector].vllm_class
    key = ("serving", "extra_args", index if index >= 0 else dotted[0])
    where = svc.at(*key)
    path = f"serving.extra_args[{key[2]}]"
    named = value.get("kv_connector") if value is not None else None
    if index >= 0 and named != expected:
        findings.append(finding(
            "GEN410",
            f"serving.extra_args sets {KV_FLAG} with kv_connector {named!r}, but the service "
            f"declares disaggregation.connector {connector!r} ({expected}): both roles get "
            "this argument, and the engines, the routing sidecar and the declared connector "
            "disagree on how the KV cache is handed over",
            where, key_path=path,
            hint=f"remove {KV_FLAG} from serving.extra_args: gen writes it for each role from "
                 "disaggregation.connector",
        ))
    roles = {KV_ROLES["prefill"], KV_ROLES["decode"], "kv_both"}
    role = value.get("kv_role") if value is not None else None
    if (index >= 0 and role in roles) or any(".kv_role" in args[i] for i in dotted):
        findings.append(finding(
            "GEN411",
            f"serving.extra_args sets the KV role{f' {role!r}' if role else ''} for both "
            "roles: prefill must run kv_producer and decode kv_consumer, so one side runs "
            "the other's role",
            where, key_path=path,
            hint=f"remove {KV_FLAG} from serving.extra_args: gen gives prefill kv_producer "
                 "and decode kv_consumer",
        ))
    return findings


def _tensor_at(unit_role: str, svc: Located[InferenceService]) -> tuple[str, ...]:
    """Where a role's TP is written: its own parallelism, else the service's."""
    own = ("disaggregation", unit_role, "parallelism", "tensor")
    _, found = svc.document.locate(own)
    if tuple(found) == own:
        return own
    return ("parallelism", "tensor")


def _parallelism(svc: Located[InferenceService]) -> list[Finding]:
    service = svc.value
    disaggregation = service.disaggregation
    assert disaggregation is not None
    connector = disaggregation.connector
    p_tp = (disaggregation.prefill.parallelism or service.parallelism).tensor
    d_tp = (disaggregation.decode.parallelism or service.parallelism).tensor
    findings: list[Finding] = []
    if CONNECTORS[connector].heterogeneous_tp and p_tp != d_tp \
            and p_tp % d_tp and d_tp % p_tp:
        key = _tensor_at("decode", svc)
        findings.append(finding(
            "GEN413",
            f"prefill TP {p_tp} and decode TP {d_tp} with connector {connector!r}: vLLM maps "
            "the KV cache between unequal TP sizes only when one divides the other, and "
            "fails the handshake otherwise",
            svc.at(*key), key_path=".".join(key),
            hint="make one tensor-parallel size a multiple of the other (equal is safest)",
        ))
    elif connector == "nixl" and p_tp > d_tp:
        key = _tensor_at("prefill", svc)
        findings.append(finding(
            "GEN412",
            f"prefill TP {p_tp} is larger than decode TP {d_tp} with NIXL: llm-d documents "
            "it as unsupported for most model architectures, and it hangs rather than fails",
            svc.at(*key), key_path=".".join(key),
            hint="give decode at least the prefill's tensor-parallel size",
        ))
    return findings


def check(plan: Plan) -> list[Finding]:
    """GEN410–GEN414 on every disaggregated vLLM service of the fleet (profile keys only:
    each once, whatever clusters it runs in)."""
    findings: list[Finding] = []
    for svc in plan.profiles.services.values():
        service = svc.value
        if service.disaggregation is None or service.engine != "vllm":
            continue
        found = _parallelism(svc) + _extra_args(svc)
        if service.autoscaling is not None:
            found.append(finding(
                "GEN414",
                "autoscaling does not apply to a disaggregated service: its prefill "
                "and decode workloads run their own replicas",
                svc.at("autoscaling"), key_path="autoscaling",
                hint="remove autoscaling and set disaggregation.prefill.replicas and "
                     "disaggregation.decode.replicas",
            ))
        findings += [dataclasses.replace(f, service=service.name) for f in found]
    return findings
