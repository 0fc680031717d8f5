"""gen.emit.validate: strict embedded JSON Schema per Kubernetes version, cached validators."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gen.caches
from gen.emit import validate as validate_module
from gen.emit.crd_convert import CRDSchema
from gen.emit.crd_schemas import CRDSet
from gen.emit.render import make_environment, render_cluster
from gen.emit.validate import SchemaValidator, schema_version_for
from gen.errors import ManifestValidationError, SourceLocation
from gen.pipeline import load_plan, render, render_outputs
from tests.helpers import copy_fleet, replaced_at, write_tree

WHERE = SourceLocation("out/c1/workloads/ns/deployment-x.yaml")


@pytest.fixture(scope="module")
def example_objects(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[int, Any]]:
    """(cluster minor, rendered object) for every object of the example fleet."""
    root = copy_fleet(tmp_path_factory.mktemp("fleet"))
    plan = load_plan(root / "profiles", base=root)
    env = make_environment()
    found = []
    for cluster in plan.clusters:
        objects, _ = render_cluster(env, cluster)
        found += [(cluster.minor, obj) for obj in objects]
    return found


def test_example_render_passes_strict_validation(example_objects: list[tuple[int, Any]]) -> None:
    """Every manifest of the example fleet validates against its cluster's Kubernetes version."""
    validator = SchemaValidator()
    assert len(example_objects) > 30
    for minor, obj in example_objects:
        findings = validator.validate(obj.data, minor, SourceLocation(str(obj.path)))
        assert findings == [], [f.format() for f in findings]


def test_example_render_outputs_have_no_findings(tmp_path: Path) -> None:
    """render_outputs with the embedded validator reports nothing for the example fleet."""
    root = copy_fleet(tmp_path)
    plan = load_plan(root / "profiles", base=root)
    outputs, findings, count = render_outputs(
        plan, templates_dir=None, out_label="out", validator="embedded"
    )
    assert findings == []
    manifests = [p for p in outputs if p.suffix == ".yaml" and p.name != "kustomization.yaml"]
    assert count == len(manifests)


def _deployment(example_objects: list[tuple[int, Any]]) -> tuple[int, dict[str, Any]]:
    minor, obj = next((m, o) for m, o in example_objects if o.kind == "Deployment")
    return minor, copy.deepcopy(dict(obj.data))


def test_unknown_field_reported_with_json_path(example_objects: list[tuple[int, Any]]) -> None:
    """An unknown field is a GEN020 finding at the output file with the JSON path of its parent."""
    minor, data = _deployment(example_objects)
    data["spec"]["template"]["spec"]["containers"][0]["gpuz"] = 1
    (finding,) = SchemaValidator().validate(data, minor, WHERE)
    assert finding.rule == "GEN020"
    assert finding.location == WHERE
    assert finding.key_path == "spec.template.spec.containers[0]"
    assert "'gpuz' was unexpected" in finding.message


def test_wrong_type_reported(example_objects: list[tuple[int, Any]]) -> None:
    """A wrong type is reported at the field's own path."""
    minor, data = _deployment(example_objects)
    data["spec"]["replicas"] = "three"
    (finding,) = SchemaValidator().validate(data, minor, WHERE)
    assert finding.key_path == "spec.replicas"


def test_kind_without_schema_is_an_error() -> None:
    """A kind no schema describes is an error, not silently accepted."""
    data = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    (finding,) = SchemaValidator().validate(data, 34, WHERE)
    assert finding.rule == "GEN020"
    assert "no schema for Widget example.com/v1" in finding.message
    assert "crds/" in finding.hint


def test_api_version_the_cluster_lacks_is_an_error() -> None:
    """resource.k8s.io/v1 DeviceClass does not exist in Kubernetes 1.31."""
    data = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": "d"}, "spec": {}}
    assert SchemaValidator().validate(data, 34, WHERE) == []
    (finding,) = SchemaValidator().validate(data, 31, WHERE)
    assert "no schema for DeviceClass resource.k8s.io/v1 in Kubernetes 1.31" in finding.message


