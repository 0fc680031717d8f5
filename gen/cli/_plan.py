"""``gen plan``: formats :func:`gen.nvidia.planner.plan_fleet` as text, JSON or MIGLayouts."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gen.cli._boundary import handle_errors
from gen.cli._options import profiles_option

if TYPE_CHECKING:
    from gen.fleet.plan import Plan
    from gen.kueue.explain import QueueQuota
    from gen.nvidia.planner import LayoutProposal, PoolPlanProposal

__all__ = ["format_plan", "plan_command"]


def _counts(counts: Mapping[str, int]) -> str:
    return " ".join(f"{p}={n}" for p, n in sorted(counts.items())) or "(none)"


def _proposal_lines(title: str, proposal: LayoutProposal | None, gpus_per_node: int,
                    nodes: int) -> list[str]:
    if proposal is None:
        return [f"  {title}: no valid layout holds every demanded profile"]
    if proposal.uniform:
        layout = f"every GPU: {_counts(proposal.per_gpu[0])}"
    else:
        layout = "; ".join(f"GPU {i}: {_counts(c)}" for i, c in enumerate(proposal.per_gpu))
        if len(proposal.per_gpu) < gpus_per_node:
            layout += f"; GPUs {len(proposal.per_gpu)}-{gpus_per_node - 1}: MIG off"
    fits = "fits" if proposal.fits else f"does NOT fit the pool's {nodes} node(s)"
    idle = _counts(proposal.idle_instances) if proposal.idle_instances else "none"
    return [
        f"  {title}: {layout}",
        f"    needs {proposal.gpus_needed} GPU(s) on {proposal.nodes_needed} node(s) of "
        f"{gpus_per_node}: {fits}",
        f"    waste on those GPUs: {proposal.unused_memory_slices} memory slice(s), "
        f"{proposal.unused_compute_slices} compute slice(s) unused; idle instances: {idle}",
    ]


def _pool_lines(p: PoolPlanProposal) -> list[str]:
    assert p.pool.gpu is not None
    spec = p.pool.pool
    mode = spec.mig or ("static" if p.pool.mig_layout else "no MIG")
    lines = [f"cluster {p.cluster}, pool {p.pool.name} ({spec.nodes} × {spec.gpus_per_node} "
             f"{p.pool.gpu.id}, {mode})",
             f"  demand (autoscaling max): {_counts(p.demand)}"]
    if p.unknown:
        lines.append(f"  not planned (no such profile on {p.pool.gpu.id}): "
                     + ", ".join(p.unknown))
    if not p.demand:
        return lines
    lines += _proposal_lines("one layout", p.uniform, spec.gpus_per_node, spec.nodes)
    lines += _proposal_lines("per GPU index", p.per_index, spec.gpus_per_node, spec.nodes)
    static = [x.gpus_needed for x in (p.uniform, p.per_index) if x is not None]
    if p.dynamic_gpus is None:
        lines.append("  dynamic MIG: a demanded profile does not fit one GPU")
    elif static and p.dynamic_gpus < min(static):
        lines.append(f"  dynamic MIG: {p.dynamic_gpus} GPU(s), fewer than the "
                     f"{min(static)} a static layout needs (best case: arrival order can "
                     "fragment, see GEN241)")
    else:
        lines.append(f"  dynamic MIG: {p.dynamic_gpus} GPU(s), no fewer than static")
    return lines


def format_plan(proposals: Sequence[PoolPlanProposal],
                quotas: Sequence[QueueQuota] = ()) -> str:
    """The text ``gen plan`` prints: the MIG proposals, then the Kueue quotas."""
    from gen.kueue.explain import quota_lines

    lines: list[str] = [] if proposals else ["no MIG demand on a MIG-capable pool", ""]
    for p in proposals:
        lines += [*_pool_lines(p), ""]
    if quotas:
        lines += quota_lines(list(quotas))
    return "\n".join(lines).rstrip() + "\n"


def _quotas(plan: Plan, clusters: Sequence[str]) -> list[QueueQuota]:
    from gen.kueue.explain import queue_quotas

    return [q for c in plan.clusters if not clusters or c.name in clusters
            for q in queue_quotas(c)]


@click.command("plan")
@click.option("--cluster", "clusters", multiple=True, help="Only this cluster (repeatable).")
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON plan.")
@click.option("--layouts", is_flag=True,
              help="Print the proposed layouts as MIGLayout profiles (YAML) instead.")
@profiles_option
@handle_errors
def plan_command(clusters: tuple[str, ...], as_json: bool, layouts: bool,
                 profiles_dir: Path) -> int:
    """MIG layouts for the services' demand on each pool, least waste first; dynamic vs static;
    on Kueue clusters, each ClusterQueue's quota against its namespace's demand.

    Each pool is planned as if it alone served the services that may run on it. Exit 0
    (the plan is advice; 'gen lint' says what does not fit), 1 on invalid profiles.
    """
    from gen.nvidia.planner import layout_documents, plan_fleet, to_json
    from gen.pipeline import load_plan

    plan = load_plan(profiles_dir)
    proposals = plan_fleet(plan, clusters)
    quotas = _quotas(plan, clusters)
    if layouts:
        import yaml

        docs = [d for p in proposals for d in layout_documents(p)]
        click.echo(yaml.safe_dump_all(docs, sort_keys=False), nl=False)
    elif as_json:
        data = to_json(proposals)
        data["quotas"] = [q.to_json() for q in quotas]
        click.echo(json.dumps(data, indent=2, sort_keys=True))
    else:
        click.echo(format_plan(proposals, quotas), nl=False)
    return 0
