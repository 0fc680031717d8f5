"""Does a model fit a GPU or a MIG slice under vLLM? The per-GPU memory budget.

The arithmetic is that of the vLLM release that runs (``FitRequest.vllm_version``, default the
release gen pins), whose differences are rows of :mod:`gen.serving.memory_profiles`:
``Worker.determine_available_memory`` in ``vllm/v1/worker/gpu_worker.py`` takes a snapshot of
the device after NCCL is initialised, asks for ``requested = total × gpu_memory_utilization``
where ``total`` is what CUDA reports (``torch.cuda.mem_get_info``, logged as "Free memory on
device (free/total GiB)"), runs ``GPUModelRunner.profile_run`` (a dummy batch of
``max_num_batched_tokens`` tokens spread over ``min(max_num_seqs, max_num_batched_tokens)``
requests, then ``_dummy_sampler_run`` on one hidden state per request) and, unless
``enforce_eager``, ``profile_cudagraph_memory``; what is left is the KV pool::

    budget       = CUDA-visible total × gpu_memory_utilization   (a MIG slice: the slice)
    weights      = the model's weights on the worst pipeline stage ÷ TP, with the MoE kernels'
                   padding (mxfp4 experts, by kernel: Marlin, Triton, FlashInfer)
    activation   = the profile run's torch peak: max(forward pass, sampler pass)
    non-torch    = memory outside PyTorch's allocator that grows during the profile run
    CUDA graphs  = the model runner's CUDA-graph estimate where the release makes one
                   (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS, on from 0.21.0; Model Runner V2
                   only from 0.29.0; nothing when enforce_eager)
    KV pool      = budget − weights − activation − non-torch − CUDA graphs
    fits         ⇔ KV pool ≥ the KV of one full max_model_len sequence, and the parallelism is legal

Each term and constant lives, with its source, in :mod:`gen.serving.memory`; the budget's
numbers and prose in :mod:`gen.serving.budget`; the question in :mod:`gen.serving.config`.

:func:`check_fit` is pure and never raises for "does not fit": the answer is in the report,
term by term (:meth:`FitReport.terms`), so it can be compared line by line with vLLM's log.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from gen.errors import CatalogLookupError
from gen.nvidia.gpus import gpu_catalog
from gen.serving.budget import (
    BudgetTerm,
    Workers,
    budget_of,
    budget_terms,
    engine_of,
    gib,
    kv_fit,
    kv_terms,
    memory_errors,
    workers_of,
)
from gen.serving.config import (
    FitDevice,
    FitRequest,
    ServingConfig,
    Settings,
    batch_defaults,
)
from gen.serving.memory import (
    ACTIVATION_LOGIT_BYTES,
    ASSUMED_COMPUTE_CAPABILITY,
    CUDA_GRAPH_BYTES,
    GIB,
    KV_BLOCK_TOKENS,
    KV_CACHE_DTYPES,
    NCCL_BYTES,
    NON_TORCH_BYTES,
    effective_model,
    kv_cache_bytes,
    quantization_errors,
    scheduler_errors,
)

__all__ = [  # with the names of gen.serving.config, .budget and .memory that its callers read
    "ACTIVATION_LOGIT_BYTES", "CUDA_GRAPH_BYTES", "GIB", "KV_BLOCK_TOKENS", "NCCL_BYTES",
    "NON_TORCH_BYTES", "BudgetTerm", "FitDevice", "FitReport", "FitRequest", "ServingConfig",
    "Settings", "batch_defaults", "check_fit", "kv_cache_bytes", "resolve_device",
]


@dataclass(frozen=True, kw_only=True)
class FitReport(Settings):
    """The answer of :func:`check_fit`: the :class:`Settings` it budgeted with, resolved
    (``tensor_parallel``, ``max_model_len``, ``max_num_seqs``, ``max_num_batched_tokens``
    never None), and the budget. Byte figures are per GPU (per worker).

    Attributes:
        fits: the model starts and serves one full ``max_model_len`` sequence.
        errors: why it does not (parallelism rules, memory), empty when it fits.
        warnings: doubts that do not change the answer.
        model: the model's id.
        device: the device's name (:attr:`FitDevice.name`).
        device_memory: the device's memory as NVML reports it.
        is_mig: the device is a MIG slice.
        gpus: GPUs in the claim.
        budget: ``gpu_memory_utilization`` × the CUDA-visible total.
        weights: weight bytes on the GPU (kernel padding included).
        non_torch: memory outside PyTorch that grows during the profile run.
        activation: the profile run's torch peak.
        overhead: non_torch + activation + cuda_graphs.
        kv_cache_min: KV bytes one full ``max_model_len`` sequence needs.
        kv_cache_available: budget − weights − overhead (negative: weights do not fit).
        headroom: kv_cache_available − kv_cache_min (negative: does not fit).
        kv_bytes_per_token: KV bytes per token on this GPU, over the layers whose KV grows.
        kv_cache_tokens: tokens the KV budget holds at that rate.
        max_model_len_fit: longest max_model_len whose sequence fits (capped at max_context).
        max_concurrent_sequences: full ``max_model_len`` sequences the KV budget holds at once.
        cuda_total: the CUDA-visible total the budget is a share of.
        cuda_graphs: the CUDA-graph estimate subtracted from the budget (0 when eager).
        terms: the budget line by line, each with its source.
    """

    fits: bool
    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    model: str
    device: str
    device_memory: int
    is_mig: bool
    gpus: int
    budget: int
    weights: int
    non_torch: int
    activation: int
    overhead: int
    kv_cache_min: int
    kv_cache_available: int
    headroom: int
    kv_bytes_per_token: int
    kv_cache_tokens: int
    max_model_len_fit: int
    max_concurrent_sequences: int
    cuda_total: int = 0
    cuda_graphs: int = 0
    terms: tuple[BudgetTerm, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The documented JSON form (``gen fit --json``), schema version 1.

        Keys: ``schema_version``, ``fits``, ``errors``, ``warnings``, ``model``, ``device``
        (``name``, ``memory_bytes``, ``cuda_total_bytes``, ``is_mig``), ``parallelism``
        (``gpus``, then the parallel sizes of :meth:`Settings.settings_json`), ``settings``
        (the other fields of :class:`Settings`, ``vllm_version`` the release whose defaults
        and accounting apply), ``per_gpu_bytes`` (:data:`_PER_GPU_BYTES`), ``terms``
        (``name``, ``bytes``, ``source``), ``kv_bytes_per_token``, ``kv_cache_tokens``,
        ``max_model_len_fit``, ``max_concurrent_sequences``.
        """
        blocks = self.settings_json()
        return {
            "schema_version": 1,
            "fits": self.fits,
            "errors": list(self.errors),
            "warnings": list(self.warnings),
            "model": self.model,
            "device": {
                "name": self.device,
                "memory_bytes": self.device_memory,
                "cuda_total_bytes": self.cuda_total,
                "is_mig": self.is_mig,
            },
            "parallelism": {"gpus": self.gpus, **blocks["parallelism"]},
            "settings": blocks["settings"],
            "per_gpu_bytes": {name: getattr(self, name) for name in _PER_GPU_BYTES},
            "terms": [t.to_json() for t in self.terms],
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "kv_cache_tokens": self.kv_cache_tokens,
            "max_model_len_fit": self.max_model_len_fit,
            "max_concurrent_sequences": self.max_concurrent_sequences,
        }


