"""gen.emit.crd_schemas: the bundled upstream CRDs, the user's CRD folder, kubeconform's copy."""

from __future__ import annotations

import copy
import dataclasses
import gzip
import hashlib
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from gen.emit.crd_convert import inline_subschemas, share_subschemas, to_json_schema
from gen.emit.crd_schemas import (
    CRDSet,
    bundled,
    bundled_sources,
    custom_schema,
    custom_schema_dir,
    json_schema,
    json_schema_files,
    known_custom_kinds,
    load_crd_dir,
    schema_file_name,
    write_kubeconform_schemas,
)
from gen.emit.validate import SchemaValidator
from gen.errors import Finding, SourceLocation
from gen.pins import pin
from tests.helpers import REPO, write_tree

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

# (example, path of a required field upstream, path of an object to add an unknown field to)
CASES: dict[str, tuple[dict[str, Any], tuple[str, ...], tuple[str, ...]]] = {
    "application": (APPLICATION, ("spec", "destination"), ("spec", "syncPolicy", "automated")),
    "application-helm": (APPLICATION_HELM, ("spec", "project"), ("spec", "sources", "0", "helm")),
    "applicationset": (
        APPLICATION_SET, ("spec", "template"), ("spec", "template", "spec", "destination"),
    ),
    "gitrepository": (GIT_REPOSITORY, ("spec", "url"), ("spec", "ref")),
    "kustomization": (KUSTOMIZATION, ("spec", "prune"), ("spec", "sourceRef")),
    "helmrepository": (HELM_REPOSITORY, ("spec", "url"), ("spec",)),
    "helmrepository-oci": (HELM_REPOSITORY_OCI, ("spec", "url"), ("spec",)),
    "helmrelease": (
        HELM_RELEASE, ("spec", "chart", "spec", "sourceRef"), ("spec", "install", "remediation"),
    ),
    "servicemonitor": (SERVICE_MONITOR, ("spec", "selector"), ("spec", "endpoints", "0")),
    "scaledobject": (SCALED_OBJECT, ("spec", "scaleTargetRef"), ("spec", "scaleTargetRef")),
}
WHERE = SourceLocation("out/x.yaml")


def walk(doc: Any, path: tuple[str, ...]) -> Any:
    """The node at path (list indices as strings)."""
    for part in path:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    return doc


def findings(doc: dict[str, Any]) -> list[Finding]:
    """gen's findings on one object (Kubernetes 1.34)."""
    return SchemaValidator().validate(doc, 34, WHERE)


@pytest.mark.parametrize("case", sorted(CASES))
def test_example_is_valid(case: str) -> None:
    """A realistic example of each kind passes its upstream CRD."""
    assert findings(CASES[case][0]) == []


@pytest.mark.parametrize("case", sorted(CASES))
def test_unknown_field_is_rejected(case: str) -> None:
    """An unknown field in a nested object is an error, located at that object."""
    doc = copy.deepcopy(CASES[case][0])
    walk(doc, CASES[case][2])["bogus"] = True
    (finding,) = findings(doc)
    assert finding.rule == "GEN020"
    assert "'bogus' was unexpected" in finding.message
    assert finding.key_path == ".".join(CASES[case][2]).replace(".0", "[0]")


@pytest.mark.parametrize("case", sorted(CASES))
def test_missing_required_field_is_rejected(case: str) -> None:
    """Removing a field the upstream CRD requires is an error."""
    doc = copy.deepcopy(CASES[case][0])
    *parent, key = CASES[case][1]
    del walk(doc, tuple(parent))[key]
    assert any(f'"{key}" is a required property' in f.message for f in findings(doc))


@pytest.mark.parametrize("case", sorted(CASES))
def test_unknown_top_level_field_is_rejected(case: str) -> None:
    """A top-level key the CRD does not declare is an error (the root is strict too)."""
    doc = copy.deepcopy(CASES[case][0])
    doc["bogus"] = {}
    assert [f.key_path for f in findings(doc)] == [""]


