"""Kubernetes ``resource.Quantity``: parse to an exact :class:`~decimal.Decimal`, format, compare.

The grammar is the one of ``k8s.io/apimachinery/pkg/api/resource``::

    <quantity>        ::= <signedNumber><suffix>
    <signedNumber>    ::= [+-] <number>
    <number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
    <suffix>          ::= <binarySI> | <decimalSI> | <decimalExponent>
    <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei
    <decimalSI>       ::= n | u | m | "" | k | M | G | T | P | E
    <decimalExponent> ::= e <signedNumber> | E <signedNumber>   (an integer exponent)

Parsing follows ``resource.ParseQuantity`` (k8s.io/apimachinery): the value is exact
(``parse_quantity("81559Mi") == Decimal(81559 * 2**20)``) except that it is rounded *up* (away
from zero) to nano precision (``0.0000000001`` is ``1n``), a binary-suffix value is capped at
2^63-1 in magnitude (``9Ei`` is ``9223372036854775807``), and a binary value below 1 takes the
decimal format. A sign, a dot or a suffix without digits (``+``, ``-.``, ``.``, ``Mi``) reads as
0, as apimachinery's scanner does.

Canonical form (``Quantity.String()`` in Kubernetes): the suffix family of the input is kept;
decimal values use the largest exponent that is a multiple of 3 and keeps the mantissa an
integer (``1500m`` → ``1500m``, ``1000m`` → ``1``); binary values use the largest power of 1024
that divides the value, but only for integers of magnitude ≥ 1024 (others fall back to decimal
SI, as Kubernetes does).
"""

from __future__ import annotations

import enum
import functools
from dataclasses import dataclass
from decimal import ROUND_UP, Decimal, Inexact, localcontext

from gen.caches import memoize
from gen.errors import QuantityError

__all__ = [
    "Int64Amount",
    "Quantity",
    "QuantityFormat",
    "add_amounts",
    "amount_as_int64",
    "compare_quantities",
    "format_quantity",
    "int64_amount",
    "parse_quantity",
]


class QuantityFormat(enum.StrEnum):
    """The suffix family a quantity was written in; it decides the canonical form."""

    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_SUFFIX = {exp: suffix for suffix, exp in _DECIMAL.items()}
_BINARY_SUFFIX = {bits: suffix for suffix, bits in _BINARY.items()}
_NANO = Decimal("1e-9")
_MAX_BINARY = Decimal((1 << 63) - 1)
"""apimachinery's ``maxAllowed``: a binary-suffix value is capped at 2^63-1 in magnitude."""
# Digits of working precision for formatting.
_PRECISION = 200
# An exponent past this is rejected (Kubernetes accepts up to 2^31-1; see docs/cel.md).
_MAX_EXPONENT = 1000
_INT32_MAX = (1 << 31) - 1
_REGEX_HINT = "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")


def _format_error(text: str) -> QuantityError:
    return QuantityError(f"quantities must match the regular expression {_REGEX_HINT}: {text!r}")


def _scan(text: str) -> tuple[bool, str, str, str]:
    """apimachinery's ``parseQuantityString``: sign, numerator, denominator, suffix."""
    end = len(text)
    pos = 0
    positive = True
    if pos < end and text[0] in "+-":
        positive = text[0] == "+"
        pos += 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    denom = ""
    if pos < end and text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise _format_error(text)
    return positive, num, denom, text[suffix_start:]


def _interpret(text: str, suffix: str) -> tuple[int, int, QuantityFormat]:
    """Base, exponent and format of a suffix (apimachinery's ``suffixer.interpret``)."""
    if suffix in _BINARY:
        return 2, _BINARY[suffix], QuantityFormat.BINARY_SI
    if suffix in _DECIMAL:
        return 10, _DECIMAL[suffix], QuantityFormat.DECIMAL_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:].removeprefix("+").removeprefix("-")
        if digits and set(digits) <= _DIGITS:
            exponent = int(suffix[1:])
            if abs(exponent) <= _INT32_MAX:
                return 10, exponent, QuantityFormat.DECIMAL_EXPONENT
    raise QuantityError(f"unable to parse quantity's suffix: {text!r}")


