"""The base of every profile model: unknown keys are errors, instances are immutable."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Spec(BaseModel):
    """Base for profile documents and their parts."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        strict=False,
        validate_default=True,
        use_attribute_docstrings=False,
        regex_engine="python-re",
    )
