"""Simulated DRA devices: what the NVIDIA DRA driver would publish for each node of a pool.

The devices follow the driver's ResourceSlice content (kubernetes-sigs/dra-driver-nvidia-gpu
``cmd/gpu-kubelet-plugin/deviceinfo.go``, ``mig.go``, ``partitions.go`` and ``nvlib.go``
@v25.12.0), driver ``gpu.nvidia.com``:

* full GPU (``type: gpu``, name ``gpu-<index>``): ``uuid``, ``productName``, ``brand`` (NVML's
  brand: ``Nvidia``, ``NvidiaRTX``, ``GeForce``...), ``architecture``,
  ``cudaComputeCapability``, ``driverVersion`` and ``cudaDriverVersion`` (versions),
  ``resource.kubernetes.io/pciBusID`` and ``resource.kubernetes.io/pcieRoot``,
  ``addressingMode`` where NVML reports one (:func:`addressing_mode`: the pool's
  ``addressing_mode``, else the catalog's: ``ATS`` on Grace parts, ``None`` on the others;
  ``GetAddressingModeAsString`` of go-nvlib, vendored @v25.12.0, leaves it out only where NVML
  says "not supported"); capacity ``memory`` in bytes
  (``memory_mib``·2^20: an H100 80GB reports 81559Mi, less than 80Gi). A unified-memory GPU
  publishes no ``memory``.
* static MIG device (``type: mig``, name ``gpu-<index>-mig-<profile>-<giProfileId>-<start>``):
  ``uuid``, ``parentUUID``, ``profile``, the parent's product, brand, architecture, versions,
  PCI attributes and addressing mode; capacities ``multiprocessors``, ``copyEngines``,
  ``decoders``, ``encoders``, ``jpegEngines``, ``ofaEngines`` (each where the catalog knows
  it; the driver always publishes them), ``memory`` and ``memorySlice<N>`` = 1 per occupied
  memory slice.
* dynamic MIG (a pool with ``mig: dynamic``; the driver's ``DynamicMIG`` gate, KEP-4815
  partitionable devices): per GPU one counter set ``gpu-<index>-counter-set`` holding one
  counter per capacity dimension (the capacity name in DNS form: ``multiprocessors``,
  ``copy-engines``, ``decoders``, ``encoders``, ``jpeg-engines``, ``ofa-engines``,
  ``memory``; each the largest value any MIG profile of the GPU has) and one counter
  ``memory-slice-<i>`` = 1 per memory slice. The full GPU (``uuid`` and ``pcieRoot`` but no
  ``addressingMode``) has those largest values as capacity and consumes every counter; one
  device per (MIG profile, placement) (``parentUUID``, ``profile``, product, brand,
  architecture, versions, ``pciBusID``; no ``uuid``: the device does not exist until a claim
  carves it) has its profile's capacities and consumes them plus its memory slices. Devices
  are sorted by name, per GPU in minor order, as the driver publishes them; from Kubernetes
  1.35 the counter sets sit in a ResourceSlice of their own, before the device slices (one
  per GPU), and before 1.35 each GPU's slice carries its counter set and its devices.

A pool with a MIG layout publishes its MIG devices; a GPU index whose layout is empty (MIG
disabled), or that a ``per_gpu`` layout does not mention, publishes the full GPU.

Facts and approximations:

* ``driverVersion`` is the pool's driver normalised to semver (580.95.05 → 580.95.5).
* ``cudaDriverVersion`` is the newest CUDA ``major.minor`` whose GA driver floor
  (:data:`gen.serving.engines.CUDA_DRIVER_MINIMUMS`, NVIDIA's release-notes table) the pool's driver
  meets, with patch 0 (580.95.05 → 13.0.0, 595.58.03 → 13.2.0). NVML reports the CUDA
  version a driver supports as ``major*1000 + minor*10``, so the patch is always 0.
* PCI topology is not in any profile: GPU ``i`` of a node sits on PCIe root ``i // 4``
  (:data:`GPUS_PER_PCIE_ROOT`; an 8-GPU HGX node has two roots of four GPUs). This is an
  assumption, not a measured fact; real boards may split roots differently.

Shapes. Selectors are evaluated per distinct device *shape* (:class:`DeviceShape`), not per
device: the nodes of a pool are identical, and within a node every device of a shape has the
same attributes except the per-device identities (``uuid``, ``parentUUID``, ``pciBusID``,
``pcieRoot``). A shape keeps ONE representative value for those (independent of the pool, so
equal shapes of different clusters share evaluations). No selector gen renders reads them;
a user selector that matches on them is evaluated on the representative only. Constraints
on them (``same``) use :func:`group_key`, which knows the real per-device grouping.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from gen.caches import memoize
from gen.dra.devices import AttrValue, Device
from gen.fleet.plan import PoolPlan
from gen.k8s.semver import Version, parse_version
from gen.k8s.versions import slice_api_version
from gen.nvidia.gpus import GPU, MIGProfile
from gen.nvidia.mig import LayoutCheck, MIGDevice, mig_devices

__all__ = [
    "DRIVER",
    "GPUS_PER_PCIE_ROOT",
    "UNIQUE_ATTRIBUTES",
    "DeviceShape",
    "NodeInventory",
    "Partition",
    "PartitionedGPU",
    "SlotKey",
    "cuda_driver_version",
    "group_key",
    "is_dynamic",
    "node_device_names",
    "node_inventory",
    "node_name",
    "node_partitions",
    "partitioned_gpu",
    "pool_device_shapes",
    "resource_slices",
    "shape_summary",
]

DRIVER = "gpu.nvidia.com"
GPUS_PER_PCIE_ROOT = 4
"""Assumed GPUs per PCIe root complex (two roots on an 8-GPU node)."""

STD = "resource.kubernetes.io"
PARENT_UUID = f"{DRIVER}/parentUUID"
PCIE_ROOT = f"{STD}/pcieRoot"
UNIQUE_ATTRIBUTES = frozenset({f"{DRIVER}/uuid", PARENT_UUID, f"{STD}/pciBusID", PCIE_ROOT})
"""Attributes whose value differs per device; shapes hold a representative value."""

_MIB = 2**20
_NAMESPACE = uuid.UUID("6f1c5a52-3c1e-4d7a-9a4e-67656e2d6465")
_REPRESENTATIVE = "representative"

SlotKey = tuple[int, int]
"""(shape index, GPU index on the node) of one device of a node."""


@dataclass(frozen=True)
class DeviceShape:
    """Devices of a pool that every selector treats alike, and how many there are."""

    device: Device
    """The representative device (per-device identities hold representative values)."""
    per_node: int
    nodes: int

    @property
    def total(self) -> int:
        """Devices of this shape in the whole pool."""
        return self.per_node * self.nodes


@dataclass(frozen=True)
class NodeInventory:
    """What each node of a pool publishes: the shapes and the device slots of one node."""

    pool: PoolPlan
    shapes: tuple[DeviceShape, ...]
    slots: tuple[SlotKey, ...]
    """One entry per device of a node, in publish order."""

    @property
    def devices_per_node(self) -> int:
        """Devices each node publishes."""
        return len(self.slots)


@memoize(maxsize=256)
def cuda_driver_version(driver_version: str) -> Version:
    """The CUDA version a driver supports (see the module docstring), e.g. 13.0.0."""
    from gen.serving.engines import CUDA_DRIVER_MINIMUMS, driver_satisfies

    best = (0, 0)
    for cuda, floor in CUDA_DRIVER_MINIMUMS.items():
        major, minor = (int(p) for p in cuda.split("."))
        if driver_satisfies(driver_version, floor) and (major, minor) > best:
            best = (major, minor)
    return Version(best[0], best[1], 0)


def _uuid(prefix: str, key: str) -> str:
    return f"{prefix}-{uuid.uuid5(_NAMESPACE, key)}"


def _pci_bus_id(index: int) -> str:
    return f"0000:{0x10 + 0x0E * index:02x}:00.0"


def _pcie_root(index: int) -> str:
    return f"pci{index // GPUS_PER_PCIE_ROOT:04x}:00"


def _gpu_attributes(
    gpu: GPU, driver_version: str, node_key: str, index: int
) -> dict[str, AttrValue]:
    return {
        f"{DRIVER}/uuid": _uuid("GPU", f"{gpu.id}/{node_key}/{index}"),
        f"{DRIVER}/productName": gpu.product_name,
        f"{DRIVER}/brand": gpu.brand,
        f"{DRIVER}/architecture": gpu.architecture,
        f"{DRIVER}/cudaComputeCapability": parse_version(gpu.compute_capability, normalize=True),
        f"{DRIVER}/driverVersion": parse_version(driver_version, normalize=True),
        f"{DRIVER}/cudaDriverVersion": cuda_driver_version(driver_version),
        f"{STD}/pciBusID": _pci_bus_id(index),
        PCIE_ROOT: _pcie_root(index),
    }


def addressing_mode(pool: PoolPlan) -> str | None:
    """What NVML reports as the pool's addressing mode: the pool's ``addressing_mode``, else
    the GPU's catalog value."""
    declared = pool.pool.addressing_mode
    return declared if declared is not None or pool.gpu is None else pool.gpu.addressing_mode