_PER_GPU_BYTES = ("budget", "weights", "non_torch", "activation", "cuda_graphs", "overhead",
                  "kv_cache_min", "kv_cache_available", "headroom")
"""The :class:`FitReport` fields of ``gen fit --json``'s ``per_gpu_bytes``, in its order."""


def _parallelism_errors(request: FitRequest) -> list[str]:
    """Why vLLM refuses the request's TP × PP on its GPUs and this model."""
    model, errors = request.model, []
    tp, pp = request.tp, request.pipeline_parallel
    if request.gpus < 1:
        errors.append(f"gpus must be at least 1, got {request.gpus}")
    if tp < 1 or pp < 1:
        errors.append(f"tensor and pipeline parallel sizes must be at least 1, got TP={tp} PP={pp}")
        return errors
    if request.device.is_mig and (request.gpus != 1 or tp != 1 or pp != 1):
        errors.append(
            "a MIG slice serves one vLLM worker: use 1 GPU with TP=1 and PP=1 "
            f"(got {request.gpus} GPUs, TP={tp}, PP={pp}); vLLM cannot run TP across MIG devices"
        )
    if tp * pp > request.gpus:
        errors.append(f"TP×PP = {tp}×{pp} = {tp * pp} needs more GPUs than the {request.gpus} "
                      "in the claim")
    if model.attention_heads % tp:
        errors.append(f"Total number of attention heads ({model.attention_heads}) must be "
                      f"divisible by tensor parallel size ({tp})")
    if not model.kv_lora_rank and model.kv_heads % tp and tp % model.kv_heads:
        errors.append(f"{model.kv_heads} KV heads cannot be split over TP={tp}: need "
                      "kv_heads % TP == 0 or TP % kv_heads == 0")
    mlp_width = model.expert_intermediate_size or model.intermediate_size
    if mlp_width is not None:
        if mlp_width % tp:
            errors.append(f"MLP width {mlp_width} is not divisible by TP={tp}")
        elif model.quant_group_size and (mlp_width // tp) % model.quant_group_size:
            errors.append(
                f"each TP shard of the MLP ({mlp_width // tp}) must hold whole "
                f"{model.quantization} groups of {model.quant_group_size}"
            )
    if pp > model.layers:
        errors.append(f"PP={pp} exceeds the model's {model.layers} layers")
    return errors


def _setting_errors(request: FitRequest) -> list[str]:
    """Why vLLM refuses the request's other settings, whatever the memory."""
    errors = []
    util = request.gpu_memory_utilization
    if not 0 < util <= 1:
        errors.append(f"gpu_memory_utilization must be in (0, 1], got {util}")
    if request.kv_cache_dtype not in KV_CACHE_DTYPES:
        errors.append(f"kv_cache_dtype must be one of {', '.join(KV_CACHE_DTYPES)}, got "
                      f"{request.kv_cache_dtype!r}")
    errors += quantization_errors(request.model, request.quantization)
    if request.max_num_seqs is not None and request.max_num_seqs < 1:
        errors.append(f"max_num_seqs must be at least 1, got {request.max_num_seqs}")
    if request.max_num_batched_tokens is not None and request.max_num_batched_tokens < 1:
        errors.append(f"max_num_batched_tokens must be at least 1, got "
                      f"{request.max_num_batched_tokens}")
    length = request.model_len
    if length < 1:
        errors.append(f"max_model_len must be at least 1, got {length}")
    elif length > request.model.max_context:
        errors.append(
            f"max_model_len {length} exceeds the model's max_position_embeddings "
            f"({request.model.max_context}); vLLM refuses it"
        )
    return errors


def check_fit(request: FitRequest) -> FitReport:
    """Budget ``request`` per GPU and decide whether vLLM can start and serve one sequence."""
    workers = workers_of(request)
    errors = (_parallelism_errors(request)
              + _setting_errors(request)
              + scheduler_errors(workers.max_num_seqs, workers.max_num_batched_tokens))
    model = effective_model(request.model, request.quantization)
    engine = engine_of(request, model)
    budget = budget_of(request, model, engine, workers)
    available = budget.available
    kv = kv_fit(request, model, workers, available)
    errors += memory_errors(request, budget, kv)
    device = request.device
    return FitReport(
        **{**request.setting_values(), "tensor_parallel": request.tp,
           "max_model_len": request.model_len, "max_num_seqs": workers.max_num_seqs,
           "max_num_batched_tokens": workers.max_num_batched_tokens},
        fits=not errors,
        errors=tuple(errors),
        warnings=tuple(_warnings(request, workers)),
        model=request.model.id,
        device=device.name,
        device_memory=device.memory_bytes,
        is_mig=device.is_mig,
        gpus=request.gpus,
        budget=budget.requested,
        weights=budget.weights,
        non_torch=budget.non_torch,
        activation=budget.activation,
        overhead=budget.overhead,
        kv_cache_min=kv.kv_min,
        kv_cache_available=available,
        headroom=available - kv.kv_min,
        kv_bytes_per_token=kv.per_token,
        kv_cache_tokens=max(0, available) // kv.per_token if kv.per_token else 0,
        max_model_len_fit=kv.length_fit,
        max_concurrent_sequences=max(0, available) // kv.kv_min if kv.kv_min > 0 else 0,
        cuda_total=budget.cuda_total,
        cuda_graphs=budget.cuda_graphs,
        terms=budget_terms(request, model, engine, workers, budget) + kv_terms(request, budget, kv),
    )


def _warnings(request: FitRequest, workers: Workers) -> list[str]:
    device, out = request.device, []
    tp, pp = workers.tensor_parallel, workers.pipeline_parallel
    remainder = int(device.cuda_total_bytes * (1 - request.gpu_memory_utilization))
    # The checkpoint's model runner (not the online-fp8 model's) decides this warning.
    engine = engine_of(request, request.model)
    if (not engine.estimates_graphs and not request.enforce_eager
            and 0 <= remainder < CUDA_GRAPH_BYTES):
        out.append(
            f"only {gib(remainder)} is left outside the budget for CUDA graphs "
            f"(~{gib(CUDA_GRAPH_BYTES)}); lower gpu_memory_utilization or use --enforce-eager"
        )
    if device.unified_memory:
        out.append(f"{device.name} shares its memory with the CPU: the budget assumes the host "
                   "leaves that much free")
    if 0 < tp * pp < request.gpus:
        out.append(f"TP×PP = {tp * pp} uses only {tp * pp} of the {request.gpus} GPUs")
    if pp > 1:
        out.append("pipeline parallelism needs model support (SupportsPP) and, across nodes, "
                   "Ray or LWS")
    if device.capability is None:
        major, minor = ASSUMED_COMPUTE_CAPABILITY
        out.append(f"{device.name}'s compute capability is unknown: the budget takes "
                   f"{major}.{minor}'s kernels and CUDA-graph estimate")
    return out


def resolve_device(gpu: str, mig_profile: str | None = None) -> FitDevice:
    """The :class:`FitDevice` for a catalog GPU (id, PCI id or product name), or one MIG slice.

    Raises:
        CatalogLookupError: unknown GPU, a GPU without MIG, or a MIG profile it does not have.
    """
    entry = gpu_catalog().lookup(gpu)
    base = FitDevice(name=entry.product_name, memory_mib=entry.memory_mib,
                     unified_memory=entry.unified_memory, cuda_total_mib=entry.cuda_visible_mib,
                     compute_capability=entry.compute_capability,
                     cuda_total_logged=entry.cuda_total_mib is not None)
    if mig_profile is None:
        return base
    if not entry.mig_capable:
        raise CatalogLookupError(f"{entry.product_name} does not support MIG")
    profile = entry.mig_profile(mig_profile)
    if profile is None:
        names = ", ".join(entry.mig_profile_names)
        raise CatalogLookupError(f"{entry.product_name} has no MIG profile {mig_profile!r}; "
                           f"it has: {names}")
    return replace(base, name=f"{entry.product_name} MIG {profile.name}",
                   memory_mib=profile.memory_mib, cuda_total_mib=None, is_mig=True,
                   cuda_total_logged=False, multiprocessors=profile.sms)
