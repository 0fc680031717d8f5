"""Hypothesis strategies for whole fleets: valid ones, and hostile mutations of them.

:func:`fleets` draws a small fleet that lints clean and renders: one or two clusters of
Kubernetes 1.31–1.35 (DRA or device plugin, Argo CD or Flux or no GitOps), node pools of
catalog GPUs (whole, or partitioned by a MIG layout that the GPU can hold), a GPUClass per
kind of device, services of catalog models (or a ``kind: Model`` copy of one) sized to fit
the devices they get, with replicas the cluster can hold. The drawn fleet is plain data
(:class:`Fleet`); :meth:`Fleet.files` writes it as YAML in one of several file layouts.

:func:`mutations` takes a fleet and breaks it: wrong types, unknown keys, references to
missing names, huge / negative / zero numbers, hostile unicode, path tricks in names, a
``kind`` that does not exist, lists for maps, empty files and documents, YAML alias bombs,
deep nesting, non-UTF-8 and NUL bytes, duplicate keys, tabs, oversized files, unsafe YAML
tags, truncation. A :class:`Mutated` fleet says which file it broke and whether gen must
refuse it.
"""

from __future__ import annotations

import copy
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from gen.nvidia.gpus import GPU, gpu_catalog
from gen.serving.model_catalog import LLMSpec, model_catalog

GIB = 1 << 30
MIB = 1 << 20

DRIVERS = ("580.65.06", "580.95.05", "580.105.08")
"""Driver versions new enough for gen's default vLLM image (CUDA 13) and every MIG profile."""
NAMESPACES = ("inference", "research", "team-a", "edge-serving", "gpu-operator", "monitoring",
              "default")
"""Service namespaces, some of them also namespaces gen's platform objects live in."""
MINORS = (31, 32, 33, 34, 35)
_RUNTIME_CONFIG = {31: "resource.k8s.io/v1alpha3", 32: "resource.k8s.io/v1beta1",
                   33: "resource.k8s.io/v1beta2"}

# MIG layouts as {compute slices: instances}; the profile names come from the GPU's table.
_LAYOUTS_7 = ({1: 7}, {2: 3}, {3: 2}, {7: 1}, {3: 1, 2: 1, 1: 2}, {4: 1, 2: 1, 1: 1})
_LAYOUTS_4 = ({1: 4}, {2: 2}, {4: 1}, {2: 1, 1: 2})
_SLICES = re.compile(r"^(\d+)g\.\d+gb$")


# --------------------------------------------------------------------------- catalogs


def nvidia_gpus() -> tuple[GPU, ...]:
    """Every discrete NVIDIA GPU of the catalog (Apple chips and unified memory left out)."""
    return tuple(
        g for g in gpu_catalog().all()
        if g.vendor.lower().startswith("nvidia") and not g.unified_memory
    )


def _base_profiles(gpu: GPU) -> dict[int, str]:
    """compute slices → the plain (no ``+me``/``-me``/``+gfx``) profile with the fewest units."""
    out: dict[int, tuple[int, str]] = {}
    for p in gpu.mig_profiles:
        match = _SLICES.match(p.name)
        if match is None:
            continue
        slices = int(match.group(1))
        if slices not in out or p.size < out[slices][0]:
            out[slices] = (p.size, p.name)
    return {k: v[1] for k, v in out.items()}


def mig_layouts_for(gpu: GPU) -> list[dict[str, int]]:
    """Physically valid whole-GPU MIG layouts of ``gpu`` (checked by test_fuzz too)."""
    if not gpu.mig_capable:
        return []
    base = _base_profiles(gpu)
    patterns = _LAYOUTS_7 if gpu.mig_compute_slices >= 7 or max(base) >= 7 else _LAYOUTS_4
    layouts = []
    for pattern in patterns:
        if all(s in base for s in pattern):
            layouts.append({base[s]: n for s, n in pattern.items()})
    return layouts


def models() -> tuple[LLMSpec, ...]:
    """The catalog's models."""
    return model_catalog().all()


def fits(model: LLMSpec, memory_mib: int, count: int) -> bool:
    """A conservative memory check (gen's own fit check must agree at max_model_len ≤ 4096)."""
    return model.weight_bytes / count * 1.2 + 4 * GIB <= 0.9 * memory_mib * MIB


def splits(model: LLMSpec, count: int) -> bool:
    """Tensor parallelism ``count`` divides the model's heads."""
    return model.attention_heads % count == 0 and model.kv_heads % count == 0


# --------------------------------------------------------------------------- fleet data


