"""Tests for gen.apple.chips: the chip catalog, memory budgets and the in-cluster Vulkan helpers."""

from __future__ import annotations

import json

import pytest

from gen.apple.chips import (
    APPLE_GPU_BACKEND,
    DEFAULT_DRI_RESOURCE,
    GENERIC_DEVICE_PLUGIN_IMAGE,
    GIB,
    KRUNKIT_MAX_VM_MEMORY_MIB,
    LLAMA_CPP_SERVER_VULKAN_IMAGE,
    MIB,
    RAMALAMA_IMAGE,
    apple_chips,
    generic_device_plugin_args,
    generic_device_plugin_config,
    krunkit_vm_gpu_memory_bytes,
    krunkit_vram_bytes,
    llama_server_vulkan_args,
    lookup_chip,
    macos_gpu_fraction,
    usable_unified_memory_bytes,
)
from gen.errors import CatalogLookupError, ProfileValidationError

# A 70B-parameter model at 8 bits per weight: ~70 GB of weights plus runtime overhead.
LLAMA_70B_Q8_BYTES = 75 * 10**9


# --------------------------------------------------------------------------- catalog


def test_catalog_covers_m1_to_m4_families() -> None:
    """Every M1–M4 family has base, Pro and Max chips; Ultra exists for M1, M2 and M3 only."""
    ids = {c.id for c in apple_chips()}
    for family in ("m1", "m2", "m3", "m4"):
        assert {family, f"{family}-pro", f"{family}-max"} <= ids
    assert {"m1-ultra", "m2-ultra", "m3-ultra"} <= ids
    assert "m4-ultra" not in ids


def test_catalog_rows_are_consistent() -> None:
    """Ids are unique, options ascend, and the union fields match the variants."""
    chips = apple_chips()
    assert len({c.id for c in chips}) == len(chips)
    for chip in chips:
        assert chip.id == chip.name.lower().removeprefix("apple ").replace(" ", "-")
        assert chip.tier in ("base", "pro", "max", "ultra")
        assert list(chip.gpu_cores) == sorted(chip.gpu_cores)
        assert list(chip.memory_gb_options) == sorted(set(chip.memory_gb_options))
        assert set(chip.memory_gb_options) == {
            m for v in chip.variants for m in v.memory_gb_options
        }
        assert chip.memory_bandwidth_gbs == chip.variants[-1].memory_bandwidth_gbs


def test_catalog_is_loaded_once() -> None:
    """Repeated calls return the very same cached tuple."""
    assert apple_chips() is apple_chips()


def test_lookup_by_id_and_name_any_case() -> None:
    """A chip is found by id or marketing name, whatever the case and separators."""
    chip = lookup_chip("m2-ultra")
    assert chip.name == "Apple M2 Ultra"
    assert chip.family == "M2"
    assert chip.tier == "ultra"
    for spelling in ("Apple M2 Ultra", "APPLE M2 ULTRA", "M2 Ultra", "m2_ultra", " m2ultra "):
        assert lookup_chip(spelling) is chip


def test_m2_ultra_numbers() -> None:
    """The M2 Ultra has 60- or 76-core GPUs, 64/128/192 GB and 800 GB/s."""
    chip = lookup_chip("m2-ultra")
    assert chip.gpu_cores == (60, 76)
    assert chip.memory_gb_options == (64, 128, 192)
    assert chip.memory_bandwidth_gbs == 800


def test_binned_max_chips_differ_by_variant() -> None:
    """The cut-down M3 Max and M4 Max have less bandwidth and other memory sizes."""
    m3max = lookup_chip("M3 Max")
    assert m3max.variant(30).memory_bandwidth_gbs == 300
    assert m3max.variant(40).memory_bandwidth_gbs == 400
    assert m3max.supports(gpu_cores=30, memory_gb=96)
    assert not m3max.supports(gpu_cores=30, memory_gb=128)
    assert lookup_chip("m4-max").variant(32).memory_gb_options == (36,)
    assert lookup_chip("m4-max").memory_bandwidth_gbs == 546


def test_unknown_chip_names_nearest() -> None:
    """A misspelt chip raises CatalogLookupError naming the closest ids."""
    with pytest.raises(CatalogLookupError, match=r"unknown Apple chip 'm2 ulta'.*m2-ultra"):
        lookup_chip("m2 ulta")


def test_mps_is_not_an_apple_chip() -> None:
    """'mps' is ambiguous (NVIDIA MPS); the Apple backend is called apple-metal."""
    assert APPLE_GPU_BACKEND == "apple-metal"
    with pytest.raises(CatalogLookupError, match="known: m1, "):
        lookup_chip("mps")