def test_metadata_is_object_meta() -> None:
    """metadata is Kubernetes' strict ObjectMeta: an unknown key and a bad name are errors."""
    doc = copy.deepcopy(GIT_REPOSITORY)
    doc["metadata"]["bogus"] = "x"
    assert [f.rule for f in findings(doc)] == ["GEN020"]
    doc = copy.deepcopy(GIT_REPOSITORY)
    doc["metadata"]["name"] = "Fleet_Repo"
    assert [(f.rule, f.key_path) for f in findings(doc)] == [("GEN022", "metadata.name")]


def test_prometheus_trigger_values_are_strings() -> None:
    """KEDA trigger metadata is a string map: a numeric threshold is rejected."""
    doc = copy.deepcopy(SCALED_OBJECT)
    doc["spec"]["triggers"][0]["metadata"]["threshold"] = 10
    assert [f.key_path for f in findings(doc)] == ["spec.triggers[0].metadata.threshold"]


def test_helm_release_needs_a_chart_by_its_cel_rule() -> None:
    """A HelmRelease with neither chart nor chartRef breaks helm-controller's CEL rule."""
    doc = copy.deepcopy(HELM_RELEASE)
    del doc["spec"]["chart"]
    (finding,) = findings(doc)
    assert (finding.rule, finding.key_path) == ("GEN024", "spec")
    assert "either chart or chartRef must be set" in finding.message


def test_keda_replica_rule_sees_the_bounds() -> None:
    """KEDA's rule: minReplicaCount may not exceed maxReplicaCount."""
    doc = copy.deepcopy(SCALED_OBJECT)
    doc["spec"]["minReplicaCount"] = 5
    (finding,) = findings(doc)
    assert "minReplicaCount must be less than or equal to maxReplicaCount" in finding.message
    doc["spec"]["minReplicaCount"] = 4
    assert findings(doc) == []


def test_flux_interval_must_be_a_duration() -> None:
    """A Flux interval that is not a Go duration is rejected (the CRD's pattern)."""
    doc = copy.deepcopy(KUSTOMIZATION)
    doc["spec"]["interval"] = "hourly"
    assert [f.key_path for f in findings(doc)] == ["spec.interval"]


def test_upstream_fields_gen_did_not_know_are_accepted() -> None:
    """Fields of the upstream CRDs a hand-written schema lacked are valid."""
    doc = copy.deepcopy(HELM_RELEASE)
    doc["spec"]["upgrade"]["strategy"] = {"name": "RetryOnFailure", "retryInterval": "5m"}
    doc["spec"]["postRenderers"] = [{"kustomize": {"patches": [{"patch": "x"}]}}]
    assert findings(doc) == []
    doc["spec"]["upgrade"]["strategy"] = {"name": "RemediateOnFailure", "retryInterval": "5m"}
    assert [f.rule for f in findings(doc)] == ["GEN024"]


def test_known_custom_kinds() -> None:
    """gen bundles the CRDs of every custom kind it renders, and those it may render."""
    assert known_custom_kinds() == (
        ("argoproj.io/v1alpha1", "AppProject"),
        ("argoproj.io/v1alpha1", "Application"),
        ("argoproj.io/v1alpha1", "ApplicationSet"),
        ("gateway.networking.k8s.io/v1", "Gateway"),
        ("gateway.networking.k8s.io/v1", "HTTPRoute"),
        ("gateway.networking.k8s.io/v1beta1", "Gateway"),
        ("gateway.networking.k8s.io/v1beta1", "HTTPRoute"),
        ("helm.toolkit.fluxcd.io/v2", "HelmRelease"),
        ("inference.networking.k8s.io/v1", "InferencePool"),
        ("keda.sh/v1alpha1", "ScaledObject"),
        ("keda.sh/v1alpha1", "TriggerAuthentication"),
        ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"),
        ("llm-d.ai/v1alpha2", "InferenceObjective"),
        ("monitoring.coreos.com/v1", "PodMonitor"),
        ("monitoring.coreos.com/v1", "ServiceMonitor"),
        ("source.toolkit.fluxcd.io/v1", "GitRepository"),
        ("source.toolkit.fluxcd.io/v1", "HelmChart"),
        ("source.toolkit.fluxcd.io/v1", "HelmRepository"),
        ("source.toolkit.fluxcd.io/v1", "OCIRepository"),
    )


