"""Options shared by several commands."""

from __future__ import annotations

from pathlib import Path

import click

from gen._noop import crds_for, templates_for

__all__ = ["crds_for", "crds_option", "profiles_option", "templates_for"]

profiles_option = click.option(
    "--profiles", "profiles_dir", type=click.Path(path_type=Path),
    default=Path("profiles"), show_default=True, help="Folder of profile YAML files.",
)


crds_option = click.option(
    "--crds", "crds_dir", type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=None,
    help="CRDs (YAML as `kubectl get crd -o yaml` prints them) to validate custom resources "
         "against (default: crds/ beside --profiles, if any).",
)
