"""``gen render``: render profiles into out/, or check that out/ is current."""

from __future__ import annotations

from pathlib import Path

import click

from gen.cli._boundary import handle_errors
from gen.cli._options import crds_for, crds_option, profiles_option, templates_for


@click.command("render")
@profiles_option
@click.option("--out", "out_dir", type=click.Path(path_type=Path),
              default=Path("out"), show_default=True, help="Output folder.")
@click.option("--templates", "templates_dir", type=click.Path(path_type=Path, file_okay=False),
              default=None, help="Template overrides (default: templates/ beside --profiles).")
@crds_option
@click.option("--cluster", "clusters", multiple=True, help="Render only these clusters.")
@click.option("--validator", type=click.Choice(["auto", "embedded", "kubeconform", "none"]),
              default="auto", show_default=True,
              help="Schema validation: embedded schemas, plus kubeconform when on PATH (auto).")
@click.option("--check", is_flag=True, help="Write nothing; exit 1 when out/ is stale.")
@click.option("--diff", is_flag=True, help="With --check: show a unified diff.")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes (default: one per CPU, up to 8, for large fleets; else 1).")
@click.option("--no-cache", is_flag=True,
              help="Render every cluster, even those whose inputs and files in "
                   "out/.gen-cache/ show nothing changed.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing on success.")
@handle_errors
def render_command(
    profiles_dir: Path, out_dir: Path, templates_dir: Path | None, crds_dir: Path | None,
    clusters: tuple[str, ...],
    validator: str, check: bool, diff: bool, jobs: int | None, no_cache: bool, quiet: bool,
) -> None:
    """Render profiles into out/ (or --check that out/ is current)."""
    from gen.cli._progress import ClusterProgress
    from gen.pipeline import render

    if diff and not check:
        raise click.UsageError("--diff needs --check")
    with ClusterProgress(enabled=not quiet) as progress:
        result = render(
            profiles_dir, out_dir, templates_dir=templates_for(profiles_dir, templates_dir),
            clusters=clusters, validator=validator,  # type: ignore[arg-type]
            check=check, diff=diff, jobs=jobs, progress=progress, no_cache=no_cache,
            crds_dir=crds_for(profiles_dir, crds_dir),
        )
    for finding in result.findings:
        click.echo(finding.format(), err=True)
    if quiet:
        return
    changes = result.changes
    if check:
        click.echo(f"{out_dir.as_posix()}/ is up to date ({len(result.outputs)} files).")
        return
    if changes.empty:
        click.echo(f"{out_dir.as_posix()}/ unchanged ({result.objects} objects).")
    else:
        click.echo(changes.summary())
        click.echo(
            f"{out_dir.as_posix()}/: {len(changes.added)} added, {len(changes.changed)} "
            f"changed, {len(changes.removed)} removed ({result.objects} objects)."
        )
