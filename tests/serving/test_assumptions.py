"""Tests for gen.serving.assumptions: what a fit question took by default, and a service's."""

from __future__ import annotations

from gen.models.service import Serving
from gen.serving.assumptions import assumed_settings
from gen.serving.fit import FitReport, FitRequest, check_fit, resolve_device
from gen.serving.model_catalog import LLMSpec, model_catalog


def _report(max_model_len: int | None = None,
            max_num_seqs: int | None = None) -> tuple[LLMSpec, FitReport]:
    model = model_catalog().lookup("meta-llama/Llama-3.1-8B-Instruct")
    return model, check_fit(FitRequest(model=model, device=resolve_device("h100-sxm5-80gb"),
                                       max_model_len=max_model_len, max_num_seqs=max_num_seqs))


def test_every_setting_left_out_is_listed_with_the_value_budgeted() -> None:
    """With nothing given, each setting appears once, with the report's own value."""
    model, report = _report()
    assumed = {a.setting: a for a in assumed_settings(report, model, given=())}
    assert list(assumed) == ["max-model-len", "dtype", "kv-cache-dtype",
                             "gpu-memory-utilization", "max-num-seqs", "max-num-batched-tokens",
                             "tp", "pp", "quantization", "enforce-eager", "vllm-version"]
    assert assumed["max-model-len"].value == str(model.max_context) == str(report.max_model_len)
    assert assumed["max-num-seqs"].value == str(report.max_num_seqs)
    assert assumed["dtype"].value == model.compute_dtype


def test_given_settings_are_not_listed() -> None:
    """An option the caller set is not an assumption."""
    model, report = _report(max_model_len=32768, max_num_seqs=64)
    names = [a.setting for a in assumed_settings(report, model,
                                                 given=("max-model-len", "max-num-seqs"))]
    assert "max-model-len" not in names
    assert "max-num-seqs" not in names
    assert "kv-cache-dtype" in names


def test_a_service_default_that_differs_is_said() -> None:
    """vLLM's device default of max_num_seqs (1,024 on an H100) is not a service's: the schema's
    default is named, read from the schema itself."""
    model, report = _report()
    seqs = next(a for a in assumed_settings(report, model, given=())
                if a.setting == "max-num-seqs")
    assert report.max_num_seqs == 1024
    assert f"default {Serving.model_fields['max_num_seqs'].default}" in seqs.service
    length = next(a for a in assumed_settings(report, model, given=())
                  if a.setting == "max-model-len")
    assert "largest that fits" in length.service


def test_a_quantized_checkpoint_says_its_method() -> None:
    """Left to the checkpoint, the quantization shown is the checkpoint's."""
    model = model_catalog().lookup("meta-llama/Llama-3.1-405B-Instruct-FP8")
    report = check_fit(FitRequest(model=model, device=resolve_device("h200-sxm"), gpus=8))
    quant = next(a for a in assumed_settings(report, model, given=())
                 if a.setting == "quantization")
    assert quant.value == model.quantization == "fp8"
