"""One DRA device as a ResourceSlice publishes it: the value CEL selectors are evaluated on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from types import MappingProxyType
from typing import Any

from gen.errors import DeviceError, QuantityError, VersionError
from gen.k8s.quantity import parse_quantity
from gen.k8s.semver import Version, parse_version

__all__ = [
    "AttrValue",
    "Device",
    "ShapeKey",
    "device_from_resourceslice_entry",
    "qualify",
]

AttrValue = str | int | bool | Version
"""A DRA attribute value: the ``string``, ``int``, ``bool`` or ``version`` field."""

ShapeKey = tuple[
    str, tuple[tuple[str, str, AttrValue], ...], tuple[tuple[str, Decimal], ...], bool
]

_ATTRIBUTE_FIELDS = ("string", "int", "bool", "version")
_LIST_FIELDS = ("strings", "ints", "bools", "versions")


def qualify(name: str, driver: str) -> str:
    """The fully qualified attribute or capacity name: unqualified names belong to ``driver``."""
    return name if "/" in name else f"{driver}/{name}"


@dataclass(frozen=True)
class Device:
    """One device of a ResourceSlice.

    ``attributes`` and ``capacity`` are keyed by fully qualified name
    (``gpu.nvidia.com/productName``, ``resource.kubernetes.io/pcieRoot``); capacity values are
    exact quantities (bytes for memory). Instances are hashable and compare by value.
    """

    driver: str
    name: str
    attributes: Mapping[str, AttrValue]
    capacity: Mapping[str, Decimal]
    allow_multiple_allocations: bool = False
    """The device's ``allowMultipleAllocations`` (a field of the DRAConsumableCapacity feature,
    unset = false, as the DRA CEL compiler reads it: ``ptr.Deref(..., false)``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "attributes", MappingProxyType(dict(self.attributes)))
        object.__setattr__(self, "capacity", MappingProxyType(dict(self.capacity)))
        # Computed once: devices are dictionary keys on the evaluation hot path.
        attrs = tuple(sorted((k, type(v).__name__, v) for k, v in self.attributes.items()))
        key: ShapeKey = (self.driver, attrs, tuple(sorted(self.capacity.items())),
                         self.allow_multiple_allocations)
        object.__setattr__(self, "_shape_key", key)
        object.__setattr__(self, "_hash", hash((self.name, key)))

    def shape_key(self) -> ShapeKey:
        """A hashable key of driver, attributes, capacity and ``allowMultipleAllocations``:
        everything but the name.

        Two devices with equal keys give the same result for every selector. The key is exact:
        unique attributes (``uuid``, ``parentUUID``, ``pciBusID``...) are part of it, so callers
        that group devices by shape strip those from ``attributes`` themselves first. Values
        carry their type name, so ``True`` and ``1`` do not collide.
        """
        key: ShapeKey = self.__dict__["_shape_key"]
        return key

    def __hash__(self) -> int:
        value: int = self.__dict__["_hash"]
        return value

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Device):
            return NotImplemented
        return self.name == other.name and self.shape_key() == other.shape_key()


def _attribute(device: str, name: str, raw: object) -> AttrValue:
    where = f"device {device!r}: attribute {name!r}"
    if not isinstance(raw, Mapping):
        raise DeviceError(f"{where}: must be a mapping with one of {', '.join(_ATTRIBUTE_FIELDS)}")
    listed = [k for k in _LIST_FIELDS if k in raw]
    if listed:
        raise DeviceError(f"{where}: list attributes ({listed[0]}) are not supported")
    present = [k for k in raw if k in _ATTRIBUTE_FIELDS]
    unknown = [str(k) for k in raw if k not in _ATTRIBUTE_FIELDS]
    if unknown:
        raise DeviceError(f"{where}: unknown field {unknown[0]!r}")
    if len(present) != 1:
        raise DeviceError(
            f"{where}: exactly one of {', '.join(_ATTRIBUTE_FIELDS)} is required, "
            f"got {len(present)}"
        )
    kind = present[0]
    value = raw[kind]
    if kind == "bool" and isinstance(value, bool):
        return value
    if kind == "int" and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind == "string" and isinstance(value, str):
        return value
    if kind == "version" and isinstance(value, str):
        try:
            return parse_version(value)
        except VersionError as err:
            raise DeviceError(f"{where}: {err.message}") from err
    raise DeviceError(f"{where}: {kind} value has the wrong type: {value!r}")


def _capacity(device: str, name: str, raw: object) -> Decimal:
    value = raw.get("value") if isinstance(raw, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise DeviceError(f"device {device!r}: capacity {name!r} must be {{value: <quantity>}}")
    try:
        return parse_quantity(str(value))
    except QuantityError as err:
        raise DeviceError(f"device {device!r}: capacity {name!r}: {err.message}") from err


def _mapping(entry: Mapping[str, Any], key: str, device: str) -> Mapping[str, object]:
    raw = entry.get(key) or {}
    if not isinstance(raw, Mapping) or not all(isinstance(k, str) for k in raw):
        raise DeviceError(f"device {device!r}: {key} must be a mapping of names")
    return raw


def device_from_resourceslice_entry(entry: Mapping[str, Any], driver: str) -> Device:
    """Read one ``spec.devices[]`` entry of a ``resource.k8s.io/v1`` ResourceSlice.

    ``{name, attributes: {k: {string|int|bool|version: v}}, capacity: {k: {value: q}}}``;
    unqualified names belong to ``driver``'s domain. The v1beta1 ``basic:`` wrapper is unwrapped.
    ``allowMultipleAllocations`` (a bool) is read; other device fields (taints, counters...) are
    ignored. Raises :class:`DeviceError`.
    """
    if not isinstance(entry, Mapping):
        raise DeviceError("a device entry must be a mapping")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise DeviceError("a device entry needs a non-empty string 'name'")
    basic = entry.get("basic")
    body: Mapping[str, Any] = basic if isinstance(basic, Mapping) else entry
    attributes = {
        qualify(k, driver): _attribute(name, k, v)
        for k, v in _mapping(body, "attributes", name).items()
    }
    capacity = {
        qualify(k, driver): _capacity(name, k, v)
        for k, v in _mapping(body, "capacity", name).items()
    }
    multiple = body.get("allowMultipleAllocations", False)
    if multiple is None:
        multiple = False
    if not isinstance(multiple, bool):
        raise DeviceError(f"device {name!r}: allowMultipleAllocations must be true or false, "
                          f"got {multiple!r}")
    return Device(driver=driver, name=name, attributes=attributes, capacity=capacity,
                  allow_multiple_allocations=multiple)
