"""Per-cluster render cache: a fingerprint of everything a cluster's output depends on, and
a record of the files that output was, kept in ``out/.gen-cache/<cluster>.json``.

A render skips a cluster (no templates rendered, no schema validation) only when both hold:

1. the cluster's fingerprint now equals the one its record was written with, so a full
   render would produce exactly the files the record lists, with the bytes it hashed;
2. every file the record lists is in out/ and still hashes to what was recorded, so out/
   already holds those bytes (a hand-edited or deleted file makes the cluster render).

The skipped cluster's files are then the bytes just read from out/, which by (1) and (2)
are the bytes a full render writes: the cache can make a render faster, never different.

The fingerprint is a SHA-256 over a canonical JSON text (sorted keys, no whitespace) of:

- ``gen``: gen's version and a digest of its code (:func:`code_digest`), and the
  versions of the libraries whose behaviour shapes the bytes or the verdict (Jinja2
  renders the templates, PyYAML parses their output, jsonschema-rs and
  kubernetes-validate's bundled schemas validate it);
- ``cluster``: the name (it is in every path), the Kubernetes minor and the schema minor it
  validates against, and the DRA API version;
- ``manifests``: every ManifestSpec the builders made (template name, context, note,
  folder, stage, origin file). These are everything the render reads, so they alone
  decide the objects' bytes; ``files``: every FileSpec's path and a hash of its bytes;
- ``templates``: the source text of every template the cluster renders, and of every
  template those include, import or extend, resolved through the same loader the render
  uses (so a user's override counts, and the built-in it hides does not);
- ``inputs``: what the specs were built from (the cluster profile, its node pools with
  their catalog GPU and MIG layout, its services with their GPU classes, alternatives and
  catalog model, the MIG strategy, the Apple decisions). The specs already carry what of
  these reaches the output; the inputs are hashed as well so that no builder can read an
  input the specs do not show. The fleet-wide map of GPU classes is not: a class a cluster
  uses reaches it through its services (hashed here) and its specs, and hashing the whole
  map would re-render every cluster whenever any class changed.

Source locations enter as their file only, never their line: lines reach messages (a
template or schema error, which a skipped cluster cannot have, since its record was
written by a render that succeeded), never the bytes, which name only the file. Paths are
the fleet-relative paths the loader shows, never absolute; nothing depends on the working
directory, the hash seed or the machine.

What is *not* in the fingerprint, and why: the out/ label and the profile line numbers
(messages only); the validator choice (the record says whether its files passed schema
validation, and a render that asks for validation trusts only a record that did);
kubeconform (it is never skipped: it runs on every file of the render, cached or not).
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import json
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath, PurePosixPath
from typing import TYPE_CHECKING, Any

from gen._version import __version__
from gen.caches import once
from gen.errors import SourceLocation

if TYPE_CHECKING:
    import jinja2

    from gen.fleet.plan import ClusterPlan

__all__ = [
    "CACHE_DIR",
    "FORMAT",
    "CacheRecord",
    "Fingerprinter",
    "canonical_json",
    "code_digest",
    "is_cache_path",
    "read_record",
    "record_bytes",
    "record_path",
    "verified_files",
]

CACHE_DIR = ".gen-cache"
"""The folder under out/ that holds one record per cluster. It is gen's own: outside every
synced folder (a cluster name cannot start with '.'), never listed in a kustomization or in
``out/.gen-files``, never reported by ``render --check``, and replaced as a whole by each
render (a file put there by hand is removed)."""

FORMAT = 1
"""The record layout's version; a record of another format is a miss."""

_LIBRARIES = ("jinja2", "PyYAML", "jsonschema-rs", "kubernetes-validate")


def is_cache_path(rel: str) -> bool:
    """True for a POSIX path relative to out/ inside the cache folder."""
    return rel.startswith(CACHE_DIR + "/")


def record_path(cluster: str) -> str:
    """The record of ``cluster``, relative to out/."""
    return f"{CACHE_DIR}/{cluster}.json"


# --------------------------------------------------------------------------- canonical JSON


class Uncacheable(TypeError):
    """A value the fingerprint cannot serialize canonically: the cluster is never skipped."""


