"""Equality on runtime CEL values: CEL's own heterogeneous equality, and Kubernetes' ``Equal``
for ``==``, ``!=`` and ``in`` where an operand may be a version or a quantity."""

from __future__ import annotations

from gen.dra.cel._libraries._base import LibraryError, as_list
from gen.dra.cel._libraries._carriers import quantity_value, semver_value

__all__ = [
    "KUBERNETES_EQUALS",
    "KUBERNETES_IN",
    "KUBERNETES_NOT_EQUALS",
    "cel_equal",
    "kubernetes_equal",
    "kubernetes_in",
    "kubernetes_not_equal",
]

# kubernetes/apiserver pkg/cel/library/lists.go and regex.go @ v0.36.0; google/cel-go
# ext/sets.go @ v0.26.0.


def cel_equal(a: object, b: object) -> bool:
    """CEL's heterogeneous equality on runtime values (bool is not a number, 1 == 1.0)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(cel_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        left, right = quantity_value(a), quantity_value(b)
        if left is not None or right is not None:
            return left == right  # a quantity carrier also holds its storage
        return a.keys() == b.keys() and all(cel_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


KUBERNETES_EQUALS = "gen.kubernetes.equals"
KUBERNETES_NOT_EQUALS = "gen.kubernetes.not_equals"
KUBERNETES_IN = "gen.kubernetes.in"
"""The runtime functions gen runs ``==``, ``!=`` and ``in`` as where an operand may be a
version or quantity (gen.dra.cel._engine): :func:`kubernetes_equal`, its negation and list
membership with Kubernetes' ``Equal``."""


def kubernetes_equal(left: object, right: object) -> bool:
    """cel-go's ``types.Equal`` with Kubernetes' ``Semver`` / ``Quantity`` values.

    ``Semver.Equal`` and ``Quantity.Equal`` answer "no such overload" for any other type
    (kubernetes staging/src/k8s.io/apiserver/pkg/cel/semver.go and quantity.go @ v1.36.0);
    ``null`` on either side is compared first (cel-go common/types/util.go ``Equal``); a
    list or map element whose comparison is an error counts as equal (cel-go
    common/types/list.go and map.go ``Equal`` stop only at ``False``) @ v0.26.0.
    """
    if left is None or right is None:
        return left is None and right is None
    amount, version = quantity_value(left), semver_value(left)
    if amount is not None or version is not None:
        other_amount, other_version = quantity_value(right), semver_value(right)
        if amount is not None and other_amount is not None:
            return amount == other_amount
        if version is not None and other_version is not None:
            return version.compare(other_version) == 0
        raise LibraryError("no such overload")
    if isinstance(left, list):
        if not isinstance(right, list) or len(left) != len(right):
            return False
        return all(_equal_or_error(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, dict):
        if not isinstance(right, dict) or len(left) != len(right):
            return False
        return all(k in right and _equal_or_error(v, right[k]) for k, v in left.items())
    if quantity_value(right) is not None or semver_value(right) is not None:
        return False
    return cel_equal(left, right)


def kubernetes_not_equal(left: object, right: object) -> bool:
    # cel-go evalNe @ v0.26.0: types.Bool(types.Equal(lhs, rhs) != types.True).
    try:
        return not kubernetes_equal(left, right)
    except LibraryError:
        return True


def kubernetes_in(value: object, items: object) -> bool:
    # cel-go baseList.Contains @ v0.26.0: true at the first element whose Equal is true.
    if isinstance(items, dict):
        return any(not kubernetes_not_equal(value, key) for key in items)
    return any(not kubernetes_not_equal(value, item) for item in as_list(items))


def _equal_or_error(left: object, right: object) -> bool:
    """An element comparison: an error is not ``False``, so it does not stop the walk."""
    try:
        return kubernetes_equal(left, right)
    except LibraryError:
        return True
