"""Tests for gen.emit.kubeconform: a fake kubeconform on PATH (flags, reports, errors), the
schema folders gen writes for it, and the real kubeconform, built from its Go module at the
pinned release (``tools.judge.build.ensure``: a failed build fails these tests)."""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from gen.emit.kubeconform import (
    find_kubeconform,
    key_path,
    kubeconform_resources,
    leaf_errors,
    run_kubeconform,
    write_kubernetes_schemas,
    write_schemas,
)
from gen.errors import (
    KubeconformError,
    Severity,
    SourceLocation,
    ToolError,
    ToolNotFoundError,
)

FAKES = Path(__file__).resolve().parents[1] / "fakes"

DEPLOYMENT = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
  namespace: inference
spec:
  replicas: 2
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    """Write one manifest under tmp_path/out/gpu-a and return its path."""
    path = tmp_path / "out" / "gpu-a" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


@pytest.fixture
def fake(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Put the fake kubeconform first on PATH; return the file recording its argv."""
    record = tmp_path / "argv.jsonl"
    monkeypatch.setenv("PATH", f"{FAKES}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_KUBECONFORM_ARGV", str(record))
    monkeypatch.delenv("FAKE_KUBECONFORM_MODE", raising=False)
    monkeypatch.delenv("FAKE_KUBECONFORM_VERBOSE", raising=False)
    return record


def calls(record: Path) -> list[list[str]]:
    """The argv of every fake kubeconform run so far."""
    return [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]


def test_fake_is_executable() -> None:
    """The fake kubeconform is an executable file with a python3 shebang."""
    fake = FAKES / "kubeconform"
    assert os.access(fake, os.X_OK)
    assert fake.read_text(encoding="utf-8").startswith("#!/usr/bin/env python3\n")


@pytest.mark.usefixtures("fake")
def test_find_kubeconform_uses_path() -> None:
    """find_kubeconform returns the kubeconform that PATH finds first."""
    assert find_kubeconform() == str(FAKES / "kubeconform")


def test_flags_schema_locations_and_files(fake: Path, tmp_path: Path) -> None:
    """kubeconform gets -strict -summary -output json, X.Y.Z, gen's two local schema
    locations (CRDs first, then the built-in kinds), the caller's, and no ``default`` URL."""
    path = write(tmp_path, "deployment-vllm.yaml", DEPLOYMENT.format(name="vllm"))
    mirror = str(tmp_path / "mirror")
    assert run_kubeconform([path], "1.34", schema_locations=[mirror]) == []
    (argv,) = calls(fake)
    assert argv[:5] == ["-strict", "-summary", "-output", "json", "-kubernetes-version"]
    assert argv[5] == "1.34.0"
    assert "-verbose" not in argv
    locations = [argv[i + 1] for i, a in enumerate(argv) if a == "-schema-location"]
    assert len(locations) == 3
    assert locations[2] == mirror
    assert locations[0].endswith("/crds/{{ .ResourceKind }}{{ .KindSuffix }}.json")
    assert locations[1].endswith("/kubernetes/{{ .ResourceKind }}{{ .KindSuffix }}.json")
    assert all("gen-kubeconform-schemas-" in loc for loc in locations[:2])
    assert argv[argv.index("-skip") + 1].startswith("kustomize.config.k8s.io/v1beta1/Kustomization")
    assert argv[-2:] == ["--", str(path)]


def test_verbose_resources_list_every_resource(fake: Path, tmp_path: Path) -> None:
    """kubeconform_resources with verbose asks for -verbose and returns every resource."""
    good = write(tmp_path, "deployment-good.yaml", DEPLOYMENT.format(name="good"))
    bad = write(tmp_path, "deployment-bad.yaml",
                "# fake-kubeconform: invalid\n" + DEPLOYMENT.format(name="bad"))
    resources = kubeconform_resources([good, bad], "1.34", verbose=True)
    assert [r["status"] for r in resources] == ["statusValid", "statusInvalid"]
    (argv,) = calls(fake)
    assert "-verbose" in argv


@pytest.mark.usefixtures("fake")
def test_invalid_resource_gives_one_finding_per_validation_error(tmp_path: Path) -> None:
    """Each validationErrors entry becomes a GEN021 error at the file, with a dotted key path."""
    path = write(
        tmp_path,
        "deployment-bad.yaml",
        "# fake-kubeconform: invalid\n" + DEPLOYMENT.format(name="bad"),
    )
    findings = run_kubeconform([path], "1.33.2")
    assert [(f.rule, f.severity, f.key_path) for f in findings] == [
        ("GEN021", Severity.ERROR, "spec.template.spec.containers[0]"),
        ("GEN021", Severity.ERROR, "spec.replicas"),
    ]
    assert findings[1].location == SourceLocation(str(path))
    assert findings[1].message == "Deployment bad (apps/v1): expected integer, but got string"
    assert "additional properties 'bogus'" in findings[0].format()


@pytest.mark.usefixtures("fake")
def test_origin_goes_into_related(tmp_path: Path) -> None:
    """The profile location that produced an output file is attached as Finding.related."""
    path = write(
        tmp_path,
        "deployment-bad.yaml",
        "# fake-kubeconform: invalid\n" + DEPLOYMENT.format(name="bad"),
    )
    profile = SourceLocation("profiles/services.yaml", 12, 3)
    findings = run_kubeconform([path], "1.34.0", origin={str(path): profile})
    assert {f.related for f in findings} == {(profile,)}


@pytest.mark.usefixtures("fake")
def test_where_locates_the_findings(tmp_path: Path) -> None:
    """A scratch copy's findings are reported where the caller says (its out/ path)."""
    path = write(
        tmp_path,
        "deployment-bad.yaml",
        "# fake-kubeconform: invalid\n" + DEPLOYMENT.format(name="bad"),
    )
    shown = SourceLocation("out/gpu-a/deployment-bad.yaml")
    findings = run_kubeconform([path], "1.34", where={str(path): shown})
    assert len(findings) == 2
    assert {f.location for f in findings} == {shown}


@pytest.mark.usefixtures("fake")
def test_error_status_gives_error_with_hint(tmp_path: Path) -> None:
    """A statusError resource (missing schema) is an error finding with a schema-location hint."""
    path = write(
        tmp_path,
        "computedomain-x.yaml",
        """\
        # fake-kubeconform: error
        apiVersion: resource.nvidia.com/v1beta1
        kind: ComputeDomain
        metadata:
          name: x
        """,
    )
    (finding,) = run_kubeconform([path], "1.34")
    assert finding.severity is Severity.ERROR
    assert (
        finding.message
        == "ComputeDomain x (resource.nvidia.com/v1beta1): could not find schema for ComputeDomain"
    )
    assert "schema" in finding.hint


@pytest.mark.usefixtures("fake")
def test_valid_and_skipped_in_verbose_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Valid resources give nothing; skipped ones give an info finding, not an error."""
    monkeypatch.setenv("FAKE_KUBECONFORM_VERBOSE", "1")
    good = write(tmp_path, "deployment-good.yaml", DEPLOYMENT.format(name="good"))
    skipped = write(
        tmp_path,
        "kustomization.yaml",
        """\
        # fake-kubeconform: skipped
        apiVersion: kustomize.config.k8s.io/v1beta1
        kind: Kustomization
        resources: []
        """,
    )
    (finding,) = run_kubeconform([good, skipped], "1.34")
    assert finding.severity is Severity.INFO
    assert finding.location == SourceLocation(str(skipped))


@pytest.mark.usefixtures("fake")
def test_mixed_files_sorted(tmp_path: Path) -> None:
    """Findings from several files come back sorted by file."""
    b = write(tmp_path, "b.yaml", "# fake-kubeconform: error\n" + DEPLOYMENT.format(name="b"))
    a = write(tmp_path, "a.yaml", "# fake-kubeconform: invalid\n" + DEPLOYMENT.format(name="a"))
    findings = run_kubeconform([b, a], "1.34")
    assert [f.location.path if f.location else "" for f in findings] == [str(a), str(a), str(b)]


def test_long_file_lists_are_batched(fake: Path, tmp_path: Path) -> None:
    """Thousands of files are split over several runs, all of them validated."""
    path = write(tmp_path, "deployment-x.yaml", DEPLOYMENT.format(name="x"))
    files = [path] * 3000
    assert run_kubeconform(files, "1.34") == []
    runs = calls(fake)
    assert len(runs) > 1
    assert sum(len(argv) - argv.index("--") - 1 for argv in runs) == 3000


def test_no_files_runs_nothing(fake: Path) -> None:
    """An empty file list returns no findings without starting kubeconform."""
    assert run_kubeconform([], "1.34") == []
    assert not fake.exists()


@pytest.mark.usefixtures("fake")
def test_crash_raises_tool_error_with_stderr_tail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash raises KubeconformError (a ToolError) whose message ends with stderr."""
    monkeypatch.setenv("FAKE_KUBECONFORM_MODE", "crash")
    path = write(tmp_path, "deployment-x.yaml", DEPLOYMENT.format(name="x"))
    with pytest.raises(
        ToolError, match=r"crashed \(exit code 2\); stderr:\npanic: runtime"
    ) as info:
        run_kubeconform([path], "1.34")
    assert isinstance(info.value, KubeconformError)
    assert info.value.returncode == 2
    assert "goroutine 1" in info.value.format_message()


@pytest.mark.usefixtures("fake")
def test_unparseable_output_raises_tool_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Output that is not kubeconform's JSON report raises KubeconformError."""
    monkeypatch.setenv("FAKE_KUBECONFORM_MODE", "garbage")
    path = write(tmp_path, "deployment-x.yaml", DEPLOYMENT.format(name="x"))
    with pytest.raises(
        KubeconformError, match=r"did not print its JSON report(?s:.)*something odd"
    ):
        run_kubeconform([path], "1.34")


def test_bad_version_is_rejected_before_running(fake: Path, tmp_path: Path) -> None:
    """A Kubernetes version that is not X.Y[.Z] is a ValueError and kubeconform never runs."""
    path = write(tmp_path, "deployment-x.yaml", DEPLOYMENT.format(name="x"))
    with pytest.raises(ValueError, match="not a Kubernetes version"):
        run_kubeconform([path], "1.34-rc1")
    assert not fake.exists()


def test_missing_binary_raises_tool_not_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without kubeconform on PATH, ToolNotFoundError carries the install hint."""
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_kubeconform() is None
    with pytest.raises(ToolNotFoundError, match=r"go install github\.com/yannh/kubeconform"):
        run_kubeconform([tmp_path / "x.yaml"], "1.34")


def test_explicit_missing_binary_raises_tool_not_found(tmp_path: Path) -> None:
    """An explicit binary path that does not exist raises ToolNotFoundError."""
    path = write(tmp_path, "deployment-x.yaml", DEPLOYMENT.format(name="x"))
    with pytest.raises(ToolNotFoundError, match="brew install kubeconform"):
        run_kubeconform([path], "1.34", binary=str(tmp_path / "nope" / "kubeconform"))


APPLICATION = """\
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata:
  name: gpu-a
  namespace: argocd
spec:
  project: default
  source:
    repoURL: https://github.com/example/fleet.git
    targetRevision: main
    path: out/gpu-a
  destination:
    name: gpu-a
    namespace: inference
  syncPolicy:
    automated:
      prune: true
      selfHeal: true
"""


# ------------------------------------------------------------------ gen's schema folders


def test_written_schemas_stand_alone(tmp_path: Path) -> None:
    """The built-in kinds' schemas refer only to their own $defs (no network, no other file)
    and judge as the embedded validator's do; a CRD's metadata is the version's ObjectMeta."""
    crd_location, k8s_location = write_schemas(
        tmp_path, "1.34.2", kinds={("apps/v1", "Deployment"),
                                   ("argoproj.io/v1alpha1", "Application")})
    template = "{{ .ResourceKind }}{{ .KindSuffix }}.json"
    assert crd_location == f"{tmp_path.as_posix()}/crds/{template}"
    assert k8s_location == f"{tmp_path.as_posix()}/kubernetes/{template}"
    assert sorted(p.name for p in (tmp_path / "kubernetes").iterdir()) == [
        "deployment-apps-v1.json"]
    assert sorted(p.name for p in (tmp_path / "crds").iterdir()) == [
        "application-argoproj-v1alpha1.json"]
    text = (tmp_path / "kubernetes" / "deployment-apps-v1.json").read_text(encoding="utf-8")
    schema = json.loads(text)
    refs = set(re.findall(r'"\$ref": "([^"]*)"', text))
    assert refs and all(ref.startswith("#/$defs/") for ref in refs)
    assert "$id" not in schema
    assert "io.k8s.api.apps.v1.DeploymentSpec" in schema["$defs"]
    validator = Draft202012Validator(schema)  # no registry: nothing outside the file
    good = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
            "spec": {"selector": {}, "template": {"spec": {"containers": [
                {"name": "c", "image": "i"}]}}}}
    assert validator.is_valid(good)
    bad = json.loads(json.dumps(good))
    bad["spec"]["template"]["spec"]["containers"][0]["bogus"] = 1
    assert not validator.is_valid(bad)
    application = json.loads((tmp_path / "crds" / "application-argoproj-v1alpha1.json")
                             .read_text(encoding="utf-8"))
    meta = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    assert application["properties"]["metadata"] == {"$ref": f"#/$defs/{meta}"}
    assert meta in application["$defs"]
    assert not Draft202012Validator(application).is_valid(
        {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
         "metadata": {"name": "a", "bogus": 1}, "spec": {}})


