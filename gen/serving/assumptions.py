"""What a ``gen fit --model`` question took by default, and how a service's defaults differ.

A question names a model and a device; every other setting the budget depends on has a
default. :func:`assumed_settings` lists the ones the caller left out, each with the value the
report budgeted with, why that value, and what an ``InferenceService`` that leaves the same key
out runs with instead (the service's defaults are read from its schema, so they cannot drift
from what lint and the rendered Deployment use: :class:`gen.serving.config.ServingConfig`).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from gen.models.service import Parallelism, Serving
from gen.serving.fit import FitReport
from gen.serving.memory import MIN_USEFUL_MODEL_LEN
from gen.serving.memory_profiles import PINNED_VLLM_VERSION, format_version
from gen.serving.model_catalog import LLMSpec

__all__ = ["Assumption", "assumed_settings"]


@dataclass(frozen=True)
class Assumption:
    """One setting a question left to its default.

    Attributes:
        setting: the setting's name (the ``gen fit`` option without ``--``, or ``dtype``,
            which has no option: vLLM's ``--dtype auto``).
        value: the value the report budgeted with, as text.
        why: where that value comes from.
        service: what a service that leaves the key out runs with.
    """

    setting: str
    value: str
    why: str
    service: str

    def to_json(self) -> dict[str, str]:
        """The entry of ``gen fit --json``'s ``assumed`` list."""
        return {"setting": self.setting, "value": self.value, "why": self.why,
                "service": self.service}


def _default(model: type[Serving | Parallelism], key: str) -> object:
    return model.model_fields[key].default


def _vllm_utilization(report: FitReport) -> str:
    from gen.serving.vllm_releases import VllmVersion, known_releases, release_for

    release = release_for(VllmVersion(report.vllm_version)) or known_releases()[0]
    return f"{release.gpu_memory_utilization:.2f}"


def _dtype(spec: LLMSpec) -> str:
    method = spec.quantization
    weights = spec.weight_dtype + (f", {method}" if method not in (None, spec.weight_dtype) else "")
    return (f"vLLM --dtype auto: the config's torch_dtype for activations; weights as the "
            f"checkpoint stores them ({weights})")


def _batch_default(report: FitReport) -> str:
    device = "MIG slice" if report.is_mig else "GPU"
    return f"vLLM {format_version(report.vllm_version)}'s default for this {device} " \
        "(get_batch_defaults)"


def _chosen(r: FitReport, m: LLMSpec) -> dict[str, tuple[str, str]]:
    """Each setting's option name -> (the value ``r`` budgeted with, why that value)."""
    return {
        "max-model-len": (str(r.max_model_len),
                          f"the model's whole context ({m.max_context:,} tokens)"),
        "dtype": (m.compute_dtype, _dtype(m)),
        "kv-cache-dtype": (r.kv_cache_dtype,
                           f"vLLM's default: the activation dtype ({m.compute_dtype})"),
        "gpu-memory-utilization": (
            f"{r.gpu_memory_utilization:.2f}",
            f"gen's default, below vLLM {format_version(r.vllm_version)}'s "
            f"{_vllm_utilization(r)} (room the profile run does not measure)"),
        "max-num-seqs": (str(r.max_num_seqs), _batch_default(r)),
        "max-num-batched-tokens": (str(r.max_num_batched_tokens), _batch_default(r)),
        "tp": (str(r.tensor_parallel), "the claim's GPUs (--gpus) ÷ pipeline stages"),
        "pp": (str(r.pipeline_parallel), "one stage"),
        "quantization": (r.quantization or m.quantization or "none",
                         "the checkpoint's own (vLLM reads its quantization_config)"),
        "enforce-eager": ("on" if r.enforce_eager else "off",
                          "CUDA graphs captured, their estimate subtracted"),
        "vllm-version": (format_version(r.vllm_version),
                         f"gen's pinned release ({format_version(PINNED_VLLM_VERSION)})"),
    }


# What an InferenceService that leaves the key out runs with, in the order of ``gen fit
# --help``; the defaults are the schema's own.
_SERVICE: dict[str, str] = {
    "max-model-len": "serving.max_model_len; left out, the largest that fits every device the "
    f"service can get (at least {MIN_USEFUL_MODEL_LEN:,} tokens), rendered as --max-model-len",
    "dtype": "the same: gen renders no --dtype",
    "kv-cache-dtype": f"serving.kv_cache_dtype, default {_default(Serving, 'kv_cache_dtype')}",
    "gpu-memory-utilization": "serving.gpu_memory_utilization, default "
    f"{_default(Serving, 'gpu_memory_utilization')}",
    "max-num-seqs": f"serving.max_num_seqs, default {_default(Serving, 'max_num_seqs')} (gen's, "
    "not vLLM's: a smaller sampler peak)",
    "max-num-batched-tokens": "serving.max_num_batched_tokens; left out, vLLM's default, the "
    "smallest among the devices the service can get",
    "tp": f"parallelism.tensor, default {_default(Parallelism, 'tensor')}",
    "pp": f"parallelism.pipeline, default {_default(Parallelism, 'pipeline')}",
    "quantization": "serving.quantization, default the checkpoint's own",
    "enforce-eager": "serving.enforce_eager, default off (llama.cpp and MLX capture none)",
    "vllm-version": "the release of serving.image's tag (or serving.image_of), else gen's pin",
}


def assumed_settings(report: FitReport, model: LLMSpec,
                     given: Collection[str]) -> list[Assumption]:
    """The settings of ``report`` that the question left out (``given``: the option names it
    set, without ``--``), in the order of ``gen fit --help``."""
    chosen = _chosen(report, model)
    return [Assumption(option, *chosen[option], service)
            for option, service in _SERVICE.items() if option not in given]