def _default(value: Any) -> Any:
    """JSON for what ``json`` does not know; any other type makes the cluster uncacheable."""
    import pydantic

    from gen.fleet.profiles import Located

    if isinstance(value, SourceLocation):
        return value.path  # the file only: see the module docstring
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, PurePath):
        return value.as_posix()
    if isinstance(value, (bytes, bytearray)):
        return {"sha256": hashlib.sha256(value).hexdigest()}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, Mapping):
        return {_key(k): v for k, v in value.items()}
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=canonical_json)
    if isinstance(value, Located):
        # A profile and its source document: the value and the file, not the whole parse.
        return {"value": value.value, "from": value.document.path}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return {"@type": type(value).__qualname__, **fields}
    raise Uncacheable(f"cannot fingerprint a {type(value).__qualname__}")


def _key(key: Any) -> str:
    return key if isinstance(key, str) else canonical_json(key)


def canonical_json(value: Any) -> str:
    """The canonical JSON text of ``value``: sorted keys, no spaces, ASCII only.

    Raises :class:`Uncacheable` for a type it cannot serialize without losing information.
    """
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                          allow_nan=False, default=_default)
    except ValueError as err:  # NaN, a circular reference
        raise Uncacheable(str(err)) from None


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@once
def code_digest() -> str:
    """A SHA-256 of gen's own code: every ``.py`` file of the installed package, by its
    path inside the package. The version alone is not enough: a checkout whose emitter
    changed without a version bump must not trust records an older emitter wrote."""
    package = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py"), key=lambda p: p.relative_to(package).as_posix()):
        digest.update(path.relative_to(package).as_posix().encode("utf-8") + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _library_versions() -> dict[str, str]:
    from importlib import metadata

    versions = {}
    for name in _LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = ""
    return versions


# --------------------------------------------------------------------------- fingerprints

_REFERENCE_TAG = re.compile(r"\{%[-+]?\s*(?:include|import|extends|from)\b")
"""A tag that can name another template; a source without one references none."""


class Fingerprinter:
    """Computes cluster fingerprints for one run: one Jinja environment (the render's own
    loader), template digests computed once per template."""

    def __init__(self, env: jinja2.Environment) -> None:
        self._env = env
        self._closure: dict[str, tuple[str, ...]] = {}
        self._source: dict[str, str] = {}
        self._gen = {"version": __version__, "code": code_digest(), "format": FORMAT,
                     **_library_versions()}

    def _template_source(self, name: str) -> str:
        import jinja2

        if name not in self._source:
            loader = self._env.loader
            if loader is None:
                raise Uncacheable("the environment has no loader")
            try:
                source, _, _ = loader.get_source(self._env, name)
            except jinja2.TemplateNotFound:
                source = "\0missing"  # the render reports it; a later file invalidates
            self._source[name] = source
        return self._source[name]

    def _references(self, name: str) -> tuple[str, ...] | None:
        """The templates ``name`` includes, imports or extends; None for a dynamic one."""
        import jinja2
        import jinja2.meta

        source = self._template_source(name)
        if source == "\0missing":
            return ()
        if (self._env.block_start_string == "{%" and self._env.line_statement_prefix is None
                and not _REFERENCE_TAG.search(source)):
            return ()  # no tag that could name a template: nothing to parse
        try:
            refs = list(jinja2.meta.find_referenced_templates(self._env.parse(source)))
        except jinja2.TemplateSyntaxError:
            return ()  # the render reports it
        if any(r is None for r in refs):
            return None
        return tuple(sorted({r for r in refs if r is not None}))

    def _templates(self, name: str) -> tuple[str, ...]:
        """``name`` and every template it reaches; all templates if one is chosen at run
        time (a name the source does not spell out)."""
        if name not in self._closure:
            seen: set[str] = set()
            todo = [name]
            while todo:
                current = todo.pop()
                if current in seen:
                    continue
                seen.add(current)
                refs = self._references(current)
                if refs is None:
                    seen.update(self._env.list_templates())
                    break
                todo.extend(refs)
            self._closure[name] = tuple(sorted(seen))
        return self._closure[name]

    def parts(self, cluster: ClusterPlan) -> dict[str, Any]:
        """The parts the fingerprint hashes, as canonical-JSON-ready data (for tests)."""
        from gen.emit.validate import schema_version_for

        names: set[str] = set()
        for spec in cluster.manifests:
            names.update(self._templates(spec.template))
        return {
            "gen": self._gen,
            "cluster": {
                "name": cluster.name,
                "minor": cluster.minor,
                "schema_minor": schema_version_for(cluster.minor),
                "dra_api_version": cluster.dra_api_version,
            },
            "manifests": cluster.manifests,
            "files": cluster.files,
            "templates": {n: _sha256(self._template_source(n)) for n in sorted(names)},
            "inputs": {
                "cluster": cluster.located,
                "pools": [(p.pool, p.gpu, p.mig_layout) for p in cluster.pools],
                "services": [
                    (s.located, s.gpu_class, s.alternatives, s.model,
                     [p.name for p in s.pools])
                    for s in cluster.services
                ],
                "mig_strategy": cluster.mig_strategy,
                "apple": cluster.apple,
            },
        }

    def fingerprint(self, cluster: ClusterPlan) -> str | None:
        """The cluster's fingerprint (hex SHA-256); None when some input cannot be hashed
        canonically, and the cluster is then always rendered."""
        try:
            return _sha256(canonical_json(self.parts(cluster)))
        except Uncacheable:
            return None


# --------------------------------------------------------------------------- records


@dataclasses.dataclass(frozen=True)
class CacheRecord:
    """What one render of one cluster produced."""

    cluster: str
    fingerprint: str
    validated: bool
    """Whether the files passed the embedded schema validation."""
    objects: int
    """How many Kubernetes objects the cluster rendered (``RenderResult.objects``)."""
    files: Mapping[str, str]
    """Path relative to out/ → SHA-256 of the bytes written."""


def record_bytes(record: CacheRecord) -> bytes:
    """The record file: canonical, one file per line so a diff stays readable."""
    data = {
        "cluster": record.cluster,
        "files": dict(sorted(record.files.items())),
        "fingerprint": record.fingerprint,
        "format": FORMAT,
        "objects": record.objects,
        "validated": record.validated,
    }
    return (json.dumps(data, sort_keys=True, indent=1, ensure_ascii=True) + "\n").encode()


def new_record(cluster: str, fingerprint: str, validated: bool, objects: int,
               files: Mapping[PurePosixPath, bytes]) -> CacheRecord:
    """The record of a cluster just rendered."""
    return CacheRecord(cluster, fingerprint, validated, objects, {
        str(path): hashlib.sha256(data).hexdigest() for path, data in files.items()
    })


def parse_record(data: bytes) -> CacheRecord | None:
    """A record from its file's bytes; None for anything damaged or of another format."""
    try:
        raw = json.loads(data)
    except ValueError:
        return None
    if not isinstance(raw, dict) or raw.get("format") != FORMAT:
        return None
    cluster, fingerprint = raw.get("cluster"), raw.get("fingerprint")
    validated, files = raw.get("validated"), raw.get("files")
    objects = raw.get("objects")
    if not (isinstance(cluster, str) and isinstance(fingerprint, str)
            and isinstance(validated, bool) and isinstance(files, dict)
            and type(objects) is int and objects >= 0
            and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())):
        return None
    return CacheRecord(cluster, fingerprint, validated, objects, files)


