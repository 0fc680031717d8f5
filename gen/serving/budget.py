"""The per-GPU budget of :func:`gen.serving.fit.check_fit`: its numbers, computed by pure
functions from a :class:`gen.serving.config.FitRequest`, and its prose (each term's source, the
memory errors in vLLM's words), produced from those numbers.

- :class:`Workers`: the layout and batch the arithmetic runs with;
- :class:`Engine`: what the vLLM release does for the model on the device;
- :class:`Budget`: the numbers before the KV cache (:func:`budget_of`), and their lines
  (:func:`budget_terms`);
- :class:`KVFit`: the KV cache against what is left (:func:`kv_fit`, :func:`kv_terms`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gen.serving.config import FitDevice, FitRequest, batch_defaults
from gen.serving.memory import (
    ACTIVATION_LOGIT_BYTES,
    ASSUMED_COMPUTE_CAPABILITY,
    CUDA_GRAPH_BYTES,
    GIB,
    KV_BLOCK_TOKENS,
    VLLM_SOURCE,
    forward_bytes,
    kv_bytes_per_token,
    kv_cache_bytes,
    moe_padding_bytes,
    mxfp4_kernel_for,
    sampler_bytes,
    weights_per_gpu,
)
from gen.serving.memory_profiles import (
    MemoryProfile,
    format_version,
    memory_profile_for,
    model_runner_for,
)
from gen.serving.model_catalog import LLMSpec

__all__ = [
    "Budget", "BudgetTerm", "Engine", "KVFit", "Workers", "budget_of", "budget_terms",
    "engine_of", "gib", "kv_fit", "kv_terms", "memory_errors", "workers_of",
]


@dataclass(frozen=True)
class BudgetTerm:
    """One line of the budget: a name, bytes per GPU, and where the figure comes from."""

    name: str
    bytes: int
    source: str

    def to_json(self) -> dict[str, Any]:
        """``{"name", "bytes", "source"}``."""
        return {"name": self.name, "bytes": self.bytes, "source": self.source}


@dataclass(frozen=True)
class Workers:
    """The layout and batch the arithmetic runs with: sizes below 1 (reported as errors)
    taken as 1, batch sizes resolved to vLLM's defaults."""

    tensor_parallel: int
    pipeline_parallel: int
    max_num_seqs: int
    max_num_batched_tokens: int

    @property
    def multi_gpu(self) -> bool:
        """More than one worker: NCCL is initialised."""
        return self.tensor_parallel * self.pipeline_parallel > 1

    @property
    def requests(self) -> int:
        """The profile run's dummy requests: ``min(max_num_seqs, max_num_batched_tokens)``."""
        return min(self.max_num_seqs, self.max_num_batched_tokens)


def workers_of(request: FitRequest) -> Workers:
    """The request's layout and batch: ``max_num_seqs`` and ``max_num_batched_tokens`` left
    None are vLLM's defaults for the device and release (:func:`batch_defaults`)."""
    seqs, tokens = batch_defaults(request.device, request.vllm_version)
    return Workers(
        tensor_parallel=max(1, request.tp),
        pipeline_parallel=max(1, request.pipeline_parallel),
        max_num_seqs=max(1, request.max_num_seqs or seqs),
        max_num_batched_tokens=max(1, request.max_num_batched_tokens or tokens),
    )


def _kv_need(model: LLMSpec, workers: Workers, kv_cache_dtype: str, tokens: int) -> int:
    """KV bytes per GPU of one ``tokens``-token sequence."""
    return kv_cache_bytes(model, tokens, tensor_parallel=workers.tensor_parallel,
                          pipeline_parallel=workers.pipeline_parallel,
                          kv_cache_dtype=kv_cache_dtype,
                          prefill_chunk=workers.max_num_batched_tokens)


