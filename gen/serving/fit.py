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

Each term and constant lives, with its source, in :mod:`gen.serving.memory`.

:func:`check_fit` is pure and never raises for "does not fit": the answer is in the report,
term by term (:meth:`FitReport.terms`), so it can be compared line by line with vLLM's log.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from gen.errors import CatalogLookupError
from gen.nvidia.gpus import gpu_catalog
from gen.serving.memory import (
    ACTIVATION_LOGIT_BYTES,
    ASSUMED_COMPUTE_CAPABILITY,
    CUDA_GRAPH_BYTES,
    GIB,
    KV_BLOCK_TOKENS,
    KV_CACHE_DTYPES,
    MIB,
    NCCL_BYTES,
    NON_TORCH_BYTES,
    VLLM_SOURCE,
    effective_model,
    forward_bytes,
    kv_bytes_per_token,
    kv_cache_bytes,
    moe_padding_bytes,
    mxfp4_kernel_for,
    quantization_errors,
    sampler_bytes,
    scheduler_errors,
    weights_per_gpu,
)
from gen.serving.memory_profiles import (
    PINNED_VLLM_VERSION,
    MemoryProfile,
    ReleaseNumbers,
    format_version,
    memory_profile_for,
    model_runner_for,
    parse_vllm_version,
)
from gen.serving.model_catalog import LLMSpec

if TYPE_CHECKING:
    from gen.models import InferenceService
    from gen.serving.vllm_releases import VllmRelease

__all__ = [  # with the constants of gen.serving.memory that callers of the fit read
    "ACTIVATION_LOGIT_BYTES", "CUDA_GRAPH_BYTES", "GIB", "KV_BLOCK_TOKENS", "NCCL_BYTES",
    "NON_TORCH_BYTES", "BudgetTerm", "FitDevice", "FitReport", "FitRequest", "ServingConfig",
    "Settings", "batch_defaults", "check_fit", "kv_cache_bytes", "resolve_device",
]


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
        multiprocessors: the SM count where known (a MIG slice's); vLLM 0.33 refuses FlashInfer's
            sampler with 16 or fewer. None: a whole GPU, more than that.
    """

    name: str
    memory_mib: int
    is_mig: bool = False
    unified_memory: bool = False
    cuda_total_mib: int | None = None
    compute_capability: str = ""
    cuda_total_logged: bool = False
    multiprocessors: int | None = None

    @property
    def memory_bytes(self) -> int:
        """Device memory in bytes (NVML)."""
        return self.memory_mib * MIB

    @property
    def cuda_total_bytes(self) -> int:
        """The total vLLM budgets from, in bytes."""
        return (self.cuda_total_mib if self.cuda_total_mib is not None else self.memory_mib) * MIB

    @property
    def capability(self) -> tuple[int, int] | None:
        """``compute_capability`` as ``(major, minor)``; None when unknown."""
        major, _, minor = self.compute_capability.partition(".")
        return (int(major), int(minor)) if major.isdigit() and minor.isdigit() else None


_PARALLELISM = MappingProxyType({"json": "parallelism"})


@dataclass(frozen=True, kw_only=True)
class Settings:
    """The settings vLLM serves with, as one record: a service's (:class:`ServingConfig`), a
    question's (:class:`FitRequest`) and an answer's (:class:`FitReport`).

    None means "vLLM's default for the device and release" (a :class:`FitReport` holds them
    resolved).

    Attributes:
        max_model_len: context length; None: the model's ``max_context`` (a service: the
            largest that fits, :func:`gen.fleet.sizing.resolved_max_model_len`).
        gpu_memory_utilization: vLLM's share of the CUDA-visible total.
        kv_cache_dtype: KV cache element type (:data:`gen.serving.memory.KV_CACHE_DTYPES`).
        max_num_seqs: concurrent sequences; None: vLLM's (:func:`batch_defaults`).
        max_num_batched_tokens: tokens per scheduler step; None: vLLM's.
        quantization: ``--quantization``; None: the checkpoint's own.
        enforce_eager: no CUDA graphs.
        vllm_version: the release whose defaults and memory accounting apply
            (:mod:`gen.serving.memory_profiles`).
        tensor_parallel: the tensor-parallel size; None: GPUs ÷ ``pipeline_parallel``.
        pipeline_parallel: the pipeline-parallel size.
    """

    max_model_len: int | None = None
    gpu_memory_utilization: float = 0.90
    kv_cache_dtype: str = "auto"
    max_num_seqs: int | None = None
    max_num_batched_tokens: int | None = None
    quantization: str | None = None
    enforce_eager: bool = False
    vllm_version: ReleaseNumbers = PINNED_VLLM_VERSION
    tensor_parallel: int | None = field(default=None, metadata=_PARALLELISM)
    pipeline_parallel: int = field(default=1, metadata=_PARALLELISM)

    def settings(self) -> Settings:
        """This record's :class:`Settings` alone (without what a subclass adds)."""
        return Settings(**_settings_of(self))

    def settings_json(self) -> dict[str, dict[str, Any]]:
        """``gen fit --json``'s ``settings`` and ``parallelism`` blocks: every field in
        declaration order, under the block its ``json`` metadata names (``settings`` when
        none); ``vllm_version`` as ``major.minor.patch``."""
        blocks: dict[str, dict[str, Any]] = {"settings": {}, "parallelism": {}}
        for f in fields(Settings):
            value = getattr(self, f.name)
            if f.name == "vllm_version":
                value = format_version(value)
            blocks[f.metadata.get("json", "settings")][f.name] = value
        return blocks


