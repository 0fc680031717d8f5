"""The only code that touches out/: deterministic, atomic writes and drift checks.

A render builds the complete new tree in a temporary folder beside out/, then swaps it
in with one atomic exchange (``renameat2(RENAME_EXCHANGE)`` on Linux; two renames with
recovery elsewhere), so a killed run leaves either the old tree or the new one. Files
whose bytes did not change are hard-linked, not rewritten (those a caller proved equal,
``verified``, are not even read); when nothing changed, nothing is touched. Files gen
wrote before and no longer produces are pruned; files gen did not write (not listed in
``out/.gen-files`` and without gen's header) are carried over as they are. The render
cache, ``out/.gen-cache/`` (:mod:`gen.emit.cache`), is gen's own folder: never in the
index, never a change, replaced as a whole when a render hands one in.

Failures: any ``OSError`` (disk full, read-only file system, permission denied, an ancestor
of out/ that is a file) becomes an :class:`~gen.errors.OutputError` naming the path in
out/ and the cause, after the temporary tree is removed, so out/ is left as it was. A
symlinked out/ is written through: the folder it points to is replaced, the link is kept.
Writers of one out/ take turns (``flock`` on the folder that holds it), so a second run's
clean-up never deletes the tree a first run is still building.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import hashlib
import os
import re
import shutil
import stat
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from gen.emit.cache import layout as _layout
from gen.emit.cache.fleet import FleetRecord, parse_fleet_record
from gen.emit.cache.layout import (
    CACHE_DIR,
    CACHE_GITIGNORE,
    FLEET_RECORD,
    OWN_FILES,
    STAT_TABLE,
    is_cache_path,
)
from gen.emit.cache.stat import (
    SLEEP_BEFORE_SWAP_FILES,
    STAT_MARGIN_NS,
    VerifiedFiles,
    read_stat_table,
    split_listing,
    stat_of,
    write_stat_table,
)
from gen.emit.files import FileMap, file_texts
from gen.errors import OutputError
from gen.fleet.generated import MARKERS

__all__ = [
    "INDEX_NAME", "Changes", "check_out_dir", "compute_changes", "fast_outputs", "gen_files",
    "holds_only",
    "index_bytes",
    "read_index",
    "unified_diff", "write_tree",
]

INDEX_NAME = ".gen-files"
"""Lists, one per line, the files gen wrote under out/ (outside every synced folder)."""


@dataclass(frozen=True)
class Changes:
    """How out/ differs from a render."""

    added: tuple[str, ...]
    changed: tuple[str, ...]
    removed: tuple[str, ...]
    unchanged: int

    @property
    def empty(self) -> bool:
        """True when out/ already is the render."""
        return not (self.added or self.changed or self.removed)

    def summary(self, note: Callable[[str], str] | None = None) -> str:
        """One line per file: ``+ added``, ``~ changed``, ``- removed``; ``note(path)``, when
        given, is appended to each changed file's line (empty: nothing)."""
        lines = [f"+ {p}" for p in self.added]
        lines += [f"~ {p}{note(p) if note is not None else ''}" for p in self.changed]
        lines += [f"- {p}" for p in self.removed]
        return "\n".join(lines)


def _check_relative(path: PurePosixPath) -> str:
    text = str(path)
    if path.is_absolute() or ".." in path.parts or text in ("", ".") or "\\" in text:
        raise OutputError(f"refusing to write outside out/: {text!r}")
    return text


def read_index(out_dir: Path) -> set[str]:
    """The files out/.gen-files lists (empty when it is missing or unreadable)."""
    return _parse_index(_index_bytes_now(out_dir))


def _index_bytes_now(out_dir: Path) -> bytes | None:
    try:
        return (out_dir / INDEX_NAME).read_bytes()
    except OSError:
        return None


def _parse_index(data: bytes | None) -> set[str]:
    try:
        text = (data or b"").decode("utf-8")
    except UnicodeDecodeError:
        return set()
    return {line for line in text.splitlines() if line and not line.startswith("#")}


