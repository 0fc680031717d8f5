"""Apple Silicon: the chip catalog, GPU memory budgets, and the in-cluster Vulkan path.

Apple's GPU backend is called ``apple-metal`` everywhere in gen, never a bare "mps": MPS is
also NVIDIA's Multi-Process Service (the DRA driver's ``GpuConfig`` sharing strategy ``MPS``:
kubernetes-sigs/dra-driver-nvidia-gpu ``demo/specs/quickstart/v1/gpu-test-mps.yaml``@2240711).

Two ways exist to serve a model from an Apple GPU (no kubelet on macOS: kubernetes/k8s.io#6783;
the Venus GPU in libkrun VMs: containers/libkrun ``README.md``@6ed74fac; the device plugin:
squat/generic-device-plugin ``README.md``@179b1fee):

* **native macOS hosts** outside the cluster (vllm-metal, vllm-mlx, llama-server with Metal)
  under launchd, exposed as a selectorless Service + EndpointSlice; see :mod:`gen.apple.launchd`.
  There is no kubelet on macOS, so a Mac can never be a node.
* **Linux VM nodes** run by krunkit/libkrun on a Mac: the guest sees a Venus virtio-gpu at
  ``/dev/dri/renderD128``; squat's generic device plugin advertises it (``squat.ai/dri``) and a
  llama.cpp Vulkan server uses it. vLLM has no Vulkan backend, so vLLM cannot run there.

Memory sizes are Apple's marketing "GB", which are binary: a 16 GB Mac has 16 GiB of RAM.
All byte counts returned here are exact integers (GiB = 2**30 bytes).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from importlib import resources
from typing import Literal

from gen.caches import once
from gen.errors import CatalogLookupError, ProfileValidationError
from gen.pins import pin

__all__ = [
    "APPLE_GPU_BACKEND",
    "DEFAULT_DRI_RESOURCE",
    "DEFAULT_RENDER_NODE",
    "GENERIC_DEVICE_PLUGIN_IMAGE",
    "KRUNKIT_ADDRESS_LIMIT_MIB",
    "KRUNKIT_MAX_VM_MEMORY_MIB",
    "LLAMA_CPP_SERVER_VULKAN_IMAGE",
    "LLAMA_SERVER_ALL_LAYERS",
    "MACOS_RESERVED_FRACTION",
    "METAL_PAGE_BYTES",
    "RAMALAMA_IMAGE",
    "AppleChip",
    "AppleChipVariant",
    "apple_chips",
    "generic_device_plugin_args",
    "generic_device_plugin_config",
    "krunkit_vm_gpu_memory_bytes",
    "krunkit_vram_bytes",
    "llama_server_vulkan_args",
    "lookup_chip",
    "macos_gpu_fraction",
    "usable_unified_memory_bytes",
]

APPLE_GPU_BACKEND = "apple-metal"
"""The name of Apple's GPU backend in profiles and output (not "mps")."""

GIB = 1 << 30
MIB = 1 << 20

Tier = Literal["base", "pro", "max", "ultra"]
_TIERS: tuple[Tier, ...] = ("base", "pro", "max", "ultra")


# --------------------------------------------------------------------------- catalog


@dataclass(frozen=True)
class AppleChipVariant:
    """One GPU configuration of a chip, with the memory sizes Apple sold it with."""

    gpu_cores: int
    memory_gb_options: tuple[int, ...]
    memory_bandwidth_gbs: int | None


@dataclass(frozen=True)
class AppleChip:
    """An Apple Silicon chip (one row of ``gen/data/apple.yaml``).

    ``gpu_cores`` and ``memory_gb_options`` are the union over the chip's variants, ascending.
    ``memory_bandwidth_gbs`` is the figure of the full (most GPU cores) variant; the M3 Max and
    M4 Max cut-down variants are slower, see ``variants``.
    """

    id: str
    name: str
    family: str
    tier: Tier
    gpu_cores: tuple[int, ...]
    memory_gb_options: tuple[int, ...]
    memory_bandwidth_gbs: int | None
    variants: tuple[AppleChipVariant, ...] = ()

    def variant(self, gpu_cores: int) -> AppleChipVariant:
        """The variant with this many GPU cores; raises :class:`CatalogLookupError`."""
        for v in self.variants:
            if v.gpu_cores == gpu_cores:
                return v
        known = ", ".join(str(v.gpu_cores) for v in self.variants)
        raise CatalogLookupError(
            f"{self.name} has no {gpu_cores}-core GPU variant (known: {known})"
        )

    def supports(self, *, gpu_cores: int | None = None, memory_gb: int | None = None) -> bool:
        """Whether Apple sold this chip with that GPU core count and/or memory size."""
        return any(
            (gpu_cores is None or v.gpu_cores == gpu_cores)
            and (memory_gb is None or memory_gb in v.memory_gb_options)
            for v in self.variants
        )


