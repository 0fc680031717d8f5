"""Does a model fit a GPU or a MIG slice under vLLM? The per-GPU memory budget.

The arithmetic is vLLM 0.21's own (the image gen pins, :mod:`gen.serving.engines`):
``Worker.determine_available_memory`` in ``vllm/v1/worker/gpu_worker.py`` takes a snapshot of
the device after NCCL is initialised, asks for ``requested = total × gpu_memory_utilization``
where ``total`` is what CUDA reports (``torch.cuda.mem_get_info``, logged as "Free memory on
device (free/total GiB)"), runs ``GPUModelRunner.profile_run`` (a dummy batch of
``max_num_batched_tokens`` tokens spread over ``min(max_num_seqs, max_num_batched_tokens)``
requests, then ``_dummy_sampler_run`` on one hidden state per request) and, unless
``enforce_eager``, ``profile_cudagraph_memory``; what is left is the KV pool::

    budget       = CUDA-visible total × gpu_memory_utilization   (a MIG slice: the slice)
    weights      = the model's weights on the worst pipeline stage ÷ TP, with the MoE kernels'
                   padding (mxfp4 experts: fused_moe Marlin needs n % 256 and k % 128)
    activation   = the profile run's torch peak: max(forward pass, sampler pass)
    non-torch    = memory outside PyTorch's allocator that grows during the profile run
    CUDA graphs  = the profiler's CUDA-graph estimate (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS,
                   on by default in 0.21; nothing when enforce_eager)
    KV pool      = budget − weights − activation − non-torch − CUDA graphs
    fits         ⇔ KV pool ≥ the KV of one full max_model_len sequence, and the parallelism is legal

KV bytes per token and layer, in 16-token blocks (``CacheConfig`` block size)::

    full or sliding attention: 2 (K,V) × max(1, kv_heads ÷ TP) × head_dim × bytes(kv dtype)
    MLA (kv_lora_rank set):    (kv_lora_rank + qk_rope_head_dim) × bytes(kv dtype), every rank

Sliding-window layers keep at most ``W + max_num_batched_tokens`` tokens (vLLM's
``SlidingWindowSpec.max_memory_usage_bytes``). The constants below say where each comes from:
``[vllm]`` a figure of vLLM's source, ``[log]`` read in public start-up logs (the calibration
corpus in ``tests/serving/data/vllm_startup_logs.yaml``), ``[fitted]`` chosen to match those logs.

:func:`check_fit` is pure and never raises for "does not fit": the answer is in the report,
term by term (:meth:`FitReport.terms`), so it can be compared line by line with vLLM's log.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal, get_args

from gen.errors import CatalogLookupError
from gen.nvidia.gpus import gpu_catalog
from gen.serving.model_catalog import LLMSpec

if TYPE_CHECKING:
    from gen.models import InferenceService

__all__ = [
    "ACTIVATION_LOGIT_BYTES",
    "CUDA_GRAPH_BYTES",
    "DEFAULT_MAX_NUM_BATCHED_TOKENS",
    "FLASHINFER_SAMPLER_VOCAB_BUFFERS",
    "KV_BLOCK_TOKENS",
    "KV_CACHE_DTYPES",
    "MIN_USEFUL_MODEL_LEN",
    "MXFP4_PADDING",
    "NCCL_BYTES",
    "NON_TORCH_BYTES",
    "QUANTIZATIONS",
    "SAMPLER_VOCAB_BUFFERS",
    "BudgetTerm",
    "FitDevice",
    "FitReport",
    "FitRequest",
    "ServingConfig",
    "batch_defaults",
    "check_fit",
    "kv_bytes_per_token",
    "kv_cache_bytes",
    "mxfp4_kernel_for",
    "resolve_device",
]

MIB = 1 << 20
GIB = 1 << 30

_VLLM = "vllm-project/vllm@v0.21.0"

# [vllm] KV blocks of 16 tokens: vllm/config/cache.py (CacheConfig.block_size default).
KV_BLOCK_TOKENS = 16
# [log] Memory outside PyTorch's allocator that grows during the profile run ("non_torch_memory"
# in vLLM's log): 0.03–0.31 GiB on one GPU (vllm#13882, gateway-api-inference-extension#550),
# 0.25–0.43 GiB per worker with TP 2–4 (vllm#13061, vllm#16570). gen takes the top of each range.
NON_TORCH_BYTES = GIB // 4
NCCL_BYTES = GIB // 4
# [vllm] The sampler's dummy run computes the logits in fp32 (vllm/v1/sample/sampler.py).
ACTIVATION_LOGIT_BYTES = 4
# [fitted] The sampler's peak, in fp32 vocabulary-sized buffers of one request each: its top-k /
# top-p path (sort values and int64 indices, softmax, cumulative sum, masks, probabilities) holds
# about ten of them at once. 9.75 matches the activation peaks logged at 1,024 sequences on H100
# (gpt-oss-120b: vllm#23278, vllm#27508; see the corpus), within 3 %.
SAMPLER_VOCAB_BUFFERS = 9.75
# [fitted] The same with FlashInfer's top-k / top-p kernels ("Using FlashInfer for top-p & top-k
# sampling" in the log), which sort nothing: 3.0 matches two A100 logs of vLLM 0.10.1.1
# (dennislee22/vLLM-benchmarking, see the corpus). gen assumes the PyTorch path unless told.
FLASHINFER_SAMPLER_VOCAB_BUFFERS = 3.0
# [log] The CUDA-graph estimate with vLLM's default capture sizes: "Profiling CUDA graph memory:
# PIECEWISE=51 (largest=512), FULL=35 (largest=256)" → "Estimated CUDA graph memory: 0.73 GiB
# total" (vllm-project/vllm#39559). gen takes 0.75 GiB whatever the model.
CUDA_GRAPH_BYTES = 3 * GIB // 4
# [vllm] vllm/engine/arg_utils.py get_batch_defaults: ≥ 70 GiB and not an A100 → 1024 seqs /
# 8192 tokens, else 256 / 2048. NVML cannot read a MIG slice's parent, so MIG gets the small
# defaults (vllm#55381).
_LARGE_DEVICE_BYTES = 70 * GIB
_LARGE_BATCH = (1024, 8192)
_SMALL_BATCH = (256, 2048)
# What gen renders when a profile does not set max_num_batched_tokens: vLLM's own default on
# large GPUs, passed explicitly so that lint, the rendered args and `gen fit` size the same batch.
DEFAULT_MAX_NUM_BATCHED_TOKENS = _LARGE_BATCH[1]
# With max_model_len omitted gen serves the largest context that fits; lint fails only when not
# even this much fits: one 4,096-token conversation (prompt and answer) per replica.
MIN_USEFUL_MODEL_LEN = 4096
# [vllm] mxfp4 MoE weight padding, (hidden, expert-width shard) multiples, by kernel
# (vllm/model_executor/layers/quantization/mxfp4.py, Mxfp4MoEMethod.create_weights): Marlin needs
# "n % 256 == 0 and k % 128 == 0"; the Triton kernels pad the width to 64 and the model pads the
# hidden size to 256; the SM100 FlashInfer path rounds both to 256. vLLM picks Triton on Hopper
# ("mxfp4.py: Using Triton backend", vllm#33155), Marlin on GPUs without it (Ampere, Ada: "Weight-
# only FP4 compression will be used leveraging the Marlin kernel"), FlashInfer on Blackwell.
MXFP4_PADDING: dict[str, tuple[int, int]] = {
    "marlin": (256, 128), "triton": (256, 64), "flashinfer": (256, 256),
}

# [vllm] vllm/config/cache.py CacheDType.
KVCacheDType = Literal["auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla"]
KV_CACHE_DTYPES: tuple[str, ...] = get_args(KVCacheDType)
_KV_ONE_BYTE = frozenset({"fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla"})
# [vllm] `--quantization` methods of vllm/model_executor/layers/quantization/__init__.py that a
# catalog checkpoint can meet: a method must match the checkpoint's own quantization, except fp8,
# which vLLM also applies online to a 16-bit checkpoint (dynamic per-tensor FP8).
QUANTIZATIONS: tuple[str, ...] = (
    "awq", "awq_marlin", "gptq", "gptq_marlin", "fp8", "mxfp4", "compressed-tensors",
    "modelopt", "bitsandbytes",
)
_SAME_CHECKPOINT = {
    "awq": frozenset({"awq", "awq_marlin"}),
    "gptq": frozenset({"gptq", "gptq_marlin"}),
    "fp8": frozenset({"fp8", "compressed-tensors", "modelopt"}),
    "mxfp4": frozenset({"mxfp4"}),
}


@dataclass(frozen=True)
class FitDevice:
    """The device one vLLM worker sees: a whole GPU or one MIG slice.

    Attributes:
        name: product name (used for vLLM's A100 batch-default exception) and for messages.
        memory_mib: device memory as NVML reports it (for a MIG slice: the slice's).
        is_mig: a MIG slice (one per pod, no tensor or pipeline parallelism).
        unified_memory: memory shared with the CPU (Grace/GB10 class).
        cuda_total_mib: the total CUDA reports (``torch.cuda.mem_get_info``), which vLLM
            multiplies by ``gpu_memory_utilization``; None: ``memory_mib``.
        compute_capability: ``major.minor`` (chooses the MoE kernels' padding); "" if unknown.
        cuda_total_logged: ``cuda_total_mib`` comes from a vLLM log (else from gen's rule).
    """

    name: str
    memory_mib: int
    is_mig: bool = False
    unified_memory: bool = False
    cuda_total_mib: int | None = None
    compute_capability: str = ""
    cuda_total_logged: bool = False

    @property
    def memory_bytes(self) -> int:
        """Device memory in bytes (NVML)."""
        return self.memory_mib * MIB

    @property
    def cuda_total_bytes(self) -> int:
        """The total vLLM budgets from, in bytes."""
        return (self.cuda_total_mib if self.cuda_total_mib is not None else self.memory_mib) * MIB


@dataclass(frozen=True)
class ServingConfig:
    """The vLLM settings of one service, resolved once: lint, the rendered args and
    ``gen fit --service`` all read this, so they cannot disagree.

    ``max_model_len`` None means "the largest that fits every device the service can get"
    (:func:`gen.fleet.sizing.resolved_max_model_len`).
    """

    max_model_len: int | None
    max_num_seqs: int
    max_num_batched_tokens: int
    gpu_memory_utilization: float
    kv_cache_dtype: str
    quantization: str | None
    enforce_eager: bool
    tensor_parallel: int
    pipeline_parallel: int

    @classmethod
    def of(cls, service: InferenceService) -> ServingConfig:
        """The settings ``service`` runs with: its own, else gen's explicit defaults."""
        serving = service.serving
        return cls(
            max_model_len=serving.max_model_len,
            max_num_seqs=serving.max_num_seqs,
            max_num_batched_tokens=(serving.max_num_batched_tokens
                                    or DEFAULT_MAX_NUM_BATCHED_TOKENS),
            gpu_memory_utilization=serving.gpu_memory_utilization,
            kv_cache_dtype=serving.kv_cache_dtype,
            quantization=serving.quantization,
            # llama.cpp and MLX capture no CUDA graphs.
            enforce_eager=serving.enforce_eager or service.engine != "vllm",
            tensor_parallel=service.parallelism.tensor,
            pipeline_parallel=service.parallelism.pipeline,
        )


@dataclass(frozen=True)
class FitRequest:
    """One question: does ``model`` fit on ``gpus`` × ``device`` with these settings?

    ``tensor_parallel`` defaults to ``gpus ÷ pipeline_parallel``; ``max_model_len`` to the
    model's ``max_context``; ``max_num_seqs`` and ``max_num_batched_tokens`` to vLLM's
    effective defaults for the device (:func:`batch_defaults`). ``estimate_cudagraphs`` is
    vLLM 0.21's default; a log of an older vLLM is compared with it off. ``flashinfer_sampler``
    and ``mxfp4_kernel`` (marlin, triton, flashinfer; None: vLLM's choice for the GPU) say
    which kernels a start-up log shows.
    """

    model: LLMSpec
    device: FitDevice
    gpus: int = 1
    tensor_parallel: int | None = None
    pipeline_parallel: int = 1
    max_model_len: int | None = None
    gpu_memory_utilization: float = 0.90
    kv_cache_dtype: str = "auto"
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    quantization: str | None = None
    enforce_eager: bool = False
    estimate_cudagraphs: bool = True
    flashinfer_sampler: bool = False
    mxfp4_kernel: str | None = None

    @classmethod
    def from_config(
        cls,
        config: ServingConfig,
        model: LLMSpec,
        device: FitDevice,
        *,
        gpus: int,
        max_model_len: int | None,
    ) -> FitRequest:
        """The question a resolved :class:`ServingConfig` asks of one device."""
        return cls(
            model=model, device=device, gpus=gpus,
            tensor_parallel=config.tensor_parallel,
            pipeline_parallel=config.pipeline_parallel,
            max_model_len=max_model_len,
            gpu_memory_utilization=config.gpu_memory_utilization,
            kv_cache_dtype=config.kv_cache_dtype,
            max_num_seqs=config.max_num_seqs,
            max_num_batched_tokens=config.max_num_batched_tokens,
            quantization=config.quantization,
            enforce_eager=config.enforce_eager,
        )

    @classmethod
    def for_service(
        cls,
        service: InferenceService,
        model: LLMSpec,
        device: FitDevice,
        *,
        max_model_len: int | None,
        gpus: int | None = None,
        kv_cache_dtype: str | None = None,
    ) -> FitRequest:
        """The question a service asks of one device: its :class:`ServingConfig`.

        ``gpus`` defaults to the service's GPU request (``gpu.count``, else 1) and
        ``kv_cache_dtype`` to the service's; an engine that runs one worker per device or
        no fp8 KV cache (llama.cpp on Apple GPUs) passes its own.
        """
        config = ServingConfig.of(service)
        if kv_cache_dtype is not None:
            config = replace(config, kv_cache_dtype=kv_cache_dtype)
        if gpus is None:
            gpus = service.gpu.count if service.gpu is not None else 1
        return cls.from_config(config, model, device, gpus=gpus, max_model_len=max_model_len)

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
class BudgetTerm:
    """One line of the budget: a name, bytes per GPU, and where the figure comes from."""

    name: str
    bytes: int
    source: str

    def to_json(self) -> dict[str, Any]:
        """``{"name", "bytes", "source"}``."""
        return {"name": self.name, "bytes": self.bytes, "source": self.source}


@dataclass(frozen=True)
class FitReport:
    """The answer of :func:`check_fit`. Byte figures are per GPU (per worker).

    Attributes:
        fits: the model starts and serves one full ``max_model_len`` sequence.
        errors: why it does not (parallelism rules, memory), empty when it fits.
        warnings: doubts that do not change the answer.
        budget: ``gpu_memory_utilization`` × the CUDA-visible total.
        weights: weight bytes on the GPU (kernel padding included).
        non_torch: memory outside PyTorch that grows during the profile run.
        activation: the profile run's torch peak.
        cuda_graphs: the CUDA-graph estimate subtracted from the budget (0 when eager).
        overhead: non_torch + activation + cuda_graphs.
        kv_cache_min: KV bytes one full ``max_model_len`` sequence needs.
        kv_cache_available: budget − weights − overhead (negative: weights do not fit).
        headroom: kv_cache_available − kv_cache_min (negative: does not fit).
        kv_bytes_per_token: KV bytes per token on this GPU, over the layers whose KV grows.
        kv_cache_tokens: tokens the KV budget holds at that rate.
        max_model_len_fit: longest max_model_len whose sequence fits (capped at max_context).
        max_concurrent_sequences: full ``max_model_len`` sequences the KV budget holds at once.
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
    cuda_total: int = 0
    cuda_graphs: int = 0
    quantization: str | None = None
    enforce_eager: bool = False
    terms: tuple[BudgetTerm, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The documented JSON form (``gen fit --json``), schema version 1.

        Keys: ``schema_version``, ``fits``, ``errors``, ``warnings``, ``model``, ``device``
        (``name``, ``memory_bytes``, ``cuda_total_bytes``, ``is_mig``), ``parallelism``
        (``gpus``, ``tensor_parallel``, ``pipeline_parallel``), ``settings``
        (``max_model_len``, ``gpu_memory_utilization``, ``kv_cache_dtype``, ``max_num_seqs``,
        ``max_num_batched_tokens``, ``quantization``, ``enforce_eager``), ``per_gpu_bytes``
        (``budget``, ``weights``, ``non_torch``, ``activation``, ``cuda_graphs``, ``overhead``,
        ``kv_cache_min``, ``kv_cache_available``, ``headroom``), ``terms`` (``name``,
        ``bytes``, ``source``), ``kv_bytes_per_token``, ``kv_cache_tokens``,
        ``max_model_len_fit``, ``max_concurrent_sequences``.
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
                "cuda_total_bytes": self.cuda_total,
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
                "quantization": self.quantization,
                "enforce_eager": self.enforce_eager,
            },
            "per_gpu_bytes": {
                "budget": self.budget,
                "weights": self.weights,
                "non_torch": self.non_torch,
                "activation": self.activation,
                "cuda_graphs": self.cuda_graphs,
                "overhead": self.overhead,
                "kv_cache_min": self.kv_cache_min,
                "kv_cache_available": self.kv_cache_available,
                "headroom": self.headroom,
            },
            "terms": [t.to_json() for t in self.terms],
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


def _round_up(value: int, multiple: int) -> int:
    return _ceil_div(value, multiple) * multiple


def _blocks(tokens: int) -> int:
    return _round_up(max(0, tokens), KV_BLOCK_TOKENS)


def _kv_element_bytes(model: LLMSpec, kv_cache_dtype: str) -> int:
    if kv_cache_dtype in _KV_ONE_BYTE:
        return 1
    return 2 if kv_cache_dtype == "bfloat16" else model.compute_bytes


def _kv_heads_per_gpu(model: LLMSpec, tp: int) -> int:
    # vLLM replicates KV heads when TP exceeds them: each GPU holds at least one.
    return max(1, model.kv_heads // tp)


def _per_token_layer(model: LLMSpec, tp: int, kv_cache_dtype: str) -> int:
    element = _kv_element_bytes(model, kv_cache_dtype)
    if model.kv_lora_rank:  # MLA: one latent + rope key per token, replicated on every rank
        return (model.kv_lora_rank + (model.qk_rope_head_dim or 0)) * element
    return 2 * _kv_heads_per_gpu(model, tp) * model.head_dim * element


def kv_bytes_per_token(
    model: LLMSpec, *, tensor_parallel: int = 1, pipeline_parallel: int = 1,
    kv_cache_dtype: str = "auto",
) -> int:
    """KV bytes per token on one GPU over the layers whose KV grows with the sequence."""
    tp, pp = max(1, tensor_parallel), max(1, pipeline_parallel)
    return (_per_token_layer(model, tp, kv_cache_dtype)
            * _ceil_div(model.full_attention_layers, pp))


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
    per_token_layer = _per_token_layer(model, tp, kv_cache_dtype)
    total = _ceil_div(model.full_attention_layers, pp) * _blocks(tokens)
    if model.sliding_window_layers and model.sliding_window:
        window = min(tokens, model.sliding_window + prefill_chunk)
        total += _ceil_div(model.sliding_window_layers, pp) * _blocks(window)
    return per_token_layer * total


def mxfp4_kernel_for(compute_capability: str) -> str:
    """The mxfp4 MoE kernel vLLM picks for a GPU (see :data:`MXFP4_PADDING`)."""
    major = int(compute_capability.split(".")[0]) if compute_capability[:1].isdigit() else 9
    return "flashinfer" if major >= 10 else "triton" if major == 9 else "marlin"


def _moe_padding_bytes(model: LLMSpec, tp: int, kernel: str) -> int:
    """Extra bytes per GPU that the mxfp4 MoE kernels' padding adds to the experts."""
    if model.weight_dtype != "mxfp4" or not model.experts or not model.intermediate_size:
        return 0
    hidden_pad, width_pad = MXFP4_PADDING[kernel]
    shard = _ceil_div(model.intermediate_size, tp)
    hidden = model.hidden_size
    moe_layers = model.layers - (model.dense_layers or 0)
    bits = model.bits_per_quantized_weight
    per_expert = 3 * (_round_up(hidden, hidden_pad) * _round_up(shard, width_pad) - hidden * shard)
    return int(-(-(model.experts * moe_layers * per_expert) * bits // 8))


def _weights_per_gpu(model: LLMSpec, tp: int, pp: int) -> int:
    # Layers split evenly by TP; the worst pipeline stage holds ⌈layers/PP⌉ of them plus the
    # embeddings: both matrices when PP = 1, one (or a tied copy) on the first and last stage.
    embeddings = model.embedding_bytes
    layer_bytes = model.weight_bytes - embeddings
    stage_layers = _ceil_div(layer_bytes * _ceil_div(model.layers, pp), model.layers)
    if pp > 1 and model.vocab_size is not None:
        embeddings = model.vocab_size * model.hidden_size * model.compute_bytes
    return _ceil_div(stage_layers + embeddings, tp)


def _forward_bytes(model: LLMSpec, tp: int, batched_tokens: int) -> int:
    # [derived] Per batched token, the residual stream and attention in/out (4 × hidden) and
    # the gated MLP's two halves (2 × width ÷ TP; a MoE's routed experts side by side), in the
    # compute dtype.
    width = (model.intermediate_size or 4 * model.hidden_size) * (model.experts_per_token or 1)
    per_token = (4 * model.hidden_size + _ceil_div(2 * width, tp)) * model.compute_bytes
    return batched_tokens * per_token


def _sampler_bytes(model: LLMSpec, requests: int, flashinfer: bool) -> int:
    # _dummy_sampler_run: fp32 logits of the whole vocabulary for each request, gathered on
    # every rank, and the sampler's working copies of them (SAMPLER_VOCAB_BUFFERS).
    vocab = model.vocab_size or 0
    buffers = FLASHINFER_SAMPLER_VOCAB_BUFFERS if flashinfer else SAMPLER_VOCAB_BUFFERS
    return int(buffers * requests * vocab * ACTIVATION_LOGIT_BYTES)


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
    if not model.kv_lora_rank and model.kv_heads % tp and tp % model.kv_heads:
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
    if request.kv_cache_dtype not in KV_CACHE_DTYPES:
        errors.append(f"kv_cache_dtype must be one of {', '.join(KV_CACHE_DTYPES)}, got "
                      f"{request.kv_cache_dtype!r}")
    errors += _quantization_errors(request.model, request.quantization)
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


def _quantization_errors(model: LLMSpec, quantization: str | None) -> list[str]:
    if quantization is None:
        return []
    if quantization not in QUANTIZATIONS:
        return [f"quantization must be one of {', '.join(QUANTIZATIONS)}, got {quantization!r}"]
    if model.quantization is None:
        if quantization == "fp8":
            return []  # online FP8 of a 16-bit checkpoint
        return [f"{model.id} is a {model.weight_dtype} checkpoint: --quantization "
                f"{quantization} needs a {quantization} checkpoint (only fp8 quantizes online)"]
    if quantization not in _SAME_CHECKPOINT.get(model.quantization, frozenset()):
        return [f"{model.id} is a {model.quantization} checkpoint; vLLM refuses --quantization "
                f"{quantization} for it"]
    return []


def _effective_model(model: LLMSpec, quantization: str | None) -> LLMSpec:
    """The model as vLLM loads it: online fp8 makes a 16-bit checkpoint's linear layers 1 byte."""
    if quantization != "fp8" or model.quantization is not None:
        return model
    return replace(model, weight_dtype="fp8", quantization="fp8",
                   unquantized_parameters=model.embedding_parameters)


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


@dataclass(frozen=True)
class _Budget:
    budget: int
    weights: int
    non_torch: int
    activation: int
    cuda_graphs: int
    terms: tuple[BudgetTerm, ...]

    @property
    def overhead(self) -> int:
        return self.non_torch + self.activation + self.cuda_graphs

    @property
    def available(self) -> int:
        return self.budget - self.weights - self.overhead


def _budget(request: FitRequest, model: LLMSpec, tp: int, pp: int, seqs: int,
            batched: int) -> _Budget:
    device = request.device
    total = device.cuda_total_bytes
    budget = int(total * request.gpu_memory_utilization)
    kernel = request.mxfp4_kernel or mxfp4_kernel_for(device.compute_capability)
    padding = _moe_padding_bytes(model, tp, kernel)
    weights = _weights_per_gpu(model, tp, pp) + padding
    non_torch = NON_TORCH_BYTES + (NCCL_BYTES if tp * pp > 1 else 0)
    requests = min(seqs, batched)
    forward = _forward_bytes(model, tp, batched)
    sampler = _sampler_bytes(model, requests, request.flashinfer_sampler)
    buffers = (FLASHINFER_SAMPLER_VOCAB_BUFFERS if request.flashinfer_sampler
               else SAMPLER_VOCAB_BUFFERS)
    activation = max(forward, sampler)
    graphs = CUDA_GRAPH_BYTES if request.estimate_cudagraphs and not request.enforce_eager else 0
    if device.cuda_total_logged:
        total_source = ("the total CUDA reports, read from a vLLM log ('Free memory on device "
                        "(free/total GiB)'; cuda_total_mib in the GPU catalog)")
    elif device.cuda_total_mib is not None:
        total_source = ("NVML's total less 1 GiB: no vLLM log gives this GPU's CUDA total "
                        "(gen.nvidia.gpus.CUDA_RESERVE_MIB)")
    else:
        total_source = "the device memory as given (a MIG slice's, or the host's share)"
    pad_note = (f", of which {_gib(padding)} mxfp4 MoE padding for the {kernel} kernel "
                f"({_VLLM} vllm/model_executor/layers/quantization/mxfp4.py)" if padding else "")
    which = "sampler pass" if sampler >= forward else "forward pass"
    terms = (
        BudgetTerm("cuda_total", total, total_source),
        BudgetTerm("budget", budget, f"cuda_total × gpu_memory_utilization "
                   f"{request.gpu_memory_utilization:.2f} ({_VLLM} gpu_worker.py "
                   "requested_memory)"),
        BudgetTerm("weights", weights, f"the checkpoint's weights ÷ TP={tp} on the worst of "
                   f"PP={pp} stages{pad_note}; vLLM logs 'Model loading took X GiB'"),
        BudgetTerm("activation", activation,
                   f"profile-run torch peak, the {which}: forward {_gib(forward)} for "
                   f"{batched} batched tokens, sampler {_gib(sampler)} = "
                   f"{buffers} × {requests} requests × {model.vocab_size or 0} "
                   f"vocab × 4 B ({_VLLM} gpu_model_runner.py profile_run, "
                   "_dummy_sampler_run)"),
        BudgetTerm("non_torch", non_torch, "memory outside PyTorch during the profile run "
                   "(CUDA/cuBLAS workspaces" + (", NCCL" if tp * pp > 1 else "")
                   + "); 0.03–0.43 GiB in public logs"),
        BudgetTerm("cuda_graphs", graphs,
                   "nothing: --enforce-eager captures no CUDA graphs" if request.enforce_eager
                   else "not subtracted (VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS=0)"
                   if not request.estimate_cudagraphs else
                   "the profiler's CUDA-graph estimate, subtracted by default in vLLM 0.21 "
                   "(VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS); 0.73 GiB logged for the "
                   "default 51 + 35 capture sizes (vllm-project/vllm#39559)"),
    )
    return _Budget(budget, weights, non_torch, activation, graphs, terms)


def check_fit(request: FitRequest) -> FitReport:
    """Budget ``request`` per GPU and decide whether vLLM can start and serve one sequence."""
    device = request.device
    tp, pp = request.tp, request.pipeline_parallel
    errors = _parallelism_errors(request, tp, pp) + _setting_errors(request)
    model = _effective_model(request.model, request.quantization)
    warnings: list[str] = []
    tp_c, pp_c = max(1, tp), max(1, pp)

    seqs_default, tokens_default = batch_defaults(device)
    max_num_seqs = max(1, request.max_num_seqs or seqs_default)
    batched = max(1, request.max_num_batched_tokens or tokens_default)
    length = max(0, request.model_len)

    b = _budget(request, model, tp_c, pp_c, max_num_seqs, batched)
    available = b.available
    kv_min = kv_cache_bytes(model, length, tensor_parallel=tp_c, pipeline_parallel=pp_c,
                            kv_cache_dtype=request.kv_cache_dtype, prefill_chunk=batched)
    per_token = kv_bytes_per_token(model, tensor_parallel=tp_c, pipeline_parallel=pp_c,
                                   kv_cache_dtype=request.kv_cache_dtype)
    length_fit = _largest_fitting_len(replace(request, model=model), tp_c, pp_c, available,
                                      batched)
    kv_terms = (
        BudgetTerm("kv_cache_available", available, "budget − weights − activation − "
                   "non_torch − cuda_graphs; vLLM logs 'Available KV cache memory: X GiB'"),
        BudgetTerm("kv_cache_min", kv_min, f"one {length}-token sequence at {per_token:,} "
                   f"B/token ({request.kv_cache_dtype} KV, {KV_BLOCK_TOKENS}-token blocks)"),
    )

    if b.weights + b.overhead > b.budget:
        errors.append(
            f"weights ({_gib(b.weights)}) and activations/runtime ({_gib(b.overhead)}: "
            f"activation {_gib(b.activation)}, non-torch {_gib(b.non_torch)}, CUDA graphs "
            f"{_gib(b.cuda_graphs)}) per GPU exceed the budget of {_gib(b.budget)} "
            f"({request.gpu_memory_utilization:.2f} × {_gib(device.cuda_total_bytes)}); "
            + ("use a larger MIG profile or a quantized checkpoint" if device.is_mig
               else "use more GPUs (TP), a quantized checkpoint or a larger device")
        )
    elif kv_min > available:
        errors.append(
            f"To serve at least one request with the model's max seq len ({length}), "
            f"{_gib(kv_min)} KV cache is needed, which is larger than the available KV cache "
            f"memory ({_gib(available)} = budget {_gib(b.budget)} − weights "
            f"{_gib(b.weights)} − activation {_gib(b.activation)} − non-torch "
            f"{_gib(b.non_torch)} − CUDA graphs {_gib(b.cuda_graphs)}); the estimated maximum "
            f"model length is {length_fit}. Lower --max-model-len, use --kv-cache-dtype fp8, "
            "lower --max-num-seqs, raise --gpu-memory-utilization or add GPUs"
        )
    warnings.extend(_warnings(request, tp_c, pp_c))

    return FitReport(
        fits=not errors,
        errors=tuple(errors),
        warnings=tuple(warnings),
        model=request.model.id,
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
        budget=b.budget,
        weights=b.weights,
        non_torch=b.non_torch,
        activation=b.activation,
        overhead=b.overhead,
        kv_cache_min=kv_min,
        kv_cache_available=available,
        headroom=available - kv_min,
        kv_bytes_per_token=per_token,
        kv_cache_tokens=max(0, available) // per_token if per_token else 0,
        max_model_len_fit=length_fit,
        max_concurrent_sequences=max(0, available) // kv_min if kv_min > 0 else 0,
        cuda_total=device.cuda_total_bytes,
        cuda_graphs=b.cuda_graphs,
        quantization=request.quantization,
        enforce_eager=request.enforce_eager,
        terms=b.terms + kv_terms,
    )


def _warnings(request: FitRequest, tp: int, pp: int) -> list[str]:
    device, out = request.device, []
    remainder = int(device.cuda_total_bytes * (1 - request.gpu_memory_utilization))
    if (not request.estimate_cudagraphs and not request.enforce_eager
            and 0 <= remainder < CUDA_GRAPH_BYTES):
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
                   cuda_total_logged=False)
