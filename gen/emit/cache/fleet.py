"""The fleet record, ``out/.gen-cache/_fleet.json``: the input digest of everything a
whole render reads (raw bytes, nothing parsed), the files that render made and the
warnings it returned."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from gen.emit.cache._canonical import canonical_json, sha256_text
from gen.emit.cache._trees import NoDigest, builtin_digest, file_sha256, tree_digest
from gen.emit.cache.env import gen_versions
from gen.emit.cache.layout import FLEET_RECORD
from gen.errors import Finding

__all__ = [
    "FLEET_FORMAT",
    "FleetRecord",
    "fleet_record_bytes",
    "fleet_record_files",
    "input_digest",
    "parse_fleet_record",
    "read_fleet_record",
    "shown_path",
]

FLEET_FORMAT = 2
"""The fleet record layout's version (2: the files as one flat list)."""


@dataclasses.dataclass(frozen=True)
class FleetRecord:
    """What one successful render of the whole fleet (or a --cluster selection) was."""

    digest: str
    clusters: tuple[str, ...]
    """The clusters the render covered (``RenderResult.skipped`` of a fast-path run)."""
    objects: int
    files: Mapping[str, str]
    """Every file of out/ the render made (the index and the other cache records too),
    relative to out/ → SHA-256."""
    findings: tuple[Finding, ...]
    """The lint warnings and infos the render returned."""


def input_digest(
    profiles_dir: Path, templates_dir: Path | None, base: Path | None,
    options: Mapping[str, Any], *, crds_dir: Path | None = None,
) -> str | None:
    """A SHA-256 of everything a whole render depends on, read without parsing anything:
    the profile files (paths as shown, bytes), the fleet's ``gen.yaml``, the template
    overrides and built-ins, gen's data files, the env (gen's version and code, the
    libraries' versions), the user's CRD folder, and ``options`` (what else changes the
    output or the verdict). None when an input cannot be vouched for: the render then
    takes the normal path."""
    builtin = builtin_digest()
    if builtin is None:
        return None
    try:
        profiles = _profile_digest(profiles_dir, base)
        config = _config_digest(profiles_dir, base)
        overrides = (None if templates_dir is None or not templates_dir.is_dir()
                     else tree_digest(templates_dir))
    except NoDigest:
        return None
    if templates_dir is not None and templates_dir.is_symlink():
        return None
    try:
        crds = (None if crds_dir is None or not crds_dir.is_dir() or crds_dir.is_symlink()
                else tree_digest(crds_dir))
    except NoDigest:
        return None
    parts = {
        "format": FLEET_FORMAT,
        "gen": gen_versions(),
        "profiles": profiles,
        "config": config,
        "templates": {"override": overrides, "builtin": builtin[0]},
        "data": builtin[1],
        "options": dict(options),
        **({"crds": crds} if crds is not None else {}),
    }
    return sha256_text(canonical_json(parts))


def _profile_digest(profiles_dir: Path, base: Path | None) -> list[tuple[str, str]]:
    """(shown path, SHA-256) of every file the loader reads, in its order: the loader's own
    discovery (:func:`gen.fleet.discovery.profile_files`, then the JSON files a Model profile's
    ``config`` may name, :func:`gen.fleet.discovery.json_files`) and its own displayed paths
    (they reach messages and the rendered headers)."""
    from gen.fleet.discovery import MAX_FILE_BYTES, json_files, profile_files

    if not profiles_dir.is_dir() or profiles_dir.is_symlink():
        raise NoDigest(os.fspath(profiles_dir))
    root_real = profiles_dir.resolve()
    base_real = (base if base is not None else root_real.parent).resolve()
    checked: set[Path] = set()
    entries = []
    for file in [*profile_files(profiles_dir), *json_files(profiles_dir)]:
        if file.is_symlink():
            raise NoDigest(os.fspath(file))
        for parent in file.relative_to(profiles_dir).parents:
            folder = profiles_dir / parent
            if folder not in checked:
                if folder.is_symlink():
                    raise NoDigest(os.fspath(folder))
                checked.add(folder)
        shown = shown_path(file, profiles_dir, root_real, base_real)
        entries.append((os.fsencode(shown).hex(), file_sha256(file, MAX_FILE_BYTES)))
    return entries


