"""Tests for gen.emit.kubeconform: a fake kubeconform on PATH, and the real one when installed."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from pathlib import Path

import pytest

from gen.emit.kubeconform import find_kubeconform, run_kubeconform
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
    """kubeconform gets -strict -summary -output json, X.Y.Z, gen's schemas, extras, default."""
    path = write(tmp_path, "deployment-vllm.yaml", DEPLOYMENT.format(name="vllm"))
    mirror = str(tmp_path / "mirror")
    assert run_kubeconform([path], "1.34", schema_locations=[mirror]) == []
    (argv,) = calls(fake)
    assert argv[:5] == ["-strict", "-summary", "-output", "json", "-kubernetes-version"]
    assert argv[5] == "1.34.0"
    locations = [argv[i + 1] for i, a in enumerate(argv) if a == "-schema-location"]
    assert locations[1:] == [mirror, "default"]
    assert locations[0].endswith("/{{ .ResourceKind }}{{ .KindSuffix }}.json")
    assert "gen-crd-schemas-" in locations[0]  # the CRDs' schemas, written for the run
    assert argv[argv.index("-skip") + 1].startswith("kustomize.config.k8s.io/v1beta1/Kustomization")
    assert argv[-2:] == ["--", str(path)]


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


@pytest.mark.kubeconform
def test_real_kubeconform_reads_gen_schemas(tmp_path: Path) -> None:
    """The real kubeconform loads gen's CRD schema folder offline: valid passes, a typo fails."""
    if shutil.which("kubeconform") is None:
        pytest.skip("kubeconform is not on PATH (go install github.com/yannh/kubeconform/...)")
    good = write(tmp_path, "application-good.yaml", APPLICATION)
    bad = write(tmp_path, "application-bad.yaml", APPLICATION.replace("selfHeal", "selfHeel"))
    assert run_kubeconform([good], "1.34.0") == []
    findings = run_kubeconform([bad], "1.34.0")
    assert findings
    assert {f.rule for f in findings} == {"GEN021"}
    assert all(f.location == SourceLocation(str(bad)) for f in findings)
