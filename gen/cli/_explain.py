"""``gen explain``: which devices a service's claim matches, why others do not, and the fit."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from gen.cli._boundary import handle_errors
from gen.errors import Finding, Severity, UnresolvedReferenceError
from gen.fleet.plan import ClusterPlan, Plan, ServicePlan

__all__ = ["explain_command", "explain_text"]

_RULES = ("GEN204", "GEN205", "GEN206")


def _clusters(plan: Plan, service: str | None, wanted: Sequence[str]) -> list[ClusterPlan]:
    """The clusters to explain; raises UnresolvedReferenceError for unknown names."""
    known = {c.name: c for c in plan.clusters}
    missing = [name for name in wanted if name not in known]
    if missing:
        raise UnresolvedReferenceError(
            f"unknown cluster(s): {', '.join(missing)}; known: {', '.join(sorted(known))}"
        )
    if service is not None:
        names = sorted(plan.profiles.services)
        if service not in plan.profiles.services:
            raise UnresolvedReferenceError(
                f"unknown service {service!r}; known: {', '.join(names) or 'none defined'}"
            )
        runs_in = [c.name for c in plan.clusters if any(s.service.name == service
                                                           for s in c.services)]
        outside = [name for name in wanted if name not in runs_in]
        if outside:
            raise UnresolvedReferenceError(
                f"service {service!r} does not run in {', '.join(outside)}; "
                f"it runs in: {', '.join(runs_in) or 'no cluster'}"
            )
        wanted = wanted or runs_in
    return [known[name] for name in (wanted or sorted(known))]


def _pool_lines(analysis: object) -> list[str]:
    from gen.dra.satisfiability import ChoiceAnalysis
    from gen.dra.simulate import shape_summary

    assert isinstance(analysis, ChoiceAnalysis)
    lines = []
    selectors = analysis.choice.selectors
    for pool in analysis.pools:
        spec = pool.pool.pool
        lines.append(f"    pool {pool.pool.name}: {spec.nodes} node(s) × "
                     f"{pool.inventory.devices_per_node} device(s)")
        rows: dict[tuple[str, bool, str], list[int]] = {}
        for v in pool.verdicts:
            shape = pool.inventory.shapes[v.shape]
            why = "" if v.matched else f"{selectors[v.selector][0]}: {v.reason}"
            row = rows.setdefault((shape_summary(shape), v.matched, why), [0, 0])
            row[0] += shape.per_node
            row[1] += shape.total
        for (summary, matched, why), (per_node, total) in rows.items():
            what = f"{per_node} × {summary} per node ({total} in pool)"
            lines.append(f"      match     {what}" if matched else f"      no match  {what}: {why}")
        if pool.replicas_per_node:
            lines.append(f"      {pool.hosting_nodes} of {spec.nodes} node(s) can host a "
                         f"replica ({pool.replicas_per_node} per node)")
        else:
            lines.append(f"      no node can host a replica: {pool.why_not}")
    return lines


def _service_text(cluster: ClusterPlan, svc: ServicePlan, findings: list[Finding]) -> list[str]:
    """The explanation of one service in one cluster (its findings included)."""
    from gen.dra.satisfiability import Matcher, analyze_service

    service = svc.service
    from gen.dra.satisfiability import nvidia_pools

    api = cluster.dra_api_version or (
        "device plugin: no DRA claims; selectors shown as a DRA cluster would apply them"
    )
    lines = [f"cluster {cluster.name} ({api})"]
    if not nvidia_pools(svc):
        lines.append("  no NVIDIA node pool of the cluster can run the service: "
                     "no DRA devices to match")
        return lines
    for analysis in analyze_service(Matcher(), cluster, svc):
        choice = analysis.choice
        count = "all matching devices" if choice.all_devices else f"{choice.count} device(s)"
        lines.append(f"  {choice.label}: class {choice.gpu_class.name!r}, {count}")
        lines += [f"    {label}: {expr}" for label, expr, _, _ in choice.selectors]
        if service.gpu is not None and service.gpu.same:
            lines.append(f"    same: {', '.join(service.gpu.same)}")
        if not analysis.compiles:
            lines.append("    a selector does not compile (see 'gen lint', GEN203)")
            continue
        lines += _pool_lines(analysis)
        lines.append(f"    verdict: {'satisfiable' if analysis.satisfiable else 'UNSATISFIABLE'}")
    lines += _fit_lines(svc)
    mine = _findings_of(findings, service.name, cluster.name)
    lines += [f"  {f.severity.value} {f.rule}: {f.message}" for f in mine]
    if not mine and cluster.dra_api_version is not None:
        lines.append("  capacity: every replica fits at once")
    return lines


def _findings_of(findings: list[Finding], service: str, cluster: str) -> list[Finding]:
    return [f for f in findings if f.rule in _RULES and f"service {service!r}" in f.message
            and f"cluster {cluster!r}" in f.message]


def _fit_lines(svc: ServicePlan) -> list[str]:
    from gen.serving.sizing import fit_reports

    lines = []
    for cand, report in fit_reports(svc, svc.service.serving.max_model_len):
        fits = bool(getattr(report, "fits", True))
        best = getattr(report, "max_model_len_fit", 0)
        lines.append(f"  fit: {svc.service.model} on {cand.name} (pool {cand.pool.name}): "
                     f"{'fits' if fits else 'does NOT fit'}"
                     + (f", largest max_model_len {best}" if best else ""))
    return lines


def explain_text(
    plan: Plan, service: str | None, clusters: Sequence[str], runbook: bool, slices: bool
) -> tuple[str, bool]:
    """The explanation and whether the service's claims are allocatable everywhere asked."""
    from gen.dra.satisfiability import check

    findings = check(plan) if service is not None else []
    lines: list[str] = []
    ok = True
    for cluster in _clusters(plan, service, clusters):
        for svc in cluster.services:
            if service is not None and svc.service.name == service:
                lines += _service_text(cluster, svc, findings)
                ok = ok and not any(f.severity is Severity.ERROR
                                    for f in _findings_of(findings, service, cluster.name))
        if slices:
            lines += _slice_lines(cluster)
        if runbook:
            from gen.nvidia.build import runbook as mig_runbook

            lines.append(mig_runbook(cluster).rstrip())
        lines.append("")
    return "\n".join(lines).rstrip() + "\n", ok


