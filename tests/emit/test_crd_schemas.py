"""Tests for gen.emit.crd_schemas: gen's strict schemas of the custom resources it emits."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft7Validator

from gen.emit.crd_schemas import (
    custom_schema,
    custom_schema_dir,
    known_custom_kinds,
    kubeconform_schema_location,
    schema_file_name,
)

META: dict[str, Any] = {
    "name": "gpu-a",
    "namespace": "argocd",
    "labels": {"app.kubernetes.io/managed-by": "gen"},
}

APPLICATION: dict[str, Any] = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Application",
    "metadata": {**META, "finalizers": ["resources-finalizer.argocd.argoproj.io"]},
    "spec": {
        "project": "gpu-fleet",
        "source": {
            "repoURL": "https://github.com/example/fleet.git",
            "targetRevision": "main",
            "path": "out/gpu-a",
        },
        "destination": {"name": "gpu-a", "namespace": "inference"},
        "syncPolicy": {
            "automated": {"prune": True, "selfHeal": True},
            "syncOptions": ["ServerSideApply=true", "CreateNamespace=true"],
        },
        "ignoreDifferences": [
            {"group": "apps", "kind": "Deployment", "jsonPointers": ["/spec/replicas"]}
        ],
    },
}

APPLICATION_HELM: dict[str, Any] = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "Application",
    "metadata": {"name": "gpu-operator", "namespace": "argocd"},
    "spec": {
        "project": "default",
        "sources": [
            {
                "repoURL": "https://helm.ngc.nvidia.com/nvidia",
                "chart": "gpu-operator",
                "targetRevision": "v26.7.0",
                "helm": {
                    "releaseName": "gpu-operator",
                    "valuesObject": {"mig": {"strategy": "mixed"}, "driver": {"enabled": True}},
                },
            },
            {
                "repoURL": "https://github.com/example/fleet.git",
                "targetRevision": "main",
                "ref": "values",
            },
        ],
        "destination": {"server": "https://kubernetes.default.svc", "namespace": "gpu-operator"},
    },
}

APPLICATION_SET: dict[str, Any] = {
    "apiVersion": "argoproj.io/v1alpha1",
    "kind": "ApplicationSet",
    "metadata": {"name": "gpu-fleet", "namespace": "argocd"},
    "spec": {
        "goTemplate": True,
        "goTemplateOptions": ["missingkey=error"],
        "generators": [
            {"list": {"elements": [{"cluster": "gpu-a"}, {"cluster": "gpu-b"}]}},
            {"clusters": {"selector": {"matchLabels": {"gen.example.com/fleet": "gpu"}}}},
        ],
        "template": {
            "metadata": {"name": "{{.name}}-inference"},
            "spec": {
                "project": "gpu-fleet",
                "source": {
                    "repoURL": "https://github.com/example/fleet.git",
                    "targetRevision": "main",
                    "path": "out/{{.name}}",
                },
                "destination": {"name": "{{.name}}", "namespace": "inference"},
                "syncPolicy": {"automated": {"prune": True, "selfHeal": True}},
            },
        },
    },
}

GIT_REPOSITORY: dict[str, Any] = {
    "apiVersion": "source.toolkit.fluxcd.io/v1",
    "kind": "GitRepository",
    "metadata": {"name": "fleet", "namespace": "flux-system"},
    "spec": {
        "interval": "1m",
        "url": "https://github.com/example/fleet.git",
        "ref": {"branch": "main"},
        "secretRef": {"name": "fleet-auth"},
    },
}

KUSTOMIZATION: dict[str, Any] = {
    "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
    "kind": "Kustomization",
    "metadata": {"name": "gpu-a-inference", "namespace": "flux-system"},
    "spec": {
        "interval": "60m",
        "retryInterval": "2m",
        "timeout": "3m",
        "path": "./out/gpu-a",
        "prune": True,
        "wait": True,
        "force": False,
        "targetNamespace": "inference",
        "sourceRef": {"kind": "GitRepository", "name": "fleet"},
        "dependsOn": [{"name": "gpu-a-infrastructure"}],
        "healthChecks": [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": "vllm", "namespace": "x"}
        ],
    },
}

HELM_REPOSITORY: dict[str, Any] = {
    "apiVersion": "source.toolkit.fluxcd.io/v1",
    "kind": "HelmRepository",
    "metadata": {"name": "nvidia", "namespace": "flux-system"},
    "spec": {"interval": "24h", "url": "https://helm.ngc.nvidia.com/nvidia"},
}

HELM_REPOSITORY_OCI: dict[str, Any] = {
    "apiVersion": "source.toolkit.fluxcd.io/v1",
    "kind": "HelmRepository",
    "metadata": {"name": "dra-driver", "namespace": "flux-system"},
    "spec": {"type": "oci", "interval": "24h", "url": "oci://registry.k8s.io/dra-driver-nvidia"},
}

HELM_RELEASE: dict[str, Any] = {
    "apiVersion": "helm.toolkit.fluxcd.io/v2",
    "kind": "HelmRelease",
    "metadata": {"name": "gpu-operator", "namespace": "flux-system"},
    "spec": {
        "interval": "30m",
        "releaseName": "gpu-operator",
        "targetNamespace": "gpu-operator",
        "chart": {
            "spec": {
                "chart": "gpu-operator",
                "version": "v26.7.0",
                "sourceRef": {"kind": "HelmRepository", "name": "nvidia"},
            }
        },
        "values": {"mig": {"strategy": "mixed"}, "migManager": {"config": {"name": "mig"}}},
        "install": {"crds": "CreateReplace", "remediation": {"retries": 3}},
        "upgrade": {"crds": "CreateReplace", "remediation": {"retries": 3, "strategy": "rollback"}},
        "dependsOn": [{"name": "node-feature-discovery"}],
    },
}

SERVICE_MONITOR: dict[str, Any] = {
    "apiVersion": "monitoring.coreos.com/v1",
    "kind": "ServiceMonitor",
    "metadata": {"name": "llama-70b", "namespace": "inference"},
    "spec": {
        "selector": {"matchLabels": {"app.kubernetes.io/name": "llama-70b"}},
        "endpoints": [{"port": "http", "path": "/metrics", "interval": "15s"}],
    },
}

SCALED_OBJECT: dict[str, Any] = {
    "apiVersion": "keda.sh/v1alpha1",
    "kind": "ScaledObject",
    "metadata": {"name": "llama-70b", "namespace": "inference"},
    "spec": {
        "scaleTargetRef": {"name": "llama-70b"},
        "minReplicaCount": 1,
        "maxReplicaCount": 4,
        "cooldownPeriod": 300,
        "triggers": [
            {
                "type": "prometheus",
                "metadata": {
                    "serverAddress": "http://prometheus.monitoring.svc:9090",
                    "query": 'sum(vllm:num_requests_waiting{model_name="llama-70b"})',
                    "threshold": "10",
                },
            }
        ],
    },
}

# (example, path of a required field, path of the object to add an unknown field to)
CASES: dict[str, tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]] = {
    "application": (APPLICATION, ("spec", "destination"), ("spec", "syncPolicy", "automated")),
    "application-helm": (
        APPLICATION_HELM,
        ("spec", "project"),
        ("spec", "sources", "0", "helm"),
    ),
    "applicationset": (
        APPLICATION_SET,
        ("spec", "template"),
        ("spec", "template", "spec", "destination"),
    ),
    "gitrepository": (GIT_REPOSITORY, ("spec", "url"), ("spec", "ref")),
    "kustomization": (KUSTOMIZATION, ("spec", "prune"), ("spec", "sourceRef")),
    "helmrepository": (HELM_REPOSITORY, ("spec", "url"), ("spec",)),
    "helmrepository-oci": (HELM_REPOSITORY_OCI, ("spec", "url"), ("spec",)),
    "helmrelease": (
        HELM_RELEASE,
        ("spec", "chart", "spec", "sourceRef"),
        ("spec", "install", "remediation"),
    ),
    "servicemonitor": (SERVICE_MONITOR, ("spec", "selector"), ("spec", "endpoints", "0")),
    "scaledobject": (
        SCALED_OBJECT,
        ("spec", "triggers", "0", "metadata", "query"),
        ("spec", "triggers", "0", "metadata"),
    ),
}


def validator_for(doc: dict[str, Any]) -> Draft7Validator:
    """A draft-07 validator for the document's kind."""
    schema = custom_schema(doc["apiVersion"], doc["kind"])
    assert schema is not None
    return Draft7Validator(schema)


