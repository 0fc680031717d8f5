"""``gen verify``: server-side dry-run of ``out/<cluster>/`` and hardware drift, read-only."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gen.cli._boundary import handle_errors
from gen.cli._options import profiles_option, templates_for
from gen.errors import ClusterAccessError, Finding, GenError, Severity

JSON_FORMAT_VERSION = 1
"""Version of ``gen verify --json``'s output (docs/verification.md)."""


def _summary(findings: list[Finding]) -> dict[str, int]:
    return {s.value: sum(f.severity is s for f in findings) for s in Severity}


def _emit_json(cluster: str, server: str | None, findings: list[Finding],
               checked: dict[str, int] | None) -> None:
    click.echo(json.dumps({
        "version": JSON_FORMAT_VERSION,
        "cluster": cluster,
        "server": server,
        "checked": checked,
        "findings": [f.to_json() for f in findings],
        "summary": _summary(findings),
    }, indent=2, sort_keys=True))


@click.command("verify")
@click.option("--cluster", "cluster", required=True, help="The cluster of the profiles to verify.")
@profiles_option
@click.option("--out", "out_dir", type=click.Path(path_type=Path, file_okay=False),
              default=Path("out"), show_default=True, help="The rendered output folder.")
@click.option("--templates", "templates_dir", type=click.Path(path_type=Path, file_okay=False),
              default=None, help="Template overrides (default: templates/ beside profiles).")
@click.option("--kubeconfig", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Kubeconfig file (default: $KUBECONFIG, else ~/.kube/config).")
@click.option("--context", default=None, help="Kubeconfig context (default: the current one).")
@click.option("--timeout", type=click.FloatRange(min=0.1, max=3600), default=30.0,
              show_default=True, help="Seconds to wait for each answer of the API server.")
@click.option("--json", "as_json", is_flag=True, help="A JSON report on stdout (versioned).")
@handle_errors
def verify_command(cluster: str, profiles_dir: Path, out_dir: Path, templates_dir: Path | None,
                   kubeconfig: Path | None, context: str | None, timeout: float,
                   as_json: bool) -> int:
    """Dry-run out/CLUSTER/ on a live cluster; compare its hardware with the profile.

    \b
    Read-only: it never creates, changes or deletes anything in the cluster.
    It sends only GET requests and server-side apply PATCHes with dryRun=All,
    which the API server validates and admits but never persists.

    1. Every object of out/CLUSTER/ is applied with dryRun=All; each refusal is reported at
    the profile line that produced the object, with the server's message and field path.

    2. The cluster's Nodes and ResourceSlices (device-plugin clusters: Node capacity and GPU
    Feature Discovery labels) against each node pool: node count, GPU model, GPUs per node,
    MIG devices, driver version, dynamic-MIG counters; also the Kubernetes version.

    The user of the context needs get/list on nodes, namespaces and resourceslices, and
    patch and create on the kinds of out/ (docs/verification.md has the ClusterRole).
    Exit 0 when nothing is wrong (warnings and infos do not fail), 1 on a refusal, a drift
    or when the cluster cannot be asked.
    """
    from gen.pipeline import load_plan
    from gen.verify import verify
    from gen.verify.client import connect

    plan = load_plan(profiles_dir).select([cluster])
    try:
        api = connect(kubeconfig, context, timeout)
        result = verify(plan, cluster, api, out_dir=out_dir,
                        templates_dir=templates_for(profiles_dir, templates_dir))
    except ClusterAccessError as err:
        if not as_json:
            raise
        _emit_json(cluster, None, _access_findings(err), None)
        return 1
    findings = list(result.findings)
    if as_json:
        _emit_json(cluster, result.server, findings, result.counts())
        return 0 if result.ok else 1
    for finding in findings:
        click.echo(finding.format())
    counts = _summary(findings)
    click.echo(
        f"{result.cluster}, {result.server}: {result.objects} object(s) dry-run "
        f"({result.accepted} accepted, {result.refused} refused, {result.not_served} not "
        f"served, {result.not_checked} not checked), {result.pools} pool(s), "
        f"{result.nodes} node(s); {counts['error']} error(s), {counts['warning']} "
        f"warning(s), {counts['info']} info(s).", err=True)
    return 0 if result.ok else 1


def _access_findings(err: GenError) -> list[Finding]:
    return list(err.findings) or [Finding(err.default_rule, err.message or str(err))]
