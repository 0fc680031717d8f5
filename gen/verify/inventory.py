"""What one node publishes about its GPUs, summarised, and what a pool's profile says it should.

Both sides go through the same summary, so that the drift comparison (:mod:`gen.verify.drift`)
compares like with like:

* **DRA** (:class:`SliceInventory`): the node's ``gpu.nvidia.com`` ResourceSlices, read by
  :func:`gen.verify.state.published_slice`, summarised by :func:`slice_inventory`. The
  expectation is the same summary of the slices gen's simulation of the NVIDIA DRA driver
  publishes for one node of the pool (:func:`gen.dra.simulate.resource_slices`), so every fact
  the simulation cites (product names, MIG device names, counters) is the reference.
* **Device plugin** (:class:`PluginInventory`): the Node's ``status.capacity`` for
  ``nvidia.com/gpu`` and ``nvidia.com/mig-<profile>`` and the labels GPU Feature Discovery
  writes. The expectation is :func:`gen.serving.capacity.units_per_node`, the same count gen's
  own capacity check (GEN330) uses.

GPU Feature Discovery labels (NVIDIA/k8s-device-plugin ``internal/lm/resource.go`` and
``internal/lm/nvml.go``@v0.20.0): ``nvidia.com/gpu.product`` is the product name with characters
other than ``[A-Za-z0-9-_. ]`` removed and runs of blanks joined by ``-``, ``-MIG-<profile>``
appended under the ``single`` MIG strategy and ``-SHARED`` for a time-sliced resource;
``nvidia.com/cuda.driver-version.full`` is the driver version as NVML reports it (older
releases: ``nvidia.com/cuda.driver.major``, ``.minor``, ``.rev``). Each GPU's replicas under
time-slicing are in ``nvidia.com/gpu.replicas``.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from gen.dra.simulate import DRIVER, resource_slices
from gen.errors import VersionError
from gen.fleet.plan import ClusterPlan, PoolPlan
from gen.k8s.semver import parse_version
from gen.serving.capacity import units_per_node
from gen.verify.state import NodeState, PublishedSlice, published_slice

__all__ = [
    "GPU_RESOURCE",
    "PluginInventory",
    "SliceInventory",
    "driver_text",
    "expected_plugin_inventory",
    "expected_slice_inventory",
    "gfd_product",
    "plugin_inventory",
    "slice_inventory",
]

GPU_RESOURCE = "nvidia.com/gpu"
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
PRODUCT_LABEL = "nvidia.com/gpu.product"
REPLICAS_LABEL = "nvidia.com/gpu.replicas"
DRIVER_LABEL = "nvidia.com/cuda.driver-version.full"
DRIVER_LABELS_OLD = ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor",
                     "nvidia.com/cuda.driver.rev")
MIG_CONFIG_LABEL = "nvidia.com/mig.config"

DeviceKind = tuple[str, str]
"""(``type`` attribute, MIG ``profile`` or ``""``) of a device."""

GPULayout = tuple[tuple[DeviceKind, int], ...]
"""The devices one physical GPU publishes: (kind, count) pairs, sorted."""


@dataclass(frozen=True)
class SliceInventory:
    """One node's ``gpu.nvidia.com`` devices, summarised."""

    products: frozenset[str]
    """The ``productName`` values its devices carry."""
    gpus: int
    """Physical GPUs: distinct ``uuid`` of full GPUs and ``parentUUID`` of MIG devices."""
    devices: Counter[DeviceKind]
    """How many devices of each (type, MIG profile)."""
    drivers: frozenset[str]
    """The ``driverVersion`` values its devices carry."""
    layouts: Counter[GPULayout] = field(default_factory=Counter)
    """How many of its GPUs publish each set of devices (a MIG layout, the full GPU)."""
    counter_sets: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)
    """Shared counter sets (dynamic MIG): name → counter → amount."""
    problems: tuple[str, ...] = ()
    """Devices that could not be read."""

    @property
    def empty(self) -> bool:
        """Whether the node publishes no device at all."""
        return not self.devices

    def other_layouts(self, expected: SliceInventory) -> bool:
        """Whether some GPU publishes devices that no GPU of ``expected`` does, or, with as
        many GPUs, the layouts are spread otherwise: a MIG difference, not a missing GPU."""
        if set(self.layouts) - set(expected.layouts):
            return True
        return self.gpus == expected.gpus and self.layouts != expected.layouts


def _gpu_identity(published: PublishedSlice, name: str, attributes: Mapping[str, object]) -> str:
    if attributes.get(f"{DRIVER}/type") == "mig" and f"{DRIVER}/parentUUID" in attributes:
        return f"uuid:{attributes[f'{DRIVER}/parentUUID']}"
    if f"{DRIVER}/uuid" in attributes:
        return f"uuid:{attributes[f'{DRIVER}/uuid']}"
    # No identity published: the driver names devices gpu-<minor>[-...].
    match = re.match(r"gpu-(\d+)", name)
    return f"minor:{match.group(1)}" if match else f"device:{published.name}/{name}"