def _largest_fitting_len(model: LLMSpec, workers: Workers, kv_cache_dtype: str,
                         available: int) -> int:
    """The largest n in [1, max_context] whose sequence fits ``available``; 0 if none."""
    low, high = 0, model.max_context
    if available < _kv_need(model, workers, kv_cache_dtype, 1):
        return 0
    while low < high:
        mid = (low + high + 1) // 2
        if _kv_need(model, workers, kv_cache_dtype, mid) <= available:
            low = mid
        else:
            high = mid - 1
    return low


def gib(value: int) -> str:
    """``value`` bytes as the budget's messages write them: ``"1.50 GiB"``."""
    return f"{value / GIB:.2f} GiB"


@dataclass(frozen=True)
class Engine:
    """What the vLLM release does for this model on this device."""

    profile: MemoryProfile
    runner: str
    flashinfer: bool
    estimates_graphs: bool
    graph_bytes: int
    sampler_buffers: float


def engine_of(request: FitRequest, model: LLMSpec) -> Engine:
    """What the request's release does for ``model`` on its device: model runner, sampler,
    whether the CUDA-graph estimate is subtracted, and how large it is."""
    profile = memory_profile_for(request.vllm_version)
    runner = model_runner_for(model, request.vllm_version)
    device = request.device
    capability = device.capability or ASSUMED_COMPUTE_CAPABILITY
    # [vllm] VLLM_USE_FLASHINFER_SAMPLER defaults on (vllm/envs.py @ v0.21.0 … v0.33.0) and
    # FlashInfer takes compute capability 8.0 and up (FlashInferBackend.supports_compute_
    # capability, vllm/v1/attention/backends/flashinfer.py @ v0.33.0); 0.33 also wants > 16 SMs.
    few_sms = (profile.flashinfer_min_sms > 0 and device.multiprocessors is not None
               and device.multiprocessors < profile.flashinfer_min_sms)
    flashinfer = (request.flashinfer_sampler if request.flashinfer_sampler is not None
                  else capability >= (8, 0) and not few_sms)
    v1_buffers = (profile.flashinfer_sampler_buffers if flashinfer
                  else profile.v1_sampler_buffers)
    if runner == "v1":
        buffers, estimates = v1_buffers, profile.v1_cudagraph_estimate
    else:
        buffers = (max(profile.v2_sampler_buffers, v1_buffers) if profile.v2_warmup_sampler
                   else profile.v2_sampler_buffers)
        estimates = profile.v2_cudagraph_estimate
    if request.estimate_cudagraphs is not None:
        estimates = request.estimate_cudagraphs
    graph_bytes = (profile.dc_blackwell_cudagraph_bytes if capability[0] == 10
                   else CUDA_GRAPH_BYTES)
    return Engine(profile=profile, runner=runner, flashinfer=flashinfer,
                  estimates_graphs=estimates and not request.enforce_eager,
                  graph_bytes=graph_bytes, sampler_buffers=buffers)


@dataclass(frozen=True)
class Budget:
    """The budget's numbers per GPU before the KV cache (:func:`budget_of`).

    ``requested`` is vLLM's ``requested_memory``: the CUDA-visible total ×
    ``gpu_memory_utilization``, what the terms below are taken from.
    """

    cuda_total: int
    requested: int
    mxfp4_kernel: str
    moe_padding: int
    weights: int
    non_torch: int
    forward: int
    sampler: int
    cuda_graphs: int

    @property
    def activation(self) -> int:
        """The profile run's torch peak: the larger of the forward and the sampler pass."""
        return max(self.forward, self.sampler)

    @property
    def overhead(self) -> int:
        """Non-torch memory, the activation peak and the CUDA graphs."""
        return self.non_torch + self.activation + self.cuda_graphs

    @property
    def available(self) -> int:
        """The KV pool: what is left of ``requested`` (negative: the weights do not fit)."""
        return self.requested - self.weights - self.overhead