def _full_gpu(gpu: GPU, driver_version: str, node_key: str, index: int,
              mode: str | None) -> Device:
    attributes = {f"{DRIVER}/type": "gpu", **_gpu_attributes(gpu, driver_version, node_key, index)}
    if mode is not None:
        attributes[f"{DRIVER}/addressingMode"] = mode
    capacity = {} if gpu.unified_memory else {f"{DRIVER}/memory": Decimal(gpu.memory_mib * _MIB)}
    return Device(DRIVER, f"gpu-{index}", attributes, capacity)


def rfc1123(name: str) -> str:
    """The driver's ``toRFC1123Compliant``: lower case, other characters to ``-``, trimmed."""
    name = re.sub(r"[^a-z0-9-.]", "-", name.lower()).strip("-").removesuffix(".")
    return name[:253]


def counter_name(capacity: str) -> str:
    """The driver's ``camelToDNSName``: ``copyEngines`` → ``copy-engines``."""
    out = re.sub(r"([a-z0-9])([A-Z])", r"\1-\2", capacity)
    out = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1-\2", out)
    return rfc1123(out)


def memory_slice_counter(index: int) -> str:
    """``memory-slice-<i>``, the counter of one memory slice."""
    return f"memory-slice-{index}"


def _profile_capacities(profile: MIGProfile) -> dict[str, int]:
    """The capacities of a MIG profile by the driver's names, where the catalog knows them."""
    counts = {
        "multiprocessors": profile.sms, "copyEngines": profile.copy_engines,
        "decoders": profile.decoders, "encoders": profile.encoders,
        "jpegEngines": profile.jpegs, "ofaEngines": profile.ofas,
    }
    out = {k: v for k, v in counts.items() if v is not None}
    out["memory"] = profile.memory_mib * _MIB
    return out


