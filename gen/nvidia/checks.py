"""MIG rules: every layout must exist on its GPU, with the pool's driver; dynamic MIG
needs the Kubernetes gate, a driver chart with DynamicMIG and pools that can live with it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from gen.errors import Finding, Severity, SourceLocation
from gen.fleet.plan import ClusterPlan, Plan
from gen.models import MIGLayout
from gen.models.cluster import NodePool
from gen.rules import finding


def _counts_of(layout: MIGLayout, indices: tuple[int, ...]) -> tuple[
        Mapping[str, int], tuple[str | int, ...]]:
    """The profile counts checked for GPUs ``indices``, and their key path in the layout."""
    if layout.profiles is not None:
        return layout.profiles, ("profiles",)
    for j, entry in enumerate(layout.per_gpu or ()):
        if set(indices) <= set(entry.gpus):
            return entry.profiles, ("per_gpu", j, "profiles")
    return layout.all_counts()[0], ("per_gpu",)


def _layout_location(plan: Plan, name: str, path: tuple[str | int, ...],
                     counts: Mapping[str, int], error: str) -> tuple[SourceLocation, str]:
    """Where in the layout's own file an error is: the profile it names, else the counts."""
    from gen.fleet.loader import format_key_path

    located = plan.profiles.mig_layouts[name]
    # The profile the message names first (the longer name when two start there: 1g.10gb+me).
    hits = sorted((error.index(p), -len(p), p) for p in counts if p in error)
    named = hits[0][2] if hits else None
    full = (*path, named) if named is not None else path
    return located.at(*full), format_key_path(full)


def check_clusters(plan: Plan) -> list[Finding]:
    """GEN101–GEN104 (static layouts) and GEN110–GEN119 (dynamic MIG; with
    :func:`unused_layouts`) on each cluster's pools, cluster by cluster: a cluster's findings
    depend on that cluster and on the layouts its pools name (``plan.profiles.mig_layouts``)
    only."""
    findings: list[Finding] = []
    for cluster in plan.clusters:
        findings += _dynamic_findings(cluster)
        for i, pool_plan in enumerate(cluster.pools):
            pool = pool_plan.pool
            layout = pool_plan.mig_layout
            if layout is None or pool_plan.gpu is None:
                continue
            where = cluster.located.at("node_pools", i, "mig_layout")
            key = f"node_pools[{i}].mig_layout"
            if not pool_plan.gpu.mig_capable:
                findings.append(finding(
                    "GEN104", f"{pool_plan.gpu.name} does not support MIG", where, key_path=key,
                    hint="remove mig_layout, or use a MIG-capable GPU (gen catalog gpus)",
                ))
                continue
            for indices, result in pool_plan.mig_checks:
                bad_index = [g for g in indices if g >= pool.gpus_per_node]
                if bad_index:
                    findings.append(finding(
                        "GEN101",
                        f"layout {layout.name!r} names GPU index {bad_index[0]}, but nodes "
                        f"of pool {pool.name!r} have {pool.gpus_per_node} GPUs",
                        where, key_path=key,
                    ))
                counts, counts_path = _counts_of(layout, indices)
                for error in result.errors:
                    rule = "GEN102" if error in result.driver_errors else "GEN101"
                    at, at_key = where, key
                    related: tuple[SourceLocation, ...] = ()
                    if rule == "GEN101":
                        # The layout is what to edit; the pool is where it is used.
                        at, at_key = _layout_location(plan, layout.name, counts_path, counts,
                                                      error)
                        related = (replace(where, note=f"used by pool {pool.name!r} of "
                                           f"cluster {cluster.name!r}"),)
                    findings.append(finding(
                        rule, f"layout {layout.name!r} on {pool_plan.gpu.name}: {error}",
                        at, key_path=at_key, related=related,
                        hint="check with: gen mig check --gpu "
                        f"{pool_plan.gpu.id} " + " ".join(
                            f"{p}={c}" for p, c in sorted(counts.items())
                        ),
                    ))
                findings.extend(
                    finding("GEN101", f"layout {layout.name!r}: {w}", where, key_path=key,
                            severity=Severity.WARNING)
                    for w in result.warnings
                )
            uncovered = _uncovered_gpus(layout, pool)
            if uncovered:
                findings.append(_uncovered_finding(plan, cluster, i, uncovered))
            if pool.previous_mig_layout and pool.previous_mig_layout != layout.name:
                findings.append(finding(
                    "GEN103",
                    f"pool {pool.name!r} changes MIG layout {pool.previous_mig_layout!r} → "
                    f"{layout.name!r}: running GPU pods are killed when mig-manager applies it",
                    where, key_path=key,
                    hint=f"follow out/_reports/{cluster.name}/mig-runbook.md "
                    f"(or 'gen explain --runbook --cluster {cluster.name}'); then remove "
                    "previous_mig_layout",
                ))
    return findings


