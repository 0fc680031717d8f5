"""The exact parameter count of a model from its architecture numbers.

:func:`count_parameters` reproduces the tensor count of a Hugging Face checkpoint (what its
safetensors hold, less a multi-token-prediction module) for the layer layouts in
:data:`COUNTED_ARCHITECTURES`: dense GQA decoders, mixtures of experts (routed and shared
experts, routers, leading dense layers, interleaved MoE layers) and multi-head latent
attention, plus a vision-language model's recorded vision encoder. The catalog checks every
entry against it; ``gen model import`` uses it to count a model from its ``config.json``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gen.serving.model_catalog import LLMSpec

__all__ = [
    "COUNTED_ARCHITECTURES",
    "count_active_parameters",
    "count_parameters",
    "unquantized_parameters",
]


@dataclass(frozen=True)
class _Layout:
    """What a decoder architecture adds to the plain Llama layer (from its modelling code)."""

    qkv_bias: bool = False  # q/k/v projections carry a bias
    qk_norm: bool = False  # an RMSNorm of head_dim on each query and key head
    norms: int = 2  # RMSNorms per layer
    router_bias: bool = False  # a per-expert router bias (``e_score_correction_bias``)
    o_bias: bool = False  # o_proj carries a bias
    sinks: bool = False  # one attention-sink logit per head
    expert_bias: bool = False  # experts' gate/up and down projections carry biases


# Layer layouts by ``architectures[0]``. Sources: Hugging Face transformers' modelling code
# (src/transformers/models/<family>/modeling_<family>.py, v4.57.0): Qwen2 sets
# ``bias=True`` on q/k/v_proj; Qwen3 and Qwen3-MoE add ``q_norm``/``k_norm``; Gemma 2 has four
# norms per layer; DeepSeek-V3 (also Kimi K2's architecture) and GLM-4.5 (Glm4Moe) give the
# router an ``e_score_correction_bias`` of one value per routed expert, and Glm4Moe's q/k/v
# carry ``config.attention_bias`` and its q/k norms ``config.use_qk_norm`` (both true in the
# published GLM-4.5/4.6/4.7 configs; GLM-4.5-Air has no q/k norms); gpt-oss
# (modeling_gpt_oss.py) has biases on q/k/v/o, on the router and on every expert projection,
# and a learned sink per head.
_LAYOUTS: Mapping[str, _Layout] = {
    "LlamaForCausalLM": _Layout(),
    "MistralForCausalLM": _Layout(),
    "MixtralForCausalLM": _Layout(),
    "Phi3ForCausalLM": _Layout(),
    "Qwen2ForCausalLM": _Layout(qkv_bias=True),
    "Qwen2_5_VLForConditionalGeneration": _Layout(qkv_bias=True),
    "Qwen3ForCausalLM": _Layout(qk_norm=True),
    "Qwen3MoeForCausalLM": _Layout(qk_norm=True),
    "Gemma2ForCausalLM": _Layout(norms=4),
    "DeepseekV3ForCausalLM": _Layout(router_bias=True),
    "Glm4MoeForCausalLM": _Layout(qkv_bias=True, qk_norm=True, router_bias=True),
    "GptOssForCausalLM": _Layout(qkv_bias=True, o_bias=True, sinks=True, expert_bias=True,
                                 router_bias=True),
}
COUNTED_ARCHITECTURES: frozenset[str] = frozenset(_LAYOUTS)
"""Architectures whose exact parameter count :func:`count_parameters` reproduces."""


def _attention_parameters(spec: LLMSpec, layout: _Layout) -> tuple[int, int]:
    """(all parameters, those of the linear projections) of one layer's attention."""
    h, heads = spec.hidden_size, spec.attention_heads
    if spec.kv_lora_rank is not None:
        # MLA (DeepSeek-V3 modelling code): q_a_proj + q_a_layernorm + q_b_proj (or a direct
        # q_proj), kv_a_proj_with_mqa (latent + shared rope key) + kv_a_layernorm, kv_b_proj
        # (per-head nope key and value), o_proj.
        rope, nope = spec.qk_rope_head_dim or 0, spec.qk_nope_head_dim or 0
        v, rank = spec.v_head_dim or 0, spec.kv_lora_rank
        q_rank = spec.q_lora_rank
        q = h * q_rank + q_rank * heads * (nope + rope) if q_rank else h * heads * (nope + rope)
        linear = q + h * (rank + rope) + rank * heads * (nope + v) + heads * v * h
        return linear + (q_rank or 0) + rank, linear
    hd, kv_heads = spec.head_dim, spec.kv_heads
    linear = 2 * h * heads * hd + 2 * h * kv_heads * hd
    extra = (heads + 2 * kv_heads) * hd if layout.qkv_bias else 0
    extra += 2 * hd if layout.qk_norm else 0
    extra += h if layout.o_bias else 0
    extra += heads if layout.sinks else 0
    return linear + extra, linear


