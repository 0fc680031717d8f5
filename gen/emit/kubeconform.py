"""Validate rendered manifests with kubeconform, an external Go binary, through a subprocess.

kubeconform runs with ``-strict -summary -output json -kubernetes-version X.Y.Z``. Its schema
locations are searched in order, first match wins:

1. the JSON Schemas of the CRDs gen knows (:mod:`gen.emit.crd_schemas`: the bundled upstream
   CRDs and the user's ``crds/``), written into a scratch folder for the run;
2. the caller's ``schema_locations`` (e.g. a local mirror of ``yannh/kubernetes-json-schema``
   or of the ``datreeio/CRDs-catalog``);
3. ``default``: ``https://raw.githubusercontent.com/yannh/kubernetes-json-schema/...``.

The default location is a URL. Without network access, built-in kinds (Deployment, Service, …)
fail with ``statusError``; give kubeconform a local mirror through ``schema_locations``.

The ``kustomization.yaml`` gen writes into each ``out/<cluster>/`` is not a Kubernetes object
(``kustomize.config.k8s.io``) and is skipped. Each failing resource becomes a
:class:`~gen.errors.Finding` with rule ``GEN021`` located at the output file; when the caller
knows which profile produced the file, that profile location goes into ``Finding.related``.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gen.errors import Finding, KubeconformError, Severity, SourceLocation, ToolNotFoundError

if TYPE_CHECKING:
    import subprocess

    from gen.emit.crd_schemas import CRDSet

__all__ = ["RULE", "find_kubeconform", "run_kubeconform"]

RULE = "GEN021"

INSTALL_HINT = (
    "install kubeconform and put it on PATH: "
    "`go install github.com/yannh/kubeconform/cmd/kubeconform@latest`, "
    "`brew install kubeconform`, or a release tarball from "
    "https://github.com/yannh/kubeconform/releases"
)

# Kinds in out/<cluster>/ that are not Kubernetes objects and have no schema anywhere.
_SKIP = (
    "kustomize.config.k8s.io/v1beta1/Kustomization",
    "kustomize.config.k8s.io/v1alpha1/Component",
)

# Stay far below ARG_MAX: split long file lists into several runs.
_MAX_ARGV_CHARS = 100_000

_NETWORK_MARKERS = (
    "dial tcp",
    "no such host",
    "connection refused",
    "i/o timeout",
    "failed downloading schema",
)

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?$")


def find_kubeconform() -> str | None:
    """The kubeconform executable on PATH, or ``None``."""
    return shutil.which("kubeconform")


def _normalize_version(version: str) -> str:
    """``1.34`` / ``v1.34`` / ``1.34.2`` → the ``X.Y.Z`` kubeconform requires."""
    if version == "master":
        return version
    match = _VERSION.match(version.strip())
    if match is None:
        raise ValueError(f"not a Kubernetes version (X.Y or X.Y.Z): {version!r}")
    major, minor, patch = match.groups()
    return f"{major}.{minor}.{patch or 0}"


def _batches(files: Sequence[str]) -> Iterator[list[str]]:
    batch: list[str] = []
    size = 0
    for name in files:
        if batch and size + len(name) + 1 > _MAX_ARGV_CHARS:
            yield batch
            batch, size = [], 0
        batch.append(name)
        size += len(name) + 1
    if batch:
        yield batch


def run_kubeconform(
    files: Sequence[Path],
    kubernetes_version: str,
    *,
    binary: str | None = None,
    schema_locations: Sequence[str] = (),
    origin: Mapping[str, SourceLocation] | None = None,
    crds: CRDSet | None = None,
) -> list[Finding]:
    """Validate ``files`` with kubeconform for one cluster's Kubernetes version.

    Args:
        files: manifest files (typically every file of ``out/<cluster>/``).
        kubernetes_version: ``X.Y`` or ``X.Y.Z`` (``X.Y`` means ``X.Y.0``).
        binary: the kubeconform executable; found on PATH when ``None``.
        schema_locations: extra ``-schema-location`` values, searched after gen's own schemas
            and before ``default``. Needed offline: ``default`` is a URL.
        origin: output file path (as given in ``files``) → the profile location that produced
            it; becomes ``Finding.related``.
        crds: the CRDs whose schemas kubeconform reads first (default: the bundled ones).

    Returns:
        The findings, sorted; empty when every resource is valid.

    Raises:
        ToolNotFoundError: kubeconform is not installed (or ``binary`` does not exist).
        KubeconformError: kubeconform crashed or its output is not its JSON report.
        ValueError: ``kubernetes_version`` is not a version.
    """
    version = _normalize_version(kubernetes_version)
    exe = binary or find_kubeconform()
    if exe is None:
        raise ToolNotFoundError(f"kubeconform was not found on PATH; {INSTALL_HINT}")
    if not files:
        return []
    command = [
        exe,
        "-strict",
        "-summary",
        "-output",
        "json",
        "-kubernetes-version",
        version,
        "-skip",
        ",".join(_SKIP),
    ]
    findings: list[Finding] = []
    import tempfile

    with tempfile.TemporaryDirectory(prefix="gen-crd-schemas-") as scratch:
        from gen.emit.crd_schemas import write_kubeconform_schemas  # the no-op path skips it

        crd_location = write_kubeconform_schemas(Path(scratch), crds)
        for location in (crd_location, *schema_locations, "default"):
            command += ["-schema-location", location]
        command.append("--")
        for batch in _batches([str(f) for f in files]):
            process = _run([*command, *batch], exe)
            findings += _findings(process, origin or {})
    return sorted(findings, key=Finding.sort_key)


def _run(command: list[str], exe: str) -> subprocess.CompletedProcess[str]:
    import subprocess  # not at import time: the no-op render only asks find_kubeconform

    try:
        return subprocess.run(  # fixed argv, no shell
            command,
            capture_output=True,
            text=True,
            encoding="utf-8",
            errors="replace",
            check=False,
        )
    except FileNotFoundError as exc:
        raise ToolNotFoundError(f"kubeconform not found at {exe}; {INSTALL_HINT}") from exc
    except OSError as exc:
        raise KubeconformError(
            f"kubeconform at {exe} could not be started: {exc}", command=command
        ) from exc


def _findings(
    process: subprocess.CompletedProcess[str], origin: Mapping[str, SourceLocation]
) -> list[Finding]:
    if process.returncode not in (0, 1):
        raise KubeconformError.from_process(process, "crashed")
    try:
        report = json.loads(process.stdout)
    except json.JSONDecodeError:
        raise KubeconformError.from_process(process, "did not print its JSON report") from None
    if not isinstance(report, dict) or not isinstance(report.get("resources"), list):
        raise KubeconformError.from_process(process, "printed JSON without a resources list")
    findings: list[Finding] = []
    for resource in report["resources"]:
        if not isinstance(resource, dict):
            raise KubeconformError.from_process(process, "printed a resource that is not an object")
        findings += _resource_findings(resource, origin)
    if process.returncode == 1 and not any(f.severity is Severity.ERROR for f in findings):
        raise KubeconformError.from_process(process, "failed without reporting a resource")
    return findings


def _text(resource: Mapping[str, Any], key: str) -> str:
    value = resource.get(key)
    return value if isinstance(value, str) else ""


def _resource_findings(
    resource: Mapping[str, Any], origin: Mapping[str, SourceLocation]
) -> list[Finding]:
    status = _text(resource, "status")
    if status == "statusValid":
        return []
    filename = _text(resource, "filename")
    what = (
        " ".join(p for p in (_text(resource, "kind"), _text(resource, "name")) if p) or "resource"
    )
    version = _text(resource, "version")
    if version:
        what += f" ({version})"
    msg = _text(resource, "msg")
    location = SourceLocation(filename) if filename else None
    profile = None
    if filename:
        profile = origin.get(filename) or origin.get(Path(filename).as_posix())
    related = (profile,) if profile is not None else ()

    def finding(
        message: str, *, key_path: str = "", severity: Severity = Severity.ERROR, hint: str = ""
    ) -> Finding:
        return Finding(
            rule=RULE,
            message=message,
            location=location,
            key_path=key_path,
            severity=severity,
            hint=hint,
            related=related,
        )

    if status == "statusSkipped":
        return [finding(f"{what}: skipped by kubeconform, not validated", severity=Severity.INFO)]
    if status == "statusInvalid":
        errors = [e for e in resource.get("validationErrors") or () if isinstance(e, dict)]
        if not errors:
            return [finding(f"{what}: {msg or 'invalid'}")]
        return [
            finding(f"{what}: {_text(e, 'msg')}", key_path=_key_path(_text(e, "path")))
            for e in errors
        ]
    return [finding(f"{what}: {msg or status or 'unknown kubeconform status'}", hint=_hint(msg))]


def _hint(msg: str) -> str:
    if "could not find schema" in msg:
        return (
            "gen ships schemas only for the custom resources it emits; pass a local "
            "schema mirror (schema_locations) for other kinds"
        )
    if any(marker in msg for marker in _NETWORK_MARKERS):
        return (
            "kubeconform downloads built-in schemas from GitHub; without network, pass a "
            "local mirror of yannh/kubernetes-json-schema as a schema location"
        )
    return ""


def _key_path(pointer: str) -> str:
    """``/spec/containers/0/image`` → ``spec.containers[0].image``."""
    out = ""
    for raw in pointer.split("/")[1:] if pointer.startswith("/") else pointer.split("/"):
        if not raw:
            continue
        part = raw.replace("~1", "/").replace("~0", "~")
        if part.isdigit():
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out