def _split(text: str) -> tuple[Decimal, QuantityFormat]:
    """apimachinery's ``ParseQuantity``: the value, rounded up to nano, and its format."""
    if not text:
        raise _format_error(text)
    positive, num, denom, suffix = _scan(text)
    base, exponent, fmt = _interpret(text, suffix)
    digits = int(num + denom)
    if digits == 0:
        return Decimal(0), fmt
    if base == 10 and exponent > _MAX_EXPONENT:
        raise QuantityError(f"quantity exponent out of range: {text!r}")
    with localcontext() as ctx:
        ctx.prec = len(num) + len(denom) + 40
        ctx.traps[Inexact] = True
        try:
            if base == 2:
                value = Decimal(digits * (1 << exponent)).scaleb(-len(denom))
            elif exponent - len(denom) < -_MAX_EXPONENT:
                value = _NANO  # far below a nano unit: rounds up to 1n
            else:
                value = Decimal(digits).scaleb(exponent - len(denom))
        except Inexact as err:  # pragma: no cover - the precision covers every digit
            raise QuantityError(f"quantity has too many digits: {text!r}") from err
        ctx.traps[Inexact] = False
        if value.as_tuple().exponent < -9:  # type: ignore[operator]
            value = value.quantize(_NANO, rounding=ROUND_UP)
    if fmt is QuantityFormat.BINARY_SI:
        value = min(value, _MAX_BINARY)
        if value < 1:
            fmt = QuantityFormat.DECIMAL_SI
    return (value if positive else -value), fmt


Int64Amount = tuple[int, int]
"""apimachinery's ``int64Amount``: (value, scale), the quantity ``value * 10**scale``."""

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_MAX_INT64_FACTORS = 18  # apimachinery's maxInt64Factors


def _fits(value: int) -> bool:
    return _INT64_MIN <= value <= _INT64_MAX


@memoize(maxsize=4096)
def int64_amount(text: str) -> Int64Amount | None:
    """How ``resource.ParseQuantity`` stores ``text``: an ``int64Amount`` (value, scale), or
    None where it falls back to an ``inf.Dec`` (kubernetes/apimachinery
    pkg/api/resource/quantity.go @ v0.36.0, the ``precision >= 0`` fast path).

    The fast path takes a decimal number of at most 18 digits whose scale is not below nano
    (``1000m`` is (1000, -3), ``1.0`` is (10, -1)), or a whole binary number whose digits and
    suffix leave room in the 15 decimal digits it allows (``80Gi`` is (85899345920, 0);
    ``1Pi`` and ``0.5Mi`` are not). Raises :class:`QuantityError` as :func:`parse_quantity`.
    """
    _split(text)  # the errors of ParseQuantity
    if text == "0":
        return 0, 0
    positive, num, denom, suffix = _scan(text)
    _base, exponent, fmt = _interpret(text, suffix)
    mantissa = 1
    if fmt is QuantityFormat.BINARY_SI:
        scale = 0
        if exponent >= 0 and not denom:
            mantissa = 1 << exponent
            # Go: 15 - int32(len(num)) - int32(float32(exponent)*3/10) - 1
            precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        else:
            precision = -1
    else:
        scale = exponent
        precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
    if precision < 0:
        return None
    scale -= len(denom)
    if scale < -9:
        return None
    result = int(num + denom) * mantissa
    if not _fits(result):
        return None
    return (result if positive else -result), scale


def _scaled(value: int, scale: int) -> int | None:
    """apimachinery's ``positiveScaleInt64``: ``value * 10**scale`` if it fits an int64."""
    result = value * 10**scale
    return result if _fits(result) else None


def amount_as_int64(amount: Int64Amount | None) -> int | None:
    """``Quantity.AsInt64``: the integer an ``int64Amount`` holds; None for an ``inf.Dec``,
    a negative scale (``1000m``: apimachinery does not reduce it) or an int64 overflow."""
    if amount is None:
        return None
    value, scale = amount
    if scale == 0:
        return value
    if scale < 0:
        return None
    return _scaled(value, scale)


def add_amounts(left: Int64Amount | None, right: Int64Amount | None) -> Int64Amount | None:
    """``int64Amount.Add`` of ``Quantity.Add`` / ``Sub``: the sum as an ``int64Amount``, or
    None where apimachinery moves to an ``inf.Dec`` (either side is one, or it overflows)."""
    if left is None or right is None:
        return None
    (a, a_scale), (b, b_scale) = left, right
    if b == 0:
        return left
    if a == 0:
        return right
    if a_scale > b_scale:
        shifted = _scaled(a, a_scale - b_scale)
        if shifted is None:
            return None
        a, a_scale = shifted, b_scale
    elif b_scale > a_scale:
        shifted = _scaled(b, b_scale - a_scale)
        if shifted is None:
            return None
        b = shifted
    total = a + b
    return (total, a_scale) if _fits(total) else None


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
        # No decimal suffix past E: apimachinery falls back to exponent notation (1e21).
        return f"{mantissa}e{exp}"
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
