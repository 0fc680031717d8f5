"""The parse cache: each profile file's parsed documents (data, source positions, scalar
texts, suppression markers), kept as JSON under the user's cache folder, so that a render
after a one-file change parses one file.

Where: ``$GEN_CACHE_DIR/parsed-v1/``, else ``$XDG_CACHE_HOME/gen/parsed-v1/``, else
``~/.cache/gen/parsed-v1/``: outside out/ and outside the fleet repository, so nothing a
pull request commits is ever read as a parse. One entry per profile file (its fleet's
folder and its shown path name it), replaced when the file or gen changes: the folder
holds at most one entry per profile file a render has read.

How it stays safe:

- An entry is used only for the exact bytes it was made from: it holds the SHA-256 of
  the file's bytes, the shown path and the env key (:func:`gen.emit.cache.env.env_key`:
  gen's version and code digest, the record format, the libraries' versions, PyYAML among
  them), and a use compares all three with the file just read; the entry's name is only
  where to look.
- An entry is written only for a file that parsed without a finding and whose documents
  JSON holds exactly: mappings with string keys, lists, strings, booleans, integers,
  finite floats and null, no container reached twice (a YAML alias). Any other file
  (a date, a non-string key, ``!!binary``, an alias) is parsed every time.
- It is JSON only (nothing that runs code is ever loaded from it); a damaged, foreign
  or unreadable entry is a miss, and a folder that cannot be written keeps no cache.
- ``tests/emit/test_cache_parsed.py`` compares every document, position, scalar text and
  marker of the cached load with a fresh parse.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gen.errors import SourceLocation
from gen.fleet.loader import Document, Marker

__all__ = ["PARSED_FORMAT", "ParseCache", "cache_folder"]

PARSED_FORMAT = 1
"""The entry layout's version (part of the folder's name, and checked in each entry)."""

_JSON_SCALARS = (str, bool, int, type(None))


def cache_folder() -> Path:
    """The folder the parse cache keeps its entries in (see the module docstring)."""
    explicit = os.environ.get("GEN_CACHE_DIR")
    if explicit:
        base = Path(explicit)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = Path(xdg) / "gen" if xdg else Path.home() / ".cache" / "gen"
    return base / f"parsed-v{PARSED_FORMAT}"


class ParseCache:
    """The parse cache of one env (:func:`gen.emit.cache.env.env_key`), in ``folder``: what
    :func:`gen.fleet.loader.load_documents` asks before it parses a file, and tells after."""

    def __init__(self, env: str, folder: Path | None = None, *, use: bool = True,
                 scope: str = "") -> None:
        self._env = env
        self._scope = scope
        """What names the entries beside the shown path (the profiles folder, resolved):
        two fleets with the same file names keep one entry each."""
        self._folder = cache_folder() if folder is None else folder
        self._use = use
        """False: nothing is read from or written to the folder (``--no-cache``); the
        digests of what the loader read are still taken (:attr:`read`)."""
        self.read: dict[str, str] = {}
        """Shown path → SHA-256 of the bytes the loader read, of every file it asked about
        (the pre-build keys compare them with the files they hash)."""

    def _entry(self, shown: str) -> Path:
        name = hashlib.sha256(f"{self._scope}\0{shown}".encode()).hexdigest()
        return self._folder / f"{name}.json"

    def get(self, shown: str, raw: bytes) -> list[Document] | None:
        """The documents of the file shown as ``shown`` whose bytes are ``raw``, when an
        entry was made from exactly these bytes by this env; None otherwise."""
        digest = self.read[shown] = hashlib.sha256(raw).hexdigest()
        if not self._use:
            return None
        try:
            entry = json.loads(self._entry(shown).read_bytes())
        except (OSError, ValueError, RecursionError):
            return None
        if not (isinstance(entry, dict) and entry.get("format") == PARSED_FORMAT
                and entry.get("env") == self._env and entry.get("path") == shown
                and entry.get("sha256") == digest):
            return None
        try:
            return [_document(shown, item) for item in entry["documents"]]
        except (KeyError, TypeError, ValueError, IndexError):
            return None

    def put(self, shown: str, raw: bytes, documents: Sequence[Document]) -> None:
        """Keep the documents parsed from ``raw`` (a file with no finding), when JSON holds
        them exactly; a folder that cannot be written is left as it is."""
        if not self._use:
            return
        encoded = []
        for doc in documents:
            if not _exact(doc.data, set()):
                return
            encoded.append(_encoded(doc))
        digest = self.read.get(shown) or hashlib.sha256(raw).hexdigest()
        data = json.dumps({"format": PARSED_FORMAT, "env": self._env, "path": shown,
                           "sha256": digest, "documents": encoded},
                          ensure_ascii=True, allow_nan=False, separators=(",", ":"))
        target = self._entry(shown)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        try:
            self._folder.mkdir(parents=True, exist_ok=True)
            tmp.write_text(data, encoding="ascii")
            tmp.replace(target)
        except OSError:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)


def _exact(value: Any, seen: set[int]) -> bool:
    """Whether JSON gives ``value`` back equal and of the same types, with no container
    reached twice (JSON would make two of it)."""
    kind = type(value)
    if kind in _JSON_SCALARS:
        return True
    if kind is float:
        return math.isfinite(value)
    if kind is dict or kind is list:
        if id(value) in seen:
            return False
        seen.add(id(value))
        if kind is dict:
            return all(type(k) is str and _exact(v, seen) for k, v in value.items())
        return all(_exact(item, seen) for item in value)
    return False


def _encoded(doc: Document) -> dict[str, Any]:
    """A document as its entry holds it; every location's path is the file's own."""
    return {
        "index": doc.index,
        "data": doc.data,
        "end": doc.end_line,
        "positions": [[loc.line, loc.column, *key] for key, loc in doc.positions.items()],
        "scalars": [[text, *key] for key, text in doc.scalars.items()],
        "markers": [[list(m.rules), m.reason, m.location.line, m.location.column, m.line]
                    for m in doc.markers],
    }


def _document(path: str, item: dict[str, Any]) -> Document:
    """The document an entry holds; TypeError, ValueError or KeyError for a damaged one."""
    positions = {}
    for entry in item["positions"]:
        line, column = entry[0], entry[1]
        if type(line) is not int or type(column) is not int:
            raise ValueError("bad position")
        positions[tuple(_key(k) for k in entry[2:])] = SourceLocation(path, line, column)
    scalars = {}
    for entry in item["scalars"]:
        if type(entry[0]) is not str:
            raise ValueError("bad scalar")
        scalars[tuple(_key(k) for k in entry[1:])] = entry[0]
    markers = []
    for rules, reason, line, column, target in item["markers"]:
        if not (isinstance(rules, list) and all(type(r) is str for r in rules)
                and type(reason) is str
                and all(type(n) is int for n in (line, column, target))):
            raise ValueError("bad marker")
        markers.append(Marker(tuple(rules), reason, SourceLocation(path, line, column), target))
    index, end = item["index"], item["end"]
    if type(index) is not int or type(end) is not int:
        raise ValueError("bad document")
    return Document(path, index, item["data"], positions, end, scalars, tuple(markers))


def _key(part: object) -> str | int:
    if type(part) is str or type(part) is int:
        return part
    raise ValueError("bad key path")
