"""Draw a checked MIG layout as SVG: the GPU's placement grid with each instance as a block.

The columns are the GPU's placement units (memory slices on 8- and 4-unit GPUs); a block
starts at its placement and spans its size, as in the MIG User Guide's diagrams. Output is
deterministic: fixed geometry, colours chosen by the profile's row in the GPU's table.
"""

from __future__ import annotations

from gen.fleet.generated import GENERATED_COMMENT
from gen.nvidia.mig import LayoutCheck

__all__ = ["layout_svg"]

# Light ColorBrewer "Paired"/"Set3" tints: dark text stays readable on every one of them.
_PALETTE = ("#a6cee3", "#fdbf6f", "#b2df8a", "#fb9a99", "#cab2d6", "#ffff99", "#8dd3c7", "#d9d9d9")
_GRID_WIDTH = 720
_MARGIN = 24
_BLOCK_HEIGHT = 96
_FONT = "font-family='Helvetica, Arial, sans-serif'"


def _escape(text: str) -> str:
    """XML character data: ``&``, ``<`` and ``>`` escaped (what ``xml.sax.saxutils.escape``
    does, without importing it: it brings in ``urllib.request``, ~50 ms per process)."""
    return text.replace("&", "&amp;").replace(">", "&gt;").replace("<", "&lt;")


def _text(x: float, y: float, body: str, *, size: int = 13, extra: str = "") -> str:
    return f"<text x='{x:g}' y='{y:g}' font-size='{size}' {_FONT}{extra}>{_escape(body)}</text>"


def layout_svg(check: LayoutCheck, title: str | None = None) -> str:
    """An SVG picture of ``check``: grid, instances at their placements, errors if invalid."""
    gpu = check.gpu
    units = max(gpu.mig_units, 1)
    cell = _GRID_WIDTH // units
    width = units * cell + 2 * _MARGIN
    grid_top = 92
    rows: list[str] = []

    heading = title or f"MIG layout on {gpu.name}"
    rows.append(_text(_MARGIN, 30, heading, size=18, extra=" font-weight='bold'"))
    used_compute = sum(
        p.compute_slices for pl in check.placements if (p := gpu.mig_profile(pl.profile))
    )
    used_units = sum(pl.size for pl in check.placements)
    status = "valid" if check.valid else "INVALID"
    summary = (
        f"{gpu.id} · {units}-unit grid · {used_units}/{units} units · "
        f"{used_compute}/{gpu.mig_compute_slices} compute slices · {status}"
    )
    colour = "#1a1a1a" if check.valid else "#b00020"
    rows.append(_text(_MARGIN, 52, summary, extra=f" fill='{colour}'"))
    rows.append(
        _text(
            _MARGIN,
            grid_top - 22,
            "placement unit (memory slice)",
            size=11,
            extra=" fill='#555555'",
        )
    )

    for unit in range(units):
        x = _MARGIN + unit * cell
        rows.append(
            f"<rect x='{x}' y='{grid_top}' width='{cell}' height='{_BLOCK_HEIGHT}' "
            "fill='#f2f2f2' stroke='#bbbbbb' stroke-dasharray='4 3'/>"
        )
        rows.append(
            _text(
                x + cell / 2,
                grid_top - 6,
                str(unit),
                size=11,
                extra=" text-anchor='middle' fill='#555555'",
            )
        )

    occupied = {u for pl in check.placements for u in range(pl.start, pl.start + pl.size)}
    free_y = grid_top + _BLOCK_HEIGHT / 2 + 4
    rows.extend(
        _text(
            _MARGIN + unit * cell + cell / 2,
            free_y,
            "free",
            size=11,
            extra=" text-anchor='middle' fill='#888888'",
        )
        for unit in sorted(set(range(units)) - occupied)
    )

    table_row = {p.name: i for i, p in enumerate(gpu.mig_profiles)}
    for placement in check.placements:
        x = _MARGIN + placement.start * cell
        w = placement.size * cell
        fill = _PALETTE[table_row.get(placement.profile, 0) % len(_PALETTE)]
        profile = gpu.mig_profile(placement.profile)
        detail = f"{profile.compute_slices}g · {profile.memory_mib} MiB" if profile else ""
        span = f"units {placement.start}–{placement.start + placement.size - 1}"
        cx = x + w / 2
        rows.append(
            f"<rect x='{x + 2}' y='{grid_top + 2}' width='{w - 4}' height='{_BLOCK_HEIGHT - 4}' "
            f"rx='6' fill='{fill}' stroke='#1a1a1a' stroke-width='1.5'/>"
        )
        size = 14 if w >= 120 else 11
        mid = " text-anchor='middle'"
        rows.append(
            _text(
                cx, grid_top + 38, placement.profile, size=size, extra=mid + " font-weight='bold'"
            )
        )
        rows.append(_text(cx, grid_top + 58, span, size=11, extra=mid))
        if detail and w >= 120:
            rows.append(_text(cx, grid_top + 76, detail, size=11, extra=mid))

    y = grid_top + _BLOCK_HEIGHT + 28
    for message in (*check.errors, *check.warnings):
        is_error = message in check.errors
        prefix = "error: " if is_error else "warning: "
        fill = "#b00020" if is_error else "#8a5a00"
        for line in _wrap(prefix + message, max(40, (width - 2 * _MARGIN) // 7)):
            rows.append(_text(_MARGIN, y, line, size=12, extra=f" fill='{fill}'"))
            y += 17
    height = y + 8

    return (
        "<?xml version='1.0' encoding='UTF-8'?>\n"
        f"{GENERATED_COMMENT}\n"
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}'>\n"
        f"<rect width='{width}' height='{height}' fill='#ffffff'/>\n"
        + "\n".join(rows)
        + "\n</svg>\n"
    )


def _wrap(text: str, limit: int) -> list[str]:
    lines: list[str] = []
    current = ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > limit:
            lines.append(current)
            current = "    " + word
        else:
            current = f"{current} {word}" if current else word
    if current:
        lines.append(current)
    return lines
