"""Tests for gen.serving.hf_config: a model's numbers from its Hugging Face files, offline."""

from __future__ import annotations

import json
import struct
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from gen.errors import ModelConfigError
from gen.models.model import ModelProfile
from gen.serving.fit import FitRequest, check_fit, resolve_device
from gen.serving.hf_config import (
    find_model_files,
    model_values,
    profile_document,
    profile_text,
    read_model,
)
from gen.serving.model_catalog import LLMSpec, model_catalog

DATA = Path(__file__).parent / "data"
QWEN3_MOE = DATA / "qwen3-30b-a3b" / "config.json"
"""Qwen/Qwen3-30B-A3B's published config.json, byte for byte as alibaba/InferSim vendors it
(hf_configs/qwen3-30B-A3B_config.json@f2293da)."""


def _config(tmp_path: Path, data: dict[str, Any], name: str = "config.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return path


def _llama(**changes: Any) -> dict[str, Any]:
    config: dict[str, Any] = {
        "architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
        "max_position_embeddings": 131072, "num_attention_heads": 32, "num_hidden_layers": 32,
        "num_key_value_heads": 8, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "vocab_size": 128256,
    }
    config.update(changes)
    return config


def _safetensors(path: Path, tensors: dict[str, tuple[str, list[int]]]) -> None:
    header = {name: {"dtype": dtype, "shape": shape, "data_offsets": [0, 0]}
              for name, (dtype, shape) in tensors.items()}
    raw = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(raw)) + raw)


def test_moe_fixture_imports_as_the_catalog_entry() -> None:
    """Qwen3-30B-A3B's real config.json gives exactly the catalog's LLMSpec."""
    spec = read_model(find_model_files(QWEN3_MOE), "Qwen/Qwen3-30B-A3B")
    assert spec == model_catalog().lookup("Qwen/Qwen3-30B-A3B")


def test_imported_profile_fits_like_the_catalog_entry() -> None:
    """The printed Model profile, read back, fits an H100 exactly as the catalog entry does."""
    files = find_model_files(QWEN3_MOE)
    text = profile_text(read_model(files, "Qwen/Qwen3-30B-A3B"), files)
    profile = ModelProfile.model_validate(yaml.safe_load(text))
    imported = LLMSpec.from_profile(profile)
    catalog = model_catalog().lookup("Qwen/Qwen3-30B-A3B")
    device = resolve_device("h100-sxm5-80gb")
    for length in (None, 32768):
        mine = check_fit(FitRequest(model=imported, device=device, max_model_len=length))
        theirs = check_fit(FitRequest(model=catalog, device=device, max_model_len=length))
        assert mine == theirs


def test_profile_document_round_trips_every_catalog_model() -> None:
    """profile_document() of any catalog spec reads back as that spec."""
    for spec in model_catalog().all():
        profile = ModelProfile.model_validate(profile_document(spec))
        assert LLMSpec.from_profile(profile) == spec, spec.id


def test_dense_config_counts_like_the_catalog(tmp_path: Path) -> None:
    """A Llama 3.1 8B config gives the catalog's exact parameter count and no MoE fields."""
    _config(tmp_path, _llama())
    spec = read_model(find_model_files(tmp_path), "meta-llama/Llama-3.1-8B-Instruct")
    assert spec == replace(model_catalog().lookup("meta-llama/Llama-3.1-8B-Instruct"),
                           license_gated=False)


def test_mla_config_fields(tmp_path: Path) -> None:
    """A DeepSeek-V3 config maps MLA and MoE keys to the LLMSpec fields of the catalog entry."""
    catalog = model_catalog().lookup("deepseek-ai/DeepSeek-V3")
    config = {
        "architectures": ["DeepseekV3ForCausalLM"], "first_k_dense_replace": 3,
        "hidden_size": 7168, "intermediate_size": 18432, "kv_lora_rank": 512,
        "max_position_embeddings": 163840, "model_type": "deepseek_v3",
        "moe_intermediate_size": 2048, "moe_layer_freq": 1, "n_routed_experts": 256,
        "n_shared_experts": 1, "num_attention_heads": 128, "num_experts_per_tok": 8,
        "num_hidden_layers": 61, "num_key_value_heads": 128, "num_nextn_predict_layers": 1,
        "q_lora_rank": 1536, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
        "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3",
                                "quant_method": "fp8", "weight_block_size": [128, 128]},
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "v_head_dim": 128,
        "vocab_size": 129280,
    }
    spec = read_model(find_model_files(_config(tmp_path, config)), catalog.id)
    assert spec == catalog