def read_record(out_dir: Path, cluster: str) -> tuple[CacheRecord, bytes] | None:
    """The record of ``cluster`` in out/ and its bytes; None when missing or damaged."""
    try:
        data = (out_dir / record_path(cluster)).read_bytes()
    except OSError:
        return None
    record = parse_record(data)
    return None if record is None or record.cluster != cluster else (record, data)


def _safe(rel: str) -> bool:
    parts = rel.split("/")
    return bool(rel) and not rel.startswith("/") and "\\" not in rel and all(
        p not in ("", ".", "..") for p in parts
    ) and not is_cache_path(rel)


def verified_files(out_dir: Path, record: CacheRecord) -> dict[PurePosixPath, bytes] | None:
    """The recorded files' bytes as out/ holds them now, when every one is there and
    hashes to what was recorded; None as soon as one is missing, unreadable or differs."""
    root = os.fspath(out_dir)
    files: dict[PurePosixPath, bytes] = {}
    for rel, digest in record.files.items():
        if not _safe(rel):
            return None  # a damaged or hostile record: never read outside out/
        try:
            with open(os.path.join(root, rel), "rb") as handle:  # noqa: PTH118,PTH123
                data = handle.read()
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != digest:
            return None
        files[PurePosixPath(rel)] = data
    return files


def clusters_of(paths: Iterable[str]) -> set[str]:
    """The cluster names of record paths (``.gen-cache/<cluster>.json``)."""
    prefix = CACHE_DIR + "/"
    return {p[len(prefix):-len(".json")] for p in paths
            if p.startswith(prefix) and p.endswith(".json") and "/" not in p[len(prefix):]}