def test_every_schema_of_the_version_without_kinds(tmp_path: Path) -> None:
    """Without kinds, every schema file of the version is written (as the embedded
    validator would find any of them); a kind that makes no file name writes nothing."""
    from gen.emit.validate import _schema_root

    write_kubernetes_schemas(tmp_path / "all", "1.33")
    bundled = {p.name for p in (_schema_root() / "v1.33.0-local-strict").glob("*.json")}
    assert {p.name for p in (tmp_path / "all").iterdir()} == bundled - {"_definitions.json"}
    write_kubernetes_schemas(tmp_path / "odd", "1.33", kinds={
        ("v1", "x" * 300), ("apps/v1", "../deployment"), ("a/b/c", "Pod"), ("v1", "a\0b")})
    assert list((tmp_path / "odd").iterdir()) == []


def test_leaf_errors_read_the_error_tree() -> None:
    """The leaves of jsonschema v6's tree, in order; a failed anyOf is one error at its node;
    quoted pointers are unescaped."""
    msg = ("problem validating schema. Check JSON formatting: jsonschema validation failed "
           "with 'file:///s/deployment-apps-v1.json#' - at '/spec': validation failed"
           "   - at '/spec/replicas': got string, want null or integer"
           "   - at '/spec/x': 'anyOf' failed"
           "     - at '/spec/x': got object, want integer"
           "     - at '/spec/x': got object, want string"
           "   - at '/spec/template/metadata/labels/it\\'s': got number, want string"
           " - at '': missing property 'kind'")
    assert leaf_errors(msg) == [
        ("/spec/replicas", "got string, want null or integer"),
        ("/spec/x", "'anyOf' failed"),
        ("/spec/template/metadata/labels/it's", "got number, want string"),
        ("", "missing property 'kind'"),
    ]
    assert leaf_errors("problem validating schema. Check JSON formatting: x") == []
    assert key_path("/spec/containers/0/image") == "spec.containers[0].image"
    assert key_path("/metadata/labels/a~1b") == "metadata.labels.a/b"


