"""A cluster's record, ``out/.gen-cache/<cluster>.json``: what one render of it produced
(its fingerprint, env and files), with its pre-build key and own lint findings; one writer
and one parse of that file, and the check of its files against out/."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from gen.emit.cache import layout
from gen.emit.cache.env import env_key
from gen.emit.cache.layout import (
    CACHE_DIR,
    FLEET_RECORD,
    FORMAT,
    Reach,
    clusters_of,
    is_cache_path,
    readable,
    record_path,
)
from gen.emit.files import FileMap, file_texts
from gen.errors import Finding

__all__ = [
    "CacheRecord",
    "LintRecord",
    "kept_records",
    "new_record",
    "parse_record",
    "read_lint_record",
    "read_record",
    "record_bytes",
    "same_but_env",
    "stale_records",
    "verified_files",
    "verified_hashes",
]


@dataclasses.dataclass(frozen=True)
class CacheRecord:
    """What one render of one cluster produced."""

    cluster: str
    fingerprint: str
    env: str
    """:func:`~gen.emit.cache.env.env_key` of the gen that wrote the record (its version,
    code and libraries)."""
    validated: bool
    """Whether the files passed the embedded schema validation."""
    objects: int
    """How many Kubernetes objects the cluster rendered (``RenderResult.objects``)."""
    files: Mapping[str, str]
    """Path relative to out/ → SHA-256 of the bytes written."""


@dataclasses.dataclass(frozen=True)
class LintRecord:
    """A cluster's record with the pre-build key it was written with and the cluster's own
    lint findings (before suppressions)."""

    record: CacheRecord
    data: bytes
    """The record file's bytes."""
    prebuild: str | None
    findings: tuple[Finding, ...]
    """The per-cluster checks' findings, in their order."""
    once: Mapping[str, tuple[Finding, ...]]
    """The per-cluster findings that count once in the fleet, by what they are about."""


def record_bytes(record: CacheRecord, prebuild: str | None = None,
                 findings: Iterable[Finding] = (),
                 once: Mapping[str, Iterable[Finding]] | None = None) -> bytes:
    """The record file: canonical, one file per line so a diff stays readable. With a
    pre-build key, the cluster's lint findings too (none without one: they could never be
    reused)."""
    data: dict[str, Any] = {
        "cluster": record.cluster,
        "files": dict(sorted(record.files.items())),
        "env": record.env,
        "fingerprint": record.fingerprint,
        "format": FORMAT,
        "objects": record.objects,
        "validated": record.validated,
    }
    if prebuild is not None:
        data["prebuild"] = prebuild
        data["lint"] = [f.to_record() for f in findings]
        data["lint_once"] = {k: [f.to_record() for f in v]
                             for k, v in sorted((once or {}).items())}
    return (json.dumps(data, sort_keys=True, indent=1, ensure_ascii=True) + "\n").encode()


def new_record(cluster: str, fingerprint: str, validated: bool, objects: int,
               files: Mapping[PurePosixPath, bytes]) -> CacheRecord:
    """The record of a cluster just rendered, by this gen (its env)."""
    return CacheRecord(cluster, fingerprint, env_key(), validated, objects, {
        rel: hashlib.sha256(data).hexdigest() for rel, data in file_texts(files)
    })


def _parsed(data: bytes) -> tuple[CacheRecord, dict[str, Any]] | None:
    """A record and the whole parsed file; None for anything damaged or of another format."""
    try:
        raw = json.loads(data)
    except ValueError:
        return None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        return None
    cluster, fingerprint = raw.get("cluster"), raw.get("fingerprint")
    validated, files = raw.get("validated"), raw.get("files")
    objects, env = raw.get("objects"), raw.get("env")
    if not (isinstance(cluster, str) and isinstance(fingerprint, str) and isinstance(env, str)
            and isinstance(validated, bool) and isinstance(files, dict)
            and type(objects) is int and objects >= 0
            and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())):
        return None
    return CacheRecord(cluster, fingerprint, env, validated, objects, files), raw


def parse_record(data: bytes) -> CacheRecord | None:
    """A record from its file's bytes; None for anything damaged or of another format."""
    parsed = _parsed(data)
    return None if parsed is None else parsed[0]


def _read(out_dir: Path, cluster: str) -> tuple[CacheRecord, bytes, dict[str, Any]] | None:
    try:
        data = (out_dir / record_path(cluster)).read_bytes()
    except OSError:
        return None
    parsed = _parsed(data)
    if parsed is None or parsed[0].cluster != cluster:
        return None
    return parsed[0], data, parsed[1]


