"""tools.judge.report and the judge's summary: counts, documented and stale differences."""

from __future__ import annotations

import pytest

from tools.judge import cli
from tools.judge.report import Category


def _category() -> Category:
    category = Category("CEL", "the DRA CEL compiler")
    category.add("a", "valid", "valid")
    category.add("b", "valid", "invalid", "no such key")
    category.add("c", "invalid", "invalid")
    return category


def test_counts() -> None:
    """A category counts its verdicts and lists the ones that differ."""
    category = _category()
    assert (category.agreeing, category.total) == (2, 3)
    assert [v.case for v in category.disagreements()] == ["b"]


def test_undocumented_difference_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A difference not in KNOWN fails the run and is shown with the upstream's words."""
    monkeypatch.setattr(cli, "KNOWN", {})
    lines, code = cli.summarize([_category()])
    assert code == 1
    assert lines[0] == "CEL: 2/3 agree (the DRA CEL compiler)"
    assert lines[1] == "  DIFFERS b: gen valid, upstream invalid: no such key"
    assert lines[-1] == "judge: 2/3 agree"


def test_documented_difference_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    """A difference listed in KNOWN is counted as one, and the run passes."""
    monkeypatch.setattr(cli, "KNOWN", {"b": "a deliberate difference"})
    lines, code = cli.summarize([_category()])
    assert code == 0
    assert lines == ["CEL: 2/3 agree, 1 documented (the DRA CEL compiler)", "judge: 2/3 agree"]


def test_stale_entry_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A KNOWN entry whose case agrees again fails the run, so the list stays true."""
    monkeypatch.setattr(cli, "KNOWN", {"a": "was different once", "b": "deliberate"})
    lines, code = cli.summarize([_category()])
    assert code == 1
    assert "  STALE a: agrees now; remove it from known.py" in lines


def test_unknown_group_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """--only with a name that is no group exits 2 with the choices."""
    with pytest.raises(SystemExit) as exc:
        cli.main(["--only", "nope"])
    assert exc.value.code == 2
    assert "kubeconform" in capsys.readouterr().err


def test_a_case_judged_in_two_categories(monkeypatch: pytest.MonkeyPatch) -> None:
    """A workload judged for Pod Security (agrees) and allocation (documented difference) is
    not stale; it is once it agrees in both."""
    monkeypatch.setattr(cli, "KNOWN", {"w": "order-dependent"})
    security = Category("Pod Security", "admission")
    security.add("w", "admitted", "admitted")
    allocation = Category("allocation", "the scheduler")
    allocation.add("w", "scheduled", "unschedulable")
    assert cli.summarize([security, allocation])[1] == 0
    allocation.verdicts.clear()
    allocation.add("w", "scheduled", "scheduled")
    lines, code = cli.summarize([security, allocation])
    assert code == 1
    assert "  STALE w: agrees now; remove it from known.py" in lines
