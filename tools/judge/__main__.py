"""``python tools/judge``: build the upstream components (cached), run every category of the
differential corpus against them, print one line per category and end with ``judge: N/M agree``.

Exit 0 when every disagreement is documented (:data:`tools.judge.known.KNOWN`), 1 otherwise or
when a documented one no longer happens (stale), 2 when a component cannot be built or started:
on the project's machines the judge fails, it never skips.

Options: ``--build-only`` (build, run nothing); ``--only NAME[,NAME]`` (groups: kubeconform,
oracle, live); ``--fleets N`` generated fleets for the oracle's allocation category (default
200; ``GEN_JUDGE_FLEETS`` too); ``-v`` every disagreement in full; ``--keep DIR`` keep the
control plane's folder (logs) in DIR.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as `python tools/judge`
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    __package__ = "tools.judge"

from tools.judge.cli import main

sys.exit(main(sys.argv[1:]))
