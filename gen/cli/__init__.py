"""The ``gen`` command line: a thin click layer, the only place that prints or exits.

Sub-commands live in their own modules and are imported only when invoked, so that
``gen --version`` stays fast. Each command converts options to arguments, makes one
call into the library and echoes the result; :func:`run_boundary` turns a
:class:`gen.errors.GenError` into a message on stderr and its exit code.
"""

from __future__ import annotations

import importlib

import click

from gen._version import __version__

__all__ = ["main"]

VERSION = __version__

# name -> "module:attribute"; the module is imported only when the command runs.
_COMMANDS: dict[str, tuple[str, str]] = {
    "render": ("gen.cli._render:render_command", "Render profiles into out/ (or --check it)."),
    "lint": ("gen.cli._lint:lint_command", "Run every check on the profiles; write nothing."),
    "schema": ("gen.cli._schema:schema_command", "Print the JSON Schema of the profiles."),
    "catalog": ("gen.cli._catalog:catalog_command", "Show the built-in GPU and model catalogs."),
    "mig": ("gen.cli._mig:mig_command", "MIG layout tools (check a layout, draw it)."),
    "model": ("gen.cli._model:model_command", "Model profiles from Hugging Face files."),
    "fit": ("gen.cli._fit:fit_command", "Does a model fit a GPU or MIG slice?"),
    "apple-fit": ("gen.cli._apple_fit:apple_fit_command",
                  "Does a model fit an Apple GPU (Mac or krunkit VM)?"),
    "cel": ("gen.cli._cel:cel_command", "Compile and evaluate DRA CEL selectors."),
    "explain": ("gen.cli._explain:explain_command", "Which devices a service's claims match."),
    "clusters": ("gen.cli._clusters:clusters_command",
                 "List the clusters and a fingerprint of each one's inputs (CI fan-out)."),
    "plan": ("gen.cli._plan:plan_command", "MIG layouts from the services' demand; dynamic MIG."),
    "init": ("gen.cli._init:init_command", "Create a new fleet repository."),
    "verify": ("gen.cli._verify:verify_command",
               "Dry-run out/CLUSTER/ and check its hardware against a live cluster (read-only)."),
}


class _LazyGroup(click.Group):
    """A click group whose sub-commands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        entry = _COMMANDS.get(cmd_name)
        if entry is None:
            return None
        module_name, _, attr = entry[0].partition(":")
        command = getattr(importlib.import_module(module_name), attr)
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Short help comes from the table so that --help imports no sub-command module.
        rows = [(name, _COMMANDS[name][1]) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(VERSION, prog_name="gen", message="%(prog)s %(version)s")
def cli() -> None:
    """Generate validated GitOps manifests for GPU inference fleets.

    Exit codes: 0 ok; 1 findings (invalid input, lint errors, stale out/, validation
    failures); 2 usage error.
    """



def main() -> None:
    """Console-script entry point."""
    cli(prog_name="gen")
