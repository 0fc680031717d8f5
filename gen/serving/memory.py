"""vLLM's memory arithmetic, term by term: the facts :mod:`gen.serving.fit` budgets with.

What changes from release to release (model runner, CUDA-graph estimate, sampler, non-torch
figures) is a table keyed by version range in :mod:`gen.serving.memory_profiles`; the terms here
hold for every release from 0.10.

Each figure says where it comes from, in its docstring, with one of these tags:

- ``[vllm]``: a figure of vLLM's source, cited by path in vllm-project/vllm (and by release
  where a default changed between releases);
- ``[log]``: read in public start-up logs (the calibration corpus,
  ``tests/serving/data/vllm_startup_logs.yaml``);
- ``[fitted]``: chosen to match those logs;
- ``[derived]``: counted from the model's shapes (what a pass holds at once), not measured.

KV bytes per token and layer, in 16-token blocks::

    full or sliding attention: 2 (K,V) × max(1, kv_heads ÷ TP) × head_dim × bytes(kv dtype)
    MLA (kv_lora_rank set):    (kv_lora_rank + qk_rope_head_dim) × bytes(kv dtype), every rank

Sliding-window layers keep at most ``W + max_num_batched_tokens`` tokens (vLLM's
``SlidingWindowSpec.max_memory_usage_bytes``).
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction
from typing import Literal, get_args

from gen.serving.model_catalog import LLMSpec

__all__ = [
    "ACTIVATION_LOGIT_BYTES",
    "ASSUMED_COMPUTE_CAPABILITY",
    "CUDA_GRAPH_BYTES",
    "FLASHINFER_SAMPLER_VOCAB_BUFFERS",
    "GIB",
    "KV_BLOCK_TOKENS",
    "KV_CACHE_DTYPES",
    "MIB",
    "MIN_USEFUL_MODEL_LEN",
    "MXFP4_PADDING",
    "NCCL_BYTES",
    "NON_TORCH_BYTES",
    "ONLINE_QUANTIZATIONS",
    "QUANTIZATIONS",
    "SAMPLER_VOCAB_BUFFERS",
    "VLLM_SOURCE",
    "KVCacheDType",
    "effective_model",
    "forward_bytes",
    "kv_bytes_per_token",
    "kv_cache_bytes",
    "moe_padding_bytes",
    "mxfp4_kernel_for",
    "quantization_errors",
    "sampler_bytes",
    "scheduler_errors",
    "weights_per_gpu",
]

MIB = 1 << 20
GIB = 1 << 30

VLLM_SOURCE = "vllm-project/vllm"
"""The repository the ``[vllm]`` citations' paths are in."""

KV_BLOCK_TOKENS = 16
"""[vllm] KV blocks of 16 tokens: vllm/config/cache.py (``CacheConfig.block_size`` default)."""

NON_TORCH_BYTES = GIB // 4
"""[log] Memory outside PyTorch's allocator that grows during the profile run
("non_torch_memory" in vLLM's log) on one GPU: 0.03–0.16 GiB (vllm#13882,
gateway-api-inference-extension#550, llm-d-benchmark's H100 table: 0.13–0.14). gen takes
0.25 GiB."""

NCCL_BYTES = 3 * GIB // 8
"""[log] What NCCL adds to :data:`NON_TORCH_BYTES` per worker when TP·PP > 1: with TP 2–4 the
logs show 0.25–0.55 GiB non-torch memory per worker (vllm#13061, vllm#16570, llm-d-benchmark:
0.55 at TP 2), so gen takes 0.625 GiB in all, 0.375 GiB of it NCCL's."""

ACTIVATION_LOGIT_BYTES = 4
"""[vllm] The sampler's dummy run computes the logits in fp32 (vllm/v1/sample/sampler.py)."""

SAMPLER_VOCAB_BUFFERS = 9.75
"""[fitted] The sampler's peak, in fp32 vocabulary-sized buffers of one request each: its
top-k / top-p path (sort values and int64 indices, softmax, cumulative sum, masks,
probabilities) holds about ten of them at once. The peaks llm-d-benchmark logged at 1,024
sequences on H100 (config_explorer/empirical-vllm-memory-results.md: Llama-3.1-8B 4.76 GiB,
Qwen3-32B 5.64, Qwen3-0.6B 5.56, gpt-oss-20b 7.38, Llama-3.3-70B-FP8 4.84) are 9.59–9.89 such
buffers; the 256-sequence A100 40GB log of the corpus (PyTorch sampler) agrees. gen takes
9.75."""