def test_validators_are_cached(monkeypatch: pytest.MonkeyPatch,
                               example_objects: list[tuple[int, Any]]) -> None:
    """Validating the same object twice (or another of its kind) builds one validator."""
    builds: list[tuple[Any, ...]] = []
    gen.caches.clear()
    real = validate_module._schema_file

    def counting(*args: Any) -> Any:
        builds.append(args)
        return real(*args)

    monkeypatch.setattr(validate_module, "_schema_file", counting)
    minor, data = _deployment(example_objects)
    validator = SchemaValidator()
    assert validator.validate(data, minor, WHERE) == []
    assert validator.validate(data, minor, WHERE) == []
    assert validator.validate(copy.deepcopy(data), minor, WHERE) == []
    assert len(builds) == 1


def test_schema_version_for() -> None:
    """A cluster minor uses the newest bundled schema not newer than it: the supported minors
    their own (kubernetes-validate>=1.37 bundles 1.33-1.37), 1.38 the newest below it."""
    assert schema_version_for(34) == 34
    assert [schema_version_for(m) for m in (35, 36, 37)] == [35, 36, 37]
    assert schema_version_for(38) == max(m for m in (37, 38) if schema_version_for(m) == m)
    assert schema_version_for(99) >= 34
    assert schema_version_for(1) == schema_version_for(0)


def test_pipeline_reports_schema_error_at_output_file(tmp_path: Path) -> None:
    """An override that adds an unknown field fails the render at out/<file> and writes nothing."""
    root = copy_fleet(tmp_path)
    write_tree(root, {"templates/core/namespace.yaml.j2": """
        apiVersion: v1
        kind: Namespace
        metadata:
          name: {{ name|tojson }}
        spec:
          bogus: 1
    """})
    with pytest.raises(ManifestValidationError, match="nothing was written") as info:
        render(root / "profiles", root / "out", templates_dir=root / "templates",
               validator="embedded", base=root)
    paths = {str(f.location) for f in info.value.findings}
    assert "out/edge-l4/gpu/_cluster/namespace-edge.yaml" in paths
    assert all(f.key_path == "spec" for f in info.value.findings)
    assert not (root / "out").exists()


def test_finding_format(example_objects: list[tuple[int, Any]]) -> None:
    """A finding names the kind, the schema version, the JSON path and jsonschema-rs's reason."""
    minor, data = _deployment(example_objects)
    data["spec"]["template"]["spec"]["containers"][0]["image"] = ["x"]
    findings = SchemaValidator().validate(data, minor, WHERE)
    assert [(f.rule, f.key_path, f.message, f.location) for f in findings] == [(
        "GEN020", "spec.template.spec.containers[0].image",
        f'Deployment does not match the 1.{schema_version_for(minor)} schema: '
        '["x"] is not of types "null", "string"',
        WHERE,
    )]


def test_every_error_of_an_object_is_reported(example_objects: list[tuple[int, Any]]) -> None:
    """Each violation is its own finding, not only the first one."""
    minor, data = _deployment(example_objects)
    data["spec"]["template"]["spec"]["containers"][0]["image"] = 5
    data["spec"]["bogus"] = 1
    del data["spec"]["selector"]
    findings = SchemaValidator().validate(data, minor, WHERE)
    got = {(f.key_path, f.message.split(" schema: ", 1)[1]) for f in findings}
    assert got == {
        ("spec.template.spec.containers[0].image", '5 is not of types "null", "string"'),
        ("spec", "Additional properties are not allowed ('bogus' was unexpected)"),
        ("spec", '"selector" is a required property'),
    }


def test_user_crd_keywords_are_enforced() -> None:
    """A user CRD's schema is enforced whole, whatever keywords it uses (here a list set)."""
    crd = CRDSchema("example.com/v1", "Odd", True, {
        "type": "object", "properties": {"items": {
            "type": "array", "items": {"type": "integer"}, "x-kubernetes-list-type": "set"}}},
        "crds/odd.yaml", SourceLocation("crds/odd.yaml", 1, 1), "d1")
    findings = SchemaValidator(CRDSet((crd,))).validate(
        {"apiVersion": "example.com/v1", "kind": "Odd", "metadata": {"name": "o"},
         "items": [1, 1]}, 34, WHERE)
    assert [(f.rule, f.key_path, f.message, f.related) for f in findings] == [
        ("GEN020", "items", "Odd does not match its CRD (crds/odd.yaml): [1,1] has non-unique "
         "elements", (SourceLocation("crds/odd.yaml", 1, 1),))]


