"""The built-in LLM catalog: architecture numbers that the memory fit and the lint rules need.

The data lives in ``gen/data/models.yaml`` (read once, on first use). Profiles can add models
with :meth:`ModelCatalog.with_extra`; an extra model with the id of a built-in one replaces it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import MISSING, dataclass, fields
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

from gen._data import load_data
from gen.caches import once
from gen.errors import CatalogLookupError

if TYPE_CHECKING:
    from gen.models.model import ModelProfile

__all__ = [
    "QUANTIZATIONS",
    "WEIGHT_DTYPES",
    "LLMSpec",
    "ModelCatalog",
    "dtype_bytes",
    "model_catalog",
]

# Bytes per element of the 16-bit-or-wider dtypes (also the KV cache's element size for
# ``--kv-cache-dtype auto``, which follows the model's compute dtype).
_PLAIN_DTYPE_BYTES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1, "int8": 1}

# Weight dtypes the catalog understands. int4 (AWQ/GPTQ) and mxfp4 cost more than 4 bits:
# see :meth:`LLMSpec.bits_per_quantized_weight`.
WEIGHT_DTYPES: frozenset[str] = frozenset({*_PLAIN_DTYPE_BYTES, "int4", "mxfp4", "nf4"})
QUANTIZATIONS: frozenset[str] = frozenset({"awq", "gptq", "fp8", "mxfp4", "compressed-tensors"})
"""Checkpoint quantization methods, as ``quantization_config.quant_method`` names them."""
_IN_FLIGHT: dict[str, str] = {"bitsandbytes": "nf4"}
"""Methods a model has only as vLLM loads a 16-bit checkpoint (in-flight quantization, see
:data:`gen.serving.memory.ONLINE_QUANTIZATIONS`), with the weight dtype they give; gen sizes
no pre-quantized checkpoint of them."""
_COMPUTE_DTYPES: frozenset[str] = frozenset({"fp32", "bf16", "fp16"})

# MXFP4 (OCP microscaling): 4-bit E2M1 elements sharing one 8-bit E8M0 scale per block of 32.
_MXFP4_BLOCK = 32
# NF4 with double quantization, as vLLM's in-flight bitsandbytes quantization stores a weight
# (``quantize_4bit(weight, compress_statistics=True, quant_type="nf4")``, vllm-project/vllm
# vllm/model_executor/model_loader/bitsandbytes_loader.py): 4-bit codes, one 8-bit absmax per
# block of 64 weights (bitsandbytes' default blocksize) and one 32-bit scale per 256 of those
# (bitsandbytes-foundation/bitsandbytes bitsandbytes/functional.py ``quantize_4bit``:
# ``quantize_blockwise(absmax, blocksize=256)`` when compress_statistics).
_NF4_BLOCK = 64
_NF4_NESTED_BLOCK = 256
# AWQ/GPTQ group size when a checkpoint does not say (the usual ``"group_size": 128``).
_DEFAULT_INT4_GROUP = 128


def dtype_bytes(dtype: str) -> int:
    """Bytes per element of a plain dtype (fp32, bf16, fp16, fp8, int8)."""
    try:
        return _PLAIN_DTYPE_BYTES[dtype]
    except KeyError:
        raise ValueError(f"{dtype!r} is not a plain dtype") from None


@dataclass(frozen=True, kw_only=True)
class LLMSpec:
    """The architecture of one decoder-only LLM, as its Hugging Face ``config.json`` gives it.

    Attributes:
        id: Hugging Face repository id, e.g. ``meta-llama/Llama-3.1-8B-Instruct``.
        parameters: total parameter count (all experts of a MoE).
        active_parameters: parameters one token uses (MoE only; see
            :func:`gen.serving.param_count.count_active_parameters`).
        layers: ``num_hidden_layers``.
        hidden_size: ``hidden_size``.
        attention_heads: ``num_attention_heads``.
        kv_heads: ``num_key_value_heads``.
        head_dim: ``head_dim`` (or hidden_size / heads when the config has none).
        max_context: ``max_position_embeddings``: the longest ``--max-model-len`` vLLM accepts.
        weight_dtype: storage dtype of the (quantized) weights: bf16, fp16, fp32, fp8, int8, int4,
            mxfp4, nf4 (what vLLM's in-flight bitsandbytes quantization makes of a 16-bit
            checkpoint).
        quantization: checkpoint quantization method (awq, gptq, fp8, mxfp4) or None.
        experts: routed experts per MoE layer, or None for a dense model.
        experts_per_token: experts routed per token (MoE only).
        license_gated: the repository asks for a licence acceptance: pods need ``HF_TOKEN``.
        intermediate_size: ``intermediate_size``: the dense MLP width (also each expert's width
            when a MoE's config has no ``moe_intermediate_size``, as Mixtral's); TP must divide it.
        vocab_size: vocabulary size (embeddings and lm_head).
        tie_word_embeddings: lm_head shares the embedding matrix.
        compute_dtype: activation dtype (bf16/fp16/fp32): the KV cache element for ``auto``.
        unquantized_parameters: parameters a quantized checkpoint keeps at ``compute_dtype``.
        quant_group_size: AWQ/GPTQ group size; each TP shard of the MLP must hold whole groups.
        sliding_window: local-attention window in tokens of the sliding layers, if any.
        sliding_window_layers: how many of ``layers`` use the sliding window.
        architecture: the ``architectures[0]`` class name (informational).
        checkpoint_bytes: size of the safetensors on disk when known; else None.
        moe_intermediate_size: ``moe_intermediate_size``: each routed (and shared) expert's MLP
            width when it differs from ``intermediate_size``.
        shared_experts: ``n_shared_experts``: experts every token goes through (DeepSeek, Kimi,
            GLM, Llama 4), on top of the routed ones.
        dense_layers: ``first_k_dense_replace``: leading layers with a dense MLP of
            ``intermediate_size`` instead of experts.
        kv_lora_rank: ``kv_lora_rank``: width of the compressed KV latent of multi-head latent
            attention (MLA); None for every other attention.
        qk_rope_head_dim: ``qk_rope_head_dim``: the rotary part of each MLA query/key head (the
            part cached beside the latent).
        qk_nope_head_dim: ``qk_nope_head_dim``: the non-rotary part of each MLA query/key head.
        v_head_dim: ``v_head_dim``: each MLA value head's width.
        q_lora_rank: ``q_lora_rank``: width of MLA's compressed query (None: queries are
            projected directly, as in DeepSeek-V2-Lite).
        moe_layer_step: every how many layers (after ``dense_layers``) a layer has experts; the
            others have a dense MLP of ``dense_intermediate_size``. None or 1: every layer.
            (``interleave_moe_layer_step`` of Llama 4, ``moe_layer_freq`` of DeepSeek.)
        dense_intermediate_size: MLP width of the dense layers between MoE layers when it differs
            from ``intermediate_size`` (Llama 4's ``intermediate_size_mlp``).
        vision_parameters: parameters of a vision-language model's vision encoder and projector;
            they are part of ``parameters`` (vLLM loads them) but not of the decoder's own count.
    """

    id: str
    parameters: int
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    max_context: int
    weight_dtype: str = "bf16"
    quantization: str | None = None
    active_parameters: int | None = None
    experts: int | None = None
    experts_per_token: int | None = None
    license_gated: bool = False
    intermediate_size: int | None = None
    vocab_size: int | None = None
    tie_word_embeddings: bool = False
    compute_dtype: str = "bf16"
    unquantized_parameters: int = 0
    quant_group_size: int | None = None
    sliding_window: int | None = None
    sliding_window_layers: int = 0
    architecture: str = ""
    checkpoint_bytes: int | None = None
    moe_intermediate_size: int | None = None
    shared_experts: int | None = None
    dense_layers: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None
    qk_nope_head_dim: int | None = None
    v_head_dim: int | None = None
    q_lora_rank: int | None = None
    moe_layer_step: int | None = None
    dense_intermediate_size: int | None = None
    vision_parameters: int = 0

    PROFILE_NAMES: ClassVar[Mapping[str, str]] = {"id": "name"}
    """Fields that a ``kind: Model`` profile spells differently (field -> profile key)."""

    @classmethod
    def from_profile(cls, profile: ModelProfile,
                     config: Mapping[str, Any] | None = None) -> LLMSpec:
        """The spec of a ``kind: Model`` profile: every field is carried by its name.

        ``config`` holds the field values read from the profile's ``config`` (see
        :func:`gen.serving.hf_config.model_values`); the fields the profile gives override
        them, the others keep the config's values.

        Raises ValueError when the numbers break the catalog's consistency rules.
        """
        values: dict[str, Any] = dict(config or {})
        given = profile.model_fields_set
        for f in fields(cls):
            key = cls.PROFILE_NAMES.get(f.name, f.name)
            if config is None or key in given:
                values[f.name] = getattr(profile, key)
        missing = [f.name for f in fields(cls) if values.get(f.name) is None
                   and f.default is MISSING]
        if missing:
            raise ValueError(f"model {profile.name!r}: give {', '.join(missing)} (its config "
                             "does not say)")
        return cls(**values)

    def __post_init__(self) -> None:
        problems = self._problems()
        if problems:
            raise ValueError(f"model {self.id!r}: " + "; ".join(problems))

    def _problems(self) -> list[str]:
        out: list[str] = []
        positive = ("parameters", "layers", "hidden_size", "attention_heads", "kv_heads",
                    "head_dim", "max_context")
        out.extend(f"{name} must be a positive integer" for name in positive
                   if getattr(self, name) < 1)
        if self.weight_dtype not in WEIGHT_DTYPES:
            out.append(f"weight_dtype {self.weight_dtype!r} is not one of {sorted(WEIGHT_DTYPES)}")
        if self.compute_dtype not in _COMPUTE_DTYPES:
            out.append(f"compute_dtype {self.compute_dtype!r} is not one of "
                       f"{sorted(_COMPUTE_DTYPES)}")
        in_flight = _IN_FLIGHT.get(self.quantization or "") == self.weight_dtype
        if (self.quantization is not None and self.quantization not in QUANTIZATIONS
                and not in_flight):
            out.append(f"quantization {self.quantization!r} is not one of {sorted(QUANTIZATIONS)}")
        if self.kv_heads > self.attention_heads or (
            self.kv_heads >= 1 and self.attention_heads % self.kv_heads
        ):
            out.append("kv_heads must divide attention_heads")
        if (self.experts is None) != (self.experts_per_token is None):
            out.append("experts and experts_per_token go together")
        if not 0 <= self.unquantized_parameters <= self.parameters:
            out.append("unquantized_parameters must be between 0 and parameters")
        if not 0 <= self.sliding_window_layers <= self.layers:
            out.append("sliding_window_layers must be between 0 and layers")
        if self.sliding_window_layers and not self.sliding_window:
            out.append("sliding_window_layers needs a sliding_window")
        out.extend(self._moe_mla_problems())
        return out

    def _moe_mla_problems(self) -> list[str]:
        out: list[str] = []
        optional = ("moe_intermediate_size", "shared_experts", "dense_layers", "kv_lora_rank",
                    "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "q_lora_rank",
                    "moe_layer_step", "dense_intermediate_size")
        out.extend(f"{name} must be a positive integer (or absent)" for name in optional
                   if getattr(self, name) is not None and getattr(self, name) < 1
                   and name not in ("shared_experts", "dense_layers"))
        out.extend(f"{name} must be 0 or more (or absent)" for name in
                   ("shared_experts", "dense_layers") if (getattr(self, name) or 0) < 0)
        if not self.is_moe:
            out.extend(f"{name} is for a MoE model (give experts and experts_per_token)"
                       for name in ("moe_intermediate_size", "shared_experts", "dense_layers",
                                    "moe_layer_step")
                       if getattr(self, name))
        if (self.dense_layers or 0) > self.layers:
            out.append("dense_layers must be at most layers")
        mla = ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim")
        given = [name for name in mla if getattr(self, name) is not None]
        if given and len(given) != len(mla):
            missing = [name for name in mla if name not in given]
            out.append(f"MLA attention needs {', '.join(mla)} together (missing "
                       f"{', '.join(missing)})")
        if self.q_lora_rank is not None and self.kv_lora_rank is None:
            out.append("q_lora_rank is for MLA attention (give kv_lora_rank)")
        if not 0 <= self.vision_parameters < self.parameters:
            out.append("vision_parameters must be between 0 and parameters")
        return out

    @property
    def name(self) -> str:
        """The repository name without its organisation (``Llama-3.1-8B-Instruct``)."""
        return self.id.rsplit("/", 1)[-1]

    @property
    def is_moe(self) -> bool:
        """True for a mixture-of-experts model."""
        return self.experts is not None

    @property
    def compute_bytes(self) -> int:
        """Bytes per element of the compute dtype (and of an ``auto`` KV cache)."""
        return _PLAIN_DTYPE_BYTES[self.compute_dtype]

    @property
    def bits_per_quantized_weight(self) -> Fraction:
        """Storage bits per quantized weight, scales and zero points included.

        * int4 AWQ/GPTQ: 4 bits + a 16-bit scale and a 4-bit zero point per group
          (4.156 bits at group 128, ≈0.52 bytes).
        * mxfp4: 4 bits + one 8-bit scale per block of 32 (4.25 bits).
        * nf4 (bitsandbytes, double quantization): 4 bits + an 8-bit absmax per block of 64 +
          a 32-bit scale per 256 blocks (≈4.127 bits).
        * plain dtypes: their width.
        """
        if self.weight_dtype == "int4":
            group = self.quant_group_size or _DEFAULT_INT4_GROUP
            return Fraction(4) + Fraction(16 + 4, group)
        if self.weight_dtype == "mxfp4":
            return Fraction(4) + Fraction(8, _MXFP4_BLOCK)
        if self.weight_dtype == "nf4":
            return (Fraction(4) + Fraction(8, _NF4_BLOCK)
                    + Fraction(32, _NF4_BLOCK * _NF4_NESTED_BLOCK))
        return Fraction(8 * _PLAIN_DTYPE_BYTES[self.weight_dtype])

    @property
    def embedding_parameters(self) -> int:
        """Parameters of the embedding matrix and lm_head (one matrix when tied)."""
        if self.vocab_size is None:
            return 0
        return self.vocab_size * self.hidden_size * (1 if self.tie_word_embeddings else 2)

    @property
    def weight_bytes(self) -> int:
        """Bytes of all weights in GPU memory (the checkpoint as vLLM loads it)."""
        if self.weight_dtype in _COMPUTE_DTYPES:
            return self.parameters * _PLAIN_DTYPE_BYTES[self.weight_dtype]
        quantized = self.parameters - self.unquantized_parameters
        quantized_bytes = -(-quantized * self.bits_per_quantized_weight // 8)  # ceil
        return int(quantized_bytes) + self.unquantized_parameters * self.compute_bytes

    @property
    def embedding_bytes(self) -> int:
        """Bytes of the embedding matrix and lm_head (kept at the compute dtype)."""
        if self.weight_dtype in _COMPUTE_DTYPES:
            return self.embedding_parameters * _PLAIN_DTYPE_BYTES[self.weight_dtype]
        return self.embedding_parameters * self.compute_bytes

    @property
    def disk_bytes(self) -> int:
        """Checkpoint size on disk: the recorded size, else the weights' size."""
        return self.checkpoint_bytes if self.checkpoint_bytes is not None else self.weight_bytes

    @property
    def is_mla(self) -> bool:
        """True for multi-head latent attention (DeepSeek-V2/V3, Kimi K2): the KV cache holds
        one ``kv_lora_rank + qk_rope_head_dim`` latent per token and layer."""
        return self.kv_lora_rank is not None

    @property
    def expert_intermediate_size(self) -> int | None:
        """Each expert's MLP width (None for a dense model or an unknown width)."""
        if not self.is_moe:
            return None
        return self.moe_intermediate_size or self.intermediate_size

    @property
    def full_attention_layers(self) -> int:
        """Layers whose KV cache grows with the whole sequence."""
        return self.layers - self.sliding_window_layers

    def to_json(self) -> dict[str, Any]:
        """Every field, plus the derived weight size, as plain JSON values."""
        data: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        data["weight_bytes"] = self.weight_bytes
        return data

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> LLMSpec:
        """Build a spec from a YAML/JSON mapping whose keys are the field names."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"model {data.get('id')!r}: unknown keys {unknown}")
        return cls(**dict(data))


class ModelCatalog:
    """An immutable set of :class:`LLMSpec`, looked up by Hugging Face id."""

    def __init__(self, specs: Iterable[LLMSpec]) -> None:
        by_key: dict[str, LLMSpec] = {}
        for spec in specs:
            by_key[spec.id.lower()] = spec  # later entries replace earlier ones
        self._by_key = by_key
        self._specs = tuple(sorted(by_key.values(), key=lambda s: s.id.lower()))

    def all(self) -> tuple[LLMSpec, ...]:
        """Every model, sorted by id (case-insensitive)."""
        return self._specs

    def __len__(self) -> int:
        return len(self._specs)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self._find(name) is not None

    def _find(self, name: str) -> LLMSpec | None:
        key = name.strip().lower()
        spec = self._by_key.get(key)
        if spec is not None:
            return spec
        # A bare repository name is accepted when exactly one organisation has it.
        matches = [s for s in self._specs if s.name.lower() == key]
        return matches[0] if len(matches) == 1 else None

    def lookup(self, name: str) -> LLMSpec:
        """The model with Hugging Face id ``name`` (case-insensitive).

        Raises:
            CatalogLookupError: no such model; the message lists the nearest names.
        """
        spec = self._find(name)
        if spec is not None:
            return spec
        candidates = {s.id.lower(): s.id for s in self._specs}
        candidates.update({s.name.lower(): s.id for s in self._specs})
        close = difflib.get_close_matches(name.strip().lower(), list(candidates), n=5, cutoff=0.5)
        nearest = list(dict.fromkeys(candidates[c] for c in close))[:3]
        hint = f"; nearest: {', '.join(nearest)}" if nearest else ""
        raise CatalogLookupError(
            f"unknown model {name!r}{hint} (see `gen catalog models`, "
            "or describe it in a Model profile)"
        )

    def select(self, *, family: str | None = None, min_parameters: int | None = None,
               max_parameters: int | None = None) -> tuple[LLMSpec, ...]:
        """The models whose organisation, repository name or architecture contains ``family``
        (case-insensitive) and whose total parameters lie within the bounds, in :meth:`all`'s
        order."""
        needle = family.strip().lower() if family else ""
        return tuple(
            s for s in self._specs
            if (not needle or needle in s.id.lower() or needle in s.architecture.lower())
            and (min_parameters is None or s.parameters >= min_parameters)
            and (max_parameters is None or s.parameters <= max_parameters)
        )

    def with_extra(self, specs: Iterable[LLMSpec]) -> ModelCatalog:
        """A new catalog with ``specs`` added; a spec replaces a built-in one with the same id."""
        return ModelCatalog((*self._specs, *specs))


def _load_builtin() -> tuple[LLMSpec, ...]:
    data = load_data("models.yaml")
    return tuple(LLMSpec.from_mapping(entry) for entry in data["models"])


@once
def model_catalog() -> ModelCatalog:
    """The built-in catalog, read from ``gen/data/models.yaml`` on first use."""
    return ModelCatalog(_load_builtin())
