"""gen's own data files read as the catalogs read them (:func:`gen._data.safe_load`, PyYAML's
C parser) give what its pure-Python safe loader gives."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gen._data import data_text, safe_load

DATA = Path(__file__).resolve().parent.parent / "gen" / "data"


@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.yaml")))
def test_the_c_parser_reads_each_data_file_as_the_safe_loader_does(name: str) -> None:
    assert getattr(yaml, "CSafeLoader", None) is not None, "PyYAML without its C extension"
    text = data_text(name)
    assert text == (DATA / name).read_text(encoding="utf-8")
    assert safe_load(text) == yaml.safe_load(text)
