"""Where the render cache lives in out/: its folder, the path of each of its files, which
paths are its own, and how gen reads a file there."""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Iterable

__all__ = [
    "CACHE_DIR",
    "CACHE_GITIGNORE",
    "CACHE_GITIGNORE_BYTES",
    "FLEET_RECORD",
    "FORMAT",
    "OWN_FILES",
    "STAT_TABLE",
    "TRUST_FILE",
    "Reach",
    "clusters_of",
    "is_cache_path",
    "read_all",
    "readable",
    "record_path",
]

CACHE_DIR = ".gen-cache"
"""The folder under out/ that holds one record per cluster. It is gen's own: outside every
synced folder (a cluster name cannot start with '.'), never listed in a kustomization or in
``out/.gen-files``, never reported by ``render --check``, and replaced as a whole by each
render (a file put there by hand is removed)."""

FORMAT = 2
"""The record layout's version; a record of another format is a miss (2: the ``env`` apart
from the fingerprint)."""

FLEET_RECORD = f"{CACHE_DIR}/_fleet.json"
"""The fleet record, relative to out/: the digest of every input of the whole render, the
files that render was (with the other cache records), and the warnings its lint gave.
A cluster name cannot start with '_', so it never collides with a cluster's record."""

STAT_TABLE = f"{CACHE_DIR}/_stat.json"
"""What out/ looked like on this machine just after gen wrote it
(:func:`gen.emit.cache.stat.write_stat_table`): every folder's listing, with each file's
size, mtime, ctime, inode and device. Machine-local (inodes and times mean nothing
elsewhere), so kept out of Git like the fleet record, and never part of what a render
compares or reports."""

TRUST_FILE = f"{CACHE_DIR}/_trust.json"
"""The records this checkout's gen has checked (their SHA-256) under its env: records
written elsewhere, by another env, that a render here found equal but for ``env``.
Machine-local and git-ignored, like the fleet record."""

CACHE_GITIGNORE = f"{CACHE_DIR}/.gitignore"
"""Keeps the fleet record out of Git. The per-cluster records are meant to be committed
with out/ (a fresh CI clone then skips the clusters a change did not touch, and a change
touches only its clusters' records); the fleet record changes with every change to any
input, so committing it would make every two concurrent pull requests conflict. It is
the checkout's own: the fast path for the repeated local ``render``/``--check``."""

CACHE_GITIGNORE_BYTES = (
    b"# Written by gen: the fleet record, the stat table and the trust list are this\n"
    b"# checkout's own; the cluster records are meant to be committed with out/.\n"
    b"/_fleet.json\n"
    b"/_stat.json\n"
    b"/_trust.json\n"
)

OWN_FILES = frozenset({FLEET_RECORD.rsplit("/", 1)[1], STAT_TABLE.rsplit("/", 1)[1]})
"""The names, in the cache folder, of the two files no record lists: the fleet record (its
bytes are read and bound to the table by their SHA-256) and the stat table itself. A listing
shows them as ``name/c``: present and regular files, their stat not compared."""


def is_cache_path(rel: str) -> bool:
    """True for a POSIX path relative to out/ inside the cache folder."""
    return rel.startswith(CACHE_DIR + "/")


def record_path(cluster: str) -> str:
    """The record of ``cluster``, relative to out/."""
    return f"{CACHE_DIR}/{cluster}.json"


def clusters_of(paths: Iterable[str]) -> set[str]:
    """The cluster names of record paths (``.gen-cache/<cluster>.json``; not the fleet
    record)."""
    prefix = CACHE_DIR + "/"
    # A cluster name is a DNS label: '_fleet', '_stat' and '_trust' are gen's own files.
    return {p[len(prefix):-len(".json")] for p in paths
            if p.startswith(prefix) and p.endswith(".json") and "/" not in p[len(prefix):]
            and not p[len(prefix):].startswith("_")}


class Reach(enum.Enum):
    """Which files of out/ a record may name for gen to read."""

    OUTPUTS = "outputs"
    """The rendered files only (a cluster's record)."""
    WITH_CACHE = "with cache"
    """Those and the cache folder's files (the fleet record lists the other records)."""


_UNSAFE = re.compile(r"^$|^/|/$|//|\\|(?:^|/)\.\.?(?:/|$)")
"""An empty path or part, an absolute path, a backslash, a ``.`` or ``..`` part."""


def readable(rel: str, reach: Reach) -> bool:
    """Whether a recorded path ``rel`` names a file gen may read in out/: never anything
    outside out/ (a damaged or hostile record), and the cache folder only within ``reach``."""
    return not _UNSAFE.search(rel) and (reach is Reach.WITH_CACHE or not is_cache_path(rel))


def read_all(path: str) -> bytes:
    """A file's bytes in as few system calls as its size allows (unbuffered: out/ holds
    tens of thousands of small files, and a buffered open costs more than the read)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        size = os.fstat(fd).st_size
        chunks = [os.read(fd, size + 1)]
        while chunks[-1] and (len(chunks) > 1 or len(chunks[0]) > size):
            chunks.append(os.read(fd, 1 << 20))  # it grew since the fstat: read to the end
        return b"".join(chunks)
    finally:
        os.close(fd)
