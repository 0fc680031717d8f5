"""Tests for gen.emit.sarif: findings as SARIF 2.1.0."""

from __future__ import annotations

import json
from typing import Any

from gen.emit.sarif import to_sarif
from gen.errors import Finding, Severity, SourceLocation
from gen.rules import RULES, Rule, Section

FINDINGS = [
    Finding(
        rule="GEN030",
        message="MIG layout does not fit an H100 80GB",
        location=SourceLocation("profiles/mig.yaml", 7, 5),
        key_path="profiles.3g.40gb",
        hint="use at most 2 × 3g.40gb per GPU",
    ),
    Finding(
        rule="GEN021",
        message="Deployment vllm (apps/v1): expected integer, but got string",
        location=SourceLocation("out/gpu-a/inference/deployment-vllm.yaml"),
        key_path="spec.replicas",
        related=(SourceLocation("profiles/services.yaml", 12, 3),),
    ),
    Finding(rule="GEN040", message="no line", severity=Severity.WARNING),
    Finding(
        rule="GEN041",
        message="a note",
        location=SourceLocation("profiles/fleet.yaml", 3),
        severity=Severity.INFO,
    ),
]

LEVELS = {"none", "note", "warning", "error"}


def check_required(log: dict[str, Any]) -> None:
    """Check the properties the SARIF 2.1.0 schema requires, by hand (no network)."""
    assert log["version"] == "2.1.0"
    assert log["$schema"].endswith("sarif-2.1.0.json")
    assert isinstance(log["runs"], list)
    for run in log["runs"]:
        driver = run["tool"]["driver"]
        assert isinstance(driver["name"], str)
        ids = [rule["id"] for rule in driver.get("rules", [])]
        assert len(ids) == len(set(ids))
        for rule in driver.get("rules", []):
            assert isinstance(rule["shortDescription"]["text"], str)
        for result in run["results"]:
            assert isinstance(result["message"]["text"], str)
            assert result["level"] in LEVELS
            assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]
            for location in result.get("locations", []) + result.get("relatedLocations", []):
                physical = location["physicalLocation"]
                uri = physical["artifactLocation"]["uri"]
                assert "\\" not in uri
                assert not uri.startswith("/")
                region = physical.get("region", {})
                assert region.get("startLine", 1) >= 1
                assert region.get("startColumn", 1) >= 1


def test_structure_has_required_sarif_fields() -> None:
    """The log carries every property SARIF 2.1.0 requires, and is JSON-serialisable."""
    log = to_sarif(FINDINGS, tool_version="0.1.0")
    check_required(log)
    json.dumps(log)
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["name"] == "gen"
    assert driver["version"] == "0.1.0"


def test_result_fields() -> None:
    """A located finding becomes a result with ruleId, level, message and a region."""
    log = to_sarif(FINDINGS, tool_version="0.1.0")
    (result,) = [r for r in log["runs"][0]["results"] if r["ruleId"] == "GEN030"]
    assert result["level"] == "error"
    assert result["message"]["text"] == (
        "profiles.3g.40gb: MIG layout does not fit an H100 80GB\n"
        "hint: use at most 2 × 3g.40gb per GPU"
    )
    assert result["locations"] == [
        {
            "physicalLocation": {
                "artifactLocation": {"uri": "profiles/mig.yaml"},
                "region": {"startLine": 7, "startColumn": 5},
            }
        }
    ]


def test_levels_and_missing_locations() -> None:
    """Severities map to error/warning/note; no location means no locations or region."""
    results = to_sarif(FINDINGS, tool_version="0.1.0")["runs"][0]["results"]
    by_rule = {r["ruleId"]: r for r in results}
    assert by_rule["GEN040"]["level"] == "warning"
    assert "locations" not in by_rule["GEN040"]
    assert by_rule["GEN041"]["level"] == "note"
    assert by_rule["GEN041"]["locations"][0]["physicalLocation"]["region"] == {"startLine": 3}
    assert "region" not in by_rule["GEN021"]["locations"][0]["physicalLocation"]


def test_related_locations() -> None:
    """Finding.related (the profile behind an output file) becomes relatedLocations."""
    results = to_sarif(FINDINGS, tool_version="0.1.0")["runs"][0]["results"]
    (result,) = [r for r in results if r["ruleId"] == "GEN021"]
    assert result["relatedLocations"] == [
        {
            "id": 0,
            "physicalLocation": {
                "artifactLocation": {"uri": "profiles/services.yaml"},
                "region": {"startLine": 12, "startColumn": 3},
            },
        }
    ]


def test_rules_listed_with_descriptions_sorted() -> None:
    """Rules are sorted by id; descriptions are the rules' titles, else the id."""
    fits = Rule("GEN030", "MIG layout fits the GPU", Section.MIG, "the layout fits")
    log = to_sarif(FINDINGS, tool_version="0.1.0", rules={"GEN030": fits})
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["GEN021", "GEN030", "GEN040", "GEN041"]
    assert rules[1]["shortDescription"] == {"text": "MIG layout fits the GPU"}
    assert rules[0]["shortDescription"] == {"text": "GEN021"}


def test_order_is_deterministic_and_deduplicated() -> None:
    """Any input order, with duplicates, gives the same log."""
    first = to_sarif(FINDINGS, tool_version="1")
    second = to_sarif([*reversed(FINDINGS), FINDINGS[0]], tool_version="1")
    assert json.dumps(first) == json.dumps(second)
    assert len(first["runs"][0]["results"]) == len(FINDINGS)


def test_uris_are_relative_with_forward_slashes() -> None:
    """Windows separators and ./ prefixes are normalised; spaces are percent-encoded."""
    findings = [
        Finding(rule="GEN001", message="a", location=SourceLocation("profiles\\gpu.yaml", 1, 1)),
        Finding(rule="GEN001", message="b", location=SourceLocation("./profiles/my fleet.yaml")),
    ]
    results = to_sarif(findings, tool_version="1")["runs"][0]["results"]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
    assert sorted(uris) == ["profiles/gpu.yaml", "profiles/my%20fleet.yaml"]


def test_absolute_paths_relative_to_root() -> None:
    """An absolute path under root becomes relative to it; others become file:// URIs."""
    findings = [
        Finding(rule="GEN001", message="a", location=SourceLocation("/repo/profiles/gpu.yaml")),
        Finding(rule="GEN001", message="b", location=SourceLocation("/elsewhere/x.yaml")),
    ]
    results = to_sarif(findings, tool_version="1", root="/repo")["runs"][0]["results"]
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
    assert sorted(uris) == ["file:///elsewhere/x.yaml", "profiles/gpu.yaml"]


def test_no_findings() -> None:
    """No findings still give a valid log with one run and no results."""
    log = to_sarif([], tool_version="0.1.0")
    check_required(log)
    assert log["runs"][0]["results"] == []
    assert log["runs"][0]["tool"]["driver"]["rules"] == []


def test_registry_rules_are_all_listed_with_their_titles() -> None:
    """With the registry, every rule gen has is a descriptor whose text is its title."""
    log = to_sarif(FINDINGS[:1], tool_version="1", rules=RULES)
    check_required(log)
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    described = {r["id"]: r["shortDescription"]["text"] for r in rules}
    assert set(described) == set(RULES)
    assert all(described[rule_id] == r.title for rule_id, r in RULES.items())