def test_warm_compiles_ahead_and_clear_forgets() -> None:
    """warm() fills the one validator cache; gen.caches.clear() empties it."""
    gen.caches.clear()
    validate_module.warm([(34, "v1", "Namespace"), (34, "example.com/v1", "Widget")])
    assert set(validate_module._VALIDATORS.data) == {(34, "v1", "Namespace", ""),
                                                (34, "example.com/v1", "Widget", "")}
    assert validate_module._VALIDATORS.data[(34, "example.com/v1", "Widget", "")] is None
    gen.caches.clear()
    assert validate_module._VALIDATORS.data == {}
    assert validate_module._CUSTOM.data == {}


def test_custom_validators_are_shared_across_minors_with_the_same_object_meta() -> None:
    """A CRD's validator is compiled once for the minors whose ObjectMeta (and what it refers
    to) is the same, and still judges metadata by that ObjectMeta."""
    gen.caches.clear()
    crd = CRDSet().lookup("argoproj.io/v1alpha1", "Application")
    assert crd is not None
    digests = {m: validate_module._definitions(m)[1] for m in (32, 33, 34, 35)}
    assert len(set(digests.values())) == 1, "the minors gen renders share ObjectMeta"
    first = validate_module.compiled(32, crd.api_version, crd.kind, crd)
    assert all(validate_module.compiled(m, crd.api_version, crd.kind, crd) is first
               for m in (33, 34, 35))
    assert len(validate_module._CUSTOM.data) == 1
    bad = {"apiVersion": crd.api_version, "kind": crd.kind,
           "metadata": {"name": "a", "labels": {"a": 1}}, "spec": {}}
    assert [e.instance_path for e in first.iter_errors(bad)][:1] == [["metadata", "labels", "a"]]
    gen.caches.clear()