def test_model_folder_reads_the_safetensors_index(tmp_path: Path) -> None:
    """A model folder's index gives checkpoint_bytes; the count still comes from the config."""
    _config(tmp_path, _llama())
    index = {"metadata": {"total_size": 16_060_522_496}, "weight_map": {"a": "model-1.st"}}
    _config(tmp_path, index, "model.safetensors.index.json")
    spec = read_model(find_model_files(tmp_path), "x/llama")
    assert spec.checkpoint_bytes == 16_060_522_496
    assert spec.parameters == 8_030_261_248


def test_unknown_architecture_counts_from_the_safetensors_header(tmp_path: Path) -> None:
    """For an architecture gen cannot count, the safetensors headers give the parameters."""
    _config(tmp_path, _llama(architectures=["NovelForCausalLM"]))
    _safetensors(tmp_path / "model.safetensors",
                 {"w": ("BF16", [1000, 1000]), "b": ("F32", [10])})
    spec = read_model(find_model_files(tmp_path), "x/novel")
    assert spec.parameters == 1_000_010
    assert spec.checkpoint_bytes == 2_000_040


def test_unknown_architecture_without_safetensors_is_a_located_error(tmp_path: Path) -> None:
    """No way to count: the error points at config.json's architectures line."""
    path = _config(tmp_path, _llama(architectures=["NovelForCausalLM"]))
    with pytest.raises(ModelConfigError) as info:
        read_model(find_model_files(path))
    (finding,) = info.value.findings
    assert finding.key_path == "architectures"
    assert finding.location is not None and finding.location.line == 2
    assert "NovelForCausalLM" in finding.message


@pytest.mark.parametrize(
    ("text", "line", "key", "message"),
    [
        ('{\n  "num_hidden_layers": 2,\n}', 3, "", "not JSON"),
        ('{\n  "num_hidden_layers": "two"\n}', 2, "num_hidden_layers", "must be an integer"),
        ('{\n  "num_hidden_layers": 2\n}', 1, "hidden_size", "missing"),
        ('[1, 2]', 1, "", "must be a JSON object"),
    ],
)
def test_bad_config_is_located(tmp_path: Path, text: str, line: int, key: str,
                               message: str) -> None:
    """Malformed or incomplete configs are errors with file, line and key."""
    path = tmp_path / "config.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ModelConfigError) as info:
        read_model(find_model_files(path, "models/config.json"))
    (finding,) = info.value.findings
    assert finding.location is not None
    assert (finding.location.path, finding.location.line) == ("models/config.json", line)
    assert finding.key_path == key
    assert message in finding.message


def test_nested_key_is_located(tmp_path: Path) -> None:
    """A bad quantization method points at quantization_config.quant_method's own line."""
    config = _llama(quantization_config={"bits": 4, "quant_method": "bitsandbytes"})
    path = _config(tmp_path, config)
    with pytest.raises(ModelConfigError) as info:
        read_model(find_model_files(path))
    (finding,) = info.value.findings
    assert finding.key_path == "quantization_config.quant_method"
    text = path.read_text().splitlines()
    assert finding.location is not None
    assert '"quant_method"' in text[finding.location.line - 1]


@pytest.mark.parametrize(
    ("quantization", "dtype", "method", "group"),
    [
        ({"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True},
         "int4", "awq", 128),
        ({"quant_method": "gptq", "bits": 4, "group_size": 32}, "int4", "gptq", 32),
        ({"quant_method": "gptq", "bits": 8, "group_size": 128}, "int8", "gptq", None),
        ({"quant_method": "fp8", "weight_block_size": [128, 128]}, "fp8", "fp8", None),
        ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
            "weights": {"num_bits": 8, "type": "int", "group_size": None}}}},
         "int8", "compressed-tensors", None),
        ({"quant_method": "compressed-tensors", "config_groups": {"group_0": {
            "weights": {"num_bits": 8, "type": "float"}}}}, "fp8", "compressed-tensors", None),
    ],
)
def test_quantization_configs(tmp_path: Path, quantization: dict[str, Any], dtype: str,
                              method: str, group: int | None) -> None:
    """quantization_config sets the weight dtype, method and group; embeddings stay 16-bit."""
    values = model_values(find_model_files(_config(tmp_path, _llama(
        quantization_config=quantization))))
    assert (values["weight_dtype"], values["quantization"]) == (dtype, method)
    assert values.get("quant_group_size") == group
    assert values["unquantized_parameters"] == 2 * 128256 * 4096 + 32 * 2 * 4096 + 4096


