"""Kubernetes ``resource.Quantity``: parse to an exact :class:`~decimal.Decimal`, format, compare.

The grammar is the one of ``k8s.io/apimachinery/pkg/api/resource``::

    <quantity>        ::= <signedNumber><suffix>
    <signedNumber>    ::= [+-] <number>
    <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>          ::= <binarySI> | <decimalSI> | <decimalExponent>
    <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
    <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
    <decimalExponent> ::= e <signedNumber> | E <signedNumber>   (an integer exponent)

Parsing is exact: ``parse_quantity("81559Mi") == Decimal(81559 * 2**20)``. Kubernetes itself
rounds a parsed value *up* (away from zero) to nano precision; :func:`format_quantity` does the
same when it renders, so the canonical text matches what the apiserver writes back.

Canonical form (``Quantity.String()`` in Kubernetes): the suffix family of the input is kept;
decimal values use the largest exponent that is a multiple of 3 and keeps the mantissa an
integer (``1500m`` → ``1500m``, ``1000m`` → ``1``); binary values use the largest power of 1024
that divides the value, but only for integers of magnitude ≥ 1024 (others fall back to decimal
SI, as Kubernetes does).
"""

from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass
from decimal import ROUND_UP, Decimal, Inexact, localcontext

from gen.caches import memoize
from gen.errors import QuantityError

__all__ = [
    "Quantity",
    "QuantityFormat",
    "compare_quantities",
    "format_quantity",
    "parse_quantity",
]


class QuantityFormat(enum.StrEnum):
    """The suffix family a quantity was written in; it decides the canonical form."""

    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


_QUANTITY_RE = re.compile(
    r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]?|[eE][+-]?[0-9]+)"
)
_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exp: suffix for suffix, exp in _DECIMAL.items()}
_BINARY_SUFFIX = {bits: suffix for suffix, bits in _BINARY.items()}
_NANO = Decimal("1e-9")
# Digits of working precision; a mantissa this long is rejected rather than rounded.
_PRECISION = 200
_MAX_EXPONENT = 1000
_REGEX_HINT = "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def _split(text: str) -> tuple[Decimal, QuantityFormat]:
    match = _QUANTITY_RE.fullmatch(text)
    if match is None:
        raise QuantityError(f"quantities must match the regular expression {_REGEX_HINT}: {text!r}")
    sign = -1 if match["sign"] == "-" else 1
    number = match["number"]
    suffix = match["suffix"]
    with localcontext() as ctx:
        ctx.prec = _PRECISION
        ctx.traps[Inexact] = True
        try:
            mantissa = Decimal(number)
            if suffix in _BINARY:
                value = mantissa * (Decimal(2) ** _BINARY[suffix])
                fmt = QuantityFormat.BINARY_SI
            elif suffix in _DECIMAL:
                value = mantissa.scaleb(_DECIMAL[suffix])
                fmt = QuantityFormat.DECIMAL_SI
            else:
                exponent = int(suffix[1:])
                if abs(exponent) > _MAX_EXPONENT:
                    raise QuantityError(f"quantity exponent out of range: {text!r}")
                value = mantissa.scaleb(exponent)
                fmt = QuantityFormat.DECIMAL_EXPONENT
            value = value * sign
        except Inexact as err:
            raise QuantityError(f"quantity has too many digits: {text!r}") from err
    return value, fmt


@memoize(maxsize=4096)
def parse_quantity(text: str) -> Decimal:
    """The exact value of a Kubernetes quantity string; raises :class:`QuantityError`."""
    return _split(text)[0]


def _canonical_zero(value: Decimal) -> Decimal:
    return Decimal(0) if value == 0 else value


def _decimal_parts(value: Decimal) -> tuple[int, int]:
    """Integer mantissa and an exponent that is a multiple of 3, the mantissa as small as exact."""
    sign, digits, exp = value.normalize().as_tuple()
    assert isinstance(exp, int)
    mantissa = int("".join(map(str, digits)) or "0")
    # Bring the exponent down to a multiple of 3, growing the mantissa.
    shift = exp % 3
    mantissa *= 10**shift
    exp -= shift
    return (-mantissa if sign else mantissa), exp


def _format_decimal(value: Decimal, *, exponent_form: bool) -> str:
    mantissa, exp = _decimal_parts(value)
    if mantissa == 0:
        return "0"
    if exponent_form:
        return f"{mantissa}" if exp == 0 else f"{mantissa}e{exp}"
    if exp > 18:
        # Larger than the E suffix: Kubernetes keeps the E suffix with a bigger mantissa.
        mantissa *= 10 ** (exp - 18)
        exp = 18
    return f"{mantissa}{_DECIMAL_SUFFIX[exp]}"


def format_quantity(value: Decimal, fmt: QuantityFormat = QuantityFormat.DECIMAL_SI) -> str:
    """The canonical Kubernetes text of ``value`` in the suffix family ``fmt``.

    Values finer than a nano unit are rounded up (away from zero) to the next nano, as the
    apiserver does.
    """
    with localcontext() as ctx:
        ctx.prec = _PRECISION
        if value != value.quantize(_NANO, rounding=ROUND_UP):
            value = value.quantize(_NANO, rounding=ROUND_UP)
        value = _canonical_zero(value)
        if (
            fmt is QuantityFormat.BINARY_SI
            and value == value.to_integral_value()
            and abs(value) >= 1024
        ):
            number = int(value)
            bits = 0
            while bits < 60 and number % (1 << (bits + 10)) == 0:
                bits += 10
            if bits:
                return f"{number >> bits}{_BINARY_SUFFIX[bits]}"
            return str(number)
        return _format_decimal(value, exponent_form=fmt is QuantityFormat.DECIMAL_EXPONENT)


def compare_quantities(left: Decimal, right: Decimal) -> int:
    """-1, 0 or 1 as ``left`` is less than, equal to or greater than ``right``."""
    return (left > right) - (left < right)


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class Quantity:
    """A parsed quantity: its exact value and the suffix family it was written in.

    Equality, hashing and ordering use the value only (``1Gi == 1024Mi``), as
    ``Quantity.Cmp``/``Equal`` do in Kubernetes; ``str()`` is the canonical text.
    """

    value: Decimal
    format: QuantityFormat = QuantityFormat.DECIMAL_SI

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """Parse ``text``; raises :class:`QuantityError`."""
        value, fmt = _split(text)
        return cls(value, fmt)

    def __str__(self) -> str:
        return format_quantity(self.value, self.format)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Quantity):
            return NotImplemented
        return self.value == other.value

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __hash__(self) -> int:
        return hash(self.value)
