from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gen.errors import QuantityError
from gen.k8s.quantity import (
    Quantity,
    QuantityFormat,
    add_amounts,
    amount_as_int64,
    compare_quantities,
    format_quantity,
    int64_amount,
    parse_quantity,
)

SUFFIXES = ["n", "u", "m", "", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("81559Mi", Decimal(81559 * 2**20)),
        ("80Gi", Decimal(80 * 2**30)),
        ("1Ki", Decimal(1024)),
        ("1Ei", Decimal(2**60)),
        ("500m", Decimal("0.5")),
        ("100n", Decimal("1e-7")),
        ("3u", Decimal("3e-6")),
        ("1.5", Decimal("1.5")),
        ("2k", Decimal(2000)),
        ("1M", Decimal(10**6)),
        ("1G", Decimal(10**9)),
        ("1T", Decimal(10**12)),
        ("1P", Decimal(10**15)),
        ("1E", Decimal(10**18)),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("25e-1", Decimal("2.5")),
        (".5Gi", Decimal(2**29)),
        ("1.", Decimal(1)),
        ("-1Ki", Decimal(-1024)),
        ("+3k", Decimal(3000)),
        ("0", Decimal(0)),
    ],
)
def test_parse_exact_value(text: str, value: Decimal) -> None:
    """Every suffix family parses to its exact decimal value."""
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["", "abc", "1Kb", "1 Gi", "--1", "1ki", "1.2.3", "1e4294967297"])
def test_parse_rejects_malformed(text: str) -> None:
    """Strings outside the Kubernetes quantity grammar raise QuantityError."""
    with pytest.raises(
        QuantityError,
        match=r"quantities must match the regular expression|unable to parse quantity's suffix",
    ):
        parse_quantity(text)


@pytest.mark.parametrize("text", [".", "-.", "+", "-", "e3", "Gi", "+0.0Ki"])
def test_digitless_quantities_are_zero(text: str) -> None:
    """apimachinery's scanner reads a sign, a dot or a bare suffix as 0."""
    assert parse_quantity(text) == 0


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("81559Mi", "81559Mi"),
        ("1024Mi", "1Gi"),
        ("1536", "1536"),
        ("1.5", "1500m"),
        ("1000m", "1"),
        ("0.5Gi", "512Mi"),
        ("1e3", "1e3"),
        ("1.5e3", "1500"),
        ("1500k", "1500k"),
        ("2000k", "2M"),
        ("0.1n", "1n"),
        ("0Gi", "0"),
        ("-1536Ki", "-1536Ki"),
        ("100Gi", "100Gi"),
    ],
)
def test_canonical_format(text: str, canonical: str) -> None:
    """Formatting keeps the suffix family and picks Kubernetes' canonical suffix."""
    assert str(Quantity.parse(text)) == canonical


def test_binary_below_1024_falls_back_to_decimal() -> None:
    """A binary quantity under 1Ki or with a fraction is written in decimal SI."""
    assert format_quantity(Decimal(512), QuantityFormat.BINARY_SI) == "512"
    assert format_quantity(Decimal("1.5"), QuantityFormat.BINARY_SI) == "1500m"


def test_quantity_equality_is_semantic() -> None:
    """1Gi equals 1024Mi and hashes alike, whatever the spelling."""
    assert Quantity.parse("1Gi") == Quantity.parse("1024Mi")
    assert hash(Quantity.parse("1Gi")) == hash(Quantity.parse("1073741824"))
    assert Quantity.parse("81559Mi") < Quantity.parse("80Gi")


def test_compare_quantities_sign() -> None:
    """compare_quantities returns -1, 0 or 1."""
    assert compare_quantities(parse_quantity("1k"), parse_quantity("1Ki")) == -1
    assert compare_quantities(parse_quantity("1k"), parse_quantity("1000")) == 0
    assert compare_quantities(parse_quantity("2"), parse_quantity("1500m")) == 1


