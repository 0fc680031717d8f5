"""mig-parted configuration: a strict model of its file, a builder, and the device-plugin side.

The schema is mig-parted v0.15.0's ``api/spec/v1`` (NVIDIA/mig-parted
``api/spec/v1/spec.go``@v0.15.0)::

    version: v1
    mig-configs:
      <config name>:              # the value of the node label nvidia.com/mig.config
        - devices: all | [0, 1]   # required
          mig-enabled: true       # required
          mig-devices: {"1g.10gb": 2}      # required when mig-enabled, absent/empty when not
          device-filter: "0x233010DE"      # optional; a string or a list of strings

The builder emits one entry per (GPU model, index set), always adds ``all-disabled`` (the
GPU Operator labels MIG nodes with it by default) and ``all-enabled``, refuses entries that
could match the same GPU, and checks every entry whose device filter names a catalog GPU
with :func:`gen.nvidia.mig.check_layout`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from gen._data import safe_load
from gen.errors import MigPartedConfigError
from gen.nvidia.gpus import GPU, NVIDIA_VENDOR_ID, gpu_catalog, normalize_pci_id
from gen.nvidia.mig import check_layout, is_profile_name

__all__ = [
    "LayoutEntry",
    "MigConfigEntry",
    "MigPartedConfig",
    "NodeLayout",
    "Strategy",
    "all_profile_config_name",
    "build_mig_parted_config",
    "choose_strategy",
    "device_filter_for",
    "parse_mig_parted_yaml",
    "render_mig_parted_yaml",
]

Strategy = Literal["single", "mixed"]

# One node: per GPU index, its MIG layout (profile -> count), or None for MIG disabled.
NodeLayout = Sequence[Mapping[str, int] | None]

_FILTER_RE = re.compile(r"^0x[0-9a-fA-F]{8}(?::0x[0-9a-fA-F]{8})?$")
_LABEL_VALUE_RE = re.compile(r"^(?:[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")


# --- the strict model ----------------------------------------------------------------------


class MigConfigEntry(BaseModel):
    """One entry of a mig-parted config: which GPUs it selects and how they are split."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)

    devices: Literal["all"] | list[int] = Field(
        description="'all', or the GPU indexes (PCI order of the GPUs NVML can open)."
    )
    mig_enabled: bool = Field(alias="mig-enabled", description="MIG mode of the selected GPUs.")
    mig_devices: dict[str, int] | None = Field(
        default=None,
        alias="mig-devices",
        description="Profile -> instances per GPU; {} enables MIG with no instances.",
    )
    device_filter: str | list[str] | None = Field(
        default=None,
        alias="device-filter",
        description="PCI filter(s) '0xDDDDVVVV[:0xSSSSvvvv]'; absent or empty matches every GPU.",
    )

    @field_validator("devices")
    @classmethod
    def _indexes(cls, value: Literal["all"] | list[int]) -> Literal["all"] | list[int]:
        if isinstance(value, list) and any(i < 0 for i in value):
            raise ValueError("GPU indexes must be ≥ 0")
        return value

    @field_validator("device_filter")
    @classmethod
    def _filters(cls, value: str | list[str] | None) -> str | list[str] | None:
        for item in [value] if isinstance(value, str) else value or []:
            if not _FILTER_RE.match(item):
                raise ValueError(f"device-filter {item!r} is not '0xDDDDVVVV[:0xSSSSvvvv]'")
        return value

    @model_validator(mode="after")
    def _devices_rule(self) -> MigConfigEntry:
        if not self.mig_enabled:
            if self.mig_devices:
                raise ValueError("MIG devices included when 'mig-enabled' is false")
            return self
        if self.mig_devices is None:
            raise ValueError("'mig-devices' is required when 'mig-enabled' is true")
        for name, count in self.mig_devices.items():
            if not is_profile_name(name):
                raise ValueError(f"{name!r} is not a MIG profile name")
            if count < 0:
                raise ValueError(f"count for {name!r} must be ≥ 0")
        if self.mig_devices and not any(self.mig_devices.values()):
            raise ValueError("all counts for all MigProfiles are 0")
        return self

    def filters(self) -> tuple[str, ...]:
        """The device filters as a tuple (empty: matches every GPU)."""
        if self.device_filter is None:
            return ()
        return (
            (self.device_filter,)
            if isinstance(self.device_filter, str)
            else tuple(self.device_filter)
        )