FLASHINFER_SAMPLER_VOCAB_BUFFERS = 3.0
"""[fitted] The same with FlashInfer's top-k / top-p kernels ("Using FlashInfer for top-p &
top-k sampling" in the log), which sort nothing: 3.0 matches two A100 logs of vLLM 0.10.1.1
(dennislee22/vLLM-benchmarking, see the corpus)."""

CUDA_GRAPH_BYTES = 3 * GIB // 4
"""[log] The CUDA-graph estimate with vLLM's default capture sizes, whatever the model:
"Profiling CUDA graph memory: PIECEWISE=51 (largest=512), FULL=35 (largest=256)" → "Estimated
CUDA graph memory: 0.73 GiB total" (vllm-project/vllm#39559); 0.36 GiB for 16 PIECEWISE graphs
(gpustack/runner#251). vLLM samples two graphs per mode and extrapolates linearly
(gpu_model_runner.py ``profile_cudagraph_memory``), which can overestimate many-graph setups
(vllm#45178).

[vllm] Subtracted by default since v0.21.0: "CUDA graph memory profiling is enabled (default
since v0.21.0)" (gpu_worker.py, logged in gpustack/runner#251; envs.py "Enabled by default as
of v0.21.0", vllm#41099)."""

MIN_USEFUL_MODEL_LEN = 4096
"""With max_model_len omitted gen serves the largest context that fits; lint fails only when
not even this much fits: one 4,096-token conversation (prompt and answer) per replica."""

MXFP4_PADDING: dict[str, tuple[int, int]] = {
    "marlin": (256, 128), "triton": (256, 64), "flashinfer": (256, 256),
}
"""[vllm] mxfp4 MoE weight padding, (hidden, expert-width shard) multiples, by kernel
(vllm/model_executor/layers/quantization/mxfp4.py, ``Mxfp4MoEMethod.create_weights``): Marlin
needs "n % 256 == 0 and k % 128 == 0"; the Triton kernels pad the width to 64 and the model pads
the hidden size to 256; the SM100 FlashInfer path rounds both to 256. vLLM picks Triton on
Hopper ("mxfp4.py: Using Triton backend", vllm#33155), Marlin on GPUs without it (Ampere, Ada:
"Weight-only FP4 compression will be used leveraging the Marlin kernel"), FlashInfer on
Blackwell (:func:`mxfp4_kernel_for`)."""

ASSUMED_COMPUTE_CAPABILITY = (9, 0)
"""The compute capability gen budgets a device with when it does not know the device's (a
hand-made :class:`gen.serving.fit.FitDevice`; every catalog GPU has one): Hopper's, so the
Triton mxfp4 kernel, FlashInfer's sampler and the default CUDA-graph estimate. The fit report
says so in a warning."""

KVCacheDType = Literal["auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla"]
"""[vllm] vllm/config/cache.py ``CacheDType``."""
KV_CACHE_DTYPES: tuple[str, ...] = get_args(KVCacheDType)
_KV_ONE_BYTE = frozenset({"fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla"})

QUANTIZATIONS: tuple[str, ...] = (
    "awq", "awq_marlin", "gptq", "gptq_marlin", "fp8", "mxfp4", "compressed-tensors",
    "modelopt", "bitsandbytes",
)
"""[vllm] ``--quantization`` methods of vllm/model_executor/layers/quantization/__init__.py
that a catalog checkpoint can meet: a method must match the checkpoint's own quantization,
except the in-flight ones (:data:`ONLINE_QUANTIZATIONS`), which vLLM also applies to a 16-bit
checkpoint. Whether the service's release has a method at all is GEN307's question
(``quantizations`` of gen/data/vllm-releases.yaml: bitsandbytes through 0.27)."""
ONLINE_QUANTIZATIONS: dict[str, str] = {
    "fp8": "fp8",
    "bitsandbytes": "nf4",
}
"""[vllm] Methods vLLM applies in flight to a checkpoint without a quantization config, and the
weight dtype the linear layers get:

* ``fp8``: dynamic per-tensor FP8 (vllm/model_executor/layers/quantization/fp8.py,
  ``Fp8Config`` with ``is_checkpoint_fp8_serialized`` false);
* ``bitsandbytes``: 4-bit NF4 with double quantization, in every release whose
  ``--quantization`` has it (0.21–0.27 of the releases gen knows): ``get_quant_config``
  returns ``BitsAndBytesConfig.from_config({})`` for a checkpoint without a quantization
  config ("Inflight BNB quantization", vllm/model_executor/model_loader/weight_utils.py), the
  engine arguments force ``--load-format bitsandbytes`` for it (vllm/engine/arg_utils.py), and
  ``BitsAndBytesModelLoader`` quantizes each weight as it loads
  (vllm/model_executor/model_loader/bitsandbytes_loader.py). ``BitsAndBytesConfig`` asks for
  compute capability 7.0 (``get_min_capability``), which every catalog GPU has."""
