"""Which files the profile loader reads, and how it shows their paths: no YAML here, so
that the no-op render's input digest (:func:`gen.emit.cache.input_digest`) can list the
loader's own files without importing a parser. :mod:`gen.fleet.loader` re-exports all of it.
"""

from __future__ import annotations

import os
from pathlib import Path

from gen.errors import Finding, SourceLocation
from gen.rules import finding

__all__ = [
    "CONFIG_FILE",
    "MAX_FILE_BYTES",
    "discover",
    "display_path",
    "fleet_config_repo",
    "json_files",
    "profile_files",
]

CONFIG_FILE = "gen.yaml"
"""The fleet-wide settings file (suppressions), in the fleet repository beside
``profiles/`` (:mod:`gen.fleet.suppress`)."""
MAX_FILE_BYTES = 8 * 1024 * 1024
"""Largest profile file read (8 MiB): fleets are big, but not that big."""


def profile_files(root: Path) -> list[Path]:
    """Every YAML file under ``root``, in a stable order (see :func:`discover`)."""
    return discover(root)[0]


def _is_yaml(name: str) -> bool:
    return name.endswith((".yaml", ".yml"))


def discover(root: Path, repo: Path | None = None) -> tuple[list[Path], list[Finding]]:
    """Every YAML file under ``root`` in a stable order, and a finding for each symbolic
    link that cannot be followed.

    Hidden files and folders are skipped. Symbolic links, to files or to folders, are
    followed when they stay inside ``repo`` (the fleet repository; default: the folder
    holding ``root``); a broken link, or one that leads outside the repository, is a
    located error instead of a profile silently left out. A folder reached twice (a link
    loop) is read once.
    """
    repo_real = (repo if repo is not None else root.resolve().parent).resolve()
    files: list[Path] = []
    problems: list[Finding] = []
    seen_dirs: set[Path] = set()

    def refuse(link: Path, why: str) -> None:
        shown = display_path(link, repo_real, resolve=False)
        problems.append(finding(
            "GEN001", why, SourceLocation(shown),
            hint="make the link point at a file inside the fleet repository, or remove it",
        ))

    def visit(folder: Path) -> None:
        real = folder.resolve()
        if real in seen_dirs:
            return
        seen_dirs.add(real)
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if entry.name.startswith("."):
                continue
            path = folder / entry.name
            if entry.is_symlink():
                target = path.readlink().as_posix()
                try:
                    resolved = path.resolve(strict=True)
                except (OSError, RuntimeError):
                    if entry.name.endswith((".yaml", ".yml")) or not path.suffix:
                        refuse(path, f"broken symbolic link (to {target!r}): the profile "
                                     "it stood for would be left out")
                    continue
                if not resolved.is_relative_to(repo_real):
                    if resolved.is_dir() or _is_yaml(entry.name):
                        refuse(path, f"symbolic link to {target!r} leads outside the fleet "
                                     "repository")
                    continue
            if path.is_dir():
                visit(path)
            elif _is_yaml(entry.name) and path.is_file():
                files.append(path)

    visit(root)
    return sorted(files, key=lambda p: p.relative_to(root).as_posix()), problems


def json_files(root: Path) -> list[Path]:
    """Every JSON file under ``root`` (a ``kind: Model`` profile's ``config`` and the
    safetensors index beside it), in a stable order; hidden folders are skipped."""
    files = [
        p for p in root.rglob("*.json")
        if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
    ]
    return sorted(files, key=lambda p: p.relative_to(root).as_posix())


def display_path(path: Path, base: Path | None, *, resolve: bool = True) -> str:
    """A path as users see it in messages: relative to ``base`` when inside it."""
    if base is not None:
        try:
            if not resolve:
                return path.absolute().relative_to(base.absolute()).as_posix()
            return path.resolve().relative_to(base.resolve()).as_posix()
        except ValueError:
            pass
    return path.as_posix()


def fleet_config_repo(profiles_root: Path, base: Path | None) -> Path:
    """The fleet repository: ``base`` when given, else the folder holding ``profiles/``."""
    return base if base is not None else profiles_root.resolve().parent
