"""cel-go's sets extension (google/cel-go ``ext/sets.go``@v0.26.0): ``sets.contains``,
``sets.equivalent`` and ``sets.intersects``."""

from __future__ import annotations

from gen.dra.cel._libraries._base import BOOL, LIST_DYN, Declarations, Overload, as_list
from gen.dra.cel._libraries.equality import cel_equal

__all__ = ["DECLARATIONS"]


def _sets_contains(left: object, right: object) -> bool:
    items = as_list(left)
    return all(any(cel_equal(x, y) for x in items) for y in as_list(right))


def _sets_intersects(left: object, right: object) -> bool:
    items = as_list(left)
    return any(any(cel_equal(x, y) for x in items) for y in as_list(right))


def _sets_equivalent(left: object, right: object) -> bool:
    return _sets_contains(left, right) and _sets_contains(right, left)


DECLARATIONS: Declarations = {
    "sets.contains": [
        Overload("list_sets_contains_list", BOOL, [LIST_DYN, LIST_DYN], False, _sets_contains)
    ],
    "sets.equivalent": [
        Overload("list_sets_equivalent_list", BOOL, [LIST_DYN, LIST_DYN], False,
                 _sets_equivalent),
    ],
    "sets.intersects": [
        Overload("list_sets_intersects_list", BOOL, [LIST_DYN, LIST_DYN], False,
                 _sets_intersects)
    ],
}
"""The sets extension's functions."""
