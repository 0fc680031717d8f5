"""Tests for gen.serving.fit: the per-GPU memory budget of a vLLM worker."""

from __future__ import annotations

from dataclasses import fields, replace
from functools import partial
from typing import TYPE_CHECKING, TypedDict, Unpack

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gen.errors import CatalogLookupError
from gen.serving.fit import (
    GIB,
    KV_BLOCK_TOKENS,
    FitDevice,
    FitReport,
    FitRequest,
    ServingConfig,
    Settings,
    batch_defaults,
    check_fit,
    kv_cache_bytes,
    resolve_device,
)
from gen.serving.memory_profiles import PINNED_VLLM_VERSION
from gen.serving.model_catalog import LLMSpec, model_catalog

if TYPE_CHECKING:
    from gen.models import InferenceService

H100 = FitDevice(name="NVIDIA H100 80GB HBM3", memory_mib=81559)
MIG_1G_10GB = FitDevice(name="NVIDIA H100 80GB HBM3 MIG 1g.10gb", memory_mib=9984, is_mig=True)
MIG_3G_40GB = FitDevice(name="NVIDIA H100 80GB HBM3 MIG 3g.40gb", memory_mib=40320, is_mig=True)

MODELS = model_catalog().all()
_kv = partial(kv_cache_bytes, prefill_chunk=2048)
"""One sequence's KV bytes with vLLM's smallest ``max_num_batched_tokens`` tier as the chunk."""


def _model(name: str) -> LLMSpec:
    return model_catalog().lookup(name)


class _Changes(TypedDict, total=False):
    """The fields of a :class:`FitRequest` a test may set."""

    model: LLMSpec
    device: FitDevice
    gpus: int
    tensor_parallel: int | None
    pipeline_parallel: int
    max_model_len: int | None
    gpu_memory_utilization: float
    kv_cache_dtype: str
    max_num_seqs: int | None
    max_num_batched_tokens: int | None
    estimate_cudagraphs: bool
    enforce_eager: bool
    flashinfer_sampler: bool
    mxfp4_kernel: str | None
    quantization: str | None
    vllm_version: tuple[int, int, int]




def _request(**changes: Unpack[_Changes]) -> FitRequest:
    base = FitRequest(model=_model("meta-llama/Llama-3.1-8B-Instruct"), device=H100)
    return replace(base, **changes)


def _v0_21_pytorch(**changes: Unpack[_Changes]) -> FitRequest:
    """What the public logs behind the older hand-worked tests ran: vLLM 0.21's V1 runner with
    the PyTorch sampler."""
    return replace(_request(**changes), vllm_version=(0, 21, 0), flashinfer_sampler=False)


# ---- sanity anchors: hand-worked examples (arithmetic, not measured on hardware) ----


def test_llama_70b_bf16_does_not_fit_one_h100() -> None:
    """Llama 3.1 70B in bf16 (131 GiB of weights) does not fit one 80 GB H100."""
    report = check_fit(_request(model=_model("meta-llama/Llama-3.1-70B-Instruct")))
    assert not report.fits
    assert report.weights > report.budget
    assert "weights" in report.errors[0]


def test_llama_70b_fits_four_h100_with_tp4() -> None:
    """Llama 3.1 70B fits 4 × H100 with TP 4, with room for several 128K sequences."""
    report = check_fit(_request(model=_model("meta-llama/Llama-3.1-70B-Instruct"), gpus=4))
    assert report.fits, report.errors
    assert report.tensor_parallel == 4
    assert 30 * GIB < report.weights < 35 * GIB
    assert report.max_concurrent_sequences >= 3
    assert report.kv_bytes_per_token == 2 * 80 * 2 * 128 * 2  # 2 KV heads per GPU


def test_llama_70b_tp2_fails_the_full_context_check() -> None:
    """Llama 3.1 70B on 2 × H100 with 64 sequences loads but cannot hold one 128K sequence."""
    report = check_fit(_request(model=_model("meta-llama/Llama-3.1-70B-Instruct"), gpus=2,
                                max_num_seqs=64))
    assert not report.fits
    assert "To serve at least one request" in report.errors[0]
    assert 8_000 < report.max_model_len_fit < 32_000


def test_llama_70b_tp2_at_vllm_defaults_leaves_no_pool() -> None:
    """At vLLM's 1,024 sequences the sampler's peak alone takes the rest of 2 × H100."""
    report = check_fit(_v0_21_pytorch(model=_model("meta-llama/Llama-3.1-70B-Instruct"), gpus=2))
    assert not report.fits
    assert report.activation > 4 * GIB
    assert "exceed the budget" in report.errors[0]


def test_8b_does_not_fit_a_1g_10gb_slice() -> None:
    """An 8B bf16 model (15 GiB of weights) does not fit a 1g.10gb MIG slice."""
    report = check_fit(_request(device=MIG_1G_10GB))
    assert not report.fits
    assert "larger MIG profile" in report.errors[0]


