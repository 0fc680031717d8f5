"""gen.fleet.suppress: inline markers, a profile's lint.ignore and the fleet's gen.yaml."""

from __future__ import annotations

from pathlib import Path

import pytest

from gen.errors import Finding, ProfileValidationError, Severity
from gen.fleet.loader import scan_markers
from gen.pipeline import lint_report, render
from tests.helpers import LINT_BASE

# A class whose min_memory no H100 reaches (81559Mi < 80Gi): GEN204 at the min_memory line.
BAD_CLASS = LINT_BASE["classes.yaml"].replace(
    "match: {product: h100-sxm5-80gb}", "match: {product: h100-sxm5-80gb, min_memory: 80Gi}"
)
MIN_MEMORY_LINE = 3


def _fleet(tmp_path: Path, config: str | None = None, **changes: str) -> Path:
    root = tmp_path / "profiles"
    root.mkdir()
    for name, text in {**LINT_BASE, **changes}.items():
        (root / name).write_text(text)
    if config is not None:
        (tmp_path / "gen.yaml").write_text(config)
    return root


def _report(tmp_path: Path, config: str | None = None, **changes: str) -> tuple[
        list[Finding], list[Finding]]:
    report = lint_report(_fleet(tmp_path, config, **changes), base=tmp_path)
    return list(report.findings), [f for f, _ in report.suppressed]


def _rules(findings: list[Finding]) -> list[str]:
    return [f.rule for f in findings]


def test_unsuppressed_fleet_has_the_error(tmp_path: Path) -> None:
    """The base of these tests: the bad class is a GEN204 error at its min_memory line."""
    findings, suppressed = _report(tmp_path, **{"classes.yaml": BAD_CLASS})
    assert _rules(findings) == ["GEN204"] and suppressed == []
    assert findings[0].location is not None
    assert findings[0].location.line == MIN_MEMORY_LINE


def test_inline_marker_at_the_end_of_the_line(tmp_path: Path) -> None:
    """'# gen: ignore[GEN204] reason' on the finding's line silences it."""
    marked = BAD_CLASS.replace(
        "min_memory: 80Gi}", "min_memory: 80Gi}  # gen: ignore[GEN204] nodes get 96 GB soon")
    findings, suppressed = _report(tmp_path, **{"classes.yaml": marked})
    assert findings == [] and _rules(suppressed) == ["GEN204"]


def test_inline_marker_alone_covers_the_next_line(tmp_path: Path) -> None:
    """A marker alone on its line covers the next line that is not blank or a comment."""
    marked = BAD_CLASS.replace(
        "match: {", "# gen: ignore[GEN204] nodes get 96 GB soon\n# (planned)\n\nmatch: {", 1)
    findings, suppressed = _report(tmp_path, **{"classes.yaml": marked})
    assert findings == [] and _rules(suppressed) == ["GEN204"]


def test_marker_on_another_line_silences_nothing_and_is_reported(tmp_path: Path) -> None:
    """A marker on a line no finding points at: the finding stays, GEN004 at the marker."""
    marked = BAD_CLASS.replace("name: h100\n", "name: h100  # gen: ignore[GEN204] wrong line\n")
    findings, _ = _report(tmp_path, **{"classes.yaml": marked})
    assert sorted(_rules(findings)) == ["GEN004", "GEN204"]
    unused = next(f for f in findings if f.rule == "GEN004")
    assert unused.severity is Severity.WARNING
    assert unused.location is not None and unused.location.line == 2


@pytest.mark.parametrize(("marker", "message"), [
    ("# gen: ignore[GEN204]", "gives no reason"),
    ("# gen: ignore[] because", "names no rule"),
    ("# gen: ignore[GEN2O4] typo", "did you mean 'GEN204'?"),
    ("# gen: ignore[GEN002] schema", "GEN002 cannot be suppressed"),
])
def test_unusable_markers_are_gen005_errors(tmp_path: Path, marker: str, message: str) -> None:
    """No reason, no rule, an unknown rule or an input rule: GEN005, and nothing silenced."""
    marked = BAD_CLASS.replace("min_memory: 80Gi}", f"min_memory: 80Gi}}  {marker}")
    findings, suppressed = _report(tmp_path, **{"classes.yaml": marked})
    assert sorted(_rules(findings)) == ["GEN005", "GEN204"] and suppressed == []
    problem = next(f for f in findings if f.rule == "GEN005")
    assert message in problem.message
    assert problem.location is not None and problem.location.line == MIN_MEMORY_LINE


def test_profile_lint_ignore(tmp_path: Path) -> None:
    """A profile's lint.ignore silences the rule for findings located in that document."""
    ignored = BAD_CLASS.replace(
        "name: h100\n", "name: h100\nlint:\n  ignore:\n    - {rule: GEN204, reason: test}\n")
    findings, suppressed = _report(tmp_path, **{"classes.yaml": ignored})
    assert findings == [] and _rules(suppressed) == ["GEN204"]


