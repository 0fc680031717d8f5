"""``gen init DIR``: a new fleet repository with example profiles."""

from __future__ import annotations

import json
import shlex
import shutil
import sys
from pathlib import Path

import click

from gen.cli._boundary import handle_errors

_STARTER = Path(__file__).resolve().parent.parent / "data" / "init"

IGNORED_ENTRIES = frozenset({".git"})
"""What a folder may already hold for ``gen init`` to write into it: a new Git repository
(``git init`` first, then ``gen init .``) is still an empty fleet."""


def gen_command() -> str:
    """How to run this gen from a shell, as written: ``gen`` when that is on PATH and is this
    gen, else the path of the script that is running, else ``python -m gen``."""
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else None
    on_path = shutil.which("gen")
    if script is not None and script.name == "gen" and script.is_file():
        if on_path is not None and Path(on_path).resolve() == script.resolve():
            return "gen"
        return shlex.quote(str(script.absolute()))
    return f"{shlex.quote(sys.executable)} -m gen"


@click.command("init")
@click.argument("directory", type=click.Path(path_type=Path, file_okay=False))
@handle_errors
def init_command(directory: Path) -> int:
    """Create a new fleet repository in DIRECTORY (absent, empty, or a new Git repository).

    Writes profiles/ (a cluster, a GPU class and a service to edit) and schema/ (for editor
    completion), then prints the next commands, runnable as written.
    """
    from gen.cli._schema import profile_schema

    if directory.exists():
        if not directory.is_dir():
            click.echo(f"{directory.as_posix()} is a file; gen init writes a new folder",
                       err=True)
            return 1
        content = sorted(p.name for p in directory.iterdir() if p.name not in IGNORED_ENTRIES)
        if content:
            shown = ", ".join(content[:5]) + (", …" if len(content) > 5 else "")
            click.echo(f"{directory.as_posix()} is not empty ({shown}); gen init only writes "
                       "into a new folder, an empty one or a new Git repository", err=True)
            return 1
    shutil.copytree(_STARTER, directory, dirs_exist_ok=True)
    schema_dir = directory / "schema"
    schema_dir.mkdir(exist_ok=True)
    (schema_dir / "gen-profile.schema.json").write_text(
        json.dumps(profile_schema(), indent=2, sort_keys=True) + "\n", encoding="utf-8"
    )
    gen = gen_command()
    where = directory.as_posix()
    click.echo(f"Created {where}/profiles. Next:")
    if directory == Path():
        click.echo(f"  {gen} lint && {gen} render")
    else:
        click.echo(f"  cd {shlex.quote(where)} && {gen} lint && {gen} render")
    return 0