def walk(doc: Any, path: tuple[str, ...]) -> Any:
    """The node at path (list indices as strings)."""
    for part in path:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def messages(doc: dict[str, Any]) -> list[str]:
    """All schema errors of doc."""
    return [e.message for e in validator_for(doc).iter_errors(doc)]


@pytest.mark.parametrize("case", sorted(CASES))
def test_example_is_valid(case: str) -> None:
    """A realistic example of each kind passes its schema."""
    assert messages(CASES[case][0]) == []


@pytest.mark.parametrize("case", sorted(CASES))
def test_unknown_field_is_rejected(case: str) -> None:
    """An unknown field in a nested object is an error (additionalProperties: false)."""
    doc = copy.deepcopy(CASES[case][0])
    walk(doc, CASES[case][2])["bogus"] = True
    assert any("'bogus' was unexpected" in m for m in messages(doc))


@pytest.mark.parametrize("case", sorted(CASES))
def test_missing_required_field_is_rejected(case: str) -> None:
    """Removing a required field is an error."""
    doc = copy.deepcopy(CASES[case][0])
    *parent, key = CASES[case][1]
    del walk(doc, tuple(parent))[key]
    assert f"'{key}' is a required property" in messages(doc)


@pytest.mark.parametrize("case", sorted(CASES))
def test_unknown_top_level_field_is_rejected(case: str) -> None:
    """A top-level key other than apiVersion, kind, metadata, spec (e.g. status) is an error."""
    doc = copy.deepcopy(CASES[case][0])
    doc["status"] = {}
    assert messages(doc)