def _settings_of(record: Settings) -> dict[str, Any]:
    """``record``'s :class:`Settings` fields by name: the keywords that rebuild them."""
    return {f.name: getattr(record, f.name) for f in fields(Settings)}


@dataclass(frozen=True, kw_only=True)
class ServingConfig(Settings):
    """The :class:`Settings` of one service, resolved once: lint, the rendered args and
    ``gen fit --service`` all read this, so they cannot disagree.

    Everything but ``max_model_len`` is resolved: None there means "the largest that fits
    every device the service can get" (:func:`gen.fleet.sizing.resolved_max_model_len`).
    ``vllm_version`` is the release of the service's image (:mod:`gen.serving.image`; gen's
    pin when the image does not say).
    """

    @classmethod
    def of(cls, service: InferenceService, devices: Sequence[FitDevice] = ()) -> ServingConfig:
        """The settings ``service`` runs with on ``devices`` (every device it can get): its
        own, else vLLM's defaults for that release, passed explicitly.

        ``max_num_batched_tokens`` left out is what ``vllm serve`` of the image's release
        would choose on the devices (:func:`batch_defaults`); when they fall in different
        tiers, the smallest of their defaults, so that the one value the Deployment passes is
        one vLLM would choose on some device and the budget holds on all of them. Without
        devices (a service no pool offers devices to), the release's smallest tier.
        """
        serving = service.serving
        version = _image_version(service)
        tokens = serving.max_num_batched_tokens
        if tokens is None:
            tokens = min((batch_defaults(d, version)[1] for d in devices),
                         default=_release(version).batch_tiers[-1].api_server[1])
        return cls(
            max_model_len=serving.max_model_len,
            max_num_seqs=serving.max_num_seqs,
            max_num_batched_tokens=tokens,
            gpu_memory_utilization=serving.gpu_memory_utilization,
            kv_cache_dtype=serving.kv_cache_dtype,
            quantization=serving.quantization,
            # llama.cpp and MLX capture no CUDA graphs.
            enforce_eager=serving.enforce_eager or service.engine != "vllm",
            tensor_parallel=service.parallelism.tensor,
            pipeline_parallel=service.parallelism.pipeline,
            vllm_version=version,
        )


def _image_version(service: InferenceService) -> ReleaseNumbers:
    """The vLLM release of the service's image; gen's pin for another engine or an image
    whose tag does not say."""
    if service.engine != "vllm":
        return PINNED_VLLM_VERSION
    from gen.serving.image import service_image

    version = service_image(service).version
    return PINNED_VLLM_VERSION if version is None else parse_vllm_version(version)


def _release(version: ReleaseNumbers) -> VllmRelease:
    """The release whose facts apply; a release older than gen's facts gets the oldest."""
    from gen.serving.vllm_releases import VllmVersion, known_releases, release_for

    return release_for(VllmVersion(version)) or known_releases()[0]