def test_8b_fits_a_3g_40gb_slice() -> None:
    """An 8B bf16 model with its full 128K context fits a 3g.40gb-class slice."""
    report = check_fit(_request(device=MIG_3G_40GB))
    assert report.fits, report.errors
    assert report.max_num_seqs == 256  # MIG gets vLLM's small batch defaults


def test_llama_1b_fits_a_1g_10gb_slice() -> None:
    """Llama 3.2 1B fits a 1g.10gb slice even at its full 128K context."""
    report = check_fit(_request(model=_model("meta-llama/Llama-3.2-1B-Instruct"),
                                device=MIG_1G_10GB))
    assert report.fits, report.errors


def test_gpt_oss_120b_needs_fewer_sequences_on_one_h100() -> None:
    """gpt-oss-120b does not start on one H100 at vLLM's defaults (three public logs say so),
    but does with 64 sequences: the sampler's peak is what decides."""
    h100 = resolve_device("h100-sxm5-80gb")
    model = _model("openai/gpt-oss-120b")
    defaults = check_fit(_v0_21_pytorch(model=model, device=h100))
    assert not defaults.fits
    assert defaults.weights > 64 * GIB  # the mxfp4 kernels pad the experts (60.8 GiB unpadded)
    assert "exceed the budget" in defaults.errors[0]
    few = check_fit(_v0_21_pytorch(model=model, device=h100, max_num_seqs=64))
    assert few.fits, few.errors


def test_405b_fp8_fits_eight_h100() -> None:
    """Llama 3.1 405B FP8 fits one 8 × H100 node; the bf16 checkpoint does not."""
    fp8 = check_fit(_request(model=_model("meta-llama/Llama-3.1-405B-Instruct-FP8"), gpus=8,
                             max_model_len=32768))
    bf16 = check_fit(_request(model=_model("meta-llama/Llama-3.1-405B-Instruct"), gpus=8,
                              max_model_len=32768))
    assert fp8.fits, fp8.errors
    assert not bf16.fits


# ---- KV-cache arithmetic ----


def test_kv_formula_per_token() -> None:
    """KV per token per GPU is 2 · layers/PP · kv_heads/TP · head_dim · bytes."""
    llama = _model("meta-llama/Llama-3.1-8B-Instruct")
    assert _kv(llama, 16) == 16 * 2 * 32 * 8 * 128 * 2
    assert _kv(llama, 16, tensor_parallel=2) == 16 * 2 * 32 * 4 * 128 * 2
    assert _kv(llama, 16, pipeline_parallel=2) == 16 * 2 * 16 * 8 * 128 * 2
    assert _kv(llama, 16, kv_cache_dtype="fp8") == 16 * 2 * 32 * 8 * 128


def test_kv_heads_are_replicated_beyond_tp() -> None:
    """With TP above the KV-head count each GPU still holds one KV head."""
    qwen = _model("Qwen/Qwen2.5-7B-Instruct")  # 4 KV heads
    assert _kv(qwen, 16, tensor_parallel=4) == _kv(
        qwen, 16, tensor_parallel=8
    )


def test_kv_is_allocated_in_blocks() -> None:
    """One token costs a whole 16-token block."""
    llama = _model("meta-llama/Llama-3.1-8B-Instruct")
    assert _kv(llama, 1) == _kv(llama, KV_BLOCK_TOKENS)
    assert _kv(llama, KV_BLOCK_TOKENS + 1) == _kv(llama, 2 * KV_BLOCK_TOKENS)


def test_sliding_window_layers_stop_growing() -> None:
    """gpt-oss's sliding layers keep only window + chunk tokens, so long contexts cost less."""
    oss = _model("openai/gpt-oss-20b")
    full_only = replace(oss, sliding_window=None, sliding_window_layers=0)
    assert _kv(oss, 131072) < _kv(full_only, 131072)
    assert _kv(oss, 64) == _kv(full_only, 64)


# ---- parallelism rules ----


def test_tp_must_divide_attention_heads() -> None:
    """TP 3 does not divide Llama's 32 heads: an error quoting vLLM's message."""
    report = check_fit(_request(gpus=3))
    assert not report.fits
    assert any("must be divisible by tensor parallel size (3)" in e for e in report.errors)


def test_tp_must_be_compatible_with_kv_heads() -> None:
    """Phi-4's 10 KV heads allow TP 1 and 2 but not 4."""
    phi = _model("microsoft/phi-4")
    assert check_fit(_request(model=phi, gpus=2)).fits
    report = check_fit(_request(model=phi, gpus=4, max_model_len=4096))
    assert any("KV heads cannot be split" in e for e in report.errors)


