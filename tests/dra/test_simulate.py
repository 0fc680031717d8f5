from __future__ import annotations

import textwrap
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from gen.dra.simulate import (
    DRIVER,
    cuda_driver_version,
    group_key,
    node_inventory,
    pool_device_shapes,
    resource_slices,
)
from gen.emit.validate import SchemaValidator
from gen.errors import SourceLocation
from gen.fleet.plan import PoolPlan
from gen.k8s.semver import Version
from gen.pipeline import load_plan

FLEET = """\
kind: Cluster
name: c1
kubernetes_version: "1.34.2"
allocation: dra
node_pools:
  - {name: full, gpu: h100-sxm5-80gb, gpus_per_node: 8, nodes: 3, driver_version: "580.95.05"}
  - {name: mig, gpu: h100-sxm5-80gb, gpus_per_node: 8, nodes: 2, driver_version: "580.95.05",
     mig_layout: mixed}
  - {name: half, gpu: h100-sxm5-80gb, gpus_per_node: 2, nodes: 1, driver_version: "580.95.05",
     mig_layout: half}
---
kind: MIGLayout
name: mixed
gpu: h100-sxm5-80gb
profiles: {3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}
---
kind: MIGLayout
name: half
gpu: h100-sxm5-80gb
per_gpu:
  - {gpus: [0], profiles: {3g.40gb: 2}}
  - {gpus: [1], profiles: {}}
"""


@pytest.fixture(scope="module")
def pools(tmp_path_factory: pytest.TempPathFactory) -> dict[str, PoolPlan]:
    """The pools of the test fleet by name."""
    root: Path = tmp_path_factory.mktemp("fleet")
    (root / "fleet.yaml").write_text(textwrap.dedent(FLEET))
    plan = load_plan(root)
    return {p.name: p for p in plan.clusters[0].pools}


def test_full_gpu_attributes_and_memory(pools: dict[str, PoolPlan]) -> None:
    """A full H100 publishes the driver's attributes and 81559Mi of memory (less than 80Gi)."""
    shapes = pool_device_shapes(pools["full"])
    assert len(shapes) == 1
    shape = shapes[0]
    assert (shape.per_node, shape.nodes, shape.total) == (8, 3, 24)
    attrs = shape.device.attributes
    assert attrs[f"{DRIVER}/type"] == "gpu"
    assert attrs[f"{DRIVER}/productName"] == "NVIDIA H100 80GB HBM3"
    assert attrs[f"{DRIVER}/brand"] == "Nvidia"
    assert attrs[f"{DRIVER}/architecture"] == "Hopper"
    assert attrs[f"{DRIVER}/cudaComputeCapability"] == Version(9, 0, 0)
    assert attrs[f"{DRIVER}/driverVersion"] == Version(580, 95, 5)
    assert attrs[f"{DRIVER}/cudaDriverVersion"] == Version(13, 0, 0)
    assert str(attrs[f"{DRIVER}/uuid"]).startswith("GPU-")
    assert "resource.kubernetes.io/pcieRoot" in attrs
    assert shape.device.capacity[f"{DRIVER}/memory"] == Decimal(81559 * 2**20)
    assert shape.device.capacity[f"{DRIVER}/memory"] < Decimal(80 * 2**30)


def test_mig_devices_replace_full_gpus(pools: dict[str, PoolPlan]) -> None:
    """A MIG pool publishes its slices with parent attributes and engine capacities."""
    inv = node_inventory(pools["mig"])
    assert inv.devices_per_node == 32
    types = {s.device.attributes[f"{DRIVER}/type"] for s in inv.shapes}
    assert types == {"mig"}
    three = [s for s in inv.shapes if s.device.attributes[f"{DRIVER}/profile"] == "3g.40gb"]
    assert len(three) == 1 and three[0].per_node == 8 and three[0].total == 16
    dev = three[0].device
    assert dev.capacity[f"{DRIVER}/memory"] == Decimal(40320 * 2**20)
    assert dev.capacity[f"{DRIVER}/multiprocessors"] == 60
    engines = {k.removeprefix(f"{DRIVER}/"): int(v) for k, v in dev.capacity.items()
               if k.endswith(("Engines", "coders"))}
    # The UG's H100 table: 3g.40gb has 3 copy engines, 3 NVDECs, 3 JPEG, no NVENC, no OFA.
    assert engines == {"copyEngines": 3, "decoders": 3, "encoders": 0, "jpegEngines": 3,
                       "ofaEngines": 0}
    assert dev.name == "gpu-0-mig-3g40gb-9-4" or dev.name.endswith("-9-0")
    slices = sorted(k for k in dev.capacity if "memorySlice" in k)
    assert len(slices) == 4
    assert dev.attributes[f"{DRIVER}/productName"] == "NVIDIA H100 80GB HBM3"
    assert f"{DRIVER}/parentUUID" in dev.attributes


