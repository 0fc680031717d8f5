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

- ``gen``: the record format only. What changes without the inputs changing (gen's
  version, a digest of its code (:func:`code_digest`), and the versions of the libraries
  whose behaviour shapes the bytes or the verdict: Jinja2 renders the templates, PyYAML
  parses their output, jsonschema-rs and kubernetes-validate's bundled schemas validate
  it) is the record's ``env`` (:func:`env_key`), beside the fingerprint: a record is used
  only under its own env or once this checkout has checked it (the trust list), and a
  render that finds a record equal but for its env keeps out/'s bytes, so that a fresh
  clone rendered under another gen stays clean;
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
- ``crds``, when the fleet brings CRDs (``crds/``): their digests; they decide verdicts.

Source locations enter as their file only, never their line: lines reach messages (a
template or schema error, which a skipped cluster cannot have, since its record was
written by a render that succeeded), never the bytes, which name only the file. Paths are
the fleet-relative paths the loader shows, never absolute; nothing depends on the working
directory, the hash seed or the machine.

What is *not* in the fingerprint, and why: the out/ label and the profile line numbers
(messages only); the validator choice (the record says whether its files passed schema
validation, and a render that asks for validation trusts only a record that did);
kubeconform (it is never skipped: it runs on every file of the render, cached or not).

In front of the per-cluster records, the **fleet record** (``out/.gen-cache/_fleet.json``)
lets a no-op render skip everything, the load, resolve, build and lint included. It holds an
:func:`input_digest` of everything the whole render reads, computed from raw bytes without
parsing anything: every profile file the loader reads (its own discovery, its displayed
paths), every template file (override folder and built-ins), the user's CRD folder, gen's
data files, gen's version, code digest and library versions, and the options that change
the output or the verdict (validator, --cluster selection). With it, the files of the whole render
with their SHA-256 (the index and the per-cluster records too) and the lint warnings the
render returned. When the digest matches, every listed file hashes as recorded and out/
holds nothing a render would remove or replace, a render would write exactly what out/
holds and report exactly those warnings: the render returns them without loading anything.
A link among the inputs, an unreadable one, or kubeconform (which is never skipped) means
no digest, and the normal path. Both conditions on out/ are proved by one walk of it
(:func:`gen.emit.output.fast_outputs`), which compares each folder's listing with the
**stat table** (``out/.gen-cache/_stat.json``, :func:`write_stat_table`): what every folder
held, with each file's size, mtime, ctime, inode and device, just after the render that
wrote this very fleet record. A file whose stat is not the recorded one is read and hashed.

The fleet record, the stat table and the trust list are machine-local and git-ignored: JSON
only, never anything that runs code when loaded, and a damaged one is a miss.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import hashlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path, PurePath, PurePosixPath
from typing import TYPE_CHECKING, Any

from gen._version import __version__
from gen.caches import once
from gen.errors import SourceLocation, StaleOutputError

if TYPE_CHECKING:
    import jinja2

    from gen.fleet.plan import ClusterPlan

__all__ = [
    "CACHE_DIR",
    "CACHE_GITIGNORE",
    "CACHE_GITIGNORE_BYTES",
    "FLEET_RECORD",
    "FORMAT",
    "OWN_FILES",
    "STAT_TABLE",
    "TRUST_FILE",
    "CacheRecord",
    "Fingerprinter",
    "FleetRecord",
    "StatTable",
    "VerifiedFiles",
    "canonical_json",
    "code_digest",
    "env_key",
    "file_text",
    "fleet_record_bytes",
    "input_digest",
    "is_cache_path",
    "read_fleet_record",
    "read_record",
    "read_stat_table",
    "read_trusted",
    "record_bytes",
    "record_path",
    "same_but_env",
    "shown_path",
    "split_listing",
    "stale_records",
    "stat_of",
    "trust_bytes",
    "trusted",
    "verified_files",
    "verified_hashes",
    "write_stat_table",
]

CACHE_DIR = ".gen-cache"
"""The folder under out/ that holds one record per cluster. It is gen's own: outside every
synced folder (a cluster name cannot start with '.'), never listed in a kustomization or in
``out/.gen-files``, never reported by ``render --check``, and replaced as a whole by each
render (a file put there by hand is removed)."""

FORMAT = 2
"""The record layout's version; a record of another format is a miss (2: the ``env`` apart
from the fingerprint)."""

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
    """JSON for what ``json`` does not know; any other type makes the cluster uncacheable.

    One handler per type, chosen once (:func:`_handler_for`): a fingerprint meets the same
    few dataclasses thousands of times."""
    kind = type(value)
    handler = _HANDLERS.get(kind)
    if handler is None:
        handler = _HANDLERS.setdefault(kind, _handler_for(kind))
    return handler(value)


_HANDLERS: dict[type, Callable[[Any], Any]] = {}