class MigPartedConfig(BaseModel):
    """A whole mig-parted config file (``version: v1``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, populate_by_name=True)

    version: Literal["v1"] = Field(description="Schema version; only 'v1' exists.")
    mig_configs: dict[str, list[MigConfigEntry]] = Field(
        alias="mig-configs", min_length=1, description="Config name -> entries (at least one)."
    )

    @field_validator("mig_configs")
    @classmethod
    def _non_empty(cls, value: dict[str, list[MigConfigEntry]]) -> dict[str, list[MigConfigEntry]]:
        for name, entries in value.items():
            if not entries:
                raise ValueError(f"at least one entry in {name!r} is required")
        return value


# --- building --------------------------------------------------------------------------------


@dataclass(frozen=True)
class LayoutEntry:
    """What the builder turns into one mig-parted entry."""

    devices: Literal["all"] | tuple[int, ...]
    mig_enabled: bool
    mig_devices: Mapping[str, int] = field(default_factory=dict)
    device_filter: tuple[str, ...] = ()


def device_filter_for(gpu: GPU) -> tuple[str, ...]:
    """mig-parted device filters for a GPU model: ``0x233010DE`` per PCI device id."""
    return tuple(f"0x{pci[2:].upper()}{NVIDIA_VENDOR_ID.upper()}" for pci in gpu.pci_device_ids)


def all_profile_config_name(profile: str) -> str:
    """The conventional config name for a uniform layout: ``all-1g.10gb.me`` for ``1g.10gb+me``."""
    return "all-" + profile.replace("+", ".")


_DEFAULTS: dict[str, list[dict[str, Any]]] = {
    "all-disabled": [{"devices": "all", "mig-enabled": False}],
    "all-enabled": [{"devices": "all", "mig-enabled": True, "mig-devices": {}}],
}


def build_mig_parted_config(layouts: Mapping[str, Sequence[LayoutEntry]]) -> dict[str, Any]:
    """A mig-parted config dict: defaults first, then configs by name; validated strictly."""
    problems: list[str] = []
    configs: dict[str, list[dict[str, Any]]] = {}
    for name in [*_DEFAULTS, *sorted(n for n in layouts if n not in _DEFAULTS)]:
        if name not in layouts:
            configs[name] = [dict(e) for e in _DEFAULTS[name]]
            continue
        if not _LABEL_VALUE_RE.match(name):
            problems.append(f"config {name!r}: not a valid label value for nvidia.com/mig.config")
        entries = list(layouts[name])
        if not entries:
            problems.append(f"config {name!r}: at least one entry is required")
        problems.extend(_overlaps(name, entries))
        for index, entry in enumerate(entries):
            problems.extend(_entry_problems(name, index, entry))
        configs[name] = [_entry_dict(entry) for entry in entries]
    config: dict[str, Any] = {"version": "v1", "mig-configs": configs}
    if not problems:
        try:
            MigPartedConfig.model_validate(config)
        except ValidationError as err:
            problems.extend(_validation_messages(err))
    if problems:
        raise MigPartedConfigError("invalid mig-parted config:\n  " + "\n  ".join(problems))
    return config


def _entry_dict(entry: LayoutEntry) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if entry.device_filter:
        filters = list(entry.device_filter)
        out["device-filter"] = filters[0] if len(filters) == 1 else filters
    out["devices"] = "all" if entry.devices == "all" else list(entry.devices)
    out["mig-enabled"] = entry.mig_enabled
    if entry.mig_enabled:
        out["mig-devices"] = {k: entry.mig_devices[k] for k in sorted(entry.mig_devices)}
    elif entry.mig_devices:
        out["mig-devices"] = dict(entry.mig_devices)  # rejected by the model, reported there
    return out


def _filter_key(text: str) -> tuple[str, str]:
    device, _, subsystem = text.lower().partition(":")
    return device, subsystem


def _filters_overlap(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    if not a or not b:
        return True
    for fa in map(_filter_key, a):
        for fb in map(_filter_key, b):
            if fa[0] == fb[0] and (not fa[1] or not fb[1] or fa[1] == fb[1]):
                return True
    return False


def _overlaps(name: str, entries: Sequence[LayoutEntry]) -> list[str]:
    problems = []
    for i, first in enumerate(entries):
        for j in range(i + 1, len(entries)):
            second = entries[j]
            if first.devices == "all" or second.devices == "all":
                same_devices = True
            else:
                same_devices = bool(set(first.devices) & set(second.devices))
            if same_devices and _filters_overlap(first.device_filter, second.device_filter):
                problems.append(
                    f"config {name!r}: entries {i} and {j} can match the same GPU "
                    "(mig-parted would apply both, the last one winning); make them disjoint"
                )
    return problems


def _entry_problems(name: str, index: int, entry: LayoutEntry) -> list[str]:
    where = f"config {name!r} entry {index}"
    if not entry.mig_enabled:
        return [f"{where}: mig-devices given with mig-enabled false"] if entry.mig_devices else []
    problems = []
    catalog = gpu_catalog()
    for text in entry.device_filter:
        pci = normalize_pci_id(_filter_key(text)[0])
        gpu = catalog.find(pci) if pci else None
        if gpu is None:
            continue
        if not gpu.mig_capable:
            problems.append(f"{where}: {gpu.id} ({text}) is not MIG-capable")
            continue
        check = check_layout(gpu, entry.mig_devices)
        problems.extend(f"{where} on {gpu.id}: {error}" for error in check.errors)
    return problems


def _validation_messages(err: ValidationError) -> list[str]:
    return [
        ".".join(str(part) for part in item["loc"]) + ": " + item["msg"] for item in err.errors()
    ]


# --- YAML -------------------------------------------------------------------------------------


class _Quoted(str):
    """A string always written double-quoted."""


class _FlowList(list[Any]):
    """A list written in flow style: ``[0, 1]``."""


class _Dumper(yaml.SafeDumper):
    """Indents list items under their key (PyYAML's default does not)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        del indentless  # always indent
        super().increase_indent(flow, False)


def _represent_quoted(dumper: yaml.SafeDumper, data: _Quoted) -> yaml.ScalarNode:
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(data), style='"')


