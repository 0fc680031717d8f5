"""GEN303 only on the pools a service's class can land on (no false alarm from a pool of
other GPUs with an old driver)."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import LINT_BASE, lint_fleet

OLD_L4 = LINT_BASE["cluster.yaml"] + (
    "  - {name: l4, gpu: l4, gpus_per_node: 1, nodes: 2, driver_version: \"535.104.05\"}\n")
"""The base cluster plus a pool of L4s whose driver is too old for the vLLM image's CUDA."""


def test_old_driver_on_a_pool_the_class_never_takes(tmp_path: Path) -> None:
    """The H100 service cannot land on the L4 pool: no GEN303 for it."""
    findings = lint_fleet(tmp_path, **{"cluster.yaml": OLD_L4})
    assert [f for f in findings if f.rule == "GEN303"] == []


def test_old_driver_on_the_pool_the_class_takes(tmp_path: Path) -> None:
    """The near miss: a service of an L4 class gets GEN303 at the L4 pool's driver."""
    classes = LINT_BASE["classes.yaml"] + "---\nkind: GPUClass\nname: l4\nmatch: {product: l4}\n"
    service = LINT_BASE["service.yaml"].replace(
        "meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.2-3B-Instruct").replace(
        "gpu: {gpu_class: h100, count: 4}", "gpu: {gpu_class: l4}").replace(
        "parallelism: {tensor: 4}\n", "").replace("max_model_len: 32768", "max_model_len: 4096")
    findings = lint_fleet(tmp_path, **{"cluster.yaml": OLD_L4, "classes.yaml": classes,
                                       "service.yaml": service})
    (cuda,) = [f for f in findings if f.rule == "GEN303"]
    assert cuda.key_path == "node_pools[2].driver_version"
