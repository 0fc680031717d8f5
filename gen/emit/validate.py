"""Embedded strict JSON Schema validation of rendered manifests.

Kubernetes schemas come from the ``kubernetes-validate`` package's bundled data (strict
variants: unknown fields are errors), for the cluster's own minor version. Each
validator is built once per (schema version, apiVersion, kind) and cached; the shared
``_definitions.json`` of a version is read once. Custom resources gen emits are checked
against gen's own schemas (:mod:`gen.emit.crd_schemas`). A kind with no schema is an error.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from gen.errors import Finding, SourceLocation
from gen.fleet.loader import format_key_path

__all__ = ["SchemaValidator", "schema_version_for"]

_GROUP = re.compile(r"^([^./]*)(?:\.[^/]*)?/")


@functools.cache
def _schema_root() -> Path:
    root = resources.files("kubernetes_validate") / "kubernetes-json-schema"
    return Path(str(root))


@functools.cache
def _available_minors() -> tuple[int, ...]:
    minors = []
    for entry in _schema_root().iterdir():
        match = re.match(r"^v1\.(\d+)\.0-local-strict$", entry.name)
        if match:
            minors.append(int(match.group(1)))
    return tuple(sorted(minors))


def schema_version_for(minor: int) -> int:
    """The bundled schema minor used for a cluster minor: the newest not newer than it."""
    available = _available_minors()
    older = [m for m in available if m <= minor]
    return older[-1] if older else available[0]


@functools.cache
def _registry(minor: int) -> Any:
    from referencing import Registry, Resource

    path = _schema_root() / f"v1.{minor}.0-local-strict" / "_definitions.json"
    definitions = json.loads(path.read_text(encoding="utf-8"))
    return Registry().with_resource(
        "https://kubernetes.io/api/_definitions.json", Resource.from_contents(definitions)
    )


def _schema_file(minor: int, api_version: str, kind: str) -> Path:
    group_version = _GROUP.sub(r"\1-", api_version)
    return _schema_root() / f"v1.{minor}.0-local-strict" / f"{kind.lower()}-{group_version}.json"


class SchemaValidator:
    """Validates manifests of any supported Kubernetes version; validators are cached."""

    def __init__(self) -> None:
        self._cache: dict[tuple[int, str, str], Any] = {}

    def _validator(self, minor: int, api_version: str, kind: str) -> Any:
        key = (minor, api_version, kind)
        if key in self._cache:
            return self._cache[key]
        from gen.emit import schemac
        from gen.emit.crd_schemas import custom_schema

        # A validator is a function: instance → [(path, message)]. Compiled closures
        # (gen.emit.schemac) when the schema allows, else jsonschema itself.
        validator: Any = None
        fallback: Any = None
        file = _schema_file(minor, api_version, kind)
        if file.is_file():
            try:
                validator = schemac.compile_file(
                    file, file.parent / "_definitions.json",
                    "https://kubernetes.io/api/_definitions.json",
                )
            except schemac.UnsupportedSchema:
                from jsonschema import Draft202012Validator

                schema = json.loads(file.read_text(encoding="utf-8"))
                fallback = Draft202012Validator(schema, registry=_registry(minor))
        else:
            custom = custom_schema(api_version, kind)
            if custom is not None:
                draft: schemac.Draft = "2020-12"
                if "draft-07" in str(custom.get("$schema", "")):
                    draft = "draft-07"
                try:
                    validator = schemac.compile_shared(custom, draft)
                except schemac.UnsupportedSchema:
                    from jsonschema import Draft7Validator, Draft202012Validator

                    cls: Any = Draft7Validator if draft == "draft-07" else Draft202012Validator
                    fallback = cls(custom)
        if fallback is not None:
            iter_errors = fallback.iter_errors

            def validator(data: Any) -> list[tuple[Any, str]]:
                return [(err.absolute_path, err.message) for err in iter_errors(data)]

        self._cache[key] = validator
        return validator

    def validate(
        self,
        data: Mapping[str, Any],
        cluster_minor: int,
        where: SourceLocation,
        origin: SourceLocation | None = None,
    ) -> list[Finding]:
        """All schema errors of one object, located at its output file."""
        minor = schema_version_for(cluster_minor)
        api_version = str(data.get("apiVersion", ""))
        kind = str(data.get("kind", ""))
        related = (origin,) if origin is not None else ()
        validator = self._validator(minor, api_version, kind)
        if validator is None:
            return [Finding(
                "GEN020",
                f"no schema for {kind} {api_version} in Kubernetes 1.{minor}: the cluster's "
                "API server does not serve it",
                where, related=related,
                hint="check the cluster's kubernetes_version and the API versions it enables",
            )]
        findings = []
        for error_path, message in validator(data):
            findings.append(Finding(
                "GEN020", f"{kind} does not match the 1.{minor} schema: {message}",
                where, format_key_path(list(error_path)), related=related,
            ))
        return findings
