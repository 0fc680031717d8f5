"""MIG lint rules (GEN1xx) fire at the line to change."""

from __future__ import annotations

from pathlib import Path

from gen.errors import Severity
from tests.helpers import LINT_BASE, errors_of, lint_fleet


def test_impossible_mig_layout(tmp_path: Path) -> None:
    """A layout that needs more than the 8 memory slices of an H100 is GEN101 in the layout
    file (what to edit), the pool that uses it as the related location."""
    findings = lint_fleet(tmp_path, **{"layout.yaml": LINT_BASE["layout.yaml"].replace(
        "{3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}", "{3g.40gb: 2, 2g.20gb: 1}")})
    errors = errors_of(findings)
    assert errors and all(f.rule in ("GEN101", "GEN304") for f in errors)
    mig = [f for f in errors if f.rule == "GEN101"]
    assert mig[0].location is not None and mig[0].location.path.endswith("layout.yaml")
    assert mig[0].location.line == 4
    assert mig[0].key_path.startswith("profiles")
    (used,) = mig[0].related
    assert used.path.endswith("cluster.yaml") and used.line == 16
    assert used.note == "used by pool 'mig' of cluster 'prod'"

def test_layout_change_warns_with_runbook(tmp_path: Path) -> None:
    """Changing a pool's layout is a warning that names the runbook."""
    cluster = LINT_BASE["cluster.yaml"].replace(
        "mig_layout: mixed", "mig_layout: mixed\n    previous_mig_layout: all-1g"
    )
    findings = lint_fleet(tmp_path, **{"cluster.yaml": cluster})
    (warning,) = [f for f in findings if f.rule == "GEN103"]
    assert warning.severity is Severity.WARNING
    assert "mig-runbook.md" in warning.hint
