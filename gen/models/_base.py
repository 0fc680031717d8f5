"""The base of every profile model: unknown keys are errors, instances are immutable, and
numbers and booleans are strictly typed.

pydantic's lax mode (kept: YAML lists must become tuples) would turn YAML 1.1's ``yes`` /
``true`` into the integer 1 (``replicas: true`` → one replica), a quoted ``"6"`` into the
integer 6, and the integers 0 and 1 into booleans. :meth:`Spec._strict_scalars` puts a
:class:`WrongScalar` in place of each such value before pydantic converts anything, so
pydantic reports it at its key path, and the schema (``integer``, ``boolean``) and the
behaviour say the same thing.
"""

from __future__ import annotations

import datetime
import functools
import types
import typing
from dataclasses import dataclass
from typing import Any, Union

from pydantic import BaseModel, ConfigDict, Field, model_validator

from gen.models._types import Reason, RuleId


def describe_scalar(value: object) -> str:
    """What YAML made of a scalar, in words: ``the boolean true``, ``the number 1.3``."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"the number {value}"
    if value is None:
        return "null (nothing)"
    if isinstance(value, datetime.datetime):
        return f"the timestamp {value.isoformat()}"
    if isinstance(value, datetime.date):
        return f"the date {value.isoformat()}"
    if isinstance(value, str):
        return f"the string {value!r}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return type(value).__name__


_EXPECTED = {int: "an integer", float: "a number", bool: "a boolean (true or false)"}


@dataclass(frozen=True)
class WrongScalar:
    """A scalar of the wrong kind, put where pydantic's lax mode would have converted it:
    pydantic then reports it at its own key path as of the wrong type."""

    value: object
    expected: str

    def __repr__(self) -> str:
        return repr(self.value)


def _applies(annotation: Any, value: Any) -> bool:
    """Whether a member of a union is one ``value``'s shape could be (None for None, a
    container for a container, a scalar type for a scalar)."""
    origin = typing.get_origin(annotation) or annotation
    if origin is typing.Annotated:
        return _applies(typing.get_args(annotation)[0], value)
    if annotation is type(None):
        return value is None
    if annotation is str:
        return isinstance(value, str)
    if annotation in _EXPECTED:
        return isinstance(value, str | int | float)
    if origin in (list, tuple, set, frozenset):
        return isinstance(value, list)
    if origin is dict or (isinstance(origin, type) and issubclass(origin, BaseModel)):
        return isinstance(value, dict)
    return True


def _strict(annotation: Any, value: Any) -> Any:
    """``value`` with every scalar of the wrong kind for ``annotation`` (one that lax mode
    would convert) replaced by a :class:`WrongScalar`; ``value`` itself when none is."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _strict(typing.get_args(annotation)[0], value)
    if origin is Union or origin is types.UnionType:
        fixed = [_strict(m, value) for m in typing.get_args(annotation) if _applies(m, value)]
        return value if not fixed or any(f is value for f in fixed) else fixed[0]
    if annotation in _EXPECTED:
        wrong = isinstance(value, str) or (
            isinstance(value, bool) != (annotation is bool) and isinstance(value, int | float)
        )
        return WrongScalar(value, _EXPECTED[annotation]) if wrong else value
    if origin in (list, tuple, set, frozenset) and isinstance(value, list):
        args = typing.get_args(annotation)
        if origin is tuple and args and args[-1] is not Ellipsis:
            types_ = list(args) + [Any] * (len(value) - len(args))
        else:
            types_ = [args[0] if args else Any] * len(value)
        items = [_strict(t, item) for t, item in zip(types_, value, strict=False)]
        return items if any(a is not b for a, b in zip(items, value, strict=False)) else value
    if origin is dict and isinstance(value, dict):
        value_type = typing.get_args(annotation)[1]
        fixed_items = {k: _strict(value_type, v) for k, v in value.items()}
        return fixed_items if any(fixed_items[k] is not v for k, v in value.items()) else value
    return value


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

    @model_validator(mode="before")
    @classmethod
    def _strict_scalars(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        fields = cls.model_fields
        fixed = data
        for name, value in data.items():
            if isinstance(name, str) and name in fields:
                new = _strict(_field_annotation(cls, name), value)
                if new is not value:
                    fixed = {**fixed, name: new}
        return fixed


@functools.cache
def _field_annotation(cls: type[BaseModel], name: str) -> Any:
    return cls.model_fields[name].annotation


class IgnoreRule(Spec):
    """One rule silenced for this profile, and why."""

    rule: RuleId = Field(description="The rule id, e.g. 'GEN303'.")
    reason: Reason


class LintSettings(Spec):
    """Lint settings of one profile."""

    ignore: tuple[IgnoreRule, ...] = Field(
        (), description="Rules silenced for every finding in this profile (and, in an "
        "InferenceService, every finding about the service), each with a reason.",
    )


class ProfileKind(Spec):
    """Base of the profile kinds (the documents): what every kind accepts."""

    lint: LintSettings | None = Field(
        None, description="Lint settings: rules silenced in this profile, each with a reason.",
    )
