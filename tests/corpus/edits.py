"""The edits of a corpus case (tests/corpus/README.md): write, append, delete, symlink,
replace/with. Shared by the corpus tests and by the judge (``tools/judge``), which renders the
same mutated fleets for the upstream components."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["apply_edit"]


def apply_edit(root: Path, edit: Mapping[str, Any]) -> None:
    """Apply one edit under ``root`` (a copy of the example fleet); a ``replace`` text must
    occur exactly once, or ``count`` times."""
    path = root / edit["file"]
    if "write" in edit:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(edit["write"], encoding="utf-8")
    elif "append" in edit:
        path.write_text(path.read_text(encoding="utf-8") + edit["append"], encoding="utf-8")
    elif "delete" in edit:
        path.unlink()
    elif "symlink" in edit:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(edit["symlink"])
    else:
        text = path.read_text(encoding="utf-8")
        old, new = edit["replace"], edit["with"]
        if text.count(old) != edit.get("count", 1):
            raise ValueError(f"{old!r} does not occur as the case says in {edit['file']}")
        path.write_text(text.replace(old, new), encoding="utf-8")