def _represent_flow(dumper: yaml.SafeDumper, data: _FlowList) -> yaml.SequenceNode:
    return dumper.represent_sequence("tag:yaml.org,2002:seq", list(data), flow_style=True)


_Dumper.add_representer(_Quoted, _represent_quoted)
_Dumper.add_representer(_FlowList, _represent_flow)


def _for_yaml(entry: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in entry.items():
        if key == "device-filter":
            out[key] = _Quoted(value) if isinstance(value, str) else [_Quoted(v) for v in value]
        elif key == "devices" and isinstance(value, list):
            out[key] = _FlowList(value)
        elif key == "mig-devices":
            out[key] = {_Quoted(k): v for k, v in value.items()}
        else:
            out[key] = value
    return out


def render_mig_parted_yaml(config: Mapping[str, Any]) -> str:
    """YAML text for the ConfigMap key ``config.yaml``: quoted profile keys, fixed order."""
    data = {
        "version": config["version"],
        "mig-configs": {
            name: [_for_yaml(entry) for entry in entries]
            for name, entries in config["mig-configs"].items()
        },
    }
    return yaml.dump(
        data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True
    )


def parse_mig_parted_yaml(text: str) -> MigPartedConfig:
    """Parse and strictly validate a mig-parted config file."""
    try:
        data = safe_load(text)
    except yaml.YAMLError as err:
        raise MigPartedConfigError(f"mig-parted config is not YAML: {err}") from err
    try:
        return MigPartedConfig.model_validate(data)
    except ValidationError as err:
        raise MigPartedConfigError(
            "invalid mig-parted config:\n  " + "\n  ".join(_validation_messages(err))
        ) from err


# --- device plugin side -------------------------------------------------------------------------


def choose_strategy(nodes: Iterable[NodeLayout]) -> Strategy:
    """``single`` only when every node with MIG is uniform: all GPUs MIG-enabled, one profile.

    Each node is a sequence of per-GPU layouts (``None``: MIG disabled on that GPU). The
    device plugin's single strategy also fails on a MIG-enabled GPU with no instances.
    """
    for node in nodes:
        enabled = [layout for layout in node if layout is not None]
        if not enabled:
            continue
        if len(enabled) != len(node):
            return "mixed"
        profiles = set()
        for layout in enabled:
            used = {name for name, count in layout.items() if count > 0}
            if not used:
                return "mixed"
            profiles |= used
        if len(profiles) != 1:
            return "mixed"
    return "single"
