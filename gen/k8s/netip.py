"""IP addresses and prefixes as Go's ``net/netip`` parses and prints them.

Kubernetes' CEL IP and CIDR libraries (kubernetes/apiserver ``pkg/cel/library/ip.go`` and
``cidr.go`` @ v0.36.0) call ``netip.ParseAddr`` / ``netip.ParsePrefix`` and then refuse zones
and IPv4-mapped IPv6 addresses; the run-time error of a bad string is Go's message, which this
module reproduces rule for rule (golang/go ``src/net/netip/netip.go`` as of Go 1.23 and later:
``parseIPv4Fields``, ``parseIPv6``, ``ParsePrefix``, the ``Is*`` predicates; ``Addr.String``
prints RFC 5952 form).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

__all__ = ["Addr", "NetIPError", "Prefix", "parse_addr", "parse_prefix"]


class NetIPError(ValueError):
    """A string Go's netip refuses; ``str()`` is Go's error text."""


def _quote(text: str) -> str:
    # strconv.Quote for the ASCII text these errors quote.
    return json.dumps(text, ensure_ascii=False)


def _addr_error(whole: str, msg: str, at: str = "") -> NetIPError:
    tail = f" (at {_quote(at)})" if at else ""
    return NetIPError(f"ParseAddr({_quote(whole)}): {msg}{tail}")


@dataclass(frozen=True)
class Addr:
    """An IPv4 (4 bytes) or IPv6 (16 bytes) address; ``zone`` only for IPv6."""

    octets: bytes
    zone: str = ""

    @property
    def is4(self) -> bool:
        return len(self.octets) == 4

    @property
    def is4in6(self) -> bool:
        return len(self.octets) == 16 and self.octets[:12] == b"\0" * 10 + b"\xff\xff"

    @property
    def family(self) -> int:
        return 4 if self.is4 else 6

    def _u16(self, i: int) -> int:
        return int.from_bytes(self.octets[2 * i : 2 * i + 2], "big")

    @property
    def is_unspecified(self) -> bool:
        return not any(self.octets)

    @property
    def is_loopback(self) -> bool:
        if self.is4:
            return self.octets[0] == 127
        return self.octets == b"\0" * 15 + b"\x01"

    @property
    def is_multicast(self) -> bool:
        return self.octets[0] & 0xF0 == 0xE0 if self.is4 else self.octets[0] == 0xFF

    @property
    def is_link_local_multicast(self) -> bool:
        if self.is4:
            return self.octets[:3] == b"\xe0\0\0"
        return self._u16(0) & 0xFF0F == 0xFF02

    @property
    def is_link_local_unicast(self) -> bool:
        if self.is4:
            return self.octets[:2] == b"\xa9\xfe"
        return self._u16(0) & 0xFFC0 == 0xFE80

    @property
    def is_global_unicast(self) -> bool:
        addr = Addr(self.octets[12:]) if self.is4in6 else self
        if addr.is4 and addr.octets in (b"\0\0\0\0", b"\xff\xff\xff\xff"):
            return False
        return not (
            (not addr.is4 and addr.is_unspecified)
            or addr.is_loopback
            or addr.is_multicast
            or addr.is_link_local_unicast
        )

    def __str__(self) -> str:
        if self.is4:
            return ".".join(str(b) for b in self.octets)
        if self.is4in6:
            text = "::ffff:" + ".".join(str(b) for b in self.octets[12:])
        else:
            text = _format6([self._u16(i) for i in range(8)])
        return f"{text}%{self.zone}" if self.zone else text


def _format6(fields: list[int]) -> str:
    # The longest run of two or more zero fields becomes "::" (the first of equal runs).
    best_start, best_len, start = -1, 1, -1
    for i, value in enumerate([*fields, 1]):
        if value == 0 and start < 0:
            start = i
        elif value != 0 and start >= 0:
            if i - start > best_len:
                best_start, best_len = start, i - start
            start = -1
    if best_start < 0:
        return ":".join(f"{v:x}" for v in fields)
    head = ":".join(f"{v:x}" for v in fields[:best_start])
    tail = ":".join(f"{v:x}" for v in fields[best_start + best_len :])
    return f"{head}::{tail}"


def _ipv4_fields(whole: str, s: str) -> bytes:
    fields: list[int] = []
    val = digits = 0
    for i, ch in enumerate(s):
        if "0" <= ch <= "9":
            if digits == 1 and val == 0:
                raise _addr_error(whole, "IPv4 field has octet with leading zero")
            val = val * 10 + ord(ch) - 48
            digits += 1
            if val > 255:
                raise _addr_error(whole, "IPv4 field has value >255")
        elif ch == ".":
            if i == 0 or i == len(s) - 1 or s[i - 1] == ".":
                raise _addr_error(whole, "IPv4 field must have at least one digit", s[i:])
            if len(fields) == 3:
                raise _addr_error(whole, "IPv4 address too long")
            fields.append(val)
            val = digits = 0
        else:
            raise _addr_error(whole, "unexpected character", s[i:])
    if len(fields) < 3:
        raise _addr_error(whole, "IPv4 address too short")
    return bytes([*fields, val])


_HEX = {c: int(c, 16) for c in "0123456789abcdefABCDEF"}


def _ipv6(whole: str) -> Addr:
    s, zone = whole, ""
    if "%" in s:
        s, zone = s.split("%", 1)
        if not zone:
            raise _addr_error(whole, "zone must be a non-empty string")
    ip = bytearray(16)
    ellipsis = -1
    if s.startswith("::"):
        ellipsis, s = 0, s[2:]
        if not s:
            return Addr(bytes(ip), zone)
    i = 0
    while i < 16:
        acc, off = _hex_field(whole, s)
        if off < len(s) and s[off] == ".":
            ip[i : i + 4] = _embedded_ipv4(whole, s, i, ellipsis)
            s, i = "", i + 4
            break
        ip[i], ip[i + 1] = acc >> 8, acc & 0xFF
        i += 2
        s = s[off:]
        if not s:
            break
        if s[0] != ":":
            raise _addr_error(whole, "unexpected character, want colon", s)
        if len(s) == 1:
            raise _addr_error(whole, "colon must be followed by more characters", s)
        s = s[1:]
        if s[0] == ":":
            if ellipsis >= 0:
                raise _addr_error(whole, "multiple :: in address", s)
            ellipsis, s = i, s[1:]
            if not s:
                break
    if s:
        raise _addr_error(whole, "trailing garbage after address", s)
    return Addr(_expand(whole, ip, i, ellipsis), zone)


def _embedded_ipv4(whole: str, s: str, i: int, ellipsis: int) -> bytes:
    """A trailing dotted IPv4 part of an IPv6 address, placed at byte ``i``."""
    if ellipsis < 0 and i != 12:
        raise _addr_error(
            whole, "embedded IPv4 address must replace the final 2 fields of the address", s
        )
    if i + 4 > 16:
        raise _addr_error(
            whole, "too many hex fields to fit an embedded IPv4 at the end of the address", s
        )
    return _ipv4_fields(whole, s)


def _hex_field(whole: str, s: str) -> tuple[int, int]:
    """The value of the hex field that starts ``s`` and its length (Go's inlined loop)."""
    off = acc = 0
    while off < len(s) and s[off] in _HEX:
        acc = (acc << 4) + _HEX[s[off]]
        if off > 3:
            raise _addr_error(whole, "each group must have 4 or less digits", s)
        if acc > 0xFFFF:
            raise _addr_error(whole, "IPv6 field has value >=2^16", s)
        off += 1
    if off == 0:
        raise _addr_error(whole, "each colon-separated field must have at least one digit", s)
    return acc, off


def _expand(whole: str, ip: bytearray, used: int, ellipsis: int) -> bytes:
    """The 16 bytes once ``::`` (at byte ``ellipsis``, -1 if none) stands for the zeros."""
    if used < 16:
        if ellipsis < 0:
            raise _addr_error(whole, "address string too short")
        n = 16 - used
        ip[ellipsis + n : 16] = ip[ellipsis:used]
        ip[ellipsis : ellipsis + n] = bytes(n)
    elif ellipsis >= 0:
        raise _addr_error(whole, "the :: must expand to at least one field of zeros", "")
    return bytes(ip)


def parse_addr(text: str) -> Addr:
    """``netip.ParseAddr``; raises :class:`NetIPError` with Go's message."""
    for ch in text:
        if ch == ".":
            return Addr(_ipv4_fields(text, text))
        if ch == ":":
            return _ipv6(text)
        if ch == "%":
            raise _addr_error(text, "missing IPv6 address")
    raise _addr_error(text, "unable to parse IP")


@dataclass(frozen=True)
class Prefix:
    """An address and a prefix length (not masked: ``192.168.0.1/24`` keeps its host bits)."""

    addr: Addr
    bits: int

    def masked(self) -> Prefix:
        whole = int.from_bytes(self.addr.octets, "big")
        width = len(self.addr.octets) * 8
        mask = ((1 << self.bits) - 1) << (width - self.bits)
        return Prefix(Addr((whole & mask).to_bytes(width // 8, "big")), self.bits)

    def contains(self, addr: Addr) -> bool:
        if addr.zone or len(addr.octets) != len(self.addr.octets):
            return False
        return Prefix(addr, self.bits).masked().addr == self.masked().addr

    def overlaps(self, other: Prefix) -> bool:
        if len(other.addr.octets) != len(self.addr.octets):
            return False
        bits = min(self.bits, other.bits)
        return Prefix(self.addr, bits).masked() == Prefix(other.addr, bits).masked()

    def __str__(self) -> str:
        return f"{self.addr}/{self.bits}"


def parse_prefix(text: str) -> Prefix:
    """``netip.ParsePrefix``; raises :class:`NetIPError` with Go's message."""

    def fail(msg: str) -> NetIPError:
        return NetIPError(f"netip.ParsePrefix({_quote(text)}): {msg}")

    cut = text.rfind("/")
    if cut < 0:
        raise fail("no '/'")
    try:
        addr = parse_addr(text[:cut])
    except NetIPError as err:
        raise fail(str(err)) from None
    if not addr.is4 and addr.zone:
        raise fail("IPv6 zones cannot be present in a prefix")
    bits_text = text[cut + 1 :]
    bad = fail(f"bad bits after slash: {_quote(bits_text)}")
    if len(bits_text) > 1 and not "1" <= bits_text[0] <= "9":
        raise bad
    if not bits_text or not all("0" <= c <= "9" for c in bits_text.lstrip("+-")) or (
        bits_text[0] in "+-" and len(bits_text) == 1
    ):
        raise bad
    bits = int(bits_text)
    if bits > (1 << 63) - 1:  # strconv.Atoi: value out of range
        raise bad
    if not 0 <= bits <= (32 if addr.is4 else 128):
        raise fail("prefix length out of range")
    return Prefix(addr, bits)
