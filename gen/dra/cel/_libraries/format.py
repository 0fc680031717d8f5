"""Kubernetes' format library (k8s.io/apiserver ``pkg/cel/library/format.go``@v0.36.0):
``format.<name>()``, ``format.named`` and ``validate``."""

from __future__ import annotations

from collections.abc import Callable

from cel_expr_python import cel

from gen.dra.cel._libraries._base import STR, Declarations, LibraryError, Overload, carried
from gen.k8s.formats import FORMATS
from gen.k8s.formats import validate as validate_format

__all__ = ["DECLARATIONS", "OPTIONAL_RESULTS"]

FORMAT_KEY = "kubernetes.NamedFormat"
_FORMAT = cel.Type.AbstractType(FORMAT_KEY)
OPTIONAL_RESULTS = {"validate": "errors", "format.named": "format"}
"""The entry under which gen's ``validate`` / ``format.named`` return what Kubernetes wraps
in an optional; the engine reads it with an optional index (``[?"errors"]``)."""


def _format_of(value: object) -> str:
    name = carried(value, FORMAT_KEY)
    if name is None or name not in FORMATS:
        raise LibraryError("no such overload")
    return name


def _format_validate(fmt: object, value: object) -> dict[str, list[str]]:
    if not isinstance(value, str):
        raise LibraryError("no such overload")
    errors = validate_format(_format_of(fmt), value)
    return {OPTIONAL_RESULTS["validate"]: errors} if errors else {}


def _format_named(name: object) -> dict[str, dict[str, str]]:
    if not isinstance(name, str):
        raise LibraryError("no such overload")
    return {OPTIONAL_RESULTS["format.named"]: {FORMAT_KEY: name}} if name in FORMATS else {}


def _constant_format(name: str) -> Callable[[], dict[str, str]]:
    return lambda: {FORMAT_KEY: name}


DECLARATIONS: Declarations = {
    "validate": [Overload("format-validate", cel.Type.Map(STR, cel.Type.List(STR)),
                          [_FORMAT, STR], True, _format_validate)],
    "format.named": [Overload("format-named", cel.Type.Map(STR, _FORMAT), [STR], False,
                              _format_named)],
    **{
        f"format.{name}": [Overload(f"format.{name}", _FORMAT, [], False, _constant_format(name))]
        for name in FORMATS
    },
}
"""The format library's functions."""
