"""SHA-256 digests of files and folders, read as raw bytes without parsing anything: what
the fleet input digest and the pre-build key hash of gen's own data and the user's folders."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from gen.caches import once
from gen.emit.cache.env import GEN_PACKAGE

__all__ = [
    "BuiltinDigest",
    "NoDigest",
    "builtin_digest",
    "builtin_templates",
    "file_sha256",
    "tree_digest",
]

BuiltinDigest = tuple[list[tuple[str, str]], list[tuple[str, str]]]
"""The built-in templates' and gen's data files' :func:`tree_digest`."""


class NoDigest(Exception):
    """An input the digest cannot vouch for (a link, an unreadable or oversized file)."""


def tree_digest(folder: Path) -> list[tuple[str, str]]:
    """(relative path, SHA-256) of every file under ``folder``, sorted; any link or
    unreadable entry raises :class:`NoDigest`."""
    entries: list[tuple[str, str]] = []

    def walk(path: str, prefix: str) -> None:
        try:
            with os.scandir(path) as it:
                items = sorted(it, key=lambda e: e.name)
        except OSError:
            raise NoDigest(path) from None
        for entry in items:
            rel = prefix + entry.name
            if entry.is_symlink():
                raise NoDigest(entry.path)
            if entry.is_dir(follow_symlinks=False):
                walk(entry.path, rel + "/")
            elif entry.is_file(follow_symlinks=False):
                entries.append((os.fsencode(rel).hex(), file_sha256(entry.path)))
            else:
                raise NoDigest(entry.path)

    walk(os.fspath(folder), "")
    return entries


def file_sha256(path: str | Path, limit: int | None = None) -> str:
    """The hex SHA-256 of a file's bytes; :class:`NoDigest` when it cannot be read or
    holds more than ``limit`` bytes."""
    try:
        with open(path, "rb") as handle:  # noqa: PTH123 - str paths
            data = handle.read() if limit is None else handle.read(limit + 1)
    except OSError:
        raise NoDigest(os.fspath(path)) from None
    if limit is not None and len(data) > limit:
        raise NoDigest(os.fspath(path))
    return hashlib.sha256(data).hexdigest()


def builtin_templates() -> Path:
    """:data:`gen.emit.render.BUILTIN_TEMPLATES`, found the same way without importing the
    renderer (and Jinja2) on the fast path; a test keeps the two equal."""
    packaged = GEN_PACKAGE / "templates"
    return packaged if packaged.is_dir() else GEN_PACKAGE.parent / "templates"


@once
def builtin_digest() -> BuiltinDigest | None:
    """The built-in templates and gen's data files (catalogs, CRD schemas): read by every
    build and render, but not ``.py`` files, so the code digest does not see them."""
    try:
        return tree_digest(builtin_templates()), tree_digest(GEN_PACKAGE / "data")
    except NoDigest:
        return None
