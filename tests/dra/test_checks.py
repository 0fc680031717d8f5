"""DRA lint rules (GEN2xx) fire at the line to change."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import LINT_BASE, lint_fleet


@pytest.mark.parametrize(("version", "runtime"), [("1.33.4", "resource.k8s.io/v1beta2"),
                                                  ("1.32.5", "resource.k8s.io/v1beta1")])
def test_beta_dra_needs_runtime_config_and_gate(tmp_path: Path, version: str, runtime: str) -> None:
    """On 1.32/1.33 the beta API must be enabled and declared, else GEN201 names the flag."""
    cluster = LINT_BASE["cluster.yaml"].replace('"1.34.2"', f'"{version}"')
    findings = [f for f in lint_fleet(tmp_path, **{"cluster.yaml": cluster}) if f.rule == "GEN201"]
    messages = " ".join(f.message for f in findings)
    assert runtime in messages
    assert "DynamicResourceAllocation" in messages

def test_first_available_on_133_without_gate_is_refused(tmp_path: Path) -> None:
    """gpu.alternatives on 1.33 without DRAPrioritizedList: the field would be dropped."""
    cluster = LINT_BASE["cluster.yaml"].replace('"1.34.2"', '"1.33.4"').replace(
        "allocation: dra",
        "allocation: dra\nruntime_config: [resource.k8s.io/v1beta2]\n"
        "feature_gates: {DynamicResourceAllocation: true}",
    )
    service = LINT_BASE["service.yaml"].replace(
        "gpu: {gpu_class: h100, count: 4}",
        "gpu: {gpu_class: h100, count: 4, alternatives: [{gpu_class: h100, count: 8}]}",
    )
    findings = lint_fleet(tmp_path, **{"cluster.yaml": cluster, "service.yaml": service})
    (gate,) = [f for f in findings if f.rule == "GEN202"]
    assert "silently drop" in gate.message
    assert gate.key_path == "gpu.alternatives"

def test_sharing_needs_driver_gate(tmp_path: Path) -> None:
    """Time-slicing without the driver's TimeSlicingSettings gate is GEN207 at the class."""
    classes = LINT_BASE["classes.yaml"].replace(
        "match: {product: h100-sxm5-80gb}",
        "match: {product: h100-sxm5-80gb}\nsharing: {strategy: time-slicing, interval: Long}",
    )
    (finding,) = [
        f for f in lint_fleet(tmp_path, **{"classes.yaml": classes}) if f.rule == "GEN207"
    ]
    assert "TimeSlicingSettings" in finding.message
    assert finding.key_path == "sharing.strategy"

def test_cel_that_does_not_compile(tmp_path: Path) -> None:
    """A raw CEL selector with a syntax error is GEN203 at the selector."""
    classes = LINT_BASE["classes.yaml"].replace(
        "match: {product: h100-sxm5-80gb}",
        "match: {product: h100-sxm5-80gb}\ncel: [\"device.attributes['gpu.nvidia.com'].\"]",
    )
    (finding,) = [
        f for f in lint_fleet(tmp_path, **{"classes.yaml": classes}) if f.rule == "GEN203"
    ]
    assert finding.key_path == "cel[0]"


_NORMALIZE = "semver('580.95.05', true).compareTo(semver('580.0.0')) >= 0"


def _with_cel(expression: str) -> str:
    return LINT_BASE["classes.yaml"].replace(
        "match: {product: h100-sxm5-80gb}",
        f'match: {{product: h100-sxm5-80gb}}\ncel: ["{expression}"]',
    )


def test_cel_function_newer_than_the_cluster(tmp_path: Path) -> None:
    """A class selector using a function the cluster's API server does not yet offer to new
    objects is GEN203 at that cel entry, naming the first version and the cluster."""
    cluster = LINT_BASE["cluster.yaml"].replace('"1.34.2"', '"1.33.1"')
    findings = lint_fleet(
        tmp_path, **{"classes.yaml": _with_cel(_NORMALIZE), "cluster.yaml": cluster}
    )
    (finding,) = [f for f in findings if f.rule == "GEN203"]
    assert finding.key_path == "cel[0]"
    assert "from Kubernetes 1.34; this cluster runs 1.33 (cluster 'prod')" in finding.message
    assert finding.location is not None and finding.location.path.endswith("classes.yaml")


