"""What ``gen verify`` reads from a live cluster, as plain data, and the interface it reads it by.

:class:`ClusterAPI` is everything :mod:`gen.verify` asks of a cluster: the server's version,
discovery (which kinds a group-version serves), cluster-wide lists, and one server-side
**dry-run** apply. It has no method that could create, change or delete anything: the only
implementation that talks to a real API server is :class:`gen.verify.client.KubeClient`, and
tests hand in fakes. Answers are JSON as the API server sends it.

The parsers (:func:`node_state`, :func:`published_slice`) turn that JSON into frozen records,
so that the drift comparison (:mod:`gen.verify.drift`) is a pure function of data: a test
builds a cluster's state from gen's own simulation of the NVIDIA DRA driver
(:func:`gen.dra.simulate.resource_slices`) and edits it.

ResourceSlice shapes (kubernetes/api ``resource/v1/types.go``, ``resource/v1beta2/types.go``,
``resource/v1beta1/types.go``@v0.36.3): ``spec.driver``, ``spec.nodeName``, ``spec.pool``,
``spec.sharedCounters[] {name, counters: {name: {value}}}`` and ``spec.devices[] {name,
attributes, capacity, consumesCounters[] {counterSet, counters}}``; ``v1beta1`` wraps a
device's fields in ``basic``. Attribute names without a domain belong to the driver's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Protocol

from gen.dra.devices import Device, device_from_resourceslice_entry
from gen.errors import DeviceError, QuantityError
from gen.k8s.quantity import parse_quantity

__all__ = [
    "ApplyAnswer",
    "ClusterAPI",
    "ClusterState",
    "NodeState",
    "PublishedDevice",
    "PublishedSlice",
    "ServedKind",
    "node_state",
    "published_slice",
]


@dataclass(frozen=True)
class ServedKind:
    """A kind a group-version serves: its REST resource (plural) and whether it is namespaced."""

    plural: str
    namespaced: bool


@dataclass(frozen=True)
class ApplyAnswer:
    """The API server's answer to one dry-run apply: HTTP status, decoded body (the object,
    or a ``Status`` on refusal) and the ``Warning`` headers it sent."""

    status: int
    body: Mapping[str, Any]
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the server accepted the object."""
        return 200 <= self.status < 300


class ClusterAPI(Protocol):
    """The read-only questions :mod:`gen.verify` asks a cluster.

    Implementations raise :class:`gen.errors.ClusterAccessError` when the cluster cannot be
    asked at all (unreachable, credentials refused, RBAC refusal of a read, timeout).
    """

    @property
    def description(self) -> str:
        """Which cluster this is, for messages: ``context 'x' at https://...``; no credential."""
        ...

    def server_version(self) -> str:
        """``gitVersion`` of ``GET /version``, e.g. ``v1.36.3``."""
        ...

    def served(self, api_version: str) -> Mapping[str, ServedKind] | None:
        """Kind → how it is served, for one group-version; None when it is not served."""
        ...

    def list(self, api_version: str, plural: str) -> list[dict[str, Any]]:
        """Every object of a cluster-wide list (``GET``; namespaced kinds across namespaces)."""
        ...

    def dry_run_apply(self, obj: Mapping[str, Any], kind: ServedKind) -> ApplyAnswer:
        """Server-side apply of ``obj`` with ``dryRun=All``: nothing is persisted."""
        ...


@dataclass(frozen=True)
class NodeState:
    """One Node: its name, labels and ``status.capacity``."""

    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    capacity: Mapping[str, Decimal] = field(default_factory=dict)


@dataclass(frozen=True)
class PublishedDevice:
    """One device of a ResourceSlice and the counters it consumes."""

    device: Device
    consumes: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)
    """Counter set → counter → amount."""