def _uncovered_gpus(layout: MIGLayout, pool: NodePool) -> list[int]:
    """The GPU indices of the pool's nodes that no ``per_gpu`` entry names: mig-parted
    applies an entry to the devices it names and leaves every other GPU as it was
    (``MigConfigSpec.MatchesDevices``, NVIDIA/mig-parted api/spec/v1 @ v0.15.0)."""
    if layout.per_gpu is None:
        return []
    named = {g for entry in layout.per_gpu for g in entry.gpus}
    return [g for g in range(pool.gpus_per_node) if g not in named]


def _uncovered_finding(plan: Plan, cluster: ClusterPlan, index: int,
                       uncovered: list[int]) -> Finding:
    pool = cluster.cluster.node_pools[index]
    assert pool.mig_layout is not None
    located = plan.profiles.mig_layouts[pool.mig_layout]
    gpus = ", ".join(str(g) for g in uncovered)
    named = pool.gpus_per_node - len(uncovered)
    return finding(
        "GEN105",
        f"layout {pool.mig_layout!r} configures {named} of the {pool.gpus_per_node} GPUs of "
        f"each node of pool {pool.name!r}: mig-parted leaves GPU"
        f"{'s' if len(uncovered) > 1 else ''} {gpus} in whatever MIG mode and instances "
        "they had, which no profile says",
        located.at("per_gpu"), key_path="per_gpu",
        hint=f"add an entry for GPU{'s' if len(uncovered) > 1 else ''} [{gpus}]: "
        "'profiles: {}' keeps them whole GPUs (MIG off), or give their MIG profiles",
        related=(replace(cluster.located.at("node_pools", index, "mig_layout"),
                         note=f"used by pool {pool.name!r} of cluster {cluster.name!r}"),),
        cluster=cluster.name,
    )


def unused_layouts(plan: Plan) -> list[Finding]:
    """GEN101/GEN104 for the layouts no pool uses: they are checked too, so that a layout
    waiting for its pool is not found broken on the day a pool names it."""
    from gen.nvidia.gpus import gpu_catalog
    from gen.nvidia.mig import check_layout

    used = {p.mig_layout.name for c in plan.clusters for p in c.pools if p.mig_layout}
    findings: list[Finding] = []
    for name, located in plan.profiles.mig_layouts.items():
        layout = located.value
        gpu = gpu_catalog().find(layout.gpu)
        if name in used or gpu is None:
            continue  # used layouts are checked on their pools; GEN003 names unknown GPUs
        if not gpu.mig_capable:
            findings.append(finding(
                "GEN104", f"layout {name!r} is for {gpu.name}, which does not support MIG",
                located.at("gpu"), key_path="gpu",
            ))
            continue
        for j, counts in enumerate(layout.all_counts()):
            path: tuple[str | int, ...] = ("profiles",) if layout.profiles is not None else (
                "per_gpu", j, "profiles")
            for error in check_layout(gpu, counts).errors:
                at, key = _layout_location(plan, name, path, counts, error)
                findings.append(finding(
                    "GEN101", f"layout {name!r} on {gpu.name} (used by no pool yet): {error}",
                    at, key_path=key, hint="check with: gen mig check --gpu "
                    f"{gpu.id} " + " ".join(f"{p}={c}" for p, c in sorted(counts.items())),
                ))
    return findings