def test_metadata_is_strict() -> None:
    """metadata accepts name, namespace, labels, annotations, finalizers only; names are DNS."""
    doc = copy.deepcopy(GIT_REPOSITORY)
    doc["metadata"]["uid"] = "x"
    assert messages(doc)
    doc = copy.deepcopy(GIT_REPOSITORY)
    doc["metadata"]["name"] = "Fleet_Repo"
    assert messages(doc)


def test_oci_helm_repository_needs_oci_url() -> None:
    """type: oci with an https URL, or a default repository with an oci URL, is rejected."""
    doc = copy.deepcopy(HELM_REPOSITORY_OCI)
    doc["spec"]["url"] = "https://registry.k8s.io/dra-driver-nvidia"
    assert messages(doc)
    doc = copy.deepcopy(HELM_REPOSITORY)
    doc["spec"]["url"] = "oci://registry.k8s.io/dra-driver-nvidia"
    assert messages(doc)


def test_prometheus_trigger_values_are_strings() -> None:
    """KEDA trigger metadata is a string map: a numeric threshold is rejected."""
    doc = copy.deepcopy(SCALED_OBJECT)
    doc["spec"]["triggers"][0]["metadata"]["threshold"] = 10
    assert messages(doc)


def test_application_needs_a_source() -> None:
    """An Application with neither source nor sources is rejected."""
    doc = copy.deepcopy(APPLICATION)
    del doc["spec"]["source"]
    assert messages(doc)