def test_profile_lint_ignore_in_a_service_covers_findings_about_it(tmp_path: Path) -> None:
    """In an InferenceService, lint.ignore also covers findings about the service that are
    located elsewhere (here: at the class it uses)."""
    service = LINT_BASE["service.yaml"] + "lint: {ignore: [{rule: GEN204, reason: test}]}\n"
    findings, suppressed = _report(
        tmp_path, **{"classes.yaml": BAD_CLASS, "service.yaml": service})
    assert findings == [] and _rules(suppressed) == ["GEN204"]


def test_profile_lint_ignore_needs_a_reason(tmp_path: Path) -> None:
    """lint.ignore without a reason is refused with the key path."""
    ignored = LINT_BASE["classes.yaml"].replace(
        "name: h100\n", "name: h100\nlint: {ignore: [{rule: GEN204}]}\n")
    with pytest.raises(ProfileValidationError) as info:
        _report(tmp_path, **{"classes.yaml": ignored})
    (finding,) = info.value.findings
    assert finding.key_path == "lint.ignore[0].reason" and finding.message == "Field required"


FLEET_CONFIG = """\
lint:
  ignore:
    - rule: GEN204
      reason: the H100s are being replaced by H200s
{extra}"""


@pytest.mark.parametrize(("extra", "silenced"), [
    ("", True),
    ("      services: [llama-70b]\n", True),
    ("      services: [other]\n", False),
    ("      clusters: [prod]\n", True),
    ("      clusters: [other]\n", False),
    ('      paths: ["profiles/class*"]\n', True),
    ('      paths: ["profiles/service.yaml"]\n', False),
])
def test_fleet_config(tmp_path: Path, extra: str, silenced: bool) -> None:
    """gen.yaml beside profiles/ silences a rule fleet-wide, optionally only for some
    services, clusters or files; a filter that matches nothing leaves it unused (GEN004)."""
    findings, suppressed = _report(
        tmp_path, FLEET_CONFIG.format(extra=extra), **{"classes.yaml": BAD_CLASS})
    if silenced:
        assert findings == [] and _rules(suppressed) == ["GEN204"]
    else:
        assert sorted(_rules(findings)) == ["GEN004", "GEN204"]
        unused = next(f for f in findings if f.rule == "GEN004")
        assert unused.location is not None and unused.location.path == "gen.yaml"
        assert unused.location.line == 3


def test_fleet_config_errors_are_located(tmp_path: Path) -> None:
    """A gen.yaml entry without a reason, or an unknown key, is a located GEN002."""
    config = "lint:\n  ignore:\n    - rule: GEN204\n      reasn: typo\n"
    with pytest.raises(ProfileValidationError) as info:
        _report(tmp_path, config)
    got = {(f.location.path if f.location else "", f.key_path) for f in info.value.findings}
    assert got == {("gen.yaml", "lint.ignore[0].reasn"), ("gen.yaml", "lint.ignore[0].reason")}


def test_suppressed_error_does_not_block_render(tmp_path: Path) -> None:
    """render honours suppressions: a silenced error no longer stops it."""
    marked = BAD_CLASS.replace(
        "min_memory: 80Gi}", "min_memory: 80Gi}  # gen: ignore[GEN204] planned")
    root = _fleet(tmp_path, **{"classes.yaml": marked})
    result = render(root, tmp_path / "out", base=tmp_path)
    assert result.objects > 0


def test_scan_markers() -> None:
    """Markers: rules split on commas, the reason kept, the covered line found."""
    text = "a: 1  # gen: ignore[GEN301, GEN303] why\n# gen: ignore[GEN204] above\n\nb: 2\n"
    first, second = scan_markers(text, "f.yaml")
    assert first.rules == ("GEN301", "GEN303") and first.reason == "why" and first.line == 1
    assert first.location.column == 7
    assert second.rules == ("GEN204",) and second.line == 4
    assert scan_markers("url: http://x/#gen: ignore[GEN1] no\n", "f.yaml") == []


def test_fleet_config_is_part_of_the_render_input_digest(tmp_path: Path) -> None:
    """Editing gen.yaml changes the fleet record's digest: a no-op render cannot replay the
    warnings of the previous suppressions."""
    from gen.emit.cache import input_digest

    root = _fleet(tmp_path)
    before = input_digest(root, None, tmp_path, {})
    (tmp_path / "gen.yaml").write_text("lint:\n  ignore: []\n")
    after = input_digest(root, None, tmp_path, {})
    assert before is not None and after is not None and before != after
