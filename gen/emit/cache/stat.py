"""The stat table, ``out/.gen-cache/_stat.json``: every folder's listing of out/ with each
file's size, times, inode and device just after a render, so that the next render can
vouch for a file without reading it; and :class:`VerifiedFiles`, the files so vouched for.

How it stays safe. The table lists a file's stat only when the fleet record it is bound to
(by the record's SHA-256) lists the file and the stat proves it untouched since gen placed
it (:func:`write_stat_table`). So an entry says: *a file at this path with exactly this
size, mtime, ctime, inode and device holds the bytes whose SHA-256 that fleet record
lists*. Any change to a file moves its ctime (a same-size edit with the mtime put back
too), a rename or a replacement brings another inode, an append another size, and an added
or removed file another folder listing; none of them can leave the entry true-looking. The
whole render uses it through the fleet fast path; a render that builds uses it per cluster
(:class:`StatVouchers`): a cluster's recorded file is taken as its recorded bytes without
reading it only when its stat is the table's entry *and* the fleet record the table is
bound to lists the same SHA-256 as the cluster's record. Anything else is read and
hashed, as without a table."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath

from gen.emit.cache import layout
from gen.emit.cache.fleet import fleet_record_files
from gen.emit.cache.layout import CACHE_DIR, OWN_FILES, STAT_TABLE, Reach, readable
from gen.emit.files import FileMap, file_texts
from gen.errors import StaleOutputError

__all__ = [
    "SLEEP_BEFORE_SWAP_FILES",
    "STAT_FORMAT",
    "STAT_MARGIN_NS",
    "Stat",
    "StatTable",
    "StatVouchers",
    "VerifiedFiles",
    "combined",
    "file_text",
    "folder_texts",
    "read_stat_table",
    "split_listing",
    "stat_of",
    "stat_vouchers",
    "write_stat_table",
]

STAT_FORMAT = 2
"""The stat table layout's version (2: one listing per folder, bound to the fleet record)."""

STAT_MARGIN_NS = 100_000_000
"""How far before the swap a file's mtime and ctime must be for its stat to vouch for it:
ten times the coarsest kernel clock tick (10 ms) that stamps file times on a filesystem with
sub-second times. A change later than that cannot leave both times as they were."""

SLEEP_BEFORE_SWAP_FILES = 1000
"""From this many files written (not carried over) a render waits :data:`STAT_MARGIN_NS`
before it swaps out/ in, so that every file it wrote is old enough to be vouched for by its
stat; below it, hashing those files back costs less than the wait (a one-cluster change
writes a few hundred)."""

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