def _existing_files(out_dir: Path, inodes: dict[str, int] | None = None,
                    ) -> dict[str, tuple[str, bool]]:
    """Files and links under out/: POSIX relative path → (path, is a link); links not followed.
    ``inodes``, when given, gets each regular file's inode (as the folder lists it: no stat).

    Plain strings, not ``Path`` objects: out/ can hold tens of thousands of files.
    """
    found: dict[str, tuple[str, bool]] = {}
    if out_dir.is_dir():
        _scan(os.fspath(out_dir), "", found, inodes)
    return dict(sorted(found.items()))


def _scan(folder: str, prefix: str, found: dict[str, tuple[str, bool]],
          inodes: dict[str, int] | None = None) -> None:
    with os.scandir(folder) as entries:
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                _scan(entry.path, rel + "/", found, inodes)
            elif entry.is_symlink():
                found[rel] = (entry.path, True)
            elif entry.is_file(follow_symlinks=False):
                found[rel] = (entry.path, False)
                if inodes is not None:
                    inodes[rel] = entry.inode()


def gen_files(out_dir: Path) -> dict[str, Path]:
    """The regular files under out/ that gen wrote: listed in the index or with gen's header.

    The index file and the render cache are not included. A missing or damaged index falls
    back to the header alone, so no file gen wrote is ever taken for a user's file.
    """
    index = read_index(out_dir)
    return {
        rel: Path(path) for rel, (path, link) in _existing_files(out_dir).items()
        if rel != INDEX_NAME and not is_cache_path(rel) and not link
        and _is_gen_file(Path(path), index, rel)
    }


def holds_only(out_dir: Path, recorded: Collection[str]) -> bool:
    """True when out/ holds no file a render would remove or replace beyond ``recorded``
    (paths relative to out/, the index and the cache records included): no gen file and no
    cache file outside it (the fleet record aside), no link at a recorded path, and no
    half-done swap or stale temporary tree beside out/ (a render would clean those up),
    and out/ not a link.
    With the recorded files' bytes verified, a render that would write exactly
    ``recorded`` then writes nothing (the fleet fast path, :mod:`gen.emit.cache`)."""
    if out_dir.is_symlink() or _siblings(out_dir, "old") or _siblings(out_dir, "tmp"):
        return False  # a render resolves the link and tidies beside the real folder
    wanted = set(recorded)
    existing = _existing_files(out_dir)
    index = read_index(out_dir)
    for rel, (path, link) in existing.items():
        if rel in wanted:
            if link:
                return False
            continue
        if is_cache_path(rel):
            if rel not in (FLEET_RECORD, CACHE_GITIGNORE, STAT_TABLE) or link:
                return False
        elif rel == INDEX_NAME or _is_gen_file(Path(path), index, rel):
            return False
    return wanted <= set(existing)


def fast_outputs(out_dir: Path, digest: str) -> tuple[FleetRecord, VerifiedFiles] | None:
    """The fleet record of out/ and the files it lists (less the index and the cache
    records), when its input digest is ``digest``, every file it lists is in out/ with the
    bytes it lists, and out/ holds nothing a render would remove or replace (as
    :func:`holds_only`); else None. The fleet fast path, :mod:`gen.emit.cache`.

    One walk of out/ proves all of it. Each folder's listing (names, kinds, and each file's
    size, mtime, ctime, inode and device, :func:`gen.emit.cache.stat.file_text`) is compared with
    the one the stat table recorded right after the render that wrote this fleet record
    (the table names the record by its SHA-256). An equal listing proves that folder: the
    same entries, and every file the same inode with the same times, which an edit, a
    replacement, an added or a removed file would each have changed. Any other folder is
    checked entry by entry: a listed file whose own stat is the recorded one is vouched for,
    any other is read and hashed, and every other entry is judged as :func:`holds_only`
    judges it. Finally every file the record lists must have been found.
    """
    if out_dir.is_symlink() or _siblings(out_dir, "old") or _siblings(out_dir, "tmp"):
        return None  # a render resolves the link and tidies beside the real folder
    root = os.fspath(out_dir)
    try:
        data = (out_dir / FLEET_RECORD).read_bytes()
    except OSError:
        return None
    record = parse_fleet_record(data, digest)
    if record is None:
        return None
    files = record.files
    table = read_stat_table(out_dir)
    lines = (table.folders if table is not None
             and table.fleet == hashlib.sha256(data).hexdigest() else {})
    loaded: dict[str, bytes] = {}
    index: list[set[str]] = []  # out/'s index, read once when first needed
    found = 0
    todo = [("", root)]
    while todo:
        rel_dir, path = todo.pop()
        try:
            entries, texts, count = _listing(rel_dir, path, todo)
        except OSError:
            return None
        recorded = lines.get(rel_dir)
        if recorded is not None and "//".join(texts) == recorded:
            found += count  # the table lists only recorded files' stats (write_stat_table)
            continue
        checked = _check_folder(out_dir, rel_dir, entries, texts, recorded, files, loaded,
                                index)
        if checked is None:
            return None
        found += checked
    if found != len(files):
        return None  # a listed file is missing
    cache_prefix = CACHE_DIR + "/"
    rels = sorted([rel for rel in files if rel[0] != "." or not (
        rel == INDEX_NAME or rel.startswith(cache_prefix))])
    return record, VerifiedFiles(root, files, loaded, rels)