def test_mig_disabled_index_publishes_the_full_gpu(pools: dict[str, PoolPlan]) -> None:
    """A per-GPU layout with an empty entry publishes that GPU whole."""
    inv = node_inventory(pools["half"])
    kinds = sorted(
        (str(inv.shapes[shape].device.attributes[f"{DRIVER}/type"]), gpu)
        for shape, gpu in inv.slots
    )
    assert kinds == [("gpu", 1), ("mig", 0), ("mig", 0)]


def test_shapes_do_not_grow_with_nodes(pools: dict[str, PoolPlan]) -> None:
    """The shape list depends on the node layout, not on the node count."""
    import dataclasses

    pool = pools["full"]
    big = dataclasses.replace(pool, pool=pool.pool.model_copy(update={"nodes": 10_000}))
    assert len(pool_device_shapes(big)) == 1
    assert pool_device_shapes(big)[0].total == 80_000


def test_group_keys(pools: dict[str, PoolPlan]) -> None:
    """parentUUID groups the slices of one GPU; pcieRoot groups GPUs four by four."""
    mig = node_inventory(pools["mig"])
    parents = {group_key(mig, s, f"{DRIVER}/parentUUID") for s in range(len(mig.slots))}
    assert len(parents) == 8
    full = node_inventory(pools["full"])
    roots = [group_key(full, s, "resource.kubernetes.io/pcieRoot") for s in range(8)]
    assert len(set(roots)) == 2 and roots[:4] == [roots[0]] * 4
    assert group_key(full, 0, f"{DRIVER}/parentUUID") is None


def test_cuda_driver_version_from_driver_branch() -> None:
    """The CUDA version follows NVIDIA's driver floors (595.58.03 → 13.2.0)."""
    assert cuda_driver_version("595.58.03") == Version(13, 2, 0)
    assert cuda_driver_version("575.51.03") == Version(12, 9, 0)
    assert cuda_driver_version("580.95.05") == Version(13, 0, 0)


@pytest.mark.parametrize("pool_name", ["full", "mig", "half"])
def test_resource_slice_passes_the_strict_schema(
    pools: dict[str, PoolPlan], pool_name: str
) -> None:
    """The simulated ResourceSlice is a valid resource.k8s.io/v1 object at 1.34."""
    slices = resource_slices(pools[pool_name], 1 if pool_name != "half" else 0)
    validator = SchemaValidator()
    for doc in slices:
        assert validator.validate(doc, 34, SourceLocation("slice")) == []
    names = [d["name"] for doc in slices for d in doc["spec"]["devices"]]
    assert len(names) == len(set(names))


def test_resource_slice_identities_differ_per_node(pools: dict[str, PoolPlan]) -> None:
    """Two nodes publish different uuids; the node index must exist."""
    first = resource_slices(pools["full"], 0)[0]["spec"]["devices"][0]["attributes"]["uuid"]
    second = resource_slices(pools["full"], 1)[0]["spec"]["devices"][0]["attributes"]["uuid"]
    assert first != second
    with pytest.raises(IndexError):
        resource_slices(pools["full"], 3)


# --- dynamic MIG (partitionable devices) ---------------------------------------------------

DYNAMIC_FLEET = """\
kind: Cluster
name: c1
kubernetes_version: "{version}"
allocation: dra
feature_gates: {{DRAPartitionableDevices: true}}
node_pools:
  - {{name: dyn, gpu: {gpu}, gpus_per_node: 2, nodes: 1, driver_version: "580.95.05",
     mig: dynamic, labels: {{nvidia.com/gpu.deploy.mig-manager: "false"}}}}
"""


def _dynamic_pool(tmp_path: Path, gpu: str = "h100-sxm5-80gb",
                  version: str = "1.36.1") -> PoolPlan:
    (tmp_path / "fleet.yaml").write_text(DYNAMIC_FLEET.format(gpu=gpu, version=version))
    return load_plan(tmp_path).clusters[0].pools[0]


