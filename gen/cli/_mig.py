"""``gen mig``: MIG layout tools."""

from __future__ import annotations

import json
from pathlib import Path

import click

from gen.cli._boundary import handle_errors
from gen.errors import CatalogLookupError, LayoutSyntaxError
from gen.nvidia.gpus import gpu_catalog
from gen.nvidia.mig import LayoutCheck, check_layout, parse_layout_args

__all__ = ["mig_command"]


@click.group("mig")
def mig_command() -> None:
    """MIG layout tools (check a layout, draw it)."""


@mig_command.command("check")
@click.option(
    "--gpu", "gpu_name", required=True, help="Catalog id, PCI device id (0x2330) or product name."
)
@click.option(
    "--driver",
    "driver_version",
    default=None,
    help="Node driver version (e.g. 570.124.06) to check driver minimums.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option(
    "--svg",
    "svg_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also draw the layout into this SVG file.",
)
@click.argument("layout", nargs=-1, required=True, metavar="PROFILE=COUNT...")
@handle_errors
def check_command(
    gpu_name: str,
    driver_version: str | None,
    as_json: bool,
    svg_path: Path | None,
    layout: tuple[str, ...],
) -> int:
    """Is this MIG layout physically valid on one GPU, and where does each instance sit?

    Exit 0 when valid, 1 when not (or the GPU is unknown), 2 on bad PROFILE=COUNT syntax.
    """
    try:
        counts = parse_layout_args(layout)
    except LayoutSyntaxError as err:
        raise click.BadParameter(err.message, param_hint="PROFILE=COUNT") from err
    try:
        gpu = gpu_catalog().lookup(gpu_name)
    except CatalogLookupError as err:
        if not as_json:
            raise
        click.echo(
            json.dumps(
                {
                    "gpu": gpu_name,
                    "valid": False,
                    "placements": [],
                    "errors": [err.message],
                    "warnings": [],
                },
                indent=2,
            )
        )
        return 1
    result = check_layout(gpu, counts, driver_version)
    if svg_path is not None:
        from gen.nvidia.mig_svg import layout_svg

        svg_path.write_text(layout_svg(result), encoding="utf-8")
    click.echo(json.dumps(result.to_json(), indent=2) if as_json else _text(result))
    return 0 if result.valid else 1


def _text(result: LayoutCheck) -> str:
    gpu = result.gpu
    lines = [
        f"{gpu.name} ({gpu.id}), {gpu.mig_units}-unit grid: "
        + ("valid" if result.valid else "INVALID")
    ]
    if result.placements:
        width = max(len("PROFILE"), *(len(p.profile) for p in result.placements))
        lines.append(f"  {'PROFILE':<{width}}  START  SIZE")
        lines.extend(
            f"  {p.profile:<{width}}  {p.start:>5}  {p.size:>4}" for p in result.placements
        )
    lines.extend(f"  error: {e}" for e in result.errors)
    lines.extend(f"  warning: {w}" for w in result.warnings)
    return "\n".join(lines)