quantity_texts = st.builds(
    lambda sign, mantissa, suffix: f"{sign}{mantissa}{suffix}",
    st.sampled_from(["", "-", "+"]),
    st.integers(min_value=0, max_value=10**12),
    st.sampled_from(SUFFIXES),
)
nano_decimals = st.builds(
    lambda n, places: Decimal(n).scaleb(-places),
    st.integers(min_value=-(10**15), max_value=10**15),
    st.integers(min_value=0, max_value=9),
)


@given(quantity_texts)
def test_roundtrip_text(text: str) -> None:
    """Canonical text parses back to the same value and is a fixed point of formatting."""
    quantity = Quantity.parse(text)
    again = Quantity.parse(str(quantity))
    assert again == quantity
    assert str(again) == str(quantity)


@given(nano_decimals, st.sampled_from(list(QuantityFormat)))
def test_roundtrip_value(value: Decimal, fmt: QuantityFormat) -> None:
    """Any value with nano precision survives format then parse exactly, in every family."""
    assert parse_quantity(format_quantity(value, fmt)) == value


@given(quantity_texts, quantity_texts)
def test_ordering_consistent(left: str, right: str) -> None:
    """Ordering by value agrees with compare_quantities and survives canonical formatting."""
    a, b = Quantity.parse(left), Quantity.parse(right)
    assert compare_quantities(a.value, b.value) == (a > b) - (a < b)
    a2, b2 = Quantity.parse(str(a)), Quantity.parse(str(b))
    assert (a < b) == (a2 < b2)
    assert (a == b) == (a2 == b2)


@pytest.mark.parametrize("text", ["1" * 300, "1" * 250 + "Ki", "9" * 260 + "e3"])
def test_long_mantissas_parse_exactly(text: str) -> None:
    """A long mantissa is exact (binary values are capped at 2^63-1, as apimachinery does)."""
    value = parse_quantity(text)
    if text.endswith("Ki"):
        assert value == (1 << 63) - 1
    else:
        assert value == int(text.removesuffix("e3")) * 10 ** (3 if text.endswith("e3") else 0)


def test_parse_rounds_up_to_nano() -> None:
    """apimachinery rounds a parsed value up (away from zero) to nano precision."""
    assert parse_quantity("0.0000000001") == parse_quantity("1n")
    assert parse_quantity("-3.001n") == parse_quantity("-4n")
    assert parse_quantity("1e-5000") == parse_quantity("1n")


@pytest.mark.parametrize(
    ("text", "amount"),
    [
        # ParseQuantity's fast path (apimachinery pkg/api/resource/quantity.go @ v0.36.0)
        ("0", (0, 0)),
        ("1000m", (1000, -3)),
        ("1.0", (10, -1)),
        ("0.0", (0, -1)),
        ("-1.5k", (-15, 2)),
        ("80Gi", (80 << 30, 0)),
        ("1Ti", (1 << 40, 0)),
        ("1n", (1, -9)),
        ("999999999999999999", (999999999999999999, 0)),  # 18 digits
        ("1e20", (1, 20)),
        # inf.Dec: a binary fraction, too many binary digits, 19 decimal digits, below nano
        ("0.5Mi", None),
        ("1Pi", None),
        ("1Ei", None),
        ("1000000000000000000", None),
        ("0.1n", None),
    ],
)
def test_int64_amount(text: str, amount: tuple[int, int] | None) -> None:
    assert int64_amount(text) == amount
    if amount is not None:
        assert Decimal(amount[0]).scaleb(amount[1]) == parse_quantity(text)


def test_int64_amount_rejects_what_parse_rejects() -> None:
    with pytest.raises(QuantityError):
        int64_amount("1Mo")


@pytest.mark.parametrize(
    ("amount", "integer"),
    [((5, 0), 5), ((5, 3), 5000), ((1000, -3), None), (None, None), ((10, 18), None)],
)
def test_amount_as_int64(amount: tuple[int, int] | None, integer: int | None) -> None:
    assert amount_as_int64(amount) == integer


def test_add_amounts_moves_to_dec_on_overflow() -> None:
    assert add_amounts((1, 0), (1, -3)) == (1001, -3)
    assert add_amounts((1, 0), None) is None
    assert add_amounts(((1 << 63) - 1, 0), (1, 0)) is None
