"""MIG: the GPU Operator's mig-parted ConfigMap, the strategy, diagrams and a runbook."""

from __future__ import annotations

from pathlib import PurePosixPath

from gen.fleet.generated import GENERATED_COMMENT
from gen.fleet.manifests import MIG_CONFIGMAP_NAME, labels, manifest
from gen.fleet.plan import REPORTS_DIR, Built, ClusterPlan, FileSpec

CONFIG_KEY = "config.yaml"


def strategy(plan: ClusterPlan) -> str:
    """'single', 'mixed', or 'none' when no pool uses MIG."""
    from gen.nvidia.migparted import choose_strategy

    pools = plan.mig_pools
    if not pools:
        return "none"
    nodes = []
    for pool in pools:
        per_gpu: list[dict[str, int] | None] = [None] * pool.pool.gpus_per_node
        for indices, check in pool.mig_checks:
            counts: dict[str, int] = {}
            for placement in check.placements:
                counts[placement.profile] = counts.get(placement.profile, 0) + 1
            for i in indices:
                if i < len(per_gpu):
                    per_gpu[i] = counts
        nodes.append(per_gpu)
    return str(choose_strategy(nodes))


def config_document(plan: ClusterPlan) -> str | None:
    """The mig-parted config.yaml text holding every layout the cluster uses."""
    from gen.nvidia.migparted import (
        LayoutEntry,
        build_mig_parted_config,
        device_filter_for,
        render_mig_parted_yaml,
    )

    layouts: dict[str, list[LayoutEntry]] = {}
    for pool in plan.mig_pools:
        layout = pool.mig_layout
        assert layout is not None and pool.gpu is not None
        if not all(check.valid for _, check in pool.mig_checks):
            return None  # lint reports the layout (GEN101/GEN102); render stops there
        if layout.name in layouts:
            continue
        filters = device_filter_for(pool.gpu)
        if layout.profiles is not None:
            entries = [LayoutEntry("all", True, dict(layout.profiles), filters)]
        else:
            entries = [
                LayoutEntry(tuple(e.gpus), bool(e.profiles), dict(e.profiles), filters)
                for e in layout.per_gpu or ()
            ]
        layouts[layout.name] = entries
    if not layouts:
        return None
    return render_mig_parted_yaml(build_mig_parted_config(layouts))


def runbook(plan: ClusterPlan) -> str:
    """Steps to (re)partition each MIG pool safely."""
    lines = [
        f"# MIG runbook for cluster {plan.name}",
        "",
        GENERATED_COMMENT,
        "",
        f"MIG strategy: `{plan.mig_strategy}`. mig-manager reads the ConfigMap "
        f"`{plan.cluster.gpu_operator.namespace}/{MIG_CONFIGMAP_NAME}` (key `{CONFIG_KEY}`).",
        "",
    ]
    for pool in plan.mig_pools:
        layout = pool.mig_layout
        assert layout is not None
        selector = ",".join(f"{k}={v}" for k, v in sorted(pool.pool.labels.items()))
        sel = f"-l {selector}" if selector else "<node names>"
        lines += [
            f"## Pool `{pool.name}` → layout `{layout.name}`",
            "",
            "For each node of the pool, one at a time:",
            "",
            "1. `kubectl cordon <node>`",
            "2. Drain GPU pods: `kubectl drain <node> --ignore-daemonsets "
            "--delete-emptydir-data --pod-selector='app.kubernetes.io/managed-by=gen'`",
            f"3. `kubectl label node <node> nvidia.com/mig.config={layout.name} --overwrite`",
            "4. Wait until `kubectl get node <node> -o "
            "jsonpath='{.metadata.labels.nvidia\\.com/mig\\.config\\.state}'` prints "
            "`success` (`failed`: read the mig-manager logs).",
            "5. `kubectl uncordon <node>`",
            "",
            f"Nodes of the pool: `kubectl get nodes {sel}`.",
        ]
        if pool.pool.virtualized:
            lines += [
                "",
                "These are cloud/VM nodes: set `WITH_REBOOT=true` in mig-manager's "
                "environment (GPU Operator value `migManager.env`) — MIG mode changes "
                "need a GPU reset that VMs only get by rebooting.",
            ]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def build(plan: ClusterPlan) -> Built:
    """The ConfigMap, diagrams and runbook for a cluster with MIG pools."""
    from gen.nvidia.mig_svg import layout_svg

    text = config_document(plan)
    if text is None:
        return Built()
    origin = plan.located.document.location
    specs = [manifest(
        "mig/configmap.yaml.j2", origin, stage="gpu",
        name=MIG_CONFIGMAP_NAME, namespace=plan.cluster.gpu_operator.namespace,
        labels=labels(MIG_CONFIGMAP_NAME, "mig-config"), config=text,
    )]
    files = [FileSpec(
        PurePosixPath(REPORTS_DIR, plan.name, "mig-runbook.md"),
        runbook(plan).encode(), origin,
    )]
    seen = set()
    for pool in plan.mig_pools:
        layout = pool.mig_layout
        assert layout is not None
        for indices, check in pool.mig_checks:
            suffix = "" if layout.profiles is not None else "-gpus-" + "-".join(map(str, indices))
            path = PurePosixPath(REPORTS_DIR, plan.name, f"mig-{layout.name}{suffix}.svg")
            if path in seen or not check.valid:
                continue
            seen.add(path)
            title = f"{layout.name}{suffix} on {check.gpu.name}"
            files.append(FileSpec(path, layout_svg(check, title).encode(), pool.located_at))
    return Built(specs, files)
