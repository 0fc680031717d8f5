"""Tests for gen.rules: one registry of rule ids, the same ids as the code, the docs from it."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from collections.abc import Callable, Iterator

import pytest

from gen.errors import Severity, SourceLocation
from gen.rules import RULES, Rule, Section, finding, rule, rules_markdown
from tests.helpers import REPO

_ID = re.compile(r"GEN\d{3}")
_DOC = REPO / "docs" / "lint-rules.md"
_REGENERATE = "python -m gen.rules > docs/lint-rules.md"


def _ids_in_source() -> dict[str, list[str]]:
    """Rule id → the gen/ source files (outside the registry) that mention it."""
    used: dict[str, list[str]] = {}
    for path in sorted((REPO / "gen").rglob("*.py")):
        if path == REPO / "gen" / "rules.py":
            continue
        for rule_id in sorted(set(_ID.findall(path.read_text(encoding="utf-8")))):
            used.setdefault(rule_id, []).append(str(path.relative_to(REPO)))
    return used


def test_committed_doc_is_the_generated_page() -> None:
    """docs/lint-rules.md is exactly rules_markdown()."""
    assert _DOC.read_text(encoding="utf-8") == rules_markdown(), (
        f"docs/lint-rules.md is out of date; regenerate it with `{_REGENERATE}`"
    )


def test_every_id_in_the_source_is_registered() -> None:
    """No id is reported (or named) in gen/ that the registry does not document."""
    unknown = {i: files for i, files in _ids_in_source().items() if i not in RULES}
    assert unknown == {}, "add these ids to gen/rules.py"


def test_every_registered_id_is_used() -> None:
    """No registry entry is dead: each id appears somewhere in gen/ outside gen/rules.py."""
    unused = sorted(set(RULES) - set(_ids_in_source()))
    assert unused == []


def test_ids_are_well_formed_sorted_and_keyed_by_themselves() -> None:
    """Keys are the rules' ids, in order, each GENnnn."""
    assert list(RULES) == sorted(RULES)
    for rule_id, r in RULES.items():
        assert r.id == rule_id
        assert _ID.fullmatch(rule_id)


@pytest.mark.parametrize("rule_id", sorted(RULES))
def test_rule_fields(rule_id: str) -> None:
    """Each rule has a title and a one-line doc text that fits a Markdown table cell."""
    r = RULES[rule_id]
    assert r.title and r.title == r.title.strip()
    assert r.doc and "\n" not in r.doc and "|" not in r.doc
    assert not r.doc.startswith("(")  # the severity marker comes from r.severity


_SECTION_OF_HUNDREDS = {
    "0": Section.INPUT_OUTPUT, "1": Section.MIG, "2": Section.DRA, "3": Section.SERVING,
    "4": Section.ROUTING, "5": Section.SECURITY, "6": Section.APPLE, "7": Section.GITOPS,
    "8": Section.CLUSTER,
}


def test_sections_follow_the_numbering() -> None:
    """GEN0xx input and output, GEN1xx MIG, GEN2xx DRA, GEN3xx serving, GEN40x-41x routing and
    prefill/decode, GEN42x-44x multi-node, GEN45x-46x quotas, ..."""
    for rule_id, r in RULES.items():
        section = _SECTION_OF_HUNDREDS[rule_id[3]]
        if rule_id[3] == "4":
            section = {"2": Section.MULTI_NODE, "3": Section.MULTI_NODE, "4": Section.MULTI_NODE,
                       "5": Section.QUOTAS, "6": Section.QUOTAS}.get(rule_id[4], section)
        assert r.section is section, rule_id


def test_default_severities() -> None:
    """The rules that are not errors by default."""
    relaxed = {i: r.severity for i, r in RULES.items() if r.severity is not Severity.ERROR}
    assert relaxed == {
        "GEN004": Severity.WARNING,
        "GEN025": Severity.WARNING,
        "GEN103": Severity.WARNING,
        "GEN208": Severity.WARNING,
        "GEN217": Severity.WARNING,
        "GEN218": Severity.WARNING,
        "GEN221": Severity.WARNING,
        "GEN241": Severity.WARNING,
        "GEN308": Severity.WARNING,
        "GEN424": Severity.WARNING,
        "GEN426": Severity.WARNING,
        "GEN412": Severity.WARNING,
        "GEN414": Severity.WARNING,
        "GEN502": Severity.INFO,
        "GEN452": Severity.WARNING,
        "GEN456": Severity.WARNING,
        "GEN604": Severity.WARNING,
        "GEN609": Severity.WARNING,
        "GEN610": Severity.WARNING,
        "GEN704": Severity.WARNING,
        "GEN803": Severity.INFO,
        "GEN804": Severity.WARNING,
        "GEN818": Severity.WARNING,
        "GEN819": Severity.WARNING,
    }


def test_rule_lookup() -> None:
    """rule() returns the registered Rule and names an unknown id in its KeyError."""
    assert rule("GEN204") is RULES["GEN204"]
    assert isinstance(rule("GEN000"), Rule)
    with pytest.raises(KeyError, match="GEN999"):
        rule("GEN999")


def test_rules_are_frozen() -> None:
    """A Rule cannot be changed, nor the registry."""
    r = rule("GEN101")
    with pytest.raises(AttributeError):
        r.title = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        RULES["GEN999"] = r  # type: ignore[index]


def test_markdown_has_one_table_per_section_with_severity_markers() -> None:
    """Each section heading, then a row per rule; non-errors are marked (warning) / (info)."""
    page = rules_markdown()
    headings = re.findall(r"^## (.+)$", page, re.MULTILINE)
    assert headings == [s.value for s in Section]
    rows = re.findall(r"^\| `(GEN\d{3})` \| (.*) \|$", page, re.MULTILINE)
    assert [i for i, _ in rows] == list(RULES)
    cells = dict(rows)
    assert cells["GEN103"].startswith("(warning) ")
    assert cells["GEN502"].startswith("(info) ")
    assert cells["GEN101"] == RULES["GEN101"].doc
    assert page.endswith(" |\n")