def test_unknown_gpu_variant() -> None:
    """Asking for a GPU core count a chip never had raises CatalogLookupError."""
    with pytest.raises(CatalogLookupError, match="no 12-core GPU variant"):
        lookup_chip("m1").variant(12)


# --------------------------------------------------------------------------- memory


def test_macos_fraction_two_thirds_then_three_quarters() -> None:
    """Metal may wire 2/3 of RAM up to 32 GB and 3/4 above (36 GB: 27 GiB)."""
    assert macos_gpu_fraction(16) == macos_gpu_fraction(32) == pytest.approx(2 / 3)
    assert macos_gpu_fraction(36) == macos_gpu_fraction(192) == pytest.approx(3 / 4)
    assert usable_unified_memory_bytes(36) == 27 * GIB


def test_usable_memory_matches_observed_working_set() -> None:
    """16 GB → 10922.67 MiB and 32 GB → 21845.34 MiB (whole 16 KiB pages); 64 GB → 48 GiB."""
    assert f"{usable_unified_memory_bytes(16) / MIB:.2f}" == "10922.67"
    assert f"{usable_unified_memory_bytes(32) / MIB:.2f}" == "21845.34"
    assert usable_unified_memory_bytes(32) % (16 * 1024) == 0
    assert usable_unified_memory_bytes(64) == 48 * GIB


def test_70b_q8_fits_a_192gb_ultra_host() -> None:
    """A 70B model at 8 bits (~75 GB) fits the default GPU budget of a 192 GB M2 Ultra."""
    budget = usable_unified_memory_bytes(192)
    assert budget == 144 * GIB
    assert budget > LLAMA_70B_Q8_BYTES


def test_70b_q8_does_not_fit_a_64gb_host() -> None:
    """The same model does not fit the 48 GiB a 64 GB Mac gives its GPU by default."""
    assert usable_unified_memory_bytes(64) < LLAMA_70B_Q8_BYTES


def test_wired_limit_override_is_used_and_capped() -> None:
    """A raised iogpu.wired_limit_mb replaces the rule, but never exceeds the RAM."""
    assert usable_unified_memory_bytes(64, wired_limit_mb=58 * 1024) == 58 * GIB
    assert usable_unified_memory_bytes(64, wired_limit_mb=10**6) == 64 * GIB
    assert usable_unified_memory_bytes(64, wired_limit_mb=0) == 48 * GIB


def test_usable_memory_rejects_nonsense() -> None:
    """Zero or negative memory sizes are profile errors."""
    with pytest.raises(ProfileValidationError, match="memory_gb must be a positive integer"):
        usable_unified_memory_bytes(0)


def test_krunkit_vram_follows_krunkit_arithmetic() -> None:
    """VRAM = 63488 MiB minus RAM rounded to the next GiB plus one GiB, capped by host RAM."""
    assert krunkit_vram_bytes(16384) == (63488 - 17408) * MIB
    assert krunkit_vram_bytes(16000) == (63488 - 16384) * MIB
    assert krunkit_vram_bytes(KRUNKIT_MAX_VM_MEMORY_MIB) == 1 * GIB
    assert krunkit_vram_bytes(4096, host_memory_gb=32) == 32 * GIB


def test_krunkit_rejects_more_ram_than_its_limit() -> None:
    """krunkit refuses VMs with more than 61440 MiB of RAM, and so does gen."""
    with pytest.raises(ProfileValidationError, match="exceeds krunkit's limit of 61440 MiB"):
        krunkit_vm_gpu_memory_bytes(61)


def test_70b_q8_never_fits_a_krunkit_vm() -> None:
    """No krunkit VM size (1–60 GiB RAM) gives the GPU room for a 75 GB model."""
    budgets = [krunkit_vm_gpu_memory_bytes(gb, host_memory_gb=192) for gb in range(1, 61)]
    assert max(budgets) == 60 * GIB
    assert max(budgets) < LLAMA_70B_Q8_BYTES
    assert krunkit_vm_gpu_memory_bytes(60, host_memory_gb=192) == 1 * GIB


def test_krunkit_budget_shrinks_as_vm_ram_grows() -> None:
    """RAM and VRAM share one address space: more RAM means less GPU memory."""
    budgets = [krunkit_vm_gpu_memory_bytes(gb) for gb in range(1, 61)]
    assert budgets == sorted(budgets, reverse=True)
    assert krunkit_vm_gpu_memory_bytes(16) == 45 * GIB