def _listing(rel_dir: str, path: str, todo: list[tuple[str, str]],
             ) -> tuple[list[os.DirEntry[str]], list[str], int]:
    """A folder's entries in the order the filesystem lists them (by name in the cache
    folder, where the stat table is added after its listing was taken), their texts as the
    stat table lists them
    (:func:`gen.emit.cache.stat.file_text`; ``l`` a link, ``o`` anything else), and how many
    regular files it holds; its subfolders are added to ``todo``."""
    own = rel_dir == CACHE_DIR
    regular, link = stat.S_ISREG, stat.S_ISLNK
    with os.scandir(path) as it:  # in the order the filesystem lists it, as recorded
        entries = sorted(it, key=_by_name) if own else list(it)
    texts = []
    count = 0
    for entry in entries:
        name = entry.name
        if entry.is_dir(follow_symlinks=False):
            texts.append(name + "/d")
            todo.append((f"{rel_dir}/{name}" if rel_dir else name, entry.path))
            continue
        st = entry.stat(follow_symlinks=False)
        mode = st.st_mode
        if not regular(mode):
            texts.append(name + ("/l" if link(mode) else "/o"))
        elif own and name in OWN_FILES:
            texts.append(name + "/c")
        else:  # as file_text writes it, inlined: this runs once per file of out/
            texts.append(f"{name}/f/{st.st_size}/{st.st_mtime_ns}/{st.st_ctime_ns}/"
                         f"{st.st_ino}/{st.st_dev}")
            count += 1
    return entries, texts, count


def _check_folder(
    out_dir: Path, rel_dir: str, entries: list[os.DirEntry[str]], texts: list[str],
    recorded: str | None, files: Mapping[str, str], loaded: dict[str, bytes],
    index: list[set[str]],
) -> int | None:
    """One folder of out/ whose listing is not the recorded one, entry by entry: how many
    recorded files it holds with their recorded bytes (vouched for by their own recorded
    stat, else read and hashed into ``loaded``), or None when a recorded file differs or
    the folder holds something a render would remove or replace (:func:`holds_only`)."""
    known = split_listing(recorded) if recorded is not None else {}
    prefix = rel_dir + "/" if rel_dir else ""
    found = 0
    for entry, text in zip(entries, texts, strict=True):
        kind = text[len(entry.name) + 1]
        rel = prefix + entry.name
        if kind in "dc":
            continue
        if kind == "f" and rel in files:
            if known.get(entry.name) != text:
                try:
                    body = _read_all(entry.path)
                except OSError:
                    return None
                if hashlib.sha256(body).hexdigest() != files[rel]:
                    return None
                loaded[rel] = body
            found += 1
        elif rel in files or is_cache_path(rel):
            if not (kind == "f" and rel == CACHE_GITIGNORE):
                return None  # a link or not a file at a listed path; a stray cache file
        elif kind != "o":  # a file or a link: a render removes it if it is gen's
            if not index:
                index.append(read_index(out_dir))
            if rel == INDEX_NAME or rel in index[0] or (
                    kind == "f" and _is_gen_file(Path(entry.path), index[0], rel)):
                return None
    return found


def _by_name(entry: os.DirEntry[str]) -> str:
    return entry.name


def _read_all(path: str) -> bytes:
    return _layout.read_all(path)  # looked up per call: tests count the reads


