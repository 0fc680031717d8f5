"""``python -m gen`` runs the command-line interface."""

from gen.cli import main

main()