@dataclass(frozen=True)
class _Breakdown:
    total: int  # every parameter
    linear: int  # those of the decoder blocks' linear layers (what quantization packs)
    active: int  # those one token uses: only experts_per_token of the routed experts


def _breakdown(spec: LLMSpec, layout: _Layout) -> _Breakdown:
    h = spec.hidden_size
    attention, attention_linear = _attention_parameters(spec, layout)
    attention += layout.norms * h
    dense = 3 * h * (spec.dense_intermediate_size or spec.intermediate_size or 0)
    experts, shared = spec.experts or 0, spec.shared_experts or 0
    width = spec.expert_intermediate_size or 0
    expert = 3 * h * width
    bias = 2 * width + h if layout.expert_bias else 0
    router = experts * h + (experts if layout.router_bias else 0)
    leading, step = spec.dense_layers or 0, spec.moe_layer_step or 1
    moe_layers = 0
    if spec.is_moe:
        moe_layers = sum(1 for index in range(leading, spec.layers)
                         if (index - leading) % step == step - 1)
    dense_layers = spec.layers - moe_layers
    common = spec.layers * attention + dense_layers * dense + spec.embedding_parameters + h
    common += spec.vision_parameters
    routed_share = (spec.experts_per_token or 0) + shared
    return _Breakdown(
        total=common + moe_layers * ((experts + shared) * (expert + bias) + router),
        linear=spec.layers * attention_linear + dense_layers * dense
        + moe_layers * (experts + shared) * expert,
        active=common + moe_layers * (routed_share * (expert + bias) + router),
    )


def count_parameters(spec: LLMSpec) -> int | None:
    """Exact parameters of ``spec`` from its architecture numbers: embeddings (tied ones once),
    per layer the attention (GQA or MLA), norms and the MLP — dense, or routed plus shared
    experts and the router — the leading dense layers of a MoE, the final norm, and the vision
    encoder a vision-language model records. None when the layout is not in
    :data:`COUNTED_ARCHITECTURES` or the config lacks ``intermediate_size``/``vocab_size``.

    A multi-token-prediction module (DeepSeek's ``num_nextn_predict_layers``) is not counted:
    vLLM does not load it unless it serves as a speculative draft.
    """
    layout = _LAYOUTS.get(spec.architecture)
    if layout is None or spec.intermediate_size is None or spec.vocab_size is None:
        return None
    return _breakdown(spec, layout).total


def count_active_parameters(spec: LLMSpec) -> int | None:
    """Parameters one token uses — as :func:`count_parameters`, with only
    ``experts_per_token`` of the routed experts (and every shared one) — or None."""
    layout = _LAYOUTS.get(spec.architecture)
    if layout is None or spec.intermediate_size is None or spec.vocab_size is None:
        return None
    return _breakdown(spec, layout).active


def unquantized_parameters(spec: LLMSpec) -> int | None:
    """Parameters a quantized checkpoint keeps at the compute dtype when it quantizes exactly
    the linear layers of the decoder blocks — embeddings, lm_head, norms, routers, biases and
    the vision encoder stay — as the FP8, AWQ, GPTQ and llm-compressor (``ignore: [lm_head]``)
    checkpoints do. None for a layout :func:`count_parameters` does not know."""
    layout = _LAYOUTS.get(spec.architecture)
    if layout is None or spec.intermediate_size is None or spec.vocab_size is None:
        return None
    return spec.parameters - _breakdown(spec, layout).linear