def _is_gen_file(path: Path, index: set[str], rel: str) -> bool:
    if rel in index or rel == INDEX_NAME:
        return True
    if path.is_symlink():
        return False
    try:
        with path.open("rb") as handle:
            head = handle.read(512)
    except OSError:
        return False
    return any(marker in head for marker in MARKERS)


def index_bytes(paths: list[str]) -> bytes:
    """The index file a render of these files writes."""
    return _index_bytes(paths)


def _index_bytes(paths: list[str]) -> bytes:
    header = "# Files written by gen; used to prune files gen no longer produces.\n"
    return (header + "".join(f"{p}\n" for p in sorted(paths))).encode()


def compute_changes(
    outputs: Mapping[PurePosixPath, bytes], out_dir: Path, *,
    verified: Collection[PurePosixPath | str] = (),
) -> Changes:
    """Compare a render with what out/ holds now.

    ``verified`` (paths, or their text): files of ``outputs`` whose bytes were just read
    from out/, or vouched for there (a cached cluster's,
    :func:`gen.emit.cache.records.verified_files`, :class:`gen.emit.cache.StatVouchers`);
    they are not read (again).
    """
    wanted = _Wanted(outputs)
    known = {str(p) for p in verified}
    return _changes(wanted, _existing_files(out_dir), read_index(out_dir), known)


class _Wanted(Mapping[str, bytes]):
    """A render's files by their checked relative path, each one's bytes got from the
    render only when asked for (a file of out/ vouched for is never read)."""

    def __init__(self, outputs: Mapping[PurePosixPath, bytes]) -> None:
        self._outputs = outputs
        if isinstance(outputs, FileMap):  # paths as text already: no Path made
            self._files: FileMap | None = outputs
            self._paths: dict[str, PurePosixPath | None] = dict.fromkeys(
                _checked_text(rel) for rel in outputs.rels())
        else:
            self._files = None
            self._paths = {_check_relative(p): p for p in outputs}

    def __len__(self) -> int:
        return len(self._paths)

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __contains__(self, key: object) -> bool:
        return key in self._paths

    def __getitem__(self, key: str) -> bytes:
        path = self._paths[key]
        if path is None:
            assert self._files is not None
            return self._files.bytes_at(key)
        return self._outputs[path]


_PARENT_PART = re.compile(r"(?:^|/)\.\.(?:/|$)")


def _checked_text(text: str) -> str:
    """:func:`_check_relative` of a path given as the text of a ``PurePosixPath`` (no
    empty or ``.`` part), without making one."""
    if text.startswith("/") or text in ("", ".") or "\\" in text or _PARENT_PART.search(text):
        raise OutputError(f"refusing to write outside out/: {text!r}")
    return text


def _changes(
    wanted: Mapping[str, bytes], existing: Mapping[str, tuple[str, bool]], index: set[str],
    verified: Collection[str] = (),
) -> Changes:
    added, changed = [], []
    unchanged = 0
    for rel in sorted(wanted):
        entry = existing.get(rel)
        if entry is None:
            added.append(rel)
            continue
        if rel in verified:
            unchanged += 1
            continue
        try:
            with open(entry[0], "rb") as handle:  # noqa: PTH123 - a str path, hot loop
                same = handle.read() == wanted[rel]
        except OSError:
            same = False
        if same:
            unchanged += 1
        else:
            changed.append(rel)
    removed = sorted(
        rel for rel, (path, _) in existing.items()
        if rel not in wanted and rel != INDEX_NAME and not is_cache_path(rel)
        and _is_gen_file(Path(path), index, rel)
    )
    return Changes(tuple(added), tuple(changed), tuple(removed), unchanged)


def unified_diff(outputs: Mapping[PurePosixPath, bytes], out_dir: Path, changes: Changes) -> str:
    """A unified diff from out/ to the render, for ``--check --diff``."""
    import difflib

    wanted = dict(file_texts(outputs))
    chunks: list[str] = []
    for rel in sorted((*changes.added, *changes.changed, *changes.removed)):
        old_path = out_dir / rel
        old = old_path.read_text(encoding="utf-8", errors="replace") if old_path.exists() else ""
        new = wanted[rel].decode("utf-8", errors="replace") if rel in wanted else ""
        chunks.extend(difflib.unified_diff(
            old.splitlines(keepends=True), new.splitlines(keepends=True),
            fromfile=f"a/{rel}" if old_path.exists() else "/dev/null",
            tofile=f"b/{rel}" if rel in wanted else "/dev/null",
        ))
    return "".join(chunks)