def test_awq_shards_must_hold_whole_groups() -> None:
    """An AWQ MLP shard must hold whole 128-wide groups: Qwen 72B AWQ pads to 29696 for TP 2."""
    awq = _model("Qwen/Qwen2.5-72B-Instruct-AWQ")
    assert check_fit(_request(model=awq, gpus=2)).fits
    unpadded = replace(awq, intermediate_size=29568)
    report = check_fit(_request(model=unpadded, gpus=2))
    assert any("whole awq groups" in e for e in report.errors)


def test_tp_times_pp_must_fit_the_claim() -> None:
    """TP·PP above the GPUs in the claim is an error."""
    report = check_fit(_request(gpus=2, tensor_parallel=2, pipeline_parallel=2))
    assert any("needs more GPUs" in e for e in report.errors)


def test_pipeline_parallel_splits_layers() -> None:
    """PP 2 halves the weights and the KV per GPU of a 70B model."""
    one = check_fit(_request(model=_model("meta-llama/Llama-3.1-70B-Instruct"), gpus=4))
    two = check_fit(_request(model=_model("meta-llama/Llama-3.1-70B-Instruct"), gpus=4,
                             tensor_parallel=2, pipeline_parallel=2))
    assert two.fits, two.errors
    assert two.kv_bytes_per_token == one.kv_bytes_per_token  # TP2·PP2 vs TP4: same share
    assert any("pipeline parallelism" in w for w in two.warnings)


def test_default_tp_is_gpus_over_pp() -> None:
    """Without --tp, TP is the GPUs divided by PP."""
    assert _request(gpus=8).tp == 8
    assert _request(gpus=8, pipeline_parallel=2).tp == 4


def test_unused_gpus_warn() -> None:
    """A claim with more GPUs than TP·PP uses warns about the idle ones."""
    report = check_fit(_request(gpus=4, tensor_parallel=2))
    assert report.fits
    assert any("uses only 2 of the 4 GPUs" in w for w in report.warnings)


@pytest.mark.parametrize(("gpus", "tp", "pp"), [(2, 1, 1), (2, 2, 1), (1, 1, 1)])
def test_mig_allows_only_tp1_pp1_one_device(gpus: int, tp: int, pp: int) -> None:
    """On a MIG slice only one device with TP = PP = 1 is allowed."""
    model = _model("meta-llama/Llama-3.2-1B-Instruct")
    report = check_fit(_request(model=model, device=MIG_3G_40GB, gpus=gpus, tensor_parallel=tp,
                                pipeline_parallel=pp))
    mig_errors = [e for e in report.errors if "MIG slice" in e]
    assert bool(mig_errors) == ((gpus, tp, pp) != (1, 1, 1))


def test_settings_are_validated() -> None:
    """Out-of-range utilization, lengths above the model maximum and bad sizes are errors."""
    assert any("gpu_memory_utilization" in e
               for e in check_fit(_request(gpu_memory_utilization=1.5)).errors)
    assert any("max_position_embeddings" in e
               for e in check_fit(_request(max_model_len=200_000)).errors)
    assert any("at least 1" in e for e in check_fit(_request(tensor_parallel=0)).errors)
    assert any("gpus must be" in e for e in check_fit(_request(gpus=0)).errors)


def test_batch_defaults_follow_vllm() -> None:
    """≥ 70 GiB non-A100 devices get 1024/8192; A100s, small devices and MIG get 256/2048."""
    assert batch_defaults(H100) == (1024, 8192)
    assert batch_defaults(replace(H100, name="NVIDIA A100-SXM4-80GB")) == (256, 2048)
    assert batch_defaults(replace(H100, memory_mib=46068)) == (256, 2048)
    assert batch_defaults(MIG_3G_40GB) == (256, 2048)


def test_tight_utilization_warns_about_cuda_graphs() -> None:
    """Without the profiler's estimate, a utilization leaving too little outside the budget
    warns about CUDA graphs; vLLM 0.21 subtracts the estimate instead."""
    model = _model("meta-llama/Llama-3.2-1B-Instruct")
    old = check_fit(_request(device=MIG_1G_10GB, model=model, gpu_memory_utilization=0.99,
                             estimate_cudagraphs=False))
    assert any("CUDA graphs" in w for w in old.warnings)
    assert old.cuda_graphs == 0
    new = check_fit(_request(device=MIG_1G_10GB, model=model, gpu_memory_utilization=0.99))
    assert not any("CUDA graphs" in w for w in new.warnings)
    assert new.cuda_graphs > 0
    assert new.kv_cache_available == old.kv_cache_available - new.cuda_graphs
    eager = check_fit(_request(device=MIG_1G_10GB, model=model, enforce_eager=True))
    assert eager.cuda_graphs == 0


