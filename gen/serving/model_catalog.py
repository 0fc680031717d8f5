"""The built-in LLM catalog: architecture numbers that the memory fit and the lint rules need.

The data lives in ``gen/data/models.yaml`` (read once, on first use). Profiles can add models
with :meth:`ModelCatalog.with_extra`; an extra model with the id of a built-in one replaces it.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from fractions import Fraction
from importlib import resources
from typing import TYPE_CHECKING, Any, ClassVar

import yaml

from gen.caches import once
from gen.errors import CatalogLookupError

if TYPE_CHECKING:
    from gen.models.model import ModelProfile

__all__ = [
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
WEIGHT_DTYPES: frozenset[str] = frozenset({*_PLAIN_DTYPE_BYTES, "int4", "mxfp4"})
_QUANTIZATIONS: frozenset[str] = frozenset({"awq", "gptq", "fp8", "mxfp4"})
_COMPUTE_DTYPES: frozenset[str] = frozenset({"fp32", "bf16", "fp16"})

# MXFP4 (OCP microscaling): 4-bit E2M1 elements sharing one 8-bit E8M0 scale per block of 32.
_MXFP4_BLOCK = 32
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
        active_parameters: parameters used per token (MoE only), as the model card states it.
        layers: ``num_hidden_layers``.
        hidden_size: ``hidden_size``.
        attention_heads: ``num_attention_heads``.
        kv_heads: ``num_key_value_heads``.
        head_dim: ``head_dim`` (or hidden_size / heads when the config has none).
        max_context: ``max_position_embeddings``: the longest ``--max-model-len`` vLLM accepts.
        weight_dtype: storage dtype of the (quantized) weights: bf16, fp16, fp32, fp8, int8, int4,
            mxfp4.
        quantization: checkpoint quantization method (awq, gptq, fp8, mxfp4) or None.
        experts: routed experts per MoE layer, or None for a dense model.
        experts_per_token: experts routed per token (MoE only).
        license_gated: the repository asks for a licence acceptance: pods need ``HF_TOKEN``.
        intermediate_size: MLP width (per expert for a MoE); TP must divide it.
        vocab_size: vocabulary size (embeddings and lm_head).
        tie_word_embeddings: lm_head shares the embedding matrix.
        compute_dtype: activation dtype (bf16/fp16/fp32): the KV cache element for ``auto``.
        unquantized_parameters: parameters a quantized checkpoint keeps at ``compute_dtype``.
        quant_group_size: AWQ/GPTQ group size; each TP shard of the MLP must hold whole groups.
        sliding_window: local-attention window in tokens of the sliding layers, if any.
        sliding_window_layers: how many of ``layers`` use the sliding window.
        architecture: the ``architectures[0]`` class name (informational).
        checkpoint_bytes: size of the safetensors on disk when known; else None.
        dense_layers: HF ``first_k_dense_replace``: leading layers of a MoE that are dense.
        kv_lora_rank: HF ``kv_lora_rank``: the MLA latent width (its KV cache per token).
        qk_rope_head_dim: HF ``qk_rope_head_dim``: the MLA rope key cached beside the latent.
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
    dense_layers: int | None = None
    kv_lora_rank: int | None = None
    qk_rope_head_dim: int | None = None

    PROFILE_NAMES: ClassVar[Mapping[str, str]] = {"id": "name"}
    """Fields that a ``kind: Model`` profile spells differently (field -> profile key)."""
    NOT_IN_PROFILES: ClassVar[frozenset[str]] = frozenset({
        "intermediate_size", "vocab_size", "tie_word_embeddings", "compute_dtype",
        "unquantized_parameters", "quant_group_size", "sliding_window",
        "sliding_window_layers", "architecture", "checkpoint_bytes",
        "dense_layers", "kv_lora_rank", "qk_rope_head_dim",
    })
    """Fields a ``kind: Model`` profile cannot give: they keep their defaults."""

    @classmethod
    def from_profile(cls, profile: ModelProfile) -> LLMSpec:
        """The spec of a ``kind: Model`` profile: every other field is carried by its name.

        Raises ValueError when the numbers break the catalog's consistency rules.
        """
        values = {
            f.name: getattr(profile, cls.PROFILE_NAMES.get(f.name, f.name))
            for f in fields(cls) if f.name not in cls.NOT_IN_PROFILES
        }
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
        if self.quantization is not None and self.quantization not in _QUANTIZATIONS:
            out.append(f"quantization {self.quantization!r} is not one of {sorted(_QUANTIZATIONS)}")
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
        * plain dtypes: their width.
        """
        if self.weight_dtype == "int4":
            group = self.quant_group_size or _DEFAULT_INT4_GROUP
            return Fraction(4) + Fraction(16 + 4, group)
        if self.weight_dtype == "mxfp4":
            return Fraction(4) + Fraction(8, _MXFP4_BLOCK)
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

    def with_extra(self, specs: Iterable[LLMSpec]) -> ModelCatalog:
        """A new catalog with ``specs`` added; a spec replaces a built-in one with the same id."""
        return ModelCatalog((*self._specs, *specs))


def _load_builtin() -> tuple[LLMSpec, ...]:
    text = resources.files("gen").joinpath("data/models.yaml").read_text(encoding="utf-8")
    data = yaml.safe_load(text)
    return tuple(LLMSpec.from_mapping(entry) for entry in data["models"])


@once
def model_catalog() -> ModelCatalog:
    """The built-in catalog, read from ``gen/data/models.yaml`` on first use."""
    return ModelCatalog(_load_builtin())
