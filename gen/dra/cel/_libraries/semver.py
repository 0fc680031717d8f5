"""Kubernetes' semver library (k8s.io/apiserver ``pkg/cel/library/semverlib.go``@v0.36.0):
``semver``, ``isSemver`` and the ``Semver`` members."""

from __future__ import annotations

from collections.abc import Callable

from gen.dra.cel._libraries._base import BOOL, INT, STR, Declarations, LibraryError, Overload
from gen.dra.cel._libraries._carriers import (
    SEMVER,
    compare,
    greater,
    less,
    semver_carrier,
    semver_value,
)
from gen.k8s.semver import Version, version_or_reason

__all__ = ["DECLARATIONS"]

_INT64 = (-(1 << 63), (1 << 63) - 1)


def _semver(text: object, normalize: object = False) -> dict[str, str]:
    # Kubernetes reports blang's own wording: "No Major.Minor.Patch elements found".
    result = version_or_reason(str(text), normalize=bool(normalize))
    if isinstance(result, str):
        raise LibraryError(result)
    return semver_carrier(result)


def _is_semver(text: object, normalize: object = False) -> bool:
    return isinstance(version_or_reason(str(text), normalize=bool(normalize)), Version)


def _version_part(index: int) -> Callable[[object], int]:
    def part(value: object) -> int:
        version = semver_value(value)
        if version is None:
            raise LibraryError("no such overload")
        number = (version.major, version.minor, version.patch)[index]
        # Kubernetes returns types.Int(v.Major) of a uint64: Go's conversion wraps past 2^63-1.
        return number - (1 << 64) if number > _INT64[1] else number

    return part


DECLARATIONS: Declarations = {
    "semver": [
        Overload("semver_string", SEMVER, [STR], False, _semver),
        Overload("semver_string_bool", SEMVER, [STR, BOOL], False, _semver),
    ],
    "isSemver": [
        Overload("is_semver_string", BOOL, [STR], False, _is_semver),
        Overload("is_semver_string_bool", BOOL, [STR, BOOL], False, _is_semver),
    ],
    "compareTo": [Overload("semver_compareTo", INT, [SEMVER, SEMVER], True, compare)],
    "isGreaterThan": [Overload("semver_isGreaterThan", BOOL, [SEMVER, SEMVER], True, greater)],
    "isLessThan": [Overload("semver_isLessThan", BOOL, [SEMVER, SEMVER], True, less)],
    "major": [Overload("semver_major", INT, [SEMVER], True, _version_part(0))],
    "minor": [Overload("semver_minor", INT, [SEMVER], True, _version_part(1))],
    "patch": [Overload("semver_patch", INT, [SEMVER], True, _version_part(2))],
}
"""The semver library's functions."""