def read_record(out_dir: Path, cluster: str) -> tuple[CacheRecord, bytes] | None:
    """The record of ``cluster`` in out/ and its bytes; None when missing or damaged."""
    found = _read(out_dir, cluster)
    return None if found is None else (found[0], found[1])


def read_lint_record(out_dir: Path, cluster: str) -> LintRecord | None:
    """The record of ``cluster`` in out/ with its pre-build key and findings (a record
    without them, or with damaged ones, has ``prebuild`` None); None when there is no
    usable record at all."""
    found = _read(out_dir, cluster)
    if found is None:
        return None
    record, data, raw = found
    prebuild, lint, once = raw.get("prebuild"), raw.get("lint"), raw.get("lint_once")
    try:
        if not (isinstance(prebuild, str) and isinstance(lint, list)
                and isinstance(once, dict)
                and all(isinstance(v, list) for v in once.values())):
            raise ValueError("no pre-build key")
        findings = tuple(Finding.from_record(f) for f in lint)
        keyed = {str(k): tuple(Finding.from_record(f) for f in v) for k, v in once.items()}
    except ValueError:
        return LintRecord(record, data, None, (), {})
    return LintRecord(record, data, prebuild, findings, keyed)


def verified_files(out_dir: Path, record: CacheRecord) -> FileMap | None:
    """The recorded files' bytes as out/ holds them now, when every one is there and
    hashes to what was recorded; None as soon as one is missing, unreadable or differs."""
    return verified_hashes(out_dir, record.files)


def verified_hashes(
    out_dir: Path, hashes: Mapping[str, str], reach: Reach = Reach.OUTPUTS,
) -> FileMap | None:
    """``hashes`` (path relative to out/ → SHA-256) checked against out/: every file's
    bytes when all are there and hash as recorded, else None. ``reach``: whether the paths
    may be inside the cache folder (the fleet record lists the other records)."""
    root = os.fspath(out_dir)
    read = layout.read_all
    files: dict[str, bytes] = {}
    for rel, digest in hashes.items():
        if not readable(rel, reach):
            return None  # a damaged or hostile record: never read outside out/
        try:
            data = read(os.path.join(root, rel))  # noqa: PTH118 - str paths, hot loop
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != digest:
            return None
        files[rel] = data  # readable: a path's own text (no empty, . or .. part)
    return FileMap(files)


def same_but_env(old: bytes, new: bytes) -> bool:
    """Whether two record files say the same, ``env`` apart."""
    try:
        before, after = json.loads(old), json.loads(new)
    except ValueError:
        return False
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return False
    before.pop("env", None)
    after.pop("env", None)
    return bool(before == after)


def _record_names(out_dir: Path) -> set[str] | None:
    """The clusters with a record file in out/'s cache folder; None when it cannot be read."""
    try:
        names = [e.name for e in (out_dir / CACHE_DIR).iterdir() if e.is_file()]
    except OSError:
        return None
    return clusters_of(f"{CACHE_DIR}/{n}" for n in names)


def stale_records(out_dir: Path, records: Mapping[str, bytes]) -> list[str]:
    """The cluster records (paths relative to out/) a render would write, change or remove:
    ``records`` against the files of out/'s cache folder. ``render --check`` fails on any,
    as ``render`` would rewrite them."""
    wanted = {rel: data for rel, data in records.items()
              if clusters_of([rel]) and is_cache_path(rel)}
    present = {record_path(c) for c in _record_names(out_dir) or ()}
    stale = []
    for rel in sorted(present | set(wanted)):
        try:
            now: bytes | None = (out_dir / rel).read_bytes()
        except OSError:
            now = None
        if now != wanted.get(rel):
            stale.append(rel)
    return stale


def kept_records(out_dir: Path, rendered: Iterable[str]) -> dict[str, bytes]:
    """What a ``--cluster`` render keeps of out/'s cache folder as it is: the records of
    the clusters it does not render (``rendered``: those it does), and the fleet record
    (still valid exactly while out/ holds every file it lists)."""
    present = _record_names(out_dir)
    if present is None:
        return {}
    kept: dict[str, bytes] = {}
    try:
        if not (out_dir / FLEET_RECORD).is_symlink():
            kept[FLEET_RECORD] = (out_dir / FLEET_RECORD).read_bytes()
    except OSError:
        pass
    for name in sorted(present - set(rendered)):
        try:
            kept[record_path(name)] = (out_dir / record_path(name)).read_bytes()
        except OSError:
            continue
    return kept