def test_krunkit_budget_respects_host_metal_cap() -> None:
    """On a 32 GB Mac the host's 2/3 Metal cap is tighter than krunkit's window."""
    assert krunkit_vm_gpu_memory_bytes(8, host_memory_gb=32) == usable_unified_memory_bytes(32)


# --------------------------------------------------------------------------- Vulkan path


def test_llama_server_vulkan_args() -> None:
    """All layers on the GPU, metrics, all addresses, the port, context and alias."""
    args = llama_server_vulkan_args("/models/qwen.gguf", 8080, 8192, "qwen")
    assert args == [
        "--host", "0.0.0.0",
        "--port", "8080",
        "-m", "/models/qwen.gguf",
        "--alias", "qwen",
        "-ngl", "999",
        "-c", "8192",
        "--parallel", "1",
        "--metrics",
    ]  # fmt: skip


def test_llama_server_vulkan_args_split_context_over_slots() -> None:
    """Four slots of 8192 tokens: -c 32768 --parallel 4 (llama-server gives each n_ctx / 4)."""
    args = llama_server_vulkan_args("/models/qwen.gguf", 8080, 8192, "qwen", parallel=4)
    assert args[args.index("-c") + 1] == "32768"
    assert args[args.index("--parallel") + 1] == "4"
    with pytest.raises(ProfileValidationError, match="slots"):
        llama_server_vulkan_args("/models/qwen.gguf", 8080, 8192, "qwen", parallel=0)


def test_llama_server_vulkan_args_key_file_and_extra() -> None:
    """A key file becomes --api-key-file; extra flags come last."""
    args = llama_server_vulkan_args(
        "/m/a.gguf", 8080, 4096, "a", ["--jinja"], api_key_file="/var/run/key"
    )
    assert args[-3:] == ["--api-key-file", "/var/run/key", "--jinja"]


def test_llama_server_vulkan_args_reject_literal_key() -> None:
    """A literal --api-key in extra args is refused."""
    with pytest.raises(ProfileValidationError, match="literal --api-key"):
        llama_server_vulkan_args("/m/a.gguf", 8080, 4096, "a", ["--api-key=hunter2"])


def test_llama_server_vulkan_args_reject_bad_model_path() -> None:
    """The model must be an absolute .gguf path."""
    with pytest.raises(ProfileValidationError, match=r"absolute path to a \.gguf"):
        llama_server_vulkan_args("Qwen/Qwen3-8B", 8080, 4096, "a")


def test_generic_device_plugin_config_default() -> None:
    """The default advertises squat.ai/dri: the Venus render node, one container at a time."""
    assert DEFAULT_DRI_RESOURCE == "squat.ai/dri"
    assert generic_device_plugin_config() == {
        "name": "dri",
        "groups": [{"count": 1, "paths": [{"path": "/dev/dri/renderD128"}]}],
    }


def test_generic_device_plugin_sharing_and_args() -> None:
    """Sharing sets the group count; args carry the domain and the device as JSON."""
    args = generic_device_plugin_args("example.com/gpu", sharing=4)
    assert args[:3] == ["--domain", "example.com", "--device"]
    assert json.loads(args[3]) == {
        "name": "gpu",
        "groups": [{"count": 4, "paths": [{"path": "/dev/dri/renderD128"}]}],
    }


@pytest.mark.parametrize("resource", ["dri", "squat.ai/", "Squat.AI/dri", "a/b/c"])
def test_generic_device_plugin_rejects_bad_resource(resource: str) -> None:
    """Resource names must be <dns-domain>/<dns-label>."""
    with pytest.raises(ProfileValidationError, match="must be <domain>/<name>"):
        generic_device_plugin_config(resource)


def test_generic_device_plugin_rejects_zero_sharing() -> None:
    """A sharing count below one is refused."""
    with pytest.raises(ProfileValidationError, match="sharing count"):
        generic_device_plugin_config(sharing=0)


def test_images_are_pinned() -> None:
    """Every image constant names a registry path and a tag or a digest, never ``latest``."""
    for image in (RAMALAMA_IMAGE, LLAMA_CPP_SERVER_VULKAN_IMAGE, GENERIC_DEVICE_PLUGIN_IMAGE):
        name, _, digest = image.partition("@sha256:")
        if digest:
            assert len(digest) == 64 and int(digest, 16) >= 0
        else:
            name, _, tag = image.rpartition(":")
            assert tag and tag != "latest"
        assert "/" in name
