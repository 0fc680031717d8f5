"""DRA lint rules of the API server's limits and the cluster's declared gates: GEN202 for a
beta gate declared off, GEN215 (the DRA driver chart's kubeVersion floor), GEN216 (32
selectors), GEN217 (settings a device-plugin cluster cannot honour)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gen.errors import Finding, Severity
from tests.helpers import LINT_BASE, lint_fleet

ALTERNATIVES = LINT_BASE["service.yaml"].replace(
    "gpu: {gpu_class: h100, count: 4}",
    "gpu: {gpu_class: h100, count: 4, alternatives: [{gpu_class: h100, count: 8}]}",
)


def _of(findings: list[Finding], rule: str) -> list[Finding]:
    return [f for f in findings if f.rule == rule]


def _cluster(version: str, extra: str = "") -> str:
    return LINT_BASE["cluster.yaml"].replace('"1.34.2"', f'"{version}"').replace(
        "allocation: dra", "allocation: dra" + extra)


def test_beta_gate_declared_off_on_135(tmp_path: Path) -> None:
    """DRAPrioritizedList is beta (on) in 1.35; declared false, firstAvailable is dropped:
    GEN202 at the alternatives, the declaration as a related location."""
    cluster = _cluster("1.35.0", "\nfeature_gates: {DRAPrioritizedList: false}")
    findings = lint_fleet(tmp_path, **{"cluster.yaml": cluster, "service.yaml": ALTERNATIVES})
    (gate,) = _of(findings, "GEN202")
    assert "declares the DRAPrioritizedList feature gate off" in gate.message
    assert gate.key_path == "gpu.alternatives"
    (declared,) = gate.related
    assert declared.path.endswith("cluster.yaml") and declared.line == 5
    assert declared.note == "declared off in cluster 'prod'"


def test_ga_gate_declared_off_on_136_is_honoured(tmp_path: Path) -> None:
    """DRAPrioritizedList is GA but not locked in 1.36 (kube_features.go@v1.36.3): declared
    false, the API server drops firstAvailable and refuses the template: GEN202, and the
    declaration itself is accepted (no GEN220)."""
    cluster = _cluster("1.36.3", "\nfeature_gates: {DRAPrioritizedList: false}")
    findings = lint_fleet(tmp_path, **{"cluster.yaml": cluster, "service.yaml": ALTERNATIVES})
    (gate,) = _of(findings, "GEN202")
    assert "declares the DRAPrioritizedList feature gate off" in gate.message
    assert "exactly one of `exactly` or `firstAvailable` is required" in gate.message
    assert _of(findings, "GEN220") == []


def test_locked_gate_declared_off_on_137(tmp_path: Path) -> None:
    """DRAPrioritizedList is locked on in 1.37: declaring it false is GEN220 at the gate
    (no component starts), and firstAvailable is served (no GEN202)."""
    cluster = _cluster("1.37.2", "\nfeature_gates: {DRAPrioritizedList: false}")
    findings = lint_fleet(tmp_path, **{"cluster.yaml": cluster, "service.yaml": ALTERNATIVES})
    assert _of(findings, "GEN202") == []
    (locked,) = _of(findings, "GEN220")
    assert locked.key_path == "feature_gates.DRAPrioritizedList"
    assert "feature is locked to true" in locked.message
    assert "kube_features.go@v1.37.2" in locked.message


@pytest.mark.parametrize(("version", "gates"), [
    ("1.35.0", ""), ("1.35.0", "\nfeature_gates: {DRAPrioritizedList: true}"),
    ("1.36.0", ""), ("1.37.2", "\nfeature_gates: {DRAPrioritizedList: true}"),
])
def test_beta_gate_near_misses(tmp_path: Path, version: str, gates: str) -> None:
    """On by default, declared on, or locked on and declared on: no GEN202, no GEN220."""
    cluster = _cluster(version, gates)
    findings = lint_fleet(tmp_path, **{"cluster.yaml": cluster, "service.yaml": ALTERNATIVES})
    assert _of(findings, "GEN202") == [] and _of(findings, "GEN220") == []


def test_dra_chart_needs_132(tmp_path: Path) -> None:
    """A 1.31 DRA cluster gets a DRA driver chart whose kubeVersion is >=1.32: GEN215 at the
    cluster's kubernetes_version."""
    findings = lint_fleet(tmp_path, **{"cluster.yaml": _cluster("1.31.6")})
    (floor,) = _of(findings, "GEN215")
    assert floor.key_path == "kubernetes_version"
    assert floor.location is not None and floor.location.line == 3
    assert ">= 1.32" in floor.message


