"""The CEL libraries, one module each: same-arity overloads of a function share one
implementation (the untyped runtime keeps one per arity and receiver), and the environments
refuse a library that breaks that."""

from __future__ import annotations

import pytest
from cel_expr_python import cel

from gen.dra.cel._libraries import lists
from gen.dra.cel._libraries._base import BOOL, INT, Overload
from gen.dra.cel._library import LIBRARIES, runtime_implementations


def test_same_arity_overloads_share_one_implementation() -> None:
    """Every function of every library, compareTo across quantity and semver included."""
    merged: dict[str, list[Overload]] = {}
    for library in (*LIBRARIES, lists.SEARCH_DECLARATIONS):
        for name, overloads in library.items():
            merged.setdefault(name, []).extend(overloads)
    for name, overloads in merged.items():
        implementations = runtime_implementations(name, overloads)
        for overload in overloads:
            assert implementations[len(overload.params), overload.member] is overload.impl


def test_an_overload_with_its_own_implementation_is_refused() -> None:
    def first(a: object, b: object) -> bool:
        return a == b

    def second(a: object, b: object) -> bool:
        return a != b

    overloads = [Overload("f_int", BOOL, [INT, INT], True, first),
                 Overload("f_uint", BOOL, [cel.Type.UINT, cel.Type.UINT], True, second)]
    with pytest.raises(ValueError, match="f_uint has an implementation of its own"):
        runtime_implementations("f", overloads)
    assert runtime_implementations("f", [overloads[0], overloads[0]._replace(id="g")]) == {
        (2, True): first}
