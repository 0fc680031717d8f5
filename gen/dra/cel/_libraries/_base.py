"""What every library module shares: the error an implementation raises, the record of one
overload, the CEL types the declarations use, and the small readers of runtime values."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from cel_expr_python import cel

__all__ = [
    "BOOL",
    "COMPARABLE",
    "DBL",
    "DYN",
    "INT",
    "LIST_DYN",
    "STR",
    "Declarations",
    "LibraryError",
    "Overload",
    "as_list",
    "carried",
]

STR, INT, BOOL, DBL, DYN = (
    cel.Type.STRING,
    cel.Type.INT,
    cel.Type.BOOL,
    cel.Type.DOUBLE,
    cel.Type.DYN,
)
LIST_DYN = cel.Type.List(DYN)
COMPARABLE = {
    "int": INT, "uint": cel.Type.UINT, "double": DBL, "bool": BOOL,
    "duration": cel.Type.DURATION, "timestamp": cel.Type.TIMESTAMP, "string": STR,
    "bytes": cel.Type.BYTES,
}
"""The element types of the lists Kubernetes' list library orders (``isSorted``, ``min``...)."""


class LibraryError(ValueError):
    """Raised inside an implementation; cel-expr-python turns it into a CEL error value."""


class Overload(NamedTuple):
    """One overload of a library function: what the checker declares and what runs.

    The runtime environment is untyped, so it keeps one implementation per arity and
    receiver kind: overloads of one function with the same ``len(params)`` and ``member``
    must share ``impl`` (the environments refuse them otherwise).
    """

    id: str
    """The checker's overload id (Kubernetes' id where it has one)."""
    returns: Any
    """The result type (a ``cel.Type``)."""
    params: list[Any]
    """The parameter types, the receiver first for a member overload."""
    member: bool
    """Called as ``x.f(...)`` rather than ``f(x, ...)``."""
    impl: Callable[..., Any]
    """The Python implementation on runtime values."""


Declarations = Mapping[str, list[Overload]]
"""A library's functions: name → its overloads."""


def as_list(value: object) -> list[Any]:
    if not isinstance(value, list):
        raise LibraryError("no such overload")
    return value


def carried(value: object, key: str) -> str | None:
    """The text a one-entry carrier map holds under ``key``."""
    if type(value) is dict and len(value) == 1 and isinstance(value.get(key), str):
        return str(value[key])
    return None