@dataclass
class Fleet:
    """A drawn fleet: documents by kind, and how to lay them out as files."""

    clusters: list[dict[str, Any]]
    layouts: list[dict[str, Any]]
    classes: list[dict[str, Any]]
    services: list[dict[str, Any]]
    models: list[dict[str, Any]]
    layout: str = "by-kind"
    """'by-kind' (clusters/x.yaml, ...), 'one-file' (fleet.yaml), or 'by-cluster'."""
    flow: bool = False
    sort_keys: bool = False
    extension: str = ".yaml"

    def documents(self) -> list[dict[str, Any]]:
        """Every document, in kind order."""
        return [*self.clusters, *self.layouts, *self.classes, *self.services, *self.models]

    def grouped(self) -> dict[str, list[dict[str, Any]]]:
        """relative path under profiles/ → its documents."""
        ext = self.extension
        if self.layout == "one-file":
            return {f"fleet{ext}": self.documents()}
        if self.layout == "by-cluster":
            out: dict[str, list[dict[str, Any]]] = {f"common{ext}": [*self.layouts,
                                                                       *self.classes,
                                                                       *self.models]}
            for cluster in self.clusters:
                out[f"{cluster['name']}/cluster{ext}"] = [cluster]
            for svc in self.services:
                out.setdefault(f"{svc['clusters'][0]}/services{ext}", []).append(svc)
            return {k: v for k, v in out.items() if v}
        folders = {"Cluster": "clusters", "MIGLayout": "mig-layouts", "GPUClass": "gpu-classes",
                   "InferenceService": "services", "Model": "models"}
        out = {}
        for i, doc in enumerate(self.documents()):
            name = doc["name"] if doc["kind"] != "Model" else f"model-{i}"
            out[f"{folders[doc['kind']]}/{name}{ext}"] = [doc]
        return out

    def dump(self, docs: Sequence[Any]) -> str:
        """YAML text of some documents, in this fleet's style."""
        return "# yaml-language-server: $schema=../schema/gen-profile.schema.json\n" + (
            yaml.safe_dump_all(
                docs, sort_keys=self.sort_keys, allow_unicode=True,
                default_flow_style=None if self.flow else False, width=100,
            )
        )

    def files(self) -> dict[str, bytes]:
        """relative path under profiles/ → file bytes."""
        return {rel: self.dump(docs).encode("utf-8") for rel, docs in self.grouped().items()}


_NAME = st.from_regex(r"\A[a-z][a-z0-9]{0,5}(-[a-z0-9]{1,5}){0,2}\Z")


def _unique_names(n: int) -> st.SearchStrategy[list[str]]:
    return st.lists(_NAME, min_size=n, max_size=n, unique=True).filter(
        lambda names: "vllm" not in names
    )


@dataclass
class _Pool:
    cluster: str
    name: str
    gpu: GPU
    gpus_per_node: int
    nodes: int
    layout: dict[str, Any] | None = None
    slots: dict[str, int] = field(default_factory=dict)
    """MIG profile → free instances in the pool (MIG pools) ."""
    free_nodes: int = 0


def _pool_slots(gpu_count: int, layout: dict[str, Any], nodes: int) -> dict[str, int]:
    slots: dict[str, int] = {}
    if layout.get("profiles") is not None:
        for prof, n in layout["profiles"].items():
            slots[prof] = slots.get(prof, 0) + n * gpu_count * nodes
    else:
        for entry in layout["per_gpu"]:
            for prof, n in entry["profiles"].items():
                slots[prof] = slots.get(prof, 0) + n * len(entry["gpus"]) * nodes
    return slots


@st.composite
def _layout_doc(draw: st.DrawFn, name: str, gpu: GPU, gpus_per_node: int) -> dict[str, Any]:
    choices = mig_layouts_for(gpu)
    gpu_ref = draw(st.sampled_from([gpu.id, gpu.product_name, gpu.pci_device_ids[0]]))
    doc: dict[str, Any] = {"kind": "MIGLayout", "name": name, "gpu": gpu_ref}
    if gpus_per_node >= 2 and draw(st.booleans()):
        cut = draw(st.integers(1, gpus_per_node - 1))
        first, second = draw(st.sampled_from(choices)), draw(st.sampled_from(choices))
        doc["per_gpu"] = [
            {"gpus": list(range(cut)), "profiles": dict(first)},
            {"gpus": list(range(cut, gpus_per_node)), "profiles": dict(second)},
        ]
    else:
        doc["profiles"] = dict(draw(st.sampled_from(choices)))
    return doc