def _make_parent(path: str, made: set[str]) -> None:
    """``mkdir -p`` of the path's folder, once per folder per write."""
    parent = os.path.dirname(path)  # noqa: PTH120 - str paths, hot loop
    if parent not in made:
        Path(parent).mkdir(parents=True, exist_ok=True)
        made.add(parent)


def _link_or_copy(src: str, dst: str, is_link: bool, made: set[str]) -> bool:
    """Carry a file over into the new tree: a hard link, else a copy; a link as a link.
    True when it is a hard link (the same inode)."""
    _make_parent(dst, made)
    if is_link:
        Path(dst).symlink_to(Path(src).readlink())
        return False
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
        return False
    return True


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Atomically swap two paths; False when the platform cannot."""
    import ctypes  # only a render that writes needs it

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    result = renameat2(
        _AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE
    )
    if result == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(b))


def _siblings(out_dir: Path, tag: str) -> list[Path]:
    parent = out_dir.parent
    if not parent.is_dir():
        return []
    return sorted(parent.glob(f".gen-{tag}-{out_dir.name}-*"))


def _tmp_path(out_dir: Path) -> Path:
    return out_dir.parent / f".gen-tmp-{out_dir.name}-{os.getpid()}"


def _remove(path: Path) -> None:
    """Delete a leftover tree, or a leftover file or link (rmtree alone refuses those)."""
    if path.is_symlink() or not path.is_dir():
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
    else:
        shutil.rmtree(path, ignore_errors=True)


def recover(out_dir: Path) -> None:
    """Finish or undo a swap a killed run left half done; drop stale temporary trees."""
    olds = _siblings(out_dir, "old")
    if not out_dir.exists() and olds:
        olds[-1].rename(out_dir)
        olds = olds[:-1]
    for stale in (*olds, *_siblings(out_dir, "tmp")):
        _remove(stale)


@contextlib.contextmanager
def _exclusive(folder: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``folder`` (no-op where there is none); waits its turn.

    A kill releases it with the process, so no stale lock is ever left behind.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError as err:  # a file system without locks: write unlocked
            if err.errno not in (errno.ENOLCK, errno.EINVAL, errno.ENOTSUP, errno.EBADF):
                raise
        yield
    finally:
        os.close(fd)


def _check_target(out_dir: Path, label: str) -> None:
    """out/ must be a folder or absent, and the first ancestor that exists a folder."""
    problem = _target_problem(out_dir)
    if problem is not None:
        raise OutputError(f"cannot write {label}/: {problem}")


def _target_problem(out_dir: Path) -> str | None:
    if out_dir.exists() and not out_dir.is_dir():
        return f"{os.fspath(out_dir)} is a file, not a folder"
    for ancestor in out_dir.parents:
        if ancestor.exists() or ancestor.is_symlink():
            if not ancestor.is_dir():
                return f"{os.fspath(ancestor)} is not a directory"
            return None
    return None


def check_out_dir(out_dir: Path, label: str, profiles_dir: Path) -> None:
    """Refuse an ``--out`` gen cannot use, before anything is loaded: a file (or a path under
    one), the profiles folder or a folder inside it (the rendered manifests would be read
    back as profiles on the next run), or a folder that holds the profiles.

    Raises:
        OutputError: with one finding located at the ``--out`` path, rule GEN000.
    """
    from gen.errors import SourceLocation
    from gen.rules import finding

    problem = _target_problem(out_dir)
    if problem is None:
        out, profiles = out_dir.resolve(), profiles_dir.resolve()
        if out.is_relative_to(profiles):
            where = "is" if out == profiles else "lies inside"
            problem = (f"it {where} the profiles folder {os.fspath(profiles_dir)!r}, whose "
                       "files are read as profiles")
        elif profiles.is_relative_to(out):
            problem = (f"it holds the profiles folder {os.fspath(profiles_dir)!r}: out/ is "
                       "the tree Argo CD or Flux syncs, replaced as a whole on each render")
    if problem is not None:
        raise OutputError(findings=[finding(
            "GEN000", f"--out {label!r} cannot be used: {problem}", SourceLocation(label),
            hint="give --out a folder of its own (default: out/ beside profiles/)",
        )])


def _where(err: OSError, out_dir: Path, label: str) -> str:
    """The path an error names, with the temporary tree shown as the out/ path it stands for."""
    name = err.filename
    if name is None:
        return label + "/"
    text = os.fsdecode(name)
    for prefix in (os.fspath(_tmp_path(out_dir)), os.fspath(out_dir)):
        if text == prefix or text.startswith(prefix + os.sep):
            return label + "/" + text[len(prefix):].lstrip(os.sep)
    return text


def write_tree(
    outputs: Mapping[PurePosixPath, bytes], out_dir: Path, *,
    cache: Mapping[str, bytes] | None = None,
    verified: Collection[str] = (), since: int | None = None,
) -> Changes:
    """Make out/ the render, atomically; return what changed.

    ``cache``: the render cache's files (path relative to out/, inside ``.gen-cache/``),
    which then replace that folder as a whole; ``None`` keeps the folder as it is. They are
    never part of the changes returned.

    ``verified``: files of ``outputs`` (paths as text) proved, at or after the clock time
    ``since`` (ns), to hold in out/ the bytes ``outputs`` has for them (as
    :func:`compute_changes`): they are not read, and carried over as they are; the stat
    table takes ``since`` as the time after which only someone else can have changed them.

    Raises:
        OutputError: out/ cannot be written (disk full, read-only, not a directory, ...);
            out/ is then left as it was.
    """
    label = os.fspath(out_dir)
    wanted = _Wanted(outputs)
    known = set(verified)
    try:
        if out_dir.is_symlink():
            out_dir = Path(os.path.realpath(out_dir))
        _check_target(out_dir, label)
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        with _exclusive(out_dir.parent):
            recover(out_dir)
            compared = time.time_ns()  # an edit in place after this moves a file's mtime past it
            inodes: dict[str, int] = {}
            existing = _existing_files(out_dir, inodes)
            index_then = _index_bytes_now(out_dir)
            old_index = _parse_index(index_then)
            changes = _changes(wanted, existing, old_index, known)
            index_now = _index_bytes(list(wanted))
            cache_now = None if cache is None else {
                _check_cache_path(rel): data for rel, data in cache.items()}
            if (changes.empty and index_then == index_now
                    and (cache_now is None or _same_cache(cache_now, existing))):
                return changes
            stamps = _Stamps(compared, known, compared if since is None else min(since, compared),
                             inodes)
            placed = _swap_in(wanted, out_dir, changes, index_now, existing, old_index,
                              cache_now, stamps)
            if cache_now is not None and FLEET_RECORD in cache_now:
                _record_stats(out_dir, cache_now[FLEET_RECORD], placed)
    except OSError as err:
        reason = err.strerror or str(err)
        raise OutputError(
            f"cannot write {_where(err, out_dir, label)}: {reason}; "
            f"{label}/ was left as it was"
        ) from None
    return changes


def _check_cache_path(rel: str) -> str:
    text = _check_relative(PurePosixPath(rel))
    if not is_cache_path(text):
        raise OutputError(f"not a render cache file: {text!r}")
    return text


def _same_cache(cache: Mapping[str, bytes], existing: Mapping[str, tuple[str, bool]]) -> bool:
    """True when out/'s cache folder holds exactly these files with these bytes."""
    there = {rel: entry for rel, entry in existing.items()
             if is_cache_path(rel) and rel != STAT_TABLE}  # the stat table: machine-local
    if set(there) != set(cache):
        return False
    for rel, (path, link) in there.items():
        if link:
            return False
        try:
            with open(path, "rb") as handle:  # noqa: PTH123 - a str path
                if handle.read() != cache[rel]:
                    return False
        except OSError:
            return False
    return True