# ------------------------------------------------------------------ the real kubeconform


@pytest.fixture(scope="module")
def kubeconform() -> str:
    """The pinned kubeconform, built (or found in the judge's cache) from its Go module."""
    from tools.judge.build import ensure

    return str(ensure("kubeconform", log=False))


@pytest.mark.kubeconform
def test_real_kubeconform_reads_gen_schemas(tmp_path: Path, kubeconform: str) -> None:
    """The real kubeconform loads gen's CRD schema folder offline: valid passes, a typo fails."""
    good = write(tmp_path, "application-good.yaml", APPLICATION)
    bad = write(tmp_path, "application-bad.yaml", APPLICATION.replace("selfHeal", "selfHeel"))
    assert run_kubeconform([good], "1.34.0", binary=kubeconform) == []
    (finding,) = run_kubeconform([bad], "1.34.0", binary=kubeconform)
    assert finding.rule == "GEN021"
    assert finding.location == SourceLocation(str(bad))
    assert finding.key_path == "spec.syncPolicy.automated"
    assert "additional properties 'selfHeel' not allowed" in finding.message


POD_SPEC = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: vllm
  namespace: inference
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: vllm}}}}
  template:
    metadata: {{labels: {{app: vllm}}}}
    spec:
      containers: [{{name: vllm, image: "vllm/vllm-openai:v0.11.0"{extra}}}]
