"""Options shared by several commands."""

from __future__ import annotations

from pathlib import Path

import click

profiles_option = click.option(
    "--profiles", "profiles_dir", type=click.Path(path_type=Path),
    default=Path("profiles"), show_default=True, help="Folder of profile YAML files.",
)


def templates_for(profiles_dir: Path, templates_dir: Path | None) -> Path | None:
    """``--templates``, else the ``templates/`` folder beside the profiles (if any)."""
    if templates_dir is not None:
        return templates_dir
    beside = profiles_dir.parent / "templates"
    return beside if beside.is_dir() else None


crds_option = click.option(
    "--crds", "crds_dir", type=click.Path(path_type=Path, file_okay=False, exists=True),
    default=None,
    help="CRDs (YAML as `kubectl get crd -o yaml` prints them) to validate custom resources "
         "against (default: crds/ beside --profiles, if any).",
)


def crds_for(profiles_dir: Path, crds_dir: Path | None) -> Path | None:
    """``--crds``, else the ``crds/`` folder beside the profiles (if any)."""
    if crds_dir is not None:
        return crds_dir
    beside = profiles_dir.parent / "crds"
    return beside if beside.is_dir() else None
