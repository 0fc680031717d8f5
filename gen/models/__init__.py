"""Profile kinds: typed, strict, immutable pydantic models, one module per kind.

Importing this package must stay cheap and must not import Jinja2, click or subprocess.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field, TypeAdapter

from gen.models.cluster import Cluster, GitOps, NodePool, Taint
from gen.models.gpu_class import GPUClass, GPUMatch, Sharing
from gen.models.mig_layout import MIGLayout, PerGPULayout
from gen.models.model import ModelProfile
from gen.models.service import GPURequest, InferenceService, MacHost, SecretRef

__all__ = [
    "KINDS",
    "Cluster",
    "GPUClass",
    "GPUMatch",
    "GPURequest",
    "GitOps",
    "InferenceService",
    "MIGLayout",
    "MacHost",
    "ModelProfile",
    "NodePool",
    "PerGPULayout",
    "Profile",
    "SecretRef",
    "Sharing",
    "Taint",
    "profile_adapter",
]

Profile = Annotated[
    Cluster | MIGLayout | GPUClass | InferenceService | ModelProfile,
    Field(discriminator="kind"),
]

KINDS = ("Cluster", "GPUClass", "InferenceService", "MIGLayout", "Model")

_ADAPTER: TypeAdapter[Profile] | None = None


def profile_adapter() -> TypeAdapter[Profile]:
    """The (cached) validator for any profile document."""
    global _ADAPTER
    if _ADAPTER is None:
        _ADAPTER = TypeAdapter(Profile)
    return _ADAPTER