@dataclass(frozen=True)
class Partition:
    """One device of a dynamic-MIG GPU with what it consumes of the GPU's counter set."""

    device: Device
    consumes: Mapping[str, int]
    """Counter name → amount, in the counter set of its GPU."""
    profile: str | None
    """The MIG profile, or None for the full GPU."""
    start: int
    size: int


@dataclass(frozen=True)
class PartitionedGPU:
    """What one dynamic-MIG GPU publishes: its counter set and its devices in slice order."""

    index: int
    counter_set: str
    counters: Mapping[str, int]
    partitions: tuple[Partition, ...]


def partitioned_gpu(gpu: GPU, driver_version: str, node_key: str, index: int) -> PartitionedGPU:
    """The counter set and the devices of GPU ``index`` with the driver's DynamicMIG on."""
    parent = _gpu_attributes(gpu, driver_version, node_key, index)
    parent_uuid = parent[f"{DRIVER}/uuid"]
    mig_attrs = {k: v for k, v in parent.items()
                 if k not in (f"{DRIVER}/uuid", PCIE_ROOT)}
    specs: list[tuple[MIGProfile, int, dict[str, int]]] = []
    largest: dict[str, int] = {}
    slices = 0
    for profile in gpu.mig_profiles:
        caps = _profile_capacities(profile)
        for start in profile.starts:
            specs.append((profile, start, caps))
            slices = max(slices, profile.size)
            for name, value in caps.items():
                largest[name] = max(largest.get(name, 0), value)
    set_name = rfc1123(f"gpu-{index}-counter-set")
    everything = {counter_name(k): v for k, v in largest.items()}
    everything.update({memory_slice_counter(i): 1 for i in range(slices)})
    full = Device(
        DRIVER, f"gpu-{index}", {f"{DRIVER}/type": "gpu", **parent},
        {f"{DRIVER}/{k}": Decimal(v) for k, v in largest.items()},
    )
    parts = [Partition(full, everything, None, 0, slices)]
    for profile, start, caps in specs:
        name = _mig_device_name(index, profile.name, profile.gi_profile_id, start)
        attributes: dict[str, AttrValue] = {
            f"{DRIVER}/type": "mig", PARENT_UUID: parent_uuid,
            f"{DRIVER}/profile": profile.name, **mig_attrs,
        }
        consumes = {counter_name(k): v for k, v in caps.items()}
        consumes.update({memory_slice_counter(i): 1 for i in range(start, start + profile.size)})
        device = Device(DRIVER, name, attributes, {f"{DRIVER}/{k}": Decimal(v)
                                                   for k, v in caps.items()})
        parts.append(Partition(device, consumes, profile.name, start, profile.size))
    parts.sort(key=lambda p: p.device.name)
    return PartitionedGPU(index, set_name, everything, tuple(parts))


