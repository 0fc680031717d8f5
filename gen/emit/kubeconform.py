"""Validate rendered manifests with kubeconform, an external Go binary, through a subprocess.

kubeconform runs with ``-strict -summary -output json -kubernetes-version X.Y.Z``. Its schema
locations are searched in order, first match wins, and all of gen's are local files, written
into a scratch folder for the run (:func:`write_schemas`), only for the kinds the files hold:

1. the JSON Schemas of the CRDs gen knows (:mod:`gen.emit.crd_schemas`: the bundled upstream
   CRDs and the user's ``crds/``; :func:`~gen.emit.crd_schemas.kubeconform_schema`), their
   ``metadata`` the version's strict ObjectMeta, defaults and nulls as the API server treats
   them before it validates;
2. the strict JSON Schemas of Kubernetes' built-in kinds for the cluster's version: the ones
   the embedded validator reads (:mod:`gen.emit.validate`, the ``kubernetes-validate``
   package's ``v1.X.0-local-strict/`` folder, the newest not newer than the cluster), each
   made whole: its references into ``_definitions.json`` point into its own ``$defs``;
3. the caller's ``schema_locations`` (e.g. a local mirror of the ``datreeio/CRDs-catalog``;
   ``default``, kubeconform's GitHub URL, only when the caller names it).

So kubeconform needs no network, and reads the schemas the embedded validator reads: a kind
neither knows is ``could not find schema`` (an error, as it is for the embedded validator),
never a download that fails. kubeconform v0.8.0 compiles each kind's schema with a compiler
of its own (santhosh-tekuri/jsonschema v6; yannh/kubeconform
pkg/validator/validator.go@v0.8.0, ``New`` and ``downloadSchema``), which is why each file
carries only the definitions it needs.

The ``kustomization.yaml`` gen writes into each ``out/<cluster>/`` is not a Kubernetes object
(``kustomize.config.k8s.io``) and is skipped. Each failing resource becomes a
:class:`~gen.errors.Finding` with rule ``GEN021`` located at the output file (or where the
caller says, for a scratch copy), one per error kubeconform's message names
(:func:`leaf_errors`: kubeconform's own ``validationErrors`` stop at the first ``$ref``, e.g.
``/spec: validation failed``); when the caller knows which profile produced the file, that
profile location goes into ``Finding.related``. :func:`kubeconform_resources` gives
kubeconform's report itself (the judge, ``tools/judge/kubeconform_category.py``, reads it).
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gen import rules
from gen.caches import memoize
from gen.errors import Finding, KubeconformError, Severity, SourceLocation, ToolNotFoundError
from gen.pins import pin

if TYPE_CHECKING:
    import subprocess

    from gen.emit.crd_schemas import CRDSet

__all__ = [
    "RULE",
    "find_kubeconform",
    "key_path",
    "kubeconform_resources",
    "leaf_errors",
    "object_meta",
    "run_kubeconform",
    "write_kubernetes_schemas",
    "write_schemas",
]

RULE = "GEN021"

def install_hint() -> str:
    """How to install kubeconform: the pinned release first (read when it is needed, so the
    no-op render path reads no data file)."""
    return (
        "install kubeconform and put it on PATH: "
        f"`go install github.com/yannh/kubeconform/cmd/kubeconform@{pin('kubeconform').version}` "
        "(the release gen is tested with), "
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

# A reference into the definitions file, as kubernetes-validate writes it (resolved against
# the schema's $id, https://kubernetes.io/api/<kind>/...) or as gen's converted CRDs do.
_DEFINITIONS_REF = re.compile(
    r'("\$ref"\s*:\s*")(?:https://kubernetes\.io)?/api/_definitions\.json#')
_LOCAL_REF = re.compile(r'"\$ref"\s*:\s*"#/\$defs/([^"]+)"')

# One error of the tree santhosh-tekuri/jsonschema v6 prints (output.go@v6.0.2, ``display``):
# each on its own line, "  " per level below the first, then "- at '<JSON pointer>': ".
# kubeconform joins the lines with spaces (pkg/validator/validator.go@v0.8.0).
_TREE_ENTRY = re.compile(r" ((?:  )*)- at '((?:[^'\\]|\\.)*)': ")
_GO_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|.)")
_GO_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t",
               "v": "\v"}
# Errors whose causes are each alternative's: the error is the junctor's, at its node.
_JUNCTOR_FAILED = ("'not' failed", "'anyOf' failed", "'oneOf' failed")


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


def _schema_minor(kubernetes_version: str) -> int:
    """The minor of the bundled schemas the embedded validator uses for a version
    (:func:`gen.emit.validate.schema_version_for`: the newest not newer than it)."""
    from gen.emit.validate import schema_version_for

    version = _normalize_version(kubernetes_version)
    return schema_version_for(10**6 if version == "master" else int(version.split(".")[1]))


@memoize(maxsize=8)
def _definitions(minor: int) -> tuple[Mapping[str, Any], Mapping[str, frozenset[str]]]:
    """One version's ``_definitions.json``: each definition, and the definitions each refers
    to directly (shared: read-only)."""
    from gen.emit.validate import _schema_root

    path = _schema_root() / f"v1.{minor}.0-local-strict" / "_definitions.json"
    definitions: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))["$defs"]
    refers = {name: frozenset(_LOCAL_REF.findall(json.dumps(schema)))
              for name, schema in definitions.items()}
    return definitions, refers


def _closure(minor: int, names: Iterable[str]) -> dict[str, Any]:
    """The definitions ``names`` refer to in version ``minor``, and those they refer to."""
    definitions, refers = _definitions(minor)
    found: dict[str, Any] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        if name not in found:
            found[name] = definitions[name]
            todo.extend(refers[name])
    return dict(sorted(found.items()))


def _standalone(text: str, minor: int) -> str:
    """A kubernetes-validate schema file made whole: its references into
    ``_definitions.json`` point into its own ``$defs``, which holds what they need. The
    whole 1.5 MB file behind each reference cost kubeconform about 0.2 s a kind (a schema
    compiler of its own per kind, pkg/validator/validator.go@v0.8.0 ``downloadSchema``);
    a Deployment's own definitions cost 0.05 s."""
    text = _DEFINITIONS_REF.sub(r"\1#", text)
    schema = json.loads(text)
    schema.pop("$id", None)  # its references are its own now
    schema["$defs"] = _closure(minor, _LOCAL_REF.findall(text))
    return json.dumps(schema, sort_keys=True)


