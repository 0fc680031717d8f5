"""The ``gen`` console script: answers ``gen --version`` before importing the CLI.

``gen --version`` is what scripts and pre-commit hooks call to probe for gen, so it must
cost little more than starting Python: it is answered here, from the version string
alone. A plain ``gen render`` or ``gen render --check`` with nothing changed is answered
without click too (:mod:`gen._noop`). Everything else goes to :func:`gen.cli.main`.
"""

from __future__ import annotations

import sys

from gen._version import __version__


def main() -> None:
    """Console-script entry point."""
    if sys.argv[1:] == ["--version"]:
        sys.stdout.write(f"gen {__version__}\n")
        return
    if sys.argv[1:2] == ["render"]:
        from gen._noop import answer

        if answer(sys.argv[1:]):
            return  # a no-op render, answered without click (gen._noop)
    from gen.cli import main as cli_main

    cli_main()
