"""Resolve cross-document references and defaults into an immutable per-cluster Plan.

References are checked here, each error located where the reference is written:
a service's clusters, GPU class and model; a node pool's GPU and MIG layout; a
layout's GPU. Values derived from the catalogs (GPU of a pool, MIG placements, the
DRA API version of a cluster) are computed once and kept in the Plan.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from gen.errors import Finding, SourceLocation, UnresolvedReferenceError
from gen.fleet.plan import ClusterPlan, Plan, PoolPlan, ServicePlan
from gen.fleet.profiles import Located, ProfileSet
from gen.k8s.versions import dra_api_version, kubernetes_minor
from gen.rules import finding

if TYPE_CHECKING:
    from gen.models import Cluster, GPUClass, InferenceService
    from gen.serving.model_catalog import LLMSpec, ModelCatalog

__all__ = ["build_plan"]


def _known(names: Iterable[str], wanted: str) -> str:
    names = sorted(names)
    close = difflib.get_close_matches(wanted, names, n=1)
    listing = ", ".join(names) if names else "none defined"
    if close:
        return f"did you mean {close[0]!r}? known: {listing}"
    return f"known: {listing}"


def _not_found(what: str, name: str, known: Iterable[str], where: SourceLocation,
               key_path: str, scope: str = "") -> Finding:
    """GEN003 ``<what> 'name' not found[ in <scope>]; did you mean ...? known: ...``."""
    return finding(
        "GEN003", f"{what} {name!r} not found{scope}; " + _known(known, name), where,
        key_path=key_path,
    )


def _resolve_pools(
    located: Located[Cluster], profiles: ProfileSet, findings: list[Finding]
) -> tuple[PoolPlan, ...]:
    from gen.errors import CatalogLookupError
    from gen.nvidia.gpus import gpu_catalog
    from gen.nvidia.mig import check_layout

    cluster = located.value
    catalog = gpu_catalog()
    pools = []
    for i, pool in enumerate(cluster.node_pools):
        gpu = None
        if pool.platform == "nvidia":
            try:
                gpu = catalog.lookup(pool.gpu)
            except CatalogLookupError as err:
                findings.append(finding(
                    "GEN003", err.message, located.at("node_pools", i, "gpu"),
                    key_path=f"node_pools[{i}].gpu", hint="see 'gen catalog gpus'",
                ))
                continue
        layout = None
        checks = []
        if pool.mig_layout is not None:
            ref = profiles.mig_layouts.get(pool.mig_layout)
            if ref is None:
                findings.append(_not_found(
                    "MIG layout", pool.mig_layout, profiles.mig_layouts,
                    located.at("node_pools", i, "mig_layout"), f"node_pools[{i}].mig_layout",
                ))
                continue
            layout = ref.value
            assert gpu is not None
            try:
                layout_gpu = catalog.lookup(layout.gpu)
            except CatalogLookupError as err:
                findings.append(finding("GEN003", err.message, ref.at("gpu"), key_path="gpu"))
                continue
            if layout_gpu.id != gpu.id:
                findings.append(finding(
                    "GEN003",
                    f"MIG layout {layout.name!r} is for {layout_gpu.id}, but pool "
                    f"{pool.name!r} has {gpu.id}",
                    located.at("node_pools", i, "mig_layout"),
                    key_path=f"node_pools[{i}].mig_layout",
                ))
                continue
            if layout.profiles is not None:
                indices = tuple(range(pool.gpus_per_node))
                checks.append((indices, check_layout(gpu, layout.profiles, pool.driver_version)))
            else:
                for entry in layout.per_gpu or ():
                    checks.append(
                        (entry.gpus, check_layout(gpu, entry.profiles, pool.driver_version))
                    )
        pools.append(PoolPlan(
            pool=pool, located_at=located.at("node_pools", i), gpu=gpu,
            mig_layout=layout, mig_checks=tuple(checks),
        ))
    return tuple(pools)


def _model_catalog(profiles: ProfileSet, findings: list[Finding]) -> ModelCatalog:
    from gen.serving.model_catalog import LLMSpec, model_catalog

    extra = []
    for name, m in profiles.models.items():
        try:
            extra.append(LLMSpec.from_profile(m.value, profiles.model_configs.get(name)))
        except ValueError as err:  # the catalog's own consistency rules
            findings.append(finding("GEN002", str(err), m.document.location))
    return model_catalog().with_extra(extra)


def _eligible_pools(
    svc_located: Located[InferenceService], pools: Sequence[PoolPlan]
) -> tuple[PoolPlan, ...]:
    svc = svc_located.value
    if svc.mac_hosts:
        return ()
    if svc.node_pool is not None:
        return tuple(p for p in pools if p.name == svc.node_pool)
    if svc.engine == "vllm" and svc.gpu is None:
        return tuple(pools)  # only Apple VM pools (else GEN002): GEN601 says why not there
    platform = "apple-vm" if svc.engine == "llama-server" else "nvidia"
    return tuple(p for p in pools if p.pool.platform == platform)


def _gpu_missing(svc_located: Located[InferenceService], pools: Sequence[PoolPlan],
                 cluster: str) -> Finding | None:
    """GEN002 for a vllm service without a ``gpu`` request that could land on an NVIDIA
    pool of ``cluster``; none where its pools are all Apple VM pools, on which vLLM cannot
    run at all (GEN601 says so, the real reason)."""
    svc = svc_located.value
    if svc.engine != "vllm" or svc.gpu is not None or svc.mac_hosts:
        return None
    reachable = [p for p in pools if svc.node_pool in (None, p.name)]
    nvidia = [p.name for p in reachable if p.pool.platform == "nvidia"]
    if reachable and not nvidia:
        return None
    where = f" (pool {nvidia[0]!r} of cluster {cluster!r} is NVIDIA)" if nvidia else ""
    return finding(
        "GEN002", f"'gpu' is required for engine vllm{where}", svc_located.at("gpu"),
        key_path="gpu",
        hint="add 'gpu: {gpu_class: <GPUClass>, count: 1}', or 'mac_hosts' for native "
        "macOS serving (engines vllm-metal, vllm-mlx, llama-server)",
    )


def _resolve_service(
    svc_located: Located[InferenceService],
    profiles: ProfileSet,
    models: ModelCatalog,
    findings: list[Finding],
) -> tuple[GPUClass | None, list[tuple[GPUClass, int]], LLMSpec | None]:
    """A service's GPU class, alternatives and model, each reference checked."""
    from gen.errors import CatalogLookupError

    svc = svc_located.value
    gpu_class = None
    alternatives = []
    if svc.gpu is not None:
        ref = profiles.gpu_classes.get(svc.gpu.gpu_class)
        if ref is None:
            findings.append(_not_found(
                "GPU class", svc.gpu.gpu_class, profiles.gpu_classes,
                svc_located.at("gpu", "gpu_class"), "gpu.gpu_class",
            ))
        else:
            gpu_class = ref.value
        for j, alt in enumerate(svc.gpu.alternatives):
            alt_ref = profiles.gpu_classes.get(alt.gpu_class)
            if alt_ref is None:
                findings.append(_not_found(
                    "GPU class", alt.gpu_class, profiles.gpu_classes,
                    svc_located.at("gpu", "alternatives", j, "gpu_class"),
                    f"gpu.alternatives[{j}].gpu_class",
                ))
            else:
                alternatives.append((alt_ref.value, alt.count))
    for role in ("prefill", "decode"):
        role_gpu = getattr(svc.disaggregation, role).gpu if svc.disaggregation else None
        if role_gpu is None:
            continue
        for key, name in (
            (("gpu_class",), role_gpu.gpu_class),
            *((("alternatives", j, "gpu_class"), alt.gpu_class)
              for j, alt in enumerate(role_gpu.alternatives)),
        ):
            if name not in profiles.gpu_classes:
                path = ("disaggregation", role, "gpu", *key)
                findings.append(_not_found(
                    "GPU class", name, profiles.gpu_classes, svc_located.at(*path),
                    ".".join(str(k) if isinstance(k, str) else f"[{k}]" for k in path)
                    .replace(".[", "["),
                ))
    model = None
    try:
        model = models.lookup(svc.model)
    except CatalogLookupError as err:
        findings.append(finding(
            "GEN003", err.message, svc_located.at("model"), key_path="model",
            hint="add a 'kind: Model' profile with its architecture numbers",
        ))
    return gpu_class, alternatives, model


