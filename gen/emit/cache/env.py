"""The env of a render: what shapes its bytes and verdicts besides its inputs (gen's
version, a digest of its code, the record format, the libraries' versions), as one dict
and its digest."""

from __future__ import annotations

import hashlib
import os
import re
import sys
from pathlib import Path
from typing import Any

from gen._version import __version__
from gen.caches import once
from gen.emit.cache._canonical import canonical_json, sha256_text
from gen.emit.cache.layout import FORMAT

__all__ = ["GEN_PACKAGE", "LIBRARIES", "code_digest", "env_key", "gen_versions", "library_versions"]

LIBRARIES = ("jinja2", "PyYAML", "jsonschema-rs", "kubernetes-validate")
"""The libraries whose behaviour shapes the bytes or the verdict: Jinja2 renders the
templates, PyYAML parses their output, jsonschema-rs and kubernetes-validate's bundled
schemas validate it."""

GEN_PACKAGE = Path(__file__).resolve().parents[2]
"""gen's installed package folder."""


def gen_versions() -> dict[str, Any]:
    """gen's version, code digest and record format, and the libraries' versions: the one
    dict the env key and the fleet input digest hash."""
    return {"version": __version__, "code": code_digest(), "format": FORMAT,
            **_library_versions_once()}


def env_key() -> str:
    """A digest of :func:`gen_versions`: what a record is used only under (or once this
    checkout's trust list vouches for it)."""
    return sha256_text(canonical_json(gen_versions()))


@once
def code_digest() -> str:
    """A SHA-256 of gen's own code: every ``.py`` file of the installed package, by its
    path inside the package. The version alone is not enough: a checkout whose emitter
    changed without a version bump must not trust records an older emitter wrote."""
    digest = hashlib.sha256()
    for path in sorted(GEN_PACKAGE.rglob("*.py"),
                       key=lambda p: p.relative_to(GEN_PACKAGE).as_posix()):
        digest.update(path.relative_to(GEN_PACKAGE).as_posix().encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


@once
def _library_versions_once() -> dict[str, str]:
    return library_versions()


def library_versions() -> dict[str, str]:
    """The installed version of each of :data:`LIBRARIES` ("" when not installed), as
    ``importlib.metadata.version`` gives it, looked up now (:func:`gen_versions` keeps the
    first answer for the process). Read here from the first ``*.dist-info`` folder on
    ``sys.path`` that names the project, as that function finds it: importing
    ``importlib.metadata`` costs more than a no-op render's whole input digest. Anything
    this does not find plainly is asked of ``importlib.metadata`` itself."""
    versions: dict[str, str] = {}
    missing = []
    found = _dist_info_versions({_project_key(name) for name in LIBRARIES})
    for name in LIBRARIES:
        version = found.get(_project_key(name))
        if version is None:
            missing.append(name)
        else:
            versions[name] = version
    if missing:
        from importlib import metadata

        for name in missing:
            try:
                versions[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                versions[name] = ""
    return {name: versions[name] for name in LIBRARIES}


def _project_key(name: str) -> str:
    """A project name as ``importlib.metadata`` compares them (PEP 503, ``_`` for runs of
    ``-_.``)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _dist_info_versions(keys: set[str]) -> dict[str, str]:
    """For each project key, the ``Version`` of the first ``<name>-<version>.dist-info``
    folder naming it on ``sys.path``, in path order. A key whose first match is anything
    else (an egg, a zip, metadata without a version) is left out, for the caller to ask
    ``importlib.metadata``."""
    found: dict[str, str] = {}
    settled: set[str] = set()
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))  # noqa: PTH208 - str names
        except OSError:
            continue  # a zip, a missing folder: importlib.metadata may read it
        for name in names:
            stem, dot, suffix = name.rpartition(".")
            if not dot or suffix not in ("dist-info", "egg-info"):
                continue
            key = _project_key(stem.partition("-")[0])
            if key not in keys or key in settled:
                continue
            settled.add(key)
            version = (_metadata_version(os.path.join(entry or ".", name))  # noqa: PTH118
                       if suffix == "dist-info" else None)
            if version is not None:
                found[key] = version
    return found


def _metadata_version(folder: str) -> str | None:
    """The ``Version`` header of a dist-info folder's METADATA; None when unreadable."""
    try:
        with open(os.path.join(folder, "METADATA"), "rb") as handle:  # noqa: PTH118, PTH123
            head = handle.read(1 << 16)
    except OSError:
        return None
    for line in head.decode("utf-8", "replace").splitlines():
        if not line:
            break  # the end of the headers
        if line.lower().startswith("version:"):
            return line.split(":", 1)[1].strip()
    return None
