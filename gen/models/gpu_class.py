"""``kind: GPUClass`` — a DRA DeviceClass: which devices a claim of this class may get."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, field_validator, model_validator

from gen.models._base import ProfileKind, Spec, shared_default
from gen.models._types import DNSSubdomain, Quantity

NVIDIA_DRIVER = "gpu.nvidia.com"

_RESOURCE_NAME = re.compile(
    r"^(?P<domain>[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)"
    r"/[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)


class GPUMatch(Spec):
    """Structured match, compiled to a CEL selector guarded by the driver name."""

    product: str | None = Field(
        None, description="Exact productName as the DRA driver reports it, or a catalog GPU name."
    )
    architecture: str | None = Field(None, description="e.g. 'Hopper', 'Ampere', 'Blackwell'.")
    min_memory: Quantity | None = Field(
        None, description="Least device memory, e.g. '40Gi' (an H100 80GB reports 81559Mi)."
    )
    mig_profile: str | None = Field(None, description="MIG profile, e.g. '3g.40gb' (type mig).")
    min_compute_capability: str | None = Field(
        None, pattern=r"^\d+\.\d+(?!\n)$", description="Least CUDA compute capability, e.g. '8.0'."
    )
    min_driver_version: str | None = Field(
        None, pattern=r"^\d+\.\d+(\.\d+)?(?!\n)$",
        description="Least NVIDIA driver, e.g. '570.0.0'.",
    )


class Sharing(Spec):
    """GPU sharing through the NVIDIA DRA driver's opaque config."""

    strategy: Literal["time-slicing", "nvidia-mps"] = Field(
        description="'time-slicing' or 'nvidia-mps' (NVIDIA Multi-Process Service)."
    )
    interval: Literal["Default", "Short", "Medium", "Long"] | None = Field(
        None, description="Time-slice length (time-slicing only)."
    )
    active_thread_percentage: int | None = Field(
        None, ge=1, le=100, description="MPS default active thread percentage."
    )
    pinned_memory_limit: Quantity | None = Field(
        None, description="MPS default pinned device memory limit, e.g. '10Gi'."
    )

    @model_validator(mode="after")
    def _strategy_fields(self) -> Sharing:
        if self.strategy == "time-slicing" and (
            self.active_thread_percentage is not None or self.pinned_memory_limit is not None
        ):
            raise ValueError("MPS settings given with strategy 'time-slicing'")
        if self.strategy == "nvidia-mps" and self.interval is not None:
            raise ValueError("'interval' is for strategy 'time-slicing'")
        return self


class GPUClass(ProfileKind):
    """A class of GPU devices; rendered as a DRA DeviceClass."""

    kind: Literal["GPUClass"] = Field(description="Document kind.")
    name: DNSSubdomain = Field(description="DeviceClass name.")
    driver: DNSSubdomain = Field(NVIDIA_DRIVER, description="DRA driver publishing the devices.")
    device_type: Literal["gpu", "mig"] = Field(
        "gpu", description="Full GPUs or MIG instances (the driver's 'type' attribute)."
    )
    match: GPUMatch = Field(
        default_factory=shared_default(GPUMatch), description="Structured match."
    )
    cel: tuple[str, ...] = Field(
        (), description="Extra CEL selectors, ANDed with the structured match."
    )
    sharing: Sharing | None = Field(None, description="Share each device between containers.")
    extended_resource_name: str | None = Field(
        None,
        description="Also expose the class as this extended resource (DRAExtendedResource).",
    )

    @field_validator("extended_resource_name")
    @classmethod
    def _resource_name(cls, value: str | None) -> str | None:
        # Kubernetes' IsExtendedResourceName: 'domain/name' outside kubernetes.io, and
        # 'requests.' + it a qualified name; the API server rejects anything else.
        if value is None:
            return value
        match = _RESOURCE_NAME.fullmatch(value)
        domain = match["domain"] if match else ""
        if (match is None or len(domain) > 244 or value.startswith("requests.")
                or domain == "kubernetes.io" or domain.endswith(".kubernetes.io")):
            raise ValueError(
                f"{value[:80]!r} is not an extended resource name: write 'example.com/gpu' "
                "(a domain outside kubernetes.io, '/', a name of at most 63 characters)"
            )
        return value

    @model_validator(mode="after")
    def _mig_fields(self) -> GPUClass:
        if self.match.mig_profile is not None and self.device_type != "mig":
            raise ValueError("'match.mig_profile' needs device_type 'mig'")
        return self
