"""Container image references, as the container runtime parses a pod's ``image``.

The kubelet hands the string to the runtime, and containerd and CRI-O parse it with
``reference.ParseNormalizedNamed`` of distribution/reference (the OCI distribution grammar,
``regexp.go``, ``normalize.go`` and ``reference.go`` at github.com/distribution/reference
@ v0.6.0). This module follows those three files:

* a reference is ``name[:tag][@digest]``;
* the name is an optional domain (``host[:port]``, a host being DNS components or a bracketed
  IPv6 address) and ``/``, then path components of lower-case letters and digits, joined by
  one ``.``, one or two ``_``, or any run of ``-``; a first component counts as the domain
  only when it holds ``.`` or ``:``, is ``localhost``, or has an upper-case letter
  (``splitDockerDomain``); the path must be lower case and at most 255 characters;
* a tag is a word character and then at most 127 of ``[A-Za-z0-9_.-]``;
* a digest is ``algorithm:hex`` with at least 32 hexadecimal digits; of the algorithms,
  opencontainers/go-digest (``algorithm.go`` @ v1.0.0) knows sha256, sha384 and sha512, with
  64, 96 and 128 lower-case digits;
* a 64-digit hexadecimal string alone is refused (it reads as an image id).

Go's ``\\w`` is ASCII, so every class here is spelt out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ImageReference", "ImageReferenceError", "parse_image_reference"]

_ALPHANUMERIC = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|[-]+)"
_PATH_COMPONENT = re.compile(_ALPHANUMERIC + r"(?:" + _SEPARATOR + _ALPHANUMERIC + r")*")
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = re.compile(
    r"(?:" + _DOMAIN_COMPONENT + r"(?:\." + _DOMAIN_COMPONENT + r")*|\[[a-fA-F0-9:]+\])"
    r"(?::[0-9]+)?"
)
_TAG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}")
_DIGEST = re.compile(
    r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
)
_IDENTIFIER = re.compile(r"[a-f0-9]{64}")
_DIGEST_LENGTHS = {"sha256": 64, "sha384": 96, "sha512": 128}
_PATH_MAX = 255


@dataclass(frozen=True)
class ImageReference:
    """A parsed reference: the domain (empty for Docker Hub's short form), the path, the tag
    and the digest (each empty when absent)."""

    domain: str
    path: str
    tag: str
    digest: str


class ImageReferenceError(ValueError):
    """Why a string is not an image reference, in words a user can act on."""


def _split_domain(name: str) -> tuple[str, str]:
    """``splitDockerDomain``: the domain (or "") and the repository path."""
    first, slash, rest = name.partition("/")
    if slash and (first == "localhost" or any(c in first for c in ".:")
                  or first.lower() != first):
        return first, rest
    return "", name


def parse_image_reference(value: str) -> ImageReference:
    """Parse ``value`` as the container runtime does; raise :class:`ImageReferenceError`."""
    if not value:
        raise ImageReferenceError("the image reference is empty")
    if _IDENTIFIER.fullmatch(value):
        raise ImageReferenceError("a 64-digit hexadecimal string is an image id, not a "
                                  "reference: give the repository")
    rest, at, digest = value.partition("@")
    if at and not _DIGEST.fullmatch(digest):
        raise ImageReferenceError(f"digest {digest[:80]!r} is not 'algorithm:hex'")
    if at:
        algorithm, _, hexdigits = digest.partition(":")
        length = _DIGEST_LENGTHS.get(algorithm)
        if length is None:
            raise ImageReferenceError(
                f"digest algorithm {algorithm!r} is not one of "
                f"{', '.join(_DIGEST_LENGTHS)}")
        if len(hexdigits) != length or hexdigits.lower() != hexdigits:
            raise ImageReferenceError(
                f"a {algorithm} digest is {length} lower-case hexadecimal digits")
    domain, path = _split_domain(rest)
    tag = ""
    last = path.rsplit("/", 1)[-1]
    if ":" in last:
        path, _, tag = path.rpartition(":")
        if not _TAG.fullmatch(tag):
            raise ImageReferenceError(
                f"tag {tag[:80]!r} is not a letter, digit or '_' followed by at most 127 of "
                "letters, digits, '_', '.' and '-'")
    if domain and not _DOMAIN.fullmatch(domain):
        raise ImageReferenceError(f"registry {domain[:80]!r} is not a host name with an "
                                  "optional port")
    if path.lower() != path:
        raise ImageReferenceError(f"repository {path[:80]!r} must be lower case")
    for component in path.split("/"):
        if not _PATH_COMPONENT.fullmatch(component):
            shown = component[:80] or "(empty)"
            raise ImageReferenceError(
                f"path component {shown!r} is not lower-case letters and digits joined by "
                "'.', '_', '__' or '-' (no empty components, no '..')")
    if len(path) > _PATH_MAX:
        raise ImageReferenceError(f"the repository path is longer than {_PATH_MAX} characters")
    return ImageReference(domain, path, tag, digest)