def test_custom_validators_are_not_shared_when_object_meta_differs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A minor whose ObjectMeta differs gets a validator of its own."""
    gen.caches.clear()
    real = validate_module._definitions

    def other_meta(minor: int) -> tuple[Any, str]:
        registry, meta = real(minor)
        return registry, f"{meta}-changed" if minor == 33 else meta

    monkeypatch.setattr(validate_module, "_definitions", other_meta)
    crd = CRDSet().lookup("argoproj.io/v1alpha1", "AppProject")
    assert crd is not None
    at_32, at_33, at_34 = (validate_module.compiled(m, crd.api_version, crd.kind, crd)
                           for m in (32, 33, 34))
    assert at_32 is at_34 and at_33 is not at_32
    gen.caches.clear()


def _meta_definitions(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    defs = {meta: {"type": "object", "properties": {
                "owner": {"$ref": "#/$defs/io.k8s.Owner"},
                "labels": {"type": "object"}}},
            "io.k8s.Owner": {"type": "object", "properties": {"uid": {"type": "string"}}},
            "io.k8s.Unrelated": {"type": "string"}}
    return {"$defs": {**defs, **(extra or {})}}


def test_meta_digest_covers_what_object_meta_refers_to() -> None:
    """The digest changes with ObjectMeta and with any definition it reaches, not with the
    others; a reference it cannot follow shares nothing (the minor's own digest)."""
    digest = validate_module._meta_digest
    base = digest(_meta_definitions(), 34)
    assert base == digest(_meta_definitions(), 33)
    assert base == digest(_meta_definitions({"io.k8s.Unrelated": {"type": "integer"}}), 33)
    assert base != digest(_meta_definitions({"io.k8s.Owner": {"type": "object"}}), 33)
    changed = _meta_definitions()
    changed["$defs"]["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["required"] = ["name"]
    assert base != digest(changed, 33)
    odd = _meta_definitions({"io.k8s.Owner": {"$ref": "other.json#/x"}})
    assert digest(odd, 33) == "v1.33" and digest(odd, 34) == "v1.34"
    missing = _meta_definitions({"io.k8s.Owner": {"$ref": "#/$defs/io.k8s.Gone"}})
    assert digest(missing, 33) == "v1.33"
    assert digest({"$defs": {}}, 33) == "v1.33"


def test_converted_crd_schemas_refer_to_object_meta_only() -> None:
    """What sharing a CRD's validator across minors rests on: a converted schema's only
    reference outside itself is ObjectMeta's, even when the CRD holds a ``$ref`` of its
    own."""
    from gen.emit.crd_convert import OBJECT_META_REF, to_json_schema
    from gen.emit.crd_schemas import bundled, json_schema

    def refs(node: Any) -> set[str]:
        if isinstance(node, dict):
            own = {node["$ref"]} if isinstance(node.get("$ref"), str) else set()
            return own.union(*(refs(v) for v in node.values()))
        if isinstance(node, list):
            return set().union(*(refs(v) for v in node))
        return set()

    for crd in bundled():  # and to its own shared subschemas, which no minor changes
        assert {r for r in refs(json_schema(crd))
                if not r.startswith("#/$defs/gen-shared-")} == {OBJECT_META_REF}, crd.kind
    odd = {"type": "object", "properties": {"spec": {"$ref": "#/definitions/x",
                                                     "type": "object"}}}
    assert refs(to_json_schema(odd, "example.com/v1", "Odd")) == {OBJECT_META_REF}


def test_all_bundled_schemas_of_one_version_compile() -> None:
    """Every strict schema of one Kubernetes version compiles with jsonschema-rs."""
    folder = validate_module._schema_file(34, "v1", "Pod").parent
    files = [f for f in sorted(folder.glob("*.json"))
             if f.name not in ("_definitions.json", "all.json")]
    assert len(files) > 500
    import jsonschema_rs

    registry = validate_module._registry(34)
    for file in files:
        schema = json.loads(file.read_text(encoding="utf-8"))
        jsonschema_rs.Draft202012Validator(schema, registry=registry, validate_formats=False)


def test_parallel_render_compiles_schemas_in_the_parent(tmp_path: Path) -> None:
    """Before forking its workers a parallel render compiles every validator the plan needs."""
    from gen.emit.parallel import forks

    if not forks():
        pytest.skip("workers are spawned here: they compile their own validators")
    root = copy_fleet(tmp_path)
    plan = load_plan(root / "profiles", base=root)
    env = make_environment()
    needed = {(schema_version_for(c.minor), o.api_version, o.kind)
              for c in plan.clusters for o in render_cluster(env, c)[0]}
    gen.caches.clear()
    _, findings, _ = render_outputs(plan, templates_dir=None, out_label="out", jobs=2)
    assert findings == []
    assert needed <= {key[:3] for key in validate_module._VALIDATORS.data}


# ------------------------------------------------- custom resources of the user's CRDs

WIDGET_TEMPLATE = """
    apiVersion: example.com/v1
    kind: Widget
    metadata:
      name: {{ name|tojson }}
      namespace: {{ namespace|tojson }}
    spec:
      port: {{ port_name|tojson }}
      size: SIZE
"""

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
                  properties:
                    port: {type: string}
                    size: {type: integer}
                  x-kubernetes-validations:
                    - {rule: "self.size < 10", message: "size must stay below 10"}
                    - {rule: "RULE"}
"""


def _widget_fleet(tmp_path: Path, size: int, rule: str = "true") -> Path:
    root = copy_fleet(tmp_path)
    # The override replaces the ServiceMonitor, rendered where the Prometheus Operator is.
    cluster = root / "profiles/clusters/edge-l4.yaml"
    cluster.write_text(cluster.read_text("utf-8").replace(
        "node_pools:", "addons: [prometheus-operator]\nnode_pools:", 1), encoding="utf-8")
    write_tree(root, {
        "templates/vllm/servicemonitor.yaml.j2": WIDGET_TEMPLATE.replace("SIZE", str(size)),
        "crds/widget.yaml": WIDGET_CRD.replace("RULE", rule),
    })
    return root


def _render(root: Path, crds: bool = True) -> Any:
    return render(root / "profiles", root / "out", templates_dir=root / "templates",
                  crds_dir=root / "crds" if crds else None, validator="embedded", base=root)


def test_custom_resource_of_a_user_crd_renders(tmp_path: Path) -> None:
    """A template override's custom resource renders when crds/ holds its CRD."""
    root = _widget_fleet(tmp_path, 3)
    _render(root)
    assert "kind: Widget" in (
        root / "out/edge-l4/workloads/edge/widget-qwen-7b.yaml").read_text()


def test_custom_resource_without_its_crd_is_an_error(tmp_path: Path) -> None:
    """Without the CRD, the custom resource has no schema: GEN020, pointing to crds/."""
    root = _widget_fleet(tmp_path, 3)
    with pytest.raises(ManifestValidationError) as info:
        _render(root, crds=False)
    assert {f.rule for f in info.value.findings} == {"GEN020"}
    assert all("crds/" in f.hint for f in info.value.findings)


def test_gen024_rule_of_the_crd_fires_at_the_output_file(tmp_path: Path) -> None:
    """GEN024: the CRD's rule is false; located at out/<file>, related to the profile and CRD."""
    root = _widget_fleet(tmp_path, 12)
    with pytest.raises(ManifestValidationError) as info:
        _render(root)
    where = SourceLocation("out/edge-l4/workloads/edge/widget-qwen-7b.yaml")
    finding = next(f for f in info.value.findings if f.location == where)
    assert (finding.rule, finding.key_path) == ("GEN024", "spec")
    assert finding.message == ("Widget breaks a rule of its CRD (crds/widget.yaml): size must "
                               "stay below 10")
    assert SourceLocation("crds/widget.yaml", 1, 1) in finding.related
    assert not (root / "out").exists()


def test_gen025_rule_gen_cannot_evaluate_warns_at_the_crd(tmp_path: Path) -> None:
    """GEN025: a rule gen cannot compile is a warning at the CRD; the render goes on."""
    root = _widget_fleet(tmp_path, 3, rule="isURL(self.port)")
    result = _render(root)
    (warning,) = [f for f in result.findings if f.rule == "GEN025"]
    assert warning.location == SourceLocation("crds/widget.yaml", 1, 1)
    assert warning.key_path == ("spec.versions.v1.schema.openAPIV3Schema.properties.spec."
                                "x-kubernetes-validations[1].rule")
    near = _widget_fleet(tmp_path / "near", 3, rule="self.port != ''")
    assert [f for f in _render(near).findings if f.rule == "GEN025"] == []


def test_gen023_unusable_crd_stops_render_and_lint(tmp_path: Path) -> None:
    """GEN023: a file in crds/ that is no CRD is a lint error at it; nothing is written."""
    from gen.errors import LintError
    from gen.pipeline import lint

    root = _widget_fleet(tmp_path, 3)
    write_tree(root, {"crds/notes.yaml": "apiVersion: v1\nkind: ConfigMap\n"})
    with pytest.raises(LintError) as info:
        _render(root)
    assert [(f.rule, str(f.location)) for f in info.value.findings] == [
        ("GEN023", "crds/notes.yaml:1:1")]
    findings = lint(root / "profiles", base=root, crds_dir=root / "crds")
    assert [f.rule for f in findings if f.rule == "GEN023"] == ["GEN023"]
    (root / "crds/notes.yaml").unlink()
    assert [f for f in lint(root / "profiles", base=root, crds_dir=root / "crds")
            if f.rule == "GEN023"] == []


def test_gen022_bad_label_on_a_built_in_kind(tmp_path: Path) -> None:
    """GEN022: a label key Kubernetes refuses fails a built-in object; a good one passes."""
    root = copy_fleet(tmp_path)
    write_tree(root, {"templates/core/namespace.yaml.j2": """
        apiVersion: v1
        kind: Namespace
        metadata:
          name: {{ name|tojson }}
          labels: {"team name": "a"}
    """})
    with pytest.raises(ManifestValidationError) as info:
        render(root / "profiles", root / "out", templates_dir=root / "templates",
               validator="embedded", base=root)
    finding = next(f for f in info.value.findings
                   if str(f.location) == "out/edge-l4/gpu/_cluster/namespace-edge.yaml")
    assert (finding.rule, finding.key_path) == ("GEN022", "metadata.labels.team name")
    (root / "templates/core/namespace.yaml.j2").write_text(
        (root / "templates/core/namespace.yaml.j2").read_text().replace("team name", "team"))
    render(root / "profiles", root / "out", templates_dir=root / "templates",
           validator="embedded", base=root)


def test_gen022_name_syntax_depends_on_the_kind() -> None:
    """A Service name with a dot is refused (DNS-1035); a ConfigMap's is fine (subdomain)."""
    meta = {"name": "a.b", "namespace": "n"}
    service = {"apiVersion": "v1", "kind": "Service", "metadata": meta, "spec": {}}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
    assert [(f.rule, f.key_path) for f in SchemaValidator().validate(service, 34, WHERE)] == [
        ("GEN022", "metadata.name")]
    assert SchemaValidator().validate(config, 34, WHERE) == []


# ------------------------------------------------------------- the metadata fast path

_TEXTS = ["a", "web", "qwen-7b", "Qwen", "a.b", "-a", "a-", "a_b", "a b", "", "x" * 63,
          "x" * 64, "app.kubernetes.io/name", "gen.dev/cluster", "Example.com/x", "a/b/c", "/x",
          "x/", "a" * 254, "ü", "kubernetes.io/pvc-protection", "Ab/c"]
_ODD: list[Any] = [None, 0, 1, ["a"], {"a": "b"}]
_KINDS = [("v1", "Service"), ("v1", "Namespace"), ("v1", "ConfigMap"),
          ("argoproj.io/v1alpha1", "Application")]
_GOOD_META: dict[str, Any] = {
    "name": "web", "namespace": "inference",
    "labels": {"app.kubernetes.io/name": "web", "gen.dev/cluster": "c1"},
    "annotations": {"gen.dev/note": "x"}, "finalizers": ["example.com/cleanup"]}


def _exact_metadata(data: dict[str, Any]) -> list[Any]:
    """metadata_findings with the fast path off (every object takes the exact path)."""
    saved = validate_module._metadata_clean
    validate_module._metadata_clean = lambda *_: False
    try:
        return validate_module.metadata_findings(data, WHERE)
    finally:
        validate_module._metadata_clean = saved


def _variants() -> list[dict[str, Any]]:
    """Valid metadata with one field changed in every way: absent, each text, odd types;
    in maps and lists, each text as a key and as a value, and sizes past the limit."""
    out: list[dict[str, Any]] = [dict(_GOOD_META), {**_GOOD_META, "generateName": "x-"}]
    for field in ("name", "namespace", "labels", "annotations", "finalizers"):
        out.append({k: v for k, v in _GOOD_META.items() if k != field})
        for value in [*_TEXTS, *_ODD]:
            if field in ("name", "namespace"):
                out.append({**_GOOD_META, field: value})
            elif field == "finalizers":
                out.append({**_GOOD_META, field: [*_GOOD_META[field], value]})
            else:
                out.append({**_GOOD_META, field: {**_GOOD_META[field], "a": value}})
                if isinstance(value, str):
                    out.append({**_GOOD_META, field: {**_GOOD_META[field], value: "v"}})
    for size in (64 * 1024, 256 * 1024 - 20, 256 * 1024):
        out.append({**_GOOD_META, "annotations": {"big": "x" * size}})
        out.append({**_GOOD_META, "annotations": {"big": "ü" * size}})
    out.append({**_GOOD_META, "name": "", "generateName": "x-"})
    return out


@pytest.mark.parametrize("kind", _KINDS, ids=lambda k: k[1])
def test_metadata_fast_path_agrees_with_the_exact_path(kind: tuple[str, str]) -> None:
    """The fast path (strings known to pass, learnt as they pass) answers "nothing wrong"
    only where the exact path finds nothing: on every one-field change of valid metadata,
    each finding comes out the same, before and after the strings are learnt."""
    gen.caches.clear()
    variants = _variants()
    for rounds in range(2):
        for meta in variants:
            data = {"apiVersion": kind[0], "kind": kind[1], "metadata": meta}
            exact = _exact_metadata(data)
            assert validate_module.metadata_findings(data, WHERE) == exact, (rounds, meta)
    assert any(_exact_metadata({"apiVersion": kind[0], "kind": kind[1], "metadata": m})
               for m in variants)


_MOSTLY_GOOD = st.sampled_from(["web", "a", "gen.dev/cluster", "app.kubernetes.io/name",
                                "c1", "", "-a", "Qwen", "a b", "x" * 64])


@settings(max_examples=300, deadline=None, derandomize=True)
@given(kind=st.sampled_from(_KINDS), name=_MOSTLY_GOOD, namespace=_MOSTLY_GOOD,
       labels=st.dictionaries(_MOSTLY_GOOD, _MOSTLY_GOOD, max_size=4),
       notes=st.dictionaries(_MOSTLY_GOOD, _MOSTLY_GOOD, max_size=3),
       finalizers=st.lists(_MOSTLY_GOOD, max_size=2))
def test_metadata_fast_path_agrees_on_combinations(
        kind: tuple[str, str], name: str, namespace: str, labels: dict[str, str],
        notes: dict[str, str], finalizers: list[str]) -> None:
    """The same on random combinations of mostly valid strings."""
    meta = {"name": name, "namespace": namespace, "labels": labels, "annotations": notes,
            "finalizers": finalizers}
    data = {"apiVersion": kind[0], "kind": kind[1], "metadata": meta}
    assert validate_module.metadata_findings(data, WHERE) == _exact_metadata(data)


def test_metadata_fast_path_learns_only_passes() -> None:
    """A name that fails is never learnt: it is reported every time, by the exact path."""
    bad = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "Web"}}
    assert [f.rule for f in validate_module.metadata_findings(bad, WHERE)] == ["GEN022"]
    assert "Web" not in validate_module._GOOD_1035.data
    assert [f.rule for f in validate_module.metadata_findings(bad, WHERE)] == ["GEN022"]
    good = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}}
    assert validate_module.metadata_findings(good, WHERE) == []
    assert "web" in validate_module._GOOD_1035.data
    # learnt per syntax: a subdomain name is not thereby a DNS-1035 label
    sub = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "1.web"}}
    assert validate_module.metadata_findings(sub, WHERE) == []
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1.web"}}
    assert [f.rule for f in validate_module.metadata_findings(svc, WHERE)] == ["GEN022"]