def slice_inventory(slices: Iterable[PublishedSlice]) -> SliceInventory:
    """The summary of one node's slices (of one driver)."""
    products: set[str] = set()
    drivers: set[str] = set()
    per_gpu: dict[str, Counter[DeviceKind]] = {}
    devices: Counter[DeviceKind] = Counter()
    counter_sets: dict[str, Mapping[str, Decimal]] = {}
    problems: list[str] = []
    for published in slices:
        problems.extend(published.problems)
        counter_sets.update(published.counter_sets)
        for entry in published.devices:
            attributes = entry.device.attributes
            product = attributes.get(f"{DRIVER}/productName")
            if isinstance(product, str):
                products.add(product)
            driver = attributes.get(f"{DRIVER}/driverVersion")
            if driver is not None:
                drivers.add(str(driver))
            kind = str(attributes.get(f"{DRIVER}/type", ""))
            profile = str(attributes.get(f"{DRIVER}/profile", "")) if kind == "mig" else ""
            devices[(kind, profile)] += 1
            gpu = _gpu_identity(published, entry.device.name, attributes)
            per_gpu.setdefault(gpu, Counter())[(kind, profile)] += 1
    layouts: Counter[GPULayout] = Counter(tuple(sorted(c.items())) for c in per_gpu.values())
    return SliceInventory(frozenset(products), len(per_gpu), devices, frozenset(drivers),
                          layouts, counter_sets, tuple(problems))


def expected_slice_inventory(pool: PoolPlan, minor: int) -> SliceInventory:
    """What one node of ``pool`` publishes, by gen's simulation of the NVIDIA DRA driver."""
    if pool.gpu is None or pool.pool.platform != "nvidia":
        return slice_inventory(())
    return slice_inventory(published_slice(s) for s in resource_slices(pool, 0, minor))


def driver_text(version: str) -> str:
    """A driver version as the DRA driver publishes it (semver, ``580.95.05`` → ``580.95.5``);
    the text itself when it is not a version."""
    try:
        return str(parse_version(version, normalize=True))
    except VersionError:
        return version


@dataclass(frozen=True)
class PluginInventory:
    """One node's device-plugin resources and GPU Feature Discovery labels."""

    resources: Counter[str]
    """``nvidia.com/gpu`` and ``nvidia.com/mig-<profile>`` per node (time-slicing replicas
    divided out)."""
    product: str | None
    """``nvidia.com/gpu.product``, when GFD labelled the node."""
    driver: str | None
    """The driver version from GFD's labels (normalised as :func:`driver_text`)."""

    @property
    def empty(self) -> bool:
        """Whether the node advertises no NVIDIA resource at all."""
        return not any(self.resources.values())


def _integer(value: Decimal) -> int:
    return int(value) if value == value.to_integral_value() else 0


def plugin_inventory(node: NodeState) -> PluginInventory:
    """The summary of one Node's capacity and GFD labels."""
    try:
        replicas = max(int(node.labels.get(REPLICAS_LABEL, "1")), 1)
    except ValueError:
        replicas = 1
    resources: Counter[str] = Counter()
    for name, amount in node.capacity.items():
        if name == GPU_RESOURCE or name.startswith(MIG_RESOURCE_PREFIX):
            count = _integer(amount)
            resources[name] = count // replicas if count % replicas == 0 else count
    driver = node.labels.get(DRIVER_LABEL)
    if driver is None and all(k in node.labels for k in DRIVER_LABELS_OLD[:2]):
        parts = [node.labels[k] for k in DRIVER_LABELS_OLD if node.labels.get(k)]
        driver = ".".join(parts)
    return PluginInventory(resources, node.labels.get(PRODUCT_LABEL),
                           None if driver is None else driver_text(driver))


def expected_plugin_inventory(cluster: ClusterPlan, pool: PoolPlan) -> Counter[str]:
    """The device-plugin resources one node of ``pool`` advertises, by gen's own count."""
    if pool.gpu is None or pool.pool.platform != "nvidia":
        return Counter()
    return units_per_node(pool, cluster.mig_strategy)


def _sanitised(name: str) -> str:
    """GFD's ``sanitise``: drop characters other than ``[A-Za-z0-9-_. ]``, join blanks by ``-``."""
    return "-".join(re.sub(r"[^A-Za-z0-9\-_. ]", "", name).split())


def gfd_product(product_name: str) -> str:
    """The ``nvidia.com/gpu.product`` GFD writes for a GPU with this product name."""
    return _sanitised(product_name)


def gfd_product_matches(label: str, product_name: str) -> bool:
    """Whether a ``nvidia.com/gpu.product`` label names this GPU (also as a MIG device under
    the single strategy, ``-MIG-<profile>``, or time-sliced, ``-SHARED``)."""
    base = gfd_product(product_name)
    return label == base or label.startswith(base + "-MIG-") or label == base + "-SHARED"


def format_kinds(kinds: Mapping[DeviceKind, int], keys: Sequence[DeviceKind]) -> str:
    """``full GPU ×8`` / ``MIG 3g.40gb ×2`` for each key, in order."""
    parts = []
    for kind in keys:
        label = f"MIG {kind[1]}" if kind[0] == "mig" else (
            "full GPU" if kind[0] == "gpu" else f"type {kind[0] or '?'}")
        parts.append(f"{label} ×{kinds.get(kind, 0)}")
    return ", ".join(parts)


def version_minor(text: str) -> tuple[int, int] | None:
    """(major, minor) of a server ``gitVersion`` such as ``v1.36.3`` or ``v1.34.2-eks-1``."""
    match = re.match(r"v?(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else None
