"""gen.apple.fit: llama.cpp's buffers on an Apple GPU, term by term, and the slot split."""

from __future__ import annotations

import pytest

from gen.apple.fit import (
    KV_ELEMENT_BYTES,
    RUNTIME_BYTES,
    AppleGPU,
    apple_fit,
    compute_bytes,
    kv_bytes,
    kv_tokens,
)
from gen.serving.model_catalog import LLMSpec

GIB = 1 << 30

LLAMA_8B_Q8 = LLMSpec(id="llama-8b-q8", parameters=8030261248, layers=32, hidden_size=4096,
                      attention_heads=32, kv_heads=8, head_dim=128, max_context=131072,
                      weight_dtype="int8", intermediate_size=14336, vocab_size=128256)
VM = AppleGPU("Venus (24 GB VM)", 37 * GIB, "venus", "krunkit window")
MAC = AppleGPU("Apple M4 Max (36 GB)", 27 * GIB, "metal", "3/4 of 36 GB")


def test_kv_bytes_per_token_is_llama_cpp_f16() -> None:
    """2 (K,V) × 8 KV heads × 128 × 2 bytes × 32 layers = 128 KiB a token (Llama 3.1 8B)."""
    assert KV_ELEMENT_BYTES == 2
    assert kv_bytes(LLAMA_8B_Q8, 1) == 2 * 8 * 128 * 2 * 32 == 131072
    assert kv_bytes(LLAMA_8B_Q8, 32768) == 4 * GIB


def test_sliding_window_layers_hold_at_most_the_window() -> None:
    """Sliding layers keep slots × window + ubatch tokens, full layers all of n_ctx."""
    swa = LLMSpec(id="swa", parameters=10**9, layers=4, hidden_size=1024, attention_heads=8,
                  kv_heads=2, head_dim=128, max_context=131072, sliding_window=4096,
                  sliding_window_layers=3)
    per_layer_token = 2 * 2 * 128 * 2
    assert kv_bytes(swa, 65536, slots=2) == per_layer_token * (65536 + 3 * (2 * 4096 + 512))
    assert kv_bytes(swa, 1000) == per_layer_token * 4 * 1000  # shorter than the window


def test_terms_add_up_and_name_the_llama_cpp_log_lines() -> None:
    """budget − weights − kv − compute − runtime = headroom; each term names its log line."""
    report = apple_fit(LLAMA_8B_Q8, VM, max_model_len=32768, slots=4)
    names = [t.name for t in report.terms]
    assert names == ["budget", "weights", "kv", "compute", "runtime", "headroom"]
    assert report.term("budget") == int(37 * GIB * 0.90)
    assert report.term("weights") == LLAMA_8B_Q8.weight_bytes
    assert report.term("kv") == 4 * 4 * GIB
    assert report.term("compute") == compute_bytes(LLAMA_8B_Q8)
    assert report.term("runtime") == RUNTIME_BYTES
    assert report.headroom == report.term("budget") - sum(
        report.term(n) for n in ("weights", "kv", "compute", "runtime"))
    assert report.fits and report.n_ctx == 131072
    text = report.format()
    for line in ("Vulkan0 model buffer size", "Vulkan0 KV buffer size",
                 "Vulkan0 compute buffer size", "4 slot(s)", "headroom"):
        assert line in text
    assert "Metal KV buffer size" in apple_fit(LLAMA_8B_Q8, MAC, max_model_len=4096).format()


def test_vllm_engines_budget_one_sequence_without_llama_cpp_log_names() -> None:
    """vllm-mlx / vllm-metal: one full sequence, and no llama.cpp log line is claimed."""
    report = apple_fit(LLAMA_8B_Q8, MAC, engine="vllm-mlx", max_model_len=8192)
    assert report.slots == 1 and report.term("kv") == kv_bytes(LLAMA_8B_Q8, 8192)
    assert "llama_kv_cache" not in report.format()


