"""A model's architecture from its Hugging Face files, read offline.

:func:`find_model_files` (:mod:`gen.serving.hf_files`) finds a model's ``config.json``: the
file itself, a model folder or a Hugging Face cache entry. :func:`read_model` turns those
files into an :class:`~gen.serving.model_catalog.LLMSpec`: the architecture from
``config.json`` (its ``text_config`` for a vision-language model), the quantization from its
``quantization_config``, the checkpoint size from ``model.safetensors.index.json``
(``metadata.total_size``) or the safetensors headers, and the exact parameter count from the
architecture numbers (:func:`~gen.serving.param_count.count_parameters`), or from the
safetensors headers for an architecture gen cannot count.

Nothing here touches the network. Every error is a :class:`~gen.errors.ModelConfigError`
located at the file, line and key the user must look at.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, fields, replace
from typing import Any

from gen.errors import ModelConfigError
from gen.serving.hf_files import (
    MAX_CONFIG_BYTES,
    ModelFiles,
    Positions,
    find_model_files,
    located_error,
    read_checkpoint,
    read_json,
)
from gen.serving.model_catalog import QUANTIZATIONS, LLMSpec
from gen.serving.param_count import (
    count_active_parameters,
    count_parameters,
    unquantized_parameters,
)

__all__ = [
    "ModelFiles",
    "find_model_files",  # re-exported from gen.serving.hf_files: the entry point with read_model
    "model_values",
    "profile_document",
    "profile_text",
    "read_model",
    "spec_fields",
]

_DTYPES = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32", "half": "fp16",
           "float": "fp32"}
# --------------------------------------------------------------------------- config.json


class _Config:
    """One (sub-)object of a config.json, with the positions to locate its keys."""

    def __init__(self, data: Mapping[str, Any], prefix: tuple[str, ...], shown: str,
                 positions: Positions) -> None:
        self.data, self.prefix, self.shown, self.positions = data, prefix, shown, positions

    def error(self, key: str, message: str, hint: str = "") -> ModelConfigError:
        path = (*self.prefix, key)
        line, column = self.positions.get(path, self.positions.get(self.prefix, (0, 0)))
        return located_error(self.shown, message, line=line, column=column, key=".".join(path),
                      hint=hint)

    def get(self, key: str) -> Any:
        return self.data.get(key)

    def integer(self, *keys: str, required: bool = False, minimum: int = 1) -> int | None:
        """The first of ``keys`` the config has, as an int; None when absent or null."""
        for key in keys:
            value = self.data.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
                raise self.error(key, f"must be an integer of at least {minimum}, not "
                                 f"{json.dumps(value)}")
            return value
        if required:
            raise self.error(keys[0], "missing", hint="a decoder LLM's config.json has it")
        return None


def _quantization(config: _Config, out: dict[str, Any]) -> None:
    raw = config.get("quantization_config")
    if raw is None:
        return
    if not isinstance(raw, Mapping):
        raise config.error("quantization_config", "must be an object")
    quant = _Config(raw, (*config.prefix, "quantization_config"), config.shown,
                    config.positions)
    method = raw.get("quant_method")
    if method not in QUANTIZATIONS:
        raise quant.error("quant_method", f"quantization {json.dumps(method)} is not one gen "
                          f"sizes ({', '.join(sorted(QUANTIZATIONS))})")
    out["quantization"] = method
    if method in ("fp8", "mxfp4"):
        out["weight_dtype"] = method
        return
    bits: Any = raw.get("bits")
    group: Any = raw.get("group_size")
    kind: Any = "int"
    if method == "compressed-tensors":
        groups = raw.get("config_groups")
        weights = [g.get("weights") for g in groups.values()] if isinstance(groups, Mapping) \
            else []
        schemes = {(w.get("num_bits"), w.get("type"), w.get("group_size"))
                   for w in weights if isinstance(w, Mapping)}
        if len(schemes) != 1:
            raise quant.error("config_groups", "needs exactly one weight scheme to be sized "
                              f"(found {len(schemes)})")
        bits, kind, group = next(iter(schemes))
    dtype = {(8, "float"): "fp8", (8, "int"): "int8", (4, "int"): "int4"}.get((bits, kind))
    if dtype is None:
        raise quant.error("bits" if method != "compressed-tensors" else "config_groups",
                          f"{bits}-bit {kind} weights are not a width gen sizes "
                          "(8-bit float or int, 4-bit int)")
    out["weight_dtype"] = dtype
    if dtype == "int4" and isinstance(group, int) and group > 0:
        out["quant_group_size"] = group


def _sliding(config: _Config, layers: int, out: dict[str, Any]) -> None:
    window = config.integer("sliding_window")
    if window is None or config.get("use_sliding_window") is False:
        return
    types = config.get("layer_types")
    if isinstance(types, Sequence) and not isinstance(types, str):
        sliding = sum(1 for t in types if t == "sliding_attention")
    elif config.get("model_type") in ("gemma2", "gemma3_text"):
        sliding = layers // 2  # Gemma 2 alternates local and global layers
    else:
        sliding = layers  # Mistral-style: every layer
    if sliding:
        out["sliding_window"] = window
        out["sliding_window_layers"] = sliding


def _moe(text: _Config, out: dict[str, Any]) -> None:
    experts = text.integer("num_local_experts", "num_experts", "n_routed_experts")
    if experts is None or experts < 2:
        return
    out["experts"] = experts
    out["experts_per_token"] = text.integer("num_experts_per_tok", required=True)
    width = text.integer("moe_intermediate_size")
    if width is not None:
        out["moe_intermediate_size"] = width
    for key, name, minimum in (("n_shared_experts", "shared_experts", 0),
                               ("first_k_dense_replace", "dense_layers", 0),
                               ("interleave_moe_layer_step", "moe_layer_step", 1),
                               ("moe_layer_freq", "moe_layer_step", 1),
                               ("decoder_sparse_step", "moe_layer_step", 1)):
        value = text.integer(key, minimum=minimum)
        if value and name not in out and not (name == "moe_layer_step" and value == 1):
            out[name] = value
    dense = text.integer("intermediate_size_mlp")
    if dense is not None:
        out["dense_intermediate_size"] = dense


def spec_fields(data: Any, shown: str, positions: Positions) -> dict[str, Any]:
    """LLMSpec field values from a parsed config.json (no ``id``, ``parameters`` or checkpoint
    fields: :func:`read_model` adds them)."""
    if not isinstance(data, Mapping):
        line, column = positions.get((), (1, 1))
        raise located_error(shown, "must be a JSON object", line=line, column=column)
    top = _Config(data, (), shown, positions)
    text = top
    if isinstance(data.get("text_config"), Mapping):
        text = _Config(data["text_config"], ("text_config",), shown, positions)
    out: dict[str, Any] = {}
    architectures = data.get("architectures")
    if isinstance(architectures, list) and architectures and isinstance(architectures[0], str):
        out["architecture"] = architectures[0]
    layers = text.integer("num_hidden_layers", "n_layer", "num_layers", required=True) or 0
    hidden = text.integer("hidden_size", "n_embd", "d_model", required=True) or 0
    heads = text.integer("num_attention_heads", "n_head", required=True) or 0
    kv_heads = text.integer("num_key_value_heads", "num_kv_heads") or heads
    mla = {name: text.integer(name) for name in
           ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim", "q_lora_rank")}
    head_dim = text.integer("head_dim")
    if mla["kv_lora_rank"] is not None:
        head_dim = (mla["qk_nope_head_dim"] or 0) + (mla["qk_rope_head_dim"] or 0) or head_dim
    if head_dim is None:
        if hidden % heads:
            raise text.error("num_attention_heads", f"does not divide hidden_size {hidden}, "
                             "and the config has no head_dim")
        head_dim = hidden // heads
    out.update(layers=layers, hidden_size=hidden, attention_heads=heads, kv_heads=kv_heads,
               head_dim=head_dim)
    out["max_context"] = text.integer("max_position_embeddings", "n_positions",
                                      "max_sequence_length", required=True)
    out.update({k: v for k, v in mla.items() if v is not None})
    for key in ("intermediate_size", "vocab_size"):
        value = text.integer(key) or (top.integer(key) if text is not top else None)
        if value is not None:
            out[key] = value
    _moe(text, out)
    tie = text.get("tie_word_embeddings") if "tie_word_embeddings" in text.data \
        else top.get("tie_word_embeddings")
    if isinstance(tie, bool):
        out["tie_word_embeddings"] = tie
    dtype = top.get("torch_dtype") or top.get("dtype") or text.get("torch_dtype")
    if isinstance(dtype, str) and dtype in _DTYPES:
        out["compute_dtype"] = _DTYPES[dtype]
        out["weight_dtype"] = _DTYPES[dtype]
    _sliding(text, layers, out)
    _quantization(top, out)
    return out


def _lacks_qk_norm(data: Any, spec: LLMSpec) -> bool:
    """A GLM-4.5-family config that turns off the q/k norms its layout has by default."""
    return (spec.architecture == "Glm4MoeForCausalLM" and isinstance(data, Mapping)
            and data.get("use_qk_norm") is False)


def model_values(files: ModelFiles, *, read_safetensors: bool = True) -> dict[str, Any]:
    """LLMSpec field values (no ``id``) of the model in ``files``: the config's architecture
    and quantization, ``checkpoint_bytes`` when the safetensors index (or, with
    ``read_safetensors``, the safetensors headers) say, and ``parameters`` when the
    architecture or the safetensors give them (absent otherwise)."""
    data, positions = read_json(files.config, files.shown, MAX_CONFIG_BYTES)
    values = spec_fields(data, files.shown, positions)
    shown_folder = files.shown.rsplit("/", 1)[0] if "/" in files.shown else "."
    checkpoint = read_checkpoint(files.config.parent, shown_folder, read_safetensors)
    if checkpoint.bytes is not None:
        values["checkpoint_bytes"] = checkpoint.bytes
    try:
        draft = LLMSpec(id="draft/draft", parameters=1 << 62, **values)
    except ValueError as err:
        raise located_error(files.shown, str(err).split(": ", 1)[-1]) from None
    counted = count_parameters(draft)
    if counted is not None and _lacks_qk_norm(data, draft):
        counted -= draft.layers * 2 * draft.head_dim  # e.g. GLM-4.5-Air: use_qk_norm false
    if isinstance(data, Mapping) and data.get("vision_config") is not None:
        # The vision encoder is not counted from config.json: only the safetensors say.
        if counted is not None and checkpoint.parameters is not None:
            values["vision_parameters"] = max(0, checkpoint.parameters - counted)
        counted = checkpoint.parameters
    elif counted is None:
        counted = checkpoint.parameters
    if counted is None:
        return values
    values["parameters"] = counted
    active = count_active_parameters(replace(draft, parameters=counted))
    if active is not None and draft.is_moe:
        values["active_parameters"] = active
    kept = unquantized_parameters(replace(draft, parameters=counted)) \
        if draft.quantization is not None else None
    if kept:
        values["unquantized_parameters"] = kept
    return values


def read_model(files: ModelFiles, name: str | None = None,
               parameters: int | None = None) -> LLMSpec:
    """The :class:`LLMSpec` of the model in ``files``, named ``name`` (else the cache entry's
    ``ORG/NAME``, else the config's ``_name_or_path`` when it is one, else the folder's name).
    ``parameters`` replaces the count (for an architecture gen cannot count).
    """
    values = model_values(files)
    if parameters is not None:
        values["parameters"] = parameters
        values.pop("active_parameters", None)
        values.pop("unquantized_parameters", None)
    if "parameters" not in values:
        data, positions = read_json(files.config, files.shown, MAX_CONFIG_BYTES)
        line, column = positions.get(("architectures",), (0, 0))
        architecture = values.get("architecture") or "model without 'architectures'"
        raise located_error(files.shown, f"cannot count the parameters of a {architecture} "
                     "from its config, and no safetensors beside it say", line=line, column=column,
                     key="architectures", hint="pass --parameters (the total on the model's "
                     "Hugging Face page), or import the folder with its safetensors")
    model_id = name or files.name
    if model_id is None:
        data, _ = read_json(files.config, files.shown, MAX_CONFIG_BYTES)
        given = data.get("_name_or_path") if isinstance(data, Mapping) else None
        model_id = given if isinstance(given, str) and given.count("/") == 1 else None
    try:
        return LLMSpec(id=model_id or files.config.parent.resolve().name, **values)
    except ValueError as err:
        raise located_error(files.shown, str(err).split(": ", 1)[-1]) from None


def profile_document(spec: LLMSpec) -> dict[str, Any]:
    """The ``kind: Model`` document of ``spec``: its name, then every field whose value is not
    the default, in LLMSpec's order (what :meth:`LLMSpec.from_profile` reads back as ``spec``).
    """
    doc: dict[str, Any] = {"kind": "Model", "name": spec.id}
    for f in fields(spec):
        value = getattr(spec, f.name)
        if f.name != "id" and (f.default is MISSING or value != f.default):
            doc[f.name] = value
    return doc


# The editor modeline every profile of a fleet repository starts with (README, "Profiles"):
# profiles/<kind>/<name>.yaml reaches the repository's schema/ two folders up.
SCHEMA_MODELINE = "# yaml-language-server: $schema=../../schema/gen-profile.schema.json"


def profile_text(spec: LLMSpec, source: ModelFiles) -> str:
    """The YAML of :func:`profile_document`, with a comment saying where it came from."""
    import yaml

    origin = source.name or spec.id
    revision = f" at revision {source.revision}" if source.revision else ""
    header = (f"{SCHEMA_MODELINE}\n"
              f"# Written by `gen model import` from the config.json of {origin}{revision}.\n"
              "# Commit it under profiles/models/ (the modeline's schema path counts from\n"
              "# there); services name the model by `name`.\n")
    return header + yaml.safe_dump(profile_document(spec), sort_keys=False, width=100)