def _listings(out_dir: Path, files: Mapping[str, str],
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
            elif prefix + name in files and _untouched(st, placed.get(prefix + name)):
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
    files = fleet_record_files(fleet_record)
    try:
        listings = _listings(out_dir, files, placed) if files is not None else None
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


class VerifiedFiles(FileMap):
    """Files of out/ proved to hold the bytes a render writes, sorted by path; a file whose
    stat vouched for it is read when first asked for (its hash checked then too).
    ``hashes``: path relative to out/ → SHA-256, of these files and maybe others; ``rels``:
    the paths this mapping holds, sorted (default: all of ``hashes``). A
    :class:`~gen.emit.files.FileMap`: held by the paths' text, a path made only when asked
    for."""

    def __init__(self, root: str, hashes: Mapping[str, str], loaded: dict[str, bytes],
                 rels: list[str] | None = None) -> None:
        super().__init__(loaded)
        self._root, self._hashes = root, hashes
        self._rels = sorted(hashes) if rels is None else rels
        self._held: set[str] | None = None if rels is not None else set(hashes)

    def __len__(self) -> int:
        return len(self._rels)

    def __getstate__(self) -> dict[str, object]:
        return {**self.__dict__, "_held": None}

    def rels(self) -> list[str]:
        """The paths this mapping holds, as text, sorted."""
        return self._rels

    def holds(self, rel: str) -> bool:
        if self._held is None:
            self._held = set(self._rels)
        return rel in self._held

    def bytes_at(self, rel: str) -> bytes:
        """The bytes of the file at ``rel`` (a path of :meth:`rels`), read from out/ (and
        its hash checked) when first asked for."""
        data = self._texts.get(rel)
        if data is not None:
            return data
        if not self.holds(rel):
            raise KeyError(rel)
        if not readable(rel, Reach.WITH_CACHE):
            raise StaleOutputError(f"{rel}: not a path gen reads in out/")
        data = layout.read_all(os.path.join(self._root, rel))  # noqa: PTH118 - str paths
        if hashlib.sha256(data).hexdigest() != self._hashes[rel]:
            raise StaleOutputError(f"{rel} changed in out/ while gen was reading it")
        self._texts[rel] = data
        return data

    def sha256_at(self, rel: str) -> str:
        """The SHA-256 of the file at ``rel`` (a path of :meth:`rels`): the recorded one
        for a file of out/ (not read for it), else computed from the bytes held."""
        digest = self._hashes.get(rel)
        if digest is not None:
            return digest
        return hashlib.sha256(self.bytes_at(rel)).hexdigest()

    def sha256(self, key: PurePosixPath) -> str:
        """The SHA-256 of a file's bytes: the recorded one for a file of out/ (not read
        for it), else computed from the bytes held."""
        rel = str(key)
        if rel in self._hashes and self.holds(rel):
            return self._hashes[rel]
        return hashlib.sha256(self[key]).hexdigest()

    def held(self) -> dict[str, bytes]:
        """The files whose bytes are in memory already (read or handed in), by path."""
        return {rel: data for rel, data in self._texts.items() if self.holds(rel)}

    def recorded(self) -> dict[str, str]:
        """Path → SHA-256 of the files that are out/'s, read or not."""
        return {rel: self._hashes[rel] for rel in self._rels if rel in self._hashes}


def combined(root: str, parts: Iterable[Mapping[PurePosixPath, bytes]]) -> VerifiedFiles:
    """A render's files together, sorted by path: those of :class:`VerifiedFiles` parts
    left as they are (vouched for in out/, read when asked for), the others' bytes held.
    A later part's file replaces an earlier one's at the same path."""
    hashes: dict[str, str] = {}
    loaded: dict[str, bytes] = {}
    for part in parts:
        if isinstance(part, VerifiedFiles):
            recorded = part.recorded()
            for rel in recorded:
                loaded.pop(rel, None)
            hashes.update(recorded)
            loaded.update(part.held())
        else:
            for rel, data in file_texts(part):
                hashes.pop(rel, None)
                loaded[rel] = data
    return VerifiedFiles(root, hashes, loaded, sorted({*hashes, *loaded}))


def folder_texts(path: str, own: bool = False) -> tuple[list[str], list[str]]:
    """A folder's entries as the stat table lists them, in the order the filesystem lists
    them (by name in the cache folder, ``own``): each entry's name and text
    (:func:`file_text`; ``name/d`` a folder, ``name/c`` one of :data:`OWN_FILES` in the
    cache folder, ``name/l`` a link, ``name/o`` anything else). OSError when it cannot be
    read."""
    with os.scandir(path) as it:
        entries = sorted(it, key=lambda e: e.name) if own else list(it)
    names, texts = [], []
    for entry in entries:
        name = entry.name
        names.append(name)
        if entry.is_dir(follow_symlinks=False):
            texts.append(name + "/d")
            continue
        st = entry.stat(follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            texts.append(name + ("/l" if stat.S_ISLNK(st.st_mode) else "/o"))
        elif own and name in OWN_FILES:
            texts.append(name + "/c")
        else:
            texts.append(f"{name}/f/{st.st_size}/{st.st_mtime_ns}/{st.st_ctime_ns}/"
                         f"{st.st_ino}/{st.st_dev}")
    return names, texts


class StatVouchers:
    """The stat table and the files of the fleet record it is bound to, as a render that
    builds uses them: a cluster's recorded files vouched for by their stat, without reading
    them (the module's "how it stays safe")."""

    def __init__(self, table: StatTable, fleet_files: Mapping[str, str]) -> None:
        self._folders = table.folders
        self._fleet = fleet_files

    def files(self, out_dir: Path, hashes: Mapping[str, str]) -> VerifiedFiles | None:
        """``hashes`` (a cluster record's files: path relative to out/ → SHA-256) checked
        against out/: the files, those whose stat the table vouches for left unread (read
        and checked when asked for), the others read and hashed now; None when one is
        missing, not a regular file, or holds other bytes.

        A folder whose listing is the table's (the same entries, each file's stat the same:
        nothing added, removed, renamed or edited) vouches for each of its files the fleet
        record hashes as ``hashes`` does; in any other folder, a file is vouched for when
        its own entry is the table's and the two hashes agree."""
        root = os.fspath(out_dir)
        by_folder: dict[str, list[str]] = {}
        for rel in hashes:
            if not readable(rel, Reach.OUTPUTS):
                return None  # a damaged or hostile record: never read outside out/
            folder, _, name = rel.rpartition("/")
            by_folder.setdefault(folder, []).append(name)
        loaded: dict[str, bytes] = {}
        for folder, wanted in by_folder.items():
            vouched = self._vouched(root, folder, wanted, hashes)
            prefix = folder + "/" if folder else ""
            for name in wanted:
                rel = prefix + name
                if name in vouched:
                    continue
                try:
                    data = layout.read_all(os.path.join(root, rel))  # noqa: PTH118
                except OSError:
                    return None
                if hashlib.sha256(data).hexdigest() != hashes[rel]:
                    return None
                loaded[rel] = data
        return VerifiedFiles(root, hashes, loaded)

    def _vouched(self, root: str, folder: str, wanted: list[str],
                 hashes: Mapping[str, str]) -> set[str]:
        """The names of ``wanted`` in ``folder`` the table vouches for."""
        recorded = self._folders.get(folder)
        if recorded is None:
            return set()
        try:
            names, texts = folder_texts(os.path.join(root, folder) if folder else root)  # noqa: PTH118
        except OSError:
            return set()
        prefix = folder + "/" if folder else ""
        same = [name for name in wanted
                if self._fleet.get(prefix + name) == hashes[prefix + name]]
        now = dict(zip(names, texts, strict=True))
        if "//".join(texts) == recorded:  # the whole listing is the table's
            return {name for name in same if now.get(name, "").startswith(name + "/f/")}
        known = split_listing(recorded)
        return {name for name in same
                if name in now and now[name] == known.get(name)
                and now[name].startswith(name + "/f/")}


def stat_vouchers(out_dir: Path) -> StatVouchers | None:
    """The stat table of out/ with the files of the fleet record it is bound to; None when
    either is missing or damaged, or the table was written for another fleet record."""
    from gen.emit.cache.layout import FLEET_RECORD

    table = read_stat_table(out_dir)
    if table is None:
        return None
    try:
        data = (out_dir / FLEET_RECORD).read_bytes()
    except OSError:
        return None
    if hashlib.sha256(data).hexdigest() != table.fleet:
        return None
    files = fleet_record_files(data)
    return None if files is None else StatVouchers(table, files)