def _mig_device_name(parent: int, profile: str, gi_profile_id: int | None, start: int) -> str:
    """``gpu-<minor>-mig-<profile without dots>-<GI profile id>-<placement start>``."""
    name = rfc1123(profile.replace(".", ""))
    gi = "" if gi_profile_id is None else f"-{gi_profile_id}"
    return f"gpu-{parent}-mig-{name}{gi}-{start}"


def _mig_name(mig: MIGDevice) -> str:
    return _mig_device_name(mig.parent_index, mig.profile, mig.gi_profile_id, mig.start)


def _mig_device(
    gpu: GPU, driver_version: str, node_key: str, mig: MIGDevice, parent: int,
    mode: str | None,
) -> Device:
    parent_attrs = _gpu_attributes(gpu, driver_version, node_key, parent)
    if mode is not None:
        parent_attrs[f"{DRIVER}/addressingMode"] = mode
    parent_uuid = parent_attrs.pop(f"{DRIVER}/uuid")
    attributes: dict[str, AttrValue] = {
        f"{DRIVER}/type": "mig",
        f"{DRIVER}/uuid": _uuid("MIG", f"{gpu.id}/{node_key}/{parent}/{mig.profile}/{mig.start}"),
        PARENT_UUID: parent_uuid,
        f"{DRIVER}/profile": mig.profile,
        **parent_attrs,
    }
    counts = {
        "multiprocessors": mig.sms, "copyEngines": mig.copy_engines, "decoders": mig.decoders,
        "encoders": mig.encoders, "jpegEngines": mig.jpegs, "ofaEngines": mig.ofas,
    }
    capacity = {f"{DRIVER}/{k}": Decimal(v) for k, v in counts.items() if v is not None}
    capacity[f"{DRIVER}/memory"] = Decimal(mig.memory_mib * _MIB)
    for memory_slice in mig.memory_slices:
        capacity[f"{DRIVER}/memorySlice{memory_slice}"] = Decimal(1)
    return Device(DRIVER, _mig_name(mig), attributes, capacity)


def _layout_by_index(pool: PoolPlan) -> dict[int, LayoutCheck]:
    """GPU index → its MIG layout check, for indices with MIG enabled (non-empty layout)."""
    out: dict[int, LayoutCheck] = {}
    for indices, check in pool.mig_checks:
        if check.valid and not check.placements:
            continue  # MIG disabled on these GPUs: they publish the full GPU
        for index in indices:
            if index < pool.pool.gpus_per_node:
                out[index] = check
    return out


def _node_devices(pool: PoolPlan, node_key: str) -> list[tuple[Device, int]]:
    """(device, GPU index) for every device one node of the pool publishes."""
    gpu = pool.gpu
    if gpu is None or pool.pool.platform != "nvidia":
        return []
    driver = pool.pool.driver_version or "0.0.0"
    if is_dynamic(pool):
        return [(part.device, index) for index in range(pool.pool.gpus_per_node)
                for part in partitioned_gpu(gpu, driver, node_key, index).partitions]
    layouts = _layout_by_index(pool)
    mode = addressing_mode(pool)
    out: list[tuple[Device, int]] = []
    for index in range(pool.pool.gpus_per_node):
        check = layouts.get(index)
        if check is None or not check.valid:
            if check is None:
                out.append((_full_gpu(gpu, driver, node_key, index, mode), index))
            continue  # an invalid layout publishes nothing usable (GEN101 reports it)
        for mig in mig_devices(gpu, check, index):
            out.append((_mig_device(gpu, driver, node_key, mig, index, mode), index))
    return out