def test_unified_memory_warns() -> None:
    """A device that shares memory with the CPU gets a warning."""
    report = check_fit(_request(device=replace(H100, unified_memory=True)))
    assert any("shares its memory" in w for w in report.warnings)


def test_report_json_has_documented_keys() -> None:
    """to_json() has the documented, versioned keys."""
    data = check_fit(_request()).to_json()
    assert data["schema_version"] == 1
    assert data["fits"] is True
    assert data["errors"] == []
    assert set(data["per_gpu_bytes"]) == {
        "budget", "weights", "non_torch", "activation", "cuda_graphs", "overhead",
        "kv_cache_min", "kv_cache_available", "headroom",
    }
    assert {t["name"] for t in data["terms"]} >= {
        "cuda_total", "budget", "weights", "activation", "non_torch", "cuda_graphs",
        "kv_cache_available", "kv_cache_min",
    }
    assert all(t["source"] for t in data["terms"])
    assert data["max_model_len_fit"] == 131072


def test_resolve_device_whole_gpu_and_mig() -> None:
    """resolve_device() reads the GPU catalog, and the slice's memory for a MIG profile."""
    gpu = resolve_device("h100-sxm5-80gb")
    slice_ = resolve_device("h100-sxm5-80gb", "3g.40gb")
    assert not gpu.is_mig and slice_.is_mig
    assert slice_.memory_mib < gpu.memory_mib


def test_resolve_device_unknown_mig_profile() -> None:
    """An unknown MIG profile or a GPU without MIG raises CatalogLookupError."""
    with pytest.raises(CatalogLookupError, match=r"no MIG profile '9g\.99gb'"):
        resolve_device("h100-sxm5-80gb", "9g.99gb")
    with pytest.raises(CatalogLookupError, match="does not support MIG"):
        resolve_device("l4", "1g.6gb")


# ---- properties ----

_valid_models = st.sampled_from(MODELS)
_memory = st.integers(min_value=1024, max_value=300 * 1024)
_utilization = st.sampled_from([0.5, 0.8, 0.9, 0.92, 0.95])


def _legal_tp(model: LLMSpec) -> list[int]:
    return [tp for tp in (1, 2, 4, 8) if model.attention_heads % tp == 0
            and (model.kv_heads % tp == 0 or tp % model.kv_heads == 0)
            and (model.intermediate_size or 0) % tp == 0]


@settings(max_examples=150, deadline=None)
@given(model=_valid_models, small=_memory, extra=_memory, util=_utilization, data=st.data())
def test_more_memory_never_breaks_a_fit(
    model: LLMSpec, small: int, extra: int, util: float, data: st.DataObject
) -> None:
    """With the batch sizes fixed, a device with more memory never turns fits into not-fits."""
    tp = data.draw(st.sampled_from(_legal_tp(model)))
    length = data.draw(st.integers(min_value=1, max_value=model.max_context))
    before = FitRequest(model=model, device=FitDevice("gpu", small), gpus=tp,
                        max_model_len=length, gpu_memory_utilization=util,
                        max_num_seqs=256, max_num_batched_tokens=2048)
    after = replace(before, device=FitDevice("gpu", small + extra))
    if check_fit(before).fits:
        assert check_fit(after).fits


@settings(max_examples=150, deadline=None)
@given(model=_valid_models, memory=_memory, util=_utilization, data=st.data())
def test_longer_context_never_makes_it_fit(
    model: LLMSpec, memory: int, util: float, data: st.DataObject
) -> None:
    """A longer max_model_len never turns not-fits into fits."""
    short = data.draw(st.integers(min_value=1, max_value=model.max_context))
    long = data.draw(st.integers(min_value=short, max_value=model.max_context))
    before = FitRequest(model=model, device=FitDevice("gpu", memory), max_model_len=short,
                        gpu_memory_utilization=util)
    if not check_fit(before).fits:
        assert not check_fit(replace(before, max_model_len=long)).fits


@settings(max_examples=150, deadline=None)
@given(model=_valid_models, memory=_memory, data=st.data())
def test_fp8_kv_never_needs_more(model: LLMSpec, memory: int, data: st.DataObject) -> None:
    """An fp8 KV cache never needs more memory than auto, so it fits whenever auto fits."""
    length = data.draw(st.integers(min_value=1, max_value=model.max_context))
    auto = FitRequest(model=model, device=FitDevice("gpu", memory), max_model_len=length)
    fp8 = replace(auto, kv_cache_dtype="fp8")
    auto_report, fp8_report = check_fit(auto), check_fit(fp8)
    assert fp8_report.kv_cache_min <= auto_report.kv_cache_min
    assert fp8_report.max_model_len_fit >= auto_report.max_model_len_fit
    if auto_report.fits:
        assert fp8_report.fits