@dataclass(frozen=True)
class _Stamps:
    """When the bytes of a file carried over into the new out/ were last proved: its
    ``compared`` time, or ``since`` for one of ``verified`` (proved before the write)."""

    compared: int = 0
    verified: Collection[str] = ()
    since: int = 0
    inodes: Mapping[str, int] = dataclasses.field(default_factory=dict)
    """Each carried file's inode in the old out/ (a hard link keeps it), by path."""

    def of(self, rel: str) -> int:
        return self.since if rel in self.verified else self.compared


def _swap_in(
    wanted: Mapping[str, bytes], out_dir: Path, changes: Changes, index: bytes,
    existing: Mapping[str, tuple[str, bool]], old_index: set[str],
    cache: Mapping[str, bytes] | None = None, stamps: _Stamps | None = None,
) -> dict[str, tuple[int, int]]:
    """Build the new out/ beside it and swap it in. Returns, for each file of the render
    (the index and the cache files too), its inode and the time after which only someone
    else can have changed it: the clock just before the swap for a file written here,
    the time its bytes were proved (:class:`_Stamps`) for one carried over."""
    stamps = stamps if stamps is not None else _Stamps()
    tmp = _tmp_path(out_dir)
    _remove(tmp)
    tmp.mkdir()
    try:
        changed = set(changes.added) | set(changes.changed)
        linked = _fill(os.fspath(tmp), wanted, changes, existing, old_index, cache)
        (tmp / INDEX_NAME).write_bytes(index)
        if len(changed) + len(cache or {}) + 1 >= SLEEP_BEFORE_SWAP_FILES:
            time.sleep(STAT_MARGIN_NS / 1e9)  # every file written is then old enough
        before = time.time_ns()  # no one but gen has seen the new tree yet
        placed: dict[str, tuple[int, int]] = {}
        for rel in [*wanted, INDEX_NAME, *(cache or {})]:
            inode = stamps.inodes.get(rel) if rel in linked else None
            if inode is not None:  # a hard link to the file the old out/ listed
                placed[rel] = (inode, stamps.of(rel))
                continue
            found = stat_of(os.path.join(tmp, rel))  # noqa: PTH118 - str paths
            if found is not None:
                carried = rel in wanted and rel in existing and rel not in changed
                placed[rel] = (found[3], stamps.of(rel) if carried else before)
        if out_dir.exists():
            if _exchange(tmp, out_dir):
                _remove(tmp)
                return placed
            old = out_dir.parent / f".gen-old-{out_dir.name}-{os.getpid()}"
            out_dir.rename(old)
            try:
                tmp.rename(out_dir)
            except BaseException:
                old.rename(out_dir)  # put the previous tree back before reporting
                raise
            _remove(old)
        else:
            tmp.rename(out_dir)
    except BaseException:
        _remove(tmp)
        raise
    return placed


