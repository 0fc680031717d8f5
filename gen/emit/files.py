"""A render's files by their path under out/, held by the text of each path.

A render of a large fleet holds tens of thousands of files (41,000 at 100 clusters of the
bench fleet, 400,000 at 1,000) in its parent process, from the workers' results to the
write. A ``PurePosixPath`` key costs several hundred bytes beside the text it stands for
(the object, its list of parts and their strings, its cached text), and the workers' results
would bring one over the pipe for every file. :class:`FileMap` keeps each file under the
posix text of its path instead (``str(path)``: no empty, ``.`` or doubled part), and is a
``Mapping[PurePosixPath, bytes]`` over it for the callers of
:attr:`gen.pipeline.RenderResult.outputs`: a path is made only when one is asked for
(iteration makes each anew, and keeps none). What reads out/ or writes it (:mod:`gen.emit.
output`, :mod:`gen.emit.cache`) walks the texts (:meth:`FileMap.rels`, :meth:`FileMap.
bytes_at`) and makes no path at all.

Equality is that of the mapping (of paths to bytes): a :class:`FileMap` equals the dict of
``PurePosixPath`` keys it stands for, and another with the same files, in any order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping
from pathlib import PurePosixPath

__all__ = ["FileMap", "file_texts"]


class FileMap(Mapping[PurePosixPath, bytes]):
    """Files by path under out/, held by the text of each path, in the order given.

    ``texts``: path text → bytes, taken as it is (not copied: the caller hands it over).
    Each text must be that of a ``PurePosixPath`` (``str(path)``); :meth:`of` makes one from
    paths. A subclass may hold its bytes elsewhere (:class:`gen.emit.cache.VerifiedFiles`
    reads them from out/ when asked): it then overrides :meth:`rels`, :meth:`holds`,
    :meth:`bytes_at` and ``__len__``, which everything else here goes through.
    """

    def __init__(self, texts: dict[str, bytes] | None = None) -> None:
        self._texts: dict[str, bytes] = {} if texts is None else texts

    @classmethod
    def of(cls, files: Mapping[PurePosixPath, bytes] | Iterable[tuple[PurePosixPath, bytes]],
           ) -> FileMap:
        """The files of a mapping (or of pairs) keyed by ``PurePosixPath``, in its order."""
        items = files.items() if isinstance(files, Mapping) else files
        return cls({str(path): data for path, data in items})

    # The text side: what gen itself walks.

    def rels(self) -> list[str]:
        """The paths of the files, as text, in this mapping's order."""
        return list(self._texts)

    def holds(self, rel: str) -> bool:
        """Whether a file is at ``rel`` (a path's text)."""
        return rel in self._texts

    def bytes_at(self, rel: str) -> bytes:
        """The bytes of the file at ``rel`` (a path of :meth:`rels`); KeyError if none."""
        return self._texts[rel]

    def sha256_at(self, rel: str) -> str:
        """The SHA-256 of the bytes of the file at ``rel`` (a path of :meth:`rels`)."""
        return hashlib.sha256(self.bytes_at(rel)).hexdigest()

    def text_items(self) -> Iterator[tuple[str, bytes]]:
        """(path text, bytes) of every file, in this mapping's order."""
        for rel in self.rels():
            yield rel, self.bytes_at(rel)

    # The path side: Mapping[PurePosixPath, bytes].

    def __getitem__(self, key: PurePosixPath) -> bytes:
        if isinstance(key, PurePosixPath):
            rel = str(key)
            if self.holds(rel):
                return self.bytes_at(rel)
        raise KeyError(key)

    def __iter__(self) -> Iterator[PurePosixPath]:
        return map(PurePosixPath, self.rels())

    def __len__(self) -> int:
        return len(self._texts)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, PurePosixPath) and self.holds(str(key))

    def __eq__(self, other: object) -> bool:
        if type(other) is FileMap and type(self) is FileMap:
            return self._texts == other._texts  # the same text is the same path
        if isinstance(other, FileMap):
            return len(self) == len(other) and all(
                other.holds(rel) and other.bytes_at(rel) == data
                for rel, data in self.text_items())
        return super().__eq__(other)

    __hash__ = None  # type: ignore[assignment]  # a mapping, as dict

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self.text_items())!r})"


def file_texts(files: Mapping[PurePosixPath, bytes]) -> Iterator[tuple[str, bytes]]:
    """(path text, bytes) of each of ``files``, in its order: without making a path when
    ``files`` is a :class:`FileMap`."""
    if isinstance(files, FileMap):
        return files.text_items()
    return ((str(path), data) for path, data in files.items())
