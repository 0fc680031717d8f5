"""The broken objects of the two validator differentials, as generators others can reuse.

``tests/emit/test_validate_differential.py`` breaks every object of the example fleet's render
in seeded ways (:func:`mutate`, :func:`validate_mutants`); ``tests/emit/test_crd_differential.py``
breaks every custom resource exhaustively at every node its CRD describes (:func:`crd_objects`,
:func:`crd_mutants`). Both tests judge the mutants against references of their own; the judge
(``tools/judge/kubeconform_category.py``) judges the same mutants with kubeconform. The
sequences are deterministic: the n-th mutant of a seed is always the same object.
"""

from __future__ import annotations

import copy
import functools
import gzip
import json
import random
from collections.abc import Iterator
from typing import Any

from gen.emit.render import make_environment, render_cluster
from gen.emit.validate import schema_version_for
from gen.pipeline import load_plan
from tests.helpers import REPO

__all__ = [
    "CRD_EXTRA",
    "MUTATIONS",
    "crd_mutants",
    "crd_objects",
    "example_objects",
    "mutate",
    "upstream_crds",
    "validate_mutants",
]

Path_ = tuple[Any, ...]
CRD_DATA = REPO / "gen" / "data" / "crd-schemas"

# ------------------------------------------------------ the validate differential's mutants


@functools.cache
def example_objects() -> tuple[tuple[int, dict[str, Any]], ...]:
    """(schema minor, object) for every manifest of the example fleet's render."""
    plan = load_plan(REPO / "profiles", base=REPO)
    env = make_environment()
    found = []
    for cluster in plan.clusters:
        objects, _ = render_cluster(env, cluster)
        minor = schema_version_for(cluster.minor)
        found += [(minor, copy.deepcopy(dict(obj.data))) for obj in objects]
    return tuple(found)


def _nodes(value: Any, path: Path_ = ()) -> list[tuple[Path_, Any]]:
    """Every (path, node) of a JSON value, the root included."""
    out = [(path, value)]
    if isinstance(value, dict):
        for key, child in value.items():
            out.extend(_nodes(child, (*path, key)))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out.extend(_nodes(child, (*path, index)))
    return out


def _get(value: Any, path: Path_) -> Any:
    for part in path:
        value = value[part]
    return value


def _put(root: Any, path: Path_, new: Any) -> None:
    _get(root, path[:-1])[path[-1]] = new


_OTHER_TYPE: dict[type, list[Any]] = {
    str: [7, True, None, ["x"], {"a": "x"}],
    int: ["7", 1.5, False, [7]],
    float: ["0.5", True, [0.5]],
    bool: ["true", 1, None],
    type(None): [{}, "x", 0],
    dict: ["x", 1, [{}]],
    list: ["x", {"a": []}, 3],
}
_BAD_STRINGS = ("NotAnEnumValue", "has spaces and UPPER", "-leading-dash", "", "x" * 300,
                "not-a-date", "!!notbase64!!", "1Gix")
MUTATIONS = ("drop", "retype", "unknown", "enum", "pattern", "array")


def mutate(rng: random.Random, obj: dict[str, Any], mutation: str) -> bool:
    """Apply one mutation to ``obj`` in place; False when it has no spot for it."""
    nodes = _nodes(obj)
    if mutation == "drop":  # drops a field (required ones among them)
        spots = [(p, k) for p, n in nodes if isinstance(n, dict) for k in n]
        if not spots:
            return False
        path, key = rng.choice(spots)
        del _get(obj, path)[key]
    elif mutation == "retype":
        spots = [(p, n) for p, n in nodes if p]
        if not spots:
            return False
        path, node = rng.choice(spots)
        _put(obj, path, copy.deepcopy(rng.choice(_OTHER_TYPE[type(node)])))
    elif mutation == "unknown":
        spots = [p for p, n in nodes if isinstance(n, dict)]
        path = rng.choice(spots)
        _get(obj, path)[rng.choice(["zzUnknown", "Name", "spec", "items", "status"])] = 1
    elif mutation in ("enum", "pattern"):  # a string where the schema may allow only some
        spots = [p for p, n in nodes if p and isinstance(n, str)]
        if not spots:
            return False
        _put(obj, rng.choice(spots), rng.choice(_BAD_STRINGS))
    else:  # array items: appended, replaced, wrapped, emptied
        spots = [(p, n) for p, n in nodes if p and isinstance(n, list)]
        if not spots:
            return False
        path, items = rng.choice(spots)
        edit = rng.choice(["append", "replace", "wrap", "empty", "nested"])
        if edit == "append" and items:
            items.append(copy.deepcopy(rng.choice(items)))
            if isinstance(items[-1], dict):
                items[-1]["zzUnknown"] = True
        elif edit == "replace" and items:
            items[rng.randrange(len(items))] = rng.choice(["x", 3, None, []])
        elif edit == "wrap":
            _put(obj, path, [items])
        elif edit == "nested" and items and isinstance(items[0], dict | list):
            return mutate(rng, {"root": items}, rng.choice(["drop", "retype", "unknown"])) or True
        else:
            items.clear()
    return True