def _fill(tmp_s: str, wanted: Mapping[str, bytes], changes: Changes,
          existing: Mapping[str, tuple[str, bool]], old_index: set[str],
          cache: Mapping[str, bytes] | None) -> set[str]:
    """The new tree in the temporary folder ``tmp_s`` (less its index): each file of the
    render written or carried over, the files gen did not write carried over, the cache
    files written. Returns the files carried over as hard links (their inodes unchanged)."""
    changed = set(changes.added) | set(changes.changed)
    made: set[str] = {tmp_s}
    linked: set[str] = set()
    for rel in wanted:
        target = tmp_s + "/" + rel  # a str path, hot loop (rel is POSIX, "/" works)
        if rel in changed:
            _make_parent(target, made)
            Path(target).write_bytes(wanted[rel])
        else:
            src, link = existing[rel]
            if _link_or_copy(src, target, link, made):
                linked.add(rel)
    removed = set(changes.removed)
    for rel, (path, link) in existing.items():
        if rel in wanted or rel in removed or rel == INDEX_NAME or rel in old_index:
            continue
        if cache is not None and is_cache_path(rel):
            continue  # replaced by the render's cache below
        # a file gen did not write: keep it
        _link_or_copy(path, os.path.join(tmp_s, rel), link, made)  # noqa: PTH118
    for rel, data in (cache or {}).items():
        target = os.path.join(tmp_s, rel)  # noqa: PTH118 - str paths
        _make_parent(target, made)
        Path(target).write_bytes(data)
    return linked


def _record_stats(out_dir: Path, fleet_record: bytes,
                  placed: Mapping[str, tuple[int, int]]) -> None:
    """The stat table of out/ for this fleet record (:func:`gen.emit.cache.
    write_stat_table`), for the next no-op render's fast path."""
    write_stat_table(out_dir, fleet_record, placed)
