"""JSON Schemas, written for gen, of the custom resources gen emits.

gen renders a few objects whose kinds are not built into Kubernetes: Argo CD ``Application``
and ``ApplicationSet``, Flux ``GitRepository``, ``Kustomization``, ``HelmRepository`` and
``HelmRelease``, Prometheus Operator ``ServiceMonitor`` and KEDA ``ScaledObject``. Their schemas
live in ``gen/data/crd-schemas/``, one self-contained JSON Schema (draft-07) per kind. They
cover the fields gen uses and are strict: every object we describe has
``additionalProperties: false``, and required fields are required. Free-form values (Helm
``values``, ApplicationSet list elements, HPA ``behavior``) are the only open objects.

File names follow kubeconform's default layout, ``{{ .ResourceKind }}{{ .KindSuffix }}.json``:
the lower-cased kind, the first label of the API group, and the version, e.g.
``application-argoproj-v1alpha1.json`` for ``argoproj.io/v1alpha1`` ``Application``. So the
folder is usable as a kubeconform ``-schema-location`` (see :func:`kubeconform_schema_location`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gen.caches import once

__all__ = [
    "custom_schema",
    "custom_schema_dir",
    "known_custom_kinds",
    "kubeconform_schema_location",
    "schema_file_name",
]

_SCHEMA_DIR = Path(__file__).resolve().parents[1] / "data" / "crd-schemas"


def custom_schema_dir() -> Path:
    """The folder holding gen's custom-resource schemas (a real directory, for kubeconform)."""
    return _SCHEMA_DIR


def kubeconform_schema_location() -> str:
    """The ``-schema-location`` template that makes kubeconform read :func:`custom_schema_dir`."""
    return f"{custom_schema_dir().as_posix()}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json"


def schema_file_name(api_version: str, kind: str) -> str:
    """The file name kubeconform's ``{{ .ResourceKind }}{{ .KindSuffix }}.json`` gives a kind.

    ``argoproj.io/v1alpha1``, ``Application`` → ``application-argoproj-v1alpha1.json``;
    a core kind (``v1``, ``Service``) → ``service-v1.json``.
    """
    group, _, version = api_version.rpartition("/")
    suffix = f"-{group.split('.')[0].lower()}-{version.lower()}" if group else f"-{version.lower()}"
    return f"{kind.lower()}{suffix}.json"


@once
def _index() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) → schema, read once from the ``const`` values of each file."""
    index: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted(_SCHEMA_DIR.glob("*.json")):
        schema: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
        props = schema["properties"]
        index[(props["apiVersion"]["const"], props["kind"]["const"])] = schema
    return index


def custom_schema(api_version: str, kind: str) -> dict[str, Any] | None:
    """The schema of one custom resource kind, or ``None`` when gen ships none for it.

    The result is cached and shared between callers: treat it as read-only.
    """
    return _index().get((api_version, kind))


def known_custom_kinds() -> tuple[tuple[str, str], ...]:
    """Every (apiVersion, kind) gen ships a schema for, sorted."""
    return tuple(sorted(_index()))