"""


@pytest.mark.kubeconform
def test_real_kubeconform_built_in_kinds_offline(tmp_path: Path, kubeconform: str) -> None:
    """Built-in kinds are judged with the version's schemas, offline: each error at its own
    key path; a kind no schema describes is 'could not find schema', not a download."""
    good = write(tmp_path, "good.yaml", POD_SPEC.format(replicas=2, extra=""))
    bad = write(tmp_path, "bad.yaml", POD_SPEC.format(replicas='"2"', extra=", bogus: 1"))
    unknown = write(tmp_path, "unknown.yaml", "apiVersion: example.com/v1\nkind: Widget\n"
                    "metadata: {name: w}\n")
    for version in ("1.31.6", "1.34.2", "1.37.0", "1.40"):
        assert run_kubeconform([good], version, binary=kubeconform) == []
    findings = run_kubeconform([bad, unknown], "1.34.2", binary=kubeconform)
    assert sorted((f.location.path if f.location else "", f.key_path) for f in findings) == [
        (str(bad), "spec.replicas"), (str(bad), "spec.template.spec.containers[0]"),
        (str(unknown), "")]
    (missing,) = [f for f in findings if f.location == SourceLocation(str(unknown))]
    assert missing.message == "Widget w (example.com/v1): could not find schema for Widget"
    assert "crds/" in missing.hint
    assert not any(marker in f.message for f in findings
                   for marker in ("dial tcp", "no such host", "https://"))


OCI = """\
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {{name: driver, namespace: flux-system}}
spec:
  interval: 12h
  url: {url}
  ref: {{semver: ">=25.8.0"}}
{extra}"""


@pytest.mark.kubeconform
def test_real_kubeconform_defaults_and_nulls_as_the_api_server(
        tmp_path: Path, kubeconform: str) -> None:
    """A required field with a default may be missing and an optional field may be null (the
    API server defaults and drops them before it validates); a null in a required field
    without a default is an error."""
    cases = {
        "defaulted.yaml": (OCI.format(url="oci://r/c", extra="  verify: {}\n"), []),
        "null.yaml": (OCI.format(url="oci://r/c", extra="  ignore: null\n"), []),
        # source-controller v1.10 made spec.url optional; secretRef.name is still required
        "missing.yaml": (OCI.format(url="oci://r/c", extra="  secretRef: {name: null}\n"),
                         ["spec.secretRef.name"]),
        "typo.yaml": (OCI.format(url="oci://r/c", extra="  verify: {provider: nope}\n"),
                      ["spec.verify.provider"]),
    }
    for name, (text, paths) in cases.items():
        path = write(tmp_path, name, text)
        found = run_kubeconform([path], "1.34", binary=kubeconform)
        assert [f.key_path for f in found] == paths, (name, [f.format() for f in found])


def _wrapper(tmp_path: Path, binary: str) -> tuple[Path, Path]:
    """A kubeconform on PATH that records each run's arguments, then runs the real one."""
    folder, log = tmp_path / "bin", tmp_path / "runs.log"
    folder.mkdir()
    script = folder / "kubeconform"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{binary}" "$@"\n',
                      encoding="utf-8")
    script.chmod(0o755)
    return folder, log


