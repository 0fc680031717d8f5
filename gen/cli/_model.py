"""``gen model import``: a ``kind: Model`` profile from a model's Hugging Face files."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from gen.cli._boundary import handle_errors

__all__ = ["model_command"]


@click.group("model")
def model_command() -> None:
    """Model profiles from Hugging Face files, offline."""


@model_command.command("import")
@click.argument("path", type=click.Path(path_type=Path))
@click.option("--name", default=None,
              help="Hugging Face id services will name [default: the cache entry's ORG/NAME, "
              "else the config's _name_or_path, else the folder's name].")
@click.option("--parameters", type=click.IntRange(min=1), default=None,
              help="Total parameters, for an architecture gen cannot count and no safetensors "
              "beside the config (the figure on the model's Hugging Face page).")
@click.option("--license-gated", is_flag=True,
              help="The repository asks for a licence acceptance (pods need HF_TOKEN).")
@handle_errors
def import_command(path: Path, name: str | None, parameters: int | None,
                   license_gated: bool) -> None:
    """Print a Model profile for the model at PATH: a config.json, a model folder (config.json
    beside its safetensors) or a Hugging Face cache entry (models--ORG--NAME).

    Nothing is downloaded. The parameter count comes from the architecture (or, for an
    architecture gen cannot count, from the safetensors); the checkpoint size from
    model.safetensors.index.json.
    """
    from gen.serving.hf_config import find_model_files, profile_text, read_model

    files = find_model_files(path)
    spec = read_model(files, name, parameters)
    if license_gated:
        spec = replace(spec, license_gated=True)
    click.echo(profile_text(spec, files), nl=False)
