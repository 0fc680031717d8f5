"""Lint rules fire on the mistakes that would fail in the cluster, located at the cause."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gen.errors import Finding, Severity
from gen.pipeline import lint

BASE = {
    "cluster.yaml": """\
        kind: Cluster
        name: prod
        kubernetes_version: "1.34.2"
        allocation: dra
        node_pools:
          - name: h100
            gpu: h100-sxm5-80gb
            gpus_per_node: 8
            nodes: 2
            driver_version: "580.95.05"
          - name: mig
            gpu: h100-sxm5-80gb
            gpus_per_node: 8
            nodes: 1
            driver_version: "580.95.05"
            mig_layout: mixed
        """,
    "layout.yaml": """\
        kind: MIGLayout
        name: mixed
        gpu: h100-sxm5-80gb
        profiles: {3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}
        """,
    "classes.yaml": """\
        kind: GPUClass
        name: h100
        match: {product: h100-sxm5-80gb}
        ---
        kind: GPUClass
        name: mig-3g
        device_type: mig
        match: {mig_profile: 3g.40gb}
        """,
    "service.yaml": """\
        kind: InferenceService
        name: llama-70b
        model: meta-llama/Llama-3.1-70B-Instruct
        clusters: [prod]
        gpu: {gpu_class: h100, count: 4}
        parallelism: {tensor: 4}
        serving: {max_model_len: 32768}
        """,
}


BASE = {name: textwrap.dedent(text) for name, text in BASE.items()}


def _lint(tmp_path: Path, **changes: str) -> list[Finding]:
    files = {**BASE, **changes}
    root = tmp_path / "profiles"
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    return lint(root, base=tmp_path)


def _errors(findings: list[Finding]) -> list[Finding]:
    return [f for f in findings if f.severity is Severity.ERROR]


def test_base_fleet_is_clean(tmp_path: Path) -> None:
    """The base fleet used by these tests has no errors."""
    assert _errors(_lint(tmp_path)) == []


def test_impossible_mig_layout(tmp_path: Path) -> None:
    """A layout that needs more than the 8 memory slices of an H100 is GEN101 at the pool."""
    findings = _lint(tmp_path, **{"layout.yaml": BASE["layout.yaml"].replace(
        "{3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}", "{3g.40gb: 2, 2g.20gb: 1}")})
    errors = _errors(findings)
    assert errors and all(f.rule in ("GEN101", "GEN304") for f in errors)
    mig = [f for f in errors if f.rule == "GEN101"]
    assert mig[0].location is not None and mig[0].location.path.endswith("cluster.yaml")
    assert mig[0].location.line == 16
    assert mig[0].key_path == "node_pools[1].mig_layout"


def test_layout_change_warns_with_runbook(tmp_path: Path) -> None:
    """Changing a pool's layout is a warning that names the runbook."""
    cluster = BASE["cluster.yaml"].replace(
        "mig_layout: mixed", "mig_layout: mixed\n    previous_mig_layout: all-1g"
    )
    findings = _lint(tmp_path, **{"cluster.yaml": cluster})
    (warning,) = [f for f in findings if f.rule == "GEN103"]
    assert warning.severity is Severity.WARNING
    assert "mig-runbook.md" in warning.hint


@pytest.mark.parametrize(("version", "runtime"), [("1.33.4", "resource.k8s.io/v1beta2"),
                                                  ("1.32.5", "resource.k8s.io/v1beta1")])
def test_beta_dra_needs_runtime_config_and_gate(tmp_path: Path, version: str, runtime: str) -> None:
    """On 1.32/1.33 the beta API must be enabled and declared, else GEN201 names the flag."""
    cluster = BASE["cluster.yaml"].replace('"1.34.2"', f'"{version}"')
    findings = [f for f in _lint(tmp_path, **{"cluster.yaml": cluster}) if f.rule == "GEN201"]
    messages = " ".join(f.message for f in findings)
    assert runtime in messages
    assert "DynamicResourceAllocation" in messages


