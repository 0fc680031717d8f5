"""MIG layout pictures."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from gen.nvidia.gpus import gpu_catalog
from gen.nvidia.mig import check_layout
from gen.nvidia.mig_svg import layout_svg

SVG = "{http://www.w3.org/2000/svg}"


def _texts(svg: str) -> list[str]:
    return [t.text or "" for t in ET.fromstring(svg.split("\n", 1)[1]).iter(f"{SVG}text")]


def test_blocks_sit_at_their_placements() -> None:
    """Each instance is a labelled block whose x and width follow its start and size."""
    check = check_layout(gpu_catalog().lookup("h100-sxm5-80gb"), {"3g.40gb": 1, "1g.10gb": 2})
    svg = layout_svg(check)
    root = ET.fromstring(svg.split("\n", 1)[1])
    blocks = [r for r in root.iter(f"{SVG}rect") if r.get("rx")]
    assert len(blocks) == 3
    cell = 720 // 8
    starts = sorted((float(b.get("x", 0)) - 2 - 24) / cell for b in blocks)
    assert starts == [p.start for p in check.placements]
    texts = _texts(svg)
    assert texts.count("1g.10gb") == 2 and "3g.40gb" in texts
    assert texts.count("free") == 8 - 6


def test_deterministic() -> None:
    """The same check draws the same bytes."""
    check = check_layout(gpu_catalog().lookup("rtx-pro-6000-server"), {"2g.48gb": 2})
    assert layout_svg(check) == layout_svg(check)


def test_invalid_layout_shows_errors() -> None:
    """An invalid layout draws an empty grid and its errors."""
    check = check_layout(gpu_catalog().lookup("a30"), {"4g.24gb": 1, "1g.6gb": 1})
    texts = _texts(layout_svg(check, title="A30 <node-1>"))
    assert texts[0] == "A30 <node-1>"
    assert any(t.startswith("error: ") for t in texts)
    assert any("INVALID" in t for t in texts)