def build_plan(profiles: ProfileSet) -> Plan:
    """Resolve references and build the per-cluster Plan (without manifests)."""

    findings: list[Finding] = []
    cluster_pools: dict[str, tuple[PoolPlan, ...]] = {}
    for name, located in profiles.clusters.items():
        cluster_pools[name] = _resolve_pools(located, profiles, findings)

    models = _model_catalog(profiles, findings)
    services_by_cluster: dict[str, list[ServicePlan]] = {name: [] for name in profiles.clusters}
    for svc_located in profiles.services.values():
        svc = svc_located.value
        gpu_class, alternatives, model = _resolve_service(
            svc_located, profiles, models, findings
        )
        for i, cluster_name in enumerate(svc.clusters):
            if cluster_name not in profiles.clusters:
                findings.append(_not_found(
                    "cluster", cluster_name, profiles.clusters,
                    svc_located.at("clusters", i), f"clusters[{i}]",
                ))
                continue
            pools = cluster_pools[cluster_name]
            if svc.node_pool is not None and all(p.name != svc.node_pool for p in pools):
                findings.append(_not_found(
                    "node pool", svc.node_pool, (p.name for p in pools),
                    svc_located.at("node_pool"), "node_pool", f" in cluster {cluster_name!r}",
                ))
                continue
            missing = _gpu_missing(svc_located, pools, cluster_name)
            if missing is not None:
                findings.append(missing)
                continue
            services_by_cluster[cluster_name].append(ServicePlan(
                located=svc_located, gpu_class=gpu_class, alternatives=tuple(alternatives),
                model=model, pools=_eligible_pools(svc_located, pools),
            ))
    for located in profiles.clusters.values():
        for j, quota in enumerate(located.value.quotas):
            if quota.gpu_class not in profiles.gpu_classes:
                findings.append(_not_found(
                    "GPU class", quota.gpu_class, profiles.gpu_classes,
                    located.at("quotas", j, "gpu_class"), f"quotas[{j}].gpu_class",
                ))
    if findings:
        raise UnresolvedReferenceError(
            f"{len(findings)} unresolved reference(s)", findings=findings
        )

    clusters = []
    for name, located in profiles.clusters.items():
        minor = kubernetes_minor(located.value.kubernetes_version)
        clusters.append(ClusterPlan(
            located=located,
            minor=minor,
            pools=cluster_pools[name],
            gpu_classes=profiles.gpu_classes,
            services=tuple(
                sorted(services_by_cluster[name], key=lambda s: (s.service.namespace,
                                                                 s.service.name))
            ),
            dra_api_version=(
                dra_api_version(minor) if located.value.allocation == "dra" else None
            ),
        ))
    return Plan(profiles=profiles, clusters=tuple(clusters))
