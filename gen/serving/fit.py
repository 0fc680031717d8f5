"""Does a model fit a GPU or a MIG slice under vLLM? The per-GPU memory budget.

The arithmetic follows how vLLM's V1 engine budgets device memory
(vllm-project/vllm ``vllm/v1/worker/gpu_worker.py``, ``vllm/config/cache.py``)::

    budget      = gpu_memory_utilization × device memory        (a MIG slice: the slice's memory)
    weights     = the model's weights on the worst pipeline stage, ÷ TP
    overhead    = non-torch memory (CUDA context, cuBLAS; NCCL when TP·PP > 1)
                + activation peak of the profile run (max_num_batched_tokens, max_num_seqs)
    kv_cache    = budget − weights − overhead                   (what vLLM gives the KV cache)
    fits        ⇔ kv_cache ≥ the KV of one full max_model_len sequence, and the parallelism is legal

KV per GPU for a sequence of n tokens, in 16-token blocks::

    2 (K,V) × max(1, kv_heads ÷ TP) × head_dim × bytes(kv dtype)
      × (full layers per stage × ⌈n/16⌉·16 + sliding layers per stage × ⌈min(n, W + C)/16⌉·16)

where W is the sliding window and C the prefill chunk vLLM can add to it. The CUDA graphs are
captured after the KV cache is allocated and must fit in the (1 − utilization) remainder:
checked as a warning only (their size is an estimate).

:func:`check_fit` is pure and never raises for "does not fit": the answer is in the report.

One discontinuity is deliberate, because vLLM has it: devices of 70 GiB or more (except A100s)
get larger default batch sizes, hence a larger activation reserve, than smaller ones. With
``max_num_seqs`` and ``max_num_batched_tokens`` fixed, more memory never turns a fit into a
misfit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from gen.errors import CatalogLookupError
from gen.nvidia.gpus import gpu_catalog
from gen.serving.model_catalog import LLMSpec

if TYPE_CHECKING:
    from gen.models import InferenceService

__all__ = [
    "ACTIVATION_LOGIT_BYTES",
    "CUDA_GRAPH_BYTES",
    "KV_BLOCK_TOKENS",
    "NCCL_BYTES",
    "NON_TORCH_BYTES",
    "FitDevice",
    "FitReport",
    "FitRequest",
    "batch_defaults",
    "check_fit",
    "kv_cache_bytes",
    "resolve_device",
]

MIB = 1 << 20
GIB = 1 << 30

# vLLM allocates the KV cache in blocks of 16 tokens (CacheConfig.DEFAULT_BLOCK_SIZE).
KV_BLOCK_TOKENS = 16
# Memory outside PyTorch's allocator: CUDA context, cuBLAS/cuDNN workspaces, attention
# workspaces: ~0.5–2 GiB by gen's estimate, not measured; gen takes 1 GiB per GPU, plus NCCL buffers
# when the model is split over several GPUs. [derived]
NON_TORCH_BYTES = 1 * GIB
NCCL_BYTES = GIB // 2
# The sampler's profile run holds fp32 logits and probabilities for max_num_seqs requests:
# 2 × 4 bytes per vocabulary entry. [derived]
ACTIVATION_LOGIT_BYTES = 8
# Rough size of the captured CUDA graphs, which must fit outside the budget. [unverified]
CUDA_GRAPH_BYTES = GIB // 2
# vLLM's effective ``vllm serve`` batch defaults (engine/arg_utils.py get_batch_defaults):
# ≥ 70 GiB of device memory and not an A100 → 1024 seqs / 8192 tokens, else 256 / 2048.
# NVML cannot read a MIG slice's parent, so MIG always gets the small defaults (vLLM #55381).
_LARGE_DEVICE_BYTES = 70 * GIB
_LARGE_BATCH = (1024, 8192)
_SMALL_BATCH = (256, 2048)

KVCacheDType = Literal["auto", "fp8"]


@dataclass(frozen=True)
class FitDevice:
    """The device one vLLM worker sees: a whole GPU or one MIG slice.

    Attributes:
        name: product name (used for vLLM's A100 batch-default exception) and for messages.
        memory_mib: device memory as CUDA reports it (for a MIG slice: the slice's).
        is_mig: a MIG slice (one per pod, no tensor or pipeline parallelism).
        unified_memory: memory shared with the CPU (Grace/GB10 class).
    """

    name: str
    memory_mib: int
    is_mig: bool = False
    unified_memory: bool = False

    @property
    def memory_bytes(self) -> int:
        """Device memory in bytes."""
        return self.memory_mib * MIB


@dataclass(frozen=True)
class FitRequest:
    """One question: does ``model`` fit on ``gpus`` × ``device`` with these settings?

    ``tensor_parallel`` defaults to ``gpus ÷ pipeline_parallel``; ``max_model_len`` to the
    model's ``max_context``; ``max_num_seqs`` and ``max_num_batched_tokens`` to vLLM's
    effective defaults for the device (:func:`batch_defaults`).
    """

    model: LLMSpec
    device: FitDevice
    gpus: int = 1
    tensor_parallel: int | None = None
    pipeline_parallel: int = 1
    max_model_len: int | None = None
    gpu_memory_utilization: float = 0.90
    kv_cache_dtype: KVCacheDType = "auto"
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None

    @classmethod
    def for_service(
        cls,
        service: InferenceService,
        model: LLMSpec,
        device: FitDevice,
        *,
        max_model_len: int | None,
        gpus: int | None = None,
        kv_cache_dtype: KVCacheDType | None = None,
    ) -> FitRequest:
        """The question a service asks of one device: its parallelism and serving settings.

        ``gpus`` defaults to the service's GPU request (``gpu.count``, else 1) and
        ``kv_cache_dtype`` to the service's; an engine that runs one worker per device or
        no fp8 KV cache (llama.cpp on Apple GPUs) passes its own.
        """
        serving = service.serving
        if gpus is None:
            gpus = service.gpu.count if service.gpu is not None else 1
        return cls(
            model=model,
            device=device,
            gpus=gpus,
            tensor_parallel=service.parallelism.tensor,
            pipeline_parallel=service.parallelism.pipeline,
            max_model_len=max_model_len,
            gpu_memory_utilization=serving.gpu_memory_utilization,
            kv_cache_dtype=serving.kv_cache_dtype if kv_cache_dtype is None else kv_cache_dtype,
            max_num_seqs=serving.max_num_seqs,
            max_num_batched_tokens=serving.max_num_batched_tokens,
        )

    @property
    def tp(self) -> int:
        """The tensor-parallel size in effect."""
        if self.tensor_parallel is not None:
            return self.tensor_parallel
        return max(1, self.gpus // max(1, self.pipeline_parallel))

    @property
    def model_len(self) -> int:
        """The max_model_len in effect."""
        return self.max_model_len if self.max_model_len is not None else self.model.max_context


@dataclass(frozen=True)
class FitReport:
    """The answer of :func:`check_fit`. Byte figures are per GPU (per worker).

    Attributes:
        fits: the model starts and serves one full ``max_model_len`` sequence.
        errors: why it does not (parallelism rules, memory), empty when it fits.
        warnings: doubts that do not change the answer.
        weights: weight bytes on the GPU.
        overhead: non-torch memory + activation peak.
        activation: the activation part of ``overhead``.
        kv_cache_min: KV bytes one full ``max_model_len`` sequence needs.
        budget: ``gpu_memory_utilization`` × device memory.
        kv_cache_available: budget − weights − overhead (negative: weights do not fit).
        headroom: kv_cache_available − kv_cache_min (negative: does not fit).
        kv_bytes_per_token: KV bytes per token on this GPU, over full-attention layers.
        kv_cache_tokens: tokens the KV budget holds at that rate.
        max_model_len_fit: longest max_model_len whose sequence fits (capped at max_context).
        max_concurrent_sequences: full ``max_model_len`` sequences the KV budget holds at once.
    """

    fits: bool
    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    model: str
    device: str
    device_memory: int
    is_mig: bool
    gpus: int
    tensor_parallel: int
    pipeline_parallel: int
    max_model_len: int
    gpu_memory_utilization: float
    kv_cache_dtype: str
    max_num_seqs: int
    max_num_batched_tokens: int
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

    def to_json(self) -> dict[str, Any]:
        """The documented JSON form (``gen fit --json``), schema version 1.

        Keys: ``schema_version``, ``fits``, ``errors``, ``warnings``, ``model``, ``device``
        (``name``, ``memory_bytes``, ``is_mig``), ``parallelism`` (``gpus``,
        ``tensor_parallel``, ``pipeline_parallel``), ``settings`` (``max_model_len``,
        ``gpu_memory_utilization``, ``kv_cache_dtype``, ``max_num_seqs``,
        ``max_num_batched_tokens``), ``per_gpu_bytes`` (``budget``, ``weights``,
        ``non_torch``, ``activation``, ``overhead``, ``kv_cache_min``, ``kv_cache_available``,
        ``headroom``), ``kv_bytes_per_token``, ``kv_cache_tokens``, ``max_model_len_fit``,
        ``max_concurrent_sequences``.
        """
        return {
            "schema_version": 1,
            "fits": self.fits,
            "errors": list(self.errors),
            "warnings": list(self.warnings),
            "model": self.model,
            "device": {
                "name": self.device,
                "memory_bytes": self.device_memory,
                "is_mig": self.is_mig,
            },
            "parallelism": {
                "gpus": self.gpus,
                "tensor_parallel": self.tensor_parallel,
                "pipeline_parallel": self.pipeline_parallel,
            },
            "settings": {
                "max_model_len": self.max_model_len,
                "gpu_memory_utilization": self.gpu_memory_utilization,
                "kv_cache_dtype": self.kv_cache_dtype,
                "max_num_seqs": self.max_num_seqs,
                "max_num_batched_tokens": self.max_num_batched_tokens,
            },
            "per_gpu_bytes": {
                "budget": self.budget,
                "weights": self.weights,
                "non_torch": self.non_torch,
                "activation": self.activation,
                "overhead": self.overhead,
                "kv_cache_min": self.kv_cache_min,
                "kv_cache_available": self.kv_cache_available,
                "headroom": self.headroom,
            },
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "kv_cache_tokens": self.kv_cache_tokens,
            "max_model_len_fit": self.max_model_len_fit,
            "max_concurrent_sequences": self.max_concurrent_sequences,
        }


def batch_defaults(device: FitDevice) -> tuple[int, int]:
    """vLLM's effective ``(max_num_seqs, max_num_batched_tokens)`` defaults on ``device``."""
    if device.is_mig or "a100" in device.name.lower():
        return _SMALL_BATCH
    return _LARGE_BATCH if device.memory_bytes >= _LARGE_DEVICE_BYTES else _SMALL_BATCH


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _blocks(tokens: int) -> int:
    return _ceil_div(max(0, tokens), KV_BLOCK_TOKENS) * KV_BLOCK_TOKENS


def _kv_element_bytes(model: LLMSpec, kv_cache_dtype: str) -> int:
    return 1 if kv_cache_dtype == "fp8" else model.compute_bytes


def _kv_heads_per_gpu(model: LLMSpec, tp: int) -> int:
    # vLLM replicates KV heads when TP exceeds them: each GPU holds at least one.
    return max(1, model.kv_heads // tp)


def kv_cache_bytes(
    model: LLMSpec,
    tokens: int,
    *,
    tensor_parallel: int = 1,
    pipeline_parallel: int = 1,
    kv_cache_dtype: str = "auto",
    prefill_chunk: int = _SMALL_BATCH[1],
) -> int:
    """KV-cache bytes on one GPU for one sequence of ``tokens`` tokens (block-rounded).

    Sliding-window layers keep at most ``sliding_window + prefill_chunk`` tokens, as vLLM's
    hybrid KV-cache manager does.
    """
    tp, pp = max(1, tensor_parallel), max(1, pipeline_parallel)
    per_token_layer = (
        2 * _kv_heads_per_gpu(model, tp) * model.head_dim * _kv_element_bytes(model, kv_cache_dtype)
    )
    full_layers = _ceil_div(model.full_attention_layers, pp)
    total = full_layers * _blocks(tokens)
    if model.sliding_window_layers and model.sliding_window:
        window = min(tokens, model.sliding_window + prefill_chunk)
        total += _ceil_div(model.sliding_window_layers, pp) * _blocks(window)
    return per_token_layer * total


def _weights_per_gpu(model: LLMSpec, tp: int, pp: int) -> int:
    # Layers split evenly by TP; the worst pipeline stage holds ⌈layers/PP⌉ of them plus the
    # embeddings: both matrices when PP = 1, one (or a tied copy) on the first and last stage.
    embeddings = model.embedding_bytes
    layer_bytes = model.weight_bytes - embeddings
    stage_layers = _ceil_div(layer_bytes * _ceil_div(model.layers, pp), model.layers)
    if pp > 1 and model.vocab_size is not None:
        embeddings = model.vocab_size * model.hidden_size * model.compute_bytes
    return _ceil_div(stage_layers + embeddings, tp)


def _activation_bytes(model: LLMSpec, tp: int, max_num_seqs: int, batched_tokens: int) -> int:
    # Profile-run peak [derived]: per batched token, the residual stream and attention
    # in/out (4 × hidden) and the gated MLP's two halves (2 × width ÷ TP; a MoE's routed
    # experts side by side), in the compute dtype; plus the sampler's fp32 logits.
    width = (model.intermediate_size or 4 * model.hidden_size) * (model.experts_per_token or 1)
    per_token = (4 * model.hidden_size + _ceil_div(2 * width, tp)) * model.compute_bytes
    logits = max_num_seqs * (model.vocab_size or 0) * ACTIVATION_LOGIT_BYTES
    return batched_tokens * per_token + logits


def _parallelism_errors(request: FitRequest, tp: int, pp: int) -> list[str]:
    model, errors = request.model, []
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
    if model.kv_heads % tp and tp % model.kv_heads:
        errors.append(f"{model.kv_heads} KV heads cannot be split over TP={tp}: need "
                      "kv_heads % TP == 0 or TP % kv_heads == 0")
    if model.intermediate_size is not None:
        if model.intermediate_size % tp:
            errors.append(f"MLP width {model.intermediate_size} is not divisible by TP={tp}")
        elif model.quant_group_size and (model.intermediate_size // tp) % model.quant_group_size:
            errors.append(
                f"each TP shard of the MLP ({model.intermediate_size // tp}) must hold whole "
                f"{model.quantization} groups of {model.quant_group_size}"
            )
    if pp > model.layers:
        errors.append(f"PP={pp} exceeds the model's {model.layers} layers")
    return errors


def _setting_errors(request: FitRequest) -> list[str]:
    errors = []
    util = request.gpu_memory_utilization
    if not 0 < util <= 1:
        errors.append(f"gpu_memory_utilization must be in (0, 1], got {util}")
    if request.kv_cache_dtype not in ("auto", "fp8"):
        errors.append(f"kv_cache_dtype must be auto or fp8, got {request.kv_cache_dtype!r}")
    length = request.model_len
    if length < 1:
        errors.append(f"max_model_len must be at least 1, got {length}")
    elif length > request.model.max_context:
        errors.append(
            f"max_model_len {length} exceeds the model's max_position_embeddings "
            f"({request.model.max_context}); vLLM refuses it"
        )
    return errors


def _largest_fitting_len(request: FitRequest, tp: int, pp: int, available: int, chunk: int) -> int:
    def need(tokens: int) -> int:
        return kv_cache_bytes(request.model, tokens, tensor_parallel=tp, pipeline_parallel=pp,
                              kv_cache_dtype=request.kv_cache_dtype, prefill_chunk=chunk)

    low, high = 0, request.model.max_context
    if available < need(1):
        return 0
    while low < high:  # largest n in [1, max_context] with need(n) ≤ available
        mid = (low + high + 1) // 2
        if need(mid) <= available:
            low = mid
        else:
            high = mid - 1
    return low


def _gib(value: int) -> str:
    return f"{value / GIB:.2f} GiB"


def check_fit(request: FitRequest) -> FitReport:
    """Budget ``request`` per GPU and decide whether vLLM can start and serve one sequence."""
    model, device = request.model, request.device
    tp, pp = request.tp, request.pipeline_parallel
    errors = _parallelism_errors(request, tp, pp) + _setting_errors(request)
    warnings: list[str] = []
    tp_c, pp_c = max(1, tp), max(1, pp)

    seqs_default, tokens_default = batch_defaults(device)
    max_num_seqs = request.max_num_seqs or seqs_default
    batched = request.max_num_batched_tokens or tokens_default
    length = max(0, request.model_len)

    budget = int(device.memory_bytes * request.gpu_memory_utilization)
    weights = _weights_per_gpu(model, tp_c, pp_c)
    non_torch = NON_TORCH_BYTES + (NCCL_BYTES if tp_c * pp_c > 1 else 0)
    activation = _activation_bytes(model, tp_c, max_num_seqs, batched)
    overhead = non_torch + activation
    available = budget - weights - overhead
    kv_min = kv_cache_bytes(model, length, tensor_parallel=tp_c, pipeline_parallel=pp_c,
                            kv_cache_dtype=request.kv_cache_dtype, prefill_chunk=batched)
    per_token_full = (
        2 * _kv_heads_per_gpu(model, tp_c) * model.head_dim
        * _kv_element_bytes(model, request.kv_cache_dtype)
        * _ceil_div(model.full_attention_layers, pp_c)
    )
    length_fit = _largest_fitting_len(request, tp_c, pp_c, available, batched)

    if weights + overhead > budget:
        errors.append(
            f"weights ({_gib(weights)}) and activations/runtime ({_gib(overhead)}) per GPU exceed "
            f"the budget of {_gib(budget)} ({request.gpu_memory_utilization:.2f} × "
            f"{_gib(device.memory_bytes)}); "
            + ("use a larger MIG profile or a quantized checkpoint" if device.is_mig
               else "use more GPUs (TP), a quantized checkpoint or a larger device")
        )
    elif kv_min > available:
        errors.append(
            f"To serve at least one request with the model's max seq len ({length}), "
            f"{_gib(kv_min)} KV cache is needed, which is larger than the available KV cache "
            f"memory ({_gib(available)}); the estimated maximum model length is {length_fit}. "
            "Lower --max-model-len, use --kv-cache-dtype fp8, raise "
            "--gpu-memory-utilization or add GPUs"
        )
    warnings.extend(_warnings(request, tp_c, pp_c))

    return FitReport(
        fits=not errors,
        errors=tuple(errors),
        warnings=tuple(warnings),
        model=model.id,
        device=device.name,
        device_memory=device.memory_bytes,
        is_mig=device.is_mig,
        gpus=request.gpus,
        tensor_parallel=tp,
        pipeline_parallel=pp,
        max_model_len=request.model_len,
        gpu_memory_utilization=request.gpu_memory_utilization,
        kv_cache_dtype=request.kv_cache_dtype,
        max_num_seqs=max_num_seqs,
        max_num_batched_tokens=batched,
        budget=budget,
        weights=weights,
        non_torch=non_torch,
        activation=activation,
        overhead=overhead,
        kv_cache_min=kv_min,
        kv_cache_available=available,
        headroom=available - kv_min,
        kv_bytes_per_token=per_token_full,
        kv_cache_tokens=max(0, available) // per_token_full if per_token_full else 0,
        max_model_len_fit=length_fit,
        max_concurrent_sequences=max(0, available) // kv_min if kv_min > 0 else 0,
    )


def _warnings(request: FitRequest, tp: int, pp: int) -> list[str]:
    device, out = request.device, []
    remainder = int(device.memory_bytes * (1 - request.gpu_memory_utilization))
    if 0 <= remainder < CUDA_GRAPH_BYTES:
        out.append(
            f"only {_gib(remainder)} is left outside the budget for CUDA graphs "
            f"(~{_gib(CUDA_GRAPH_BYTES)}); lower gpu_memory_utilization or use --enforce-eager"
        )
    if device.unified_memory:
        out.append(f"{device.name} shares its memory with the CPU: the budget assumes the host "
                   "leaves that much free")
    if 0 < tp * pp < request.gpus:
        out.append(f"TP×PP = {tp * pp} uses only {tp * pp} of the {request.gpus} GPUs")
    if pp > 1:
        out.append("pipeline parallelism needs model support (SupportsPP) and, across nodes, "
                   "Ray or LWS")
    return out


def resolve_device(gpu: str, mig_profile: str | None = None) -> FitDevice:
    """The :class:`FitDevice` for a catalog GPU (id, PCI id or product name), or one MIG slice.

    Raises:
        CatalogLookupError: unknown GPU, a GPU without MIG, or a MIG profile it does not have.
    """
    entry = gpu_catalog().lookup(gpu)
    base = FitDevice(name=entry.product_name, memory_mib=entry.memory_mib,
                     unified_memory=entry.unified_memory)
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
                   memory_mib=profile.memory_mib, is_mig=True)