def shown_path(file: Path, profiles_dir: Path, root_real: Path, base_real: Path) -> str:
    """:func:`gen.fleet.discovery.display_path` of ``file``, a file under ``profiles_dir``
    reached through no link, relative to ``base_real`` (resolved), with
    ``root_real = profiles_dir.resolve()``: the same text, without resolving every file
    again (no link on the way, so ``file.resolve()`` is ``root_real`` and the rest)."""
    try:
        return (root_real / file.relative_to(profiles_dir)).relative_to(base_real).as_posix()
    except ValueError:
        return file.as_posix()


def _config_digest(profiles_dir: Path, base: Path | None) -> str | None:
    """The SHA-256 of the fleet's ``gen.yaml`` (its suppressions change the verdict), or
    None when there is none."""
    from gen.fleet.discovery import CONFIG_FILE, MAX_FILE_BYTES, fleet_config_repo

    file = fleet_config_repo(profiles_dir, base) / CONFIG_FILE
    if file.is_symlink():
        raise NoDigest(os.fspath(file))
    return file_sha256(file, MAX_FILE_BYTES) if file.is_file() else None


def fleet_record_bytes(record: FleetRecord) -> bytes:
    """The fleet record file: canonical, deterministic. The files are one flat list, path
    then SHA-256, sorted by path: it loads about twice as fast as an object of 41,000 keys
    (the no-op fast path reads it on every run), and the file is never committed."""
    files = [text for rel in sorted(record.files) for text in (rel, record.files[rel])]
    data = {
        "clusters": list(record.clusters),
        "digest": record.digest,
        "files": files,
        "findings": [f.to_record() for f in record.findings],
        "format": FLEET_FORMAT,
        "objects": record.objects,
    }
    text = (json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
            + "\n").encode()
    _BUILT[:] = [text, files]
    return text


_BUILT: list[Any] = []
"""The last record :func:`fleet_record_bytes` made: its bytes (the same object the caller
holds, not a copy) and its flat list of files, so that :func:`fleet_record_files` of those
bytes, as the stat table asks for right after the swap, does not parse back what was just
written (9 MB of JSON at 100 clusters). Taken by the first such call."""


def parse_fleet_record(data: bytes, digest: str | None = None) -> FleetRecord | None:
    """A fleet record from its bytes; None for anything damaged or of another format, or,
    when ``digest`` is given, for a record of another input digest (its findings, the
    costly part, are then never read)."""
    parsed = _parsed(data)
    if parsed is None:
        return None
    raw, files = parsed
    if digest is not None and raw["digest"] != digest:
        return None
    try:
        findings = tuple(Finding.from_record(f) for f in raw["findings"])
    except ValueError:
        return None
    return FleetRecord(raw["digest"], tuple(raw["clusters"]), raw["objects"], files, findings)


def fleet_record_files(data: bytes) -> dict[str, str] | None:
    """The files a fleet record lists (as :attr:`FleetRecord.files`), its findings not
    read; None when :func:`parse_fleet_record` would find it damaged in any other part."""
    if _BUILT and _BUILT[0] is data:  # the bytes just made from this list: what it parses to
        flat: list[str] = _BUILT[1]
        _BUILT.clear()
        return _files(flat)
    parsed = _parsed(data)
    return None if parsed is None else parsed[1]


def _parsed(data: bytes) -> tuple[dict[str, Any], dict[str, str]] | None:
    """A fleet record's JSON, every part but its findings checked, and its files."""
    try:
        raw = json.loads(data)
    except ValueError:
        return None
    if not isinstance(raw, dict) or raw.get("format") != FLEET_FORMAT:
        return None
    digest, clusters, flat = raw.get("digest"), raw.get("clusters"), raw.get("files")
    objects, findings = raw.get("objects"), raw.get("findings")
    if not (isinstance(digest, str) and isinstance(clusters, list)
            and all(isinstance(c, str) for c in clusters)
            and type(objects) is int and objects >= 0
            and isinstance(flat, list) and isinstance(findings, list)):
        return None
    files = _files(flat)
    return None if files is None else (raw, files)


def _files(flat: list[Any]) -> dict[str, str] | None:
    """A fleet record's flat list of files as path → SHA-256; None for a list of odd length,
    of anything but text, or with a path listed twice."""
    if len(flat) % 2 or not set(map(type, flat)) <= {str}:
        return None
    files = dict(zip(flat[0::2], flat[1::2], strict=True))
    return None if len(files) * 2 != len(flat) else files


def read_fleet_record(out_dir: Path) -> FleetRecord | None:
    """The fleet record in out/; None when missing or damaged."""
    try:
        data = (out_dir / FLEET_RECORD).read_bytes()
    except OSError:
        return None
    return parse_fleet_record(data)