@dataclass(frozen=True, kw_only=True)
class FitRequest(Settings):
    """One question: does ``model`` fit on ``gpus`` × ``device`` with these :class:`Settings`?

    ``max_num_seqs`` and ``max_num_batched_tokens`` left None are vLLM's effective defaults
    for the device (:func:`batch_defaults`). What only a question sets, for comparing with a
    vLLM log:

    - ``estimate_cudagraphs``: whether the CUDA-graph estimate is subtracted; None: the
      release's default.
    - ``flashinfer_sampler``: FlashInfer's top-k/top-p sampler; None: vLLM's default for
      the GPU.
    - ``mxfp4_kernel``: marlin, triton or flashinfer; None: vLLM's choice for the GPU.
    """

    model: LLMSpec
    device: FitDevice
    gpus: int = 1
    estimate_cudagraphs: bool | None = None
    flashinfer_sampler: bool | None = None
    mxfp4_kernel: str | None = None

    @classmethod
    def from_config(
        cls,
        config: Settings,
        model: LLMSpec,
        device: FitDevice,
        *,
        gpus: int,
        max_model_len: int | None,
    ) -> FitRequest:
        """The question a resolved :class:`ServingConfig` asks of one device."""
        return cls(model=model, device=device, gpus=gpus,
                   **{**_settings_of(config), "max_model_len": max_model_len})

    @classmethod
    def for_service(
        cls,
        service: InferenceService,
        model: LLMSpec,
        device: FitDevice,
        *,
        max_model_len: int | None,
        config: ServingConfig | None = None,
        gpus: int | None = None,
        kv_cache_dtype: str | None = None,
    ) -> FitRequest:
        """The question a service asks of one device: its :class:`ServingConfig`.

        ``config`` is the service's, resolved for every device it can get
        (:func:`gen.fleet.sizing.serving_config`); without it, resolved for this device alone.
        ``gpus`` defaults to the service's GPU request (``gpu.count``, else 1) and
        ``kv_cache_dtype`` to the service's; an engine that runs one worker per device or
        no fp8 KV cache (llama.cpp on Apple GPUs) passes its own.
        """
        if config is None:
            config = ServingConfig.of(service, (device,))
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


def batch_defaults(device: FitDevice,
                   vllm_version: ReleaseNumbers = PINNED_VLLM_VERSION) -> tuple[int, int]:
    """vLLM's ``(max_num_seqs, max_num_batched_tokens)`` for ``vllm serve`` on ``device`` in
    release ``vllm_version``: the tiers of its ``get_batch_defaults``
    (:meth:`gen.serving.vllm_releases.VllmRelease.batch_defaults`), which test the total CUDA
    reports, the device name (A100) and the compute capability (GB10). A MIG slice gets the
    smallest tier: vLLM cannot read a MIG device's name and memory through NVML and falls back
    to it (vllm-project/vllm#55381).
    """
    release = _release(vllm_version)
    if device.is_mig:
        return release.batch_tiers[-1].api_server
    return release.batch_defaults(memory_bytes=device.cuda_total_bytes, name=device.name,
                                  compute_capability=device.capability)


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


@dataclass(frozen=True)
class _Workers:
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


def _workers(request: FitRequest) -> _Workers:
    seqs, tokens = batch_defaults(request.device, request.vllm_version)
    return _Workers(
        tensor_parallel=max(1, request.tp),
        pipeline_parallel=max(1, request.pipeline_parallel),
        max_num_seqs=max(1, request.max_num_seqs or seqs),
        max_num_batched_tokens=max(1, request.max_num_batched_tokens or tokens),
    )


def _kv_need(model: LLMSpec, workers: _Workers, kv_cache_dtype: str, tokens: int) -> int:
    """KV bytes per GPU of one ``tokens``-token sequence."""
    return kv_cache_bytes(model, tokens, tensor_parallel=workers.tensor_parallel,
                          pipeline_parallel=workers.pipeline_parallel,
                          kv_cache_dtype=kv_cache_dtype,
                          prefill_chunk=workers.max_num_batched_tokens)


