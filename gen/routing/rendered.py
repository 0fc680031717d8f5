"""Routing lint on the rendered objects of one cluster: GEN405–GEN408.

gen's own templates cannot break these (the pool's selector and ports come from
:mod:`gen.fleet.endpoints`, the route's backend from the builder); a fleet's ``templates/``
override can, by relabelling a workload, changing a container port or editing a route. So
these rules read what was rendered, not the profiles: each finding is at the rendered file
(``out/...``), with the profile that produced it related and the template named in the hint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gen.errors import Finding, SourceLocation
from gen.rules import finding

__all__ = ["Object", "check"]

POOL_GROUP = "inference.networking.k8s.io"
RETIRED_GROUP = "inference.networking.x-k8s.io"
_WORKLOADS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job",
                        "LeaderWorkerSet"})


@dataclass(frozen=True)
class Object:
    """One rendered object: where it was written, its data, the profile and template."""

    where: SourceLocation
    data: Mapping[str, Any]
    origin: SourceLocation
    template: str


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, Mapping):
            return None
        data = data.get(key)
    return data


def _pod_template(obj: Object) -> Mapping[str, Any] | None:
    if obj.data.get("kind") == "LeaderWorkerSet":
        found = _get(obj.data, "spec", "leaderWorkerTemplate", "workerTemplate")
    else:
        found = _get(obj.data, "spec", "template")
    return found if isinstance(found, Mapping) else None


def _selects(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _ports(template: Mapping[str, Any]) -> set[int]:
    spec = _get(template, "spec") or {}
    ports: set[int] = set()
    containers = [*(spec.get("containers") or []), *(
        c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always")]
    for container in containers:
        for port in container.get("ports") or []:
            if isinstance(port.get("containerPort"), int):
                ports.add(port["containerPort"])
    return ports


def _key(obj: Object) -> tuple[str, str]:
    meta = obj.data.get("metadata") or {}
    return str(meta.get("namespace", "")), str(meta.get("name", ""))


def _pool_findings(pool: Object, workloads: Sequence[Object]) -> list[Finding]:
    namespace, name = _key(pool)
    selector = _get(pool.data, "spec", "selector", "matchLabels") or {}
    targets = {p.get("number") for p in _get(pool.data, "spec", "targetPorts") or []}
    found: list[Finding] = []
    for workload in workloads:
        if _key(workload)[0] != namespace:
            continue
        template = _pod_template(workload)
        labels = _get(template, "metadata", "labels") or {}
        if template is None or not _selects(selector, labels):
            continue
        kind, other = workload.data.get("kind"), _key(workload)[1]
        if workload.origin.path != pool.origin.path or workload.template.startswith("routing/"):
            found.append(finding(
                "GEN405", f"InferencePool {name!r} selects the pods of {kind} {other!r}, "
                f"which is not one of its service's workloads",
                pool.where, key_path="spec.selector.matchLabels",
                hint=f"keep the labels of template {workload.template!r} apart from the "
                "pool's selector",
                related=(workload.where, pool.origin),
            ))
            continue
        if not _ports(template) & targets:
            found.append(finding(
                "GEN406", f"the pods of {kind} {other!r} have no container port among "
                f"InferencePool {name!r}'s targetPorts {sorted(targets)}: the pool drops them",
                workload.where, key_path="spec.template.spec.containers",
                hint=f"listen on {min(targets) if targets else 8000} in template "
                f"{workload.template!r}",
                related=(pool.where, workload.origin),
            ))
    return found


def _route_findings(route: Object, pools: set[tuple[str, str]]) -> list[Finding]:
    namespace, name = _key(route)
    found: list[Finding] = []
    for index, rule in enumerate(_get(route.data, "spec", "rules") or []):
        refs = [r for r in rule.get("backendRefs") or [] if r.get("kind") == "InferencePool"]
        key = f"spec.rules[{index}].backendRefs"
        if len(refs) > 1:
            found.append(finding(
                "GEN408", f"HTTPRoute {name!r} rule {index} has {len(refs)} InferencePool "
                "backends: they share one picker's decision and an empty pool fails the rule",
                route.where, key_path=key,
                hint=f"one pool per rule in template {route.template!r}",
                related=(route.origin,),
            ))
        for ref in refs:
            group = ref.get("group", "")
            ref_ns = ref.get("namespace", namespace)
            problem = ""
            if group == RETIRED_GROUP:
                problem = (f"is in the retired group {RETIRED_GROUP!r}: the v1 pool is "
                           f"{POOL_GROUP!r}")
            elif group != POOL_GROUP:
                problem = f"has group {group!r}, not {POOL_GROUP!r}"
            elif ref_ns != namespace:
                problem = (f"is in namespace {ref_ns!r}, not the route's {namespace!r} (no "
                           "ReferenceGrant allows it)")
            elif (ref_ns, ref.get("name")) not in pools:
                problem = "names no InferencePool of the cluster"
            if problem:
                found.append(finding(
                    "GEN407", f"HTTPRoute {name!r} backend InferencePool "
                    f"{ref.get('name')!r} {problem}", route.where, key_path=key,
                    hint=f"route to the service's pool in template {route.template!r}",
                    related=(route.origin,),
                ))
    return found


def check(objects: Sequence[Object]) -> list[Finding]:
    """GEN405–GEN408 over one cluster's rendered objects."""
    pools = [o for o in objects if o.data.get("kind") == "InferencePool"]
    routes = [o for o in objects if o.data.get("kind") == "HTTPRoute"]
    if not pools and not routes:
        return []
    workloads = [o for o in objects if o.data.get("kind") in _WORKLOADS]
    findings: list[Finding] = []
    for pool in pools:
        findings += _pool_findings(pool, workloads)
    keys = {_key(p) for p in pools}
    for route in routes:
        findings += _route_findings(route, keys)
    return findings
