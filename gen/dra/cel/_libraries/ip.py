"""Kubernetes' IP and CIDR libraries (k8s.io/apiserver ``pkg/cel/library/ip.go`` and
``cidr.go``@v0.36.0): ``ip``, ``cidr``, their tests and members."""

from __future__ import annotations

import json
from collections.abc import Callable

from cel_expr_python import cel

from gen.dra.cel._libraries._base import (
    BOOL,
    INT,
    STR,
    Declarations,
    LibraryError,
    Overload,
    carried,
)
from gen.k8s.netip import Addr, NetIPError, Prefix, parse_addr, parse_prefix

__all__ = ["DECLARATIONS"]

IP_KEY = "net.IP"
CIDR_KEY = "net.CIDR"
_IP = cel.Type.AbstractType(IP_KEY)
_CIDR = cel.Type.AbstractType(CIDR_KEY)


def _parse_ip(text: str) -> Addr:
    try:
        addr = parse_addr(text)
    except NetIPError as err:
        raise LibraryError(
            f"IP Address {json.dumps(text)} parse error during conversion from string: {err}"
        ) from None
    if addr.zone:
        raise LibraryError(f"IP address {json.dumps(text)} with zone value is not allowed")
    if addr.is4in6:
        raise LibraryError(f"IPv4-mapped IPv6 address {json.dumps(text)} is not allowed")
    return addr


def _parse_cidr(text: str) -> Prefix:
    outer = "network address parse error during conversion from string"
    try:
        prefix = parse_prefix(text)
    except NetIPError as err:
        raise LibraryError(f"{outer}: {outer}: {err}") from None
    if prefix.addr.is4in6:
        raise LibraryError(f"{outer}: IPv4-mapped IPv6 address {json.dumps(text)} is not allowed")
    return prefix


def _ip_of(value: object) -> Addr:
    """An ``ip()`` value or a string (``containsIP`` takes either)."""
    text = carried(value, IP_KEY)
    if text is not None:
        return parse_addr(text)
    if isinstance(value, str):
        return _parse_ip(value)
    raise LibraryError("no such overload")


def _cidr_of(value: object) -> Prefix:
    """A ``cidr()`` value or a string (``containsCIDR`` takes either)."""
    text = carried(value, CIDR_KEY)
    if text is not None:
        return parse_prefix(text)
    if isinstance(value, str):
        return _parse_cidr(value)
    raise LibraryError("no such overload")


def _ip(value: object) -> dict[str, str]:
    """``ip(string)`` and ``cidr.ip()``."""
    if type(value) is dict and CIDR_KEY in value:
        return {IP_KEY: str(_cidr_of(value).addr)}
    if not isinstance(value, str):
        raise LibraryError("no such overload")
    return {IP_KEY: str(_parse_ip(value))}


def _parses(parse: Callable[[str], object]) -> Callable[[object], bool]:
    """``isIP`` / ``isCIDR``: whether the string parses."""

    def test(text: object) -> bool:
        try:
            parse(str(text))
        except LibraryError:
            return False
        return True

    return test


def _ip_test(name: str) -> Callable[[object], object]:
    def test(value: object) -> object:
        if type(value) is not dict:
            raise LibraryError("no such overload")
        return getattr(_ip_of(value), name)

    return test


def _masked(value: object) -> dict[str, str]:
    return {CIDR_KEY: str(_cidr_of(value).masked())}


def _contains_cidr(outer: object, inner: object) -> bool:
    a, b = _cidr_of(outer), _cidr_of(inner)
    return a.overlaps(b) and a.bits <= b.bits


def _contains_ip(prefix: object, addr: object) -> bool:
    return _cidr_of(prefix).contains(_ip_of(addr))


def _cidr(text: object) -> dict[str, str]:
    return {CIDR_KEY: str(_cidr_of(text if isinstance(text, str) else None))}


def _is_canonical(text: object) -> bool:
    return str(_parse_ip(str(text))) == str(text)


def _prefix_length(prefix: object) -> int:
    return _cidr_of(prefix).bits


DECLARATIONS: Declarations = {
    "ip": [
        Overload("string_to_ip", _IP, [STR], False, _ip),
        Overload("cidr_ip", _IP, [_CIDR], True, _ip),
    ],
    "isIP": [Overload("is_ip", BOOL, [STR], False, _parses(_parse_ip))],
    "ip.isCanonical": [Overload("ip_is_canonical", BOOL, [STR], False, _is_canonical)],
    "family": [Overload("ip_family", INT, [_IP], True, _ip_test("family"))],
    **{
        name: [Overload(f"ip_{name}", BOOL, [_IP], True, _ip_test(attr))]
        for name, attr in (
            ("isUnspecified", "is_unspecified"),
            ("isLoopback", "is_loopback"),
            ("isLinkLocalMulticast", "is_link_local_multicast"),
            ("isLinkLocalUnicast", "is_link_local_unicast"),
            ("isGlobalUnicast", "is_global_unicast"),
        )
    },
    "cidr": [Overload("string_to_cidr", _CIDR, [STR], False, _cidr)],
    "isCIDR": [Overload("is_cidr", BOOL, [STR], False, _parses(_parse_cidr))],
    "containsIP": [
        Overload("cidr_contains_ip_string", BOOL, [_CIDR, STR], True, _contains_ip),
        Overload("cidr_contains_ip_ip", BOOL, [_CIDR, _IP], True, _contains_ip),
    ],
    "containsCIDR": [
        Overload("cidr_contains_cidr_string", BOOL, [_CIDR, STR], True, _contains_cidr),
        Overload("cidr_contains_cidr", BOOL, [_CIDR, _CIDR], True, _contains_cidr),
    ],
    "prefixLength": [Overload("cidr_prefix_length", INT, [_CIDR], True, _prefix_length)],
    "masked": [Overload("cidr_masked", _CIDR, [_CIDR], True, _masked)],
}
"""The IP and CIDR libraries' functions."""