def test_sliding_window_rules(tmp_path: Path) -> None:
    """layer_types counts sliding layers; use_sliding_window false means none."""
    types = ["sliding_attention", "full_attention"] * 16
    values = model_values(find_model_files(_config(tmp_path, _llama(
        sliding_window=4096, layer_types=types))))
    assert (values["sliding_window"], values["sliding_window_layers"]) == (4096, 16)
    off = model_values(find_model_files(_config(tmp_path, _llama(
        sliding_window=4096, use_sliding_window=False))))
    assert "sliding_window" not in off


def test_vision_config_needs_a_checkpoint_or_parameters(tmp_path: Path) -> None:
    """A vision tower gen cannot count from config.json leaves parameters to the safetensors."""
    config = _llama(architectures=["Qwen2_5_VLForConditionalGeneration"],
                    vision_config={"hidden_size": 1280})
    path = _config(tmp_path, config)
    assert "parameters" not in model_values(find_model_files(path))
    with pytest.raises(ModelConfigError, match="cannot count the parameters"):
        read_model(find_model_files(path))


def test_from_profile_merges_config_values_and_overrides() -> None:
    """Fields a profile gives win over its config's values; the rest come from the config."""
    values = model_values(find_model_files(QWEN3_MOE))
    profile = ModelProfile(kind="Model", name="acme/moe", config="c.json", max_context=8192)
    spec = LLMSpec.from_profile(profile, values)
    expected = replace(model_catalog().lookup("Qwen/Qwen3-30B-A3B"), id="acme/moe",
                       max_context=8192)
    assert spec == expected


def test_text_config_and_interleaved_moe_fields(tmp_path: Path) -> None:
    """A Llama-4-style config: numbers under text_config, MoE every second layer, a dense width
    of its own; a dense config's stray moe_intermediate_size is ignored."""
    text = {"hidden_size": 5120, "intermediate_size": 8192, "intermediate_size_mlp": 16384,
            "interleave_moe_layer_step": 2, "max_position_embeddings": 1048576,
            "num_attention_heads": 40, "num_hidden_layers": 48, "num_key_value_heads": 8,
            "head_dim": 128, "num_local_experts": 128, "num_experts_per_tok": 1,
            "vocab_size": 202048}
    values = model_values(find_model_files(_config(tmp_path, {
        "architectures": ["Llama4ForConditionalGeneration"], "text_config": text})))
    assert (values["experts"], values["moe_layer_step"], values["dense_intermediate_size"]) == (
        128, 2, 16384)
    assert "parameters" not in values  # Llama 4's layout is not one gen counts
    dense = model_values(find_model_files(_config(tmp_path, _llama(moe_intermediate_size=64))))
    assert "moe_intermediate_size" not in dense


def test_glm_without_qk_norms_counts_without_them(tmp_path: Path) -> None:
    """A Glm4Moe config with use_qk_norm false (GLM-4.5-Air) drops the q/k norm weights."""
    glm = model_catalog().lookup("zai-org/GLM-4.5")
    config = {
        "architectures": ["Glm4MoeForCausalLM"], "attention_bias": True,
        "first_k_dense_replace": 3, "head_dim": 128, "hidden_size": 5120,
        "intermediate_size": 12288, "max_position_embeddings": 131072,
        "moe_intermediate_size": 1536, "n_routed_experts": 160, "n_shared_experts": 1,
        "num_attention_heads": 96, "num_experts_per_tok": 8, "num_hidden_layers": 92,
        "num_key_value_heads": 8, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "use_qk_norm": True, "vocab_size": 151552,
    }
    with_norms = read_model(find_model_files(_config(tmp_path, config)), glm.id)
    assert with_norms.parameters == glm.parameters
    config["use_qk_norm"] = False
    without = model_values(find_model_files(_config(tmp_path, config)))
    assert without["parameters"] == glm.parameters - 92 * 2 * 128


def test_imported_profile_starts_with_the_fleet_modeline() -> None:
    """The printed profile's first line is the modeline of the fleet's own profiles (the
    README's promise), and from profiles/models/ its schema path reaches schema/."""
    import re

    from gen.serving.hf_config import SCHEMA_MODELINE

    files = find_model_files(QWEN3_MOE)
    first = profile_text(read_model(files, "Qwen/Qwen3-30B-A3B"), files).splitlines()[0]
    assert first == SCHEMA_MODELINE
    root = Path(__file__).resolve().parents[2]
    committed = {p.read_text(encoding="utf-8").splitlines()[0]
                 for p in sorted((root / "profiles").glob("*/*.yaml"))}
    assert committed == {SCHEMA_MODELINE}
    schema = re.sub(r"^# yaml-language-server: \$schema=", "", first)
    assert (root / "profiles" / "models" / schema).resolve().is_file()
