"""The strict-scalar checks of :class:`gen.models._base.Spec`, made once per field, against
the rule written out directly: every scalar that pydantic's lax mode would convert is put
as a WrongScalar, and a value with none is handed on as the same object."""

from __future__ import annotations

import types
import typing
from typing import Any, Union

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gen.models
from gen.models import _base
from gen.models._base import _EXPECTED, Spec, WrongScalar, _applies, _check


def _reference(annotation: Any, value: Any) -> Any:
    """The rule, recursively, as it reads: the oracle of the compiled checks."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _reference(typing.get_args(annotation)[0], value)
    if origin is Union or origin is types.UnionType:
        fixed = [_reference(m, value) for m in typing.get_args(annotation)
                 if _applies(m, value)]
        return value if not fixed or any(f is value for f in fixed) else fixed[0]
    if annotation in _EXPECTED:
        wrong = isinstance(value, str) or (
            isinstance(value, bool) != (annotation is bool) and isinstance(value, int | float))
        return WrongScalar(value, _EXPECTED[annotation]) if wrong else value
    if origin in (list, tuple, set, frozenset) and isinstance(value, list):
        args = typing.get_args(annotation)
        if origin is tuple and args and args[-1] is not Ellipsis:
            types_ = list(args) + [Any] * (len(value) - len(args))
        else:
            types_ = [args[0] if args else Any] * len(value)
        items = [_reference(t, item) for t, item in zip(types_, value, strict=False)]
        return items if any(a is not b for a, b in zip(items, value, strict=False)) else value
    if origin is dict and isinstance(value, dict):
        value_type = typing.get_args(annotation)[1]
        fixed_items = {k: _reference(value_type, v) for k, v in value.items()}
        return fixed_items if any(fixed_items[k] is not v for k, v in value.items()) else value
    return value


def _models() -> list[type[Spec]]:
    seen: list[type[Spec]] = []
    todo = [Spec]
    while todo:
        cls = todo.pop()
        for sub in cls.__subclasses__():
            if sub not in seen:
                seen.append(sub)
                todo.append(sub)
    return seen


_ = gen.models  # every model class is defined once the package is imported
ANNOTATIONS = sorted({repr(f.annotation): f.annotation for cls in _models()
                      for f in cls.model_fields.values()}.items())
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.floats(-2, 2),
                    st.sampled_from(["", "6", "yes", "true", "a"]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(["a", "b", "name"]), inner,
                                                 max_size=3)), max_leaves=8)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def test_the_models_have_fields_to_check() -> None:
    assert len(ANNOTATIONS) > 50
    assert any(_check(a) is not None for _, a in ANNOTATIONS)
    assert any(_check(a) is None for _, a in ANNOTATIONS)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(ANNOTATIONS), VALUES)
def test_each_field_check_is_the_rule(named: tuple[str, Any], value: Any) -> None:
    annotation = named[1]
    expected = _reference(annotation, value)
    check = _check(annotation)
    got = value if check is None else check(value)
    assert _same(got, expected), named[0]
    assert (got is value) == (expected is value), named[0]


@given(VALUES)
def test_wrong_scalars_are_found_through_unions_and_containers(value: Any) -> None:
    for annotation in (int | None, tuple[int, ...], dict[str, float], tuple[int, str],
                       list[bool | str], typing.Annotated[int, "x"] | list[int]):
        check = _check(annotation)
        assert check is not None
        got, expected = check(value), _reference(annotation, value)
        assert _same(got, expected) and (got is value) == (expected is value)


def test_a_spec_checks_only_the_fields_that_can_hold_a_wrong_scalar() -> None:
    checks = _base._checks(gen.models.Cluster)
    assert "feature_gates" in checks  # a map of booleans
    assert "name" not in checks  # a string: pydantic alone decides
    assert "node_pools" not in checks  # models: each pool checks its own fields


def test_a_left_out_section_is_one_shared_frozen_default() -> None:
    """Every service that leaves ``storage`` out gets the same frozen instance, equal to a
    fresh one; one that gives it gets its own."""
    from pydantic import ValidationError

    from gen.models import InferenceService
    from gen.models.service import Storage

    base = {"kind": "InferenceService", "name": "a", "model": "org/m", "clusters": ["c"],
            "gpu": {"gpu_class": "g", "count": 1}}
    one = InferenceService.model_validate(base)
    two = InferenceService.model_validate({**base, "name": "b"})
    assert one.storage is two.storage and one.storage == Storage()
    given = InferenceService.model_validate({**base, "storage": {"storage_class": "x"}})
    assert given.storage is not one.storage and given.storage.storage_class == "x"
    with pytest.raises(ValidationError):
        one.storage.storage_class = "y"  # type: ignore[misc]  # frozen: none can change it