def write_kubernetes_schemas(folder: Path, kubernetes_version: str,
                             kinds: Iterable[tuple[str, str]] | None = None) -> str:
    """Write the strict JSON Schemas of one Kubernetes version's built-in kinds into
    ``folder`` as kubeconform names them; return the ``-schema-location`` that reads them.

    They are the embedded validator's (:func:`gen.emit.validate._schema_file`), for each
    (apiVersion, kind) of ``kinds`` that has one (default: every file of the version), so
    both find a schema for the same kinds: kubernetes-validate names a file
    ``<kind>-<first label of the group>-<version>.json``, as kubeconform's
    ``{{ .ResourceKind }}{{ .KindSuffix }}`` does (pkg/registry/registry.go@v0.8.0,
    ``schemaPath``). Each is written whole (:func:`_standalone`)."""
    from gen.emit.validate import _is_schema_file, _schema_file, _schema_root

    minor = _schema_minor(kubernetes_version)
    if kinds is None:
        sources = [p for p in (_schema_root() / f"v1.{minor}.0-local-strict").iterdir()
                   if p.suffix == ".json" and p.name != "_definitions.json"]
    else:
        sources = [p for p in {_schema_file(minor, a, k) for a, k in kinds}
                   if _is_schema_file(minor, p)]
    folder.mkdir(parents=True, exist_ok=True)
    for path in sources:
        (folder / path.name).write_text(
            _standalone(path.read_text(encoding="utf-8"), minor), encoding="utf-8")
    return f"{folder.as_posix()}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json"


def object_meta(kubernetes_version: str) -> dict[str, Any]:
    """ObjectMeta of one version as kubeconform reads a CRD's ``metadata``: a reference into
    the schema's own ``$defs`` and the definitions to put there."""
    from gen.emit.crd_convert import OBJECT_META_REF

    name = OBJECT_META_REF.rpartition("/")[2]
    return {"$ref": f"#/$defs/{name}",
            "$defs": _closure(_schema_minor(kubernetes_version), [name])}


def write_schemas(folder: Path, kubernetes_version: str, crds: CRDSet | None = None,
                  kinds: Iterable[tuple[str, str]] | None = None) -> tuple[str, str]:
    """gen's two schema locations for one version, written under ``folder``: the CRDs'
    (``crds/``, first, as the embedded validator looks a CRD up before a built-in kind) and
    the built-in kinds' (``kubernetes/``); of the (apiVersion, kind) pairs ``kinds``, default
    all."""
    from gen.emit.crd_schemas import write_kubeconform_schemas  # the no-op path skips it

    (folder / "crds").mkdir(parents=True, exist_ok=True)
    kinds = None if kinds is None else set(kinds)
    return (write_kubeconform_schemas(folder / "crds", crds, object_meta(kubernetes_version),
                                      kinds),
            write_kubernetes_schemas(folder / "kubernetes", kubernetes_version, kinds))