def _dynamic_findings(cluster: ClusterPlan) -> list[Finding]:
    """GEN110–GEN119: dynamic MIG pools, the Kubernetes gate, the driver chart and gates."""
    from gen.nvidia import dynamic as dm

    spec = cluster.cluster
    at = cluster.located.at
    pools = dm.dynamic_pools(spec)
    declared = spec.dra_driver.feature_gates.get(dm.DRIVER_GATE)
    gate_at = at("dra_driver", "feature_gates", dm.DRIVER_GATE)
    gate_key = f"dra_driver.feature_gates.{dm.DRIVER_GATE}"
    findings: list[Finding] = []
    if not pools:
        if declared:
            findings.append(finding(
                "GEN114",
                f"cluster {cluster.name!r} declares the DRA driver's {dm.DRIVER_GATE} gate but "
                "no pool says 'mig: dynamic': gen does not pass the gate on (the driver would "
                "take over MIG on every MIG-capable node and tear down static MIG devices)",
                gate_at, key_path=gate_key,
                hint="remove the gate, or set 'mig: dynamic' on the pools it is for "
                "(gen then sets the gate itself)",
            ))
        return findings
    first = pools[0][0]
    if spec.allocation != "dra":
        for i, pool in pools:
            findings.append(finding(
                "GEN110",
                f"pool {pool.name!r} is 'mig: dynamic', which needs DRA; cluster "
                f"{cluster.name!r} uses the device plugin",
                at("node_pools", i, "mig"), key_path=f"node_pools[{i}].mig",
                hint="use allocation: dra, or a static mig_layout",
            ))
        return findings
    findings += _dynamic_pool_findings(cluster, pools)
    findings += _version_findings(cluster, first)
    findings += _pools_beside_dynamic(cluster, first)
    return findings


def _dynamic_pool_findings(cluster: ClusterPlan, pools: list[tuple[int, NodePool]]
                           ) -> list[Finding]:
    """GEN111 and GEN118: each dynamic pool's GPU and its mig-manager label."""
    from gen.nvidia import dynamic as dm

    at = cluster.located.at
    findings = []
    for i, pool in pools:
        pool_plan = cluster.pools[i]
        if pool_plan.gpu is not None and not pool_plan.gpu.mig_capable:
            findings.append(finding(
                "GEN111", f"pool {pool.name!r} is 'mig: dynamic' but {pool_plan.gpu.name} "
                "does not support MIG", at("node_pools", i, "mig"), key_path=f"node_pools[{i}].mig",
                hint="remove 'mig: dynamic' (the GPU is published whole)",
            ))
        if pool.labels.get(dm.MIG_MANAGER_LABEL) != "false" and not dm.mig_manager_off(
            cluster.cluster
        ):
            # gen renders mig-manager off unless a static layout in the cluster needs it.
            # The label to change when it is declared, else the labels to add it to.
            where = (at("node_pools", i, "labels", dm.MIG_MANAGER_LABEL)
                     if dm.MIG_MANAGER_LABEL in pool.labels
                     else at("node_pools", i, "labels") if pool.labels
                     else at("node_pools", i, "mig"))
            findings.append(finding(
                "GEN118",
                f"pool {pool.name!r} is 'mig: dynamic', but the GPU Operator's mig-manager "
                "stays on for the cluster's static MIG layouts, runs on every MIG-capable "
                "node and applies its default 'all-disabled' config here, fighting the DRA "
                "driver over MIG mode",
                where, key_path=f"node_pools[{i}].labels",
                hint=f"label the nodes {dm.MIG_MANAGER_LABEL}=\"false\" and declare it in "
                "labels (the operator then leaves mig-manager off them)",
            ))
    return findings


