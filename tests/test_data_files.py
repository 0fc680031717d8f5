"""gen's own data files read with PyYAML's C parser (as the catalogs read them) give what
its pure-Python safe loader gives."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

DATA = Path(__file__).resolve().parent.parent / "gen" / "data"


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.yaml")))
def test_the_c_parser_reads_each_data_file_as_the_safe_loader_does(name: str) -> None:
    text = (DATA / name).read_text(encoding="utf-8")
    loader = getattr(yaml, "CSafeLoader", None)
    assert loader is not None, "PyYAML without its C extension"
    assert yaml.load(text, Loader=loader) == yaml.safe_load(text)