def node_device_names(pool: PoolPlan) -> tuple[str, ...]:
    """The device names one node of the pool publishes, in slot order."""
    return tuple(d.name for d, _ in _node_devices(pool, _REPRESENTATIVE))


def is_dynamic(pool: PoolPlan) -> bool:
    """Whether the pool's GPUs are carved at allocation time (``mig: dynamic``)."""
    return pool.pool.mig == "dynamic" and pool.gpu is not None and pool.gpu.mig_capable


def node_partitions(pool: PoolPlan, node_key: str) -> tuple[PartitionedGPU, ...]:
    """The partitioned GPUs of one node of a dynamic pool, in minor order (else empty)."""
    if not is_dynamic(pool):
        return ()
    assert pool.gpu is not None
    driver = pool.pool.driver_version or "0.0.0"
    return tuple(partitioned_gpu(pool.gpu, driver, node_key, i)
                 for i in range(pool.pool.gpus_per_node))


def _representative(device: Device) -> Device:
    """The device with its per-device identities replaced by pool-independent values."""
    attributes = dict(device.attributes)
    product = str(attributes.get(f"{DRIVER}/productName", ""))
    for name in UNIQUE_ATTRIBUTES & attributes.keys():
        if name == f"{STD}/pciBusID":
            attributes[name] = _pci_bus_id(0)
        elif name == PCIE_ROOT:
            attributes[name] = _pcie_root(0)
        else:
            attributes[name] = _uuid("GPU", f"{product}/{_REPRESENTATIVE}/{name}")
    return Device(device.driver, device.name, attributes, device.capacity,
                  device.allow_multiple_allocations)


def node_inventory(pool: PoolPlan) -> NodeInventory:
    """The shapes of a pool and the slot (shape, GPU index) of each device of one node."""
    index_of: dict[object, int] = {}
    reps: list[Device] = []
    per_node: list[int] = []
    slots: list[SlotKey] = []
    for device, gpu_index in _node_devices(pool, _REPRESENTATIVE):
        rep = _representative(device)
        key = rep.shape_key()
        shape = index_of.get(key)
        if shape is None:
            shape = index_of[key] = len(reps)
            reps.append(rep)
            per_node.append(0)
        per_node[shape] += 1
        slots.append((shape, gpu_index))
    nodes = pool.pool.nodes
    shapes = tuple(DeviceShape(d, n, nodes) for d, n in zip(reps, per_node, strict=True))
    return NodeInventory(pool, shapes, tuple(slots))


def pool_device_shapes(pool: PoolPlan) -> list[DeviceShape]:
    """Each distinct device shape of the pool with its count per node and in total."""
    return list(node_inventory(pool).shapes)


def group_key(inventory: NodeInventory, slot: int, attribute: str) -> object | None:
    """The value device ``slot`` of a node has for ``attribute`` (None: it lacks it).

    Equal keys mean "same value" for a ``matchAttribute`` constraint. Per-device identities
    use the real grouping: ``parentUUID`` is the parent GPU index (MIG devices only),
    ``pcieRoot`` the root of the GPU, ``uuid`` and ``pciBusID`` are unique per device
    (``pciBusID`` per GPU for MIG devices, which share their parent's).
    """
    shape, gpu_index = inventory.slots[slot]
    device = inventory.shapes[shape].device
    if attribute not in device.attributes:
        return None
    if attribute == PARENT_UUID:
        return ("gpu", gpu_index)
    if attribute == PCIE_ROOT:
        return ("root", gpu_index // GPUS_PER_PCIE_ROOT)
    if attribute == f"{STD}/pciBusID":
        return ("bus", gpu_index)
    if attribute == f"{DRIVER}/uuid":
        return ("device", slot)
    value = device.attributes[attribute]
    return (type(value).__name__, value)


def node_name(pool: PoolPlan, node_index: int) -> str:
    """The simulated name of node ``node_index`` of a pool."""
    return f"{pool.name}-{node_index}"


def _attribute_json(value: AttrValue) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"bool": value}
    if isinstance(value, int):
        return {"int": value}
    if isinstance(value, Version):
        return {"version": str(value)}
    return {"string": value}


def _short(name: str) -> str:
    prefix = f"{DRIVER}/"
    return name.removeprefix(prefix)


