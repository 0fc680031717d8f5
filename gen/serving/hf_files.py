"""A model's files on disk, read offline: where its ``config.json`` is, that JSON with the
line of every key, and what its safetensors say about the checkpoint.

:func:`find_model_files` accepts a ``config.json``, a model folder (``config.json`` beside
the safetensors, as ``hf download --local-dir`` leaves it) or an entry of the Hugging Face
cache (``models--ORG--NAME``, whose ``refs/main`` names the snapshot under
``snapshots/<revision>/``). Every error is a :class:`~gen.errors.ModelConfigError` located at
the file, line and key the user must look at.
"""

from __future__ import annotations

import bisect
import json
import math
import re
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gen.errors import ModelConfigError, SourceLocation
from gen.rules import finding

__all__ = [
    "Checkpoint",
    "ModelFiles",
    "Positions",
    "find_model_files",
    "located_error",
    "read_checkpoint",
    "read_json",
]

MAX_CONFIG_BYTES = 4 * 1024 * 1024
"""Largest ``config.json`` read (real ones are a few KiB)."""
MAX_INDEX_BYTES = 64 * 1024 * 1024
"""Largest ``model.safetensors.index.json`` read (DeepSeek-V3's is about 9 MiB)."""
MAX_HEADER_BYTES = 100 * 1024 * 1024
"""Largest safetensors JSON header read (the format's own limit)."""
# Bytes per element of the safetensors dtypes (safetensors' format spec, README.md).
_ST_BYTES = {"F64": 8, "I64": 8, "U64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2,
             "I16": 2, "U16": 2, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "I8": 1, "U8": 1,
             "BOOL": 1}

Positions = Mapping[tuple[str | int, ...], tuple[int, int]]


@dataclass(frozen=True)
class ModelFiles:
    """The files of one model on disk, and what their location says about it."""

    config: Path
    shown: str
    """The config's path as messages show it."""
    name: str | None = None
    """``ORG/NAME`` when the location says it (the Hugging Face cache layout)."""
    revision: str | None = None
    """The snapshot's revision (the cache layout)."""


def located_error(shown: str, message: str, *, line: int = 0, column: int = 0, key: str = "",
                  hint: str = "") -> ModelConfigError:
    """A :class:`ModelConfigError` with one GEN002 finding at ``shown:line:column``."""
    location = SourceLocation(shown, line, column)
    return ModelConfigError(findings=[finding("GEN002", message, location, key_path=key,
                                              hint=hint)])


def find_model_files(path: Path, shown: str | None = None) -> ModelFiles:
    """The ``config.json`` that ``path`` names: the file itself, a model folder's, or the
    snapshot ``refs/main`` points at in a Hugging Face cache entry."""
    shown = shown if shown is not None else path.as_posix()
    if path.is_file():
        return ModelFiles(path, shown, *_cache_identity(path.parent))
    if not path.is_dir():
        raise located_error(shown, "no such file or folder")
    if (path / "config.json").is_file():
        return ModelFiles(path / "config.json", f"{shown.rstrip('/')}/config.json",
                          *_cache_identity(path))
    snapshots = path / "snapshots"
    if snapshots.is_dir():
        ref = path / "refs" / "main"
        revisions = sorted(p.name for p in snapshots.iterdir() if (p / "config.json").is_file())
        revision = ref.read_text(encoding="utf-8").strip() if ref.is_file() else None
        if revision is None and len(revisions) == 1:
            revision = revisions[0]
        if revision is None or revision not in revisions:
            listed = ", ".join(revisions) or "none"
            raise located_error(shown, f"cannot tell which snapshot to read (refs/main: "
                         f"{revision or 'absent'}; snapshots with a config.json: {listed})",
                         hint="name the snapshot folder itself: PATH/snapshots/<revision>")
        folder = snapshots / revision
        return ModelFiles(folder / "config.json",
                          f"{shown.rstrip('/')}/snapshots/{revision}/config.json",
                          *_cache_identity(folder))
    raise located_error(shown, "no config.json here (nor a Hugging Face cache entry: snapshots/)",
                 hint="give a config.json, a model folder or a models--ORG--NAME cache folder")


def _cache_identity(folder: Path) -> tuple[str | None, str | None]:
    """(``ORG/NAME``, revision) of a snapshot folder of the Hugging Face cache layout."""
    if folder.parent.name == "snapshots" and folder.parent.parent.name.startswith("models--"):
        parts = folder.parent.parent.name.split("--")[1:]
        if len(parts) == 2 and all(parts):
            return "/".join(parts), folder.name
    return None, None


