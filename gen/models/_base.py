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


Check = typing.Callable[[Any], Any]
"""A field's strictness check: the value with every scalar of the wrong kind for the field's
annotation (one that lax mode would convert) replaced by a :class:`WrongScalar`; the value
itself (the same object) when none is."""


def _check(annotation: Any) -> Check | None:
    """The :data:`Check` of ``annotation``, made once per field (:func:`_checks`); None
    where no value can hold a scalar of the wrong kind for it (a string, a model, a
    literal: pydantic alone decides those)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _check(typing.get_args(annotation)[0])
    if origin is Union or origin is types.UnionType:
        return _union_check(typing.get_args(annotation))
    if annotation in _EXPECTED:
        return _scalar_check(annotation)
    if origin in (list, tuple, set, frozenset):
        args = typing.get_args(annotation)
        if origin is tuple and args and args[-1] is not Ellipsis:
            return _fixed_tuple_check([_check(a) for a in args])
        item = _check(args[0]) if args else None
        return None if item is None else _list_check(item)
    if origin is dict:
        item = _check(typing.get_args(annotation)[1])
        return None if item is None else _dict_check(item)
    return None


def _scalar_check(annotation: type) -> Check:
    expected, is_bool = _EXPECTED[annotation], annotation is bool

    def check(value: Any) -> Any:
        wrong = isinstance(value, str) or (
            isinstance(value, bool) != is_bool and isinstance(value, int | float))
        return WrongScalar(value, expected) if wrong else value
    return check


def _union_check(members: tuple[Any, ...]) -> Check | None:
    """A union: the first member the value's shape could be (:func:`_applies`) that leaves
    it as it is wins, so the value stands; else the first such member's replacement."""
    checks = [(member, _check(member)) for member in members]
    if all(check is None for _, check in checks):
        return None

    def check(value: Any) -> Any:
        first: Any = _NONE
        for member, member_check in checks:
            if not _applies(member, value):
                continue
            fixed = value if member_check is None else member_check(value)
            if fixed is value:
                return value
            if first is _NONE:
                first = fixed
        return value if first is _NONE else first
    return check


_NONE = object()


def _list_check(item: Check) -> Check:
    def check(value: Any) -> Any:
        if not isinstance(value, list):
            return value
        items = [item(v) for v in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return check


def _fixed_tuple_check(positions: list[Check | None]) -> Check | None:
    """A tuple of fixed length: each position its own check; items past the annotation's
    are anything (pydantic reports the length)."""
    if all(p is None for p in positions):
        return None

    def check(value: Any) -> Any:
        if not isinstance(value, list):
            return value
        items = [v if c is None else c(v) for c, v in zip(positions, value, strict=False)]
        items += value[len(items):]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    return check


def _dict_check(item: Check) -> Check:
    def check(value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        fixed = {k: item(v) for k, v in value.items()}
        return fixed if any(fixed[k] is not v for k, v in value.items()) else value
    return check


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
        checks = _checks(cls)
        fixed = data
        for name, value in data.items():
            check = checks.get(name)
            if check is not None:
                new = check(value)
                if new is not value:
                    fixed = {**fixed, name: new}
        return fixed


@functools.cache
def _checks(cls: type[BaseModel]) -> dict[str, Check]:
    """The strictness check of each field of ``cls`` that has one, by field name."""
    checks = {name: _check(field.annotation) for name, field in cls.model_fields.items()}
    return {name: check for name, check in checks.items() if check is not None}


SpecT = typing.TypeVar("SpecT", bound="Spec")


def shared_default(model: type[SpecT]) -> typing.Callable[[], SpecT]:
    """A ``default_factory`` that makes ``model()`` once, on first use, and gives every
    profile that leaves the key out that one instance: it is frozen, so no profile can
    change what another sees. A fresh instance each time cost a whole validation of the
    model's defaults per document (about seven per service: 39,600 at 100 clusters)."""
    made: list[SpecT] = []

    def default() -> SpecT:
        if not made:
            made.append(model())
        return made[0]
    return default


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