def validate_mutants(seed: int, per_object: int
                     ) -> Iterator[tuple[int, dict[str, Any], dict[str, Any], list[str]]]:
    """Every example object mutated ``per_object`` times (one to three mutations each),
    seeded: (schema minor, original, mutant, the mutations applied), skipping the rounds
    where no mutation found a spot."""
    rng = random.Random(seed)
    for minor, original in example_objects():
        for round_ in range(per_object):
            obj = copy.deepcopy(original)
            applied = [m for m in rng.sample(MUTATIONS, k=1 + round_ % 3) if mutate(rng, obj, m)]
            if applied:
                yield minor, original, obj, applied


# ----------------------------------------------------------- the CRD differential's mutants

_GATEWAY_SPEC = {
    "gatewayClassName": "istio",
    "listeners": [{"name": "http", "port": 80, "protocol": "HTTP",
                   "allowedRoutes": {"namespaces": {"from": "All"}}}],
}
_ROUTE_SPEC = {
    "parentRefs": [{"group": "gateway.networking.k8s.io", "kind": "Gateway",
                    "name": "inference-gateway", "namespace": "gateway-system"}],
    "rules": [{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}],
               "backendRefs": [{"group": "inference.networking.k8s.io",
                                "kind": "InferencePool", "name": "llama"}]}],
}
CRD_EXTRA: list[dict[str, Any]] = [
    {"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
     "metadata": {"name": "inference-gateway", "namespace": "gateway-system"},
     "spec": _GATEWAY_SPEC},
    {"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "Gateway",
     "metadata": {"name": "inference-gateway", "namespace": "gateway-system"},
     "spec": _GATEWAY_SPEC},
    {"apiVersion": "gateway.networking.k8s.io/v1beta1", "kind": "HTTPRoute",
     "metadata": {"name": "llama", "namespace": "inference"}, "spec": _ROUTE_SPEC},
    {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "OCIRepository",
     "metadata": {"name": "dra-driver", "namespace": "flux-system"},
     "spec": {"interval": "12h", "url": "oci://registry.k8s.io/dra-driver-nvidia/chart",
              "ref": {"semver": ">=25.8.0"}, "layerSelector": {
                  "mediaType": "application/vnd.cncf.helm.chart.content.v1.tar+gzip",
                  "operation": "copy"}}},
    {"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
     "metadata": {"name": "gpu-fleet", "namespace": "argocd"},
     "spec": {"sourceRepos": ["https://github.com/example/fleet.git"],
              "destinations": [{"server": "https://kubernetes.default.svc", "namespace": "*"}],
              "clusterResourceWhitelist": [{"group": "*", "kind": "*"}]}},
    {"apiVersion": "monitoring.coreos.com/v1", "kind": "PodMonitor",
     "metadata": {"name": "dcgm", "namespace": "gpu-operator"},
     "spec": {"selector": {"matchLabels": {"app": "nvidia-dcgm-exporter"}},
              "podMetricsEndpoints": [{"port": "metrics", "interval": "15s"}]}},
    {"apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
     "metadata": {"name": "dra-driver", "namespace": "flux-system"},
     "spec": {"interval": "30m", "chartRef": {"kind": "OCIRepository", "name": "dra-driver"},
              "install": {"strategy": {"name": "RetryOnFailure", "retryInterval": "2m"}},
              "upgrade": {"strategy": {"name": "RetryOnFailure"}, "crds": "CreateReplace"},
              "kubeConfig": {"secretRef": {"name": "kc"}}}},
    {"apiVersion": "keda.sh/v1alpha1", "kind": "TriggerAuthentication",
     "metadata": {"name": "prom", "namespace": "inference"},
     "spec": {"secretTargetRef": [{"parameter": "bearerToken", "name": "tok", "key": "t"}]}},
    {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "HelmChart",
     "metadata": {"name": "gpu-operator", "namespace": "flux-system"},
     "spec": {"chart": "gpu-operator", "interval": "1h",
              "sourceRef": {"kind": "HelmRepository", "name": "nvidia"}}},
]
"""A realistic example of each bundled kind the example fleet does not render."""


