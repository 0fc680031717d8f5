"""``gen cel eval``: compile a DRA selector the way Kubernetes does; run it on one device."""

from __future__ import annotations

import json
from pathlib import Path

import click
import yaml

from gen.cli._boundary import handle_errors
from gen.dra.cel import compile_selector, evaluate, explain_miss, kubernetes_minor
from gen.dra.devices import Device, device_from_resourceslice_entry
from gen.errors import CELCompileError, DeviceError

__all__ = ["cel_command"]


def _read_device(path: Path, driver: str) -> Device:
    """A ResourceSlice v1 device entry from a YAML or JSON file; raises :class:`DeviceError`."""
    try:
        entry = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
        raise DeviceError(f"{path}: cannot read the device: {err}") from None
    if not isinstance(entry, dict):
        raise DeviceError(f"{path}: a device entry must be a mapping")
    try:
        return device_from_resourceslice_entry(entry, driver)
    except DeviceError as err:
        raise DeviceError(f"{path}: {err.message}") from None


def _report(
    compiled: bool, result: bool | None, error: str | None, hint: str | None, as_json: bool
) -> int:
    """Print the outcome; the exit code: 1 on a compile or run-time error, else 0."""
    if as_json:
        click.echo(json.dumps({"compiled": compiled, "result": result, "error": error}))
    elif error is not None:
        click.echo(hint or error, err=True)
    else:
        click.echo("compiled" if result is None else str(result).lower())
        if hint:
            click.echo(f"hint: {hint}", err=True)
    return 1 if error is not None else 0


def _check_version(_ctx: click.Context, _param: click.Parameter, value: str | None) -> int | None:
    try:
        return kubernetes_minor(value)
    except ValueError as err:
        raise click.BadParameter(str(err)) from None


@click.group("cel")
def cel_command() -> None:
    """Compile and evaluate DRA CEL selectors."""


@cel_command.command("eval")
@click.argument("expression")
@click.option(
    "--device",
    "device_file",
    type=click.Path(path_type=Path, exists=True, dir_okay=False),
    help="A ResourceSlice resource.k8s.io/v1 device entry (YAML or JSON) to evaluate on.",
)
@click.option(
    "--driver",
    default="gpu.nvidia.com",
    show_default=True,
    help="Driver of the device: the domain of its unqualified attribute names.",
)
@click.option(
    "--kubernetes-version",
    "kubernetes_version",
    callback=_check_version,
    metavar="X.Y",
    help="Compile as that version's API server does for a new object "
    "(default: the newest environment gen knows).",
)
@click.option("--json", "as_json", is_flag=True, help='Print {"compiled", "result", "error"}.')
@handle_errors
def eval_command(
    expression: str,
    device_file: Path | None,
    driver: str,
    kubernetes_version: int | None,
    as_json: bool,
) -> int:
    """Compile EXPR as Kubernetes does; with --device, evaluate it on that device.

    Exit 0 when it compiles (and evaluates to true or false); 1 on a compile or run-time error.
    """
    device = _read_device(device_file, driver) if device_file is not None else None
    try:
        compile_selector(expression, kubernetes_version)
    except CELCompileError as err:
        return _report(False, None, err.message, None, as_json)
    if device is None:
        return _report(True, None, None, None, as_json)
    outcome = evaluate(expression, device, kubernetes_version)
    hint = None if outcome.matched else explain_miss(expression, device)
    return _report(True, None if outcome.error else outcome.matched, outcome.error, hint, as_json)