def _kinds(files: Sequence[Path]) -> set[tuple[str, str]] | None:
    """Each (apiVersion, kind) the documents of ``files`` name; ``None`` when a file cannot
    be read as YAML (then every schema is written, and kubeconform reports the file)."""
    import yaml

    from gen.emit.yamlfast import load_all

    found: set[tuple[str, str]] = set()
    for path in dict.fromkeys(files):
        try:
            documents = load_all(path.read_text(encoding="utf-8"))
        except (OSError, ValueError, yaml.YAMLError):
            return None
        for doc in documents:
            if isinstance(doc, dict):
                found.add((str(doc.get("apiVersion", "")), str(doc.get("kind", ""))))
    return found


def run_kubeconform(
    files: Sequence[Path],
    kubernetes_version: str,
    *,
    binary: str | None = None,
    schema_locations: Sequence[str] = (),
    origin: Mapping[str, SourceLocation] | None = None,
    crds: CRDSet | None = None,
    where: Mapping[str, SourceLocation] | None = None,
) -> list[Finding]:
    """Validate ``files`` with kubeconform for one cluster's Kubernetes version, offline.

    Args:
        files: manifest files (typically every file of ``out/<cluster>/``).
        kubernetes_version: ``X.Y`` or ``X.Y.Z`` (``X.Y`` means ``X.Y.0``).
        binary: the kubeconform executable; found on PATH when ``None``.
        schema_locations: extra ``-schema-location`` values, searched after gen's own
            schemas (the CRDs', then the built-in kinds' of the version): for kinds gen has
            no schema for. ``"default"`` is kubeconform's GitHub URL (network needed).
        origin: output file path (as given in ``files``) → the profile location that produced
            it; becomes ``Finding.related``.
        crds: the CRDs whose schemas kubeconform reads first (default: the bundled ones).
        where: output file path (as given in ``files``) → the location its findings are
            reported at (default: the file itself), e.g. ``out/...`` for a scratch copy.

    Returns:
        The findings, sorted; empty when every resource is valid.

    Raises:
        ToolNotFoundError: kubeconform is not installed (or ``binary`` does not exist).
        KubeconformError: kubeconform crashed or its output is not its JSON report.
        ValueError: ``kubernetes_version`` is not a version.
    """
    resources = kubeconform_resources(files, kubernetes_version, binary=binary,
                                      schema_locations=schema_locations, crds=crds)
    findings = [f for resource in resources
                for f in _resource_findings(resource, origin or {}, where or {})]
    return sorted(findings, key=Finding.sort_key)


def kubeconform_resources(
    files: Sequence[Path],
    kubernetes_version: str,
    *,
    binary: str | None = None,
    schema_locations: Sequence[str] = (),
    crds: CRDSet | None = None,
    verbose: bool = False,
) -> list[dict[str, Any]]:
    """kubeconform's report on ``files``: the ``resources`` of its JSON output, in order.

    The arguments are :func:`run_kubeconform`'s; with ``verbose`` (``-verbose``) valid and
    skipped resources are listed too (status ``statusValid``, ``statusSkipped``; an empty
    document has status ``""``), so a caller can tell each resource was judged. Raises as
    :func:`run_kubeconform` does."""
    version = _normalize_version(kubernetes_version)
    exe = binary or find_kubeconform()
    if exe is None:
        raise ToolNotFoundError(f"kubeconform was not found on PATH; {install_hint()}")
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
    if verbose:
        command.append("-verbose")
    resources: list[dict[str, Any]] = []
    import tempfile

    with tempfile.TemporaryDirectory(prefix="gen-kubeconform-schemas-") as scratch:
        locations = write_schemas(Path(scratch), version, crds, _kinds(files))
        for location in (*locations, *schema_locations):
            command += ["-schema-location", location]
        command.append("--")
        for batch in _batches([str(f) for f in files]):
            resources += _report(_run([*command, *batch], exe))
    return resources


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
        raise ToolNotFoundError(f"kubeconform not found at {exe}; {install_hint()}") from exc
    except OSError as exc:
        raise KubeconformError(
            f"kubeconform at {exe} could not be started: {exc}", command=command
        ) from exc


