"""``gen lint``: every check on the profiles; nothing is written."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import click

from gen.cli import VERSION
from gen.cli._boundary import handle_errors
from gen.cli._options import crds_for, crds_option, profiles_option
from gen.errors import Finding, GenError, Severity, escape_controls

if TYPE_CHECKING:
    from gen.fleet.suppress import Suppression

JSON_FORMAT_VERSION = 1

Suppressed = Sequence[tuple[Finding, "Suppression"]]


def _suppression_json(suppression: Suppression) -> dict[str, object]:
    loc = suppression.location
    return {
        "scope": suppression.scope, "reason": suppression.reason,
        "path": loc.path or None, "line": loc.line or None,
    }


def _emit(findings: list[Finding], suppressed: Suppressed, fmt: str, show: bool) -> None:
    if fmt == "json":
        counts: dict[str, int] = {
            s.value: sum(f.severity is s for f in findings) for s in Severity
        }
        counts["suppressed"] = len(suppressed)
        click.echo(json.dumps({
            "version": JSON_FORMAT_VERSION,
            "findings": [f.to_json() for f in findings],
            "suppressed": [
                {**f.to_json(), "suppression": _suppression_json(s)} for f, s in suppressed
            ],
            "summary": counts,
        }, indent=2, sort_keys=True))
    elif fmt == "sarif":
        from gen.emit.sarif import to_sarif
        from gen.rules import RULES

        click.echo(json.dumps(
            to_sarif(findings, tool_version=VERSION, rules=RULES, suppressed=suppressed),
            indent=2, sort_keys=True))
    else:
        for finding in findings:
            click.echo(finding.format())
        if show:
            for finding, suppression in suppressed:
                click.echo(f"{finding.format()}\n    suppressed ({suppression.scope}, at "
                           f"{suppression.location}): {escape_controls(suppression.reason)}")
        errors = sum(f.severity is Severity.ERROR for f in findings)
        warnings = sum(f.severity is Severity.WARNING for f in findings)
        summary = f"{errors} error(s), {warnings} warning(s)"
        if suppressed:
            summary += f", {len(suppressed)} suppressed"
            if not show:
                summary += " (--show-suppressed lists them)"
        click.echo(summary + ".", err=True)


@click.command("lint")
@profiles_option
@crds_option
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif"]), default="text",
              show_default=True, help="Output format (json and sarif go to stdout).")
@click.option("--strict", is_flag=True, help="Warnings fail too (exit 1).")
@click.option("--show-suppressed", is_flag=True,
              help="List the findings suppressions silence, with their reasons.")
@handle_errors
def lint_command(profiles_dir: Path, crds_dir: Path | None, fmt: str, strict: bool,
                 show_suppressed: bool) -> int:
    """Run every check on the profiles; write nothing.

    Exit 0 when clean, 1 on errors (or warnings with --strict). Invalid profiles, and a
    missing profiles folder, are reported in the chosen format too. Suppressed findings
    (a '# gen: ignore[RULE] reason' comment, a profile's lint.ignore, gen.yaml) never fail
    the run; they are counted in the summary.
    """
    from gen.pipeline import lint_report

    suppressed: Suppressed = ()
    try:
        report = lint_report(profiles_dir, crds_dir=crds_for(profiles_dir, crds_dir))
        findings, suppressed = list(report.findings), report.suppressed
    except GenError as err:
        findings = list(err.findings) or [Finding(err.default_rule, err.message or str(err))]
    _emit(findings, suppressed, fmt, show_suppressed)
    failing = {Severity.ERROR, Severity.WARNING} if strict else {Severity.ERROR}
    return 1 if any(f.severity in failing for f in findings) else 0
