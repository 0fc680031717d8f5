from __future__ import annotations

import itertools
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gen.errors import VersionError
from gen.k8s.semver import MAX_PART, Version, parse_version, version_or_reason

DERANDOMIZED = settings(
    max_examples=int(os.environ.get("GEN_FUZZ_EXAMPLES", "300")),
    deadline=None,
    derandomize="GEN_FUZZ_EXAMPLES" not in os.environ,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
"""Fixed examples in CI; ``GEN_FUZZ_EXAMPLES=N`` for a longer, random run."""


# --- strict parsing: blang/semver v4 Parse --------------------------------------------------


@pytest.mark.parametrize(
    ("text", "version"),
    [
        ("1.2.3", Version(1, 2, 3)),
        ("0.0.0", Version(0, 0, 0)),
        ("1.2.3-alpha.1+123.456", Version(1, 2, 3, ("alpha", "1"), ("123", "456"))),
        ("1.2.3-alpha.b-eta+123.b-uild", Version(1, 2, 3, ("alpha", "b-eta"), ("123", "b-uild"))),
        ("1.0.0-0a.--", Version(1, 0, 0, ("0a", "--"))),
        ("1.0.0+001.0", Version(1, 0, 0, (), ("001", "0"))),  # build may have leading zeros
        ("1.0.0-a-b+c-d", Version(1, 0, 0, ("a-b",), ("c-d",))),
        ("1.0.0+b-c", Version(1, 0, 0, (), ("b-c",))),  # the first "+" starts the build
        ("580.65.6", Version(580, 65, 6)),
    ],
)
def test_parse_strict(text: str, version: Version) -> None:
    """Valid strings parse to their parts; build metadata is kept but never compares."""
    parsed = parse_version(text)
    assert parsed == version
    assert (parsed.prerelease, parsed.build) == (version.prerelease, version.build)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "Version string empty"),
        ("1.0", "No Major.Minor.Patch elements found"),
        ("v1.0.0", 'Invalid character(s) found in major number "v1"'),
        ("01.1.1", 'Major number must not contain leading zeroes "01"'),
        ("1.01.1", 'Minor number must not contain leading zeroes "01"'),
        ("1.1.01", 'Patch number must not contain leading zeroes "01"'),
        ("1..1", 'strconv.ParseUint: parsing "": invalid syntax'),
        ("1.1.1-01", 'Numeric PreRelease version must not contain leading zeroes "01"'),
        ("1.1.1-", "Prerelease is empty"),
        ("0.0.0-!", 'Invalid character(s) found in prerelease "!"'),
        ("0.0.0+!", 'Invalid character(s) found in build meta data "!"'),
        ("0.0.0-alpha+test.", "Build meta data is empty"),
        ("1.0.0+a+b", 'Invalid character(s) found in build meta data "a+b"'),
        ("1.2.3.4", 'Invalid character(s) found in patch number "3.4"'),
        (" 1.0.0", 'Invalid character(s) found in major number " 1"'),
        ("1.0.0\t", 'Invalid character(s) found in patch number "0\\t"'),
        ("١.0.0", 'Invalid character(s) found in major number "١"'),  # ASCII digits only
        ("570.124.06", 'Patch number must not contain leading zeroes "06"'),
    ],
)
def test_parse_strict_rejects_with_blangs_words(text: str, reason: str) -> None:
    """Invalid strings are rejected with blang's message, which Kubernetes reports."""
    assert version_or_reason(text) == reason
    with pytest.raises(VersionError, match="as a semantic version: ") as err:
        parse_version(text)
    assert err.value.message.endswith(reason)


@pytest.mark.parametrize("template", ["{}.0.0", "0.{}.0", "0.0.{}", "0.0.0-{}", "0.0.0-a.{}"])
def test_64_bit_limit(template: str) -> None:
    """Each number is a Go uint64: 2^64-1 parses, 2^64 is out of range."""
    assert isinstance(version_or_reason(template.format(MAX_PART)), Version)
    reason = version_or_reason(template.format(MAX_PART + 1))
    assert reason == f'strconv.ParseUint: parsing "{MAX_PART + 1}": value out of range'
    huge = "9" * 5000  # past Python's int() digit limit: still an ordinary rejection
    assert "value out of range" in str(version_or_reason(template.format(huge)))


def test_numeric_identifier_past_64_bits_is_invalid_not_alphanumeric() -> None:
    """blang rejects a too-large numeric pre-release; it does not fall back to a string."""
    with pytest.raises(VersionError, match="value out of range"):
        parse_version("1.1.1-20000000000000000000")


# --- normalize mode: Kubernetes' normalizeAndParse ------------------------------------------