_SAME_CHECKPOINT = {
    "awq": frozenset({"awq", "awq_marlin"}),
    "gptq": frozenset({"gptq", "gptq_marlin"}),
    "fp8": frozenset({"fp8", "compressed-tensors", "modelopt"}),
    "mxfp4": frozenset({"mxfp4"}),
}


def _ceil_div(a: int | Fraction, b: int) -> int:
    """⌈a ÷ b⌉, exactly (``a`` may be a count of bits at a fractional width)."""
    return -(-a // b)


def _round_up(value: int, multiple: int) -> int:
    return _ceil_div(value, multiple) * multiple


def _blocks(tokens: int) -> int:
    return _round_up(max(0, tokens), KV_BLOCK_TOKENS)


def _kv_element_bytes(model: LLMSpec, kv_cache_dtype: str) -> int:
    if kv_cache_dtype in _KV_ONE_BYTE:
        return 1
    return 2 if kv_cache_dtype == "bfloat16" else model.compute_bytes


def _kv_heads_per_gpu(model: LLMSpec, *, tensor_parallel: int) -> int:
    """KV heads per GPU: vLLM replicates them when TP exceeds them, so at least one."""
    return max(1, model.kv_heads // tensor_parallel)


def _per_token_layer(model: LLMSpec, *, tensor_parallel: int, kv_cache_dtype: str) -> int:
    element = _kv_element_bytes(model, kv_cache_dtype)
    if model.kv_lora_rank:  # MLA: one latent + rope key per token, replicated on every rank
        return (model.kv_lora_rank + (model.qk_rope_head_dim or 0)) * element
    return (2 * _kv_heads_per_gpu(model, tensor_parallel=tensor_parallel) * model.head_dim
            * element)


def kv_bytes_per_token(
    model: LLMSpec, *, tensor_parallel: int = 1, pipeline_parallel: int = 1,
    kv_cache_dtype: str = "auto",
) -> int:
    """KV bytes per token on one GPU over the layers whose KV grows with the sequence."""
    tp, pp = max(1, tensor_parallel), max(1, pipeline_parallel)
    return (_per_token_layer(model, tensor_parallel=tp, kv_cache_dtype=kv_cache_dtype)
            * _ceil_div(model.full_attention_layers, pp))


def kv_cache_bytes(
    model: LLMSpec,
    tokens: int,
    *,
    prefill_chunk: int,
    tensor_parallel: int = 1,
    pipeline_parallel: int = 1,
    kv_cache_dtype: str = "auto",
) -> int:
    """KV-cache bytes on one GPU for one sequence of ``tokens`` tokens (block-rounded).

    Sliding-window layers keep at most ``sliding_window + prefill_chunk`` tokens, as vLLM's
    hybrid KV-cache manager does; ``prefill_chunk`` is the step's ``max_num_batched_tokens``
    (the one the service runs with: it differs by device and release, so there is no default).
    """
    tp, pp = max(1, tensor_parallel), max(1, pipeline_parallel)
    per_token_layer = _per_token_layer(model, tensor_parallel=tp, kv_cache_dtype=kv_cache_dtype)
    total = _ceil_div(model.full_attention_layers, pp) * _blocks(tokens)
    if model.sliding_window_layers and model.sliding_window:
        window = min(tokens, model.sliding_window + prefill_chunk)
        total += _ceil_div(model.sliding_window_layers, pp) * _blocks(window)
    return per_token_layer * total


def mxfp4_kernel_for(compute_capability: tuple[int, int]) -> str:
    """The mxfp4 MoE kernel vLLM picks for a GPU of ``(major, minor)`` compute capability (see
    :data:`MXFP4_PADDING`); a caller that does not know it passes
    :data:`ASSUMED_COMPUTE_CAPABILITY`."""
    major = compute_capability[0]
    return "flashinfer" if major >= 10 else "triton" if major == 9 else "marlin"


def moe_padding_bytes(model: LLMSpec, *, tensor_parallel: int, kernel: str) -> int:
    """Extra bytes per GPU that the mxfp4 MoE kernels' padding adds to the experts."""
    width = model.expert_intermediate_size
    if model.weight_dtype != "mxfp4" or not model.experts or not width:
        return 0
    hidden_pad, width_pad = MXFP4_PADDING[kernel]
    shard = _ceil_div(width, tensor_parallel)
    hidden = model.hidden_size
    moe_layers = (model.layers - (model.dense_layers or 0)) // (model.moe_layer_step or 1)
    bits = model.bits_per_quantized_weight
    per_expert = 3 * (_round_up(hidden, hidden_pad) * _round_up(shard, width_pad) - hidden * shard)
    return _ceil_div(model.experts * moe_layers * per_expert * bits, 8)


def weights_per_gpu(model: LLMSpec, *, tensor_parallel: int, pipeline_parallel: int) -> int:
    """Weight bytes on the worst pipeline stage of one TP rank, before kernel padding.

    Layers split evenly by TP; the worst pipeline stage holds ⌈layers/PP⌉ of them plus the
    embeddings: both matrices when PP = 1, one (or a tied copy) on the first and last stage.
    """
    embeddings = model.embedding_bytes
    layer_bytes = model.weight_bytes - embeddings
    stage_layers = _ceil_div(layer_bytes * _ceil_div(model.layers, pipeline_parallel),
                             model.layers)
    if pipeline_parallel > 1 and model.vocab_size is not None:
        embeddings = model.vocab_size * model.hidden_size * model.compute_bytes
    return _ceil_div(stage_layers + embeddings, tensor_parallel)


def forward_bytes(model: LLMSpec, *, tensor_parallel: int, batched_tokens: int) -> int:
    """The profile run's forward-pass peak for ``batched_tokens`` tokens.

    [derived] Per batched token, the residual stream and attention in/out (4 × hidden) and the
    gated MLP's two halves (2 × width ÷ TP; a MoE's routed experts side by side), in the
    compute dtype.
    """
    width = ((model.expert_intermediate_size or model.intermediate_size or 4 * model.hidden_size)
             * (model.experts_per_token or 1))
    per_token = ((4 * model.hidden_size + _ceil_div(2 * width, tensor_parallel))
                 * model.compute_bytes)
    return batched_tokens * per_token


def sampler_bytes(model: LLMSpec, requests: int, buffers: float) -> int:
    """The dummy sampler run's peak for ``requests`` requests.

    _dummy_sampler_run: fp32 logits of the whole vocabulary for each request, gathered on every
    rank, and ``buffers`` working copies of them (the sampler and release's figure:
    :data:`SAMPLER_VOCAB_BUFFERS`, :data:`FLASHINFER_SAMPLER_VOCAB_BUFFERS`, or Model Runner
    V2's in :mod:`gen.serving.memory_profiles`).
    """
    vocab = model.vocab_size or 0
    return int(buffers * requests * vocab * ACTIVATION_LOGIT_BYTES)


def scheduler_errors(max_num_seqs: int, max_num_batched_tokens: int) -> list[str]:
    """[vllm] vllm/config/scheduler.py ``SchedulerConfig._verify_args``: a scheduler step must
    hold one token of every running sequence, or vLLM refuses to start."""
    if max_num_batched_tokens < max_num_seqs:
        return [f"max_num_batched_tokens ({max_num_batched_tokens}) must be greater than or "
                f"equal to max_num_seqs ({max_num_seqs})"]
    return []


def quantization_errors(model: LLMSpec, quantization: str | None) -> list[str]:
    """Why vLLM refuses ``--quantization`` for this checkpoint; empty when it accepts it."""
    if quantization is None:
        return []
    if quantization not in QUANTIZATIONS:
        return [f"quantization must be one of {', '.join(QUANTIZATIONS)}, got {quantization!r}"]
    if model.quantization is None:
        if quantization in ONLINE_QUANTIZATIONS:
            return []  # quantized in flight as vLLM loads the 16-bit checkpoint
        online = " and ".join(ONLINE_QUANTIZATIONS)
        return [f"{model.id} is a {model.weight_dtype} checkpoint: --quantization "
                f"{quantization} needs a {quantization} checkpoint (only {online} quantize "
                "a 16-bit checkpoint in flight)"]
    if quantization not in _SAME_CHECKPOINT.get(model.quantization, frozenset()):
        return [f"{model.id} is a {model.quantization} checkpoint; vLLM refuses --quantization "
                f"{quantization} for it"]
    return []


def effective_model(model: LLMSpec, quantization: str | None) -> LLMSpec:
    """The model as vLLM loads it: in-flight quantization of a 16-bit checkpoint stores its
    linear layers at the method's dtype (fp8: 1 byte; bitsandbytes: NF4), the embeddings and
    lm_head at the compute dtype."""
    dtype = ONLINE_QUANTIZATIONS.get(quantization or "")
    if dtype is None or model.quantization is not None:
        return model
    return replace(model, weight_dtype=dtype, quantization=quantization,
                   unquantized_parameters=model.embedding_parameters)
