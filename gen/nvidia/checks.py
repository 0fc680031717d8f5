"""MIG rules: every layout must exist on its GPU, with the pool's driver."""

from __future__ import annotations

from gen.errors import Finding, Severity
from gen.fleet.plan import Plan


def check(plan: Plan) -> list[Finding]:
    """GEN101–GEN104."""
    findings: list[Finding] = []
    for cluster in plan.clusters:
        for i, pool_plan in enumerate(cluster.pools):
            pool = pool_plan.pool
            layout = pool_plan.mig_layout
            if layout is None or pool_plan.gpu is None:
                continue
            where = cluster.located.at("node_pools", i, "mig_layout")
            key = f"node_pools[{i}].mig_layout"
            if not pool_plan.gpu.mig_capable:
                findings.append(Finding(
                    "GEN104", f"{pool_plan.gpu.name} does not support MIG", where, key,
                    hint="remove mig_layout, or use a MIG-capable GPU (gen catalog gpus)",
                ))
                continue
            for indices, result in pool_plan.mig_checks:
                bad_index = [g for g in indices if g >= pool.gpus_per_node]
                if bad_index:
                    findings.append(Finding(
                        "GEN101",
                        f"layout {layout.name!r} names GPU index {bad_index[0]}, but nodes "
                        f"of pool {pool.name!r} have {pool.gpus_per_node} GPUs",
                        where, key,
                    ))
                for error in result.errors:
                    rule = "GEN102" if error in result.driver_errors else "GEN101"
                    findings.append(Finding(
                        rule, f"layout {layout.name!r} on {pool_plan.gpu.name}: {error}",
                        where, key,
                        hint="check with: gen mig check --gpu "
                        f"{pool_plan.gpu.id} " + " ".join(
                            f"{p}={c}" for p, c in sorted(layout.all_counts()[0].items())
                        ),
                    ))
                findings.extend(
                    Finding("GEN101", f"layout {layout.name!r}: {w}", where, key,
                            severity=Severity.WARNING)
                    for w in result.warnings
                )
            if pool.previous_mig_layout and pool.previous_mig_layout != layout.name:
                findings.append(Finding(
                    "GEN103",
                    f"pool {pool.name!r} changes MIG layout {pool.previous_mig_layout!r} → "
                    f"{layout.name!r}: running GPU pods are killed when mig-manager applies it",
                    where, key, severity=Severity.WARNING,
                    hint=f"follow out/_reports/{cluster.name}/mig-runbook.md "
                    f"(or 'gen explain --runbook --cluster {cluster.name}'); then remove "
                    "previous_mig_layout",
                ))
    return findings
