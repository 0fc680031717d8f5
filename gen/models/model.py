"""``kind: Model`` — architecture numbers for a model the built-in catalog lacks.

A profile gives the numbers itself, or points at the model's Hugging Face ``config.json`` in
the fleet repository (``config: models/qwen3/config.json``, relative to the profile file) and
gives only what it wants to override. ``gen model import PATH`` writes such a profile from a
``config.json``, a model folder or the Hugging Face cache.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from gen.models._base import ProfileKind

_LIMITS = {
    "parameters": 10**15, "active_parameters": 10**15, "hidden_size": 10**6,
    "attention_heads": 10**5, "kv_heads": 10**5, "max_context": 10**9, "experts": 10**5,
    "experts_per_token": 10**5, "intermediate_size": 10**7, "vocab_size": 10**8,
    "unquantized_parameters": 10**15, "quant_group_size": 10**6, "sliding_window": 10**9,
    "checkpoint_bytes": 10**16, "moe_intermediate_size": 10**7, "shared_experts": 10**5,
    "kv_lora_rank": 10**6, "qk_rope_head_dim": 10**5, "qk_nope_head_dim": 10**5,
    "v_head_dim": 10**5, "q_lora_rank": 10**6, "moe_layer_step": 1000,
    "dense_intermediate_size": 10**7, "vision_parameters": 10**15,
}
"""Upper bounds far beyond any real model, so that sizes stay within float arithmetic."""

REQUIRED_WITHOUT_CONFIG = ("parameters", "layers", "hidden_size", "attention_heads", "kv_heads",
                           "head_dim", "max_context")
"""The numbers a profile without ``config`` must give."""


class ModelProfile(ProfileKind):
    """A model's architecture, for memory-fit checks."""

    kind: Literal["Model"] = Field(description="Document kind.")
    name: str = Field(
        min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._\-/]*(?!\n)$",
        description="Hugging Face repo id services use in 'model'.",
    )
    config: str | None = Field(
        None, min_length=1, max_length=500, pattern=r"^[^\x00-\x1f\\]+(?!\n)$",
        description="Path of the model's Hugging Face config.json, relative to this file and "
        "inside the profiles folder; the numbers come from it and the fields given here "
        "override them.",
    )
    parameters: int | None = Field(None, gt=0, description="Total parameters.")
    active_parameters: int | None = Field(None, gt=0, description="Active parameters (MoE).")
    layers: int | None = Field(None, gt=0, le=1000, description="Transformer layers.")
    hidden_size: int | None = Field(None, gt=0, description="Hidden size.")
    attention_heads: int | None = Field(None, gt=0, description="Attention (query) heads.")
    kv_heads: int | None = Field(None, gt=0, description="Key/value heads (GQA).")
    head_dim: int | None = Field(None, gt=0, le=1024, description="Dimension per head.")
    max_context: int | None = Field(None, gt=0,
                                    description="Longest context the model supports.")
    weight_dtype: Literal["bf16", "fp16", "fp32", "fp8", "int8", "int4", "mxfp4"] = Field(
        "bf16", description="Precision of the stored weights."
    )
    quantization: Literal["awq", "gptq", "fp8", "mxfp4", "compressed-tensors"] | None = Field(
        None, description="Quantization method of the checkpoint (quant_method), if any."
    )
    experts: int | None = Field(None, gt=0, description="MoE routed experts per layer.")
    experts_per_token: int | None = Field(None, gt=0, description="MoE experts per token.")
    license_gated: bool = Field(False, description="Needs a Hugging Face token to download.")
    intermediate_size: int | None = Field(
        None, gt=0, description="Dense MLP width (a MoE's expert width when it has no "
        "moe_intermediate_size).")
    vocab_size: int | None = Field(None, gt=0, description="Vocabulary size.")
    tie_word_embeddings: bool = Field(False, description="lm_head shares the embeddings.")
    compute_dtype: Literal["bf16", "fp16", "fp32"] = Field(
        "bf16", description="Activation dtype (the KV cache element for kv_cache_dtype auto).")
    unquantized_parameters: int = Field(
        0, ge=0, description="Parameters a quantized checkpoint keeps at compute_dtype.")
    quant_group_size: int | None = Field(None, gt=0, description="AWQ/GPTQ group size.")
    sliding_window: int | None = Field(None, gt=0,
                                       description="Sliding-window size in tokens.")
    sliding_window_layers: int = Field(0, ge=0,
                                       description="Layers that use the sliding window.")
    architecture: str = Field("", max_length=200,
                              description="architectures[0] of the config (informational).")
    checkpoint_bytes: int | None = Field(None, gt=0,
                                         description="Size of the checkpoint on disk.")
    moe_intermediate_size: int | None = Field(None, gt=0,
                                              description="Each expert's MLP width (MoE).")
    shared_experts: int | None = Field(None, ge=0,
                                       description="Shared experts per MoE layer.")
    dense_layers: int | None = Field(None, ge=0,
                                     description="Leading layers with a dense MLP (MoE).")
    kv_lora_rank: int | None = Field(None, gt=0, description="MLA KV latent width.")
    qk_rope_head_dim: int | None = Field(None, gt=0,
                                         description="MLA rotary query/key head part.")
    qk_nope_head_dim: int | None = Field(None, gt=0,
                                         description="MLA non-rotary query/key head part.")
    v_head_dim: int | None = Field(None, gt=0, description="MLA value head width.")
    q_lora_rank: int | None = Field(None, gt=0, description="MLA query latent width.")
    moe_layer_step: int | None = Field(
        None, gt=0, description="Every how many layers one has experts (MoE; default 1).")
    dense_intermediate_size: int | None = Field(
        None, gt=0, description="MLP width of the dense layers between MoE layers.")
    vision_parameters: int = Field(
        0, ge=0, description="Vision encoder parameters (included in parameters).")

    @field_validator(*_LIMITS)
    @classmethod
    def _not_absurd(cls, value: int | None, info: ValidationInfo) -> int | None:
        # The memory arithmetic converts to float: 10**400 parameters would overflow it.
        limit = _LIMITS[info.field_name or ""]
        if value is not None and value > limit:
            raise ValueError(f"at most {limit:,} (no model comes close)")
        return value

    @model_validator(mode="after")
    def _heads(self) -> ModelProfile:
        if self.config is None:
            missing = [name for name in REQUIRED_WITHOUT_CONFIG if getattr(self, name) is None]
            if missing:
                raise ValueError(f"give {', '.join(missing)}, or a config (the model's "
                                 "config.json) to read them from")
        if self.attention_heads is not None and self.kv_heads is not None \
                and self.attention_heads % self.kv_heads:
            raise ValueError("attention_heads must be a multiple of kv_heads")
        if (self.experts is None) != (self.experts_per_token is None) and self.config is None:
            raise ValueError("give both experts and experts_per_token (MoE), or neither")
        if self.experts is not None and self.experts_per_token is not None \
                and self.experts_per_token > self.experts:
            raise ValueError("experts_per_token is more than experts")
        if self.active_parameters is not None and self.parameters is not None \
                and self.active_parameters > self.parameters:
            raise ValueError("active_parameters is more than parameters")
        return self