@settings(max_examples=150, deadline=None)
@given(model=_valid_models, memory=_memory, util=_utilization, fp8=st.booleans())
def test_reported_max_model_len_is_the_largest_that_fits(
    model: LLMSpec, memory: int, util: float, fp8: bool
) -> None:
    """max_model_len_fit fits, and one more token does not (unless capped at max_context)."""
    request = FitRequest(model=model, device=FitDevice("gpu", memory),
                         gpu_memory_utilization=util, kv_cache_dtype="fp8" if fp8 else "auto")
    best = check_fit(request).max_model_len_fit
    if best == 0:
        assert not check_fit(replace(request, max_model_len=1)).fits
        return
    assert check_fit(replace(request, max_model_len=best)).fits
    if best < model.max_context:
        assert not check_fit(replace(request, max_model_len=best + 1)).fits


@settings(max_examples=100, deadline=None)
@given(model=_valid_models, memory=_memory, data=st.data())
def test_concurrency_is_what_the_kv_budget_holds(
    model: LLMSpec, memory: int, data: st.DataObject
) -> None:
    """max_concurrent_sequences full sequences fit the KV budget and one more does not."""
    length = data.draw(st.integers(min_value=1, max_value=model.max_context))
    report = check_fit(FitRequest(model=model, device=FitDevice("gpu", memory),
                                  max_model_len=length))
    n = report.max_concurrent_sequences
    assert n * report.kv_cache_min <= max(0, report.kv_cache_available)
    assert (n + 1) * report.kv_cache_min > report.kv_cache_available
    assert report.fits == (n >= 1 and not report.errors)


def test_a_service_asks_with_its_own_parallelism_and_serving_settings() -> None:
    """FitRequest.for_service carries the service's settings; callers may override the
    GPU count and the KV-cache precision (one worker per Apple GPU, no fp8 KV cache)."""
    from gen.models import InferenceService

    service = InferenceService.model_validate({
        "kind": "InferenceService", "name": "llama", "namespace": "inference",
        "model": "meta-llama/Llama-3.1-8B-Instruct", "clusters": ["c"],
        "gpu": {"gpu_class": "h100", "count": 4}, "parallelism": {"tensor": 2, "pipeline": 2},
        "serving": {"gpu_memory_utilization": 0.85, "kv_cache_dtype": "fp8",
                    "max_num_seqs": 32, "max_num_batched_tokens": 4096},
    })
    model = _model("meta-llama/Llama-3.1-8B-Instruct")
    request = FitRequest.for_service(service, model, H100, max_model_len=8192)
    assert request == FitRequest(
        model=model, device=H100, gpus=4, tensor_parallel=2, pipeline_parallel=2,
        max_model_len=8192, gpu_memory_utilization=0.85, kv_cache_dtype="fp8",
        max_num_seqs=32, max_num_batched_tokens=4096,
    )
    own = FitRequest.for_service(service, model, H100, max_model_len=None, gpus=1,
                                 kv_cache_dtype="auto")
    assert (own.gpus, own.kv_cache_dtype, own.max_model_len) == (1, "auto", None)


def test_the_three_records_share_one_settings_record() -> None:
    """ServingConfig, FitRequest and FitReport extend Settings without restating a field, and
    the JSON's settings and parallelism blocks are Settings' fields, in declaration order."""
    names = [f.name for f in fields(Settings)]
    for record in (ServingConfig, FitRequest, FitReport):
        assert issubclass(record, Settings)
        assert not set(record.__annotations__) & set(names), record
    data = check_fit(_request(tensor_parallel=1, max_model_len=4096)).to_json()
    assert list(data["parallelism"]) == ["gpus", *(n for n in names if n in data["parallelism"])]
    assert [*data["settings"], *list(data["parallelism"])[1:]] == names
    assert data["settings"]["vllm_version"] == ".".join(map(str, PINNED_VLLM_VERSION))


def test_a_report_holds_its_settings_resolved() -> None:
    """vLLM's defaults the request left None are filled in in the report."""
    report = check_fit(_request(gpus=2))
    assert (report.tensor_parallel, report.max_model_len) == (2, 131072)
    assert None not in (report.max_num_seqs, report.max_num_batched_tokens)
    assert report.setting_values().keys() == Settings().setting_values().keys()


def test_an_unknown_compute_capability_is_said() -> None:
    """A device without a compute capability is budgeted as ASSUMED_COMPUTE_CAPABILITY's, and
    the report says so; a catalog GPU never is."""
    assert any("compute capability is unknown" in w for w in check_fit(_request()).warnings)
    known = replace(H100, compute_capability="9.0")
    report = check_fit(_request(device=known))
    assert not any("compute capability" in w for w in report.warnings)
    assert report.kv_cache_available == check_fit(_request()).kv_cache_available



