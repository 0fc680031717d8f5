"""MIG rules: every layout must exist on its GPU, with the pool's driver."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from gen.errors import Finding, Severity, SourceLocation
from gen.fleet.plan import Plan
from gen.models import MIGLayout


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
                    findings.append(Finding(
                        rule, f"layout {layout.name!r} on {pool_plan.gpu.name}: {error}",
                        at, at_key, related=related,
                        hint="check with: gen mig check --gpu "
                        f"{pool_plan.gpu.id} " + " ".join(
                            f"{p}={c}" for p, c in sorted(counts.items())
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
