"""``gen explain``: formats :func:`gen.dra.explain.explain` as text or JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from gen.cli._boundary import handle_errors
from gen.cli._options import profiles_option

if TYPE_CHECKING:
    from gen.dra.allocator import Packing
    from gen.dra.explain import (
        ClaimExplanation,
        ClusterExplanation,
        Explanation,
        Runbook,
        ServiceExplanation,
    )
    from gen.fleet.plan import Plan
    from gen.kueue.explain import QueueAdmission

__all__ = [
    "explain_command", "explain_text", "format_explanation", "packing_svgs", "packing_text",
]


def _claim_lines(claim: ClaimExplanation) -> list[str]:
    count = "all matching devices" if claim.all_devices else f"{claim.count} device(s)"
    lines = [f"  {claim.label}: class {claim.gpu_class!r}, {count}"]
    lines += [f"    {s.label}: {s.expression}" for s in claim.selectors]
    if claim.same:
        lines.append(f"    same: {', '.join(claim.same)}")
    if not claim.compiles:
        lines.append("    a selector does not compile (see 'gen lint', GEN203)")
        return lines
    for pool in claim.pools:
        lines.append(f"    pool {pool.name}: {pool.nodes} node(s) × "
                     f"{pool.devices_per_node} device(s)")
        for shape in pool.shapes:
            what = f"{shape.per_node} × {shape.shape} per node ({shape.total} in pool)"
            lines.append(f"      match     {what}" if shape.matched
                         else f"      no match  {what}: {shape.selector}: {shape.reason}")
        if pool.replicas_per_node:
            lines.append(f"      {pool.hosting_nodes} of {pool.nodes} node(s) can host a "
                         f"replica ({pool.replicas_per_node} per node)")
        else:
            lines.append(f"      no node can host a replica: {pool.why_not}")
    lines.append(f"    verdict: {'satisfiable' if claim.satisfiable else 'UNSATISFIABLE'}")
    return lines


def _queue_lines(plan: Plan | None, svc: ServiceExplanation) -> list[str]:
    """The Kueue queue that admits the service and its headroom (Kueue clusters only)."""
    found = _admission(plan, svc.cluster, svc.service)
    if found is None:
        return []
    from gen.kueue.explain import admission_lines

    return admission_lines(found)


def _admission(plan: Plan | None, cluster: str, service: str) -> QueueAdmission | None:
    if plan is None:
        return None
    from gen.kueue.explain import admission

    for built in plan.clusters:
        if built.name == cluster:
            for svc in built.services:
                if svc.service.name == service:
                    return admission(built, svc)
    return None


def _with_queues(plan: Plan, data: dict[str, Any]) -> dict[str, Any]:
    """``gen explain --json`` with each service's ``queue`` (null off Kueue)."""
    for cluster in data["clusters"]:
        for svc in cluster["services"]:
            found = _admission(plan, cluster["name"], svc["service"])
            svc["queue"] = found.to_json() if found is not None else None
    return data


def _service_lines(svc: ServiceExplanation, plan: Plan | None = None) -> list[str]:
    api = svc.dra_api_version or (
        "device plugin: no DRA claims; selectors shown as a DRA cluster would apply them"
    )
    lines = [f"cluster {svc.cluster} ({api})"]
    if not svc.has_dra_devices:
        lines.append("  no NVIDIA node pool of the cluster can run the service: "
                     "no DRA devices to match")
        return lines
    if svc.group:
        lines.append(f"  group: {svc.group}; each pod's claim below")
    for claim in svc.claims:
        lines += _claim_lines(claim)
    for fit in svc.fit:
        lines.append(f"  fit: {fit.model} on {fit.device} (pool {fit.pool}): "
                     f"{'fits' if fit.fits else 'does NOT fit'}"
                     + (f", largest max_model_len {fit.max_model_len_fit}"
                        if fit.max_model_len_fit else ""))
    lines += [f"  {f.severity.value} {f.rule}: {f.message}" for f in svc.findings]
    if not svc.findings and svc.dra_api_version is not None:
        lines.append("  capacity: every replica fits at once")
    return lines + _queue_lines(plan, svc)


def _cluster_lines(cluster: ClusterExplanation, plan: Plan | None = None) -> list[str]:
    import yaml

    lines = []
    for svc in cluster.services:
        lines += _service_lines(svc, plan)
    for pool in cluster.slices or ():
        lines.append(f"# ResourceSlice of node 0 of pool {pool.pool} (cluster {cluster.name})")
        for doc in pool.documents:
            lines.append("---")
            lines.append(yaml.safe_dump(dict(doc), sort_keys=False).rstrip())
    if cluster.runbook is not None:
        lines.append(cluster.runbook.rstrip())
    lines.append("")
    return lines


def format_explanation(explanation: Explanation, plan: Plan | None = None) -> str:
    """The text ``gen explain`` prints (with ``plan``, the Kueue queue of each service)."""
    lines: list[str] = []
    for cluster in explanation.clusters:
        lines += _cluster_lines(cluster, plan)
    return "\n".join(lines).rstrip() + "\n"


