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