def _largest_fitting_len(model: LLMSpec, workers: _Workers, kv_cache_dtype: str,
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


def _gib(value: int) -> str:
    return f"{value / GIB:.2f} GiB"


@dataclass(frozen=True)
class _Engine:
    """What the vLLM release does for this model on this device."""

    profile: MemoryProfile
    runner: str
    flashinfer: bool
    estimates_graphs: bool
    graph_bytes: int
    sampler_buffers: float


def _engine(request: FitRequest, model: LLMSpec) -> _Engine:
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
    return _Engine(profile, runner, flashinfer, estimates and not request.enforce_eager,
                   graph_bytes, buffers)


@dataclass(frozen=True)
class _Budget:
    """The budget's numbers per GPU, before the KV cache (:func:`_budget`)."""

    cuda_total: int
    budget: int
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
        return self.non_torch + self.activation + self.cuda_graphs

    @property
    def available(self) -> int:
        return self.budget - self.weights - self.overhead


def _budget(request: FitRequest, model: LLMSpec, engine: _Engine, workers: _Workers) -> _Budget:
    """The arithmetic of the budget (its prose: :func:`_budget_terms`)."""
    device = request.device
    tp, pp = workers.tensor_parallel, workers.pipeline_parallel
    kernel = request.mxfp4_kernel or mxfp4_kernel_for(
        device.capability or ASSUMED_COMPUTE_CAPABILITY)
    padding = moe_padding_bytes(model, tensor_parallel=tp, kernel=kernel)
    return _Budget(
        cuda_total=device.cuda_total_bytes,
        budget=int(device.cuda_total_bytes * request.gpu_memory_utilization),
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


def _graph_source(request: FitRequest, engine: _Engine) -> str:
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


def _budget_terms(request: FitRequest, model: LLMSpec, engine: _Engine, workers: _Workers,
                  b: _Budget) -> tuple[BudgetTerm, ...]:
    """The budget's lines before the KV cache, each with the source of its figure."""
    tp, pp = workers.tensor_parallel, workers.pipeline_parallel
    pad_note = (f", of which {_gib(b.moe_padding)} mxfp4 MoE padding for the {b.mxfp4_kernel} "
                f"kernel ({VLLM_SOURCE} vllm/model_executor/layers/quantization/mxfp4.py)"
                if b.moe_padding else "")
    which = "sampler pass" if b.sampler >= b.forward else "forward pass"
    sampler_kind = "FlashInfer" if engine.flashinfer else "PyTorch"
    version = format_version(request.vllm_version)
    return (
        BudgetTerm("cuda_total", b.cuda_total, _total_source(request.device)),
        BudgetTerm("budget", b.budget, f"cuda_total × gpu_memory_utilization "
                   f"{request.gpu_memory_utilization:.2f} ({VLLM_SOURCE} gpu_worker.py "
                   "requested_memory)"),
        BudgetTerm("weights", b.weights, f"the checkpoint's weights ÷ TP={tp} on the worst of "
                   f"PP={pp} stages{pad_note}; vLLM logs 'Model loading took X GiB'"),
        BudgetTerm("activation", b.activation,
                   f"profile-run torch peak, the {which}: forward {_gib(b.forward)} for "
                   f"{workers.max_num_batched_tokens} batched tokens, sampler "
                   f"{_gib(b.sampler)} = {engine.sampler_buffers} × {workers.requests} requests "
                   f"× {model.vocab_size or 0} vocab × {ACTIVATION_LOGIT_BYTES} B (vLLM "
                   f"{version}, {engine.runner} model runner, {sampler_kind} top-k/top-p; "
                   "profile_run, _dummy_sampler_run)"),
        BudgetTerm("non_torch", b.non_torch, "what the profile leaves outside the weights "
                   "(CUDA/cuBLAS workspaces" + (", NCCL" if workers.multi_gpu else "")
                   + f"; vLLM {engine.profile.label} counts non-KV memory as "
                   f"{engine.profile.non_kv_rule})"),
        BudgetTerm("cuda_graphs", b.cuda_graphs, _graph_source(request, engine)),
    )


@dataclass(frozen=True)
class _KVFit:
    """The KV cache against the pool left: one full sequence, the rate, the longest fit."""

    length: int
    kv_min: int
    per_token: int
    length_fit: int


def _kv_fit(request: FitRequest, model: LLMSpec, workers: _Workers, available: int) -> _KVFit:
    length = max(0, request.model_len)
    dtype = request.kv_cache_dtype
    return _KVFit(
        length=length,
        kv_min=_kv_need(model, workers, dtype, length),
        per_token=kv_bytes_per_token(model, tensor_parallel=workers.tensor_parallel,
                                     pipeline_parallel=workers.pipeline_parallel,
                                     kv_cache_dtype=dtype),
        length_fit=_largest_fitting_len(model, workers, dtype, available),
    )


def _kv_terms(request: FitRequest, b: _Budget, kv: _KVFit) -> tuple[BudgetTerm, ...]:
    return (
        BudgetTerm("kv_cache_available", b.available, "budget − weights − activation − "
                   "non_torch − cuda_graphs; vLLM logs 'Available KV cache memory: X GiB'"),
        BudgetTerm("kv_cache_min", kv.kv_min, f"one {kv.length}-token sequence at "
                   f"{kv.per_token:,} B/token ({request.kv_cache_dtype} KV, {KV_BLOCK_TOKENS}-"
                   "token blocks)"),
    )


def _memory_errors(request: FitRequest, b: _Budget, kv: _KVFit) -> list[str]:
    """Why the memory does not suffice (in vLLM's words where it has them); empty if it does."""
    device = request.device
    if b.weights + b.overhead > b.budget:
        return [
            f"weights ({_gib(b.weights)}) and activations/runtime ({_gib(b.overhead)}: "
            f"activation {_gib(b.activation)}, non-torch {_gib(b.non_torch)}, CUDA graphs "
            f"{_gib(b.cuda_graphs)}) per GPU exceed the budget of {_gib(b.budget)} "
            f"({request.gpu_memory_utilization:.2f} × {_gib(device.cuda_total_bytes)}); "
            + ("use a larger MIG profile or a quantized checkpoint" if device.is_mig
               else "use more GPUs (TP), a quantized checkpoint or a larger device")
        ]
    if kv.kv_min > b.available:
        return [
            f"To serve at least one request with the model's max seq len ({kv.length}), "
            f"{_gib(kv.kv_min)} KV cache is needed, which is larger than the available KV "
            f"cache memory ({_gib(b.available)} = budget {_gib(b.budget)} − weights "
            f"{_gib(b.weights)} − activation {_gib(b.activation)} − non-torch "
            f"{_gib(b.non_torch)} − CUDA graphs {_gib(b.cuda_graphs)}); the estimated maximum "
            f"model length is {kv.length_fit}. Lower --max-model-len, use --kv-cache-dtype "
            "fp8, lower --max-num-seqs, raise --gpu-memory-utilization or add GPUs"
        ]
    return []


def check_fit(request: FitRequest) -> FitReport:
    """Budget ``request`` per GPU and decide whether vLLM can start and serve one sequence."""
    workers = _workers(request)
    errors = (_parallelism_errors(request, request.tp, request.pipeline_parallel)
              + _setting_errors(request)
              + scheduler_errors(workers.max_num_seqs, workers.max_num_batched_tokens))
    model = effective_model(request.model, request.quantization)
    engine = _engine(request, model)
    b = _budget(request, model, engine, workers)
    available = b.available
    kv = _kv_fit(request, model, workers, available)
    errors += _memory_errors(request, b, kv)
    device = request.device
    return FitReport(
        **{**_settings_of(request), "tensor_parallel": request.tp,
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
        budget=b.budget,
        weights=b.weights,
        non_torch=b.non_torch,
        activation=b.activation,
        overhead=b.overhead,
        kv_cache_min=kv.kv_min,
        kv_cache_available=available,
        headroom=available - kv.kv_min,
        kv_bytes_per_token=kv.per_token,
        kv_cache_tokens=max(0, available) // kv.per_token if kv.per_token else 0,
        max_model_len_fit=kv.length_fit,
        max_concurrent_sequences=max(0, available) // kv.kv_min if kv.kv_min > 0 else 0,
        cuda_total=b.cuda_total,
        cuda_graphs=b.cuda_graphs,
        terms=_budget_terms(request, model, engine, workers, b) + _kv_terms(request, b, kv),
    )


def _warnings(request: FitRequest, workers: _Workers) -> list[str]:
    device, out = request.device, []
    tp, pp = workers.tensor_parallel, workers.pipeline_parallel
    remainder = int(device.cuda_total_bytes * (1 - request.gpu_memory_utilization))
    # The checkpoint's model runner (not the online-fp8 model's) decides this warning.
    engine = _engine(request, request.model)
    if (not engine.estimates_graphs and not request.enforce_eager
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