@dataclass(frozen=True)
class PublishedSlice:
    """One ResourceSlice, read."""

    name: str
    driver: str
    node: str
    """``spec.nodeName`` (empty for slices not bound to one node)."""
    devices: tuple[PublishedDevice, ...] = ()
    counter_sets: Mapping[str, Mapping[str, Decimal]] = field(default_factory=dict)
    """``spec.sharedCounters``: counter set → counter → amount."""
    problems: tuple[str, ...] = ()
    """Devices or counters that could not be read (named, with why); they are left out."""


@dataclass(frozen=True)
class ClusterState:
    """What the cluster publishes about its hardware."""

    version: str
    """The API server's ``gitVersion``."""
    nodes: tuple[NodeState, ...]
    slices: tuple[PublishedSlice, ...] | None
    """None: the cluster serves no ResourceSlice API."""


def _quantities(raw: object) -> dict[str, Decimal]:
    """``{name: {value: q}}`` (or ``{name: q}``, as Node capacity is) → exact quantities;
    entries that are not quantities are skipped."""
    out: dict[str, Decimal] = {}
    if not isinstance(raw, Mapping):
        return out
    for name, value in raw.items():
        text = value.get("value") if isinstance(value, Mapping) else value
        if isinstance(text, bool) or not isinstance(text, str | int):
            continue
        try:
            out[str(name)] = parse_quantity(str(text))
        except QuantityError:
            continue
    return out


def _mapping(raw: object) -> Mapping[str, Any]:
    return raw if isinstance(raw, Mapping) else {}


def node_state(obj: Mapping[str, Any]) -> NodeState:
    """A Node object (JSON) → :class:`NodeState`."""
    meta = _mapping(obj.get("metadata"))
    labels = {str(k): str(v) for k, v in _mapping(meta.get("labels")).items()}
    capacity = _quantities(_mapping(obj.get("status")).get("capacity"))
    return NodeState(str(meta.get("name", "")), labels, capacity)


def published_slice(obj: Mapping[str, Any]) -> PublishedSlice:
    """A ResourceSlice object (JSON, ``v1``, ``v1beta2`` or ``v1beta1``) → :class:`PublishedSlice`.

    A device that cannot be read (a list attribute, a malformed quantity) is left out and
    named in ``problems``; the rest of the slice still counts.
    """
    meta = _mapping(obj.get("metadata"))
    spec = _mapping(obj.get("spec"))
    driver = str(spec.get("driver", ""))
    devices: list[PublishedDevice] = []
    problems: list[str] = []
    for entry in spec.get("devices") or ():
        try:
            device = device_from_resourceslice_entry(entry, driver)
        except DeviceError as err:
            problems.append(err.message)
            continue
        body = _mapping(entry.get("basic")) or entry
        consumes: dict[str, dict[str, Decimal]] = {}
        for use in body.get("consumesCounters") or ():
            use = _mapping(use)
            consumes[str(use.get("counterSet", ""))] = _quantities(use.get("counters"))
        devices.append(PublishedDevice(device, consumes))
    counter_sets = {
        str(_mapping(s).get("name", "")): _quantities(_mapping(s).get("counters"))
        for s in spec.get("sharedCounters") or ()
    }
    return PublishedSlice(str(meta.get("name", "")), driver, str(spec.get("nodeName") or ""),
                          tuple(devices), counter_sets, tuple(problems))


def slices_of(state: ClusterState, driver: str) -> dict[str, list[PublishedSlice]]:
    """Node name → that node's slices of ``driver``."""
    out: dict[str, list[PublishedSlice]] = {}
    for published in state.slices or ():
        if published.driver == driver and published.node:
            out.setdefault(published.node, []).append(published)
    return out


def read_state(version: str, nodes: Sequence[Mapping[str, Any]],
               slices: Sequence[Mapping[str, Any]] | None) -> ClusterState:
    """A :class:`ClusterState` from the JSON of the version, the Nodes and the ResourceSlices."""
    return ClusterState(
        version,
        tuple(node_state(n) for n in nodes),
        None if slices is None else tuple(published_slice(s) for s in slices),
    )
