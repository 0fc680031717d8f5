"""The Kubernetes gate table: its data, the stage of a gate at a minor, what components refuse,
the API versions each minor serves, the extractor's parser and the generated page."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gen.k8s.gates import GateTable, gate_table, gates_markdown
from gen.k8s.versions import dra_api_version
from tests.helpers import REPO
from tools.k8s_gates import ExtractError, parse_gate_table, parse_lifecycle, parse_spec


def test_every_row_names_its_release_tag() -> None:
    """Each row cites kubernetes/kubernetes PATH@TAG:LINE with its own release's tag."""
    table = gate_table()
    assert sorted(table.releases) == [35, 36, 37, 38]
    assert table.releases[38].prerelease and not table.releases[37].prerelease
    for name in table.gates():
        for minor, release in table.releases.items():
            state = table.state(name, minor)
            if state.exists:
                assert state.source.startswith("kubernetes/kubernetes pkg/features/")
                assert f"@{release.tag}:" in state.source


@pytest.mark.parametrize(("gate", "minor", "stage", "default", "locked"), [
    ("DRAPrioritizedList", 35, "BETA", True, False),
    ("DRAPrioritizedList", 36, "GA", True, False),
    ("DRAPrioritizedList", 37, "GA", True, True),
    ("DRAExtendedResource", 36, "BETA", True, False),
    ("DRAExtendedResource", 37, "GA", True, True),
    ("DRAPartitionableDevices", 35, "ALPHA", False, False),
    ("DRAPartitionableDevices", 37, "BETA", True, False),
    ("DRADeviceTaintRules", 36, "BETA", False, False),
    ("DRAAdminAccess", 36, "GA", True, True),
    ("DynamicResourceAllocation", 35, "GA", True, True),
    # Two 1.37 specs: on only with --min-compatibility-version>=1.37; the default is 1.36.
    ("DRAFractionalCapacityRange", 37, "BETA", False, False),
    # Below the oldest release, from its history: alpha in 1.33, beta in 1.34.
    ("DRAPrioritizedList", 34, "BETA", True, False),
    ("DRAPrioritizedList", 33, "ALPHA", False, False),
])
def test_stage_at_minor(gate: str, minor: int, stage: str, default: bool, locked: bool) -> None:
    """The stages the audit of 2026-12 lists, read from each minor's own tag."""
    state = gate_table().state(gate, minor)
    assert (state.exists, state.stage, state.default, state.locked) == (
        True, stage, default, locked)


def test_what_components_refuse() -> None:
    """Locked to the other value, removed, not yet added, never known: refused; the locked
    value itself and a switchable GA gate: accepted."""
    table = gate_table()
    assert "locked to true" in (table.state("DRAExtendedResource", 37).refusal(False) or "")
    assert table.state("DRAExtendedResource", 37).refusal(True) is None
    assert table.state("DRAPrioritizedList", 36).refusal(False) is None
    removed = table.state("DynamicResourceAllocation", 38).refusal(True) or ""
    assert removed.startswith("unrecognized feature gate") and "removed" in removed
    early = table.state("DRADeviceTaintRules", 34).refusal(True) or ""
    assert "arrived in 1.35" in early
    assert "no Kubernetes release" in (table.state("DRANoSuchGate", 37).refusal(True) or "")
    assert table.close_match("DRAPrioritisedList", 37) == "DRAPrioritizedList"


def test_no_verdict_past_the_newest_release() -> None:
    """1.39 is past the table: a gate absent from 1.38 is not called unknown there."""
    state = gate_table().state("DynamicResourceAllocation", 39)
    assert state.exists is None and state.refusal(True) is None


@given(st.integers(36, 39), st.booleans())
def test_a_locked_gate_ignores_declarations(minor: int, declared: bool) -> None:
    """enabled() of a locked gate is its default whatever the cluster declares."""
    table = gate_table()
    state = table.state("DRAAdminAccess", minor)
    assert state.locked
    assert table.enabled("DRAAdminAccess", minor, {"DRAAdminAccess": declared}) is state.default


def test_removed_api_versions() -> None:
    """v1beta1 is not served from 1.38, v1beta2 from 1.39; what gen renders is served."""
    table = gate_table()
    served = {m: {a.group_version for a in table.api_versions(m) if a.served(m)}
              for m in (35, 37, 38, 39)}
    assert "resource.k8s.io/v1beta1" in served[37] and "resource.k8s.io/v1beta1" not in served[38]
    assert "resource.k8s.io/v1beta2" in served[38] and "resource.k8s.io/v1beta2" not in served[39]
    for minor, versions in served.items():
        assert dra_api_version(minor) in versions


GO_TABLE = '''
const (
	// Doc.
	DRAThing featuregate.Feature = "DRAThing"
)

var defaultVersionedKubernetesFeatureGates = map[featuregate.Feature]featuregate.VersionedSpecs{
	DRAThing: {
		{Version: version.MustParse("1.33"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.36"), Default: true, PreRelease: featuregate.GA,
			LockToDefault: true}, // remove in 1.39
	},

	genericfeatures.Other: {
		{Version: version.MustParse("1.37"), Default: false, PreRelease: featuregate.Beta},
		{Version: version.MustParse("1.37"), Default: true, PreRelease: featuregate.Beta,
			MinCompatibilityVersion: version.MustParse("1.37")},
	},
}
'''


def test_the_extractor_parses_versioned_specs() -> None:
    """Names from the const block, the entry's line, lock and min-compatibility fields."""
    gates = parse_gate_table(GO_TABLE)
    line, specs = gates["DRAThing"]
    assert line == 8
    assert [(s.version, s.stage, s.default, s.locked) for s in specs] == [
        ("1.33", "ALPHA", False, False), ("1.36", "GA", True, True)]
    _, other = gates["Other"]
    assert other[1].min_compatibility == "1.37" and other[0].min_compatibility is None


def test_the_extractor_refuses_what_it_does_not_understand() -> None:
    """An unknown stage is an error, not a guess."""
    with pytest.raises(ExtractError, match="unknown PreRelease"):
        parse_spec('Version: version.MustParse("1.3"), Default: true, PreRelease: featuregate.X')


def test_the_extractor_reads_api_lifecycles() -> None:
    """APILifecycleIntroduced/Deprecated/Removed of DeviceClass."""
    go = "\n".join(
        f"func (in *DeviceClass) APILifecycle{kind}() (major, minor int) {{\n\treturn 1, {n}\n}}"
        for kind, n in (("Introduced", 32), ("Deprecated", 35), ("Removed", 38)))
    assert parse_lifecycle(go) == {"introduced": "1.32", "deprecated": "1.35",
                                   "removed": "1.38"}


def test_a_table_from_other_data() -> None:
    """The table reads any data of the file's shape (a one-release table)."""
    row = {"source": "kubernetes/kubernetes pkg/features/kube_features.go@v1.40.0", "line": 1,
           "specs": [{"version": "1.40", "stage": "ALPHA", "default": False}]}
    table = GateTable({"releases": {"1.40": {"tag": "v1.40.0", "prerelease": False}},
                       "gates": {"DRANew": {"1.40": row}}, "api_versions": {}})
    assert table.state("DRANew", 40).stage == "ALPHA"
    assert table.state("DRANew", 39).exists is False


def test_committed_page_is_the_generated_one() -> None:
    """docs/feature-gates.md is ``python -m gen.k8s.gates``'s output."""
    assert (REPO / "docs" / "feature-gates.md").read_text("utf-8") == gates_markdown()
