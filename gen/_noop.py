"""``gen render`` and ``gen render --check`` with nothing changed, answered before click
is imported (outside ``gen.cli``, whose package imports click), and the defaults of
``--templates`` and ``--crds`` that this shares with the click commands.

Importing click and the command modules costs about as much CPU as a whole no-op render's
input digest. So :func:`answer` takes exactly the two plain command lines (no option at all),
asks :func:`gen.pipeline.fast_render` with the defaults the click command would pass
(``--profiles profiles``, ``--out out``, ``templates/`` and ``crds/`` beside the profiles
when they are folders, ``--validator auto``), and prints what the command prints on the
fast path. Anything else (another argument, no fleet record, a miss, a text that click
would print differently: not ASCII, or with an escape sequence it strips off a pipe) is
left to the click command, which then runs as if this module did not exist.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["answer", "crds_for", "templates_for"]

COMMAND_LINES = (["render"], ["render", "--check"])
"""The only command lines answered here."""


def templates_for(profiles_dir: Path, templates_dir: Path | None) -> Path | None:
    """``--templates``, else the ``templates/`` folder beside the profiles (if any)."""
    if templates_dir is not None:
        return templates_dir
    beside = profiles_dir.parent / "templates"
    return beside if beside.is_dir() else None


def crds_for(profiles_dir: Path, crds_dir: Path | None) -> Path | None:
    """``--crds``, else the ``crds/`` folder beside the profiles (if any)."""
    if crds_dir is not None:
        return crds_dir
    beside = profiles_dir.parent / "crds"
    return beside if beside.is_dir() else None


def answer(argv: list[str]) -> bool:
    """Print the no-op render's output and return True; False to let the CLI run."""
    if argv not in COMMAND_LINES:
        return False
    from gen.pipeline import fast_render

    check = argv == ["render", "--check"]
    profiles_dir, out_dir = Path("profiles"), Path("out")
    result = fast_render(profiles_dir, out_dir,
                         templates_dir=templates_for(profiles_dir, None),
                         validator="auto", crds_dir=crds_for(profiles_dir, None))
    if result is None or not result.changes.empty:
        return False
    errors = [finding.format() for finding in result.findings]
    # As gen.cli._render prints it on the fast path (nothing changed, nothing written).
    if check:
        line = f"{out_dir.as_posix()}/ is up to date ({len(result.outputs)} files)."
    else:
        line = f"{out_dir.as_posix()}/ unchanged ({result.objects} objects)."
    if not all(text.isascii() and "\x1b" not in text for text in (*errors, line)):
        return False  # click.echo may encode or strip these differently: let it print
    for text in errors:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    return True