META_REPLACEMENTS: list[Any] = [
    "", "ok", "Bad_Name", "a" * 300, "x" * 70, "-lead", None, 5, True, {}, {"a": "b"},
    {"Bad Key": "v"}, {"k": "x" * 70}, {"k": 1}, ["example.com/fin"], ["Bad Fin"], [5], [],
    "x" * (70 * 1024),
]
"""Values for a metadata hole: good and bad names, label values, maps and lists, wrong types,
and an annotation value big enough to pass 256 KiB (× 4 bytes a character)."""


def test_metadata_of_a_shape_with_any_value_in_a_hole(tmp_path: Path) -> None:
    """Every shape of the example fleet, each value in its metadata replaced in turn by good
    and bad values of every type, the first object of a shape a bad one or a good one: the
    metadata findings with the holes are the exact path's, and so are the whole object's."""
    from gen.emit.skeleton import Holes
    from gen.emit.validate import metadata_findings

    root = copy_fleet(tmp_path)
    plan = load_plan(root / "profiles", base=root)
    env = make_environment(None)
    shapes: dict[str, tuple[int, Any]] = {}
    for cluster in plan.clusters:
        for obj in render_cluster(env, cluster)[0]:
            if obj.holes is not None:
                shapes.setdefault(obj.holes.shape.shape, (cluster.minor, obj))
    validator = SchemaValidator()
    compared = rejected = 0
    for bad_first in (True, False):
        gen.caches.clear()
        for minor, obj in shapes.values():
            holes = obj.holes
            cases = []
            for index, path in enumerate(holes.shape.paths):
                if path[0] != "metadata":
                    continue
                for value in META_REPLACEMENTS:
                    values = list(holes.values)
                    texts = list(holes.texts)
                    values[index], texts[index] = value, json.dumps(value)
                    cases.append((replaced_at(obj.data, path, value),
                                  Holes(holes.shape, tuple(values), tuple(texts))))
            cases = [*cases, (obj.data, holes)] if bad_first else [(obj.data, holes), *cases]
            for data, new in cases:
                shaped = metadata_findings(data, WHERE, (), new)
                assert shaped == metadata_findings(data, WHERE), (obj.path, new.values)
                assert validator.validate(data, minor, WHERE, None, new) == \
                    validator.validate(data, minor, WHERE)
                compared += 1
                rejected += bool(shaped)
    assert compared > 1000 and 0 < rejected < compared