def test_module_prints_the_page() -> None:
    """`python -m gen.rules` writes the page to stdout."""
    proc = subprocess.run(
        [sys.executable, "-m", "gen.rules"], cwd=REPO, capture_output=True, text=True,
        check=True, timeout=60,
    )
    assert proc.stdout == rules_markdown()


def test_finding_takes_the_registry_default_unless_told() -> None:
    warning_rule = next(r for r in RULES.values() if r.severity is Severity.WARNING)
    where = SourceLocation("profiles/x.yaml", 3, 5)
    made = finding(warning_rule.id, "msg", where, key_path="a.b", hint="h", service="s")
    assert (made.rule, made.severity, made.location, made.key_path, made.hint, made.service) \
        == (warning_rule.id, Severity.WARNING, where, "a.b", "h", "s")
    assert finding(warning_rule.id, "msg", severity=Severity.ERROR).severity is Severity.ERROR
    assert finding("GEN000", "msg").severity is Severity.ERROR
    with pytest.raises(KeyError, match="GEN999"):
        finding("GEN999", "msg")


_FINDING_HOMES = frozenset({"gen/errors.py", "gen/rules.py"})
"""Where ``Finding`` is defined, and the factory that builds it from the registry."""


def _calls(tree: ast.AST, name: str) -> Iterator[ast.Call]:
    """Calls of ``name`` or of an attribute ``.name``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            called = func.id if isinstance(func, ast.Name) else (
                func.attr if isinstance(func, ast.Attribute) else None)
            if called == name:
                yield node


def _literal_rule(call: ast.Call, keyword: str) -> str | None:
    """The rule id a call names as a literal: its ``keyword`` argument, else its first
    positional argument that is a rule id (a helper may take other arguments first)."""
    values = [k.value for k in call.keywords if k.arg == keyword] + list(call.args)
    for value in values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str) \
                and _ID.fullmatch(value.value):
            return value.value
    return None


def literal_rule_findings(source: str) -> list[str]:
    """``line: rule`` of each ``Finding(...)`` of ``source`` that names its rule as a literal
    (those take the rule's default severity from :func:`gen.rules.finding` instead)."""
    return [f"{call.lineno}: {rule_id}" for call in _calls(ast.parse(source), "Finding")
            if (rule_id := _literal_rule(call, "rule")) is not None]


def restated_defaults(source: str) -> list[str]:
    """``line: rule severity`` of each ``finding(...)`` of ``source`` that passes
    ``severity=Severity.X`` equal to the registry default of the literal rule it names."""
    restated = []
    for call in _calls(ast.parse(source), "finding"):
        rule_id = _literal_rule(call, "rule_id")
        if rule_id is None or rule_id not in RULES:
            continue
        for k in call.keywords:
            value = k.value
            if (k.arg == "severity" and isinstance(value, ast.Attribute)
                    and isinstance(value.value, ast.Name) and value.value.id == "Severity"
                    and Severity[value.attr] is RULES[rule_id].severity):
                restated.append(f"{call.lineno}: {rule_id} {value.attr}")
    return restated


def _scan(check: Callable[[str], list[str]]) -> dict[str, list[str]]:
    """File → what ``check`` reports in it, over gen/ (but the homes of ``Finding``)."""
    found: dict[str, list[str]] = {}
    for path in sorted((REPO / "gen").rglob("*.py")):
        shown = path.relative_to(REPO).as_posix()
        if shown in _FINDING_HOMES:
            continue
        hits = check(path.read_text(encoding="utf-8"))
        if hits:
            found[shown] = hits
    return found


def test_findings_of_a_literal_rule_come_from_the_factory() -> None:
    """No ``Finding("GENnnn", ...)`` in gen/: a check builds it with ``finding()``, which
    takes the rule's default severity from the registry (a generic ``Finding(rule, ...)``
    of a variable rule, as a cached finding read back, may stay)."""
    assert _scan(literal_rule_findings) == {}, "use gen.rules.finding(...)"


def test_no_call_site_restates_its_rules_default_severity() -> None:
    """A ``severity=`` at a call site is a finding worse or milder than its rule's default,
    never the default itself (which the registry alone says)."""
    assert _scan(restated_defaults) == {}, "drop the severity: the registry gives it"


def test_the_source_checks_can_fail() -> None:
    """Both checks see what they refuse, in every spelling gen uses, and pass the right one."""
    built = (
        'Finding("GEN101", "m", where, "key")\n'
        'errors.Finding(rule="GEN208", message="m")\n'
        "Finding(rule, 'm')\n"  # a variable rule: generic, allowed
        'finding("GEN101", "m")\n'
    )
    assert literal_rule_findings(built) == ["1: GEN101", "2: GEN208"]
    restating = (
        'finding("GEN208", "m", where, severity=Severity.WARNING)\n'
        'ctx.finding(obj, "GEN803", "m", "hint", severity=Severity.INFO)\n'
        'finding(rule_id="GEN101", message="m", severity=Severity.ERROR)\n'
        'finding("GEN101", "m", severity=Severity.WARNING)\n'  # milder than the default
        'finding("GEN208", "m", severity=Severity.ERROR if bad else Severity.WARNING)\n'
        'finding("GEN208", "m")\n'
    )
    assert restated_defaults(restating) == ["1: GEN208 WARNING", "2: GEN803 INFO",
                                            "3: GEN101 ERROR"]