def test_dynamic_h100_publishes_one_device_per_profile_and_placement(tmp_path: Path) -> None:
    """One counter set with 8 memory-slice counters per GPU, the full GPU, and one device per
    valid (profile, placement) pair: the counts equal the placement grid's."""
    from gen.nvidia.gpus import gpu_catalog

    gpu = gpu_catalog().lookup("h100-sxm5-80gb")
    slices = resource_slices(_dynamic_pool(tmp_path), 0)
    counters = slices[0]["spec"]["sharedCounters"]
    assert "devices" not in slices[0]["spec"] and len(slices) == 3  # counters + one per GPU
    assert [c["name"] for c in counters] == ["gpu-0-counter-set", "gpu-1-counter-set"]
    names = set(counters[0]["counters"])
    assert sorted(n for n in names if n.startswith("memory-slice-")) == [
        f"memory-slice-{i}" for i in range(8)]
    assert names - {f"memory-slice-{i}" for i in range(8)} == {
        "multiprocessors", "copy-engines", "decoders", "encoders", "jpeg-engines",
        "ofa-engines", "memory"}
    devices = slices[1]["spec"]["devices"]
    grid = sum(len(p.starts) for p in gpu.mig_profiles)
    assert len(devices) == grid + 1 == 26
    assert [d["name"] for d in devices] == sorted(d["name"] for d in devices)
    full = devices[0]
    assert full["name"] == "gpu-0" and full["consumesCounters"][0]["counters"] == \
        counters[0]["counters"]
    by_name = {d["name"]: d for d in devices}
    three = by_name["gpu-0-mig-3g40gb-9-4"]
    used = three["consumesCounters"][0]["counters"]
    assert sorted(k for k in used if k.startswith("memory-slice")) == [
        "memory-slice-4", "memory-slice-5", "memory-slice-6", "memory-slice-7"]
    assert used["multiprocessors"] == {"value": "60"}
    assert "uuid" not in three["attributes"] and three["attributes"]["profile"] == {
        "string": "3g.40gb"}
    assert "gpu-0-mig-1g10gb-me-20-6" in by_name  # '+' becomes '-', the GI id stays


@pytest.mark.parametrize("version", ["1.33.4", "1.34.2", "1.36.1"])
def test_dynamic_slices_pass_the_strict_schema(tmp_path: Path, version: str) -> None:
    """Split slices (1.35+) and combined ones (1.33 as v1beta2, 1.34) validate against the
    cluster's schema."""
    minor = int(version.split(".")[1])
    slices = resource_slices(_dynamic_pool(tmp_path, version=version), 0, minor)
    assert len(slices) == (3 if minor >= 35 else 2)
    validator = SchemaValidator()
    for doc in slices:
        assert validator.validate(doc, minor, SourceLocation("slice")) == []


def test_addressing_mode_is_the_pools_else_the_catalogs(tmp_path: Path) -> None:
    """An x86 H100 reports addressingMode None (NVML's mode, inactive); a pool that declares
    HMM publishes HMM on its full GPUs and MIG devices alike."""
    plain = load_plan_text(tmp_path / "plain", FLEET)
    attrs = pool_device_shapes(plain.clusters[0].pools[0])[0].device.attributes
    assert attrs[f"{DRIVER}/addressingMode"] == "None"
    hmm = FLEET.replace('driver_version: "580.95.05"', 'driver_version: "580.95.05", '
                        'addressing_mode: HMM')
    pools = load_plan_text(tmp_path / "hmm", hmm).clusters[0].pools
    for pool in pools:
        for shape in pool_device_shapes(pool):
            assert shape.device.attributes[f"{DRIVER}/addressingMode"] == "HMM"


def load_plan_text(folder: Path, text: str) -> Any:
    folder.mkdir()
    (folder / "fleet.yaml").write_text(text)
    return load_plan(folder)


def test_brand_and_addressing_mode_follow_the_catalog(tmp_path: Path) -> None:
    """An RTX 4090 reports brand GeForce; a GH200 reports its addressing mode."""
    from gen.dra.simulate import partitioned_gpu

    text = FLEET.replace("h100-sxm5-80gb, gpus_per_node: 8, nodes: 3", "rtx-4090, "
                         "gpus_per_node: 1, nodes: 1")
    (tmp_path / "fleet.yaml").write_text(text)
    full = load_plan(tmp_path).clusters[0].pools[0]
    attrs = pool_device_shapes(full)[0].device.attributes
    assert attrs[f"{DRIVER}/brand"] == "GeForce"
    from gen.nvidia.gpus import gpu_catalog

    gh200 = partitioned_gpu(gpu_catalog().lookup("0x2342"), "580.95.05", "n", 0)
    assert f"{DRIVER}/addressingMode" not in gh200.partitions[0].device.attributes