def _refresh_tool(monkeypatch: pytest.MonkeyPatch) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("refresh_crds", REPO / "tools/refresh_crds.py")
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "refresh_crds", tool)  # its dataclass looks itself up
    spec.loader.exec_module(tool)
    return tool


def test_bundled_sources_are_the_pinned_releases(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each bundled CRD is the manifest tools/refresh_crds.py reads at the release its pin in
    gen/data/pins.yaml names (repository, path, tag), with the file's digest."""
    tool = _refresh_tool(monkeypatch)
    wanted = {(s.repo, s.path, s.tag) for s in tool.sources()}
    assert {(s["repository"], s["path"], s["tag"]) for s in bundled_sources()} == wanted
    assert {s.repo: s.tag for s in tool.sources()}["argoproj/argo-cd"] == pin("argo-cd").version
    for source in bundled_sources():
        assert len(source["sha256"]) == 64
        assert source["path"].endswith(".yaml")


def test_bundled_data_is_small_and_deterministic() -> None:
    """The data files are gzip without a time stamp, together well under 100 KB."""
    files = sorted(custom_schema_dir().glob("*.json.gz"))
    assert len(files) == len(bundled_sources())
    assert sum(p.stat().st_size for p in files) < 100_000
    for path in files:
        assert path.read_bytes()[4:8] == b"\0\0\0\0"  # gzip MTIME field
        content = json.loads(gzip.decompress(path.read_bytes()))
        assert path.name == content["crd"]["metadata"]["name"] + ".json.gz"


def test_refresh_tool_writes_the_same_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """tools/refresh_crds.py reproduces a data file from the upstream bytes it hashed."""
    tool = _refresh_tool(monkeypatch)
    crd = bundled_sources()[0]
    path = custom_schema_dir() / f"{crd['crd']}.json.gz"
    content = json.loads(gzip.decompress(path.read_bytes()))
    # The compacted CRD is its own fixed point: compacting it again changes nothing.
    raw = json.dumps(content["crd"]).encode()
    name, data = tool.data_file(crd["repository"], crd["tag"], crd["path"], raw)
    again = json.loads(gzip.decompress(data))
    assert name == path.name
    assert again["crd"] == content["crd"]
    assert again["source"]["sha256"] == hashlib.sha256(raw).hexdigest()


def test_refresh_tool_reads_a_go_module_zip(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    """--go-modules reads MODULE@TAG/PATH from the module zip; a clone wins over it, and a
    project without a Go module asks for a clone."""
    tool = _refresh_tool(monkeypatch)
    source = next(s for s in tool.sources() if s.go_module is not None)
    archive = tmp_path / "module.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(f"{source.go_module}@{source.tag}/{source.path}", b"kind: X\n")
    asked: list[tuple[str, str]] = []

    def fake_zip(module: str, version: str) -> Path:
        asked.append((module, version))
        return archive

    monkeypatch.setattr(tool, "_go_module_zip", fake_zip)
    assert tool._read(source, {}, True) == b"kind: X\n"
    assert asked == [(source.go_module, source.tag)]
    without = dataclasses.replace(source, go_module=None)
    with pytest.raises(SystemExit, match="--git"):
        tool._read(without, {}, True)


def test_shipped_json_schemas_are_what_converting_gives() -> None:
    """json-schema/ holds exactly the conversion of every bundled CRD version, byte for byte
    (after a change to gen/emit/crd_convert.py: python tools/refresh_crds.py --convert)."""
    bundle = {p.name: p.read_bytes() for p in custom_schema_dir().glob("*.json.gz")}
    shipped = {p.name: p.read_bytes()
               for p in (custom_schema_dir() / "json-schema").glob("*.json.gz")}
    assert json_schema_files(bundle) == shipped
    assert len(shipped) == len(bundled())
    for crd in bundled():
        converted = to_json_schema(crd.schema, crd.api_version, crd.kind)
        assert json_schema(crd) == share_subschemas(converted)
        assert inline_subschemas(json_schema(crd)) == converted


def test_bundled_json_schemas_are_read_not_converted(monkeypatch: pytest.MonkeyPatch) -> None:
    """A bundled CRD's JSON Schema comes from the shipped file; a user CRD of the same kind
    with another schema is converted (the shipped file records the schema it came from)."""
    from gen.emit import crd_schemas

    def refuse(*_args: object) -> None:
        raise AssertionError("converted at run time")

    monkeypatch.setattr(crd_schemas, "to_json_schema", refuse)
    crd_schemas._JSON_SCHEMAS.clear()
    try:
        crd = CRDSet().lookup("argoproj.io/v1alpha1", "Application")
        assert crd is not None
        assert json_schema(crd)["title"] == "Application (argoproj.io/v1alpha1)"
        other = dataclasses.replace(crd, schema={"type": "object"}, digest="0" * 64)
        with pytest.raises(AssertionError, match="converted at run time"):
            json_schema(other)
        monkeypatch.undo()
        assert json_schema(other)["properties"]["apiVersion"] == {
            "const": "argoproj.io/v1alpha1"}
        assert "spec" not in json_schema(other)["properties"]
    finally:
        crd_schemas._JSON_SCHEMAS.clear()


@pytest.mark.parametrize("kind", known_custom_kinds())
def test_converted_schemas_are_valid_2020_12(kind: tuple[str, str]) -> None:
    """Each converted schema is a valid draft 2020-12 schema."""
    schema = custom_schema(*kind)
    assert schema is not None
    Draft202012Validator.check_schema(schema)


def test_unknown_kind_has_no_crd() -> None:
    """Built-in kinds and unknown versions have no CRD."""
    assert custom_schema("apps/v1", "Deployment") is None
    assert custom_schema("argoproj.io/v1alpha2", "Application") is None
    assert CRDSet().lookup("example.com/v1", "Widget") is None


def test_file_name_examples() -> None:
    """schema_file_name computes kubeconform's KindSuffix: first group label and version."""
    assert schema_file_name("argoproj.io/v1alpha1", "Application") == (
        "application-argoproj-v1alpha1.json"
    )
    assert schema_file_name("source.toolkit.fluxcd.io/v1", "GitRepository") == (
        "gitrepository-source-v1.json"
    )
    assert schema_file_name("v1", "Service") == "service-v1.json"


def test_kubeconform_schemas(tmp_path: Path) -> None:
    """Every CRD's schema is written as kubeconform names it; metadata is a plain object."""
    location = write_kubeconform_schemas(tmp_path)
    assert location == f"{tmp_path.as_posix()}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json"
    assert len(list(tmp_path.glob("*.json"))) == len(known_custom_kinds())
    schema = json.loads((tmp_path / "application-argoproj-v1alpha1.json").read_text())
    assert schema["properties"]["metadata"] == {"type": "object"}
    assert Draft202012Validator(schema).is_valid(APPLICATION)


WIDGET_CRD = """
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: widgets.example.com}
    spec:
      group: example.com
      names: {kind: Widget, plural: widgets}
      scope: Namespaced
      versions:
        - name: v1
          served: true
          storage: true
          schema:
            openAPIV3Schema:
              type: object
              properties:
                spec:
                  type: object
                  required: [size]
                  properties:
                    size: {type: integer, minimum: 1}
"""


def test_user_crd_folder(tmp_path: Path) -> None:
    """CRDs in the folder (one per file, or a List) define kinds; findings point at the file."""
    write_tree(tmp_path, {
        "crds/widget.yaml": WIDGET_CRD,
        "crds/list.yaml": """
            apiVersion: v1
            kind: List
            items:
              - apiVersion: apiextensions.k8s.io/v1
                kind: CustomResourceDefinition
                metadata: {name: gadgets.example.com}
                spec:
                  group: example.com
                  names: {kind: Gadget, plural: gadgets}
                  scope: Cluster
                  versions: [{name: v2, served: true, storage: true,
                              schema: {openAPIV3Schema: {type: object}}}]
              - {apiVersion: v1, kind: ConfigMap}
        """,
    })
    crds, problems = load_crd_dir(tmp_path / "crds", tmp_path)
    assert sorted((s.api_version, s.kind, s.namespaced) for s in crds.user) == [
        ("example.com/v1", "Widget", True), ("example.com/v2", "Gadget", False)]
    (problem,) = problems
    assert (problem.rule, str(problem.location), problem.key_path) == (
        "GEN023", "crds/list.yaml:13:5", "items[1]")
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
              "spec": {"size": 0}}
    (finding,) = SchemaValidator(crds).validate(widget, 34, WHERE)
    assert (finding.rule, finding.key_path) == ("GEN020", "spec.size")
    assert finding.related == (SourceLocation("crds/widget.yaml", 1, 1),)


def test_user_crd_overrides_a_bundled_one(tmp_path: Path) -> None:
    """A user's CRD for a bundled kind wins: it is what the user's cluster runs."""
    write_tree(tmp_path, {"crds/app.yaml": """
        apiVersion: apiextensions.k8s.io/v1
        kind: CustomResourceDefinition
        metadata: {name: applications.argoproj.io}
        spec:
          group: argoproj.io
          names: {kind: Application, plural: applications}
          scope: Namespaced
          versions:
            - name: v1alpha1
              served: true
              storage: true
              schema:
                openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
    """})
    crds, problems = load_crd_dir(tmp_path / "crds", tmp_path)
    assert problems == []
    doc = copy.deepcopy(APPLICATION)
    doc["spec"]["bogus"] = 1
    assert SchemaValidator(crds).validate(doc, 34, WHERE) == []
    assert SchemaValidator().validate(doc, 34, WHERE) != []


@pytest.mark.parametrize(("text", "message"), [
    ("kind: [", "cannot read the CRD file: YAML syntax error"),
    ("apiVersion: v1\nkind: ConfigMap\n", "not an apiextensions.k8s.io/v1"),
    ("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec: {}\n",
     "spec.group and spec.names.kind must be non-empty strings"),
    ("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
     "spec: {group: a.b, names: {kind: A}, versions: [{name: v1, served: true}]}\n",
     "has no schema.openAPIV3Schema"),
])
def test_unusable_crd_files_are_located(tmp_path: Path, text: str, message: str) -> None:
    """A CRD file gen cannot use is a GEN023 error at that file."""
    (tmp_path / "crds").mkdir()
    (tmp_path / "crds" / "bad.yaml").write_text(text)
    _, (problem,) = load_crd_dir(tmp_path / "crds", tmp_path)
    assert problem.rule == "GEN023"
    assert problem.location is not None and problem.location.path == "crds/bad.yaml"
    assert message in problem.message


def test_two_crds_for_one_kind(tmp_path: Path) -> None:
    """A second CRD for the same kind is an error at the second one."""
    write_tree(tmp_path, {"crds/a.yaml": WIDGET_CRD, "crds/b.yaml": WIDGET_CRD})
    crds, (problem,) = load_crd_dir(tmp_path / "crds", tmp_path)
    assert len(crds.user) == 1
    assert problem.location == SourceLocation("crds/b.yaml", 1, 1)
    assert "crds/a.yaml" in problem.message


def test_no_folder_means_bundled_only(tmp_path: Path) -> None:
    """No folder, or one that does not exist: no user CRDs, no findings."""
    assert load_crd_dir(None) == (CRDSet(), [])
    assert load_crd_dir(tmp_path / "absent") == (CRDSet(), [])


def test_every_bundled_version_is_served() -> None:
    """Every bundled CRD version gen validates against is served upstream."""
    assert all(s.source and s.digest for s in bundled())
