"""Build the judge's components from their Go modules, once per version.

Binaries go to ``$GEN_JUDGE_CACHE`` (default ``~/.cache/gen-judge``) as
``<name>-<version>-<digest>/<name>``; the digest covers our own Go module's files (``go.mod``,
``go.sum``, ``*.go``), so an edit rebuilds and an unchanged tree is a lookup. Go's own caches
(``GOMODCACHE``, ``GOCACHE``) make a rebuild after a small edit fast. A build that fails raises
:class:`BuildError` with the tail of Go's output: on the project's machines the judge fails, it
never skips.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

from tools.judge.pins import COMPONENTS, Component

__all__ = ["BuildError", "cache_root", "ensure"]


class BuildError(RuntimeError):
    """A component could not be built."""


def cache_root() -> Path:
    """Where built binaries are kept, outside the repository."""
    configured = os.environ.get("GEN_JUDGE_CACHE")
    if configured:
        return Path(configured)
    return Path.home() / ".cache" / "gen-judge"


def _digest(component: Component) -> str:
    h = hashlib.sha256(f"{component.version}\0{component.package}\0{component.ldflags}".encode())
    if component.module_dir is not None:
        for path in sorted(component.module_dir.iterdir()):
            if path.suffix == ".go" or path.name in ("go.mod", "go.sum"):
                h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:12]


def binary_path(name: str) -> Path:
    """Where the binary of ``name`` is (or will be) for the pinned version."""
    component = COMPONENTS[name]
    folder = cache_root() / f"{component.name}-{component.version}-{_digest(component)}"
    return folder / component.name


def _go() -> str:
    go = shutil.which("go")
    if go is None:
        raise BuildError("the judge needs Go 1.26 on PATH to build the upstream components")
    return go


def ensure(name: str, *, log: bool = True) -> Path:
    """The path of component ``name``'s binary, building it first when it is missing."""
    target = binary_path(name)
    if target.is_file() and os.access(target, os.X_OK):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # One build at a time per binary: pytest-xdist workers (and two judges) may ask at once.
    with (target.parent / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.is_file() and os.access(target, os.X_OK):
            return target  # built while this process waited
        return _build(name, target, log=log)


def _build(name: str, target: Path, *, log: bool) -> Path:
    component = COMPONENTS[name]
    partial = target.with_name(target.name + ".partial")
    env = {**os.environ, "CGO_ENABLED": "0", "GOFLAGS": "-mod=readonly"}
    ldflags = f"-s -w {component.ldflags}".strip()
    if component.module_dir is None:
        command = [_go(), "build", "-trimpath", "-ldflags", ldflags, "-o", str(partial)]
        # `go install mod@version` writes to GOBIN only; build in a throwaway module instead.
        workdir = target.parent / "module"
        workdir.mkdir(exist_ok=True)
        module, _, version = component.package.partition("@")
        if not (workdir / "go.mod").is_file():
            _run([_go(), "mod", "init", "gen.invalid/judge/" + component.name], workdir, env)
        env["GOFLAGS"] = "-mod=mod"
        _run([_go(), "get", f"{module}@{version}"], workdir, env)
        command.append(module)
    else:
        workdir = component.module_dir
        command = [_go(), "build", "-trimpath", "-ldflags", ldflags, "-o", str(partial),
                   component.package]
    started = time.monotonic()
    if log:
        print(f"judge: building {component.name} {component.version} ({component.source})",
              flush=True)
    _run(command, workdir, env)
    partial.replace(target)
    if log:
        print(f"judge: built {component.name} in {time.monotonic() - started:.0f} s", flush=True)
    return target


def _run(command: list[str], cwd: Path, env: dict[str, str]) -> None:
    process = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                             check=False)
    if process.returncode != 0:
        tail = "\n".join((process.stdout + process.stderr).strip().splitlines()[-30:])
        raise BuildError(f"`{' '.join(command)}` failed in {cwd} (exit {process.returncode}):\n"
                         f"{tail}")