def _slice_lines(cluster: ClusterPlan) -> list[str]:
    import yaml

    from gen.dra.simulate import resource_slices

    lines = []
    for pool in cluster.pools:
        if pool.gpu is None or not pool.pool.nodes:
            continue
        lines.append(f"# ResourceSlice of node 0 of pool {pool.name} (cluster {cluster.name})")
        for doc in resource_slices(pool, 0):
            lines.append("---")
            lines.append(yaml.safe_dump(doc, sort_keys=False).rstrip())
    return lines


@click.command("explain")
@click.argument("service", required=False)
@click.option("--cluster", "clusters", multiple=True, help="Only this cluster (repeatable).")
@click.option("--runbook", is_flag=True, help="Also print the MIG runbook of the cluster(s).")
@click.option("--slices", is_flag=True,
              help="Also print the simulated ResourceSlice of one node of each pool.")
@click.option("--profiles", "profiles_dir", type=click.Path(path_type=Path, file_okay=False),
              default=Path("profiles"), show_default=True, help="Folder of profile YAML files.")
@click.pass_context
@handle_errors
def explain_command(ctx: click.Context, service: str | None, clusters: tuple[str, ...],
                    runbook: bool, slices: bool, profiles_dir: Path) -> None:
    """Which devices SERVICE's claim matches on each pool, why others do not, and the fit.

    Without SERVICE, --runbook or --slices prints only those. Exit 0 when the claim can be
    allocated and every replica fits; 1 on an unknown name or an unsatisfiable claim.
    """
    from gen.pipeline import load_plan

    if service is None and not (runbook or slices):
        raise click.UsageError("give a SERVICE, or --runbook / --slices")
    text, ok = explain_text(load_plan(profiles_dir), service, clusters, runbook, slices)
    click.echo(text, nl=False)
    ctx.exit(0 if ok else 1)
