"""Canonical JSON: the one text of a value that every cache key hashes (sorted keys, no
spaces, ASCII only), and its SHA-256."""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
from collections.abc import Callable, Mapping
from pathlib import PurePath
from typing import Any

from gen.caches import BoundedCache
from gen.errors import SourceLocation

__all__ = ["Uncacheable", "canonical_json", "json_default", "sha256_text"]


class Uncacheable(TypeError):
    """A value the fingerprint cannot serialize canonically: the cluster is never skipped."""


_HANDLERS: BoundedCache[type, Callable[[Any], Any]] = BoundedCache(
    "gen.emit.cache.json_handlers", 4096)
"""How :func:`json_default` writes each type it has met (:func:`_handler_for`): a
fingerprint meets the same few dataclasses thousands of times."""
_HANDLER_OF = _HANDLERS.data


def json_default(value: Any) -> Any:
    """JSON for what ``json`` does not know; any other type makes the cluster uncacheable."""
    kind = type(value)
    handler = _HANDLER_OF.get(kind)
    if handler is None:
        handler = _HANDLERS.put(kind, _handler_for(kind))
    return handler(value)


def _handler_for(kind: type) -> Callable[[Any], Any]:
    """How :func:`json_default` writes a value of type ``kind``, tested in this order."""
    import pydantic

    from gen.fleet.profiles import Located

    if issubclass(kind, SourceLocation):
        return lambda value: value.path  # the file only: lines reach messages, not bytes
    if issubclass(kind, pydantic.BaseModel):
        return lambda value: value.model_dump(mode="json")
    if issubclass(kind, PurePath):
        return lambda value: value.as_posix()
    if issubclass(kind, (bytes, bytearray)):
        return lambda value: {"sha256": hashlib.sha256(value).hexdigest()}
    if issubclass(kind, enum.Enum):
        return lambda value: value.value
    if issubclass(kind, Mapping):
        return lambda value: {_key(k): v for k, v in value.items()}
    if issubclass(kind, (set, frozenset)):
        return lambda value: sorted(value, key=canonical_json)
    if issubclass(kind, Located):
        # A profile and its source document: the value and the file, not the whole parse.
        return lambda value: {"value": value.value, "from": value.document.path}
    if dataclasses.is_dataclass(kind) and not issubclass(kind, type):
        names = tuple(f.name for f in dataclasses.fields(kind))
        qualname = kind.__qualname__
        return lambda value: {"@type": qualname, **{n: getattr(value, n) for n in names}}
    name = kind.__qualname__

    def refuse(_value: Any) -> Any:
        raise Uncacheable(f"cannot fingerprint a {name}")

    return refuse


def _key(key: Any) -> str:
    return key if isinstance(key, str) else canonical_json(key)


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value``: sorted keys, no spaces, ASCII only.

    Raises :class:`Uncacheable` for a type it cannot serialize without losing information.
    """
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                          allow_nan=False, default=json_default)
    except ValueError as err:  # NaN, a circular reference
        raise Uncacheable(str(err)) from None


def sha256_text(text: str) -> str:
    """The hex SHA-256 of ``text`` in UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
