"""The two cel-expr-python environments: a typed one to check, an untyped one to run.

cel-expr-python (0.1.3) cannot carry a Python object through CEL: a function declared to
return an abstract type such as ``kubernetes.Quantity`` fails at run time ("Unimplemented
type"). So the Kubernetes types live twice:

* the **checker** environment declares ``kubernetes.Quantity``, ``kubernetes.Semver`` and
  ``kubernetes.DRADevice`` as abstract types, with Kubernetes' overloads, so type errors are
  compile errors as in Kubernetes (``quantity('1') < 2``, ``device.driver == 1``);
* the **runtime** environment is untyped (every overload takes ``dyn``): expressions are
  compiled with ``disable_check=True`` and a quantity or semver travels as a one-entry map
  (``{"kubernetes.Quantity": "85520809984"}``) that the Python implementations unwrap. The
  key is the exact normalised value, so CEL's own ``==`` on two carriers is Kubernetes'
  semantic ``Quantity.Equal`` / ``Semver.Equal``.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from gen.caches import memoize
from gen.dra.devices import Device
from gen.errors import QuantityError
from gen.k8s.formats import FORMATS
from gen.k8s.formats import validate as validate_format
from gen.k8s.netip import Addr, NetIPError, Prefix, parse_addr, parse_prefix
from gen.k8s.quantity import (
    Int64Amount,
    QuantityFormat,
    add_amounts,
    amount_as_int64,
    format_quantity,
    int64_amount,
    parse_quantity,
)
from gen.k8s.semver import Version, parse_version, version_or_reason
from gen.k8s.urls import URL, URLError, parse_request_uri
from gen.k8s.urls import parse as parse_url

__all__ = [
    "KUBERNETES_EQUALS",
    "KUBERNETES_IN",
    "KUBERNETES_NOT_EQUALS",
    "OPTIONAL_RESULTS",
    "QUANTITY_KEY",
    "SEMVER_KEY",
    "TIME_LIST_FUNCTIONS",
    "TWO_VARIABLE_COMPREHENSIONS",
    "checker_env",
    "device_data",
    "quantity_value",
    "runtime_env",
]

QUANTITY_KEY = "kubernetes.Quantity"
SEMVER_KEY = "kubernetes.Semver"
_INT64 = (-(1 << 63), (1 << 63) - 1)

_Q = cel.Type.AbstractType(QUANTITY_KEY)
_S = cel.Type.AbstractType(SEMVER_KEY)
_DEVICE = cel.Type.AbstractType("kubernetes.DRADevice")
_STR, _INT, _BOOL, _DBL, _DYN = (
    cel.Type.STRING,
    cel.Type.INT,
    cel.Type.BOOL,
    cel.Type.DOUBLE,
    cel.Type.DYN,
)


class _LibraryError(ValueError):
    """Raised inside an implementation; cel-expr-python turns it into a CEL error value."""


# --- carriers ------------------------------------------------------------------------------


def _key(value: Decimal) -> str:
    return "0" if value == 0 else str(value.normalize())


_DEC = "dec:"


def quantity_carrier(value: Decimal, amount: Int64Amount | None = None) -> dict[str, str]:
    """The runtime CEL value of a quantity and how apimachinery stores it: ``1000e-3`` for
    the ``int64Amount`` (1000, -3), ``dec:<value>`` for an ``inf.Dec`` (``amount`` None).

    The storage decides ``isInteger()`` / ``asInteger()``; equality compares values only,
    so ``==`` on quantities runs as :func:`_kubernetes_equal` (gen.dra.cel._engine).
    """
    if amount is None:
        return {QUANTITY_KEY: _DEC + _key(value)}
    return {QUANTITY_KEY: f"{amount[0]}e{amount[1]}"}


def _stored(value: object) -> Int64Amount | None:
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
    raise _LibraryError("no such overload")


def semver_carrier(version: Version) -> dict[str, str]:
    """The runtime CEL value of a version (build metadata dropped: it never compares)."""
    return {
        SEMVER_KEY: str(Version(version.major, version.minor, version.patch, version.prerelease))
    }


_decimal = memoize(maxsize=4096, name="gen.dra.cel._library._decimal")(Decimal)


def quantity_value(value: object) -> Decimal | None:
    """The quantity a runtime CEL value carries, if it is one."""
    if type(value) is dict and len(value) == 1:
        text = value.get(QUANTITY_KEY)
        if type(text) is str:
            return _decimal(text.removeprefix(_DEC))
    return None


def _semver_value(value: object) -> Version | None:
    if type(value) is dict and len(value) == 1:
        text = value.get(SEMVER_KEY)
        if type(text) is str:
            return parse_version(text)
    return None


def _q(value: object) -> Decimal:
    q = quantity_value(value)
    if q is None:
        raise _LibraryError("no such overload")
    return q


def _pair(left: object, right: object) -> tuple[Decimal, Decimal] | tuple[Version, Version]:
    lq, rq = quantity_value(left), quantity_value(right)
    if lq is not None and rq is not None:
        return lq, rq
    ls, rs = _semver_value(left), _semver_value(right)
    if ls is not None and rs is not None:
        return ls, rs
    raise _LibraryError("no such overload")


def _compare(left: object, right: object) -> int:
    a, b = _pair(left, right)
    if isinstance(a, Version) and isinstance(b, Version):
        return a.compare(b)
    return (a > b) - (a < b)  # type: ignore[operator]


# --- implementations ------------------------------------------------------------------------


@memoize(maxsize=4096)
def _quantity_text(text: str) -> dict[str, str]:
    return quantity_carrier(parse_quantity(text), int64_amount(text))


def _quantity(text: object) -> dict[str, str]:
    try:
        return dict(_quantity_text(str(text)))
    except QuantityError as err:
        raise _LibraryError(err.message) from err


def _is_quantity(text: object) -> bool:
    try:
        parse_quantity(str(text))
    except QuantityError:
        return False
    return True


def _semver(text: object, normalize: object = False) -> dict[str, str]:
    # Kubernetes reports blang's own wording: "No Major.Minor.Patch elements found".
    result = version_or_reason(str(text), normalize=bool(normalize))
    if isinstance(result, str):
        raise _LibraryError(result)
    return semver_carrier(result)


def _is_semver(text: object, normalize: object = False) -> bool:
    return isinstance(version_or_reason(str(text), normalize=bool(normalize)), Version)


def _add(left: object, right: object, sign: int = 1) -> dict[str, str]:
    # Quantity.Add / Sub (apimachinery quantity.go @ v0.36.0); an int is
    # resource.NewQuantity(i, DecimalExponent), the int64Amount (i, 0).
    base = _q(left)
    other_amount: Int64Amount | None
    if type(right) is int:
        other, other_amount = Decimal(right), (right, 0)
    else:
        other, other_amount = _q(right), _stored(right)
    amount = _stored(left)
    if other_amount is not None and sign < 0:
        other_amount = (-other_amount[0], other_amount[1])
    return quantity_carrier(base + sign * other, add_amounts(amount, other_amount))


def _sub(left: object, right: object) -> dict[str, str]:
    return _add(left, right, -1)


def _sign(value: object) -> int:
    q = _q(value)
    return (q > 0) - (q < 0)


def _as_integer(value: object) -> int:
    # Quantity.AsInt64 (apimachinery quantity.go @ v0.36.0) answers from the storage.
    number = amount_as_int64(_stored(value))
    if number is None:
        raise _LibraryError("cannot convert value to integer")
    return number


def _is_integer(value: object) -> bool:
    return amount_as_int64(_stored(value)) is not None


def _version_part(index: int) -> Callable[[object], int]:
    def part(value: object) -> int:
        version = _semver_value(value)
        if version is None:
            raise _LibraryError("no such overload")
        number = (version.major, version.minor, version.patch)[index]
        # Kubernetes returns types.Int(v.Major) of a uint64: Go's conversion wraps past 2^63-1.
        return number - (1 << 64) if number > _INT64[1] else number

    return part


# --- Kubernetes' list and regex libraries, cel-go's sets extension -------------------------
# kubernetes/apiserver pkg/cel/library/lists.go and regex.go @ v0.36.0; google/cel-go
# ext/sets.go @ v0.26.0.


def _cel_equal(a: object, b: object) -> bool:
    """CEL's heterogeneous equality on runtime values (bool is not a number, 1 == 1.0)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_cel_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        left, right = quantity_value(a), quantity_value(b)
        if left is not None or right is not None:
            return left == right  # a quantity carrier also holds its storage
        return a.keys() == b.keys() and all(_cel_equal(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


KUBERNETES_EQUALS = "gen.kubernetes.equals"
KUBERNETES_NOT_EQUALS = "gen.kubernetes.not_equals"
KUBERNETES_IN = "gen.kubernetes.in"
"""The runtime functions gen runs ``==``, ``!=`` and ``in`` as where an operand may be a
version or quantity (gen.dra.cel._engine): :func:`_kubernetes_equal`, its negation and list
membership with Kubernetes' ``Equal``."""


def _kubernetes_equal(left: object, right: object) -> bool:
    """cel-go's ``types.Equal`` with Kubernetes' ``Semver`` / ``Quantity`` values.

    ``Semver.Equal`` and ``Quantity.Equal`` answer "no such overload" for any other type
    (kubernetes staging/src/k8s.io/apiserver/pkg/cel/semver.go and quantity.go @ v1.36.0);
    ``null`` on either side is compared first (cel-go common/types/util.go ``Equal``); a
    list or map element whose comparison is an error counts as equal (cel-go
    common/types/list.go and map.go ``Equal`` stop only at ``False``) @ v0.26.0.
    """
    if left is None or right is None:
        return left is None and right is None
    amount, version = quantity_value(left), _semver_value(left)
    if amount is not None or version is not None:
        other_amount, other_version = quantity_value(right), _semver_value(right)
        if amount is not None and other_amount is not None:
            return amount == other_amount
        if version is not None and other_version is not None:
            return version.compare(other_version) == 0
        raise _LibraryError("no such overload")
    if isinstance(left, list):
        if not isinstance(right, list) or len(left) != len(right):
            return False
        return all(_equal_or_error(a, b) for a, b in zip(left, right, strict=True))
    if isinstance(left, dict):
        if not isinstance(right, dict) or len(left) != len(right):
            return False
        return all(k in right and _equal_or_error(v, right[k]) for k, v in left.items())
    if quantity_value(right) is not None or _semver_value(right) is not None:
        return False
    return _cel_equal(left, right)


def _kubernetes_not_equal(left: object, right: object) -> bool:
    # cel-go evalNe @ v0.26.0: types.Bool(types.Equal(lhs, rhs) != types.True).
    try:
        return not _kubernetes_equal(left, right)
    except _LibraryError:
        return True


def _kubernetes_in(value: object, items: object) -> bool:
    # cel-go baseList.Contains @ v0.26.0: true at the first element whose Equal is true.
    if isinstance(items, dict):
        return any(not _kubernetes_not_equal(value, key) for key in items)
    return any(not _kubernetes_not_equal(value, item) for item in _items(items))


def _equal_or_error(left: object, right: object) -> bool:
    """An element comparison: an error is not ``False``, so it does not stop the walk."""
    try:
        return _kubernetes_equal(left, right)
    except _LibraryError:
        return True


def _items(value: object) -> list[Any]:
    if not isinstance(value, list):
        raise _LibraryError("no such overload")
    return value


def _includes(target: object, value: object) -> bool:
    """Kubernetes' ``includes`` (lists library version 1, k8s.io/apiserver
    ``pkg/cel/library/lists.go``@v0.37.2): a list has an element equal to ``value``, any other
    value is equal to it."""
    if isinstance(target, list):
        return any(_cel_equal(x, value) for x in target)
    return _cel_equal(target, value)


def _is_sorted(value: object) -> bool:
    items = _items(value)
    try:
        return all(not b < a for a, b in itertools.pairwise(items))
    except TypeError:
        raise _LibraryError("no such overload") from None


def _returnable(name: str, value: object) -> object:
    if isinstance(value, timedelta | datetime):
        # Reached only through dyn (a list whose element type the checker does not know);
        # a typed list of durations runs as the functions of TIME_LIST_FUNCTIONS.
        raise _LibraryError(
            f"gen cannot evaluate {name}() of durations or timestamps in a list typed dyn "
            "(cel-expr-python cannot return one from a function declared dyn); see "
            "docs/cel.md, Deviations"
        )
    return value


TIME_LIST_FUNCTIONS = {
    name: {"duration": f"gen_{name}_duration", "timestamp": f"gen_{name}_timestamp"}
    for name in ("min", "max", "sum")
}
"""Runtime names of ``min`` / ``max`` / ``sum`` over a list of durations or timestamps."""


def _time_extreme(name: str) -> Callable[[object], object]:
    def pick(value: object) -> object:
        items = _items(value)
        if not items:
            raise _LibraryError(f"{name} called on empty list")
        return min(items) if name == "min" else max(items)

    return pick


def _duration_sum(value: object) -> object:
    return sum(_items(value), timedelta())


def _extreme(name: str) -> Callable[[object], object]:
    def pick(value: object) -> object:
        items = _items(value)
        if not items:
            raise _LibraryError(f"{name} called on empty list")
        try:
            return _returnable(name, min(items) if name == "min" else max(items))
        except TypeError:
            raise _LibraryError("no such overload") from None

    return pick


def _sum(value: object) -> object:
    items = _items(value)
    if not items:
        return 0
    total = items[0]
    try:
        for item in items[1:]:
            total = total + item
    except TypeError:
        raise _LibraryError("no such overload") from None
    return _returnable("sum", total)


def _regex(pattern: object) -> re.Pattern[str]:
    """``pattern`` compiled as RE2 reads it, as far as Python's ``re`` can (ASCII classes)."""
    from gen.dra.cel._validate import RE2_ONLY, valid_regex

    text = str(pattern)
    if RE2_ONLY.search(text):
        raise _LibraryError(
            "gen cannot evaluate RE2-only syntax (\\p, [[:, \\Q, \\z) in find/findAll; "
            "see docs/cel.md, Deviations"
        )
    if not valid_regex(text):
        raise _LibraryError(f"Illegal regex: {text}")
    return _compiled_regex(text)


# A quantified group that itself holds a quantifier, ``(a+)+``: Python's backtracking ``re``
# can take exponential time on it where RE2 is linear.
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[*+}](?:[^()\\]|\\.)*\)[*+{]")
_BACKTRACKING_TEXT = 24


def _search_text(pattern: re.Pattern[str], text: object) -> str:
    value = str(text)
    if len(value) > _BACKTRACKING_TEXT and _NESTED_QUANTIFIER.search(pattern.pattern):
        raise _LibraryError(
            f"gen cannot evaluate find/findAll with a nested quantifier on a text longer than "
            f"{_BACKTRACKING_TEXT} characters (Python's regex engine may backtrack "
            "exponentially where RE2 does not); see docs/cel.md, Deviations"
        )
    return value


@memoize(maxsize=256)
def _compiled_regex(text: str) -> re.Pattern[str]:
    return re.compile(text, re.ASCII)


def _find(text: object, pattern: object) -> str:
    compiled = _regex(pattern)
    match = compiled.search(_search_text(compiled, text))
    return match[0] if match else ""


def _find_all(text: object, pattern: object, limit: object = -1) -> list[str]:
    # Go's FindAllString: at most ``limit`` matches when limit >= 0; an empty match right
    # after the previous match is skipped.
    n = int(limit) if isinstance(limit, int) else -1
    out: list[str] = []
    end = -1
    compiled = _regex(pattern)
    for match in compiled.finditer(_search_text(compiled, text)):
        if n >= 0 and len(out) >= n:
            break
        if match.start() == match.end() == end:
            continue
        out.append(match[0])
        end = match.end()
    return out


def _index_of(items: object, value: object) -> int:
    """Kubernetes' ``list.indexOf``: the first index of an element equal to ``value``, or -1."""
    return next((i for i, x in enumerate(_items(items)) if _cel_equal(x, value)), -1)


def _last_index_of(items: object, value: object) -> int:
    found = _items(items)
    return next(
        (i for i in range(len(found) - 1, -1, -1) if _cel_equal(found[i], value)), -1
    )


# --- cel-go's two-variable comprehensions (ext/comprehensions.go @ v0.26.0) ----------------


def _map_insert(
    target: object, key: object, value: object = None, *, pair: bool = False
) -> dict[Any, Any]:
    """``cel.@mapInsert``: the accumulator of ``transformMap`` / ``transformMapEntry``.

    cel-go refuses a key that is already there ("insert failed: key K already exists").
    """
    if not isinstance(target, dict):
        raise _LibraryError("no such overload")
    entries = list(key.items()) if pair and isinstance(key, dict) else [(key, value)]
    if pair and not isinstance(key, dict):
        raise _LibraryError("no such overload")
    out = dict(target)
    for k, v in entries:
        if any(_cel_equal(k, old) for old in out):
            raise _LibraryError(f"insert failed: key {_go_value(k)} already exists")
        if k in out:  # a bool key and an int key: distinct in CEL, one key in Python
            raise _LibraryError(
                "gen cannot build a map with both a bool and an int key of the same value "
                "(cel-expr-python's map conversion); see docs/cel.md, Deviations"
            )
        out[k] = v
    return out


def _go_value(value: object) -> str:
    """Go's ``%v`` of a CEL key (bool, int, string)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _sets_contains(left: object, right: object) -> bool:
    items = _items(left)
    return all(any(_cel_equal(x, y) for x in items) for y in _items(right))


def _sets_intersects(left: object, right: object) -> bool:
    items = _items(left)
    return any(any(_cel_equal(x, y) for x in items) for y in _items(right))


# --- Kubernetes' IP and CIDR libraries (pkg/cel/library/ip.go, cidr.go @ v0.36.0) ----------
IP_KEY = "net.IP"
CIDR_KEY = "net.CIDR"
_IP = cel.Type.AbstractType(IP_KEY)
_CIDR = cel.Type.AbstractType(CIDR_KEY)


def _parse_ip(text: str) -> Addr:
    try:
        addr = parse_addr(text)
    except NetIPError as err:
        raise _LibraryError(
            f"IP Address {json.dumps(text)} parse error during conversion from string: {err}"
        ) from None
    if addr.zone:
        raise _LibraryError(f"IP address {json.dumps(text)} with zone value is not allowed")
    if addr.is4in6:
        raise _LibraryError(f"IPv4-mapped IPv6 address {json.dumps(text)} is not allowed")
    return addr


def _parse_cidr(text: str) -> Prefix:
    outer = "network address parse error during conversion from string"
    try:
        prefix = parse_prefix(text)
    except NetIPError as err:
        raise _LibraryError(f"{outer}: {outer}: {err}") from None
    if prefix.addr.is4in6:
        raise _LibraryError(f"{outer}: IPv4-mapped IPv6 address {json.dumps(text)} is not allowed")
    return prefix


def _carried(value: object, key: str) -> str | None:
    """The text a one-entry carrier map holds under ``key``."""
    if type(value) is dict and len(value) == 1 and isinstance(value.get(key), str):
        return str(value[key])
    return None


def _ip_of(value: object) -> Addr:
    """An ``ip()`` value or a string (``containsIP`` takes either)."""
    text = _carried(value, IP_KEY)
    if text is not None:
        return parse_addr(text)
    if isinstance(value, str):
        return _parse_ip(value)
    raise _LibraryError("no such overload")


def _cidr_of(value: object) -> Prefix:
    """A ``cidr()`` value or a string (``containsCIDR`` takes either)."""
    text = _carried(value, CIDR_KEY)
    if text is not None:
        return parse_prefix(text)
    if isinstance(value, str):
        return _parse_cidr(value)
    raise _LibraryError("no such overload")


def _ip(value: object) -> dict[str, str]:
    """``ip(string)`` and ``cidr.ip()``."""
    if type(value) is dict and CIDR_KEY in value:
        return {IP_KEY: str(_cidr_of(value).addr)}
    if not isinstance(value, str):
        raise _LibraryError("no such overload")
    return {IP_KEY: str(_parse_ip(value))}


def _parses(parse: Callable[[str], object]) -> Callable[[object], bool]:
    """``isIP`` / ``isCIDR``: whether the string parses."""

    def test(text: object) -> bool:
        try:
            parse(str(text))
        except _LibraryError:
            return False
        return True

    return test


def _ip_test(name: str) -> Callable[[object], object]:
    def test(value: object) -> object:
        if type(value) is not dict:
            raise _LibraryError("no such overload")
        return getattr(_ip_of(value), name)

    return test


def _masked(value: object) -> dict[str, str]:
    return {CIDR_KEY: str(_cidr_of(value).masked())}


def _contains_cidr(outer: object, inner: object) -> bool:
    a, b = _cidr_of(outer), _cidr_of(inner)
    return a.overlaps(b) and a.bits <= b.bits


# --- Kubernetes' URL library (pkg/cel/library/urls.go @ v0.36.0) ---------------------------
URL_KEY = "kubernetes.URL"
_URL = cel.Type.AbstractType(URL_KEY)


def _url(text: object) -> dict[str, str]:
    """``url(string)``: checked with ``ParseRequestURI``, parsed with ``Parse``; the carrier
    holds ``URL.String()``, which is what Kubernetes' ``URL.Equal`` compares."""
    if not isinstance(text, str):
        raise _LibraryError("no such overload")
    try:
        parse_request_uri(text)
        parsed = parse_url(text)
    except URLError as err:
        raise _LibraryError(f"URL parse error during conversion from string: {err}") from None
    return {URL_KEY: parsed.string()}


@memoize(maxsize=1024)
def _parsed_url(text: str) -> URL:
    return parse_url(text)


def _url_part(read: Callable[[URL], object]) -> Callable[[object], object]:
    def part(value: object) -> object:
        text = _carried(value, URL_KEY)
        if text is None:
            raise _LibraryError("no such overload")
        return read(_parsed_url(text))

    return part


def _is_url(text: object) -> bool:
    if not isinstance(text, str):
        raise _LibraryError("no such overload")
    try:
        parse_request_uri(text)
    except URLError:
        return False
    return True


# --- Kubernetes' format library (pkg/cel/library/format.go @ v0.36.0) ----------------------
FORMAT_KEY = "kubernetes.NamedFormat"
_FORMAT = cel.Type.AbstractType(FORMAT_KEY)
OPTIONAL_RESULTS = {"validate": "errors", "format.named": "format"}
"""The entry under which gen's ``validate`` / ``format.named`` return what Kubernetes wraps
in an optional; the engine reads it with an optional index (``[?"errors"]``)."""


def _format_of(value: object) -> str:
    name = _carried(value, FORMAT_KEY)
    if name is None or name not in FORMATS:
        raise _LibraryError("no such overload")
    return name


def _format_validate(fmt: object, value: object) -> dict[str, list[str]]:
    if not isinstance(value, str):
        raise _LibraryError("no such overload")
    errors = validate_format(_format_of(fmt), value)
    return {OPTIONAL_RESULTS["validate"]: errors} if errors else {}


def _format_named(name: object) -> dict[str, dict[str, str]]:
    if not isinstance(name, str):
        raise _LibraryError("no such overload")
    return {OPTIONAL_RESULTS["format.named"]: {FORMAT_KEY: name}} if name in FORMATS else {}


def _constant_format(name: str) -> Callable[[], dict[str, str]]:
    return lambda: {FORMAT_KEY: name}


_COMPARABLE = {
    "int": _INT, "uint": cel.Type.UINT, "double": _DBL, "bool": _BOOL,
    "duration": cel.Type.DURATION, "timestamp": cel.Type.TIMESTAMP, "string": _STR,
    "bytes": cel.Type.BYTES,
}
_SUMMABLE = ("int", "uint", "double", "duration")
_LIST_DYN = cel.Type.List(_DYN)

# name -> [(overload id, return type, checker parameter types, is_member, implementation)]
_Overload = tuple[str, Any, list[Any], bool, Callable[..., Any]]
_LIBRARY: dict[str, list[_Overload]] = {
    "quantity": [("quantity_string", _Q, [_STR], False, _quantity)],
    "isQuantity": [("is_quantity_string", _BOOL, [_STR], False, _is_quantity)],
    "semver": [
        ("semver_string", _S, [_STR], False, _semver),
        ("semver_string_bool", _S, [_STR, _BOOL], False, _semver),
    ],
    "isSemver": [
        ("is_semver_string", _BOOL, [_STR], False, _is_semver),
        ("is_semver_string_bool", _BOOL, [_STR, _BOOL], False, _is_semver),
    ],
    "compareTo": [
        ("quantity_compareTo", _INT, [_Q, _Q], True, _compare),
        ("semver_compareTo", _INT, [_S, _S], True, _compare),
    ],
    "isGreaterThan": [
        ("quantity_isGreaterThan", _BOOL, [_Q, _Q], True, lambda a, b: _compare(a, b) > 0),
        ("semver_isGreaterThan", _BOOL, [_S, _S], True, lambda a, b: _compare(a, b) > 0),
    ],
    "isLessThan": [
        ("quantity_isLessThan", _BOOL, [_Q, _Q], True, lambda a, b: _compare(a, b) < 0),
        ("semver_isLessThan", _BOOL, [_S, _S], True, lambda a, b: _compare(a, b) < 0),
    ],
    "add": [
        ("quantity_add", _Q, [_Q, _Q], True, _add),
        ("quantity_add_int", _Q, [_Q, _INT], True, _add),
    ],
    "sub": [
        ("quantity_sub", _Q, [_Q, _Q], True, _sub),
        ("quantity_sub_int", _Q, [_Q, _INT], True, _sub),
    ],
    "asInteger": [("quantity_asInteger", _INT, [_Q], True, _as_integer)],
    "asApproximateFloat": [
        ("quantity_asApproximateFloat", _DBL, [_Q], True, lambda v: float(_q(v)))
    ],
    "sign": [("quantity_sign", _INT, [_Q], False, _sign)],  # global only, as in Kubernetes
    "isInteger": [("quantity_isInteger", _BOOL, [_Q], True, _is_integer)],
    "includes": [("list_includes_dyn_dyn", _BOOL, [_DYN, _DYN], True, _includes)],
    "isSorted": [
        (f"list_{n}_is_sorted_bool", _BOOL, [cel.Type.List(t)], True, _is_sorted)
        for n, t in _COMPARABLE.items()
    ],
    "sum": [
        (f"list_{n}_sum_{n}", _COMPARABLE[n], [cel.Type.List(_COMPARABLE[n])], True, _sum)
        for n in _SUMMABLE
    ],
    "min": [
        (f"list_{n}_min_{n}", t, [cel.Type.List(t)], True, _extreme("min"))
        for n, t in _COMPARABLE.items()
    ],
    "max": [
        (f"list_{n}_max_{n}", t, [cel.Type.List(t)], True, _extreme("max"))
        for n, t in _COMPARABLE.items()
    ],
    "find": [("string_find_string", _STR, [_STR, _STR], True, _find)],
    "findAll": [
        ("string_find_all_string", cel.Type.List(_STR), [_STR, _STR], True, _find_all),
        ("string_find_all_string_int", cel.Type.List(_STR), [_STR, _STR, _INT], True,
         _find_all),
    ],
    "sets.contains": [
        ("list_sets_contains_list", _BOOL, [_LIST_DYN, _LIST_DYN], False, _sets_contains)
    ],
    "sets.equivalent": [
        ("list_sets_equivalent_list", _BOOL, [_LIST_DYN, _LIST_DYN], False,
         lambda a, b: _sets_contains(a, b) and _sets_contains(b, a)),
    ],
    "sets.intersects": [
        ("list_sets_intersects_list", _BOOL, [_LIST_DYN, _LIST_DYN], False, _sets_intersects)
    ],
    "ip": [
        ("string_to_ip", _IP, [_STR], False, _ip),
        ("cidr_ip", _IP, [_CIDR], True, _ip),
    ],
    "isIP": [("is_ip", _BOOL, [_STR], False, _parses(_parse_ip))],
    "ip.isCanonical": [
        ("ip_is_canonical", _BOOL, [_STR], False,
         lambda t: str(_parse_ip(str(t))) == str(t)),
    ],
    "family": [("ip_family", _INT, [_IP], True, _ip_test("family"))],
    **{
        name: [(f"ip_{name}", _BOOL, [_IP], True, _ip_test(attr))]
        for name, attr in (
            ("isUnspecified", "is_unspecified"),
            ("isLoopback", "is_loopback"),
            ("isLinkLocalMulticast", "is_link_local_multicast"),
            ("isLinkLocalUnicast", "is_link_local_unicast"),
            ("isGlobalUnicast", "is_global_unicast"),
        )
    },
    "cidr": [("string_to_cidr", _CIDR, [_STR], False, lambda t: {CIDR_KEY: str(_cidr_of(
        t if isinstance(t, str) else None))})],
    "isCIDR": [("is_cidr", _BOOL, [_STR], False, _parses(_parse_cidr))],
    "containsIP": [
        ("cidr_contains_ip_string", _BOOL, [_CIDR, _STR], True,
         lambda c, i: _cidr_of(c).contains(_ip_of(i))),
        ("cidr_contains_ip_ip", _BOOL, [_CIDR, _IP], True,
         lambda c, i: _cidr_of(c).contains(_ip_of(i))),
    ],
    "containsCIDR": [
        ("cidr_contains_cidr_string", _BOOL, [_CIDR, _STR], True, _contains_cidr),
        ("cidr_contains_cidr", _BOOL, [_CIDR, _CIDR], True, _contains_cidr),
    ],
    "prefixLength": [("cidr_prefix_length", _INT, [_CIDR], True,
                      lambda c: _cidr_of(c).bits)],
    "masked": [("cidr_masked", _CIDR, [_CIDR], True, _masked)],
    "url": [("string_to_url", _URL, [_STR], False, _url)],
    "isURL": [("is_url_string", _BOOL, [_STR], False, _is_url)],
    "getScheme": [("url_get_scheme", _STR, [_URL], True, _url_part(lambda u: u.scheme.decode()))],
    "getHost": [("url_get_host", _STR, [_URL], True,
                 _url_part(lambda u: u.host.decode("utf-8", "replace")))],
    "getHostname": [("url_get_hostname", _STR, [_URL], True, _url_part(URL.hostname))],
    "getPort": [("url_get_port", _STR, [_URL], True, _url_part(URL.port))],
    "getEscapedPath": [("url_get_escaped_path", _STR, [_URL], True,
                        _url_part(URL.escaped_path))],
    "getQuery": [("url_get_query", cel.Type.Map(_STR, cel.Type.List(_STR)), [_URL], True,
                  _url_part(URL.query))],
    "validate": [("format-validate", cel.Type.Map(_STR, cel.Type.List(_STR)), [_FORMAT, _STR],
                  True, _format_validate)],
    "format.named": [("format-named", cel.Type.Map(_STR, _FORMAT), [_STR], False,
                      _format_named)],
    **{
        f"format.{name}": [(f"format.{name}", _FORMAT, [], False, _constant_format(name))]
        for name in FORMATS
    },
    "major": [("semver_major", _INT, [_S], True, _version_part(0))],
    "minor": [("semver_minor", _INT, [_S], True, _version_part(1))],
    "patch": [("semver_patch", _INT, [_S], True, _version_part(2))],
}


# Kubernetes' list library declares indexOf / lastIndexOf on ``list(A), A``; the strings
# extension declares them on strings. cel-expr-python merges the two only when the list
# overloads come in an extension registered after the strings extension.
_SEARCHABLE = {**_COMPARABLE, "list": _LIST_DYN, "map": cel.Type.Map(_DYN, _DYN)}
_LIST_SEARCH: dict[str, list[_Overload]] = {
    name: [
        (f"list_{n}_{oid}_int", _INT, [cel.Type.List(t), t], True, impl)
        for n, t in _SEARCHABLE.items()
    ]
    for name, oid, impl in (
        ("indexOf", "index_of", _index_of),
        ("lastIndexOf", "last_index_of", _last_index_of),
    )
}
TWO_VARIABLE_COMPREHENSIONS = cel.NewEnvConfigFromYaml(
    "extensions:\n- name: two-var-comprehensions\n- name: lists\n  version: 2\n"
)
"""cel-cpp's two-variable comprehension macros and declarations (cel-go's
``ext.TwoVarComprehensions``) and its lists extension version 2 (``slice``, ``flatten``,
``lists.range``, ``distinct``, ``reverse``, ``sort``, ``sortBy``), which cel-expr-python
compiles in but does not expose as extension classes; the runtime half of the comprehensions,
``cel.@mapInsert``, is gen's (:func:`_map_insert`)."""
_LISTS = cel.NewEnvConfigFromYaml("extensions:\n- name: lists\n  version: 2\n")


def _standard_extensions() -> list[cel.CelExtensionBase]:
    # Kubernetes' base environment uses ext.Strings version 2.
    return [
        ext_strings.ExtStrings(version=2),
        ext_optional.ExtOptional(),
        ext_bindings.ExtBindings(),
    ]


def checker_env() -> cel.Env:
    """The typed environment: Kubernetes' declarations, never evaluated."""
    decls = [
        cel.FunctionDecl(
            name,
            [
                cel.Overload(oid, ret, params, is_member=member)
                for oid, ret, params, member, _ in ovs
            ],
        )
        for name, ovs in _LIBRARY.items()
    ]
    attr_map = cel.Type.Map(_STR, cel.Type.Map(_STR, _DYN))
    cap_map = cel.Type.Map(_STR, cel.Type.Map(_STR, _Q))
    variables = {
        "device": _DEVICE,
        "device.driver": _STR,
        "device.attributes": attr_map,
        "device.capacity": cap_map,
    }
    # Declared as plain functions, not an extension: an extension would also register lazy
    # run-time overloads, and those collide (both abstract types are "opaque" at run time).
    # The list search functions must be an extension after the strings one (_LIST_SEARCH).
    search = cel.CelExtension("kubernetes.lists", [
        cel.FunctionDecl(name, [cel.Overload(oid, ret, params, is_member=member)
                                for oid, ret, params, member, _ in ovs])
        for name, ovs in _LIST_SEARCH.items()
    ])
    return cel.NewEnv(
        config=TWO_VARIABLE_COMPREHENSIONS,
        variables=variables,
        extensions=[*_standard_extensions(), search],
        functions=decls,
    )


def runtime_env() -> cel.Env:
    """The untyped environment selectors run in; every Kubernetes overload takes ``dyn``."""
    decls = []
    for name, ovs in _LIBRARY.items():
        arities: dict[tuple[int, bool], Callable[..., Any]] = {}
        for _, _, params, member, impl in ovs:
            arities.setdefault((len(params), member), impl)
        decls.append(
            cel.FunctionDecl(
                name,
                [
                    cel.Overload(
                        f"{name}_dyn_{n}{'_member' if member else ''}",
                        _DYN,
                        [_DYN] * n,
                        is_member=member,
                        impl=impl,
                    )
                    for (n, member), impl in arities.items()
                ],
            )
        )
    for name, kinds in TIME_LIST_FUNCTIONS.items():
        for kind, runtime_name in kinds.items():
            if name == "sum" and kind == "timestamp":
                continue
            impl = _duration_sum if name == "sum" else _time_extreme(name)
            returns = cel.Type.DURATION if kind == "duration" else cel.Type.TIMESTAMP
            decls.append(cel.FunctionDecl(runtime_name, [
                cel.Overload(f"{runtime_name}_list", returns, [_LIST_DYN], is_member=True,
                             impl=impl)
            ]))
    for name, ovs in _LIST_SEARCH.items():
        impl = ovs[0][4]
        decls.append(cel.FunctionDecl(name, [
            cel.Overload(f"{name}_list_dyn", _DYN, [_LIST_DYN, _DYN], is_member=True, impl=impl)
        ]))
    for name, impl in (
        (KUBERNETES_EQUALS, _kubernetes_equal),
        (KUBERNETES_NOT_EQUALS, _kubernetes_not_equal),
        (KUBERNETES_IN, _kubernetes_in),
    ):
        decls.append(cel.FunctionDecl(name, [
            cel.Overload(name.replace(".", "_"), _BOOL, [_DYN, _DYN], impl=impl)
        ]))
    decls.append(cel.FunctionDecl("cel.@mapInsert", [
        cel.Overload("map_insert_key_value", _DYN, [_DYN, _DYN, _DYN], impl=_map_insert),
        cel.Overload("map_insert_map", _DYN, [_DYN, _DYN],
                     impl=lambda m, entries: _map_insert(m, entries, pair=True)),
    ]))
    extensions = [*_standard_extensions(), cel.CelExtension("kubernetes", decls)]
    # No two-variable comprehension config here: it would declare cel.@mapInsert without an
    # implementation. Expressions are parsed by the checker environment (which has the
    # macros) and deserialized here.
    return cel.NewEnv(config=_LISTS, variables={"device": _DYN}, extensions=extensions)


def _split_name(qualified: str, driver: str) -> tuple[str, str]:
    # Kubernetes' parseQualifiedName: split at the first "/"; no domain means the driver's.
    domain, sep, name = qualified.partition("/")
    return (domain, name) if sep else (driver, qualified)


def device_data(device: Device) -> dict[str, object]:
    """The runtime value of ``device``: driver, attributes and capacity by domain, then name."""
    attributes: dict[str, dict[str, object]] = {}
    for qualified, value in device.attributes.items():
        domain, name = _split_name(qualified, device.driver)
        cel_value: object = semver_carrier(value) if isinstance(value, Version) else value
        attributes.setdefault(domain, {})[name] = cel_value
    capacity: dict[str, dict[str, object]] = {}
    for qualified, amount in device.capacity.items():
        domain, name = _split_name(qualified, device.driver)
        # Stored as ParseQuantity stores the canonical text gen publishes (BinarySI).
        capacity.setdefault(domain, {})[name] = _capacity_carrier(amount)
    return {"driver": device.driver, "attributes": attributes, "capacity": capacity}


@memoize(maxsize=4096)
def _capacity_carrier(amount: Decimal) -> dict[str, str]:
    text = format_quantity(amount, QuantityFormat.BINARY_SI)
    return quantity_carrier(parse_quantity(text), int64_amount(text))
