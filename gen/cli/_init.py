"""``gen init DIR``: a new fleet repository with example profiles."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import click

from gen.cli._boundary import handle_errors

_STARTER = Path(__file__).resolve().parent.parent / "data" / "init"


@click.command("init")
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False))
@handle_errors
def init_command(directory: Path) -> int:
    """Create a new fleet repository in DIRECTORY (which must be empty or absent)."""
    from gen.cli._schema import profile_schema

    if directory.exists() and any(directory.iterdir()):
        click.echo(f"{directory.as_posix()} is not empty; gen init only writes into a new "
                   "folder", err=True)
        return 1
    shutil.copytree(_STARTER, directory, dirs_exist_ok=True)
    schema_dir = directory / "schema"
    schema_dir.mkdir(exist_ok=True)
    (schema_dir / "gen-profile.schema.json").write_text(
        json.dumps(profile_schema(), indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    click.echo(f"Created {directory.as_posix()}/profiles. Next:")
    click.echo(f"  cd {directory.as_posix()} && gen lint && gen render")
    return 0