def test_helm_release_needs_a_chart() -> None:
    """A HelmRelease with neither chart nor chartRef is rejected."""
    doc = copy.deepcopy(HELM_RELEASE)
    del doc["spec"]["chart"]
    assert messages(doc)


def test_flux_interval_must_be_a_duration() -> None:
    """A Flux interval that is not a Go duration is rejected."""
    doc = copy.deepcopy(KUSTOMIZATION)
    doc["spec"]["interval"] = "hourly"
    assert messages(doc)


def test_known_custom_kinds() -> None:
    """gen ships schemas for exactly the custom kinds it emits."""
    assert known_custom_kinds() == (
        ("argoproj.io/v1alpha1", "Application"),
        ("argoproj.io/v1alpha1", "ApplicationSet"),
        ("helm.toolkit.fluxcd.io/v2", "HelmRelease"),
        ("keda.sh/v1alpha1", "ScaledObject"),
        ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"),
        ("monitoring.coreos.com/v1", "ServiceMonitor"),
        ("source.toolkit.fluxcd.io/v1", "GitRepository"),
        ("source.toolkit.fluxcd.io/v1", "HelmRepository"),
        ("source.toolkit.fluxcd.io/v1", "OCIRepository"),
    )


def test_unknown_kind_has_no_schema() -> None:
    """custom_schema returns None for kinds gen ships no schema for."""
    assert custom_schema("apps/v1", "Deployment") is None
    assert custom_schema("argoproj.io/v1alpha2", "Application") is None
    assert custom_schema("argoproj.io/v1alpha1", "AppProject") is None


def test_custom_schema_is_cached() -> None:
    """Two calls return the same cached object."""
    first = custom_schema("keda.sh/v1alpha1", "ScaledObject")
    assert first is not None
    assert custom_schema("keda.sh/v1alpha1", "ScaledObject") is first


@pytest.mark.parametrize("kind", known_custom_kinds())
def test_file_names_follow_kubeconform_layout(kind: tuple[str, str]) -> None:
    """Each file is named {{ .ResourceKind }}{{ .KindSuffix }}.json so kubeconform finds it."""
    path = custom_schema_dir() / schema_file_name(*kind)
    assert path.is_file()
    assert json.loads(path.read_text(encoding="utf-8")) == custom_schema(*kind)


def test_file_name_examples() -> None:
    """schema_file_name computes kubeconform's KindSuffix: first group label and version."""
    assert schema_file_name("argoproj.io/v1alpha1", "Application") == (
        "application-argoproj-v1alpha1.json"
    )
    assert schema_file_name("source.toolkit.fluxcd.io/v1", "GitRepository") == (
        "gitrepository-source-v1.json"
    )
    assert schema_file_name("v1", "Service") == "service-v1.json"


def test_schema_location_template() -> None:
    """The kubeconform location is the folder plus the ResourceKind/KindSuffix template."""
    location = kubeconform_schema_location()
    assert location.startswith(custom_schema_dir().as_posix() + "/")
    assert location.endswith("/{{ .ResourceKind }}{{ .KindSuffix }}.json")


def objects(node: Any) -> Iterator[dict[str, Any]]:
    """Every schema node that declares properties."""
    if isinstance(node, dict):
        if "properties" in node and node.get("type") == "object":
            yield node
        for value in node.values():
            yield from objects(value)
    elif isinstance(node, list):
        for value in node:
            yield from objects(value)


@pytest.mark.parametrize("kind", known_custom_kinds())
def test_schemas_are_strict_draft7(kind: tuple[str, str]) -> None:
    """Each file is a valid draft-07 schema; every object it defines forbids extra keys."""
    schema = custom_schema(*kind)
    assert schema is not None
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"
    Draft7Validator.check_schema(schema)
    nodes = list(objects(schema))
    assert nodes
    for node in nodes:
        assert node.get("additionalProperties") is False, sorted(node["properties"])