@pytest.mark.kubeconform
def test_real_render_of_the_example_fleet(tmp_path: Path, kubeconform: str,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """`gen render --validator kubeconform` renders every cluster of the example fleet with
    no finding, kubeconform run once per cluster on every object of it (its _root/ and
    _bootstrap/ objects too), offline."""
    from click.testing import CliRunner

    from gen.emit.render import make_environment, render_cluster
    from gen.pipeline import load_plan
    from tests.helpers import REPO, invoke

    folder, log = _wrapper(tmp_path, kubeconform)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    result = invoke(CliRunner(), "render", "--profiles", REPO / "profiles",
                    "--out", tmp_path / "out", "--validator", "kubeconform", "--no-cache")
    assert result.exit_code == 0, result.output
    assert "GEN021" not in result.output and "warning" not in result.output
    runs = log.read_text(encoding="utf-8").splitlines()
    plan = load_plan(REPO / "profiles", base=REPO)
    assert len(runs) == len(plan.clusters)
    env = make_environment()
    expected = [sorted(str(o.path) for o in render_cluster(env, cluster)[0])
                for cluster in plan.clusters]
    scratch = [sorted(f.split("/gen-kubeconform-", 1)[1].split("/", 1)[1]
                      for f in run.split(" -- ")[1].split()) for run in runs]
    assert scratch == expected  # one run per cluster, every object of it
    assert any(p.startswith(("_bootstrap/", "_root/")) for paths in scratch for p in paths)


@pytest.mark.kubeconform
def test_real_render_reports_a_broken_bootstrap_object(
        tmp_path: Path, kubeconform: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A template override that breaks the Flux GitRepository: kubeconform (GEN021) reports
    it at each cluster's _bootstrap/ file, beside the embedded validator (GEN020)."""
    from click.testing import CliRunner

    from gen.emit.render import make_environment, render_cluster
    from gen.pipeline import load_plan
    from tests.helpers import REPO, copy_fleet, invoke

    root = copy_fleet(tmp_path / "fleet")
    template = (REPO / "templates" / "gitops" / "gitrepository.yaml.j2").read_text(
        encoding="utf-8")
    override = root / "templates" / "gitops" / "gitrepository.yaml.j2"
    override.parent.mkdir(parents=True)
    override.write_text(template.replace("spec:\n", "spec:\n  bogusField: 1\n"),
                        encoding="utf-8")
    folder, _ = _wrapper(tmp_path, kubeconform)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ.get('PATH', '')}")
    result = invoke(CliRunner(), "render", "--profiles", root / "profiles",
                    "--out", root / "out", "--validator", "kubeconform", "--no-cache")
    assert result.exit_code == 1
    env = make_environment()
    broken = sorted(str(o.path) for cluster in load_plan(REPO / "profiles", base=REPO).clusters
                    for o in render_cluster(env, cluster)[0] if o.kind == "GitRepository")
    assert broken and all(path.startswith("_bootstrap/") for path in broken)
    lines = [line for line in result.output.splitlines() if "GEN021" in line]
    # at out/<path>, as the embedded validator's findings (not at kubeconform's scratch copy)
    shown = f"{(root / 'out').as_posix()}/"
    assert sorted(line.split(": error")[0].removeprefix(shown) for line in lines) == broken
    assert all("spec: GitRepository" in line and
               "additional properties 'bogusField' not allowed" in line for line in lines)
    assert sum("GEN020" in line for line in result.output.splitlines()) == len(broken)
