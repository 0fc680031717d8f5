"""Findings as SARIF 2.1.0, for GitHub code scanning and other SARIF viewers.

``gen lint --format sarif`` writes :func:`to_sarif`'s result as JSON. The log has one run whose
tool driver is ``gen``; every rule that a finding uses (plus any in ``rules``) is listed with a
short description (its title in :mod:`gen.rules`), and every finding becomes one result with a
level, a message and, when it has a location, a physical location (a relative, forward-slash
URI plus line and column), related locations (``relatedLocations``, each with its note as
the message: "used by service llama-70b"), and suppressed findings (``suppressed``) are
results too, each with a ``suppressions`` entry (``inSource`` for a comment or a profile's
``lint.ignore``, ``external`` for the fleet's ``gen.yaml``) whose justification is the reason.
The order is deterministic: rules by id, results in :func:`gen.errors.sort_findings` order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePath, PurePosixPath, PureWindowsPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from gen.errors import Finding, Severity, SourceLocation, sort_findings
from gen.rules import Rule

if TYPE_CHECKING:
    from gen.fleet.suppress import Suppression

__all__ = ["SARIF_SCHEMA", "SARIF_VERSION", "to_sarif"]

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def to_sarif(
    findings: Sequence[Finding],
    *,
    tool_version: str,
    rules: Mapping[str, Rule] | None = None,
    root: str | PurePath | None = None,
    suppressed: Sequence[tuple[Finding, Suppression]] = (),
) -> dict[str, Any]:
    """A SARIF 2.1.0 log (a JSON-ready dict) of ``findings``.

    Args:
        findings: what to report; duplicates are dropped, order does not matter.
        tool_version: gen's version, for ``tool.driver.version``.
        rules: rule id → :class:`~gen.rules.Rule` (usually :data:`gen.rules.RULES`), for
            ``tool.driver.rules``; a rule not in it is described by its id.
        root: when given, absolute finding paths under it are made relative to it
            (SARIF viewers resolve URIs against the repository root).
        suppressed: findings a suppression silenced, each with its suppression; they are
            results with ``suppressions`` (after the others).
    """
    descriptions = {rule_id: r.title for rule_id, r in (rules or {}).items()}
    ordered = sort_findings(findings)
    silenced = sorted(suppressed, key=lambda pair: pair[0].sort_key())
    rule_ids = sorted({f.rule for f in ordered} | {f.rule for f, _ in silenced}
                      | set(descriptions))
    index = {rule: i for i, rule in enumerate(rule_ids)}
    driver: dict[str, Any] = {
        "name": "gen",
        "version": tool_version,
        "rules": [
            {"id": rule, "shortDescription": {"text": descriptions.get(rule) or rule}}
            for rule in rule_ids
        ],
    }
    results = [_result(f, index[f.rule], root) for f in ordered]
    for finding, suppression in silenced:
        result = _result(finding, index[finding.rule], root)
        entry: dict[str, Any] = {
            "kind": "external" if suppression.scope == "fleet" else "inSource",
            "justification": suppression.reason,
        }
        if suppression.location.path:
            entry["location"] = {"physicalLocation": _physical(suppression.location, root)}
        result["suppressions"] = [entry]
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {"tool": {"driver": driver}, "columnKind": "unicodeCodePoints", "results": results}
        ],
    }


def _result(finding: Finding, rule_index: int, root: str | PurePath | None) -> dict[str, Any]:
    text = f"{finding.key_path}: {finding.message}" if finding.key_path else finding.message
    if finding.hint:
        text += f"\nhint: {finding.hint}"
    result: dict[str, Any] = {
        "ruleId": finding.rule,
        "ruleIndex": rule_index,
        "level": _LEVELS[finding.severity],
        "message": {"text": text},
    }
    if finding.location is not None and finding.location.path:
        result["locations"] = [{"physicalLocation": _physical(finding.location, root)}]
    related = [loc for loc in finding.related if loc.path]
    if related:
        result["relatedLocations"] = [
            {"id": i, "physicalLocation": _physical(loc, root),
             **({"message": {"text": loc.note}} if loc.note else {})}
            for i, loc in enumerate(related)
        ]
    return result


def _physical(location: SourceLocation, root: str | PurePath | None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": _uri(location.path, root)}}
    if location.line > 0:
        region = {"startLine": location.line}
        if location.column > 0:
            region["startColumn"] = location.column
        physical["region"] = region
    return physical


def _uri(path: str, root: str | PurePath | None) -> str:
    """A relative URI reference with forward slashes; absolute paths become ``file://`` URIs."""
    pure: PurePath = PureWindowsPath(path) if "\\" in path else PurePosixPath(path)
    if root is not None and pure.is_absolute():
        base = type(pure)(root)
        if pure.is_relative_to(base):
            pure = pure.relative_to(base)
    posix = pure.as_posix()
    if pure.is_absolute():
        return "file://" + quote(posix if posix.startswith("/") else "/" + posix, safe="/:")
    while posix.startswith("./"):
        posix = posix[2:]
    return quote(posix, safe="/")