def budget_of(request: FitRequest, model: LLMSpec, engine: Engine, workers: Workers) -> Budget:
    """The arithmetic of the budget (its prose: :func:`budget_terms`)."""
    device = request.device
    tp, pp = workers.tensor_parallel, workers.pipeline_parallel
    kernel = request.mxfp4_kernel or mxfp4_kernel_for(
        device.capability or ASSUMED_COMPUTE_CAPABILITY)
    padding = moe_padding_bytes(model, tensor_parallel=tp, kernel=kernel)
    return Budget(
        cuda_total=device.cuda_total_bytes,
        requested=int(device.cuda_total_bytes * request.gpu_memory_utilization),
        mxfp4_kernel=kernel,
        moe_padding=padding,
        weights=weights_per_gpu(model, tensor_parallel=tp, pipeline_parallel=pp) + padding,
        non_torch=(engine.profile.non_torch_bytes
                   + (engine.profile.nccl_bytes if workers.multi_gpu else 0)),
        forward=forward_bytes(model, tensor_parallel=tp,
                              batched_tokens=workers.max_num_batched_tokens),
        sampler=sampler_bytes(model, workers.requests, engine.sampler_buffers),
        cuda_graphs=engine.graph_bytes if engine.estimates_graphs else 0,
    )


def _total_source(device: FitDevice) -> str:
    if device.cuda_total_logged:
        return ("the total CUDA reports, read from a vLLM log ('Free memory on device "
                "(free/total GiB)'; cuda_total_mib in the GPU catalog)")
    if device.cuda_total_mib is not None:
        return ("NVML's total less 1 GiB: no vLLM log gives this GPU's CUDA total "
                "(gen.nvidia.gpus.CUDA_RESERVE_MIB)")
    return "the device memory as given (a MIG slice's, or the host's share)"


def _graph_source(request: FitRequest, engine: Engine) -> str:
    version = format_version(request.vllm_version)
    if request.enforce_eager:
        return "nothing: --enforce-eager captures no CUDA graphs"
    if not engine.estimates_graphs:
        if request.estimate_cudagraphs is False:
            return "not subtracted (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0)"
        return (f"not subtracted: vLLM {version}'s {engine.runner} model runner estimates no "
                f"CUDA graphs before sizing the pool ({engine.profile.source})")
    return (f"the {engine.runner} runner's CUDA-graph estimate, subtracted by default in vLLM "
            f"{version} (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0 turns it off); 0.73 GiB "
            "logged for the default 51 + 35 capture sizes (vllm-project/vllm#39559)"
            + ("; doubled for data-centre Blackwell's 1024-token capture [unvalidated]"
               if engine.graph_bytes != CUDA_GRAPH_BYTES else ""))


def budget_terms(request: FitRequest, model: LLMSpec, engine: Engine, workers: Workers,
                 budget: Budget) -> tuple[BudgetTerm, ...]:
    """The budget's lines before the KV cache, each with the source of its figure."""
    tp, pp = workers.tensor_parallel, workers.pipeline_parallel
    pad_note = (f", of which {gib(budget.moe_padding)} mxfp4 MoE padding for the "
                f"{budget.mxfp4_kernel} kernel ({VLLM_SOURCE} "
                "vllm/model_executor/layers/quantization/mxfp4.py)"
                if budget.moe_padding else "")
    which = "sampler pass" if budget.sampler >= budget.forward else "forward pass"
    sampler_kind = "FlashInfer" if engine.flashinfer else "PyTorch"
    version = format_version(request.vllm_version)
    return (
        BudgetTerm("cuda_total", budget.cuda_total, _total_source(request.device)),
        BudgetTerm("budget", budget.requested, f"cuda_total × gpu_memory_utilization "
                   f"{request.gpu_memory_utilization:.2f} ({VLLM_SOURCE} gpu_worker.py "
                   "requested_memory)"),
        BudgetTerm("weights", budget.weights, f"the checkpoint's weights ÷ TP={tp} on the worst of "
                   f"PP={pp} stages{pad_note}; vLLM logs 'Model loading took X GiB'"),
        BudgetTerm("activation", budget.activation,
                   f"profile-run torch peak, the {which}: forward {gib(budget.forward)} for "
                   f"{workers.max_num_batched_tokens} batched tokens, sampler "
                   f"{gib(budget.sampler)} = {engine.sampler_buffers} × {workers.requests} "
                   f"requests × {model.vocab_size or 0} vocab × {ACTIVATION_LOGIT_BYTES} B (vLLM "
                   f"{version}, {engine.runner} model runner, {sampler_kind} top-k/top-p; "
                   "profile_run, _dummy_sampler_run)"),
        BudgetTerm("non_torch", budget.non_torch, "what the profile leaves outside the weights "
                   "(CUDA/cuBLAS workspaces" + (", NCCL" if workers.multi_gpu else "")
                   + f"; vLLM {engine.profile.label} counts non-KV memory as "
                   f"{engine.profile.non_kv_rule})"),
        BudgetTerm("cuda_graphs", budget.cuda_graphs, _graph_source(request, engine)),
    )


