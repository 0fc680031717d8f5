"""``kind: MIGLayout`` — how the GPUs of a node are partitioned into MIG instances."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from gen.models._base import ProfileKind, Spec
from gen.models._types import DNSLabel

MIGProfileCounts = dict[str, Annotated[int, Field(ge=0)]]
"""MIG profile → instances; a count is never negative (pydantic reports it at its key)."""


class PerGPULayout(Spec):
    """MIG instances for some GPU indices of the node."""

    gpus: tuple[int, ...] = Field(min_length=1, description="GPU indices (0-based) on the node.")
    profiles: MIGProfileCounts = Field(
        description="MIG profile → instances per GPU, e.g. {'3g.40gb': 2}. Empty: MIG disabled."
    )

    @field_validator("gpus")
    @classmethod
    def _indices(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if any(i < 0 for i in value):
            raise ValueError("GPU indices are 0-based: none can be negative")
        return value

    @field_validator("profiles")
    @classmethod
    def _counts(cls, value: MIGProfileCounts) -> MIGProfileCounts:
        return _some_instance(value)


def _some_instance(value: MIGProfileCounts) -> MIGProfileCounts:
    """Refuse a non-empty map whose counts are all 0: mig-parted rejects it."""
    if value and not any(value.values()):
        raise ValueError(
            "every count is 0, which mig-parted rejects; give at least one instance "
            "(or an empty map)"
        )
    return value


class MIGLayout(ProfileKind):
    """A named MIG partitioning, referenced by node pools."""

    kind: Literal["MIGLayout"] = Field(description="Document kind.")
    name: DNSLabel = Field(
        description="Layout name; nodes are labelled nvidia.com/mig.config=<name>."
    )
    gpu: str = Field(description="GPU model the layout is for (catalog id, PCI id, product name).")
    profiles: MIGProfileCounts | None = Field(
        None, description="MIG profile → instances, applied to every GPU of the node."
    )
    per_gpu: tuple[PerGPULayout, ...] | None = Field(
        None, description="Different layouts per GPU index (mixed nodes)."
    )

    @field_validator("profiles")
    @classmethod
    def _counts(cls, value: MIGProfileCounts | None) -> MIGProfileCounts | None:
        return None if value is None else _some_instance(value)

    @model_validator(mode="after")
    def _one_form(self) -> MIGLayout:
        if (self.profiles is None) == (self.per_gpu is None):
            raise ValueError("give exactly one of 'profiles' (all GPUs) or 'per_gpu'")
        for counts in self.all_counts():
            for profile, count in counts.items():
                if count < 0 or count > 12:
                    raise ValueError(f"count for {profile!r} must be between 0 and 12")
        if self.per_gpu is not None:
            seen: set[int] = set()
            for entry in self.per_gpu:
                clash = seen.intersection(entry.gpus)
                if clash:
                    raise ValueError(f"GPU index {min(clash)} appears in more than one entry")
                seen.update(entry.gpus)
        return self

    def all_counts(self) -> list[MIGProfileCounts]:
        """Every profile→count map of the layout."""
        if self.profiles is not None:
            return [self.profiles]
        return [entry.profiles for entry in self.per_gpu or ()]
