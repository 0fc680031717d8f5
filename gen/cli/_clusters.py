"""``gen clusters [--json]``: the clusters and a fingerprint of each one's inputs.

For CI fan-out: a first job lists the clusters (and which changed, by fingerprint), a
matrix renders each with ``gen render --cluster NAME``, and a last job merges and checks.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from gen.cli._boundary import handle_errors
from gen.cli._options import crds_for, crds_option, profiles_option, templates_for

JSON_FORMAT_VERSION = 1


@click.command("clusters")
@profiles_option
@click.option("--templates", "templates_dir", type=click.Path(path_type=Path, file_okay=False),
              default=None, help="Template overrides (default: templates/ beside profiles).")
@crds_option
@click.option("--json", "as_json", is_flag=True, help="A JSON object on stdout.")
@handle_errors
def clusters_command(profiles_dir: Path, templates_dir: Path | None, crds_dir: Path | None,
                     as_json: bool) -> None:
    """List the clusters with the fingerprint of each one's inputs.

    The fingerprint is the render cache's (out/.gen-cache/<cluster>.json): it changes
    exactly when the inputs of that cluster do; with the env (this gen's version, code and
    libraries) it says when a render of that cluster could write other bytes.
    """
    from gen.pipeline import cluster_fingerprints

    rows = cluster_fingerprints(
        profiles_dir, templates_dir=templates_for(profiles_dir, templates_dir),
        crds_dir=crds_for(profiles_dir, crds_dir))
    if as_json:
        click.echo(json.dumps({"version": JSON_FORMAT_VERSION, "clusters": rows},
                              indent=2, sort_keys=True))
        return
    for row in rows:
        click.echo(f"{row['name']}\t{row['fingerprint'] or '-'}")
