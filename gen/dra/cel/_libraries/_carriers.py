"""Quantities and versions as runtime CEL values: one-entry carrier maps (cel-expr-python
cannot pass a Python object through CEL), and the one ordering ``compareTo``,
``isGreaterThan`` and ``isLessThan`` run with for both."""

from __future__ import annotations

from decimal import Decimal

from cel_expr_python import cel

from gen.caches import memoize
from gen.dra.cel._libraries._base import LibraryError
from gen.k8s.quantity import Int64Amount
from gen.k8s.semver import Version, parse_version

__all__ = [
    "QUANTITY",
    "QUANTITY_KEY",
    "SEMVER",
    "SEMVER_KEY",
    "compare",
    "greater",
    "less",
    "quantity_carrier",
    "quantity_of",
    "quantity_value",
    "semver_carrier",
    "semver_value",
    "stored",
]

QUANTITY_KEY = "kubernetes.Quantity"


SEMVER_KEY = "kubernetes.Semver"
QUANTITY = cel.Type.AbstractType(QUANTITY_KEY)
SEMVER = cel.Type.AbstractType(SEMVER_KEY)


def _key(value: Decimal) -> str:
    return "0" if value == 0 else str(value.normalize())


_DEC = "dec:"


def quantity_carrier(value: Decimal, amount: Int64Amount | None = None) -> dict[str, str]:
    """The runtime CEL value of a quantity and how apimachinery stores it: ``1000e-3`` for
    the ``int64Amount`` (1000, -3), ``dec:<value>`` for an ``inf.Dec`` (``amount`` None).

    The storage decides ``isInteger()`` / ``asInteger()``; equality compares values only,
    so ``==`` on quantities runs as :func:`~gen.dra.cel._libraries.equality.kubernetes_equal`.
    """
    if amount is None:
        return {QUANTITY_KEY: _DEC + _key(value)}
    return {QUANTITY_KEY: f"{amount[0]}e{amount[1]}"}


def stored(value: object) -> Int64Amount | None:
    """The ``int64Amount`` a quantity carrier holds; None for an ``inf.Dec``."""
    text = _q_text(value)
    if text.startswith(_DEC):
        return None
    mantissa, _, scale = text.partition("e")
    return int(mantissa), int(scale)


def _q_text(value: object) -> str:
    if type(value) is dict and len(value) == 1:
        text = value.get(QUANTITY_KEY)
        if type(text) is str:
            return text
    raise LibraryError("no such overload")


def semver_carrier(version: Version) -> dict[str, str]:
    """The runtime CEL value of a version (build metadata dropped: it never compares)."""
    return {
        SEMVER_KEY: str(Version(version.major, version.minor, version.patch, version.prerelease))
    }


_decimal = memoize(maxsize=4096, name="gen.dra.cel._libraries._carriers._decimal")(Decimal)


def quantity_value(value: object) -> Decimal | None:
    """The quantity a runtime CEL value carries, if it is one."""
    if type(value) is dict and len(value) == 1:
        text = value.get(QUANTITY_KEY)
        if type(text) is str:
            return _decimal(text.removeprefix(_DEC))
    return None


def semver_value(value: object) -> Version | None:
    if type(value) is dict and len(value) == 1:
        text = value.get(SEMVER_KEY)
        if type(text) is str:
            return parse_version(text)
    return None


def quantity_of(value: object) -> Decimal:
    q = quantity_value(value)
    if q is None:
        raise LibraryError("no such overload")
    return q


def _pair(left: object, right: object) -> tuple[Decimal, Decimal] | tuple[Version, Version]:
    lq, rq = quantity_value(left), quantity_value(right)
    if lq is not None and rq is not None:
        return lq, rq
    ls, rs = semver_value(left), semver_value(right)
    if ls is not None and rs is not None:
        return ls, rs
    raise LibraryError("no such overload")


def compare(left: object, right: object) -> int:
    a, b = _pair(left, right)
    if isinstance(a, Version) and isinstance(b, Version):
        return a.compare(b)
    return (a > b) - (a < b)  # type: ignore[operator]


def greater(left: object, right: object) -> bool:
    """``isGreaterThan`` of two quantities or two versions."""
    return compare(left, right) > 0


def less(left: object, right: object) -> bool:
    """``isLessThan`` of two quantities or two versions."""
    return compare(left, right) < 0