def test_cel_function_the_cluster_has(tmp_path: Path) -> None:
    """Near miss: the same selector on a 1.34 cluster compiles."""
    findings = lint_fleet(tmp_path, **{"classes.yaml": _with_cel(_NORMALIZE)})
    assert not [f for f in findings if f.rule == "GEN203"]


_SHARED = "!device.allowMultipleAllocations"


@pytest.mark.parametrize(("version", "gates", "refused"), [
    ("1.35.4", "", True),  # alpha, off by default
    ("1.36.3", "", False),  # beta, on by default
    ("1.36.3", "feature_gates: {DRAConsumableCapacity: false}\n", True),
    ("1.35.4", "feature_gates: {DRAConsumableCapacity: true}\n", False),
])
def test_allow_multiple_allocations_as_the_clusters_gate_says(
        tmp_path: Path, version: str, gates: str, refused: bool) -> None:
    """A class selector on device.allowMultipleAllocations compiles where the cluster's
    DRAConsumableCapacity gate is on, and is GEN203 naming the gate and cluster where off."""
    cluster = LINT_BASE["cluster.yaml"].replace('"1.34.2"', f'"{version}"').replace(
        "allocation: dra\n", f"allocation: dra\n{gates}")
    findings = [f for f in lint_fleet(tmp_path, **{"classes.yaml": _with_cel(_SHARED),
                                                   "cluster.yaml": cluster})
                if f.rule == "GEN203"]
    if not refused:
        assert findings == []
        return
    (finding,) = findings
    assert finding.key_path == "cel[0]"
    assert "undefined field 'allowMultipleAllocations'" in finding.message
    assert "DRAConsumableCapacity feature gate, which is off on this cluster" in finding.message
    assert "(cluster 'prod')" in finding.message


_HOPPER = "---\nkind: GPUClass\nname: hopper\nmatch: {architecture: Hopper}\n"


def _quotas(*entries: str) -> str:
    return LINT_BASE["cluster.yaml"] + "quotas:\n" + "".join(entries)


def test_quota_bypassed_by_a_class_on_the_same_gpus(tmp_path: Path) -> None:
    cluster = _quotas("  - {namespace: team-a, gpu_class: h100, devices: 8}\n",
                      "  - {namespace: team-b, gpu_class: hopper, devices: 8}\n")
    findings = [f for f in lint_fleet(
        tmp_path, **{"cluster.yaml": cluster,
                     "classes.yaml": LINT_BASE["classes.yaml"] + _HOPPER})
        if f.rule == "GEN218"]
    assert [(f.location.line if f.location else 0, f.key_path) for f in findings] == [
        (18, "quotas[0].gpu_class"), (19, "quotas[1].gpu_class")]
    assert "class 'hopper' selects the same devices" in findings[0].message
    assert "pool 'h100'" in findings[0].message


def test_quota_on_both_classes_or_on_disjoint_devices_is_not_bypassed(tmp_path: Path) -> None:
    both = _quotas("  - {namespace: team-a, gpu_class: h100, devices: 8}\n",
                   "  - {namespace: team-a, gpu_class: hopper, devices: 8}\n")
    assert not [f for f in lint_fleet(
        tmp_path, **{"cluster.yaml": both,
                     "classes.yaml": LINT_BASE["classes.yaml"] + _HOPPER})
        if f.rule == "GEN218"]
    (tmp_path / "profiles").rename(tmp_path / "first")
    disjoint = _quotas("  - {namespace: team-a, gpu_class: h100, devices: 8}\n",
                       "  - {namespace: team-b, gpu_class: mig-3g, devices: 8}\n")
    assert not [f for f in lint_fleet(tmp_path, **{"cluster.yaml": disjoint})
                if f.rule == "GEN218"]