def _handler_for(kind: type) -> Callable[[Any], Any]:
    """How :func:`_default` writes a value of type ``kind``, tested in this order."""
    import pydantic

    from gen.fleet.profiles import Located

    if issubclass(kind, SourceLocation):
        return lambda value: value.path  # the file only: see the module docstring
    if issubclass(kind, pydantic.BaseModel):
        return lambda value: value.model_dump(mode="json")
    if issubclass(kind, PurePath):
        return lambda value: value.as_posix()
    if issubclass(kind, (bytes, bytearray)):
        return lambda value: {"sha256": hashlib.sha256(value).hexdigest()}
    if issubclass(kind, enum.Enum):
        return lambda value: value.value
    if issubclass(kind, Mapping):
        return lambda value: {_key(k): v for k, v in value.items()}
    if issubclass(kind, (set, frozenset)):
        return lambda value: sorted(value, key=canonical_json)
    if issubclass(kind, Located):
        # A profile and its source document: the value and the file, not the whole parse.
        return lambda value: {"value": value.value, "from": value.document.path}
    if dataclasses.is_dataclass(kind) and not issubclass(kind, type):
        names = tuple(f.name for f in dataclasses.fields(kind))
        qualname = kind.__qualname__
        return lambda value: {"@type": qualname, **{n: getattr(value, n) for n in names}}
    name = kind.__qualname__

    def refuse(_value: Any) -> Any:
        raise Uncacheable(f"cannot fingerprint a {name}")

    return refuse


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
    """The installed version of each of :data:`_LIBRARIES` ("" when not installed), as
    ``importlib.metadata.version`` gives it. Read here from the first ``*.dist-info``
    folder on ``sys.path`` that names the project, as that function finds it: importing
    ``importlib.metadata`` costs more than a no-op render's whole input digest. Anything
    this does not find plainly is asked of ``importlib.metadata`` itself."""
    versions: dict[str, str] = {}
    missing = []
    found = _dist_info_versions({_project_key(name) for name in _LIBRARIES})
    for name in _LIBRARIES:
        version = found.get(_project_key(name))
        if version is None:
            missing.append(name)
        else:
            versions[name] = version
    if missing:
        from importlib import metadata

        for name in missing:
            try:
                versions[name] = metadata.version(name)
            except metadata.PackageNotFoundError:
                versions[name] = ""
    return {name: versions[name] for name in _LIBRARIES}


def _project_key(name: str) -> str:
    """A project name as ``importlib.metadata`` compares them (PEP 503, ``_`` for runs of
    ``-_.``)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _dist_info_versions(keys: set[str]) -> dict[str, str]:
    """For each project key, the ``Version`` of the first ``<name>-<version>.dist-info``
    folder naming it on ``sys.path``, in path order. A key whose first match is anything
    else (an egg, a zip, metadata without a version) is left out, for the caller to ask
    ``importlib.metadata``."""
    import sys

    found: dict[str, str] = {}
    settled: set[str] = set()
    for entry in sys.path:
        try:
            names = sorted(os.listdir(entry or "."))  # noqa: PTH208 - str names
        except OSError:
            continue  # a zip, a missing folder: importlib.metadata may read it
        for name in names:
            stem, dot, suffix = name.rpartition(".")
            if not dot or suffix not in ("dist-info", "egg-info"):
                continue
            key = _project_key(stem.partition("-")[0])
            if key not in keys or key in settled:
                continue
            settled.add(key)
            version = (_metadata_version(os.path.join(entry or ".", name))  # noqa: PTH118
                       if suffix == "dist-info" else None)
            if version is not None:
                found[key] = version
    return found


def _metadata_version(folder: str) -> str | None:
    """The ``Version`` header of a dist-info folder's METADATA; None when unreadable."""
    try:
        with open(os.path.join(folder, "METADATA"), "rb") as handle:  # noqa: PTH118, PTH123
            head = handle.read(1 << 16)
    except OSError:
        return None
    for line in head.decode("utf-8", "replace").splitlines():
        if not line:
            break  # the end of the headers
        if line.lower().startswith("version:"):
            return line.split(":", 1)[1].strip()
    return None


# --------------------------------------------------------------------------- fingerprints

_REFERENCE_TAG = re.compile(r"\{%[-+]?\s*(?:include|import|extends|from)\b")
"""A tag that can name another template; a source without one references none."""


class Fingerprinter:
    """Computes cluster fingerprints for one run: one Jinja environment (the render's own
    loader), template digests computed once per template."""

    def __init__(self, env: jinja2.Environment, crds: str = "") -> None:
        self._env = env
        self._crds = crds
        self._closure: dict[str, tuple[str, ...]] = {}
        self._source: dict[str, str] = {}
        self._gen = {"format": FORMAT}

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
            **({"crds": self._crds} if self._crds else {}),
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
    env: str
    """:func:`env_key` of the gen that wrote the record (its version, code and libraries)."""
    validated: bool
    """Whether the files passed the embedded schema validation."""
    objects: int
    """How many Kubernetes objects the cluster rendered (``RenderResult.objects``)."""
    files: Mapping[str, str]
    """Path relative to out/ → SHA-256 of the bytes written."""


def _record_data(record: CacheRecord) -> dict[str, Any]:
    return {
        "cluster": record.cluster,
        "files": dict(sorted(record.files.items())),
        "env": record.env,
        "fingerprint": record.fingerprint,
        "format": FORMAT,
        "objects": record.objects,
        "validated": record.validated,
    }


def record_bytes(record: CacheRecord) -> bytes:
    """The record file: canonical, one file per line so a diff stays readable."""
    data = _record_data(record)
    return (json.dumps(data, sort_keys=True, indent=1, ensure_ascii=True) + "\n").encode()