@functools.cache
def upstream_crds() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) → openAPIV3Schema, read straight from the bundled data files."""
    found = {}
    for path in sorted(CRD_DATA.glob("*.json.gz")):
        crd = json.loads(gzip.decompress(path.read_bytes()))["crd"]
        for version in crd["spec"]["versions"]:
            key = (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
            found[key] = version["schema"]["openAPIV3Schema"]
    return found


def canon(v: Any) -> str:
    """JSON equality as a string: ``true`` is not ``1``."""
    return json.dumps(v, sort_keys=True)


def child(s: dict[str, Any] | None, key: Any) -> dict[str, Any] | None:
    """The schema of ``key`` (a property name or, for an int, an item) under schema ``s``."""
    if s is None:
        return None
    if isinstance(key, int):
        return s.get("items") if isinstance(s.get("items"), dict) else None
    if key in s.get("properties", {}):
        found: dict[str, Any] = s["properties"][key]
        return found
    extra = s.get("additionalProperties")
    return extra if isinstance(extra, dict) else None


_OTHER: dict[type, list[Any]] = {
    str: [7, True, ["x"]], int: ["7", 1.5, False], float: ["0.5", True], bool: ["true", 1],
    dict: ["x", 1, [{}]], list: ["x", {"a": []}], type(None): [{}, "x"]}
_CRD_BAD_STRINGS = ("NotAnEnumValue", "has spaces and UPPER", "-lead", "", "1Gix", "10x",
                    "h" * 300)


def _sample(s: dict[str, Any]) -> Any:
    if "enum" in s:
        return s["enum"][0]
    if s.get("x-kubernetes-int-or-string"):
        return 1
    return {"string": "x", "integer": 1000, "number": 1.5, "boolean": True, "array": [],
            "object": {}}.get(s.get("type", ""), "x")


_DROP = object()


def _with(root: Any, path: Path_, value: Any) -> Any:
    out = copy.deepcopy(root)
    node = out
    for part in path[:-1]:
        node = node[part]
    if value is _DROP:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return out


def _spots(v: Any, s: dict[str, Any] | None, path: Path_) -> Iterator[tuple[Path_, Any]]:
    """(path, new value) of every mutation of the node at ``path`` and below it."""
    if path:
        for other in _OTHER[type(v)]:
            yield path, other
    if s is not None:
        yield from _guided(v, s, path)
    if isinstance(v, dict):
        yield (*path, "zzUnknown"), 1
        for k, x in v.items():
            if path or k not in ("apiVersion", "kind"):  # they choose the schema
                yield (*path, k), _DROP
                yield from _spots(x, child(s, k) if path or k != "metadata" else None,
                                  (*path, k))
        for k, c in (s or {}).get("properties", {}).items():
            if k not in v:
                yield (*path, k), _sample(c)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from _spots(x, child(s, 0), (*path, i))
        if v:
            yield path, [*v, copy.deepcopy(v[0])]
        yield path, []


def _guided(v: Any, s: dict[str, Any], path: Path_) -> Iterator[tuple[Path_, Any]]:
    """Values just outside what the node's schema allows."""
    if isinstance(v, str):
        for bad in _CRD_BAD_STRINGS:
            yield path, bad
        if "maxLength" in s:
            yield path, "a" * (s["maxLength"] + 1)
    if type(v) in (int, float):
        for bound, step in (("minimum", -1), ("maximum", 1)):
            if bound in s:
                yield path, s[bound] + step
                yield path, s[bound]
        yield path, 0
        yield path, -1
        yield path, 1000
    if isinstance(v, list) and "maxItems" in s and v:
        yield path, v * (s["maxItems"] + 1)


_META = [(("metadata", "name"), "Bad_Name"), (("metadata", "name"), "a" * 254),
         (("metadata", "namespace"), "Bad"), (("metadata", "labels"), {"bad key": "x"}),
         (("metadata", "labels"), {"ok": "v" * 64}), (("metadata", "labels"), {"a/b/c": "x"}),
         (("metadata", "annotations"), {"a/b/c": "x"}), (("metadata", "bogus"), 1),
         (("metadata", "annotations"), {"big": "x" * (256 * 1024)}),
         (("metadata", "labels"), {"example.com/ok": ""})]


@functools.cache
def crd_objects() -> tuple[dict[str, Any], ...]:
    """Every custom resource of the example fleet's render, then an example of each
    bundled kind's test case (``tests/emit/test_crd_schemas.py``) and :data:`CRD_EXTRA`."""
    from tests.emit.test_crd_schemas import CASES

    plan = load_plan(REPO / "profiles", base=REPO)
    env = make_environment()
    found = [dict(obj.data) for cluster in plan.clusters
             for obj in render_cluster(env, cluster)[0]
             if (obj.api_version, obj.kind) in upstream_crds()]
    found += [c[0] for c in CASES.values()] + CRD_EXTRA
    return tuple(copy.deepcopy(o) for o in found)


def crd_mutants(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every distinct mutant of one custom resource, in a fixed order."""
    schema = upstream_crds()[(obj["apiVersion"], obj["kind"])]
    seen: set[str] = set()
    for path, value in [*_spots(obj, schema, ()), *_META]:
        mutant = _with(obj, path, value)
        key = canon(mutant)
        if key not in seen:
            seen.add(key)
            yield mutant
