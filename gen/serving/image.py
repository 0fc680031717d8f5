"""The engine image a vLLM service runs, and what gen reads from it.

A service pulls ``serving.image`` (else gen's pinned image). Its facts (the vLLM release, the
CUDA runtime) are read from ``serving.image_of`` when the profile names the upstream tag of a
mirrored image, else from the image itself (:mod:`gen.serving.engines`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from gen.serving.engines import EngineImage, default_image, image_info, vllm_version_of

if TYPE_CHECKING:
    from gen.models import InferenceService

__all__ = ["ServiceImage", "service_image"]


@dataclass(frozen=True)
class ServiceImage:
    """The image of one service.

    Attributes:
        pulled: the reference the pods pull.
        reference: the reference gen reads facts from (``image_of`` or ``pulled``).
        explicit: the profile sets ``serving.image`` (else gen's pin runs).
        key: the profile key a finding about the image points at: ``serving.image_of``,
            ``serving.image``, or ``engine`` for gen's pin.
        info: the CUDA runtime and driver floor, None when gen cannot tell.
        version: the vLLM release (``0.33.0``), None when the tag does not say.
    """

    pulled: str
    reference: str
    explicit: bool
    key: tuple[str, ...]
    info: EngineImage | None
    version: str | None

    @property
    def field(self) -> str:
        """:attr:`key` as a key path (``serving.image``)."""
        return ".".join(self.key)


def service_image(service: InferenceService) -> ServiceImage:
    """What ``service`` runs (see the module docstring)."""
    serving = service.serving
    pulled = serving.image or default_image("vllm").image
    reference = serving.image_of or pulled
    key = (("serving", "image_of") if serving.image_of else
           ("serving", "image") if serving.image else ("engine",))
    return ServiceImage(
        pulled=pulled, reference=reference, explicit=serving.image is not None, key=key,
        info=image_info(reference), version=vllm_version_of(reference),
    )
