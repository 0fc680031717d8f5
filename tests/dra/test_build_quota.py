"""GPU quotas on device-plugin clusters: extended-resource ResourceQuotas, not dropped."""

from __future__ import annotations

from pathlib import Path

from gen.dra.build import build
from gen.pipeline import load_plan
from tests.helpers import LINT_BASE

DEVICE_PLUGIN = LINT_BASE["cluster.yaml"].replace('"1.34.2"', '"1.31.6"').replace(
    "allocation: dra", "allocation: device-plugin") + (
    "quotas:\n  - {namespace: inference, gpu_class: h100, devices: 8}\n"
    "  - {namespace: inference, gpu_class: mig-3g, devices: 2}\n"
    "  - {namespace: batch, gpu_class: h100, devices: 4}\n")


def _quotas(tmp_path: Path, cluster: str) -> list[tuple[str, str, dict[str, str]]]:
    root = tmp_path / "profiles"
    root.mkdir()
    for name, text in {**LINT_BASE, "cluster.yaml": cluster}.items():
        (root / name).write_text(text)
    (plan,) = load_plan(root, base=tmp_path).clusters
    return sorted(
        (spec.context["namespace"], spec.context["name"], dict(spec.context["hard"]))
        for spec in build(plan).specs if spec.template == "dra/resourcequota.yaml.j2"
    )


def test_device_plugin_quotas_count_extended_resources(tmp_path: Path) -> None:
    """Whole GPUs as requests.nvidia.com/gpu, a MIG class as requests.nvidia.com/mig-<p>
    (the mixed strategy of this cluster), one quota per namespace and resource."""
    assert _quotas(tmp_path, DEVICE_PLUGIN) == [
        ("batch", "gpu-quota", {"requests.nvidia.com/gpu": "4"}),
        ("inference", "gpu-quota", {"requests.nvidia.com/gpu": "8"}),
        ("inference", "gpu-quota-mig-3g-40gb", {"requests.nvidia.com/mig-3g.40gb": "2"}),
    ]


def test_dra_quotas_are_device_class_quotas(tmp_path: Path) -> None:
    """The near miss: on a DRA cluster the quota counts the DeviceClass's devices."""
    cluster = LINT_BASE["cluster.yaml"] + (
        "quotas:\n  - {namespace: inference, gpu_class: h100, devices: 8}\n")
    assert _quotas(tmp_path, cluster) == [
        ("inference", "gpu-h100", {"h100.deviceclass.resource.k8s.io/devices": "8"}),
    ]