def _version_findings(cluster: ClusterPlan, first: int) -> list[Finding]:
    """GEN112, GEN113, GEN114 (declared off) and GEN119: versions and gates."""
    from gen.nvidia import dynamic as dm

    spec = cluster.cluster
    at = cluster.located.at
    findings = []
    problem = dm.partitionable_devices_problem(spec)
    if problem is not None:
        minor = cluster.minor
        if dm.K8S_GATE in spec.feature_gates:
            where, key = at("feature_gates", dm.K8S_GATE), f"feature_gates.{dm.K8S_GATE}"
        elif minor >= dm.k8s_gate_since() and spec.feature_gates:
            where, key = at("feature_gates"), "feature_gates"
        else:
            where, key = at("kubernetes_version"), "kubernetes_version"
        findings.append(finding(
            "GEN112",
            f"pool {spec.node_pools[first].name!r} is 'mig: dynamic', but {problem}",
            where, key_path=key,
            hint=(f"upgrade to 1.{dm.k8s_gate_default_on()}, or enable {dm.K8S_GATE} on the "
                  f"kube-apiserver and kube-scheduler (1.{dm.k8s_gate_since()}+) and declare "
                  f"{dm.K8S_GATE}: true"),
            related=(at("node_pools", first, "mig"),),
        ))
    if not dm.chart_supports_dynamic_mig(spec.dra_driver.version):
        findings.append(finding(
            "GEN113",
            f"DRA driver chart {spec.dra_driver.version} has no {dm.DRIVER_GATE} feature gate "
            f"(it arrived in 25.12.0); pool {spec.node_pools[first].name!r} is 'mig: dynamic'",
            at("dra_driver", "version"), key_path="dra_driver.version",
            hint="use chart 25.12.0 or later (v0.4.0+ of kubernetes-sigs/dra-driver-nvidia-gpu "
            "also publishes nodes without MIG GPUs)",
        ))
    declared = spec.dra_driver.feature_gates.get(dm.DRIVER_GATE)
    if declared is False:
        findings.append(finding(
            "GEN114",
            f"the DRA driver's {dm.DRIVER_GATE} gate is declared off, but pool "
            f"{spec.node_pools[first].name!r} is 'mig: dynamic'",
            at("dra_driver", "feature_gates", dm.DRIVER_GATE),
            key_path=f"dra_driver.feature_gates.{dm.DRIVER_GATE}",
            hint="remove the declaration: gen sets the gate for dynamic pools",
        ))
    for gate in dm.CONFLICTING_DRIVER_GATES:
        if spec.dra_driver.feature_gates.get(gate):
            findings.append(finding(
                "GEN119",
                f"the DRA driver refuses to start with {dm.DRIVER_GATE} and {gate} both on "
                "(ValidateFeatureGates: 'currently mutually exclusive')",
                at("dra_driver", "feature_gates", gate),
                key_path=f"dra_driver.feature_gates.{gate}",
                hint=f"turn {gate} off in a cluster with dynamic MIG pools",
            ))
    return findings


def _pools_beside_dynamic(cluster: ClusterPlan, first: int) -> list[Finding]:
    """Other pools of a cluster whose DRA driver runs with DynamicMIG."""
    from gen.nvidia import dynamic as dm

    spec = cluster.cluster
    at = cluster.located.at
    dynamic_name = spec.node_pools[first].name
    findings = []
    for i, pool_plan in enumerate(cluster.pools):
        pool, gpu = pool_plan.pool, pool_plan.gpu
        if pool.platform != "nvidia" or gpu is None or pool.mig == "dynamic":
            continue
        if pool_plan.mig_layout is not None:
            findings.append(finding(
                "GEN116",
                f"pool {pool.name!r} has the static MIG layout {pool_plan.mig_layout.name!r}, "
                f"but the DRA driver of cluster {cluster.name!r} runs with {dm.DRIVER_GATE} "
                f"(pool {dynamic_name!r}): the gate is chart-wide, and the driver destroys "
                "MIG devices it did not create and announces the GPU as partitionable",
                at("node_pools", i, "mig_layout"), key_path=f"node_pools[{i}].mig_layout",
                hint="make this pool 'mig: dynamic' too, or move static and dynamic MIG "
                "pools to separate clusters",
                related=(at("node_pools", first, "mig"),),
            ))
        elif gpu.mig_capable:
            findings.append(finding(
                "GEN117",
                f"pool {pool.name!r} ({gpu.name}) is published as a partitionable GPU (the full "
                f"GPU and every MIG slice) once the driver runs with {dm.DRIVER_GATE} for "
                f"pool {dynamic_name!r}; its full GPU then reports the largest profile's "
                "memory, not the board's",
                at("node_pools", i, "gpu"), key_path=f"node_pools[{i}].gpu",
                hint="declare 'mig: dynamic' on this pool so gen simulates what it publishes",
                related=(at("node_pools", first, "mig"),),
            ))
        elif not dm.chart_fixes_issue_1092(spec.dra_driver.version):
            findings.append(finding(
                "GEN115",
                f"pool {pool.name!r} ({gpu.name}, no MIG) publishes no ResourceSlice at all on "
                f"DRA driver chart {spec.dra_driver.version} with {dm.DRIVER_GATE} on "
                "(dra-driver-nvidia-gpu issue 1092, fixed by PR 1113 in v0.4.0)",
                at("node_pools", i, "gpu"), key_path=f"node_pools[{i}].gpu",
                hint="upgrade dra_driver.version to 0.4.0 or later, or run this pool in a "
                "cluster without dynamic MIG",
                related=(at("dra_driver", "version"), at("node_pools", first, "mig")),
            ))
    return findings