def new_record(cluster: str, fingerprint: str, validated: bool, objects: int,
               files: Mapping[PurePosixPath, bytes]) -> CacheRecord:
    """The record of a cluster just rendered, by this gen (:func:`env_key`)."""
    return CacheRecord(cluster, fingerprint, env_key(), validated, objects, {
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
    objects, env = raw.get("objects"), raw.get("env")
    if not (isinstance(cluster, str) and isinstance(fingerprint, str) and isinstance(env, str)
            and isinstance(validated, bool) and isinstance(files, dict)
            and type(objects) is int and objects >= 0
            and all(isinstance(k, str) and isinstance(v, str) for k, v in files.items())):
        return None
    return CacheRecord(cluster, fingerprint, env, validated, objects, files)


def read_record(out_dir: Path, cluster: str) -> tuple[CacheRecord, bytes] | None:
    """The record of ``cluster`` in out/ and its bytes; None when missing or damaged."""
    try:
        data = (out_dir / record_path(cluster)).read_bytes()
    except OSError:
        return None
    record = parse_record(data)
    return None if record is None or record.cluster != cluster else (record, data)


_UNSAFE = re.compile(r"^$|^/|/$|//|\\|(?:^|/)\.\.?(?:/|$)")
"""An empty path or part, an absolute path, a backslash, a ``.`` or ``..`` part."""


def _safe(rel: str, cache_ok: bool = False) -> bool:
    return not _UNSAFE.search(rel) and (cache_ok or not is_cache_path(rel))


def verified_files(out_dir: Path, record: CacheRecord) -> dict[PurePosixPath, bytes] | None:
    """The recorded files' bytes as out/ holds them now, when every one is there and
    hashes to what was recorded; None as soon as one is missing, unreadable or differs."""
    return verified_hashes(out_dir, record.files)


def verified_hashes(
    out_dir: Path, hashes: Mapping[str, str], *, cache_ok: bool = False,
) -> dict[PurePosixPath, bytes] | None:
    """``hashes`` (path relative to out/ → SHA-256) checked against out/: every file's
    bytes when all are there and hash as recorded, else None. ``cache_ok``: the paths may
    be inside the cache folder (the fleet record lists the other records)."""
    root = os.fspath(out_dir)
    files: dict[PurePosixPath, bytes] = {}
    for rel, digest in hashes.items():
        if not _safe(rel, cache_ok):
            return None  # a damaged or hostile record: never read outside out/
        try:
            data = _read_all(os.path.join(root, rel))  # noqa: PTH118 - str paths, hot loop
        except OSError:
            return None
        if hashlib.sha256(data).hexdigest() != digest:
            return None
        files[PurePosixPath(rel)] = data
    return files


def _read_all(path: str) -> bytes:
    """A file's bytes in as few system calls as its size allows (unbuffered: out/ holds
    tens of thousands of small files, and a buffered open costs more than the read)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        size = os.fstat(fd).st_size
        chunks = [os.read(fd, size + 1)]
        while chunks[-1] and (len(chunks) > 1 or len(chunks[0]) > size):
            chunks.append(os.read(fd, 1 << 20))  # it grew since the fstat: read to the end
        return b"".join(chunks)
    finally:
        os.close(fd)


def clusters_of(paths: Iterable[str]) -> set[str]:
    """The cluster names of record paths (``.gen-cache/<cluster>.json``; not the fleet
    record)."""
    prefix = CACHE_DIR + "/"
    # A cluster name is a DNS label: '_fleet', '_stat' and '_trust' are gen's own files.
    return {p[len(prefix):-len(".json")] for p in paths
            if p.startswith(prefix) and p.endswith(".json") and "/" not in p[len(prefix):]
            and not p[len(prefix):].startswith("_")}


# --------------------------------------------------------------------------- env and trust
#
# A record's fingerprint and pre-build key hash the inputs only; what changes without the
# inputs changing (gen's version and code, the libraries installed) is the record's ``env``.
# A record is used only under the env that wrote it, or under one that has checked it (the
# trust list); a render whose record differs from the one out/ holds only in ``env`` keeps
# out/'s bytes. So a fresh clone's render, under another gen or other libraries, renders
# what it cannot trust, finds the same records and rewrites none of them.

TRUST_FILE = f"{CACHE_DIR}/_trust.json"
"""The records this checkout's gen has checked (their SHA-256) under its env: records
written elsewhere, by another env, that a render here found equal but for ``env``.
Machine-local and git-ignored, like the fleet record."""

TRUST_FORMAT = 1


def env_key() -> str:
    """A digest of what shapes a render's bytes and verdicts besides its inputs: gen's
    version, its code digest, the record format and the libraries' versions."""
    return _sha256(canonical_json(_gen_versions()))


def trust_bytes(record_files: Iterable[bytes]) -> bytes:
    """The trust list vouching, under this env, for the records whose bytes are given."""
    digests = sorted({hashlib.sha256(data).hexdigest() for data in record_files})
    data = {"env": env_key(), "format": TRUST_FORMAT, "records": digests}
    return (json.dumps(data, sort_keys=True, indent=1, ensure_ascii=True) + "\n").encode()


def read_trusted(out_dir: Path) -> frozenset[str]:
    """The SHA-256 of the records the trust list vouches for under this env (none when it
    is missing, damaged, or was written by another env)."""
    try:
        raw = json.loads((out_dir / TRUST_FILE).read_bytes())
    except (OSError, ValueError):
        return frozenset()
    if (not isinstance(raw, dict) or raw.get("format") != TRUST_FORMAT
            or raw.get("env") != env_key() or not isinstance(raw.get("records"), list)):
        return frozenset()
    return frozenset(d for d in raw["records"] if isinstance(d, str))


def trusted(record: CacheRecord, data: bytes, vouched: frozenset[str]) -> bool:
    """Whether a render here may use ``record`` (read as ``data``): it was written under
    this env, or the trust list vouches for its bytes."""
    return record.env == env_key() or hashlib.sha256(data).hexdigest() in vouched


def same_but_env(old: bytes, new: bytes) -> bool:
    """Whether two record files say the same, ``env`` apart."""
    try:
        before, after = json.loads(old), json.loads(new)
    except ValueError:
        return False
    if not (isinstance(before, dict) and isinstance(after, dict)):
        return False
    before.pop("env", None)
    after.pop("env", None)
    return bool(before == after)


def stale_records(out_dir: Path, records: Mapping[str, bytes]) -> list[str]:
    """The cluster records (paths relative to out/) a render would write, change or remove:
    ``records`` against the files of out/'s cache folder. ``render --check`` fails on any,
    as ``render`` would rewrite them."""
    wanted = {rel: data for rel, data in records.items()
              if clusters_of([rel]) and is_cache_path(rel)}
    try:
        names = [e.name for e in (out_dir / CACHE_DIR).iterdir() if e.is_file()]
    except OSError:
        names = []
    present = {record_path(c) for c in clusters_of(f"{CACHE_DIR}/{n}" for n in names)}
    stale = []
    for rel in sorted(present | set(wanted)):
        try:
            now: bytes | None = (out_dir / rel).read_bytes()
        except OSError:
            now = None
        if now != wanted.get(rel):
            stale.append(rel)
    return stale


# --------------------------------------------------------------------------- the fleet record

FLEET_RECORD = f"{CACHE_DIR}/_fleet.json"
"""The fleet record, relative to out/: the digest of every input of the whole render, the
files that render was (with the other cache records), and the warnings its lint gave.
A cluster name cannot start with '_', so it never collides with a cluster's record."""

CACHE_GITIGNORE = f"{CACHE_DIR}/.gitignore"
"""Keeps the fleet record out of Git. The per-cluster records are meant to be committed
with out/ (a fresh CI clone then skips the clusters a change did not touch, and a change
touches only its clusters' records); the fleet record changes with every change to any
input, so committing it would make every two concurrent pull requests conflict. It is
the checkout's own: the fast path for the repeated local ``render``/``--check``."""

CACHE_GITIGNORE_BYTES = (
    b"# Written by gen: the fleet record, the stat table and the trust list are this\n"
    b"# checkout's own; the cluster records are meant to be committed with out/.\n"
    b"/_fleet.json\n"
    b"/_stat.json\n"
    b"/_trust.json\n"
)

FLEET_FORMAT = 2
"""The fleet record layout's version (2: the files as one flat list)."""


class _NoDigest(Exception):
    """An input the digest cannot vouch for (a link, an unreadable or oversized file)."""


def _tree_digest(folder: Path) -> list[tuple[str, str]]:
    """(relative path, SHA-256) of every file under ``folder``, sorted; any link or
    unreadable entry raises :class:`_NoDigest`."""
    entries: list[tuple[str, str]] = []

    def walk(path: str, prefix: str) -> None:
        try:
            with os.scandir(path) as it:
                items = sorted(it, key=lambda e: e.name)
        except OSError:
            raise _NoDigest(path) from None
        for entry in items:
            rel = prefix + entry.name
            if entry.is_symlink():
                raise _NoDigest(entry.path)
            if entry.is_dir(follow_symlinks=False):
                walk(entry.path, rel + "/")
            elif entry.is_file(follow_symlinks=False):
                entries.append((os.fsencode(rel).hex(), _file_sha256(entry.path)))
            else:
                raise _NoDigest(entry.path)

    walk(os.fspath(folder), "")
    return entries


def _file_sha256(path: str | Path, limit: int | None = None) -> str:
    try:
        with open(path, "rb") as handle:  # noqa: PTH123 - str paths
            data = handle.read() if limit is None else handle.read(limit + 1)
    except OSError:
        raise _NoDigest(os.fspath(path)) from None
    if limit is not None and len(data) > limit:
        raise _NoDigest(os.fspath(path))
    return hashlib.sha256(data).hexdigest()


def builtin_templates() -> Path:
    """:data:`gen.emit.render.BUILTIN_TEMPLATES`, found the same way without importing the
    renderer (and Jinja2) on the fast path; a test keeps the two equal."""
    package = Path(__file__).resolve().parents[1]
    packaged = package / "templates"
    return packaged if packaged.is_dir() else package.parent / "templates"


@once
def _builtin_digest() -> tuple[list[tuple[str, str]], list[tuple[str, str]]] | None:
    """The built-in templates and gen's data files (catalogs, CRD schemas): read by every
    build and render, but not ``.py`` files, so :func:`code_digest` does not see them."""
    try:
        return (_tree_digest(builtin_templates()),
                _tree_digest(Path(__file__).resolve().parents[1] / "data"))
    except _NoDigest:
        return None


def _profile_digest(profiles_dir: Path, base: Path | None) -> list[tuple[str, str]]:
    """(shown path, SHA-256) of every file the loader reads, in its order: the loader's own
    discovery (:func:`gen.fleet.discovery.profile_files`, then the JSON files a Model profile's
    ``config`` may name, :func:`gen.fleet.discovery.json_files`) and its own displayed paths
    (they reach messages and the rendered headers)."""
    from gen.fleet.discovery import MAX_FILE_BYTES, json_files, profile_files

    if not profiles_dir.is_dir() or profiles_dir.is_symlink():
        raise _NoDigest(os.fspath(profiles_dir))
    root_real = profiles_dir.resolve()
    base_real = (base if base is not None else root_real.parent).resolve()
    checked: set[Path] = set()
    entries = []
    for file in [*profile_files(profiles_dir), *json_files(profiles_dir)]:
        if file.is_symlink():
            raise _NoDigest(os.fspath(file))
        for parent in file.relative_to(profiles_dir).parents:
            folder = profiles_dir / parent
            if folder not in checked:
                if folder.is_symlink():
                    raise _NoDigest(os.fspath(folder))
                checked.add(folder)
        shown = shown_path(file, profiles_dir, root_real, base_real)
        entries.append((os.fsencode(shown).hex(), _file_sha256(file, MAX_FILE_BYTES)))
    return entries


def shown_path(file: Path, profiles_dir: Path, root_real: Path, base_real: Path) -> str:
    """:func:`gen.fleet.discovery.display_path` of ``file``, a file under ``profiles_dir``
    reached through no link, relative to ``base_real`` (resolved), with
    ``root_real = profiles_dir.resolve()``: the same text, without resolving every file
    again (no link on the way, so ``file.resolve()`` is ``root_real`` and the rest)."""
    try:
        return (root_real / file.relative_to(profiles_dir)).relative_to(base_real).as_posix()
    except ValueError:
        return file.as_posix()


def _config_digest(profiles_dir: Path, base: Path | None) -> str | None:
    """The SHA-256 of the fleet's ``gen.yaml`` (its suppressions change the verdict), or
    None when there is none."""
    from gen.fleet.discovery import CONFIG_FILE, MAX_FILE_BYTES, fleet_config_repo

    file = fleet_config_repo(profiles_dir, base) / CONFIG_FILE
    if file.is_symlink():
        raise _NoDigest(os.fspath(file))
    return _file_sha256(file, MAX_FILE_BYTES) if file.is_file() else None


def input_digest(
    profiles_dir: Path, templates_dir: Path | None, base: Path | None,
    options: Mapping[str, Any], *, crds_dir: Path | None = None,
) -> str | None:
    """A SHA-256 of everything a whole render depends on, read without parsing anything:
    the profile files (paths as shown, bytes), the template overrides and built-ins, gen's
    data files, gen's version and code and the libraries' versions (as a fingerprint has
    them), and ``options`` (what else changes the output or the verdict). None when an
    input cannot be vouched for: the render then takes the normal path."""
    builtin = _builtin_digest()
    if builtin is None:
        return None
    try:
        profiles = _profile_digest(profiles_dir, base)
        config = _config_digest(profiles_dir, base)
        overrides = (None if templates_dir is None or not templates_dir.is_dir()
                     else _tree_digest(templates_dir))
    except _NoDigest:
        return None
    if templates_dir is not None and templates_dir.is_symlink():
        return None
    try:
        crds = (None if crds_dir is None or not crds_dir.is_dir() or crds_dir.is_symlink()
                else _tree_digest(crds_dir))
    except _NoDigest:
        return None
    parts = {
        "format": FLEET_FORMAT,
        "gen": {"version": __version__, "code": code_digest(), "format": FORMAT,
                **_library_versions()},
        "profiles": profiles,
        "config": config,
        "templates": {"override": overrides, "builtin": builtin[0]},
        "data": builtin[1],
        "options": dict(options),
        **({"crds": crds} if crds is not None else {}),
    }
    return _sha256(canonical_json(parts))


@dataclasses.dataclass(frozen=True)
class FleetRecord:
    """What one successful render of the whole fleet (or a --cluster selection) was."""

    digest: str
    clusters: tuple[str, ...]
    """The clusters the render covered (``RenderResult.skipped`` of a fast-path run)."""
    objects: int
    files: Mapping[str, str]
    """Every file of out/ the render made (the index and the other cache records too),
    relative to out/ → SHA-256."""
    findings: tuple[Any, ...]
    """The lint warnings and infos the render returned (:class:`gen.errors.Finding`)."""


def _location_json(loc: SourceLocation | None) -> Any:
    if loc is None:
        return None
    return [loc.path, loc.line, loc.column, *([loc.note] if loc.note else [])]


def _location(raw: Any) -> SourceLocation | None:
    if raw is None:
        return None
    if not (isinstance(raw, list) and len(raw) in (3, 4) and isinstance(raw[0], str)
            and type(raw[1]) is int and type(raw[2]) is int
            and all(isinstance(note, str) for note in raw[3:])):
        raise ValueError("bad location")
    return SourceLocation(raw[0], raw[1], raw[2], *raw[3:])


def finding_json(finding: Any) -> dict[str, Any]:
    """Every field of a Finding, for an exact round trip (``to_json`` drops some)."""
    return {
        "rule": finding.rule, "message": finding.message,
        "location": _location_json(finding.location), "key_path": finding.key_path,
        "severity": finding.severity.value, "hint": finding.hint,
        "related": [_location_json(r) for r in finding.related],
        "service": finding.service, "cluster": finding.cluster,
    }


def parse_finding(raw: Any) -> Any:
    """The Finding :func:`finding_json` wrote; ValueError for anything else."""
    from gen.errors import Finding, Severity

    if not isinstance(raw, dict) or set(raw) != {
            "rule", "message", "location", "key_path", "severity", "hint", "related",
            "service", "cluster"}:
        raise ValueError("bad finding")
    texts = ("rule", "message", "key_path", "hint", "service", "cluster")
    if not all(isinstance(raw[k], str) for k in texts) or not isinstance(raw["related"], list):
        raise ValueError("bad finding")
    related = []
    for item in raw["related"]:
        loc = _location(item)
        if loc is None:
            raise ValueError("bad related location")
        related.append(loc)
    return Finding(raw["rule"], raw["message"], _location(raw["location"]), raw["key_path"],
                   Severity(raw["severity"]), raw["hint"], tuple(related), raw["service"],
                   raw["cluster"])


def fleet_record_bytes(record: FleetRecord) -> bytes:
    """The fleet record file: canonical, deterministic. The files are one flat list, path
    then SHA-256, sorted by path: it loads about twice as fast as an object of 41,000 keys
    (the no-op fast path reads it on every run), and the file is never committed."""
    files = [text for rel in sorted(record.files) for text in (rel, record.files[rel])]
    data = {
        "clusters": list(record.clusters),
        "digest": record.digest,
        "files": files,
        "findings": [finding_json(f) for f in record.findings],
        "format": FLEET_FORMAT,
        "objects": record.objects,
    }
    return (json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
            + "\n").encode()


def parse_fleet_record(data: bytes) -> FleetRecord | None:
    """A fleet record from its bytes; None for anything damaged or of another format."""
    try:
        raw = json.loads(data)
        if not isinstance(raw, dict) or raw.get("format") != FLEET_FORMAT:
            return None
        digest, clusters, flat = raw.get("digest"), raw.get("clusters"), raw.get("files")
        objects, findings = raw.get("objects"), raw.get("findings")
        if not (isinstance(digest, str) and isinstance(clusters, list)
                and all(isinstance(c, str) for c in clusters)
                and type(objects) is int and objects >= 0
                and isinstance(flat, list) and len(flat) % 2 == 0
                and isinstance(findings, list)
                and set(map(type, flat)) <= {str}):
            return None
        files = dict(zip(flat[0::2], flat[1::2], strict=True))
        if len(files) * 2 != len(flat):
            return None  # a path listed twice
        return FleetRecord(digest, tuple(clusters), objects, files,
                           tuple(parse_finding(f) for f in findings))
    except ValueError:
        return None


def read_fleet_record(out_dir: Path) -> FleetRecord | None:
    """The fleet record in out/; None when missing or damaged."""
    try:
        data = (out_dir / FLEET_RECORD).read_bytes()
    except OSError:
        return None
    return parse_fleet_record(data)


# ------------------------------------------------------------------------------ the stat table

STAT_TABLE = f"{CACHE_DIR}/_stat.json"
"""What out/ looked like on this machine just after gen wrote it (:func:`write_stat_table`):
every folder's listing, with each file's size, mtime, ctime, inode and device. Machine-local
(inodes and times mean nothing elsewhere), so kept out of Git like the fleet record, and never
part of what a render compares or reports."""

STAT_FORMAT = 2
"""The stat table layout's version (2: one listing per folder, bound to the fleet record)."""

STAT_MARGIN_NS = 100_000_000
"""How far before the swap a file's mtime and ctime must be for its stat to vouch for it:
ten times the coarsest kernel clock tick (10 ms) that stamps file times on a filesystem with
sub-second times. A change later than that cannot leave both times as they were."""

SLEEP_BEFORE_SWAP_FILES = 1000
"""From this many files a render waits :data:`STAT_MARGIN_NS` before it swaps out/ in, so
that every file it wrote is old enough to be vouched for by its stat; below it, hashing
the files back costs less than the wait."""

Stat = tuple[int, int, int, int, int]
"""(size, mtime_ns, ctime_ns, inode, device) of a file, links not followed."""

OWN_FILES = frozenset({FLEET_RECORD.rsplit("/", 1)[1], STAT_TABLE.rsplit("/", 1)[1]})
"""The names, in the cache folder, of the two files no record lists: the fleet record (its
bytes are read and bound to the table by their SHA-256) and the stat table itself. A listing
shows them as ``name/c``: present and regular files, their stat not compared."""


def stat_of(path: str) -> Stat | None:
    """The :data:`Stat` of a regular file, or None (missing, a link, not a file)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def file_text(name: str, st: os.stat_result) -> str:
    """A regular file in a folder's listing: its name, then ``f`` and its size, mtime, ctime,
    inode and device. A listing joins its entries with ``//``, in the order the filesystem
    lists them (an unchanged folder lists them in the same order; one that does not is
    merely checked entry by entry); a name holds no ``/``, so the text splits back
    unambiguously (:func:`split_listing`)."""
    return f"{name}/f/{st.st_size}/{st.st_mtime_ns}/{st.st_ctime_ns}/{st.st_ino}/{st.st_dev}"


def split_listing(line: str) -> dict[str, str]:
    """A folder's listing as name → that entry's text (:func:`file_text`, ``name/d`` for a
    folder, ``name/c`` for one of :data:`OWN_FILES`, ``name/?`` for anything not vouched)."""
    entries: dict[str, str] = {}
    for text in line.split("//") if line else ():
        entries[text.split("/", 1)[0]] = text
    return entries


@dataclasses.dataclass(frozen=True)
class StatTable:
    """The stat table: for the fleet record whose bytes hash to ``fleet``, each folder of
    out/ (relative to out/, ``""`` for out/ itself) → its listing (:func:`file_text`)."""

    fleet: str
    folders: Mapping[str, str]

    def vouched(self) -> set[str]:
        """The files (relative to out/) whose stat the table vouches for."""
        return {f"{folder}/{name}" if folder else name
                for folder, line in self.folders.items()
                for name, text in split_listing(line).items()
                if text[len(name) + 1:].startswith("f/")}


def write_stat_table(out_dir: Path, fleet_record: bytes,
                     placed: Mapping[str, tuple[int, int]]) -> None:
    """Record every folder's listing of out/ for the fleet record ``fleet_record`` (bytes
    as in out/). ``placed``: for each file gen put in out/, its inode and a time (ns) after
    which only someone else can have changed it (for a file gen wrote, the clock just
    before the swap; for one it carried over from the old out/, the clock before it
    compared that file's bytes). A file's stat is recorded only when the fleet record lists
    it, it is still that inode, a regular file, and its mtime is more than
    :data:`STAT_MARGIN_NS` older than that time (a change in place after it would have moved
    the mtime past it), on a filesystem with sub-second times (some file's mtime has a
    fraction of a second). Anything else is listed as ``name/?``, which no later listing
    equals: that folder is then checked file by file, and that file hashed. Best effort: a
    table that cannot be written is removed, and verification then hashes every file."""
    record = parse_fleet_record(fleet_record)
    table = out_dir / STAT_TABLE
    folders: dict[str, str] = {}
    fine = False
    try:
        if record is None:
            raise OSError("no fleet record")
        files = record.files
        todo = [("", os.fspath(out_dir))]
        while todo:
            rel_dir, path = todo.pop()
            prefix = rel_dir + "/" if rel_dir else ""
            own = rel_dir == CACHE_DIR
            texts: dict[str, str] = {}  # in the order the filesystem lists them
            with os.scandir(path) as it:
                entries = list(it)
            for entry in entries:
                name = entry.name
                if entry.is_dir(follow_symlinks=False):
                    texts[name] = name + "/d"
                    todo.append((prefix + name, entry.path))
                    continue
                st = entry.stat(follow_symlinks=False)
                if not stat.S_ISREG(st.st_mode):
                    texts[name] = name + "/?"
                elif own and name in OWN_FILES:
                    texts[name] = name + "/c"
                else:
                    rel = prefix + name
                    mine = placed.get(rel)
                    if (rel in files and mine is not None and mine[0] == st.st_ino != 0
                            and st.st_mtime_ns < mine[1] - STAT_MARGIN_NS):
                        texts[name] = file_text(name, st)
                        fine = fine or st.st_mtime_ns % 1_000_000_000 != 0
                    else:
                        texts[name] = name + "/?"
            if own:  # the table itself is written below: this folder's names are sorted
                texts.update({name: name + "/c" for name in OWN_FILES})
                texts = {name: texts[name] for name in sorted(texts)}
            folders[rel_dir] = "//".join(texts.values())
        if not fine:
            table.unlink(missing_ok=True)  # nothing it could vouch for
            return
        data = json.dumps({"format": STAT_FORMAT,
                           "fleet": hashlib.sha256(fleet_record).hexdigest(),
                           "folders": folders}, sort_keys=True,
                          separators=(",", ":"), ensure_ascii=True).encode("ascii")
        tmp = table.with_name(f"{table.name}.{os.getpid()}.tmp")
        tmp.write_bytes(data)
        tmp.replace(table)
    except OSError:
        with contextlib.suppress(OSError):
            table.unlink(missing_ok=True)


def read_stat_table(out_dir: Path) -> StatTable | None:
    """The stat table of out/; None when missing or damaged. Listings are not checked one
    by one: one that is not what out/ now lists is simply not equal to it."""
    try:
        raw = json.loads((out_dir / STAT_TABLE).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(raw, dict) or raw.get("format") != STAT_FORMAT:
        return None
    fleet, folders = raw.get("fleet"), raw.get("folders")
    if not (isinstance(fleet, str) and isinstance(folders, dict)
            and set(map(type, folders.values())) <= {str}):
        return None
    return StatTable(fleet, folders)


class VerifiedFiles(Mapping[PurePosixPath, bytes]):
    """Files of out/ proved to hold the bytes a render writes, sorted by path; a file whose
    stat vouched for it is read when first asked for (its hash checked then too).
    ``hashes``: path relative to out/ → SHA-256, of these files and maybe others; ``rels``:
    the paths this mapping holds, sorted (default: all of ``hashes``)."""

    def __init__(self, root: str, hashes: Mapping[str, str], loaded: dict[str, bytes],
                 rels: list[str] | None = None) -> None:
        self._root, self._hashes, self._loaded = root, hashes, loaded
        self._rels = sorted(hashes) if rels is None else rels
        self._held: set[str] | None = None if rels is not None else set(hashes)

    def __len__(self) -> int:
        return len(self._rels)

    def __iter__(self) -> Iterator[PurePosixPath]:
        return (PurePosixPath(rel) for rel in self._rels)

    def _holds(self, rel: str) -> bool:
        if self._held is None:
            self._held = set(self._rels)
        return rel in self._held

    def __contains__(self, key: object) -> bool:
        return isinstance(key, PurePosixPath) and self._holds(str(key))

    def __getitem__(self, key: PurePosixPath) -> bytes:
        rel = str(key)
        if not isinstance(key, PurePosixPath) or not self._holds(rel):
            raise KeyError(key)
        data = self._loaded.get(rel)
        if data is None:
            if not _safe(rel, cache_ok=True):
                raise StaleOutputError(f"{rel}: not a path gen reads in out/")
            data = _read_all(os.path.join(self._root, rel))  # noqa: PTH118 - str paths
            if hashlib.sha256(data).hexdigest() != self._hashes[rel]:
                raise StaleOutputError(f"{rel} changed in out/ while gen was reading it")
            self._loaded[rel] = data
        return data


# ------------------------------------------------------------------------- the pre-build key
# Added for the build in the workers (gen.pipeline): a second key in each cluster's record,
# computed before the cluster is built, and the cluster's own lint findings with it.

PREBUILD_FORMAT = 1
"""The pre-build key's layout version (part of the key)."""


def prebuild_key(cluster: ClusterPlan, extra: Mapping[str, Any],
                 root: Path) -> tuple[str, frozenset[str]] | None:
    """The pre-build key of a resolved (not yet built) cluster, and the shown paths of the
    profile files whose bytes it hashed; None when an input cannot be hashed.

    A SHA-256 over the canonical JSON of: gen's version, code digest and libraries (as a
    fingerprint has them); the built-in templates and gen's data files (catalogs read by
    builders and checks); ``extra`` (the caller's other inputs: override templates, CRDs,
    what the checks read beside the cluster); the cluster plan itself, every value the
    resolver put there, with every source location **with its line and column** (findings
    carry them, unlike the bytes a fingerprint vouches for); and the SHA-256 of the bytes of
    every profile file any of those locations or documents names, read from ``root`` (the
    folder the shown paths are relative to), as the provenance file reads them. A profile is
    hashed as its whole file, so an edit anywhere in it (a comment that moves the lines
    below) changes the key of every cluster that draws on it.
    """
    from gen.fleet.plan import ServicePlan
    from gen.fleet.profiles import Located

    paths: set[str] = set()
    pools = {id(p): p.name for p in cluster.pools}

    def default(value: Any) -> Any:
        if isinstance(value, ServicePlan) and all(id(p) in pools for p in value.pools):
            # its pools are the cluster's own (hashed there): by name, not once more each
            return {"@type": "ServicePlan", "located": value.located,
                    "gpu_class": value.gpu_class, "alternatives": value.alternatives,
                    "model": value.model, "pools": [pools[id(p)] for p in value.pools]}
        if isinstance(value, SourceLocation):
            paths.add(value.path)
            return [value.path, value.line, value.column, value.note]
        if isinstance(value, Located):
            paths.add(value.document.path)
            return {"value": value.value,
                    "from": [value.document.path, value.document.index]}
        return _default(value)

    builtin = _builtin_digest()
    if builtin is None:
        return None
    try:
        text = json.dumps(
            {"cluster": cluster, "extra": extra}, sort_keys=True, separators=(",", ":"),
            ensure_ascii=True, allow_nan=False, default=default)
    except (Uncacheable, ValueError):
        return None
    files: dict[str, str] = {}
    for shown in sorted(p for p in paths if p):
        try:
            files[shown] = _file_sha256(root / shown)
        except _NoDigest:
            return None
    parts = {
        "format": PREBUILD_FORMAT,
        "gen": {"format": FORMAT},
        "builtin": builtin,
        "plan": _sha256(text),
        "files": files,
    }
    return _sha256(canonical_json(parts)), frozenset(files)


def _gen_versions() -> dict[str, Any]:
    """gen's version, code digest and record format, and the libraries' versions (as a
    fingerprint has them; the libraries' looked up once per process)."""
    return {"version": __version__, "code": code_digest(), "format": FORMAT,
            **_library_versions_once()}


@once
def _library_versions_once() -> dict[str, str]:
    return _library_versions()


def template_tree_digest(folder: Path | None) -> list[tuple[str, str]] | None:
    """(relative path, SHA-256) of every file of a template override folder (empty for none);
    None when it holds a link or an unreadable entry (:func:`prebuild_key` then has no key)."""
    if folder is None or not folder.is_dir():
        return []
    if folder.is_symlink():
        return None
    try:
        return _tree_digest(folder)
    except _NoDigest:
        return None


@dataclasses.dataclass(frozen=True)
class LintRecord:
    """A cluster's record with what :func:`lint_record_bytes` adds: the pre-build key it was
    written with and the cluster's own lint findings (before suppressions)."""

    record: CacheRecord
    data: bytes
    """The record file's bytes."""
    prebuild: str | None
    findings: tuple[Any, ...]
    """The per-cluster checks' findings (:class:`gen.errors.Finding`), in their order."""
    once: Mapping[str, tuple[Any, ...]]
    """The per-cluster findings that count once in the fleet, by what they are about."""


def lint_record_bytes(record: CacheRecord, prebuild: str | None, findings: Iterable[Any],
                      once: Mapping[str, Iterable[Any]]) -> bytes:
    """:func:`record_bytes` with the pre-build key and the cluster's lint findings added
    (none added without a key: they could never be reused). :func:`parse_record` reads the
    rest of the file as before."""
    if prebuild is None:
        return record_bytes(record)
    data = {
        **_record_data(record),
        "prebuild": prebuild,
        "lint": [finding_json(f) for f in findings],
        "lint_once": {k: [finding_json(f) for f in v] for k, v in sorted(once.items())},
    }
    return (json.dumps(data, sort_keys=True, indent=1, ensure_ascii=True) + "\n").encode()


def read_lint_record(out_dir: Path, cluster: str) -> LintRecord | None:
    """The record of ``cluster`` in out/ with its pre-build key and findings (a record
    without them, or with damaged ones, has ``prebuild`` None); None when there is no
    usable record at all."""
    found = read_record(out_dir, cluster)
    if found is None:
        return None
    record, data = found
    raw = json.loads(data)
    prebuild, lint, once = raw.get("prebuild"), raw.get("lint"), raw.get("lint_once")
    try:
        if not (isinstance(prebuild, str) and isinstance(lint, list)
                and isinstance(once, dict)
                and all(isinstance(v, list) for v in once.values())):
            raise ValueError("no pre-build key")
        findings = tuple(parse_finding(f) for f in lint)
        keyed = {str(k): tuple(parse_finding(f) for f in v) for k, v in once.items()}
    except ValueError:
        return LintRecord(record, data, None, (), {})
    return LintRecord(record, data, prebuild, findings, keyed)