def _bad(where: str, expected: str) -> TypeError:
    # Packaged data is ours: a malformed row is a bug, not a user error.
    return TypeError(f"gen/data/apple.yaml: {where}: expected {expected}")


def _str(row: Mapping[str, object], key: str, where: str) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value:
        raise _bad(f"{where}.{key}", "a non-empty string")
    return value


def _int(value: object, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise _bad(where, "a positive integer")
    return value


def _mapping(value: object, where: str) -> Mapping[str, object]:
    if not isinstance(value, dict):
        raise _bad(where, "a mapping")
    return value


def _list(value: object, where: str) -> list[object]:
    if not isinstance(value, list) or not value:
        raise _bad(where, "a non-empty list")
    return value


_TIER_BY_NAME: dict[str, Tier] = {t: t for t in _TIERS}


def _parse_variant(raw: object, where: str) -> AppleChipVariant:
    row = _mapping(raw, where)
    bandwidth = row.get("bandwidth_gbs")
    return AppleChipVariant(
        gpu_cores=_int(row.get("gpu_cores"), f"{where}.gpu_cores"),
        memory_gb_options=tuple(
            sorted(_int(m, f"{where}.memory_gb") for m in _list(row.get("memory_gb"), where))
        ),
        memory_bandwidth_gbs=None if bandwidth is None else _int(bandwidth, f"{where}.bandwidth"),
    )


def _parse_chip(raw: object, where: str) -> AppleChip:
    row = _mapping(raw, where)
    tier = _TIER_BY_NAME.get(_str(row, "tier", where))
    if tier is None:
        raise _bad(f"{where}.tier", f"one of {', '.join(_TIERS)}")
    variants = sorted(
        (
            _parse_variant(v, f"{where}.variants[{j}]")
            for j, v in enumerate(_list(row.get("variants"), f"{where}.variants"))
        ),
        key=lambda v: v.gpu_cores,
    )
    return AppleChip(
        id=_str(row, "id", where),
        name=_str(row, "name", where),
        family=_str(row, "family", where),
        tier=tier,
        gpu_cores=tuple(v.gpu_cores for v in variants),
        memory_gb_options=tuple(sorted({m for v in variants for m in v.memory_gb_options})),
        memory_bandwidth_gbs=variants[-1].memory_bandwidth_gbs,
        variants=tuple(variants),
    )


@once
def apple_chips() -> tuple[AppleChip, ...]:
    """All chips of the built-in catalog, in file order (M1 → M4, base → ultra).

    Read from the package data once, on first use.
    """
    import yaml  # lazy: keeps `import gen.apple.chips` cheap

    text = resources.files("gen").joinpath("data/apple.yaml").read_text(encoding="utf-8")
    doc = _mapping(yaml.safe_load(text), "document")
    rows = _list(doc.get("chips"), "chips")
    chips = tuple(_parse_chip(row, f"chips[{i}]") for i, row in enumerate(rows))
    ids = [c.id for c in chips]
    if len(set(ids)) != len(ids):
        raise ValueError("gen/data/apple.yaml: duplicate chip ids")
    return chips


def _normal(name: str) -> str:
    """``"Apple M2 Ultra"``, ``"m2-ultra"``, ``"M2_ULTRA"`` → ``"m2ultra"``."""
    key = re.sub(r"[\s_\-]+", "", name.strip().lower())
    return key.removeprefix("apple")


@once
def _chip_index() -> dict[str, AppleChip]:
    index: dict[str, AppleChip] = {}
    for chip in apple_chips():
        index[_normal(chip.id)] = chip
        index[_normal(chip.name)] = chip
    return index


def lookup_chip(name: str) -> AppleChip:
    """A chip by id (``m2-ultra``) or name (``Apple M2 Ultra``), any case, spaces or hyphens.

    Raises:
        CatalogLookupError: the catalog has no such chip; the message names the nearest ones.
    """
    chip = _chip_index().get(_normal(name))
    if chip is not None:
        return chip
    ids = [c.id for c in apple_chips()]
    guess = name.strip().lower().removeprefix("apple").strip().replace(" ", "-")
    nearest = difflib.get_close_matches(guess, ids, n=3, cutoff=0.5)
    hint = f"did you mean {', '.join(nearest)}?" if nearest else f"known: {', '.join(ids)}"
    raise CatalogLookupError(f"unknown Apple chip {name!r}; {hint}")


# --------------------------------------------------------------------------- memory budgets

MACOS_RESERVED_FRACTION: Mapping[str, Fraction] = {
    "up_to_32_gb": Fraction(1, 3),
    "above_32_gb": Fraction(1, 4),
}
"""Share of unified memory macOS keeps from the GPU by default, by installed memory.

See :func:`usable_unified_memory_bytes` for the rule and its sources.
"""

_SMALL_MAC_LIMIT_GB = 32
METAL_PAGE_BYTES = 16 * 1024
"""Apple Silicon's VM page: Metal's working-set cap is a whole number of 16 KiB pages."""


def macos_gpu_fraction(memory_gb: int) -> Fraction:
    """Share of unified memory Metal may wire by default: 2/3 up to 32 GB, 3/4 above."""
    key = "up_to_32_gb" if memory_gb <= _SMALL_MAC_LIMIT_GB else "above_32_gb"
    return 1 - MACOS_RESERVED_FRACTION[key]


def _positive(value: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ProfileValidationError(f"{what} must be a positive integer, got {value!r}")


def usable_unified_memory_bytes(memory_gb: int, *, wired_limit_mb: int | None = None) -> int:
    """Bytes of unified memory a model server may use on a native macOS host.

    macOS caps how much memory the GPU may wire; Metal reports the cap as the device's
    ``recommendedMaxWorkingSetSize`` and allocations beyond it fail or thrash.

    The rule, by default: **2/3 of RAM on Macs with up to 32 GB, 3/4 above, rounded up to a
    whole 16 KiB page**. Public llama.cpp start-up logs (``ggml_metal_init:
    recommendedMaxWorkingSetSize``) match it to the printed digit: 10922.67 MiB on 16 GB
    (abetlen/llama-cpp-python#687, ise-uiuc/magicoder#19) and 21845.34 MiB on 32 GB
    (ggml-org/llama.cpp#2011, ollama/ollama#434) — 2/3, and only the page rounding gives the
    final digit (2/3 × 32 GiB is 21845.33 MiB) — then 49152.00 MiB on 64 GB
    (ggml-org/llama.cpp#1870) and 73728.00 MiB on 96 GB (ggml-org/llama.cpp#3213): 3/4. No
    public log between 32 and 64 GB was found; gen takes 3/4 from 36 GB on, as an M4 Max log
    of 36 GB reported with 27 GiB shows [unverified: that log is not in the corpus]. Newer
    macOS releases give the GPU more (107.52 GiB on a 128 GB M5 Max under macOS 26,
    antirez/ds4#893), so the rule is a floor there. The logs and a test of each are in
    ``tests/apple/metal_working_set.yaml``.

    The administrator can raise the cap with ``sudo sysctl iogpu.wired_limit_mb=<MiB>``
    (not persistent across reboots; 0 means the default). Pass that value as
    ``wired_limit_mb`` to use it instead of the default rule; it is capped at the RAM size.

    Args:
        memory_gb: installed unified memory, as Apple sells it (binary GB).
        wired_limit_mb: the host's ``iogpu.wired_limit_mb`` when set to a non-zero value.
    """
    _positive(memory_gb, "memory_gb")
    total = memory_gb * GIB
    if wired_limit_mb:
        _positive(wired_limit_mb, "wired_limit_mb")
        return min(wired_limit_mb * MIB, total)
    fraction = macos_gpu_fraction(memory_gb)
    pages = -(-total * fraction.numerator // (fraction.denominator * METAL_PAGE_BYTES))
    return pages * METAL_PAGE_BYTES


KRUNKIT_MAX_VM_MEMORY_MIB = 61440
"""krunkit refuses more guest RAM than this ("leave room for VRAM")."""

KRUNKIT_ADDRESS_LIMIT_MIB = 63488
"""Guest RAM + VRAM ceiling: 64 GiB (36-bit IPA) minus 2 GiB (start address plus rounding)."""


def krunkit_vram_bytes(vm_memory_mib: int, host_memory_gb: int | None = None) -> int:
    """The VRAM window krunkit gives the Venus GPU for a VM with ``vm_memory_mib`` of RAM.

    krunkit's own arithmetic (containers/krunkit ``src/context.rs``): guest RAM is rounded up
    to the next whole GiB *plus one* (``(mib // 1024 + 1) * 1024``), and the VRAM window is
    ``63488 MiB - rounded RAM``, never more than the host's physical memory.

    Raises:
        ProfileValidationError: RAM is not positive or exceeds krunkit's 61440 MiB limit.
    """
    _positive(vm_memory_mib, "VM memory")
    if vm_memory_mib > KRUNKIT_MAX_VM_MEMORY_MIB:
        raise ProfileValidationError(
            f"krunkit VM memory {vm_memory_mib} MiB exceeds krunkit's limit of "
            f"{KRUNKIT_MAX_VM_MEMORY_MIB} MiB (RAM + VRAM must fit a 36-bit guest address space)"
        )
    rounded_mib = (vm_memory_mib // 1024 + 1) * 1024
    vram = (KRUNKIT_ADDRESS_LIMIT_MIB - rounded_mib) * MIB
    if host_memory_gb is not None:
        _positive(host_memory_gb, "host_memory_gb")
        vram = min(vram, host_memory_gb * GIB)
    return vram


def krunkit_vm_gpu_memory_bytes(
    vm_memory_gb: int,
    host_memory_gb: int | None = None,
    *,
    host_wired_limit_mb: int | None = None,
) -> int:
    """Bytes the GPU can hold for a model inside a krunkit/libkrun Venus VM node.

    Inside the VM, GPU buffers are host (Metal) allocations mapped into the guest through the
    virtio-gpu VRAM window, and krunkit carves RAM and VRAM out of one 62 GiB guest address
    space (:func:`krunkit_vram_bytes`). So the GPU budget is that window: it shrinks as the VM
    gets more RAM, and it is never above ~60 GiB whatever the VM size (containers/krunkit
    ``src/context.rs``@02d4161f; the exact usable share is not verified on hardware) [derived].
    With the host's memory given, the host's own Metal cap (:func:`usable_unified_memory_bytes`)
    also applies.

    Args:
        vm_memory_gb: guest RAM in GiB (krunkit ``--memory`` / 1024), 1 to 60.
        host_memory_gb: the Mac's unified memory, when known.
        host_wired_limit_mb: the host's ``iogpu.wired_limit_mb``, when raised.
    """
    _positive(vm_memory_gb, "vm_memory_gb")
    vram = krunkit_vram_bytes(vm_memory_gb * 1024, host_memory_gb)
    if host_memory_gb is not None:
        host_cap = usable_unified_memory_bytes(host_memory_gb, wired_limit_mb=host_wired_limit_mb)
        vram = min(vram, host_cap)
    return vram


# --------------------------------------------------------------------------- in-cluster Vulkan

LLAMA_SERVER_ALL_LAYERS = "999"
"""``-ngl`` value that offloads every layer (any model has fewer)."""

DEFAULT_DRI_RESOURCE = "squat.ai/dri"
DEFAULT_RENDER_NODE = "/dev/dri/renderD128"

RAMALAMA_IMAGE = f"quay.io/ramalama/ramalama:{pin('ramalama').version}"
"""RamaLama's image (pin ``ramalama``): Vulkan llama.cpp built against the Venus-patched Mesa
from COPR ``slp/mesa-libkrun-vulkan`` (containers/ramalama
``container-images/scripts/build_llama.sh``@v0.24.0, which builds llama.cpp b10485); the
RamaLama client runs the image tagged with its own release (``ramalama/config.py``@v0.25.0)."""

LLAMA_CPP_SERVER_VULKAN_IMAGE = (
    f"ghcr.io/ggml-org/llama.cpp:{pin('llama-cpp-server-vulkan').version}"
)
"""The stock llama.cpp Vulkan server image at one build (pin ``llama-cpp-server-vulkan``; a
``server-vulkan-b<N>`` tag, never the floating ``server-vulkan``, so a render is reproducible;
ggml-org/llama.cpp ``docs/docker.md``). It may lack the Venus-patched Mesa (not verified on
hardware)."""

GENERIC_DEVICE_PLUGIN_IMAGE = f"squat/generic-device-plugin@{pin('generic-device-plugin').version}"
"""No source gen cites names an image for the generic device plugin, and upstream publishes it only
as ``latest`` and git-SHA tags, so gen pins the multi-arch index digest of ``latest`` as of
2026-08-14 (pin ``generic-device-plugin``; quoted by several independent public deployments, on
docker.io and ghcr.io; gen never pulls, so it is not verified here). Override it per pool with
``apple_vm.device_plugin_image`` (e.g. a mirror)."""

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _reject_literal_keys(args: Sequence[str], where: str) -> None:
    for arg in args:
        flag = arg.split("=", 1)[0]
        if flag == "--api-key":
            raise ProfileValidationError(
                f"{where}: a literal --api-key is not accepted; give a key file instead"
            )


def llama_server_vulkan_args(
    model_path: str,
    port: int,
    ctx: int,
    served_model_name: str,
    extra: Sequence[str] = (),
    *,
    api_key_file: str | None = None,
    parallel: int = 1,
) -> list[str]:
    """Arguments for ``llama-server`` (Vulkan build) in a pod on a krunkit VM node.

    ``ctx`` is the context of one request; llama-server splits ``-c`` evenly over its
    ``--parallel`` slots, so ``-c`` is ``parallel × ctx`` (see :mod:`gen.apple.fit`).

    The program name is not included: the llama.cpp images start ``llama-server`` as their
    entrypoint; prefix ``llama-server`` where the image has none. Flags (gen's choice, each
    documented in ggml-org/llama.cpp ``tools/server/README.md``): listen on all addresses,
    every layer on the GPU, Prometheus ``/metrics``, a fixed context, ``--alias`` as the served
    model name, and ``--api-key-file`` (a mounted Secret) when given.

    Raises:
        ProfileValidationError: a relative or non-GGUF model path, a bad port or context, or a
            literal ``--api-key`` in ``extra``.
    """
    if not model_path.startswith("/") or not model_path.endswith(".gguf"):
        raise ProfileValidationError(
            f"llama-server model must be an absolute path to a .gguf file, got {model_path!r}"
        )
    if not 1 <= port <= 65535:
        raise ProfileValidationError(f"port must be 1-65535, got {port}")
    _positive(ctx, "context length")
    _positive(parallel, "llama-server slots (--parallel)")
    if not served_model_name.strip():
        raise ProfileValidationError("served model name must not be empty")
    _reject_literal_keys(extra, "llama-server extra args")
    args = [
        "--host", "0.0.0.0",
        "--port", str(port),
        "-m", model_path,
        "--alias", served_model_name,
        "-ngl", LLAMA_SERVER_ALL_LAYERS,
        "-c", str(ctx * parallel),
        "--parallel", str(parallel),
        "--metrics",
    ]  # fmt: skip
    if api_key_file is not None:
        args += ["--api-key-file", api_key_file]
    return args + list(extra)


def _split_resource(resource: str) -> tuple[str, str]:
    domain, sep, name = resource.partition("/")
    if (
        not sep
        or len(name) > 63
        or not _DNS_SUBDOMAIN.fullmatch(domain)
        or not _DNS_LABEL.fullmatch(name)
    ):
        raise ProfileValidationError(
            f"device resource must be <domain>/<name> (e.g. {DEFAULT_DRI_RESOURCE}), "
            f"got {resource!r}"
        )
    return domain, name


def generic_device_plugin_config(
    resource: str = DEFAULT_DRI_RESOURCE,
    sharing: int = 1,
    paths: Sequence[str] = (DEFAULT_RENDER_NODE,),
) -> dict[str, object]:
    """One ``--device`` entry of squat's generic device plugin, as data.

    The plugin advertises ``<--domain>/<name>``; ``count`` lets the device group be allocated
    to that many containers at once (1 = exclusive). By default only the Venus render node is
    exposed (the compute path needs no ``card*`` node) [derived]; the minikube/krunkit
    playground exposes the whole ``/dev/dri`` directory instead.

    Raises:
        ProfileValidationError: a malformed resource name, ``sharing`` < 1, or no paths.
    """
    _, name = _split_resource(resource)
    _positive(sharing, "device sharing count")
    if not paths or not all(p.startswith("/dev/") for p in paths):
        raise ProfileValidationError(f"device paths must be under /dev/, got {list(paths)!r}")
    return {"name": name, "groups": [{"count": sharing, "paths": [{"path": p} for p in paths]}]}


def generic_device_plugin_args(
    resource: str = DEFAULT_DRI_RESOURCE,
    sharing: int = 1,
    paths: Sequence[str] = (DEFAULT_RENDER_NODE,),
) -> list[str]:
    """Container args for the generic device plugin: ``--domain`` and one ``--device`` (JSON)."""
    domain, _ = _split_resource(resource)
    config = generic_device_plugin_config(resource, sharing, paths)
    return ["--domain", domain, "--device", json.dumps(config, sort_keys=True)]
