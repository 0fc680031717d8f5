"""The trust list, ``out/.gen-cache/_trust.json``: the records written under another env
that this checkout's gen has checked, so that a fresh clone rendered under another gen
renders what it cannot trust, finds the same records and rewrites none of them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path

from gen.emit.cache.env import env_key
from gen.emit.cache.layout import TRUST_FILE
from gen.emit.cache.records import CacheRecord

__all__ = ["TRUST_FORMAT", "read_trusted", "trust_bytes", "trusted"]

TRUST_FORMAT = 1
"""The trust list's layout version."""


def trust_bytes(record_files: Iterable[bytes]) -> bytes:
    """The trust list vouching, under this env, for the records whose bytes are given."""
    digests = sorted({hashlib.sha256(data).hexdigest() for data in record_files})
    data = {"env": env_key(), "format": TRUST_FORMAT, "records": digests}
    return (json.dumps(data, sort_keys=True, indent=1, ensure_ascii=True) + "\n").encode()


def read_trusted(out_dir: Path) -> frozenset[str]:
    """The SHA-256 of the records the trust list vouches for under this env (none when it
    is missing, damaged, or was written by another env)."""
    try:
        raw = json.loads((out_dir / TRUST_FILE).read_bytes())
    except (OSError, ValueError):
        return frozenset()
    if (not isinstance(raw, dict) or raw.get("format") != TRUST_FORMAT
            or raw.get("env") != env_key() or not isinstance(raw.get("records"), list)):
        return frozenset()
    return frozenset(d for d in raw["records"] if isinstance(d, str))


def trusted(record: CacheRecord, data: bytes, vouched: frozenset[str]) -> bool:
    """Whether a render here may use ``record`` (read as ``data``): it was written under
    this env, or the trust list vouches for its bytes."""
    return record.env == env_key() or hashlib.sha256(data).hexdigest() in vouched
