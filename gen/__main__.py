"""``python -m gen`` runs the command-line interface."""

from gen._entry import main

main()
