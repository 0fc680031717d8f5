"""What a vLLM fit is asked with: the serving settings, a service's resolved settings, the
device one worker sees, and the question of :func:`gen.serving.fit.check_fit`.

:class:`Settings` is the one record of the settings vLLM serves with; :class:`ServingConfig`
(a service's, resolved once), :class:`FitRequest` (a question) and
:class:`gen.serving.fit.FitReport` (its answer) extend it rather than repeat its fields.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from gen.serving.memory import MIB
from gen.serving.memory_profiles import (
    PINNED_VLLM_VERSION,
    ReleaseNumbers,
    format_version,
    parse_vllm_version,
)
from gen.serving.model_catalog import LLMSpec

if TYPE_CHECKING:
    from gen.models import InferenceService
    from gen.serving.vllm_releases import VllmRelease

__all__ = ["FitDevice", "FitRequest", "ServingConfig", "Settings", "batch_defaults"]


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
    question's (:class:`FitRequest`) and an answer's (:class:`gen.serving.fit.FitReport`).

    None means "vLLM's default for the device and release" (a report holds them
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

    def setting_values(self) -> dict[str, Any]:
        """This record's :class:`Settings` fields by name: the keywords that rebuild them."""
        return {f.name: getattr(self, f.name) for f in fields(Settings)}

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
                   **{**config.setting_values(), "max_model_len": max_model_len})

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
