"""``kind: Model`` — architecture numbers for a model the built-in catalog lacks."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from gen.models._base import ProfileKind

_LIMITS = {
    "parameters": 10**15, "active_parameters": 10**15, "hidden_size": 10**6,
    "attention_heads": 10**5, "kv_heads": 10**5, "max_context": 10**9, "experts": 10**5,
    "experts_per_token": 10**5,
}
"""Upper bounds far beyond any real model, so that sizes stay within float arithmetic."""


class ModelProfile(ProfileKind):
    """A model's architecture, for memory-fit checks."""

    kind: Literal["Model"] = Field(description="Document kind.")
    name: str = Field(
        min_length=1, max_length=200, pattern=r"^[A-Za-z0-9][A-Za-z0-9._\-/]*(?!\n)$",
        description="Hugging Face repo id services use in 'model'.",
    )
    parameters: int = Field(gt=0, description="Total parameters.")
    active_parameters: int | None = Field(None, gt=0, description="Active parameters (MoE).")
    layers: int = Field(gt=0, le=1000, description="Transformer layers.")
    hidden_size: int = Field(gt=0, description="Hidden size.")
    attention_heads: int = Field(gt=0, description="Attention (query) heads.")
    kv_heads: int = Field(gt=0, description="Key/value heads (GQA).")
    head_dim: int = Field(gt=0, le=1024, description="Dimension per head.")
    max_context: int = Field(gt=0, description="Longest context the model supports.")
    weight_dtype: Literal["bf16", "fp16", "fp8", "int8", "int4", "mxfp4"] = Field(
        "bf16", description="Precision of the stored weights."
    )
    quantization: Literal["awq", "gptq", "fp8", "mxfp4"] | None = Field(
        None, description="Quantization method, if any."
    )
    experts: int | None = Field(None, gt=0, description="MoE experts.")
    experts_per_token: int | None = Field(None, gt=0, description="MoE experts per token.")
    license_gated: bool = Field(False, description="Needs a Hugging Face token to download.")

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
        if self.attention_heads % self.kv_heads:
            raise ValueError("attention_heads must be a multiple of kv_heads")
        if (self.experts is None) != (self.experts_per_token is None):
            raise ValueError("give both experts and experts_per_token (MoE), or neither")
        if self.experts is not None and self.experts_per_token is not None \
                and self.experts_per_token > self.experts:
            raise ValueError("experts_per_token is more than experts")
        if self.active_parameters is not None and self.active_parameters > self.parameters:
            raise ValueError("active_parameters is more than parameters")
        return self