@pytest.mark.parametrize(("fixed", "notes", "expected"), [
    (10, [5, 300 * 1024, 5], [[], ["GEN022"], []]),          # the value alone is too big
    (200 * 1024, [5, 100 * 1024, 5], [[], ["GEN022"], []]),  # together they are
    (40 * 1024, [5, 30 * 1024, 5], [[], [], []]),            # under the limit in bytes
])
def test_annotations_over_the_limit_through_a_hole_are_rejected(
        fixed: int, notes: list[int], expected: list[list[str]]) -> None:
    """The fixed annotations and a value together against 256 KiB: GEN022 exactly where the
    exact path says so, with the holes as without."""
    import jinja2

    from gen.emit import skeleton, yamlfast
    from gen.emit.validate import metadata_findings

    env = make_environment(None)
    env.loader = jinja2.DictLoader({"t.j2": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ name|tojson }}\n"
        f"  annotations:\n    fixed: {'f' * fixed}\n    note: {{{{ note|tojson }}}}\n")})
    gen.caches.clear()
    found = []
    for size in notes:
        filled = skeleton.render_filled(env, env.get_template("t.j2"),
                                        {"name": "cm", "note": "n" * size}, yamlfast.load_all)
        assert filled is not None and filled.holes is not None
        (doc,) = filled.docs
        shaped = metadata_findings(doc, WHERE, (), filled.holes)
        assert shaped == metadata_findings(doc, WHERE)
        found.append([f.rule for f in shaped])
    assert found == expected


def test_a_fixed_name_is_checked_by_the_rule_of_a_kind_that_is_a_value() -> None:
    """``kind`` is a value of the shape and the name is fixed: a ConfigMap may be called
    ``a.b`` (a DNS-1123 subdomain), a Service may not (a DNS-1035 label), whichever comes
    first."""
    import jinja2

    from gen.emit import skeleton, yamlfast
    from gen.emit.validate import metadata_findings

    env = make_environment(None)
    env.loader = jinja2.DictLoader({"t.j2": (
        "apiVersion: v1\nkind: {{ kind|tojson }}\nmetadata:\n  name: a.b\n")})
    for order in (("ConfigMap", "Service"), ("Service", "ConfigMap")):
        gen.caches.clear()
        found = {}
        for kind in (*order, *order):
            filled = skeleton.render_filled(env, env.get_template("t.j2"), {"kind": kind},
                                            yamlfast.load_all)
            assert filled is not None and filled.holes is not None
            (doc,) = filled.docs
            shaped = metadata_findings(doc, WHERE, (), filled.holes)
            assert shaped == metadata_findings(doc, WHERE)
            found[kind] = [f.rule for f in shaped]
        assert found == {"ConfigMap": [], "Service": ["GEN022"]}
