"""Semantic versions as DRA ``version`` attributes and CEL ``semver()`` read them.

Parsing is Kubernetes' CEL semver library (k8s.io/apiserver ``pkg/cel/library/semverlib.go``
at v0.36.0, Kubernetes 1.36; unchanged at v0.37.2), which wraps ``github.com/blang/semver/v4``
v4.0.0:

* **strict** (``semver(s)``, and the DRA driver's ``version`` attributes) is blang's ``Parse``:
  ``MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]``, ASCII digits without leading zeros in the three
  numbers and in numeric pre-release identifiers, identifiers of ``[0-9A-Za-z-]``, and every
  number (major, minor, patch, numeric pre-release identifier) at most 2^64−1 (Go's ``uint64``);
* **normalize** (``semver(s, true)``) is Kubernetes' ``normalizeAndParse``, blang's
  ``ParseTolerant`` without its whitespace trimming: drop one leading ``v``, strip leading zeros
  from each of the first three dot-separated parts, pad a missing minor or patch with ``0`` — but
  a short version may not carry a pre-release or build (``1.0-beta`` stays invalid) — then parse
  strictly. Leading zeros are stripped only in front of the three numbers: ``1.2.3-01`` stays
  invalid.

The messages of :class:`~gen.errors.VersionError` end with blang's wording ("No
Major.Minor.Patch elements found"), which is what Kubernetes reports at run time.

Ordering is blang's ``Compare`` (semver 2.0.0 §11): numeric identifiers compare as numbers and
sort before alphanumeric ones, which compare byte-wise; a release sorts after its pre-releases;
build metadata is ignored by comparison and equality.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from gen.caches import memoize
from gen.errors import VersionError

__all__ = ["MAX_PART", "Version", "parse_version", "version_or_reason"]

MAX_PART = (1 << 64) - 1
"""The largest major, minor, patch or numeric pre-release identifier (Go's ``uint64``)."""

_DIGITS = frozenset("0123456789")
_ALPHANUM = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-") | _DIGITS


def _is_numeric(text: str) -> bool:
    # blang's containsOnly(s, numbers): true for the empty string too.
    return _DIGITS.issuperset(text)


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class Version:
    """A semantic version; ``==``, ``<`` and ``hash`` ignore build metadata."""

    major: int
    minor: int
    patch: int
    prerelease: tuple[str, ...] = ()
    build: tuple[str, ...] = field(default=())

    def __str__(self) -> str:
        """The canonical form (blang's ``Version.String``)."""
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def _key(self) -> tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]:
        # A release sorts after every prerelease of the same core version; numeric
        # identifiers sort before alphanumeric ones and compare numerically; a shorter
        # list of equal identifiers sorts first.
        pre = tuple((0, int(p), "") if p and _is_numeric(p) else (1, 0, p) for p in self.prerelease)
        return (self.major, self.minor, self.patch, 0 if self.prerelease else 1, pre)

    def compare(self, other: Version) -> int:
        """-1, 0 or 1 as this version is lower than, equal to or higher than ``other``."""
        left, right = self._key(), other._key()
        return (left > right) - (left < right)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Version):
            return NotImplemented
        return self._key() == other._key()

    def __lt__(self, other: Version) -> bool:
        return self._key() < other._key()

    def __hash__(self) -> int:
        return hash(self._key())


_GO_ESCAPES = {
    "\a": "\\a",
    "\b": "\\b",
    "\f": "\\f",
    "\n": "\\n",
    "\r": "\\r",
    "\t": "\\t",
    "\v": "\\v",
    "\\": "\\\\",
    '"': '\\"',
}


def _quote(text: str) -> str:
    """Go's ``%q`` of a string, as blang's messages print the offending part."""
    out = []
    for char in text:
        if char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char.isprintable() or char == " ":
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'


class _Invalid(Exception):
    """blang's error for one input; its message is blang's wording."""


def _uint64(text: str) -> int:
    """Go's ``strconv.ParseUint(text, 10, 64)`` on a string of ASCII digits."""
    if not text:
        raise _Invalid(f"strconv.ParseUint: parsing {_quote(text)}: invalid syntax")
    # No leading zeros here: more than 20 digits is out of range (and int() of a very long
    # string would hit Python's digit limit).
    if len(text) > 20 or int(text) > MAX_PART:
        raise _Invalid(f"strconv.ParseUint: parsing {_quote(text)}: value out of range")
    return int(text)


def _number(text: str, what: str) -> int:
    if not _is_numeric(text):
        raise _Invalid(f"Invalid character(s) found in {what} number {_quote(text)}")
    if len(text) > 1 and text[0] == "0":
        raise _Invalid(f"{what.capitalize()} number must not contain leading zeroes {_quote(text)}")
    return _uint64(text)


def _prerelease_identifier(text: str) -> str:
    """blang's ``NewPRVersion``; the identifier in canonical form."""
    if not text:
        raise _Invalid("Prerelease is empty")
    if _is_numeric(text):
        if len(text) > 1 and text[0] == "0":
            raise _Invalid(
                f"Numeric PreRelease version must not contain leading zeroes {_quote(text)}"
            )
        return str(_uint64(text))
    if not _ALPHANUM.issuperset(text):
        raise _Invalid(f"Invalid character(s) found in prerelease {_quote(text)}")
    return text


def _parse(text: str) -> Version:
    """blang/semver v4 ``Parse``, check for check in its order."""
    if not text:
        raise _Invalid("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise _Invalid("No Major.Minor.Patch elements found")
    major = _number(parts[0], "major")
    minor = _number(parts[1], "minor")
    rest = parts[2]
    build: list[str] = []
    prerelease: list[str] = []
    plus = rest.find("+")
    if plus != -1:
        build = rest[plus + 1 :].split(".")
        rest = rest[:plus]
    dash = rest.find("-")
    if dash != -1:
        prerelease = rest[dash + 1 :].split(".")
        rest = rest[:dash]
    patch = _number(rest, "patch")
    pre = tuple(_prerelease_identifier(p) for p in prerelease)
    for identifier in build:
        if not identifier:
            raise _Invalid("Build meta data is empty")
        if not _ALPHANUM.issuperset(identifier):
            raise _Invalid(f"Invalid character(s) found in build meta data {_quote(identifier)}")
    return Version(major, minor, patch, pre, tuple(build))


def _normalized(text: str) -> str:
    """Kubernetes' ``normalizeAndParse`` up to the final ``Parse``."""
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part.encode("utf-8")) > 1:  # Go's len: bytes
            part = part.lstrip("0")
            if not part or part[0] not in _DIGITS:
                part = "0" + part
            parts[i] = part
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise _Invalid("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


@memoize(maxsize=4096)
def version_or_reason(text: str, *, normalize: bool = False) -> Version | str:
    """The version ``text`` spells, or why it is not one in Kubernetes' (blang's) words."""
    try:
        return _parse(_normalized(text) if normalize else text)
    except _Invalid as err:
        return str(err)


def parse_version(text: str, *, normalize: bool = False) -> Version:
    """Parse a semantic version as Kubernetes does; raises :class:`VersionError`."""
    result = version_or_reason(text, normalize=normalize)
    if isinstance(result, str):
        raise VersionError(f"could not parse {text!r} as a semantic version: {result}")
    return result
