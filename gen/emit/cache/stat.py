"""The stat table, ``out/.gen-cache/_stat.json``: every folder's listing of out/ with each
file's size, times, inode and device just after a render, so that the next no-op render can
vouch for a file without reading it; and :class:`VerifiedFiles`, the files so vouched for."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath

from gen.emit.cache import layout
from gen.emit.cache.fleet import FleetRecord, parse_fleet_record
from gen.emit.cache.layout import CACHE_DIR, OWN_FILES, STAT_TABLE, Reach, readable
from gen.errors import StaleOutputError

__all__ = [
    "SLEEP_BEFORE_SWAP_FILES",
    "STAT_FORMAT",
    "STAT_MARGIN_NS",
    "Stat",
    "StatTable",
    "VerifiedFiles",
    "file_text",
    "read_stat_table",
    "split_listing",
    "stat_of",
    "write_stat_table",
]

STAT_FORMAT = 2
"""The stat table layout's version (2: one listing per folder, bound to the fleet record)."""

STAT_MARGIN_NS = 100_000_000
"""How far before the swap a file's mtime and ctime must be for its stat to vouch for it:
ten times the coarsest kernel clock tick (10 ms) that stamps file times on a filesystem with
sub-second times. A change later than that cannot leave both times as they were."""

SLEEP_BEFORE_SWAP_FILES = 1000
"""From this many files a render waits :data:`STAT_MARGIN_NS` before it swaps out/ in, so
that every file it wrote is old enough to be vouched for by its stat; below it, hashing
the files back costs less than the wait."""

Stat = tuple[int, int, int, int, int]
"""(size, mtime_ns, ctime_ns, inode, device) of a file, links not followed."""

_WHOLE_SECOND_NS = 1_000_000_000


def stat_of(path: str) -> Stat | None:
    """The :data:`Stat` of a regular file, or None (missing, a link, not a file)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def file_text(name: str, st: os.stat_result) -> str:
    """A regular file in a folder's listing: its name, then ``f`` and its size, mtime, ctime,
    inode and device. A listing joins its entries with ``//``, in the order the filesystem
    lists them (an unchanged folder lists them in the same order; one that does not is
    merely checked entry by entry); a name holds no ``/``, so the text splits back
    unambiguously (:func:`split_listing`)."""
    return f"{name}/f/{st.st_size}/{st.st_mtime_ns}/{st.st_ctime_ns}/{st.st_ino}/{st.st_dev}"


def split_listing(line: str) -> dict[str, str]:
    """A folder's listing as name → that entry's text (:func:`file_text`, ``name/d`` for a
    folder, ``name/c`` for one of :data:`OWN_FILES`, ``name/?`` for anything not vouched)."""
    entries: dict[str, str] = {}
    for text in line.split("//") if line else ():
        entries[text.split("/", 1)[0]] = text
    return entries


@dataclasses.dataclass(frozen=True)
class StatTable:
    """The stat table: for the fleet record whose bytes hash to ``fleet``, each folder of
    out/ (relative to out/, ``""`` for out/ itself) → its listing (:func:`file_text`)."""

    fleet: str
    folders: Mapping[str, str]

    def vouched(self) -> set[str]:
        """The files (relative to out/) whose stat the table vouches for."""
        return {f"{folder}/{name}" if folder else name
                for folder, line in self.folders.items()
                for name, text in split_listing(line).items()
                if text[len(name) + 1:].startswith("f/")}


@dataclasses.dataclass
class _Listings:
    """Every folder's listing of out/ as :func:`write_stat_table` takes it."""

    folders: dict[str, str]
    """Folder relative to out/ → its listing."""
    sub_second: bool
    """Whether some vouched file's mtime has a fraction of a second: the filesystem keeps
    sub-second times, without which no stat can vouch for a file."""


def _listings(out_dir: Path, record: FleetRecord,
              placed: Mapping[str, tuple[int, int]]) -> _Listings:
    """out/'s folders listed for the stat table; OSError when a folder cannot be read."""
    listings = _Listings({}, sub_second=False)
    todo = [("", os.fspath(out_dir))]
    while todo:
        rel_dir, path = todo.pop()
        prefix = rel_dir + "/" if rel_dir else ""
        own = rel_dir == CACHE_DIR
        texts: dict[str, str] = {}  # in the order the filesystem lists them
        with os.scandir(path) as it:
            entries = list(it)
        for entry in entries:
            name = entry.name
            if entry.is_dir(follow_symlinks=False):
                texts[name] = name + "/d"
                todo.append((prefix + name, entry.path))
                continue
            st = entry.stat(follow_symlinks=False)
            if not stat.S_ISREG(st.st_mode):
                texts[name] = name + "/?"
            elif own and name in OWN_FILES:
                texts[name] = name + "/c"
            elif prefix + name in record.files and _untouched(st, placed.get(prefix + name)):
                texts[name] = file_text(name, st)
                listings.sub_second |= st.st_mtime_ns % _WHOLE_SECOND_NS != 0
            else:
                texts[name] = name + "/?"
        if own:  # the table itself is written after: this folder's names are sorted
            texts.update({name: name + "/c" for name in OWN_FILES})
            texts = {name: texts[name] for name in sorted(texts)}
        listings.folders[rel_dir] = "//".join(texts.values())
    return listings