@pytest.mark.parametrize(
    ("text", "canonical"),
    [
        ("v1.0.0", "1.0.0"),
        ("1", "1.0.0"),
        ("1.1", "1.1.0"),
        ("v01.01", "1.1.0"),
        ("01.02.03", "1.2.3"),
        ("000.0.03", "0.0.3"),
        ("1.2.00", "1.2.0"),
        ("1.2.0-alpha", "1.2.0-alpha"),
        ("1.2.03-rc.1+b", "1.2.3-rc.1+b"),
        ("580.95.05", "580.95.5"),
        ("9.0", "9.0.0"),
        ("1.2.-1", "1.2.0-1"),  # "-1" gains a leading 0, as Kubernetes does
        ("1.2.+b", "1.2.0+b"),
    ],
)
def test_normalize(text: str, canonical: str) -> None:
    """semver(s, true): one leading v dropped, leading zeros stripped, minor/patch padded."""
    assert str(parse_version(text, normalize=True)) == canonical


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("1.0-beta", "short version cannot contain PreRelease/Build meta data"),
        ("1.0+abc", "short version cannot contain PreRelease/Build meta data"),
        # Only the last of fewer than three parts is checked for "-"/"+": here it is "1".
        ("1-rc.1", 'Invalid character(s) found in major number "1-rc"'),
        ("", 'strconv.ParseUint: parsing "": invalid syntax'),
        # A part that does not start with a digit gains a "0", as in Kubernetes.
        ("vv1.0.0", 'Invalid character(s) found in major number "0v1"'),
        ("V1.0.0", 'Invalid character(s) found in major number "0V1"'),
        (" 1.0.0", 'Invalid character(s) found in major number "0 1"'),  # no whitespace trim
        ("1.0.0 ", 'Invalid character(s) found in patch number "0 "'),
        ("1.2.3-01", 'Numeric PreRelease version must not contain leading zeroes "01"'),
        ("1.x", 'Invalid character(s) found in minor number "x"'),  # one byte: kept
        ("1.2.3.4", 'Invalid character(s) found in patch number "3.4"'),
    ],
)
def test_normalize_rejects(text: str, reason: str) -> None:
    """What stays invalid in Kubernetes' normalize mode, in its words."""
    assert version_or_reason(text, normalize=True) == reason


def test_strict_and_normalize_are_cached_apart() -> None:
    """The memo key includes the mode."""
    assert isinstance(version_or_reason("1.2", normalize=True), Version)
    assert version_or_reason("1.2") == "No Major.Minor.Patch elements found"


# --- ordering: blang Compare ----------------------------------------------------------------


def test_ordering_follows_semver_precedence() -> None:
    """Spec example 11 of semver 2.0.0, in order; build metadata never compares."""
    chain = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "2.0.0",
        "2.1.0",
        "2.1.1",
    ]
    versions = [parse_version(v) for v in chain]
    shuffled = versions[1::2] + versions[::2]
    assert sorted(shuffled) == versions
    for low, high in itertools.pairwise(versions):
        assert (low.compare(high), high.compare(low)) == (-1, 1)
    assert parse_version("1.0.0+1.2.3") == parse_version("1.0.0")
    assert hash(parse_version("1.0.0+1.2.3")) == hash(parse_version("1.0.0"))
    assert parse_version("1.0.0+b").compare(parse_version("1.0.0+a")) == 0


def test_numeric_identifiers_compare_as_numbers_alphanumerics_bytewise() -> None:
    """2 < 10 numerically; 'B' < 'a' byte-wise; numeric before alphanumeric."""
    assert parse_version("1.0.0-2") < parse_version("1.0.0-10") < parse_version("1.0.0-0a")
    assert parse_version("1.0.0-B") < parse_version("1.0.0-a")
    assert parse_version(f"1.0.0-{MAX_PART}") > parse_version("1.0.0-1")


# --- canonical form: blang String (its TestStringer table) ----------------------------------


@pytest.mark.parametrize(
    ("version", "text"),
    [
        (Version(1, 2, 3), "1.2.3"),
        (Version(0, 0, 1), "0.0.1"),
        (Version(0, 0, 1, ("alpha", "preview"), ("123", "456")), "0.0.1-alpha.preview+123.456"),
        (Version(1, 2, 3, ("alpha", "1"), ("123", "456")), "1.2.3-alpha.1+123.456"),
        (Version(1, 2, 3, ("alpha", "1")), "1.2.3-alpha.1"),
        (Version(1, 2, 3, (), ("123", "456")), "1.2.3+123.456"),
        (Version(1, 2, 3, ("alpha", "b-eta"), ("123", "b-uild")), "1.2.3-alpha.b-eta+123.b-uild"),
        (Version(1, 2, 3, (), ("123", "b-uild")), "1.2.3+123.b-uild"),
        (Version(1, 2, 3, ("alpha", "b-eta")), "1.2.3-alpha.b-eta"),
    ],
)
def test_canonical_string(version: Version, text: str) -> None:
    """str() is blang's Version.String (blang/semver v4.0.0 TestStringer)."""
    assert str(version) == text


_NUMBER = st.one_of(
    st.integers(0, 20), st.integers(0, MAX_PART), st.sampled_from([MAX_PART, 1 << 63])
)
_ALNUM = st.text("0123456789abcXYZ-", min_size=1, max_size=6)
_PRE_ID = st.one_of(_NUMBER.map(str), _ALNUM.filter(lambda s: not s.isdigit()))
VERSIONS = st.builds(
    Version,
    _NUMBER,
    _NUMBER,
    _NUMBER,
    st.lists(_PRE_ID, max_size=3).map(tuple),
    st.lists(_ALNUM, max_size=3).map(tuple),
)


@DERANDOMIZED
@given(VERSIONS)
def test_canonical_string_parses_back(version: Version) -> None:
    """The canonical string of a version parses (strictly and normalized) to the same version."""
    text = str(version)
    parsed = parse_version(text)
    assert parsed == version
    assert (parsed.prerelease, parsed.build) == (version.prerelease, version.build)
    assert str(parsed) == text
    assert parse_version(text, normalize=True) == version


@DERANDOMIZED
@given(st.text(alphabet="0123456789.-+vab ", max_size=12))
def test_parse_never_raises_anything_but_version_error(text: str) -> None:
    """Any string either parses, to a version whose canonical form parses back, or is a
    VersionError; normalize mode accepts at least what strict mode accepts."""
    for normalize in (False, True):
        result = version_or_reason(text, normalize=normalize)
        if isinstance(result, Version):
            assert parse_version(str(result)) == result
    strict = version_or_reason(text)
    if isinstance(strict, Version) and not text.startswith("v"):
        assert version_or_reason(text, normalize=True) == strict
