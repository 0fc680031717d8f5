"""Embedded strict JSON Schema validation of rendered manifests, through ``jsonschema-rs``.

Kubernetes schemas come from the ``kubernetes-validate`` package's bundled data (strict
variants: unknown fields are errors), for the cluster's own minor version. Their ``$ref`` values
point into one shared ``_definitions.json`` per version, which is read and handed to a
``jsonschema_rs.Registry`` once per minor. Custom resources gen emits are checked against
gen's own schemas (:mod:`gen.emit.crd_schemas`), draft-07 or 2020-12 as each declares. A kind
with no schema is an error.

Validators are compiled once per (schema minor, apiVersion, kind) per process and kept in
one cache, :data:`_VALIDATORS` (:func:`compiled`, :func:`warm`), registered with
:mod:`gen.caches` like every other cache. A render fills it in the parent before it forks
its workers, so they inherit the compiled validators;
``jsonschema_rs`` validators do not pickle, so spawned workers compile their own.
``format`` is not checked, as ``jsonschema`` does not check it unless asked to.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from gen.caches import BoundedCache, memoize, once
from gen.errors import Finding, SourceLocation
from gen.fleet.loader import format_key_path

__all__ = ["SchemaValidator", "compiled", "schema_version_for", "warm"]

_GROUP = re.compile(r"^([^./]*)(?:\.[^/]*)?/")
_DEFINITIONS_URI = "https://kubernetes.io/api/_definitions.json"

ValidatorKey = tuple[int, str, str]
"""(schema minor, apiVersion, kind)."""

_VALIDATORS: BoundedCache[ValidatorKey, Any] = BoundedCache("gen.emit.validate.validators", 4096)
"""The process-wide validator cache: key → compiled ``jsonschema_rs`` validator, or ``None``
when no schema describes the kind in that version."""


@once
def _schema_root() -> Path:
    root = resources.files("kubernetes_validate") / "kubernetes-json-schema"
    return Path(str(root))


@once
def _available_minors() -> tuple[int, ...]:
    minors = []
    for entry in _schema_root().iterdir():
        match = re.match(r"^v1\.(\d+)\.0-local-strict$", entry.name)
        if match:
            minors.append(int(match.group(1)))
    return tuple(sorted(minors))


@memoize(maxsize=None)
def schema_version_for(minor: int) -> int:
    """The bundled schema minor used for a cluster minor: the newest not newer than it."""
    available = _available_minors()
    older = [m for m in available if m <= minor]
    return older[-1] if older else available[0]


@memoize(maxsize=64)
def _registry(minor: int) -> Any:
    """The ``_definitions.json`` of one version, parsed once, as a jsonschema-rs registry."""
    import jsonschema_rs

    path = _schema_root() / f"v1.{minor}.0-local-strict" / "_definitions.json"
    definitions = json.loads(path.read_text(encoding="utf-8"))
    return jsonschema_rs.Registry([(_DEFINITIONS_URI, definitions)])


def _schema_file(minor: int, api_version: str, kind: str) -> Path:
    group_version = _GROUP.sub(r"\1-", api_version)
    return _schema_root() / f"v1.{minor}.0-local-strict" / f"{kind.lower()}-{group_version}.json"


def _build(minor: int, api_version: str, kind: str) -> Any:
    """Compile the validator of one kind in one schema version (``None``: no schema)."""
    import jsonschema_rs

    from gen.emit.crd_schemas import custom_schema

    file = _schema_file(minor, api_version, kind)
    if file.is_file():
        schema = json.loads(file.read_text(encoding="utf-8"))
        return jsonschema_rs.Draft202012Validator(
            schema, registry=_registry(minor), validate_formats=False)
    custom = custom_schema(api_version, kind)
    if custom is None:
        return None
    draft07 = "draft-07" in str(custom.get("$schema", ""))
    cls: Any = jsonschema_rs.Draft7Validator if draft07 else jsonschema_rs.Draft202012Validator
    return cls(custom, validate_formats=False)


def compiled(minor: int, api_version: str, kind: str) -> Any:
    """The cached validator for a kind in schema version ``minor`` (``None``: no schema)."""
    key = (minor, api_version, kind)
    try:
        return _VALIDATORS.data[key]
    except KeyError:
        return _VALIDATORS.put(key, _build(minor, api_version, kind))


def warm(keys: Iterable[tuple[int, str, str]]) -> None:
    """Compile the validators of (cluster minor, apiVersion, kind) ahead of use."""
    for cluster_minor, api_version, kind in keys:
        compiled(schema_version_for(cluster_minor), api_version, kind)


class SchemaValidator:
    """Validates manifests of any supported Kubernetes version (validators: :func:`compiled`)."""

    def validate(
        self,
        data: Mapping[str, Any],
        cluster_minor: int,
        where: SourceLocation,
        origin: SourceLocation | None = None,
    ) -> list[Finding]:
        """All schema errors of one object, located at its output file."""
        minor = schema_version_for(cluster_minor)
        validator = compiled(minor, str(data.get("apiVersion", "")), str(data.get("kind", "")))
        if validator is not None and validator.is_valid(data):
            return []  # the common case, and quicker than collecting errors
        return _findings(validator, data, minor, where, origin)


def _findings(validator: Any, data: Mapping[str, Any], minor: int, where: SourceLocation,
              origin: SourceLocation | None) -> list[Finding]:
    """The GEN020 findings of an object that failed (or has no schema)."""
    api_version = str(data.get("apiVersion", ""))
    kind = str(data.get("kind", ""))
    related = (origin,) if origin is not None else ()
    if validator is None:
        return [Finding(
            "GEN020",
            f"no schema for {kind} {api_version} in Kubernetes 1.{minor}: the cluster's "
            "API server does not serve it",
            where, related=related,
            hint="check the cluster's kubernetes_version and the API versions it enables",
        )]
    return [
        Finding(
            "GEN020", f"{kind} does not match the 1.{minor} schema: {error.message}",
            where, format_key_path(list(error.instance_path)), related=related,
        )
        for error in validator.iter_errors(data)
    ]
