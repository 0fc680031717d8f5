"""``gen lint``: every check on the profiles; nothing is written."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gen.cli import VERSION
from gen.cli._boundary import handle_errors
from gen.cli._options import crds_for, crds_option, profiles_option
from gen.errors import Finding, GenError, Severity

JSON_FORMAT_VERSION = 1


def _emit(findings: list[Finding], fmt: str) -> None:
    if fmt == "json":
        counts = {s.value: sum(f.severity is s for f in findings) for s in Severity}
        click.echo(json.dumps({
            "version": JSON_FORMAT_VERSION,
            "findings": [f.to_json() for f in findings],
            "summary": counts,
        }, indent=2, sort_keys=True))
    elif fmt == "sarif":
        from gen.emit.sarif import to_sarif
        from gen.rules import RULES

        click.echo(json.dumps(to_sarif(findings, tool_version=VERSION, rules=RULES),
                              indent=2, sort_keys=True))
    else:
        for finding in findings:
            click.echo(finding.format())
        errors = sum(f.severity is Severity.ERROR for f in findings)
        warnings = sum(f.severity is Severity.WARNING for f in findings)
        click.echo(f"{errors} error(s), {warnings} warning(s).", err=True)


@click.command("lint")
@profiles_option
@crds_option
@click.option("--format", "fmt", type=click.Choice(["text", "json", "sarif"]), default="text",
              show_default=True, help="Output format (json and sarif go to stdout).")
@click.option("--strict", is_flag=True, help="Warnings fail too (exit 1).")
@handle_errors
def lint_command(profiles_dir: Path, crds_dir: Path | None, fmt: str, strict: bool) -> int:
    """Run every check on the profiles; write nothing.

    Exit 0 when clean, 1 on errors (or warnings with --strict). Invalid profiles are
    reported in the chosen format too.
    """
    from gen.pipeline import lint

    try:
        findings = lint(profiles_dir, crds_dir=crds_for(profiles_dir, crds_dir))
    except GenError as err:
        if not err.findings:
            raise
        findings = list(err.findings)
    _emit(findings, fmt)
    failing = {Severity.ERROR, Severity.WARNING} if strict else {Severity.ERROR}
    return 1 if any(f.severity in failing for f in findings) else 0
