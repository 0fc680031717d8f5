"""Tests for gen.verify.inventory: node summaries, and GPU Feature Discovery's label forms."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal

import pytest

from gen.pipeline import load_plan
from gen.verify.inventory import (
    driver_text,
    expected_slice_inventory,
    gfd_product,
    gfd_product_matches,
    plugin_inventory,
    version_minor,
)
from gen.verify.state import NodeState
from tests.helpers import REPO


@pytest.mark.parametrize(("product", "label"), [
    # The cases of TestSanitise, NVIDIA/k8s-device-plugin internal/lm/resource_test.go@v0.20.0
    ("a space separated string", "a-space-separated-string"),
    ("some(thing)else", "somethingelse"),
    ("some ( thing )else", "some-thing-else"),
    ("NVIDIA-TITAN-X-(Pascal)", "NVIDIA-TITAN-X-Pascal"),
    (" input  with multiple   spaces   ", "input-with-multiple-spaces"),
    ("some [ / thing / ]else", "some-thing-else"),
    ("some / thing /else", "some-thing-else"),
    ("some-thing.else_new", "some-thing.else_new"),
    ("NVIDIA H100 80GB HBM3", "NVIDIA-H100-80GB-HBM3"),
])
def test_gfd_product(product: str, label: str) -> None:
    assert gfd_product(product) == label


def test_gfd_product_forms() -> None:
    name = "NVIDIA H100 80GB HBM3"
    assert gfd_product_matches("NVIDIA-H100-80GB-HBM3", name)
    assert gfd_product_matches("NVIDIA-H100-80GB-HBM3-MIG-1g.10gb", name)  # single strategy
    assert gfd_product_matches("NVIDIA-H100-80GB-HBM3-SHARED", name)  # time-sliced
    assert not gfd_product_matches("NVIDIA-H100-NVL", name)
    assert not gfd_product_matches("NVIDIA-H100-80GB-HBM3e", name)


def test_driver_versions_compare_as_the_dra_driver_publishes_them() -> None:
    assert driver_text("580.95.05") == "580.95.5" == driver_text("580.95.5")
    assert driver_text("not a version") == "not a version"


def test_plugin_inventory_old_driver_labels_and_replicas() -> None:
    node = NodeState("n", {"nvidia.com/cuda.driver.major": "570", "nvidia.com/cuda.driver.minor":
                           "86", "nvidia.com/cuda.driver.rev": "15",
                           "nvidia.com/gpu.replicas": "2"},
                     {"nvidia.com/gpu": Decimal(8), "nvidia.com/mig-1g.10gb": Decimal(7),
                      "cpu": Decimal(64)})
    inventory = plugin_inventory(node)
    assert inventory.driver == "570.86.15"
    assert inventory.resources == Counter({"nvidia.com/gpu": 4, "nvidia.com/mig-1g.10gb": 7})
    assert plugin_inventory(NodeState("m")).empty


def test_expected_inventory_of_a_mig_pool() -> None:
    plan = load_plan(REPO / "profiles")
    cluster = next(c for c in plan.clusters if c.name == "prod-us-east")
    full, mig = cluster.pools
    assert expected_slice_inventory(full, 34).devices == Counter({("gpu", ""): 8})
    inventory = expected_slice_inventory(mig, 34)
    assert inventory.gpus == 8
    assert inventory.products == {"NVIDIA H100 80GB HBM3"}
    assert inventory.drivers == {"595.91.7"}
    assert {kind for kind, _ in inventory.devices} == {"mig"}


def test_version_minor() -> None:
    assert version_minor("v1.36.3") == (1, 36)
    assert version_minor("v1.34.2-eks-1234") == (1, 34)
    assert version_minor("1.31") == (1, 31)
    assert version_minor("weird") is None
