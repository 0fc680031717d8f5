"""gen's Metal working-set rule against public llama.cpp logs (metal_working_set.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gen.apple.chips import lookup_chip, usable_unified_memory_bytes
from gen.errors import CatalogLookupError

CORPUS = Path(__file__).with_name("metal_working_set.yaml")
UNITS = {"MiB": 2**20, "MB": 10**6, "GiB": 2**30}


def _logs() -> list[dict[str, Any]]:
    doc = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))
    assert doc["schema"] == 1
    logs: list[dict[str, Any]] = doc["logs"]
    return logs


LOGS = _logs()


def test_corpus_covers_several_sizes_and_both_fractions() -> None:
    """At least six logs, from 16 GB to 128 GB, with both the 2/3 and the 3/4 side."""
    assert len(LOGS) >= 6
    sizes = {log["memory_gb"] for log in LOGS}
    assert min(sizes) <= 16 and max(sizes) >= 96
    assert any(s <= 32 for s in sizes) and any(s > 32 for s in sizes)
    assert len({log["url"] for log in LOGS}) >= 6


@pytest.mark.parametrize("log", LOGS, ids=lambda log: f"{log['memory_gb']}GB-{log['url']}")
def test_each_log(log: dict[str, Any]) -> None:
    """A default log matches gen's cap to the printed digit; a newer-macOS log is above it."""
    assert log["url"].startswith("https://github.com/")
    logged = log["value"]
    assert logged.replace(".", ",") in log["line"] or logged in log["line"]
    unit = UNITS[log["unit"]]
    ours = usable_unified_memory_bytes(log["memory_gb"])
    try:
        chip = lookup_chip(log["chip"])
    except CatalogLookupError:
        assert log["rule"] == "newer-macos"  # a chip newer than the catalog (M5)
    else:
        assert chip.supports(memory_gb=log["memory_gb"])
    if log["rule"] == "default":
        assert f"{ours / unit:.2f}" == logged
    else:
        assert log["rule"] == "newer-macos"
        assert ours <= float(logged) * unit
