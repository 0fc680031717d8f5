"""The run-time half of cel-go's two-variable comprehensions (``ext/comprehensions.go``@v0.26.0):
``cel.@mapInsert``, the accumulator of ``transformMap`` / ``transformMapEntry``."""

from __future__ import annotations

from typing import Any

from gen.dra.cel._libraries._base import LibraryError
from gen.dra.cel._libraries.equality import cel_equal

__all__ = ["map_insert"]


def map_insert(
    target: object, key: object, value: object = None, *, pair: bool = False
) -> dict[Any, Any]:
    """``cel.@mapInsert``: the accumulator of ``transformMap`` / ``transformMapEntry``.

    cel-go refuses a key that is already there ("insert failed: key K already exists").
    """
    if not isinstance(target, dict):
        raise LibraryError("no such overload")
    entries = list(key.items()) if pair and isinstance(key, dict) else [(key, value)]
    if pair and not isinstance(key, dict):
        raise LibraryError("no such overload")
    out = dict(target)
    for k, v in entries:
        if any(cel_equal(k, old) for old in out):
            raise LibraryError(f"insert failed: key {_go_value(k)} already exists")
        if k in out:  # a bool key and an int key: distinct in CEL, one key in Python
            raise LibraryError(
                "gen cannot build a map with both a bool and an int key of the same value "
                "(cel-expr-python's map conversion); see docs/cel.md, Deviations"
            )
        out[k] = v
    return out


def _go_value(value: object) -> str:
    """Go's ``%v`` of a CEL key (bool, int, string)."""
    return str(value).lower() if isinstance(value, bool) else str(value)