def test_slots_multiply_the_kv_cache_and_can_break_the_fit() -> None:
    """8 slots of 32K need 32 GiB of KV: more than the 24 GB VM's window leaves."""
    one = apple_fit(LLAMA_8B_Q8, VM, max_model_len=32768, slots=1)
    eight = apple_fit(LLAMA_8B_Q8, VM, max_model_len=32768, slots=8)
    assert eight.term("kv") == 8 * one.term("kv")
    assert one.fits and not eight.fits
    (error,) = eight.errors
    assert "8 slot(s) × 32768 tokens" in error and f"{eight.max_slots_fit} slot(s)" in error


def test_largest_context_and_slots_are_the_fit_boundary() -> None:
    """max_model_len_fit fits and one more token does not; likewise max_slots_fit."""
    for slots in (2, 4, 6):
        report = apple_fit(LLAMA_8B_Q8, VM, max_model_len=32768, slots=slots)
        best = report.max_model_len_fit
        assert 0 < best < LLAMA_8B_Q8.max_context
        assert apple_fit(LLAMA_8B_Q8, VM, max_model_len=best, slots=slots).fits
        assert not apple_fit(LLAMA_8B_Q8, VM, max_model_len=best + 1, slots=slots).fits
    report = apple_fit(LLAMA_8B_Q8, VM, max_model_len=32768)
    n = report.max_slots_fit
    assert apple_fit(LLAMA_8B_Q8, VM, max_model_len=32768, slots=n).fits
    assert not apple_fit(LLAMA_8B_Q8, VM, max_model_len=32768, slots=n + 1).fits


def test_more_slots_never_lengthen_the_context_and_more_memory_never_hurts() -> None:
    """Monotone in slots and in the cap."""
    fits = [apple_fit(LLAMA_8B_Q8, VM, slots=s).max_model_len_fit for s in range(1, 9)]
    assert fits == sorted(fits, reverse=True)
    caps = [apple_fit(LLAMA_8B_Q8, AppleGPU("x", g * GIB, "metal", "x"),
                      max_model_len=8192).headroom for g in (8, 16, 32, 64)]
    assert caps == sorted(caps)


def test_weights_beyond_the_budget() -> None:
    """A 70B model at 8 bits on a 36 GB Mac: the weights alone do not fit; nothing does."""
    big = LLMSpec(id="70b", parameters=70553706496, layers=80, hidden_size=8192,
                  attention_heads=64, kv_heads=8, head_dim=128, max_context=131072,
                  weight_dtype="int8")
    report = apple_fit(big, MAC, max_model_len=4096)
    assert not report.fits and "exceed the budget" in report.errors[0]
    assert report.max_model_len_fit == 0 and report.max_slots_fit == 0


@pytest.mark.parametrize("length", [0, 131073])
def test_context_outside_the_model(length: int) -> None:
    """A context of 0 or beyond the model's maximum is an error."""
    assert not apple_fit(LLAMA_8B_Q8, MAC, max_model_len=length).fits


def test_json_shape() -> None:
    """The documented keys, schema version 1, every term with bytes and source."""
    data = apple_fit(LLAMA_8B_Q8, VM, max_model_len=32768, slots=4).to_json()
    assert data["schema_version"] == 1
    assert set(data) == {"schema_version", "fits", "errors", "model", "engine", "device",
                         "settings", "terms", "max_model_len_fit", "max_slots_fit"}
    assert data["settings"] == {"max_model_len": 32768, "slots": 4, "n_ctx": 131072,
                                "gpu_memory_utilization": 0.9}
    assert data["device"]["kind"] == "venus" and data["device"]["cap_bytes"] == 37 * GIB
    assert all(set(t) == {"name", "bytes", "source"} for t in data["terms"])


def test_llama_cpp_pads_each_slot_to_256_tokens() -> None:
    """-c 3 × 1000 --parallel 3: n_ctx 3000 → 3072, each slot pad256(1024) = 1024 → 3072."""
    assert kv_tokens(1000, 3) == 3072
    assert kv_tokens(32768, 4) == 131072  # already aligned
    assert kv_tokens(1000, 3, engine="vllm-mlx") == 1000
    report = apple_fit(LLAMA_8B_Q8, VM, max_model_len=1000, slots=3)
    assert report.n_ctx == 3000  # the -c flag gen renders
    assert report.term("kv") == kv_bytes(LLAMA_8B_Q8, 3072)
