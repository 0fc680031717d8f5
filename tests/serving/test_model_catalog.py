"""Tests for gen.serving.model_catalog: the built-in LLM catalog and its arithmetic."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gen.errors import CatalogLookupError
from gen.serving.model_catalog import LLMSpec, ModelCatalog, model_catalog


def _dense_parameters(spec: LLMSpec, *, qkv_bias: bool = False, norms: int = 2) -> int:
    """Dense decoder parameters from the architecture numbers (the catalog's own rule)."""
    assert spec.intermediate_size is not None and spec.vocab_size is not None
    h, hd = spec.hidden_size, spec.head_dim
    attn = h * spec.attention_heads * hd * 2 + h * spec.kv_heads * hd * 2
    if qkv_bias:
        attn += (spec.attention_heads + 2 * spec.kv_heads) * hd
    if spec.architecture == "Qwen3ForCausalLM":
        attn += 2 * hd  # q_norm, k_norm
    layer = attn + 3 * h * spec.intermediate_size + norms * h
    return spec.layers * layer + spec.embedding_parameters + h + spec.vision_parameters


def test_catalog_has_the_popular_models() -> None:
    """The catalog holds about twenty well-known models by Hugging Face id."""
    ids = {s.id for s in model_catalog().all()}
    assert len(ids) >= 20
    for expected in (
        "meta-llama/Llama-3.1-8B-Instruct",
        "meta-llama/Llama-3.1-405B-Instruct-FP8",
        "Qwen/Qwen2.5-72B-Instruct-AWQ",
        "mistralai/Mixtral-8x7B-Instruct-v0.1",
        "openai/gpt-oss-120b",
        "microsoft/phi-4",
    ):
        assert expected in ids


def test_catalog_is_cached() -> None:
    """model_catalog() parses the data once and returns the same object."""
    assert model_catalog() is model_catalog()


def test_all_is_sorted_case_insensitively() -> None:
    """all() lists models sorted by lower-cased id."""
    ids = [s.id.lower() for s in model_catalog().all()]
    assert ids == sorted(ids)


@pytest.mark.parametrize(
    ("model", "published"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", 8_030_261_248),
        ("meta-llama/Llama-3.1-70B-Instruct", 70_553_706_496),
        ("meta-llama/Llama-3.2-1B-Instruct", 1_235_814_400),
        ("mistralai/Mistral-7B-Instruct-v0.3", 7_248_023_552),
        ("microsoft/phi-4", 14_659_507_200),
    ],
)
def test_parameter_counts_match_published_sizes(model: str, published: int) -> None:
    """Catalog parameter counts equal the published safetensors counts."""
    assert model_catalog().lookup(model).parameters == published


@pytest.mark.parametrize(
    "spec",
    # MoE and quantized counts are checked by tests/serving/test_param_count.py.
    [s for s in model_catalog().all() if not s.is_moe and s.weight_dtype == "bf16"],
    ids=lambda s: s.id,
)
def test_dense_counts_follow_from_the_architecture(spec: LLMSpec) -> None:
    """Every dense bf16 model's parameter count follows from its config numbers."""
    qkv_bias = spec.architecture in ("Qwen2ForCausalLM", "Qwen2_5_VLForConditionalGeneration")
    norms = 4 if spec.architecture == "Gemma2ForCausalLM" else 2
    assert spec.parameters == _dense_parameters(spec, qkv_bias=qkv_bias, norms=norms)


@pytest.mark.parametrize("spec", model_catalog().all(), ids=lambda s: s.id)
def test_catalog_entries_are_consistent(spec: LLMSpec) -> None:
    """Each entry has KV heads dividing the heads and sane MoE/quantization fields."""
    assert spec.attention_heads % spec.kv_heads == 0
    assert (spec.active_parameters is not None) == spec.is_moe
    assert (spec.quantization is None) == (spec.weight_dtype in {"bf16", "fp16"})
    assert 0 < spec.weight_bytes <= spec.parameters * 2


def test_lookup_is_case_insensitive() -> None:
    """lookup() accepts the id in any case and the bare repository name."""
    catalog = model_catalog()
    spec = catalog.lookup("META-LLAMA/llama-3.1-8b-instruct")
    assert spec.id == "meta-llama/Llama-3.1-8B-Instruct"
    assert catalog.lookup("Llama-3.1-8B-Instruct") is spec
    assert "qwen/qwen3-8b" in catalog


def test_lookup_unknown_lists_nearest_names() -> None:
    """An unknown name raises CatalogLookupError naming the nearest catalog ids."""
    with pytest.raises(CatalogLookupError,
                       match=r"unknown model 'meta-llama/Llama-3.1-8B-Instrct'.*"
                       r"nearest: meta-llama/Llama-3.1-8B-Instruct"):
        model_catalog().lookup("meta-llama/Llama-3.1-8B-Instrct")


def test_lookup_unknown_message_renders() -> None:
    """The CatalogLookupError formats as one line for the CLI boundary."""
    with pytest.raises(CatalogLookupError) as info:
        model_catalog().lookup("no-such/model-at-all-xyz")
    assert info.value.format_message().startswith("unknown model 'no-such/model-at-all-xyz'")


def test_with_extra_adds_and_replaces() -> None:
    """with_extra() adds models and replaces a built-in with the same id; the original stays."""
    base = model_catalog()
    llama = base.lookup("meta-llama/Llama-3.1-8B-Instruct")
    custom = replace(llama, id="acme/Llama-8B-Finetune")
    patched = replace(llama, max_context=8192)
    extended = base.with_extra([custom, patched])
    assert extended.lookup("acme/llama-8b-finetune") == custom
    assert extended.lookup(llama.id).max_context == 8192
    assert base.lookup(llama.id).max_context == 131072
    assert len(extended) == len(base) + 1


def test_weight_bytes_by_dtype() -> None:
    """bf16 weights take 2 bytes per parameter; FP8 about half; AWQ about a quarter."""
    catalog = model_catalog()
    bf16 = catalog.lookup("meta-llama/Llama-3.1-405B-Instruct")
    fp8 = catalog.lookup("meta-llama/Llama-3.1-405B-Instruct-FP8")
    assert bf16.weight_bytes == bf16.parameters * 2
    quantized = fp8.parameters - fp8.unquantized_parameters
    assert fp8.weight_bytes == quantized + fp8.unquantized_parameters * 2
    awq = catalog.lookup("Qwen/Qwen2.5-72B-Instruct-AWQ")
    assert 0.25 < awq.weight_bytes / (awq.parameters * 2) < 0.30


def test_mxfp4_weights_match_the_model_card() -> None:
    """gpt-oss-120b's MXFP4 weights come to ~61 GiB (fits one 80 GB GPU, per the card)."""
    spec = model_catalog().lookup("openai/gpt-oss-120b")
    assert 60 * 2**30 < spec.weight_bytes < 62 * 2**30
    assert spec.bits_per_quantized_weight == 4.25


def test_int4_group_overhead() -> None:
    """AWQ int4 with group 128 costs 4 + 20/128 bits per weight (scale and zero point)."""
    spec = model_catalog().lookup("Qwen/Qwen2.5-72B-Instruct-AWQ")
    assert float(spec.bits_per_quantized_weight) == pytest.approx(4.15625)


def test_spec_rejects_inconsistent_numbers() -> None:
    """LLMSpec refuses KV heads that do not divide the heads and unknown dtypes."""
    with pytest.raises(ValueError, match="kv_heads must divide"):
        LLMSpec(id="x/y", parameters=1, layers=1, hidden_size=8, attention_heads=6,
                kv_heads=4, head_dim=2, max_context=16)
    with pytest.raises(ValueError, match="weight_dtype"):
        LLMSpec(id="x/y", parameters=1, layers=1, hidden_size=8, attention_heads=4,
                kv_heads=4, head_dim=2, max_context=16, weight_dtype="int3")


def test_from_mapping_rejects_unknown_keys() -> None:
    """from_mapping() names unknown keys instead of ignoring them."""
    with pytest.raises(ValueError, match=r"unknown keys \['layerz'\]"):
        LLMSpec.from_mapping({"id": "x/y", "layerz": 3})


def test_to_json_includes_weight_bytes() -> None:
    """to_json() carries every field and the derived weight size."""
    spec = model_catalog().lookup("Qwen/Qwen3-8B")
    data = spec.to_json()
    assert data["id"] == "Qwen/Qwen3-8B"
    assert data["weight_bytes"] == spec.weight_bytes
    assert data["kv_heads"] == 8


def test_empty_catalog_lookup_has_no_hint() -> None:
    """An empty catalog still raises CatalogLookupError, without a nearest-name hint."""
    with pytest.raises(CatalogLookupError) as info:
        ModelCatalog([]).lookup("anything")
    assert "nearest" not in str(info.value)


@pytest.mark.parametrize(
    ("model", "published"),
    [
        # DeepSeek-V3 README.md: 671B main model (the 685B checkpoint adds the 14B MTP module).
        ("deepseek-ai/DeepSeek-V3", 671e9),
        # Qwen3-30B-A3B model card: 30.5B total, 29.9B non-embedding.
        ("Qwen/Qwen3-30B-A3B", 30.5e9),
        ("Qwen/Qwen3-235B-A22B-Instruct-2507", 235e9),
        ("Qwen/Qwen3-14B", 14.8e9),
        # Kimi K2 README.md: 1T total.
        ("moonshotai/Kimi-K2-Instruct", 1.0e12),
        # Hugging Face page of Qwen2.5-VL-7B-Instruct: 8.29B.
        ("Qwen/Qwen2.5-VL-7B-Instruct", 8.29e9),
    ],
)
def test_moe_and_mla_counts_match_the_published_totals(model: str, published: float) -> None:
    """Counts round to the published totals at the precision they are published."""
    digits = len(f"{published:.3g}".replace(".", "").rstrip("0").split("e")[0])
    spec = model_catalog().lookup(model)
    assert float(f"{spec.parameters:.{digits}g}") == published


def test_qwen3_moe_non_embedding_count_matches_the_model_card() -> None:
    """Qwen3-30B-A3B: 29.9B parameters besides the embeddings, 3.3B activated per token."""
    spec = model_catalog().lookup("Qwen/Qwen3-30B-A3B")
    assert round((spec.parameters - spec.embedding_parameters) / 1e9, 1) == 29.9
    assert (spec.active_parameters or 0) // 10**8 == 33  # 3.35B, which the card truncates


def test_vision_parameters_are_part_of_the_total() -> None:
    """A vision-language model's encoder is in parameters and in its weights."""
    vl = model_catalog().lookup("Qwen/Qwen2.5-VL-7B-Instruct")
    text = model_catalog().lookup("Qwen/Qwen2.5-7B-Instruct")
    assert vl.vision_parameters == 676_550_144
    assert vl.parameters - vl.vision_parameters == text.parameters
    assert vl.weight_bytes == 2 * vl.parameters


def test_spec_rejects_half_an_mla_description() -> None:
    """MLA fields come together; MoE-only fields need experts."""
    base = model_catalog().lookup("Qwen/Qwen3-8B")
    with pytest.raises(ValueError, match=r"MLA attention needs .*\(missing qk_nope_head_dim\)"):
        replace(base, kv_lora_rank=512, qk_rope_head_dim=64, v_head_dim=128)
    with pytest.raises(ValueError, match="shared_experts is for a MoE model"):
        replace(base, shared_experts=1)
    with pytest.raises(ValueError, match="dense_layers must be at most layers"):
        replace(model_catalog().lookup("Qwen/Qwen3-30B-A3B"), dense_layers=49)
