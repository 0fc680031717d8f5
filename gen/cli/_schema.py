"""``gen schema``: the JSON Schema of the profiles, for editors."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gen.cli._boundary import handle_errors


def profile_schema() -> dict[str, object]:
    """The JSON Schema of any profile document."""
    from gen.models import profile_adapter

    schema = profile_adapter().json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "gen profile"
    return schema


@click.command("schema")
@click.option("-o", "--output", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Write to this file instead of stdout.")
@handle_errors
def schema_command(output: Path | None) -> None:
    """Print the JSON Schema of the profiles (for editor modelines)."""
    text = json.dumps(profile_schema(), indent=2, sort_keys=True) + "\n"
    if output is None:
        click.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf-8")
