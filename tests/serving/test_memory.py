"""Tests for gen.serving.memory: vLLM's memory terms, one function at a time."""

from __future__ import annotations

import pytest

from gen.serving.memory import (
    ASSUMED_COMPUTE_CAPABILITY,
    GIB,
    MXFP4_PADDING,
    effective_model,
    forward_bytes,
    kv_bytes_per_token,
    moe_padding_bytes,
    mxfp4_kernel_for,
    quantization_errors,
    sampler_bytes,
    weights_per_gpu,
)
from gen.serving.model_catalog import model_catalog

OSS_120B = model_catalog().lookup("openai/gpt-oss-120b")
LLAMA_8B = model_catalog().lookup("meta-llama/Llama-3.1-8B-Instruct")


@pytest.mark.parametrize(("kernel", "tp", "logged_gib"), [
    ("marlin", 1, 65.9651),  # vllm-project/vllm#23278, H100, v0.10.1
    ("triton", 1, 64.38),    # vllm-project/vllm#33155, H100, v0.14.1
    ("marlin", 4, 17.2217),  # dennislee22/vLLM-benchmarking, 4 × A100, v0.10.1.1
])
def test_padded_gpt_oss_weights_match_the_logs(kernel: str, tp: int, logged_gib: float) -> None:
    """Checkpoint ÷ TP plus the kernel's padding is what vLLM logs as 'Model loading took'."""
    total = (weights_per_gpu(OSS_120B, tensor_parallel=tp, pipeline_parallel=1)
             + moe_padding_bytes(OSS_120B, tensor_parallel=tp, kernel=kernel))
    assert total / GIB == pytest.approx(logged_gib, rel=0.01)


def test_kernel_choice_follows_the_compute_capability() -> None:
    """Triton on Hopper, FlashInfer on Blackwell, Marlin on older GPUs."""
    assert mxfp4_kernel_for((9, 0)) == "triton"
    assert mxfp4_kernel_for((10, 0)) == "flashinfer"
    assert mxfp4_kernel_for((8, 0)) == "marlin"
    assert mxfp4_kernel_for(ASSUMED_COMPUTE_CAPABILITY) == "triton"  # unknown: Hopper's
    assert set(MXFP4_PADDING) == {"marlin", "triton", "flashinfer"}


def test_only_mxfp4_moe_is_padded() -> None:
    """A bf16 dense model gets no kernel padding."""
    assert moe_padding_bytes(LLAMA_8B, tensor_parallel=1, kernel="marlin") == 0


def test_sampler_and_forward_peaks() -> None:
    """The sampler scales with requests × vocabulary, the forward pass with batched tokens."""
    assert sampler_bytes(LLAMA_8B, 1024, 9.75) == int(9.75 * 1024 * 128256 * 4)
    assert sampler_bytes(LLAMA_8B, 1024, 3.0) < sampler_bytes(LLAMA_8B, 1024, 9.75)
    def forward(tp: int, tokens: int) -> int:
        return forward_bytes(LLAMA_8B, tensor_parallel=tp, batched_tokens=tokens)

    assert forward(1, 8192) == 2 * forward(1, 4096)
    assert forward(2, 8192) < forward(1, 8192)


def test_mla_per_token_bytes() -> None:
    """An MLA model caches (kv_lora_rank + rope dim) bytes per layer and token, TP or not."""
    mla = model_catalog().lookup("deepseek-ai/DeepSeek-V3")
    # 61 layers × (kv_lora_rank 512 + qk_rope_head_dim 64) × 2 bytes (bf16, the auto dtype)
    assert kv_bytes_per_token(mla) == 61 * 576 * 2
    assert kv_bytes_per_token(mla, tensor_parallel=8) == kv_bytes_per_token(mla)


def test_online_fp8_and_refused_methods() -> None:
    """fp8 quantizes a bf16 checkpoint online; awq needs an AWQ checkpoint."""
    assert quantization_errors(LLAMA_8B, None) == []
    assert quantization_errors(LLAMA_8B, "fp8") == []
    assert quantization_errors(LLAMA_8B, "awq")
    assert quantization_errors(LLAMA_8B, "nope")
    fp8 = effective_model(LLAMA_8B, "fp8")
    assert fp8.weight_dtype == "fp8" and fp8.weight_bytes < LLAMA_8B.weight_bytes
    assert effective_model(OSS_120B, "fp8") is OSS_120B  # already quantized: unchanged
