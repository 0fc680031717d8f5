"""Semantic versions (semver 2.0.0) as DRA ``version`` attributes and CEL ``semver()`` use them.

Parsing is strict by default, like ``blang/semver/v4.Parse`` behind Kubernetes' CEL semver
library: ``MAJOR.MINOR.PATCH[-PRERELEASE][+BUILD]``, no leading zeros in numeric parts.
``normalize=True`` is Kubernetes' ``semver(s, true)``: a leading ``v`` is dropped, a missing
minor or patch becomes 0 and leading zeros are removed (``v01.2`` → ``1.2.0``).

Ordering follows semver 2.0.0 §11; build metadata is ignored by comparison and equality.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from gen.caches import memoize
from gen.errors import VersionError

__all__ = ["Version", "parse_version"]


_NUM = r"(?:0|[1-9][0-9]*)"
_PRE_ID = r"(?:0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)"
_BUILD_ID = r"[0-9A-Za-z-]+"
_STRICT_RE = re.compile(
    rf"(?P<major>{_NUM})\.(?P<minor>{_NUM})\.(?P<patch>{_NUM})"
    rf"(?:-(?P<pre>{_PRE_ID}(?:\.{_PRE_ID})*))?"
    rf"(?:\+(?P<build>{_BUILD_ID}(?:\.{_BUILD_ID})*))?"
)
_LOOSE_CORE_RE = re.compile(r"v?(?P<core>[0-9]+(?:\.[0-9]+){0,2})(?P<rest>[-+].*)?")


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
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        if self.build:
            text += "+" + ".".join(self.build)
        return text

    def _key(self) -> tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]:
        # A release sorts after every prerelease of the same core version; numeric
        # identifiers sort before alphanumeric ones and compare numerically.
        pre = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in self.prerelease)
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


@memoize(maxsize=4096)
def parse_version(text: str, *, normalize: bool = False) -> Version:
    """Parse a semantic version; raises :class:`VersionError`."""
    candidate = text
    if normalize:
        loose = _LOOSE_CORE_RE.fullmatch(text)
        if loose is not None:
            parts = [str(int(p)) for p in loose["core"].split(".")]
            parts += ["0"] * (3 - len(parts))
            candidate = ".".join(parts) + (loose["rest"] or "")
    match = _STRICT_RE.fullmatch(candidate)
    if match is None:
        raise VersionError(f"could not parse {text!r} as a semantic version")
    return Version(
        int(match["major"]),
        int(match["minor"]),
        int(match["patch"]),
        tuple(match["pre"].split(".")) if match["pre"] else (),
        tuple(match["build"].split(".")) if match["build"] else (),
    )
