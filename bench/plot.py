"""A small log-log line chart as SVG, so the benchmark report needs no plotting library."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from html import escape

WIDTH, HEIGHT = 760, 460
LEFT, RIGHT, TOP, BOTTOM = 70, 230, 40, 60
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#111111",
           "#7f7f7f", "#17becf")


def _decades(low: float, high: float) -> list[float]:
    return [10.0 ** e for e in range(math.floor(math.log10(low)),
                                     math.ceil(math.log10(high)) + 1)]


def _label(value: float) -> str:
    if value >= 1:
        return f"{value:,.0f}"
    return f"{value:g}"


def svg_chart(series: Mapping[str, Sequence[tuple[float, float]]], *, title: str,
              x_label: str, y_label: str) -> str:
    """Lines with markers on log-log axes; a legend on the right."""
    xs = [x for points in series.values() for x, _ in points]
    ys = [y for points in series.values() for _, y in points if y > 0]
    x_ticks, y_ticks = _decades(min(xs), max(xs)), _decades(min(ys), max(ys))
    lx0, lx1 = math.log10(x_ticks[0]), math.log10(x_ticks[-1])
    ly0, ly1 = math.log10(y_ticks[0]), math.log10(y_ticks[-1])
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def px(x: float) -> float:
        return LEFT + (math.log10(x) - lx0) / (lx1 - lx0) * plot_w

    def py(y: float) -> float:
        return TOP + plot_h - (math.log10(y) - ly0) / (ly1 - ly0) * plot_h

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
        f'<text x="{LEFT}" y="22" font-size="15">{escape(title)}</text>',
    ]
    for tick in x_ticks:
        x = px(tick)
        out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + plot_h}" '
                   'stroke="#e0e0e0"/>')
        out.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">'
                   f'{_label(tick)}</text>')
    for tick in y_ticks:
        y = py(tick)
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" '
                   'stroke="#e0e0e0"/>')
        out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                   f'{_label(tick)}</text>')
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" '
               'stroke="#444"/>')
    out.append(f'<text x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 18}" text-anchor="middle">'
               f'{escape(x_label)} (log)</text>')
    out.append(f'<text transform="translate(18 {TOP + plot_h / 2:.1f}) rotate(-90)" '
               f'text-anchor="middle">{escape(y_label)} (log)</text>')
    for i, (name, points) in enumerate(series.items()):
        colour = COLOURS[i % len(COLOURS)]
        path = " ".join(f"{px(x):.1f},{py(y):.1f}" for x, y in points if y > 0)
        dash = ' stroke-dasharray="6 3"' if "jobs 1" in name else ""
        out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                   f'stroke-width="2"{dash}/>')
        out.extend(f'<circle cx="{px(x):.1f}" cy="{py(y):.1f}" r="3" fill="{colour}"/>'
                   for x, y in points if y > 0)
        ly = TOP + 10 + i * 20
        out.append(f'<line x1="{WIDTH - RIGHT + 16}" y1="{ly}" x2="{WIDTH - RIGHT + 40}" '
                   f'y2="{ly}" stroke="{colour}" stroke-width="2"{dash}/>')
        out.append(f'<text x="{WIDTH - RIGHT + 46}" y="{ly + 4}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
