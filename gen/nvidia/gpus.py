"""The built-in GPU catalog: whole GPUs, their PCI ids and product names, and MIG tables.

The facts live in ``gen/data/gpus.yaml`` (sources are cited there); this module turns them
into frozen dataclasses and answers look-ups. The file is parsed once, on first use.

A GPU is looked up by its catalog id (``h100-sxm5-80gb``), a PCI device id in any of the
forms NVIDIA writes it (``0x2330``, ``0x233010DE``, ``233010de``, ``10de:2330``), its
product name as the NVIDIA DRA driver reports it (``NVIDIA H100 80GB HBM3``) or its
marketing name, all case-insensitive.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from gen._data import data_text, safe_load
from gen.caches import memoize, once
from gen.errors import CatalogLookupError

__all__ = ["GPU", "GPUCatalog", "MIGProfile", "gpu_catalog", "normalize_pci_id"]

NVIDIA_VENDOR_ID = "10de"

MediaFlag = Literal["", "me", "me.all"]

_PCI_RE = re.compile(r"^(?:0x)?([0-9a-f]{4})(?:(?:0x)?10de)?$")
_PCI_VENDOR_FIRST_RE = re.compile(r"^(?:0x)?10de:(?:0x)?([0-9a-f]{4})$")
_NAME_GB_RE = re.compile(r"\.(\d+)gb")
# A GPU without a logged CUDA total: CUDA sees less than NVML's total by the driver's reserve;
# the largest reserve logged on a GPU of ≤ 100 GB is A100 40GB's 640 MiB (NVML 40960 MiB, vLLM
# "total_gpu_memory (39.38GiB)", vllm#16570), so gen takes NVML − 1 GiB: never more than CUDA
# shows, at the price of up to ~0.6 GiB of KV pool.
CUDA_RESERVE_MIB = 1024


@dataclass(frozen=True)
class MIGProfile:
    """One GPU-instance profile of one GPU model, with its placement rule.

    ``size`` and ``starts`` are in placement units of the GPU's grid (``GPU.mig_units``).
    Engine counts are ``None`` where no source gives them. ``memory_mib`` is measured when
    ``memory_measured`` is true, otherwise a conservative estimate from the name.
    """

    name: str
    size: int
    starts: tuple[int, ...]
    max_count: int
    compute_slices: int
    memory_mib: int
    sms: int | None = None
    copy_engines: int | None = None
    decoders: int | None = None
    encoders: int | None = None
    jpegs: int | None = None
    ofas: int | None = None
    media: MediaFlag = ""
    gi_profile_id: int | None = None
    min_driver: str | None = None
    memory_measured: bool = False

    @property
    def has_media_extension(self) -> bool:
        """True for ``+me`` and ``+me.all`` profiles (they claim the GPU's media engines)."""
        return self.media != ""


@dataclass(frozen=True)
class GPU:
    """One GPU model: identity, memory, architecture and (if MIG-capable) its MIG table."""

    id: str
    name: str
    vendor: str
    pci_device_ids: tuple[str, ...]
    product_name: str
    memory_mib: int
    architecture: str
    compute_capability: str
    mig_units: int = 0
    mig_profiles: tuple[MIGProfile, ...] = field(default=(), repr=False)
    unified_memory: bool = False
    mig_compute_slices: int = 0
    other_product_names: tuple[str, ...] = ()
    unverified: tuple[str, ...] = field(default=())
    cuda_total_mib: int | None = None
    """The total CUDA reports, from a vLLM log; None when no log gives it."""
    brand: str = "Nvidia"
    """NVML's brand as the DRA driver publishes it (``Nvidia``, ``NvidiaRTX``, ``GeForce``)."""
    addressing_mode: str | None = None
    """The addressing mode NVML reports for the GPU on a node that does not say otherwise
    (node pool ``addressing_mode``): ``ATS`` on Grace systems, ``None`` (neither HMM nor ATS
    active) for the others; None: NVML reports none (not supported)."""
    nvlink_domain_nodes: int | None = None
    """Nodes (compute trays) of one multi-node NVLink domain of the rack-scale system this
    GPU ships in (GB200/GB300 NVL72: 18); None: NVLink ends at the node."""

    def __hash__(self) -> int:
        # Cheap and consistent with the generated __eq__ (equal GPUs share these fields).
        return hash((self.id, self.pci_device_ids, self.mig_units))

    def mig_profile(self, name: str) -> MIGProfile | None:
        """The MIG profile called ``name`` on this GPU, or None (names are per GPU)."""
        return _profile_index(self).get(name)

    @property
    def cuda_visible_mib(self) -> int:
        """The logged CUDA total, else NVML's total less :data:`CUDA_RESERVE_MIB`."""
        if self.cuda_total_mib is not None:
            return self.cuda_total_mib
        return self.memory_mib - CUDA_RESERVE_MIB

    @property
    def mig_capable(self) -> bool:
        """True when the GPU can be partitioned with MIG."""
        return self.mig_units > 0 and bool(self.mig_profiles)

    @property
    def mig_profile_names(self) -> tuple[str, ...]:
        """The profile names in table order."""
        return tuple(p.name for p in self.mig_profiles)

    @property
    def product_names(self) -> tuple[str, ...]:
        """Every NVML name boards of this GPU report (one PCI id, several products)."""
        return (self.product_name, *self.other_product_names)


@memoize(maxsize=256)
def _profile_index(gpu: GPU) -> dict[str, MIGProfile]:
    return {p.name: p for p in gpu.mig_profiles}


def normalize_pci_id(text: str) -> str | None:
    """``0x2330``, ``0x233010DE``, ``233010de`` or ``10de:2330`` → ``0x2330``; else None."""
    key = text.strip().lower()
    match = _PCI_RE.match(key) or _PCI_VENDOR_FIRST_RE.match(key)
    return f"0x{match.group(1)}" if match else None


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


class GPUCatalog:
    """An ordered, immutable set of GPUs with look-up by id, PCI id or name."""

    def __init__(self, gpus: Iterable[GPU]) -> None:
        self._gpus: tuple[GPU, ...] = tuple(gpus)
        self._by_key: dict[str, GPU] = {}
        self._by_pci: dict[str, GPU] = {}
        for gpu in self._gpus:
            keys = [gpu.id, gpu.product_name, gpu.name, *gpu.other_product_names]
            for key in keys:
                folded = _fold(key)
                other = self._by_key.get(folded)
                if other is not None and other is not gpu:
                    raise ValueError(f"catalog name {key!r} names both {other.id} and {gpu.id}")
                self._by_key[folded] = gpu
            for pci in gpu.pci_device_ids:
                if pci in self._by_pci:
                    raise ValueError(f"PCI id {pci} names both {self._by_pci[pci].id} and {gpu.id}")
                self._by_pci[pci] = gpu

    def all(self) -> tuple[GPU, ...]:
        """Every GPU, in catalog order."""
        return self._gpus

    def with_gpus(self, extra: Iterable[GPU]) -> GPUCatalog:
        """A new catalog holding these GPUs followed by ``extra`` (e.g. Apple chips)."""
        return GPUCatalog((*self._gpus, *extra))

    def find(self, name: str) -> GPU | None:
        """The GPU for an id, PCI id, product name or marketing name, or None."""
        gpu = self._by_key.get(_fold(name))
        if gpu is not None:
            return gpu
        pci = normalize_pci_id(name)
        return self._by_pci.get(pci) if pci else None

    def lookup(self, name: str) -> GPU:
        """Like :meth:`find`; an unknown name raises CatalogLookupError naming the nearest."""
        gpu = self.find(name)
        if gpu is not None:
            return gpu
        candidates = {_fold(g.id): g.id for g in self._gpus}
        candidates.update({_fold(g.product_name): g.product_name for g in self._gpus})
        near = difflib.get_close_matches(_fold(name), list(candidates), n=3, cutoff=0.5)
        if near:
            hint = "did you mean " + ", ".join(repr(candidates[n]) for n in near) + "?"
        else:
            hint = "known ids: " + ", ".join(g.id for g in self._gpus)
        raise CatalogLookupError(f"unknown GPU {name!r}; {hint}")


def _estimate_memory_mib(name: str) -> int:
    """Name-based estimate: the ``<N>gb`` in the name read as N·10^9 bytes (an underestimate)."""
    match = _NAME_GB_RE.search(name)
    if match is None:
        raise ValueError(f"MIG profile name {name!r} has no memory size")
    return int(match.group(1)) * 10**9 // 2**20


def _build_profiles(
    table: Mapping[str, Any], cls: Mapping[str, Any], sms_override: Mapping[str, int]
) -> tuple[MIGProfile, ...]:
    kinds: Mapping[str, Mapping[str, Any]] = cls["kinds"]
    keep_ids = bool(table.get("gi_profile_ids", False))
    engine_table: Mapping[str, Sequence[int]] = table.get("engines", {})
    profiles = []
    for row in table["profiles"]:
        kind = kinds[row["kind"]]
        name = str(row["name"])
        media: MediaFlag = kind.get("media", "")
        measured = "memory_mib" in row
        engines = row.get("engines", engine_table.get(row["kind"]))
        if engines is not None:
            copy, dec, enc, jpeg, ofa = (int(n) for n in engines)
            counts: tuple[int | None, ...] = (copy, dec, enc, jpeg, ofa)
        elif media:
            # No table: +me takes one JPEG and the OFA (inferred), +me.all the UG's four JPEGs.
            counts = (None, None, None, 4 if media == "me.all" else 1, 1)
        else:
            counts = (None,) * 5
        profiles.append(
            MIGProfile(
                name=name,
                size=int(kind["size"]),
                starts=tuple(int(s) for s in kind["starts"]),
                max_count=int(kind["max_count"]),
                compute_slices=int(kind["compute_slices"]),
                memory_mib=int(row["memory_mib"]) if measured else _estimate_memory_mib(name),
                memory_measured=measured,
                sms=sms_override.get(name, row.get("sms")),
                copy_engines=counts[0],
                decoders=counts[1],
                encoders=counts[2],
                jpegs=counts[3],
                ofas=counts[4],
                media=media,
                gi_profile_id=int(kind["gi_profile_id"]) if keep_ids else None,
                min_driver=row.get("min_driver"),
            )
        )
    return _scale_estimates(tuple(profiles))


def _scale_estimates(profiles: tuple[MIGProfile, ...]) -> tuple[MIGProfile, ...]:
    """Estimated memory of unmeasured profiles, at least the measured memory per slice.

    Memory slices are equal parts of the GPU, so a profile spanning ``size`` slices holds at
    least ``size`` times the memory per slice that a measured profile shows (H100 80GB:
    3g.40gb is 40320 MiB over 4 slices, so 7g.80gb holds at least 80640 MiB, more than the
    76293 MiB its name gives). Without this the driver's memory counter (the largest
    profile's memory) would be smaller than two measured halves.
    """
    measured = [p.memory_mib / p.size for p in profiles if p.memory_measured]
    if not measured:
        return profiles
    per_slice = max(measured)
    return tuple(
        p if p.memory_measured else replace(p, memory_mib=max(p.memory_mib,
                                                              int(per_slice * p.size)))
        for p in profiles
    )


def _build_gpu(row: Mapping[str, Any], data: Mapping[str, Any]) -> GPU:
    units = 0
    compute = 0
    profiles: tuple[MIGProfile, ...] = ()
    table_name = row.get("mig_table")
    if table_name is not None:
        table = data["mig_tables"][table_name]
        cls = data["placement_classes"][table["class"]]
        units = int(cls["units"])
        compute = int(cls["compute_slices"])
        profiles = _build_profiles(table, cls, row.get("mig_sms", {}))
    pci: Sequence[str] = row["pci"]
    return GPU(
        id=row["id"],
        name=row["name"],
        vendor=row.get("vendor", "nvidia"),
        pci_device_ids=tuple(str(p).lower() for p in pci),
        product_name=row["product_name"],
        memory_mib=int(row["memory_mib"]),
        architecture=row["architecture"],
        compute_capability=str(row["compute_capability"]),
        mig_units=units,
        mig_profiles=profiles,
        unified_memory=bool(row.get("unified_memory", False)),
        mig_compute_slices=compute,
        other_product_names=tuple(row.get("other_product_names", ())),
        unverified=tuple(row.get("unverified", ())),
        cuda_total_mib=int(row["cuda_total_mib"]) if "cuda_total_mib" in row else None,
        brand=str(row.get("brand", "Nvidia")),
        addressing_mode=str(row.get("addressing_mode", "None")),
        nvlink_domain_nodes=(int(row["nvlink_domain_nodes"]) if "nvlink_domain_nodes" in row
                             else None),
    )


def load_catalog_text(text: str) -> GPUCatalog:
    """Build a catalog from the YAML text of ``gen/data/gpus.yaml`` (used by tests too)."""
    data = safe_load(text)
    return GPUCatalog(_build_gpu(row, data) for row in data["gpus"])


@once
def gpu_catalog() -> GPUCatalog:
    """The built-in catalog, parsed once."""
    return load_catalog_text(data_text("gpus.yaml"))
