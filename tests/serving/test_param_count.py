"""Tests for gen.serving.param_count: exact parameter counts of dense, MoE and MLA layouts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gen.serving.model_catalog import LLMSpec, model_catalog
from gen.serving.param_count import (
    COUNTED_ARCHITECTURES,
    count_active_parameters,
    count_parameters,
    unquantized_parameters,
)


@pytest.mark.parametrize("spec", model_catalog().all(), ids=lambda s: s.id)
def test_every_count_follows_from_the_architecture(spec: LLMSpec) -> None:
    """Every entry (dense, MoE, MLA, quantized) has the exact count its numbers give."""
    assert spec.architecture in COUNTED_ARCHITECTURES
    assert count_parameters(spec) == spec.parameters


def test_mla_layer_is_counted_projection_by_projection() -> None:
    """One DeepSeek-V3 layer: MLA q/kv low-rank projections and norms, then 256+1 experts."""
    spec = model_catalog().lookup("deepseek-ai/DeepSeek-V3")
    h = 7168
    attention = (h * 1536 + 1536 + 1536 * 128 * 192  # q_a_proj, q_a_layernorm, q_b_proj
                 + h * (512 + 64) + 512  # kv_a_proj_with_mqa, kv_a_layernorm
                 + 512 * 128 * (128 + 128)  # kv_b_proj
                 + 128 * 128 * h)  # o_proj
    moe = 257 * 3 * h * 2048 + 256 * h + 256  # experts, router, e_score_correction_bias
    dense = 3 * h * 18432
    total = 61 * (attention + 2 * h) + 3 * dense + 58 * moe + 2 * 129280 * h + h
    assert attention == 187_107_328
    assert spec.parameters == total == 671_026_419_200


def test_without_a_known_layout_nothing_is_counted() -> None:
    """An architecture gen does not know has no count (rather than a wrong one)."""
    spec = replace(model_catalog().lookup("Qwen/Qwen3-8B"), architecture="NewForCausalLM")
    assert count_parameters(spec) is None
    assert count_active_parameters(spec) is None
    assert unquantized_parameters(spec) is None


def test_quantized_checkpoints_keep_embeddings_norms_and_routers() -> None:
    """FP8/INT8/GPTQ entries keep exactly the non-linear parameters at 16 bits."""
    fp8 = model_catalog().lookup("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic")
    assert fp8.unquantized_parameters == unquantized_parameters(fp8)
    assert fp8.unquantized_parameters == 2 * 128256 * 8192 + 80 * 2 * 8192 + 8192
    moe = model_catalog().lookup("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8")
    routers = 94 * 128 * 4096
    assert moe.unquantized_parameters == 2 * 151936 * 4096 + routers + 94 * (2 * 4096 + 256) + 4096