# --------------------------------------------------------------------------- JSON with lines

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\]:,]|[^\s{}\[\]:,"]+')


def _positions(text: str) -> dict[tuple[str | int, ...], tuple[int, int]]:
    """(line, column) of every key path of a JSON text that :func:`json.loads` accepted."""
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    out: dict[tuple[str | int, ...], tuple[int, int]] = {}
    # One frame per open container: [is object, its key path, current key or index,
    # whether the next string is a key].
    stack: list[list[Any]] = []
    pending: tuple[str, int] | None = None
    for match in _TOKEN.finditer(text):
        token = match.group()
        top = stack[-1] if stack else None
        if token in "{[":
            path = (*top[1], top[2]) if top is not None else ()
            if top is None:
                line = bisect.bisect_right(line_starts, match.start()) - 1
                out[()] = (line + 1, match.start() - line_starts[line] + 1)
            stack.append([token == "{", path, 0, token == "{"])
        elif token in "}]":
            stack.pop()
        elif token == "," and top is not None:
            if top[0]:
                top[3] = True
            else:
                top[2] += 1
        elif token == ":" and top is not None and pending is not None:
            top[2], top[3] = pending[0], False
            line = bisect.bisect_right(line_starts, pending[1]) - 1
            out[(*top[1], pending[0])] = (line + 1, pending[1] - line_starts[line] + 1)
        elif top is not None and top[0] and top[3] and token.startswith('"'):
            pending = (json.loads(token), match.start())
            continue
        pending = None
    return out


def read_json(path: Path, shown: str, limit: int) -> tuple[Any, Positions]:
    try:
        with path.open("rb") as handle:
            data = handle.read(limit + 1)
    except OSError as err:
        raise located_error(shown, f"cannot read: {err.strerror or err}") from None
    if len(data) > limit:
        raise located_error(shown, f"larger than {limit // (1024 * 1024)} MiB: not a model config")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise located_error(shown, f"not UTF-8 (byte {err.start})") from None
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        raise located_error(shown, f"not JSON: {err.msg}", line=err.lineno,
                            column=err.colno) from None
    except RecursionError:
        raise located_error(shown, "not JSON: nested too deeply") from None
    return value, _positions(text)


# --------------------------------------------------------------------------- checkpoint


@dataclass(frozen=True)
class Checkpoint:
    """What a model folder's safetensors say."""

    bytes: int | None = None
    parameters: int | None = None


def _safetensors_header(path: Path, shown: str) -> tuple[int, int]:
    """(tensor bytes, parameters) of one safetensors file, from its JSON header."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(8)
            size = struct.unpack("<Q", raw)[0] if len(raw) == 8 else -1
            if not 0 < size <= MAX_HEADER_BYTES:
                raise located_error(shown, "not a safetensors file (bad header length)")
            header = json.loads(handle.read(size))
    except OSError as err:
        raise located_error(shown, f"cannot read: {err.strerror or err}") from None
    except (ValueError, UnicodeDecodeError):
        raise located_error(shown, "not a safetensors file (the header is not JSON)") from None
    total_bytes = parameters = 0
    for name, tensor in header.items() if isinstance(header, dict) else ():
        if name == "__metadata__" or not isinstance(tensor, dict):
            continue
        shape = tensor.get("shape")
        if not isinstance(shape, list) or not all(isinstance(d, int) for d in shape):
            raise located_error(shown, f"tensor {name!r} has no valid shape")
        count = math.prod(shape)
        parameters += count
        total_bytes += count * _ST_BYTES.get(str(tensor.get("dtype")), 1)
    return total_bytes, parameters


def read_checkpoint(folder: Path, shown_folder: str, read_safetensors: bool) -> Checkpoint:
    """The checkpoint size and parameter count that the safetensors index (or, with
    ``read_safetensors``, the safetensors headers) in ``folder`` give; None where they do not."""
    index = folder / "model.safetensors.index.json"
    single = folder / "model.safetensors"
    if index.is_file():
        shown = f"{shown_folder}/{index.name}"
        data, _ = read_json(index, shown, MAX_INDEX_BYTES)
        meta = data.get("metadata") if isinstance(data, Mapping) else None
        meta = meta if isinstance(meta, Mapping) else {}
        size, params = meta.get("total_size"), meta.get("total_parameters")
        shards = sorted(set(data.get("weight_map", {}).values())) \
            if isinstance(data.get("weight_map"), Mapping) else []
        if params is None and read_safetensors and shards \
                and all((folder / s).is_file() for s in shards):
            params = sum(_safetensors_header(folder / s, f"{shown_folder}/{s}")[1]
                         for s in shards)
        return Checkpoint(size if isinstance(size, int) else None,
                           params if isinstance(params, int) else None)
    if single.is_file() and read_safetensors:
        size, params = _safetensors_header(single, f"{shown_folder}/{single.name}")
        return Checkpoint(size, params)
    return Checkpoint()
