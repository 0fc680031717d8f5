"""gen.k8s.netip: Go's netip parser and printer, checked against Python's ipaddress and against
the error texts of golang/go src/net/netip/netip.go (Go 1.23 and later)."""

from __future__ import annotations

import ipaddress

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gen.k8s.netip import NetIPError, parse_addr, parse_prefix


@settings(derandomize=True, max_examples=400)
@given(st.integers(min_value=0, max_value=(1 << 128) - 1))
def test_ipv6_round_trip_is_rfc5952(value: int) -> None:
    """Any IPv6 address, written out in full or compressed, parses to the same address and
    prints in RFC 5952 form (as Python's ipaddress does, but for IPv4-mapped addresses)."""
    address = ipaddress.IPv6Address(value)
    for text in (address.exploded, address.compressed, address.exploded.upper()):
        parsed = parse_addr(text)
        assert parsed.octets == address.packed
        if address.ipv4_mapped is None:
            assert str(parsed) == address.compressed
        else:
            assert str(parsed) == f"::ffff:{address.ipv4_mapped}"


@settings(derandomize=True, max_examples=200)
@given(st.integers(min_value=0, max_value=(1 << 32) - 1))
def test_ipv4_round_trip(value: int) -> None:
    address = ipaddress.IPv4Address(value)
    parsed = parse_addr(str(address))
    assert (parsed.octets, str(parsed), parsed.family) == (address.packed, str(address), 4)


@settings(derandomize=True, max_examples=200)
@given(st.integers(min_value=0, max_value=(1 << 32) - 1), st.integers(0, 32))
def test_prefix_masking_and_containment(value: int, bits: int) -> None:
    network = ipaddress.IPv4Network((value, bits), strict=False)
    prefix = parse_prefix(f"{ipaddress.IPv4Address(value)}/{bits}")
    assert str(prefix.masked()) == str(network)
    assert prefix.contains(parse_addr(str(network.network_address)))
    assert prefix.contains(parse_addr(str(network.broadcast_address)))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", 'ParseAddr(""): unable to parse IP'),
        ("1.2.3", 'ParseAddr("1.2.3"): IPv4 address too short'),
        ("1.2.3.4.5", 'ParseAddr("1.2.3.4.5"): IPv4 address too long'),
        ("1.2.3.256", 'ParseAddr("1.2.3.256"): IPv4 field has value >255'),
        ("1.2.3.04", 'ParseAddr("1.2.3.04"): IPv4 field has octet with leading zero'),
        ("1..2.3", 'ParseAddr("1..2.3"): IPv4 field must have at least one digit (at ".2.3")'),
        ("1.2.3.a", 'ParseAddr("1.2.3.a"): unexpected character (at "a")'),
        ("%eth0", 'ParseAddr("%eth0"): missing IPv6 address'),
        ("fe80::1%", 'ParseAddr("fe80::1%"): zone must be a non-empty string'),
        ("1::2::3", 'ParseAddr("1::2::3"): multiple :: in address (at ":3")'),
        ("12345::", 'ParseAddr("12345::"): each group must have 4 or less digits '
         '(at "12345::")'),
        ("1:2:3:4:5:6:7", 'ParseAddr("1:2:3:4:5:6:7"): address string too short'),
        ("1:2:3:4:5:6:7:8:9", 'ParseAddr("1:2:3:4:5:6:7:8:9"): trailing garbage after address '
         '(at "9")'),
        ("1:2:3:4::5:6:7:8", 'ParseAddr("1:2:3:4::5:6:7:8"): the :: must expand to at least one '
         'field of zeros'),
        ("1:2", 'ParseAddr("1:2"): address string too short'),
        ("1:", 'ParseAddr("1:"): colon must be followed by more characters (at ":")'),
        ("1:2:3:4:5:6:1.2.3.4x", 'ParseAddr("1:2:3:4:5:6:1.2.3.4x"): unexpected character '
         '(at "x")'),
        ("1:2:3:1.2.3.4", 'ParseAddr("1:2:3:1.2.3.4"): embedded IPv4 address must replace the '
         'final 2 fields of the address (at "1.2.3.4")'),
    ],
)
def test_go_error_messages(text: str, message: str) -> None:
    with pytest.raises(NetIPError) as info:
        parse_addr(text)
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1.2.3.4", 'netip.ParsePrefix("1.2.3.4"): no \'/\''),
        ("1.2.3.4/", 'netip.ParsePrefix("1.2.3.4/"): bad bits after slash: ""'),
        ("1.2.3.4/01", 'netip.ParsePrefix("1.2.3.4/01"): bad bits after slash: "01"'),
        ("1.2.3.4/-1", 'netip.ParsePrefix("1.2.3.4/-1"): bad bits after slash: "-1"'),
        ("1.2.3.4/33", 'netip.ParsePrefix("1.2.3.4/33"): prefix length out of range'),
        ("1.2.3.4/+5", 'netip.ParsePrefix("1.2.3.4/+5"): bad bits after slash: "+5"'),
        ("1.2.3.4/99999999999999999999999", 'netip.ParsePrefix("1.2.3.4/99999999999999999999999"): '
         'bad bits after slash: "99999999999999999999999"'),
        ("::/129", 'netip.ParsePrefix("::/129"): prefix length out of range'),
        ("fe80::1%eth0/64", 'netip.ParsePrefix("fe80::1%eth0/64"): IPv6 zones cannot be present '
         "in a prefix"),
        ("1.2.3/8", 'netip.ParsePrefix("1.2.3/8"): ParseAddr("1.2.3"): IPv4 address too short'),
    ],
)
def test_go_prefix_messages(text: str, message: str) -> None:
    with pytest.raises(NetIPError) as info:
        parse_prefix(text)
    assert str(info.value) == message


def test_address_classes() -> None:
    """Go's Is* predicates on the addresses Kubernetes' ip.go documents."""
    assert parse_addr("0.0.0.0").is_unspecified and parse_addr("::").is_unspecified
    assert parse_addr("127.0.0.1").is_loopback and parse_addr("::1").is_loopback
    assert parse_addr("224.0.0.1").is_link_local_multicast
    assert not parse_addr("224.0.1.1").is_link_local_multicast
    assert parse_addr("ff02::1").is_link_local_multicast
    assert not parse_addr("fd00::1").is_link_local_multicast
    assert parse_addr("169.254.169.254").is_link_local_unicast
    assert parse_addr("fe80::1").is_link_local_unicast
    assert not parse_addr("fd80::1").is_link_local_unicast
    assert parse_addr("192.168.0.1").is_global_unicast
    assert not parse_addr("255.255.255.255").is_global_unicast
    assert parse_addr("2001:db8::abcd").is_global_unicast
    assert not parse_addr("ff00::1").is_global_unicast