@st.composite
def _cluster(
    draw: st.DrawFn, name: str, pool_names: list[str], layout_names: list[str],
    gpus: Sequence[GPU], layouts: list[dict[str, Any]], pools: list[_Pool],
) -> dict[str, Any]:
    minor = draw(st.sampled_from(MINORS))
    version = draw(st.sampled_from([f"1.{minor}", f"1.{minor}.{draw(st.integers(0, 12))}",
                                    f"v1.{minor}.{draw(st.integers(0, 12))}"]))
    allocation = draw(st.sampled_from(["dra", "device-plugin"]))
    doc: dict[str, Any] = {"kind": "Cluster", "name": name, "kubernetes_version": version,
                           "allocation": allocation}
    if allocation == "dra" and minor in _RUNTIME_CONFIG:
        doc["runtime_config"] = [_RUNTIME_CONFIG[minor]]
        doc["feature_gates"] = {"DynamicResourceAllocation": True}
    if allocation == "dra" and minor < 32:
        # Every DRA driver chart since 25.3.1 needs Kubernetes >= 1.32 (GEN215).
        doc["dra_driver"] = {"version": "25.3.0"}
    engine = draw(st.sampled_from(["argocd", "flux", None]))
    if engine is not None:
        gitops: dict[str, Any] = {"engine": engine,
                                  "repo_url": "https://git.example.com/org/fleet.git"}
        if draw(st.booleans()):
            gitops["revision"] = draw(st.sampled_from(["main", "v1.2.3", "release-2"]))
        if draw(st.booleans()):
            gitops["path_prefix"] = draw(st.sampled_from(["out", "deploy/out", "fleet/out"]))
        if engine == "argocd" and draw(st.booleans()):
            gitops["wave"] = draw(st.integers(0, 3))
        doc["gitops"] = gitops
    # KEDA everywhere (any service may autoscale); the Prometheus Operator on some clusters.
    doc["addons"] = ["keda", *(["prometheus-operator"] if draw(st.booleans()) else [])]
    node_pools = []
    used_gpus: set[str] = set()
    for pool_name in pool_names:
        gpu = draw(st.sampled_from([g for g in gpus if g.id not in used_gpus]))
        used_gpus.add(gpu.id)
        gpus_per_node = draw(st.sampled_from([1, 2, 4, 8]))
        nodes = draw(st.integers(1, 4))
        pool: dict[str, Any] = {
            "name": pool_name,
            "gpu": draw(st.sampled_from([gpu.id, gpu.product_name])),
            "gpus_per_node": gpus_per_node,
            "nodes": nodes,
            "driver_version": draw(st.sampled_from(DRIVERS)),
        }
        plan = _Pool(name, pool_name, gpu, gpus_per_node, nodes, free_nodes=nodes)
        if gpu.mig_capable and layout_names and draw(st.booleans()):
            layout = draw(_layout_doc(layout_names.pop(), gpu, gpus_per_node))
            layouts.append(layout)
            pool["mig_layout"] = layout["name"]
            plan.layout = layout
            plan.slots = _pool_slots(gpus_per_node, layout, nodes)
        if draw(st.booleans()):
            pool["labels"] = {"gen.dev/pool": pool_name}
        if draw(st.booleans()):
            pool["taints"] = [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
        node_pools.append(pool)
        pools.append(plan)
    doc["node_pools"] = node_pools
    if draw(st.booleans()):
        doc["gpu_operator"] = {"version": "v25.10.1"}
    return doc


def _class_for_gpu(draw: st.DrawFn, name: str, gpu: GPU) -> dict[str, Any]:
    match: dict[str, Any] = {"product": draw(st.sampled_from([gpu.id, gpu.product_name]))}
    if draw(st.booleans()):
        match["architecture"] = gpu.architecture
    if draw(st.booleans()):
        match["min_memory"] = f"{max(1, gpu.memory_mib // 1024 - 2)}Gi"
    if draw(st.booleans()):
        match["min_compute_capability"] = gpu.compute_capability
    doc: dict[str, Any] = {"kind": "GPUClass", "name": name, "match": match}
    if draw(st.booleans()):
        doc["device_type"] = "gpu"
    return doc


def _mig_memory_mib(pool: _Pool, profile: str) -> int:
    """The memory of one ``profile`` instance on the pool's GPU (a profile its layout has)."""
    mig = pool.gpu.mig_profile(profile)
    assert mig is not None, f"{profile} is not a MIG profile of {pool.gpu.id}"
    return mig.memory_mib


@st.composite
def _service(
    draw: st.DrawFn, name: str, pools: list[_Pool], classes: dict[str, dict[str, Any]],
    extra_models: list[dict[str, Any]], model_names: list[str], dra: dict[str, bool],
) -> dict[str, Any] | None:
    """A service on one class in one cluster, sized to fit and to leave room for others."""
    # (cluster, class name, candidate pools, is_mig, profile)
    targets: list[tuple[str, str, list[_Pool], bool, str]] = []
    for cls_name, cls in classes.items():
        for cluster in sorted({p.cluster for p in pools}):
            in_cluster = [p for p in pools if p.cluster == cluster]
            if cls.get("device_type") == "mig":
                profile = cls["match"]["mig_profile"]
                cands = [p for p in in_cluster if p.layout is not None and profile in p.slots]
                if cands:
                    targets.append((cluster, cls_name, cands, True, profile))
            else:
                gpu_id = cls["_gpu"]
                cands = [p for p in in_cluster if p.layout is None and p.gpu.id == gpu_id]
                if cands:
                    targets.append((cluster, cls_name, cands, False, ""))
    if not targets:
        return None
    cluster, cls_name, cands, is_mig, profile = draw(st.sampled_from(targets))
    pinned = len(cands) == 1 and draw(st.booleans())
    if is_mig:
        memory = min(_mig_memory_mib(p, profile) for p in cands)
        counts = [1]
    else:
        # A device-plugin pod may land on any whole-GPU pool its node selector allows, so
        # there (unless pinned) the model must fit the smallest GPU of the cluster; a DRA
        # claim gets only the class's product.
        sized = cands if pinned or dra[cluster] else [
            p for p in pools if p.cluster == cluster and p.layout is None]
        memory = min(p.gpu.memory_mib for p in sized)
        counts = [c for c in (1, 2, 4, 8) if c <= min(p.gpus_per_node for p in cands)]
    options = [(m, c) for m in models() for c in counts if splits(m, c) and fits(m, memory, c)]
    if not options:
        return None
    model, count = draw(st.sampled_from(options))
    # Capacity: whole nodes for full GPUs, instances for MIG slices.
    if is_mig:
        capacity = sum(p.slots[profile] for p in cands)
    else:
        capacity = sum(p.free_nodes * (p.gpus_per_node // count) for p in cands)
    if capacity == 0 and dra[cluster]:
        return None
    replicas = draw(st.integers(0 if draw(st.booleans()) else min(1, capacity),
                                min(capacity, 3))) if dra[cluster] else draw(st.integers(0, 3))
    autoscale = replicas >= 1 and draw(st.booleans())
    wanted = replicas
    if autoscale:
        wanted = draw(st.integers(replicas, min(capacity, 6))) if dra[cluster] else replicas + 2
    if dra[cluster]:
        _take(cands, is_mig, profile, count, wanted)
    model_ref = model.id
    if draw(st.booleans()) and model_names:
        model_ref = model_names.pop()
        extra_models.append(_model_doc(model_ref, model))
    doc: dict[str, Any] = {
        "kind": "InferenceService", "name": name,
        "namespace": draw(st.sampled_from(NAMESPACES)),
        "model": model_ref, "clusters": [cluster],
        "gpu": {"gpu_class": cls_name},
    }
    if count > 1 or draw(st.booleans()):
        doc["gpu"]["count"] = count
    if count > 1:
        doc["parallelism"] = {"tensor": count}
    if pinned:
        doc["node_pool"] = cands[0].name
    if autoscale:
        doc["autoscaling"] = {"min_replicas": replicas, "max_replicas": wanted}
    elif replicas != 1 or draw(st.booleans()):
        doc["replicas"] = replicas
    serving: dict[str, Any] = {}
    if draw(st.booleans()):
        serving["max_model_len"] = min(model.max_context, draw(st.sampled_from([1024, 2048,
                                                                                4096])))
    else:
        serving["max_model_len"] = min(model.max_context, 4096)
    if draw(st.booleans()):
        serving["max_num_seqs"] = draw(st.sampled_from([8, 16, 32, 64]))
    if draw(st.booleans()):
        serving["kv_cache_dtype"] = draw(st.sampled_from(["auto", "fp8"]))
    if draw(st.booleans()):
        serving["served_model_name"] = draw(st.sampled_from(["chat", name, "llm-main"]))
    if draw(st.booleans()):
        serving["extra_args"] = draw(st.sampled_from([["--enable-prefix-caching"],
                                                      ["--disable-log-requests"]]))
    doc["serving"] = serving
    if draw(st.booleans()):
        doc["exposure"] = {"port": draw(st.integers(1024, 65535))}
        if draw(st.booleans()):
            doc["exposure"]["allow_from_namespaces"] = draw(
                st.lists(st.sampled_from(NAMESPACES), max_size=2, unique=True)
            )
    if model.license_gated or draw(st.booleans()):
        doc["auth"] = {"hf_token": {"name": "hf-token", "key": "token"}}
    if draw(st.booleans()):
        doc.setdefault("auth", {})["api_key"] = {"name": f"{name}-api-key", "key": "key"}
    if draw(st.booleans()):
        doc["storage"] = {"cache_size": draw(st.sampled_from(["20Gi", "200Gi", "1Ti"]))}
    if draw(st.booleans()):
        doc["resources"] = {"cpu": draw(st.sampled_from(["2", "4", "500m"])),
                            "memory": draw(st.sampled_from(["16Gi", "64Gi"]))}
    return doc


def _take(cands: list[_Pool], is_mig: bool, profile: str, count: int, wanted: int) -> None:
    left = wanted
    for p in cands:
        if is_mig:
            used = min(left, p.slots[profile])
            p.slots[profile] -= used
        else:
            per_node = p.gpus_per_node // count
            nodes = min(p.free_nodes, math.ceil(left / per_node)) if per_node else 0
            p.free_nodes -= nodes
            used = min(left, nodes * per_node)
        left -= used


def _model_doc(name: str, model: LLMSpec) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "kind": "Model", "name": name, "parameters": model.parameters,
        "layers": model.layers, "hidden_size": model.hidden_size,
        "attention_heads": model.attention_heads, "kv_heads": model.kv_heads,
        "head_dim": model.head_dim, "max_context": model.max_context,
        "weight_dtype": model.weight_dtype,
    }
    for key in ("active_parameters", "quantization", "experts", "experts_per_token"):
        value = getattr(model, key)
        if value is not None:
            doc[key] = value
    return doc


@st.composite
def fleets(draw: st.DrawFn) -> Fleet:
    """A small fleet that ``gen lint`` passes and ``gen render`` renders."""
    n_clusters = draw(st.integers(1, 2))
    n_pools = [draw(st.integers(1, 3)) for _ in range(n_clusters)]
    names = draw(_unique_names(n_clusters + sum(n_pools) + 12))
    cluster_names, rest = names[:n_clusters], names[n_clusters:]
    gpus = nvidia_gpus()
    layouts: list[dict[str, Any]] = []
    pools: list[_Pool] = []
    layout_names = rest[:4]
    clusters = []
    offset = 4
    for i, cname in enumerate(cluster_names):
        pool_names = rest[offset:offset + n_pools[i]]
        offset += n_pools[i]
        clusters.append(draw(_cluster(cname, pool_names, layout_names, gpus, layouts, pools)))
    dra = {c["name"]: c["allocation"] == "dra" for c in clusters}
    # One class per GPU of a whole-GPU pool, one per MIG profile of a layout.
    classes: dict[str, dict[str, Any]] = {}
    for pool in pools:
        if pool.layout is None and pool.gpu.id not in {c.get("_gpu") for c in classes.values()}:
            cname = f"{pool.gpu.id}-x"[:40].strip("-.") if draw(st.booleans()) else pool.gpu.id
            doc = _class_for_gpu(draw, cname, pool.gpu)
            doc["_gpu"] = pool.gpu.id
            classes[cname] = doc
        for profile in sorted(pool.slots):
            cname = "mig-" + profile.replace(".", "-")
            if cname not in classes:
                mig_doc: dict[str, Any] = {"kind": "GPUClass", "name": cname,
                                           "device_type": "mig",
                                           "match": {"mig_profile": profile}}
                classes[cname] = mig_doc
    service_names = rest[offset:offset + 4]
    model_names = [f"example-org/{n}-llm" for n in rest[offset + 4:offset + 6]]
    services: list[dict[str, Any]] = []
    extra_models: list[dict[str, Any]] = []
    for sname in service_names[:draw(st.integers(0, 4))]:
        svc = draw(_service(sname, pools, classes, extra_models, model_names, dra))
        if svc is not None:
            services.append(svc)
    for cluster in clusters:
        if cluster["allocation"] == "dra" and bool(classes) and draw(st.booleans()):
            cls = draw(st.sampled_from(sorted(classes)))
            cluster["quotas"] = [{"namespace": draw(st.sampled_from(NAMESPACES)),
                                  "gpu_class": cls, "devices": draw(st.integers(0, 64))}]
    class_docs = [{k: v for k, v in c.items() if not k.startswith("_")}
                  for c in classes.values()]
    return Fleet(
        clusters=clusters, layouts=layouts, classes=class_docs, services=services,
        models=extra_models,
        layout=draw(st.sampled_from(["by-kind", "one-file", "by-cluster"])),
        flow=draw(st.booleans()), sort_keys=draw(st.booleans()),
        extension=draw(st.sampled_from([".yaml", ".yml"])),
    )


def example_fleet() -> Fleet:
    """The repository's example fleet (profiles/: Apple pools and Mac hosts included)."""
    root = Path(__file__).resolve().parent.parent / "profiles"
    kinds: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(root.rglob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text("utf-8")):
            if doc is not None:
                kinds.setdefault(doc["kind"], []).append(doc)
    return Fleet(
        clusters=kinds.get("Cluster", []), layouts=kinds.get("MIGLayout", []),
        classes=kinds.get("GPUClass", []), services=kinds.get("InferenceService", []),
        models=kinds.get("Model", []),
    )


def any_fleet() -> st.SearchStrategy[Fleet]:
    """Mostly drawn fleets, sometimes the repository's example fleet."""
    return st.integers(0, 4).flatmap(lambda n: st.just(example_fleet()) if n == 0 else fleets())


# --------------------------------------------------------------------------- mutations


@dataclass
class Mutated:
    """A broken fleet: the files to write, what was done, and what gen must do."""

    files: dict[str, bytes]
    what: str
    target: str
    """The file the mutation broke (relative to profiles/)."""
    must_fail: bool
    """True when no correct gen accepts the result."""
    located_in_target: bool = False
    """True when the error must name ``target``."""
    file_limit: int | None = None
    """Run with loader.MAX_FILE_BYTES patched to this (oversized-file mutations)."""


HOSTILE_STRINGS = (
    "", " ", "../../etc/passwd", "/etc/passwd", "..", ".", "a/../../b", "C:\\Windows",
    "UPPER", "Has Space", "x" * 64, "y" * 300, "é", "\u202egnp.exe", "a\u200bb",
    "\u0000", "\t", "\n", "😀", "-leading", "trailing-", "a..b", "{{ 7*7 }}",
    "${HOME}", "$(rm -rf /)", "'; DROP TABLE", "\ufeff", "\u0301", "ℌ", "ß", "İ",
    "a" * 10_000, "1e5000", "1" * 300 + "Gi", "9" * 40, "0.0000000001",
)
HUGE_NUMBERS = (10**30, 10**400, -(10**400), -(10**30), -1, 0, 2**63, 2**64 + 1,
                -(2**63) - 1, 1e308, -0.0, float("inf"), float("-inf"), float("nan"), 0.5, 1e-9,
                # just past the bounds the models and catalogs set
                7, 8, 12, 13, 16, 17, 64, 65, 1000, 1001, 65535, 65536, 100_000, 100_001)
OTHER_TYPES: tuple[Any, ...] = (None, True, False, 0, 1.5, "text", [], {}, [1, 2], {"a": 1},
                                [[[]]], "2024-01-01")
_UNICODE = st.text(
    st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=20
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every key path inside a document (maps and lists)."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _get(doc: Any, path: Sequence[Any]) -> Any:
    for seg in path:
        doc = doc[seg]
    return doc


def _set(doc: Any, path: Sequence[Any], value: Any) -> None:
    _get(doc, path[:-1])[path[-1]] = value


def _replace_text(files: dict[str, bytes], rel: str, text: str) -> dict[str, bytes]:
    out = dict(files)
    out[rel] = text.encode("utf-8")
    return out


# Data mutations: (fleet copy, drawn document) → description, must_fail, located_in_target.
_DataMutation = Callable[[st.DrawFn, dict[str, Any]], tuple[str, bool]]


def _wrong_type(draw: st.DrawFn, doc: dict[str, Any]) -> tuple[str, bool]:
    path = draw(st.sampled_from([p for p in _paths(doc) if p and p[-1] != "kind"]))
    old = _get(doc, path)
    new = draw(st.sampled_from([v for v in OTHER_TYPES if type(v) is not type(old)]))
    _set(doc, path, copy.deepcopy(new))
    return f"wrong type at {path}: {old!r} → {new!r}", False


def _unknown_key(draw: st.DrawFn, doc: dict[str, Any]) -> tuple[str, bool]:
    maps = [p for p in _paths(doc) if isinstance(_get(doc, p), dict)
            and not (p and p[-1] in ("labels", "feature_gates", "profiles"))]
    path = draw(st.sampled_from(maps))
    key = draw(st.sampled_from(["colour", "nodes_", "Kind", "name ", "spec", "ñame"]))
    target = _get(doc, path)
    if key in target:
        return "no-op", False
    target[key] = draw(st.sampled_from(OTHER_TYPES))
    return f"unknown key {key!r} at {path}", True


def _huge_number(draw: st.DrawFn, doc: dict[str, Any]) -> tuple[str, bool]:
    numeric = [p for p in _paths(doc) if p and isinstance(_get(doc, p), int)
               and not isinstance(_get(doc, p), bool)]
    if not numeric:
        numeric = [p for p in _paths(doc) if p and p[-1] != "kind"]
    path = draw(st.sampled_from(numeric))
    value = draw(st.sampled_from(HUGE_NUMBERS))
    _set(doc, path, value)
    return f"number at {path} → {value!r}", False


def _hostile_string(draw: st.DrawFn, doc: dict[str, Any]) -> tuple[str, bool]:
    strings = [p for p in _paths(doc) if p and isinstance(_get(doc, p), str) and p[-1] != "kind"]
    path = draw(st.sampled_from(strings))
    value = draw(st.one_of(st.sampled_from(HOSTILE_STRINGS), _UNICODE,
                           _UNICODE.map(lambda s: f"{s}{_get(doc, path)}")))
    _set(doc, path, value)
    return f"string at {path} → {value[:40]!r}", False


_NAME_PATTERNS = {
    "Cluster": r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", "MIGLayout": r"[a-z0-9]([-a-z0-9]*[a-z0-9])?",
    "InferenceService": r"[a-z0-9]([-a-z0-9]*[a-z0-9])?",
    "GPUClass": r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*",
    "Model": r"[A-Za-z0-9][A-Za-z0-9._\-/]*",
}
_NAME_LIMITS = {"GPUClass": 253, "Model": 200}


def _hostile_name(draw: st.DrawFn, doc: dict[str, Any]) -> tuple[str, bool]:
    bad = draw(st.sampled_from([*HOSTILE_STRINGS, "../x", "/abs", "Upper-Case", "a" * 64,
                                "x/y", "a_b", "a.b"]))
    doc["name"] = bad
    kind = doc["kind"]
    valid = (re.fullmatch(_NAME_PATTERNS[kind], bad) is not None
             and len(bad) <= _NAME_LIMITS.get(kind, 63))
    return f"name → {bad[:40]!r}", not valid


def _bad_kind(draw: st.DrawFn, doc: dict[str, Any]) -> tuple[str, bool]:
    kind = draw(st.sampled_from(["Clusterr", "cluster", "Deployment", "", None, 7, ["Cluster"],
                                 {"Cluster": 1}, "GPUclass", "inferenceservice"]))
    if kind is None and draw(st.booleans()):
        del doc["kind"]
        return "kind removed", True
    doc["kind"] = kind
    return f"kind → {kind!r}", True


def _list_for_map(draw: st.DrawFn, doc: dict[str, Any]) -> tuple[str, bool]:
    maps = [p for p in _paths(doc) if p and isinstance(_get(doc, p), dict)]
    if not maps:
        return _wrong_type(draw, doc)
    path = draw(st.sampled_from(maps))
    old = _get(doc, path)
    _set(doc, path, [old] if draw(st.booleans()) else list(old.items()))
    return f"list instead of map at {path}", True


def _drop_key(draw: st.DrawFn, doc: dict[str, Any]) -> tuple[str, bool]:
    if draw(st.booleans()):
        # any key at any depth: optional ones are fine to drop, paired ones are not
        keyed = [p for p in _paths(doc) if p and isinstance(p[-1], str) and p != ("kind",)]
        path = draw(st.sampled_from(keyed))
        del _get(doc, path[:-1])[path[-1]]
        return f"key {path} removed", False
    required = {"Cluster": ["name", "kubernetes_version", "allocation", "node_pools"],
                "MIGLayout": ["name", "gpu"], "GPUClass": ["name"],
                "InferenceService": ["name", "model", "clusters"],
                "Model": ["parameters", "layers", "name"]}[doc["kind"]]
    key = draw(st.sampled_from(required))
    doc.pop(key, None)
    return f"required key {key!r} removed", True


MUTATION_NAMES = (
    "wrong-type", "unknown-key", "missing-reference", "huge-number", "hostile-string",
    "hostile-name", "bad-kind", "list-for-map", "drop-key", "duplicate-document",
    "empty-file", "empty-document", "alias-bomb", "deep-nesting", "non-utf8", "nul-byte",
    "duplicate-key", "tabs", "oversized", "unsafe-tag", "truncate", "garbage", "odd-scalars",
    "document-not-a-map", "rename-file",
)
FILE_NAMES = (
    # (name, must fail: the name cannot go into messages and rendered headers)
    ("new\nline.yaml", True), ("tab\t.yaml", True), ("sep\u2028.yaml", True),
    ("nel\x85.yaml", True), ("bell\x07.yml", True), (os.fsdecode(b"\xff\xfe.yaml"), True),
    ("sp ace.yaml", False), ("ünïcödé.yaml", False), ("\u202eevil.yaml", False),
    ("a:b.yaml", False), ("#hash.yaml", False), ("-dash.yaml", False), ("'q\".yaml", False),
    ("x.YAML", False), (".hidden.yaml", False), ("a.yaml.bak", False), ("😀.yml", False),
    ("deep/er/still/x.yaml", False), ("..yaml", False),
)


def _missing_reference(draw: st.DrawFn, fleet: Fleet) -> tuple[str, bool] | None:
    """Point one reference at a name nothing defines."""
    refs: list[tuple[dict[str, Any], tuple[Any, ...]]] = []
    for svc in fleet.services:
        refs += [(svc, ("clusters", 0)), (svc, ("model",))]
        if "gpu" in svc:
            refs.append((svc, ("gpu", "gpu_class")))
        if "node_pool" in svc:
            refs.append((svc, ("node_pool",)))
    for cluster in fleet.clusters:
        for i, pool in enumerate(cluster["node_pools"]):
            if "gpu" in pool:
                refs.append((cluster, ("node_pools", i, "gpu")))
            if "mig_layout" in pool:
                refs.append((cluster, ("node_pools", i, "mig_layout")))
        for j, _ in enumerate(cluster.get("quotas", ())):
            refs.append((cluster, ("quotas", j, "gpu_class")))
    for layout in fleet.layouts:
        refs.append((layout, ("gpu",)))
    if not refs:
        return None
    doc, path = draw(st.sampled_from(refs))
    missing = draw(st.sampled_from(["missing", "h100-sxm5-80gbb", "no-such-name",
                                    "meta-llama/Llama-9-1T", "0x9999"]))
    _set(doc, path, missing)
    return f"reference {path} → {missing!r}", True


_DATA_MUTATIONS: dict[str, _DataMutation] = {
    "wrong-type": _wrong_type, "unknown-key": _unknown_key, "huge-number": _huge_number,
    "hostile-string": _hostile_string, "hostile-name": _hostile_name, "bad-kind": _bad_kind,
    "list-for-map": _list_for_map, "drop-key": _drop_key,
}


def alias_bomb(levels: int = 9, width: int = 9) -> str:
    """The "billion laughs": ``width ** levels`` strings from a few hundred bytes."""
    lines = ["kind: Cluster", 'lol0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for i in range(1, levels + 1):
        lines.append(f"lol{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * width) + "]")
    lines.append(f"name: *l{levels}")
    return "\n".join(lines) + "\n"


def deep_nesting(depth: int, style: str) -> str:
    """``depth`` levels of nested flow lists, flow maps, block maps or block lists."""
    if style == "flow-list":
        return "kind: Cluster\nname: " + "[" * depth + "]" * depth + "\n"
    if style == "flow-map":
        return "kind: Cluster\nname: " + "{a: " * depth + "1" + "}" * depth + "\n"
    if style == "block-map":
        return "kind: Cluster\nname:\n" + "".join(" " * (i + 1) + "a:\n" for i in range(depth))
    return "kind: Cluster\nname:\n" + "".join(" " * i + "-\n" for i in range(1, depth + 1))


@st.composite
def _mutate_once(draw: st.DrawFn, fleet: Fleet, files: dict[str, bytes],
                 limit: list[int | None]) -> tuple[dict[str, bytes], str, str, bool, bool]:
    """One mutation: (files, what, target, must_fail, located_in_target)."""
    kind = draw(st.sampled_from(MUTATION_NAMES))
    grouped = fleet.grouped()
    rel = draw(st.sampled_from(sorted(files)))
    text = files[rel].decode("utf-8", "replace")
    if kind in _DATA_MUTATIONS or kind in ("missing-reference", "duplicate-document",
                                           "document-not-a-map"):
        work = copy.deepcopy(fleet)
        groups = work.grouped()
        if kind == "missing-reference":
            done = _missing_reference(draw, work)
            if done is None:
                return files, "no-op", rel, False, False
            what, must = done
            # the reference may sit in any file; re-dump everything
            return work.files(), f"missing-reference: {what}", rel, must, False
        rel = draw(st.sampled_from(sorted(groups)))
        docs = groups[rel]
        index = draw(st.integers(0, len(docs) - 1))
        doc = docs[index]
        if kind == "duplicate-document":
            docs.append(copy.deepcopy(doc))
            new = dict(files)
            new[rel] = work.dump(docs).encode("utf-8")
            return new, "duplicate-document", rel, True, True
        if kind == "document-not-a-map":
            docs[index] = draw(st.sampled_from([[doc], "just text", 42, [1, 2, 3], True]))
            new = dict(files)
            new[rel] = work.dump(docs).encode("utf-8")
            return new, "document-not-a-map", rel, True, True
        what, must = _DATA_MUTATIONS[kind](draw, doc)
        new = dict(files)
        try:
            new[rel] = work.dump(docs).encode("utf-8")
        except (yaml.YAMLError, UnicodeEncodeError, ValueError) as err:  # pragma: no cover
            return files, f"no-op ({err})", rel, False, False
        located = must and kind in ("unknown-key", "bad-kind", "drop-key")
        return new, f"{kind}: {what}", rel, must, located
    if kind == "empty-file":
        content = draw(st.sampled_from([b"", b"\n", b"# only a comment\n", b"---\n",
                                        b"...\n", b"null\n", b"~\n", b"--- \n...\n"]))
        new = dict(files)
        new[rel] = content
        # Emptying a file that others reference breaks references; an unused one is fine.
        return new, f"empty-file {content!r}", rel, False, False
    if kind == "empty-document":
        sep = draw(st.sampled_from(["---\n", "--- null\n", "---\n# nothing\n", "--- ~\n"]))
        return (_replace_text(files, rel, f"{sep}---\n{text}{sep}"),
                "empty-document", rel, False, False)
    if kind == "alias-bomb":
        levels = draw(st.integers(6, 10))
        return (_replace_text(files, rel, alias_bomb(levels)), f"alias-bomb {levels}",
                rel, True, True)
    if kind == "deep-nesting":
        depth = draw(st.sampled_from([65, 100, 1000, 1500]))
        style = draw(st.sampled_from(["flow-list", "flow-map", "block-map", "block-list"]))
        return (_replace_text(files, rel, deep_nesting(depth, style)),
                f"deep-nesting {style} {depth}", rel, True, True)
    if kind == "non-utf8":
        raw = files[rel]
        at = draw(st.integers(0, len(raw)))
        junk = draw(st.sampled_from([b"\xff", b"\xfe\xff", b"\xc3\x28", b"\xed\xa0\x80",
                                     b"\xe9", b"\x80\x80", b"\xf8\x88\x80\x80\x80"]))
        new = dict(files)
        new[rel] = raw[:at] + junk + raw[at:]
        if draw(st.booleans()):
            new[rel] = "kind: Cluster\nname: café\n".encode("utf-16")
        return new, f"non-utf8 at {at}", rel, True, True
    if kind == "nul-byte":
        raw = files[rel]
        at = draw(st.integers(0, len(raw)))
        new = dict(files)
        new[rel] = raw[:at] + b"\x00" + raw[at:]
        return new, f"nul at {at}", rel, True, True
    if kind == "duplicate-key":
        docs = grouped.get(rel, [])
        first = docs[0] if docs else {"name": "x"}
        key = draw(st.sampled_from([k for k in first if k != "kind"] or ["name"]))
        body = text.split("\n---", 1)
        lines = body[0].splitlines()
        # insert right after the comment header so the duplicate lands in document one
        at = next((i for i, line in enumerate(lines) if line and not line.startswith("#")), 0)
        lines.insert(at, f"{key}: duplicate")
        new_text = "\n".join(lines) + "\n" + ("---" + body[1] if len(body) > 1 else "")
        return _replace_text(files, rel, new_text), f"duplicate-key {key}", rel, True, True
    if kind == "tabs":
        # Tabs are legal separators inside flow collections: not every file must fail.
        new_text = re.sub(r"^( +)", lambda m: "\t" * len(m.group(1)), text, flags=re.MULTILINE)
        return _replace_text(files, rel, new_text), "tabs", rel, False, False
    if kind == "oversized":
        size = draw(st.sampled_from([64, 512, 4096]))
        limit[0] = size
        padding = "# " + "x" * size + "\n"
        return (_replace_text(files, rel, padding + text), f"oversized (limit {size})",
                rel, True, True)
    if kind == "unsafe-tag":
        tag = draw(st.sampled_from([
            "!!python/object/apply:os.system ['touch /tmp/gen-pwned']",
            "!!python/name:os.system", "!custom {a: 1}", "!!binary aGVsbG8=",
            "!!set {a, b}", "!!timestamp 2001-12-14", "!!omap [a: 1]",
            "!!python/object/new:subprocess.Popen [['true']]",
        ]))
        return (_replace_text(files, rel, f"kind: Cluster\nname: {tag}\n" + "---\n" + text),
                f"unsafe-tag {tag}", rel, True, True)
    if kind == "truncate":
        raw = files[rel]
        at = draw(st.integers(0, max(0, len(raw) - 1)))
        new = dict(files)
        new[rel] = raw[:at]
        return new, f"truncate at {at}", rel, False, False
    if kind == "garbage":
        raw = files[rel]
        at = draw(st.integers(0, len(raw)))
        junk = draw(st.one_of(
            st.sampled_from([b"{", b"}", b"[", b": :", b"&a", b"*a", b"*undefined", b"? ",
                             b"%YAML 1.1\n", b"%TAG ! tag:x,2000:\n", b"!<tag:x>", b"|",
                             b"'", b'"', b"\\", b"- - -", b"\n...\n", b"<<: *a\n", b"\r",
                             b"\r\n", b"\x0b", b"\x1b[31m", b"\xe2\x80\xa8"]),
            st.binary(max_size=8),
        ))
        new = dict(files)
        new[rel] = raw[:at] + junk + raw[at:]
        return new, f"garbage {junk!r} at {at}", rel, False, False
    if kind == "odd-scalars":
        docs = grouped.get(rel) or [{}]
        key = draw(st.sampled_from([k for k in docs[0] if k != "kind"] or ["name"]))
        scalar = draw(st.sampled_from([
            "yes", "no", "on", "0x1F", "0o17", "1_000", ".inf", "-.inf", ".nan", "~", "1e400",
            "2024-01-01", "2024-01-01T00:00:00Z", "1:20", "! ''", "0b101", "+12", "-0",
            "'1.34'", "1.34", "1.340", "[]", "{}", "!!str 7", "!!int '7'", "!!float x",
            "2024-02-30", "!!int", "!!float", "!!timestamp x", "!!bool maybe", "!!int 0x",
            "!!binary '@@'", "!!set x", "!!null x", "&a x", "*nope", "!!python/tuple [1]",
        ]))
        pattern = re.compile(rf"^{re.escape(key)}:.*$", re.MULTILINE)
        new_text, n = pattern.subn(lambda _: f"{key}: {scalar}", text, count=1)
        return (_replace_text(files, rel, new_text), f"odd-scalar {key}: {scalar}", rel,
                False, False) if n else (files, "no-op", rel, False, False)
    if kind == "rename-file":
        name, must = draw(st.sampled_from(FILE_NAMES))
        folder = rel.rpartition("/")[0]
        new = {k: v for k, v in files.items() if k != rel}
        new[f"{folder}/{name}" if folder else name] = files[rel]
        return new, f"rename-file {rel} → {name!r}", rel, must, False
    raise AssertionError(kind)  # pragma: no cover


@st.composite
def mutations(draw: st.DrawFn, fleet: Fleet) -> Mutated:
    """One or more hostile changes to a valid fleet's files."""
    files = fleet.files()
    limit: list[int | None] = [None]
    steps = draw(st.integers(1, 3)) if draw(st.integers(0, 4)) == 0 else 1
    whats = []
    target, must_fail, located = "", False, False
    for _ in range(steps):
        files, what, target, must_fail, located = draw(_mutate_once(fleet, files, limit))
        whats.append(what)
    # Only the last step's promises stand: it may mask or undo the earlier ones, and an
    # earlier file that no longer parses hides the last step's validation errors.
    located = located and steps == 1
    if draw(st.integers(0, 9)) == 0:
        # A file gen must skip or survive: hidden folder, odd name, non-YAML extension.
        extra = draw(st.sampled_from([
            (".hidden/x.yaml", b"kind: Nope\n"), ("notes.txt", b"kind: Nope\n"),
            ("über/ünïcode name.yaml", b""), ("deep/a/b/c/d/e.yml", b"# nothing\n"),
        ]))
        files = {**files, extra[0]: extra[1]}
        whats.append(f"extra file {extra[0]}")
    return Mutated(files, "; ".join(whats), target, must_fail, located, limit[0])
