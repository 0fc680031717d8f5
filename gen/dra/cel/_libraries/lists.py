"""Kubernetes' list library (k8s.io/apiserver ``pkg/cel/library/lists.go``@v0.36.0):
``includes``, ``isSorted``, ``sum``, ``min``, ``max``, ``indexOf`` and ``lastIndexOf``."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import datetime, timedelta

from cel_expr_python import cel

from gen.dra.cel._libraries._base import (
    BOOL,
    COMPARABLE,
    DYN,
    INT,
    LIST_DYN,
    Declarations,
    LibraryError,
    Overload,
    as_list,
)
from gen.dra.cel._libraries.equality import cel_equal

__all__ = [
    "DECLARATIONS",
    "SEARCH_DECLARATIONS",
    "TIME_LIST_FUNCTIONS",
    "duration_sum",
    "time_extreme",
]


def _includes(target: object, value: object) -> bool:
    """Kubernetes' ``includes`` (lists library version 1, k8s.io/apiserver
    ``pkg/cel/library/lists.go``@v0.37.2): a list has an element equal to ``value``, any other
    value is equal to it."""
    if isinstance(target, list):
        return any(cel_equal(x, value) for x in target)
    return cel_equal(target, value)


def _is_sorted(value: object) -> bool:
    items = as_list(value)
    try:
        return all(not b < a for a, b in itertools.pairwise(items))
    except TypeError:
        raise LibraryError("no such overload") from None


def _returnable(name: str, value: object) -> object:
    if isinstance(value, timedelta | datetime):
        # Reached only through dyn (a list whose element type the checker does not know);
        # a typed list of durations runs as the functions of TIME_LIST_FUNCTIONS.
        raise LibraryError(
            f"gen cannot evaluate {name}() of durations or timestamps in a list typed dyn "
            "(cel-expr-python cannot return one from a function declared dyn); see "
            "docs/cel.md, Deviations"
        )
    return value


TIME_LIST_FUNCTIONS = {
    name: {"duration": f"gen_{name}_duration", "timestamp": f"gen_{name}_timestamp"}
    for name in ("min", "max", "sum")
}
"""Runtime names of ``min`` / ``max`` / ``sum`` over a list of durations or timestamps."""


def time_extreme(name: str) -> Callable[[object], object]:
    def pick(value: object) -> object:
        items = as_list(value)
        if not items:
            raise LibraryError(f"{name} called on empty list")
        return min(items) if name == "min" else max(items)

    return pick


def duration_sum(value: object) -> object:
    return sum(as_list(value), timedelta())


def _extreme(name: str) -> Callable[[object], object]:
    def pick(value: object) -> object:
        items = as_list(value)
        if not items:
            raise LibraryError(f"{name} called on empty list")
        try:
            return _returnable(name, min(items) if name == "min" else max(items))
        except TypeError:
            raise LibraryError("no such overload") from None

    return pick


def _sum(value: object) -> object:
    items = as_list(value)
    if not items:
        return 0
    total = items[0]
    try:
        for item in items[1:]:
            total = total + item
    except TypeError:
        raise LibraryError("no such overload") from None
    return _returnable("sum", total)


def _index_of(items: object, value: object) -> int:
    """Kubernetes' ``list.indexOf``: the first index of an element equal to ``value``, or -1."""
    return next((i for i, x in enumerate(as_list(items)) if cel_equal(x, value)), -1)


def _last_index_of(items: object, value: object) -> int:
    found = as_list(items)
    return next(
        (i for i in range(len(found) - 1, -1, -1) if cel_equal(found[i], value)), -1
    )


_SUMMABLE = ("int", "uint", "double", "duration")
_MIN, _MAX = _extreme("min"), _extreme("max")

DECLARATIONS: Declarations = {
    "includes": [Overload("list_includes_dyn_dyn", BOOL, [DYN, DYN], True, _includes)],
    "isSorted": [
        Overload(f"list_{n}_is_sorted_bool", BOOL, [cel.Type.List(t)], True, _is_sorted)
        for n, t in COMPARABLE.items()
    ],
    "sum": [
        Overload(f"list_{n}_sum_{n}", COMPARABLE[n], [cel.Type.List(COMPARABLE[n])], True, _sum)
        for n in _SUMMABLE
    ],
    "min": [
        Overload(f"list_{n}_min_{n}", t, [cel.Type.List(t)], True, _MIN)
        for n, t in COMPARABLE.items()
    ],
    "max": [
        Overload(f"list_{n}_max_{n}", t, [cel.Type.List(t)], True, _MAX)
        for n, t in COMPARABLE.items()
    ],
}
"""The list library's functions but the two searches."""

_SEARCHABLE = {**COMPARABLE, "list": LIST_DYN, "map": cel.Type.Map(DYN, DYN)}
SEARCH_DECLARATIONS: Declarations = {
    name: [
        Overload(f"list_{n}_{oid}_int", INT, [cel.Type.List(t), t], True, impl)
        for n, t in _SEARCHABLE.items()
    ]
    for name, oid, impl in (
        ("indexOf", "index_of", _index_of),
        ("lastIndexOf", "last_index_of", _last_index_of),
    )
}
"""``indexOf`` / ``lastIndexOf`` on ``list(A), A``: the strings extension declares them on
strings, and cel-expr-python merges the two only when these come in an extension registered
after the strings extension."""
