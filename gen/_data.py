"""gen's own data files (``gen/data/*.yaml``), read as packaged and parsed with PyYAML's C
parser where PyYAML has it: it reads each of them as the pure-Python safe loader does
(``tests/test_data_files.py``), several times faster.

PyYAML is imported on first use: the no-op render path imports modules that read data
files without reading any."""

from __future__ import annotations

import importlib.resources
from typing import Any

__all__ = ["data_text", "load_data", "safe_load"]


def safe_load(text: str) -> Any:
    """``yaml.safe_load(text)``, with the C parser where PyYAML has it."""
    import yaml

    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def data_text(name: str) -> str:
    """The text of the data file ``gen/data/<name>``."""
    return importlib.resources.files("gen").joinpath("data", name).read_text(encoding="utf-8")


def load_data(name: str) -> Any:
    """The data file ``gen/data/<name>``, parsed."""
    return safe_load(data_text(name))