def _report(process: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    """The ``resources`` of one run's JSON report, checked: kubeconform exits 1 only when it
    reports a resource invalid or in error."""
    if process.returncode not in (0, 1):
        raise KubeconformError.from_process(process, "crashed")
    try:
        report = json.loads(process.stdout)
    except json.JSONDecodeError:
        raise KubeconformError.from_process(process, "did not print its JSON report") from None
    if not isinstance(report, dict) or not isinstance(report.get("resources"), list):
        raise KubeconformError.from_process(process, "printed JSON without a resources list")
    resources: list[dict[str, Any]] = report["resources"]
    if not all(isinstance(resource, dict) for resource in resources):
        raise KubeconformError.from_process(process, "printed a resource that is not an object")
    if process.returncode == 1 and not any(
            r.get("status") in ("statusInvalid", "statusError") for r in resources):
        raise KubeconformError.from_process(process, "failed without reporting a resource")
    return resources


def _text(resource: Mapping[str, Any], key: str) -> str:
    value = resource.get(key)
    return value if isinstance(value, str) else ""


def _resource_findings(
    resource: Mapping[str, Any], origin: Mapping[str, SourceLocation],
    where: Mapping[str, SourceLocation],
) -> list[Finding]:
    status = _text(resource, "status")
    if status in ("statusValid", ""):  # "": an empty document (listed with -verbose)
        return []
    filename = _text(resource, "filename")
    what = (
        " ".join(p for p in (_text(resource, "kind"), _text(resource, "name")) if p) or "resource"
    )
    version = _text(resource, "version")
    if version:
        what += f" ({version})"
    msg = _text(resource, "msg")
    location = (where.get(filename) or SourceLocation(filename)) if filename else None
    profile = None
    if filename:
        profile = origin.get(filename) or origin.get(Path(filename).as_posix())
    related = (profile,) if profile is not None else ()

    def finding(
        message: str, *, key_path: str = "", severity: Severity | None = None, hint: str = ""
    ) -> Finding:
        return rules.finding(
            RULE,
            message,
            location,
            key_path=key_path,
            severity=severity,
            hint=hint,
            related=related,
        )

    if status == "statusSkipped":
        return [finding(f"{what}: skipped by kubeconform, not validated", severity=Severity.INFO)]
    if status == "statusInvalid":
        errors = leaf_errors(msg) or [
            (_text(e, "path"), _text(e, "msg"))
            for e in resource.get("validationErrors") or () if isinstance(e, dict)]
        if not errors:
            return [finding(f"{what}: {msg or 'invalid'}")]
        return [finding(f"{what}: {text}", key_path=key_path(pointer))
                for pointer, text in errors]
    return [finding(f"{what}: {msg or status or 'unknown kubeconform status'}", hint=_hint(msg))]


def leaf_errors(msg: str) -> list[tuple[str, str]]:
    """(JSON pointer, message) of each error in kubeconform's ``msg`` of an invalid resource:
    the leaves of santhosh-tekuri/jsonschema's error tree, or a failed ``not``, ``anyOf`` or
    ``oneOf`` (whose causes are each alternative's), in the order printed. Empty when ``msg``
    holds no tree."""
    entries = [(len(m.group(1)) // 2, _go_unquote(m.group(2)), m.start(), m.end())
               for m in _TREE_ENTRY.finditer(msg)]
    found: list[tuple[str, str]] = []
    below: int | None = None  # inside a junctor's causes: skip deeper entries
    for index, (depth, pointer, _, end) in enumerate(entries):
        if below is not None and depth > below:
            continue
        below = None
        following = entries[index + 1] if index + 1 < len(entries) else None
        text = msg[end:following[2] if following else len(msg)]
        if text.startswith(_JUNCTOR_FAILED):
            below = depth
        elif following is not None and following[0] > depth:
            continue  # an inner node ("validation failed", 'allOf' failed): its causes say
        found.append((pointer, text))
    return found


def _go_unquote(text: str) -> str:
    """The string inside jsonschema v6's ``quote`` (Go's ``%q``, ``'`` escaped; util.go)."""
    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code[0] in "xuU" and len(code) > 1:
            return chr(int(code[1:], 16))
        return _GO_ESCAPES.get(code, code)

    return _GO_ESCAPE.sub(one, text)


def _hint(msg: str) -> str:
    if "could not find schema" in msg:
        return (
            "gen gives kubeconform the schemas of the cluster's Kubernetes version and of the "
            "CRDs it knows; put the kind's CRD in crds/ (or --crds), or pass a schema location"
        )
    if any(marker in msg for marker in _NETWORK_MARKERS):
        return (
            "a schema location that is a URL needs network access; gen's own schemas are "
            "local files"
        )
    return ""


def key_path(pointer: str) -> str:
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