@dataclass(frozen=True)
class KVFit:
    """The KV cache against the pool left: one full sequence, the rate, the longest fit."""

    length: int
    kv_min: int
    per_token: int
    length_fit: int


def kv_fit(request: FitRequest, model: LLMSpec, workers: Workers, available: int) -> KVFit:
    """The KV cache of one full ``max_model_len`` sequence against ``available`` bytes."""
    length = max(0, request.model_len)
    dtype = request.kv_cache_dtype
    return KVFit(
        length=length,
        kv_min=_kv_need(model, workers, dtype, length),
        per_token=kv_bytes_per_token(model, tensor_parallel=workers.tensor_parallel,
                                     pipeline_parallel=workers.pipeline_parallel,
                                     kv_cache_dtype=dtype),
        length_fit=_largest_fitting_len(model, workers, dtype, available),
    )


def kv_terms(request: FitRequest, budget: Budget, kv: KVFit) -> tuple[BudgetTerm, ...]:
    """The budget's last two lines: the KV pool and what one full sequence needs."""
    return (
        BudgetTerm("kv_cache_available", budget.available, "budget − weights − activation − "
                   "non_torch − cuda_graphs; vLLM logs 'Available KV cache memory: X GiB'"),
        BudgetTerm("kv_cache_min", kv.kv_min, f"one {kv.length}-token sequence at "
                   f"{kv.per_token:,} B/token ({request.kv_cache_dtype} KV, {KV_BLOCK_TOKENS}-"
                   "token blocks)"),
    )


def memory_errors(request: FitRequest, budget: Budget, kv: KVFit) -> list[str]:
    """Why the memory does not suffice (in vLLM's words where it has them); empty if it does."""
    device = request.device
    if budget.weights + budget.overhead > budget.requested:
        return [
            f"weights ({gib(budget.weights)}) and activations/runtime ({gib(budget.overhead)}: "
            f"activation {gib(budget.activation)}, non-torch {gib(budget.non_torch)}, CUDA graphs "
            f"{gib(budget.cuda_graphs)}) per GPU exceed the budget of {gib(budget.requested)} "
            f"({request.gpu_memory_utilization:.2f} × {gib(device.cuda_total_bytes)}); "
            + ("use a larger MIG profile or a quantized checkpoint" if device.is_mig
               else "use more GPUs (TP), a quantized checkpoint or a larger device")
        ]
    if kv.kv_min > budget.available:
        return [
            f"To serve at least one request with the model's max seq len ({kv.length}), "
            f"{gib(kv.kv_min)} KV cache is needed, which is larger than the available KV "
            f"cache memory ({gib(budget.available)} = budget {gib(budget.requested)} − weights "
            f"{gib(budget.weights)} − activation {gib(budget.activation)} − non-torch "
            f"{gib(budget.non_torch)} − CUDA graphs {gib(budget.cuda_graphs)}); the estimated "
            f"maximum model length is {kv.length_fit}. Lower --max-model-len, use --kv-cache-dtype "
            "fp8, lower --max-num-seqs, raise --gpu-memory-utilization or add GPUs"
        ]
    return []
