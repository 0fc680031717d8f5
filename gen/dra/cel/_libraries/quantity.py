"""Kubernetes' quantity library (k8s.io/apiserver ``pkg/cel/library/quantity.go``@v0.36.0):
``quantity``, ``isQuantity`` and the ``Quantity`` members."""

from __future__ import annotations

from decimal import Decimal

from gen.caches import memoize
from gen.dra.cel._libraries._base import BOOL, DBL, INT, STR, Declarations, LibraryError, Overload
from gen.dra.cel._libraries._carriers import (
    QUANTITY,
    compare,
    greater,
    less,
    quantity_carrier,
    quantity_of,
    stored,
)
from gen.errors import QuantityError
from gen.k8s.quantity import (
    Int64Amount,
    add_amounts,
    amount_as_int64,
    int64_amount,
    parse_quantity,
)

__all__ = ["DECLARATIONS"]


@memoize(maxsize=4096)
def _quantity_text(text: str) -> dict[str, str]:
    return quantity_carrier(parse_quantity(text), int64_amount(text))


def _quantity(text: object) -> dict[str, str]:
    try:
        return dict(_quantity_text(str(text)))
    except QuantityError as err:
        # apimachinery's ErrFormatWrong / ErrSuffix, as cel-go reports them: without the
        # input gen's profile errors quote (api/resource/quantity.go@v0.37.2).
        quoted = f": {str(text)!r}"
        message = err.message.removesuffix(quoted)
        raise LibraryError(message) from err


def _is_quantity(text: object) -> bool:
    try:
        parse_quantity(str(text))
    except QuantityError:
        return False
    return True


def _add(left: object, right: object, sign: int = 1) -> dict[str, str]:
    # Quantity.Add / Sub (apimachinery quantity.go @ v0.36.0); an int is
    # resource.NewQuantity(i, DecimalExponent), the int64Amount (i, 0).
    base = quantity_of(left)
    other_amount: Int64Amount | None
    if type(right) is int:
        other, other_amount = Decimal(right), (right, 0)
    else:
        other, other_amount = quantity_of(right), stored(right)
    amount = stored(left)
    if other_amount is not None and sign < 0:
        other_amount = (-other_amount[0], other_amount[1])
    return quantity_carrier(base + sign * other, add_amounts(amount, other_amount))


def _sub(left: object, right: object) -> dict[str, str]:
    return _add(left, right, -1)


def _sign(value: object) -> int:
    q = quantity_of(value)
    return (q > 0) - (q < 0)


def _as_integer(value: object) -> int:
    # Quantity.AsInt64 (apimachinery quantity.go @ v0.36.0) answers from the storage.
    number = amount_as_int64(stored(value))
    if number is None:
        raise LibraryError("cannot convert value to integer")
    return number


def _is_integer(value: object) -> bool:
    return amount_as_int64(stored(value)) is not None


def _as_float(value: object) -> float:
    return float(quantity_of(value))


DECLARATIONS: Declarations = {
    "quantity": [Overload("quantity_string", QUANTITY, [STR], False, _quantity)],
    "isQuantity": [Overload("is_quantity_string", BOOL, [STR], False, _is_quantity)],
    "compareTo": [Overload("quantity_compareTo", INT, [QUANTITY, QUANTITY], True, compare)],
    "isGreaterThan": [
        Overload("quantity_isGreaterThan", BOOL, [QUANTITY, QUANTITY], True, greater)
    ],
    "isLessThan": [Overload("quantity_isLessThan", BOOL, [QUANTITY, QUANTITY], True, less)],
    "add": [
        Overload("quantity_add", QUANTITY, [QUANTITY, QUANTITY], True, _add),
        Overload("quantity_add_int", QUANTITY, [QUANTITY, INT], True, _add),
    ],
    "sub": [
        Overload("quantity_sub", QUANTITY, [QUANTITY, QUANTITY], True, _sub),
        Overload("quantity_sub_int", QUANTITY, [QUANTITY, INT], True, _sub),
    ],
    "asInteger": [Overload("quantity_asInteger", INT, [QUANTITY], True, _as_integer)],
    "asApproximateFloat": [
        Overload("quantity_asApproximateFloat", DBL, [QUANTITY], True, _as_float)
    ],
    # global only, as in Kubernetes
    "sign": [Overload("quantity_sign", INT, [QUANTITY], False, _sign)],
    "isInteger": [Overload("quantity_isInteger", BOOL, [QUANTITY], True, _is_integer)],
}
"""The quantity library's functions (``compareTo`` and the comparisons shared with semver)."""