def explain_text(
    plan: Plan, service: str | None, clusters: Sequence[str], runbook: bool, slices: bool
) -> tuple[str, bool]:
    """The explanation as text, and whether the service's claims are allocatable."""
    from gen.dra.explain import explain

    explanation = explain(plan, service, clusters, runbook=_runbook(runbook), slices=slices)
    return format_explanation(explanation, plan), _all_good(explanation)


def _all_good(explanation: Explanation) -> bool:
    """Exit 0 only when nothing the explanation shows fails: every service allocatable,
    every claim it explains satisfiable (an alternative included), every fit a fit."""
    services = [svc for cluster in explanation.clusters for svc in cluster.services]
    return (explanation.ok and all(c.satisfiable for svc in services for c in svc.claims)
            and all(f.fits for svc in services for f in svc.fit))


def _runbook(wanted: bool) -> Runbook | None:
    """The MIG runbook writer when ``--runbook`` asks for it."""
    if not wanted:
        return None
    from gen.nvidia.build import runbook

    return runbook


@click.command("explain")
@click.argument("service", required=False)
@click.option("--cluster", "clusters", multiple=True, help="Only this cluster (repeatable).")
@click.option("--runbook", is_flag=True, help="Also print the MIG runbook of the cluster(s).")
@click.option("--slices", is_flag=True,
              help="Also print the simulated ResourceSlice of one node of each pool.")
@click.option("--svg", "svg_dir", type=click.Path(file_okay=False, path_type=Path),
              default=None, help="With --slices: draw each dynamic MIG GPU's packing as "
              "<cluster>-<pool>-<node>-gpu-<i>.svg in this folder.")
@click.option("--json", "as_json", is_flag=True, help="Print the versioned JSON explanation.")
@profiles_option
@handle_errors
def explain_command(service: str | None, clusters: tuple[str, ...], runbook: bool,
                    slices: bool, svg_dir: Path | None, as_json: bool,
                    profiles_dir: Path) -> int:
    """Which devices SERVICE's claim matches on each pool, why others do not, and the fit.

    Without SERVICE, --runbook or --slices prints only those. Exit 0 when the claim can be
    allocated and every replica fits; 1 on an unknown name, when any claim it explains is
    unsatisfiable (an alternative included), or when the model does not fit a device.
    """
    from gen.dra.explain import explain, to_json
    from gen.pipeline import load_plan

    if service is None and not (runbook or slices):
        raise click.UsageError("give a SERVICE, or --runbook / --slices")
    plan = load_plan(profiles_dir)
    explanation = explain(plan, service, clusters, runbook=_runbook(runbook), slices=slices)
    if as_json:
        click.echo(json.dumps(_with_queues(plan, to_json(explanation)), indent=2,
                              sort_keys=True))
    else:
        click.echo(format_explanation(explanation, plan), nl=False)
        if slices:
            click.echo(packing_text(plan, [c.name for c in explanation.clusters]), nl=False)
    if svg_dir is not None:
        if not slices:
            raise click.UsageError("--svg draws the packing of --slices; give both")
        svg_dir.mkdir(parents=True, exist_ok=True)
        for name, svg in packing_svgs(plan, [c.name for c in explanation.clusters]).items():
            (svg_dir / name).write_text(svg, encoding="utf-8")
    return 0 if _all_good(explanation) else 1


def _packings(plan: Plan, clusters: Sequence[str]) -> list[tuple[str, Packing]]:
    from functools import partial

    from gen.dra.capacity import cluster_packing
    from gen.dra.satisfiability import Matcher, analyze_service

    out = []
    for cluster in plan.clusters:
        if cluster.name not in clusters or cluster.dra_api_version is None:
            continue
        matcher = Matcher()
        packing = cluster_packing(cluster, matcher.model,
                                  partial(analyze_service, matcher, cluster))
        if packing is not None:
            out.append((cluster.name, packing))
    return out


def packing_svgs(plan: Plan, clusters: Sequence[str]) -> dict[str, str]:
    """File name → SVG of each used dynamic MIG GPU (the static layout diagrams' drawing)."""
    from gen.dra.explain import gpu_placements
    from gen.nvidia.mig import LayoutCheck, Placement
    from gen.nvidia.mig_svg import layout_svg

    out = {}
    for name, packing in _packings(plan, clusters):
        for (pool, node, gpu_index), pieces in gpu_placements(packing).items():
            gpu = packing.models[pool].pool.gpu
            assert gpu is not None
            check = LayoutCheck(gpu, True, tuple(Placement(p, s, n) for p, s, n in
                                                 sorted(pieces, key=lambda x: x[1])), (), ())
            title = f"{name} / {pool} node {node} gpu-{gpu_index}: dynamic MIG packing"
            out[f"{name}-{pool}-{node}-gpu-{gpu_index}.svg"] = layout_svg(check, title)
    return out


def packing_text(plan: Plan, clusters: Sequence[str]) -> str:
    """Per dynamic MIG GPU, the slices the minimum replicas take (``--slices``)."""
    from gen.dra.explain import packing_lines

    lines: list[str] = []
    for name, packing in _packings(plan, clusters):
        lines += packing_lines(name, packing)
    return "".join(f"{line}\n" for line in lines)