def _service(serving: dict[str, object]) -> InferenceService:
    from gen.models import InferenceService

    return InferenceService.model_validate({
        "kind": "InferenceService", "name": "llama", "model": "meta-llama/Llama-3.1-8B-Instruct",
        "clusters": ["c"], "gpu": {"gpu_class": "h100"}, "serving": serving,
    })


B200 = FitDevice(name="NVIDIA B200", memory_mib=183359, compute_capability="10.0")
L4 = FitDevice(name="NVIDIA L4", memory_mib=23034, compute_capability="8.9")


@pytest.mark.parametrize(("image", "devices", "tokens"), [
    (None, (B200,), 16384),
    (None, (H100,), 8192),
    (None, (L4,), 2048),
    (None, (B200, H100), 8192),  # different tiers: the smaller, which holds on both
    (None, (), 2048),  # no device: the release's smallest tier
    ("vllm/vllm-openai:v0.27.1", (B200,), 8192),  # the ≥ 160 GiB tier arrived in 0.28.0
])
def test_the_rendered_batch_is_what_the_release_chooses(
        image: str | None, devices: tuple[FitDevice, ...], tokens: int) -> None:
    """max_num_batched_tokens left out: vLLM's choice for the service's devices and image."""
    serving: dict[str, object] = {} if image is None else {"image": image}
    config = ServingConfig.of(_service(serving), devices)
    assert config.max_num_batched_tokens == tokens
    assert ServingConfig.of(_service({**serving, "max_num_batched_tokens": 512}),
                            devices).max_num_batched_tokens == 512


def test_the_config_carries_the_image_release() -> None:
    """A service's ServingConfig, and the requests made from it, budget its image's release;
    a mirror declared with image_of counts as its upstream tag."""
    assert ServingConfig.of(_service({"image": "vllm/vllm-openai:v0.28.0-cu129"})
                            ).vllm_version == (0, 28, 0)
    mirror = _service({"image": "registry.example.com/vllm:prod",
                       "image_of": "vllm/vllm-openai:v0.29.0"})
    config = ServingConfig.of(mirror)
    request = FitRequest.from_config(config, _model("meta-llama/Llama-3.1-8B-Instruct"), H100,
                                     gpus=1, max_model_len=8192)
    assert request.vllm_version == (0, 29, 0)
    unknown = _service({"image": "registry.example.com/vllm:prod"})
    assert ServingConfig.of(unknown).vllm_version == PINNED_VLLM_VERSION

# ---- vLLM 0.21's terms ----


def test_budget_is_the_cuda_visible_total() -> None:
    """vLLM multiplies the total CUDA reports, not NVML's, by gpu_memory_utilization."""
    h100 = resolve_device("h100-sxm5-80gb")
    assert h100.cuda_total_mib is not None and h100.cuda_total_mib < h100.memory_mib
    report = check_fit(_request(device=h100))
    assert report.budget == int(h100.cuda_total_bytes * 0.90)
    assert report.cuda_total == h100.cuda_total_bytes


def test_a_gpu_without_a_log_gets_the_documented_reserve() -> None:
    """No logged CUDA total: NVML's total less gen.nvidia.gpus.CUDA_RESERVE_MIB."""
    from gen.nvidia.gpus import CUDA_RESERVE_MIB

    l40s = resolve_device("l40s")
    assert l40s.cuda_total_mib == l40s.memory_mib - CUDA_RESERVE_MIB
    assert not l40s.cuda_total_logged
    assert resolve_device("h100-sxm5-80gb").cuda_total_logged
    assert "no vLLM log" in check_fit(_request(device=l40s)).terms[0].source


def test_sampler_peak_grows_with_sequences_and_vocabulary() -> None:
    """At vLLM's 1,024 sequences the sampler, not the forward pass, sets the peak."""
    many = check_fit(_v0_21_pytorch(max_num_seqs=1024))
    few = check_fit(_v0_21_pytorch(max_num_seqs=8))
    assert many.activation > few.activation
    assert many.activation == int(9.75 * 1024 * 128256 * 4)
    flashinfer = check_fit(_request(max_num_seqs=1024, vllm_version=(0, 21, 0),
                                    flashinfer_sampler=True))
    assert flashinfer.activation < many.activation


def test_mxfp4_padding_depends_on_the_kernel() -> None:
    """Marlin pads gpt-oss's experts more than Triton; bf16 models are never padded."""
    model = _model("openai/gpt-oss-120b")
    weights = {k: check_fit(_request(model=model, mxfp4_kernel=k)).weights
               for k in ("marlin", "triton", "flashinfer")}
    assert weights["marlin"] > weights["triton"] > model.weight_bytes
    assert weights["flashinfer"] > weights["marlin"]
    llama = check_fit(_request(mxfp4_kernel="marlin"))
    assert llama.weights == _model("meta-llama/Llama-3.1-8B-Instruct").weight_bytes