def test_dra_chart_on_132_is_fine(tmp_path: Path) -> None:
    """The near miss: 1.32 meets the floor."""
    cluster = _cluster("1.32.5", "\nruntime_config: [resource.k8s.io/v1beta1]\n"
                       "feature_gates: {DynamicResourceAllocation: true}")
    assert _of(lint_fleet(tmp_path, **{"cluster.yaml": cluster}), "GEN215") == []


def _cel(n: int) -> str:
    entries = ", ".join(["\"device.attributes['gpu.nvidia.com'].index >= 0\""] * n)
    return LINT_BASE["classes.yaml"].replace(
        "match: {product: h100-sxm5-80gb}",
        f"match: {{product: h100-sxm5-80gb}}\ncel: [{entries}]")


def test_33_selectors_in_a_device_class(tmp_path: Path) -> None:
    """The structured match and 32 cel entries are 33 selectors: GEN216 at the first cel
    entry beyond the limit."""
    (limit,) = _of(lint_fleet(tmp_path, **{"classes.yaml": _cel(32)}), "GEN216")
    assert limit.key_path == "cel[31]"
    assert "33 selectors" in limit.message


def test_32_selectors_are_allowed(tmp_path: Path) -> None:
    """The near miss: exactly 32."""
    assert _of(lint_fleet(tmp_path, **{"classes.yaml": _cel(31)}), "GEN216") == []


def test_33_request_selectors(tmp_path: Path) -> None:
    """A request with 33 selectors: GEN216 at gpu.selectors[32]."""
    selectors = ", ".join(["\"device.attributes['gpu.nvidia.com'].index >= 0\""] * 33)
    service = LINT_BASE["service.yaml"].replace(
        "gpu: {gpu_class: h100, count: 4}",
        f"gpu: {{gpu_class: h100, count: 4, selectors: [{selectors}]}}")
    (limit,) = _of(lint_fleet(tmp_path, **{"service.yaml": service}), "GEN216")
    assert limit.key_path == "gpu.selectors[32]"


DEVICE_PLUGIN = LINT_BASE["cluster.yaml"].replace('"1.34.2"', '"1.31.6"').replace(
    "allocation: dra", "allocation: device-plugin")


@pytest.mark.parametrize(("gpu", "key"), [
    ("{gpu_class: h100, count: 4, selectors: [\"device.attributes['gpu.nvidia.com'].index "
     ">= 0\"]}", "gpu.selectors"),
    ("{gpu_class: h100, count: 4, same: [gpu.nvidia.com/pcieRoot]}", "gpu.same"),
    ("{gpu_class: h100, count: 4, allocation_mode: All}", "gpu.allocation_mode"),
])
def test_device_plugin_cannot_honour(tmp_path: Path, gpu: str, key: str) -> None:
    """Request selectors, 'same' and allocation_mode All on a device-plugin cluster: a
    GEN217 warning at the setting, naming the service's cluster, instead of silence."""
    service = LINT_BASE["service.yaml"].replace(
        "gpu: {gpu_class: h100, count: 4}", f"gpu: {gpu}")
    findings = lint_fleet(tmp_path, **{"cluster.yaml": DEVICE_PLUGIN, "service.yaml": service})
    (dropped,) = _of(findings, "GEN217")
    assert dropped.key_path == key and dropped.severity is Severity.WARNING
    assert "cluster 'prod' uses the device plugin" in dropped.message


def test_device_plugin_sharing_names_the_service(tmp_path: Path) -> None:
    """A class's DRA sharing on a device-plugin cluster: GEN217 at the class's sharing, the
    service that uses it as the related location."""
    classes = LINT_BASE["classes.yaml"].replace(
        "match: {product: h100-sxm5-80gb}",
        "match: {product: h100-sxm5-80gb}\nsharing: {strategy: time-slicing}")
    findings = lint_fleet(tmp_path, **{"cluster.yaml": DEVICE_PLUGIN, "classes.yaml": classes})
    (dropped,) = _of(findings, "GEN217")
    assert dropped.key_path == "sharing"
    assert "service 'llama-70b'" in dropped.message
    assert dropped.related[0].note == "used by service 'llama-70b'"


def test_device_plugin_plain_request_is_fine(tmp_path: Path) -> None:
    """The near miss: a plain request on a device-plugin cluster."""
    assert _of(lint_fleet(tmp_path, **{"cluster.yaml": DEVICE_PLUGIN}), "GEN217") == []