def _device_json(device: Device) -> dict[str, Any]:
    body: dict[str, Any] = {"name": device.name}
    body["attributes"] = {
        _short(k): _attribute_json(v) for k, v in sorted(device.attributes.items())
    }
    if device.capacity:
        body["capacity"] = {_short(k): _quantity(v) for k, v in sorted(device.capacity.items())}
    return body


def _quantity(value: int | Decimal) -> dict[str, str]:
    from gen.k8s.quantity import QuantityFormat, format_quantity

    return {"value": format_quantity(Decimal(value), QuantityFormat.BINARY_SI)}


def _partition_json(part: Partition, counter_set: str) -> dict[str, Any]:
    body = _device_json(part.device)
    body["consumesCounters"] = [{
        "counterSet": counter_set,
        "counters": {k: _quantity(v) for k, v in sorted(part.consumes.items())},
    }]
    return body


def _counter_set_json(gpu: PartitionedGPU) -> dict[str, Any]:
    return {"name": gpu.counter_set,
            "counters": {k: _quantity(v) for k, v in sorted(gpu.counters.items())}}


SPLIT_SLICES_MINOR = 35
"""From this Kubernetes minor the driver puts counter sets in a ResourceSlice of their own
(``shouldUseSplitResourceSlices`` in ``cmd/gpu-kubelet-plugin/driver.go``@v25.12.0)."""


def _slice_bodies(pool: PoolPlan, node_key: str, minor: int | None) -> list[dict[str, Any]]:
    """The ``spec`` bodies (without driver, node and pool) of one node's slices, in order."""
    gpus = node_partitions(pool, node_key)
    if gpus:
        if minor is None or minor >= SPLIT_SLICES_MINOR:
            bodies = [{"sharedCounters": [_counter_set_json(g) for g in gpus]}]
            bodies += [{"devices": [_partition_json(p, g.counter_set) for p in g.partitions]}
                       for g in gpus]
            return bodies
        return [{"sharedCounters": [_counter_set_json(g)],
                 "devices": [_partition_json(p, g.counter_set) for p in g.partitions]}
                for g in gpus]
    devices = [d for d, _ in _node_devices(pool, node_key)]
    chunks = [devices[i:i + 128] for i in range(0, len(devices), 128)] or [[]]
    return [{"devices": [_device_json(d) for d in chunk]} for chunk in chunks]


def resource_slices(
    pool: PoolPlan, node_index: int, kubernetes_minor: int | None = None
) -> list[dict[str, Any]]:
    """The ``resource.k8s.io/v1`` ResourceSlice(s) node ``node_index`` of the pool publishes
    (``v1beta2`` on Kubernetes 1.33, which does not serve v1).

    Pool name = node name, as the NVIDIA driver does. A static pool: up to 128 devices per
    slice. A dynamic-MIG pool: the counter sets and one slice per GPU, split or combined by
    the cluster's Kubernetes minor (see :data:`SPLIT_SLICES_MINOR`; None: split).
    Identities (uuid, PCI ids) are stable per pool, node and GPU index.
    """
    if not 0 <= node_index < max(pool.pool.nodes, 1):
        raise IndexError(f"pool {pool.name!r} has {pool.pool.nodes} node(s)")
    node = node_name(pool, node_index)
    bodies = _slice_bodies(pool, f"{pool.name}/{node_index}", kubernetes_minor)
    slices = []
    api = slice_api_version(kubernetes_minor)
    for i, body in enumerate(bodies):
        slices.append({
            "apiVersion": api,
            "kind": "ResourceSlice",
            "metadata": {"name": f"{node}-{DRIVER}-{i}"},
            "spec": {
                "driver": DRIVER,
                "nodeName": node,
                "pool": {"name": node, "generation": 1, "resourceSliceCount": len(bodies)},
                **body,
            },
        })
    return slices


def shape_summary(shape: DeviceShape) -> str:
    """``NVIDIA H100 80GB HBM3`` or ``NVIDIA H100 80GB HBM3 MIG 3g.40gb`` for messages."""
    attrs: Mapping[str, AttrValue] = shape.device.attributes
    product = str(attrs.get(f"{DRIVER}/productName", shape.device.name))
    profile = attrs.get(f"{DRIVER}/profile")
    return f"{product} MIG {profile}" if profile is not None else product
