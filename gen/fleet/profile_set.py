"""The profiles of a fleet as records: each validated profile with its source document."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from gen.errors import SourceLocation
from gen.fleet.loader import Document
from gen.fleet.suppression import Suppression
from gen.models import Cluster, GPUClass, InferenceService, MIGLayout, ModelProfile

__all__ = ["Located", "ProfileSet"]

T = TypeVar("T")


@dataclass(frozen=True)
class Located(Generic[T]):
    """A validated profile and the document it came from."""

    value: T
    document: Document

    def at(self, *key_path: str | int) -> SourceLocation:
        """Location of ``key_path`` inside this document (or the closest parent)."""
        return self.document.locate(key_path)[0]


@dataclass(frozen=True)
class ProfileSet:
    """Every profile of a fleet, by kind and name, each with its source document."""

    clusters: Mapping[str, Located[Cluster]] = field(default_factory=dict)
    mig_layouts: Mapping[str, Located[MIGLayout]] = field(default_factory=dict)
    gpu_classes: Mapping[str, Located[GPUClass]] = field(default_factory=dict)
    services: Mapping[str, Located[InferenceService]] = field(default_factory=dict)
    models: Mapping[str, Located[ModelProfile]] = field(default_factory=dict)
    suppressions: tuple[Suppression, ...] = ()
    """Every suppression of the fleet: inline markers, profiles' ``lint.ignore`` lists and
    the fleet-wide ``gen.yaml`` (:mod:`gen.fleet.suppress`)."""
    model_configs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per Model profile with a ``config``: the LLMSpec values read from that config.json."""