def test_mla_caches_one_latent_per_token_on_every_rank() -> None:
    """An MLA model's KV is (kv_lora_rank + rope dim) per layer, not split by TP."""
    mla = replace(_model("meta-llama/Llama-3.1-8B-Instruct"), kv_lora_rank=512,
                  qk_rope_head_dim=64, qk_nope_head_dim=128, v_head_dim=128)
    one = _kv(mla, 16)
    assert one == 16 * 32 * (512 + 64) * 2
    assert _kv(mla, 16, tensor_parallel=4) == one
    assert _kv(mla, 16, kv_cache_dtype="fp8_ds_mla") == one // 2


def test_online_fp8_halves_a_16_bit_checkpoint() -> None:
    """--quantization fp8 on a bf16 checkpoint: 1-byte linear layers, 16-bit embeddings."""
    bf16 = check_fit(_request())
    fp8 = check_fit(_request(quantization="fp8"))
    assert fp8.fits and fp8.quantization == "fp8"
    assert 0.5 * bf16.weights < fp8.weights < 0.6 * bf16.weights


def test_in_flight_bitsandbytes_stores_nf4() -> None:
    """--quantization bitsandbytes on a bf16 checkpoint: vLLM quantizes it in flight to NF4
    (4 bits, an 8-bit absmax per 64 weights, a 32-bit scale per 256 blocks); the embeddings
    stay 16-bit. An AWQ checkpoint keeps its own method."""
    bf16 = check_fit(_request())
    nf4 = check_fit(_request(quantization="bitsandbytes"))
    assert nf4.fits and nf4.quantization == "bitsandbytes"
    model = _request().model
    embeddings = model.embedding_parameters * 2
    linear = model.parameters - model.embedding_parameters
    assert nf4.weights == -(-linear * (4 * 16384 + 2048 + 32) // (8 * 16384)) + embeddings
    assert 0.25 * bf16.weights < nf4.weights < 0.4 * bf16.weights
    awq = check_fit(_request(model=_model("Qwen/Qwen2.5-72B-Instruct-AWQ"), gpus=2,
                             quantization="bitsandbytes"))
    assert any("refuses --quantization bitsandbytes" in e for e in awq.errors)


def test_a_quantization_the_checkpoint_does_not_have_is_refused() -> None:
    """vLLM refuses --quantization awq for a bf16 checkpoint and gptq for an AWQ one."""
    report = check_fit(_request(quantization="awq"))
    assert not report.fits
    assert "only fp8 and bitsandbytes quantize" in report.errors[0]
    awq = check_fit(_request(model=_model("Qwen/Qwen2.5-72B-Instruct-AWQ"), gpus=2,
                             quantization="gptq"))
    assert any("refuses --quantization gptq" in e for e in awq.errors)
    assert check_fit(_request(model=_model("Qwen/Qwen2.5-72B-Instruct-AWQ"), gpus=2,
                              quantization="awq_marlin", max_model_len=8192)).fits


def test_every_vllm_kv_cache_dtype_is_accepted() -> None:
    """vLLM's CacheDType choices; the 8-bit ones halve the bf16 KV."""
    from gen.serving.memory import KV_CACHE_DTYPES

    auto = check_fit(_request()).kv_bytes_per_token
    for dtype in KV_CACHE_DTYPES:
        report = check_fit(_request(kv_cache_dtype=dtype))
        assert not any("kv_cache_dtype" in e for e in report.errors), dtype
        assert report.kv_bytes_per_token in (auto, auto // 2), dtype
    assert any("kv_cache_dtype" in e for e in check_fit(_request(kv_cache_dtype="int3")).errors)


def test_the_failing_terms_are_named() -> None:
    """A model that does not fit says which terms used the budget."""
    report = check_fit(_request(model=_model("openai/gpt-oss-120b"),
                                device=resolve_device("h100-sxm5-80gb"), max_model_len=131072))
    assert not report.fits
    for word in ("weights", "activation", "non-torch", "CUDA graphs", "budget"):
        assert word in report.errors[0]


# ---- sanity over the whole catalog ----

_ALL_GPUS = tuple(resolve_device(g.id) for g in __import__(
    "gen.nvidia.gpus", fromlist=["gpu_catalog"]).gpu_catalog().all())


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.id)
def test_every_model_on_every_gpu_is_sane(model: LLMSpec) -> None:
    """No negative pool when it fits; KV monotone in context; the reported longest context
    fits and one block more does not; more utilization never shrinks the pool."""
    for device in _ALL_GPUS:
        for tp in (t for t in (1, 2, 4, 8) if model.attention_heads % t == 0):
            request = FitRequest(model=model, device=device, gpus=tp, max_model_len=4096)
            report = check_fit(request)
            if report.fits:
                assert report.kv_cache_available >= report.kv_cache_min >= 0
                assert report.headroom >= 0
            assert report.budget <= device.cuda_total_bytes
            best = report.max_model_len_fit
            if best:
                at = check_fit(replace(request, max_model_len=best))
                assert at.kv_cache_min <= at.kv_cache_available
                if best < model.max_context:
                    over = check_fit(replace(request, max_model_len=best + KV_BLOCK_TOKENS))
                    assert over.kv_cache_min > over.kv_cache_available
            lengths = sorted({min(n, model.max_context) for n in (1024, 8192, 32768, 10**7)})
            needs = [_kv(model, n, tensor_parallel=tp) for n in lengths]
            assert needs == sorted(needs)
            more = check_fit(replace(request, gpu_memory_utilization=0.95))
            assert more.kv_cache_available >= report.kv_cache_available


# ---- the budget follows the vLLM release (gen.serving.memory_profiles) ----


def test_v2_runner_subtracts_no_cuda_graph_estimate_before_0_29() -> None:
    """A dense model runs on Model Runner V2 from 0.23 (Llama), whose estimate is 0 until 0.29;
    the V1 runner of 0.21 subtracts its own."""
    graphs = {v: check_fit(_request(vllm_version=v)).cuda_graphs
              for v in ((0, 21, 0), (0, 27, 1), (0, 29, 0))}
    assert graphs[(0, 21, 0)] > 0
    assert graphs[(0, 27, 1)] == 0
    assert graphs[(0, 29, 0)] == graphs[(0, 21, 0)]
    moe = check_fit(_request(model=_model("openai/gpt-oss-20b"), vllm_version=(0, 27, 1)))
    assert moe.cuda_graphs > 0  # MoE stays on the V1 runner until 0.29
    source = check_fit(_request(vllm_version=(0, 27, 1))).terms[5].source
    assert "v2 model runner estimates no CUDA graphs" in source


def test_data_centre_blackwell_captures_more_graphs_from_0_28() -> None:
    """0.28 captures up to 1024 tokens on SM100: gen doubles the estimate there (unvalidated)."""
    b200 = resolve_device("b200")
    model = _model("openai/gpt-oss-20b")  # V1 runner in 0.27–0.28
    old = check_fit(_request(model=model, device=b200, vllm_version=(0, 27, 1)))
    new = check_fit(_request(model=model, device=b200, vllm_version=(0, 28, 0)))
    assert new.cuda_graphs == 2 * old.cuda_graphs
    h100 = check_fit(_request(model=model, vllm_version=(0, 28, 0)))
    assert h100.cuda_graphs == old.cuda_graphs


def test_flashinfer_sampler_is_the_default_where_vllm_uses_it() -> None:
    """Compute capability ≥ 8.0 takes FlashInfer's sampler; from 0.33 not with ≤ 16 SMs."""
    seqs = 256
    big = check_fit(_request(max_num_seqs=seqs, max_num_batched_tokens=seqs,
                             vllm_version=(0, 21, 0)))
    assert "FlashInfer" in big.terms[3].source
    assert big.activation == int(3.0 * seqs * 128256 * 4)
    t4 = check_fit(_request(device=resolve_device("t4"), max_num_seqs=seqs,
                            vllm_version=(0, 21, 0), max_model_len=4096))
    assert "PyTorch" in t4.terms[3].source
    slice_1g = resolve_device("h100-sxm5-80gb", "1g.10gb")
    assert slice_1g.multiprocessors == 16
    small = _model("meta-llama/Llama-3.2-1B-Instruct")
    at_033 = check_fit(_request(device=slice_1g, model=small, vllm_version=(0, 33, 0),
                                max_model_len=4096))
    at_032 = check_fit(_request(device=slice_1g, model=small, vllm_version=(0, 32, 0),
                                max_model_len=4096))
    assert "PyTorch" in at_033.terms[3].source and "FlashInfer" in at_032.terms[3].source


def test_v2_sampler_warm_up_of_0_33_costs_more_than_0_32() -> None:
    """0.33's second, fp32 warm-up pass is budgeted as the full sampler; 0.22–0.32's V2 dummy
    pass as the two buffers fitted on 0.27 logs."""
    at_032 = check_fit(_request(max_num_seqs=1024, vllm_version=(0, 32, 0)))
    at_033 = check_fit(_request(max_num_seqs=1024, vllm_version=(0, 33, 0)))
    assert at_032.activation == int(2.0 * 1024 * 128256 * 4)
    assert at_033.activation == int(3.0 * 1024 * 128256 * 4)
    assert "0.27 counts" not in at_033.terms[4].source
    assert "free-memory drop" in at_033.terms[4].source


def test_the_pinned_release_is_the_default() -> None:
    """FitRequest answers for the vLLM gen pins unless told otherwise."""
    assert _request().vllm_version == (0, 33, 0)
