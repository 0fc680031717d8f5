"""The run-time half of cel-go's two-variable comprehensions (``ext/comprehensions.go``@v0.26.0):
``cel.@mapInsert``, the accumulator of ``transformMap`` / ``transformMapEntry``; and the
range check of every comprehension whose range the checker types ``dyn``
(:func:`iterable`)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from gen.dra.cel._libraries._base import LibraryError, carried
from gen.dra.cel._libraries._carriers import QUANTITY_KEY, SEMVER_KEY
from gen.dra.cel._libraries.equality import cel_equal

__all__ = ["ITERABLE", "iterable", "map_insert"]

ITERABLE = "gen_iterable"
"""The runtime name of :func:`iterable`, wrapped around a ``dyn`` comprehension range."""

_GO_TYPES: tuple[tuple[type, str], ...] = (
    (bool, "types.Bool"), (int, "types.Int"), (float, "types.Double"), (str, "types.String"),
    (bytes, "types.Bytes"), (bytearray, "types.Bytes"), (type(None), "types.Null"),
    (timedelta, "types.Duration"), (datetime, "types.Timestamp"),
)
"""cel-go's Go type of a scalar value (``%T`` of the ``ref.Val``); a uint reaches gen's
functions as a Python int and is named as an int. A quantity or version is k8s.io/apiserver's
``cel.Quantity`` / ``cel.Semver`` (pkg/cel/quantity.go, semver.go@v0.37.2)."""
_CARRIED = ((QUANTITY_KEY, "cel.Quantity"), (SEMVER_KEY, "cel.Semver"))


def iterable(value: object) -> object:
    """A comprehension's range as cel-go's interpreter takes it: a list or a map, else
    ``got 'types.Int', expected iterable type`` (interpreter/interpretable.go@v0.29.2,
    evalFold)."""
    for key, go_type in _CARRIED:
        if carried(value, key) is not None:
            raise LibraryError(f"got '{go_type}', expected iterable type")
    if isinstance(value, list | dict):
        return value
    name = next((go for kind, go in _GO_TYPES if isinstance(value, kind)), type(value).__name__)
    raise LibraryError(f"got '{name}', expected iterable type")


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