def test_first_available_on_133_without_gate_is_refused(tmp_path: Path) -> None:
    """gpu.alternatives on 1.33 without DRAPrioritizedList: the field would be dropped."""
    cluster = BASE["cluster.yaml"].replace('"1.34.2"', '"1.33.4"').replace(
        "allocation: dra",
        "allocation: dra\nruntime_config: [resource.k8s.io/v1beta2]\n"
        "feature_gates: {DynamicResourceAllocation: true}",
    )
    service = BASE["service.yaml"].replace(
        "gpu: {gpu_class: h100, count: 4}",
        "gpu: {gpu_class: h100, count: 4, alternatives: [{gpu_class: h100, count: 8}]}",
    )
    findings = _lint(tmp_path, **{"cluster.yaml": cluster, "service.yaml": service})
    (gate,) = [f for f in findings if f.rule == "GEN202"]
    assert "silently drop" in gate.message
    assert gate.key_path == "gpu.alternatives"


def test_sharing_needs_driver_gate(tmp_path: Path) -> None:
    """Time-slicing without the driver's TimeSlicingSettings gate is GEN207 at the class."""
    classes = BASE["classes.yaml"].replace(
        "match: {product: h100-sxm5-80gb}",
        "match: {product: h100-sxm5-80gb}\nsharing: {strategy: time-slicing, interval: Long}",
    )
    (finding,) = [f for f in _lint(tmp_path, **{"classes.yaml": classes}) if f.rule == "GEN207"]
    assert "TimeSlicingSettings" in finding.message
    assert finding.key_path == "sharing.strategy"


def test_model_that_does_not_fit(tmp_path: Path) -> None:
    """70B on one H100 does not fit: GEN301 with the reason."""
    service = BASE["service.yaml"].replace("count: 4", "count: 1").replace("tensor: 4",
                                                                           "tensor: 1")
    (finding,) = [f for f in _lint(tmp_path, **{"service.yaml": service}) if f.rule == "GEN301"]
    assert "does not fit" in finding.message
    assert finding.key_path == "serving.max_model_len"


def test_bad_tensor_parallel(tmp_path: Path) -> None:
    """TP 3 does not divide Llama 70B's 64 heads: GEN302 at parallelism."""
    service = BASE["service.yaml"].replace("tensor: 4", "tensor: 3")
    (finding,) = [f for f in _lint(tmp_path, **{"service.yaml": service}) if f.rule == "GEN302"]
    assert "divisible" in finding.message


def test_cuda_runtime_newer_than_driver(tmp_path: Path) -> None:
    """An old driver under a CUDA 13 image is GEN303 at the pool's driver_version."""
    cluster = BASE["cluster.yaml"].replace('"580.95.05"', '"550.54.15"', 1)
    (finding,) = [f for f in _lint(tmp_path, **{"cluster.yaml": cluster}) if f.rule == "GEN303"]
    assert "insufficient" in finding.message
    assert finding.key_path == "node_pools[0].driver_version"


def test_mig_class_without_layout_has_no_pool(tmp_path: Path) -> None:
    """A MIG class on a cluster whose layouts lack the profile is GEN304."""
    service = BASE["service.yaml"].replace(
        "gpu: {gpu_class: h100, count: 4}", "gpu: {gpu_class: mig-3g}"
    ).replace("parallelism: {tensor: 4}", "").replace(
        "meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"
    ).replace("32768", "8192")
    layout = BASE["layout.yaml"].replace("3g.40gb: 1, ", "")
    findings = _lint(tmp_path, **{"service.yaml": service, "layout.yaml": layout})
    assert [f.rule for f in _errors(findings)] == ["GEN304"]


def test_literal_token_in_profile(tmp_path: Path) -> None:
    """A Hugging Face token pasted into a profile is GEN501 at its key."""
    service = BASE["service.yaml"] + "serving: {max_model_len: 32768, extra_args: " \
        "['--revision=hf_abcdefghijklmnopqrstuvwxyz0123456789']}\n"
    service = service.replace("serving: {max_model_len: 32768}\n", "", 1)
    (finding,) = [f for f in _lint(tmp_path, **{"service.yaml": service}) if f.rule == "GEN501"]
    assert finding.key_path == "serving.extra_args[0]"
    assert "hf_abc" not in finding.message


def test_cel_that_does_not_compile(tmp_path: Path) -> None:
    """A raw CEL selector with a syntax error is GEN203 at the selector."""
    classes = BASE["classes.yaml"].replace(
        "match: {product: h100-sxm5-80gb}",
        "match: {product: h100-sxm5-80gb}\ncel: [\"device.attributes['gpu.nvidia.com'].\"]",
    )
    (finding,) = [f for f in _lint(tmp_path, **{"classes.yaml": classes}) if f.rule == "GEN203"]
    assert finding.key_path == "cel[0]"