def _untouched(st: os.stat_result, placed: tuple[int, int] | None) -> bool:
    """Whether a file's stat proves it is still as gen placed it: the inode gen put there
    (``placed``: that inode and a time after which only someone else can have changed it),
    with an mtime more than :data:`STAT_MARGIN_NS` before that time (a change in place after
    it would have moved the mtime past it)."""
    if placed is None:
        return False
    inode, since = placed
    return inode == st.st_ino != 0 and st.st_mtime_ns < since - STAT_MARGIN_NS


def write_stat_table(out_dir: Path, fleet_record: bytes,
                     placed: Mapping[str, tuple[int, int]]) -> None:
    """Record every folder's listing of out/ for the fleet record ``fleet_record`` (its bytes
    as in out/), for the next no-op render.

    - ``placed``: for each file gen put in out/, its inode and a time (ns) after which only
      someone else can have changed it: for a file gen wrote, the clock just before the
      swap; for one it carried over from the old out/, the clock before it compared that
      file's bytes.
    - A file's stat is recorded only when the fleet record lists it and its stat proves it
      untouched since (the same inode, a regular file, the mtime more than
      :data:`STAT_MARGIN_NS` before that time).
    - Anything else is listed as ``name/?``, which no later listing equals: that folder is
      then checked file by file, and that file hashed.
    - No table is kept (an old one is removed) when the fleet record cannot be read, when
      no vouched file has a sub-second mtime (the filesystem keeps whole seconds), or when
      the table cannot be written: verification then hashes every file.
    """
    table = out_dir / STAT_TABLE
    record = parse_fleet_record(fleet_record)
    try:
        listings = _listings(out_dir, record, placed) if record is not None else None
        if listings is None or not listings.sub_second:
            table.unlink(missing_ok=True)  # nothing it could vouch for
            return
        data = json.dumps({"format": STAT_FORMAT,
                           "fleet": hashlib.sha256(fleet_record).hexdigest(),
                           "folders": listings.folders}, sort_keys=True,
                          separators=(",", ":"), ensure_ascii=True).encode("ascii")
        tmp = table.with_name(f"{table.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(table)
    except OSError:
        with contextlib.suppress(OSError):
            table.unlink(missing_ok=True)


def read_stat_table(out_dir: Path) -> StatTable | None:
    """The stat table of out/; None when missing or damaged. Listings are not checked one
    by one: one that is not what out/ now lists is simply not equal to it."""
    try:
        raw = json.loads((out_dir / STAT_TABLE).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or raw.get("format") != STAT_FORMAT:
        return None
    fleet, folders = raw.get("fleet"), raw.get("folders")
    if not (isinstance(fleet, str) and isinstance(folders, dict)
            and set(map(type, folders.values())) <= {str}):
        return None
    return StatTable(fleet, folders)


class VerifiedFiles(Mapping[PurePosixPath, bytes]):
    """Files of out/ proved to hold the bytes a render writes, sorted by path; a file whose
    stat vouched for it is read when first asked for (its hash checked then too).
    ``hashes``: path relative to out/ → SHA-256, of these files and maybe others; ``rels``:
    the paths this mapping holds, sorted (default: all of ``hashes``)."""

    def __init__(self, root: str, hashes: Mapping[str, str], loaded: dict[str, bytes],
                 rels: list[str] | None = None) -> None:
        self._root, self._hashes, self._loaded = root, hashes, loaded
        self._rels = sorted(hashes) if rels is None else rels
        self._held: set[str] | None = None if rels is not None else set(hashes)

    def __len__(self) -> int:
        return len(self._rels)

    def __iter__(self) -> Iterator[PurePosixPath]:
        return (PurePosixPath(rel) for rel in self._rels)

    def _holds(self, rel: str) -> bool:
        if self._held is None:
            self._held = set(self._rels)
        return rel in self._held

    def __contains__(self, key: object) -> bool:
        return isinstance(key, PurePosixPath) and self._holds(str(key))

    def __getitem__(self, key: PurePosixPath) -> bytes:
        rel = str(key)
        if not isinstance(key, PurePosixPath) or not self._holds(rel):
            raise KeyError(key)
        data = self._loaded.get(rel)
        if data is None:
            if not readable(rel, Reach.WITH_CACHE):
                raise StaleOutputError(f"{rel}: not a path gen reads in out/")
            data = layout.read_all(os.path.join(self._root, rel))  # noqa: PTH118 - str paths
            if hashlib.sha256(data).hexdigest() != self._hashes[rel]:
                raise StaleOutputError(f"{rel} changed in out/ while gen was reading it")
            self._loaded[rel] = data
        return data
