"""Embedded strict JSON Schema validation of rendered manifests, through ``jsonschema-rs``.

Kubernetes schemas come from the ``kubernetes-validate`` package's bundled data (strict
variants: unknown fields are errors), for the cluster's own minor version. Their ``$ref`` values
point into one shared ``_definitions.json`` per version, which is read and handed to a
``jsonschema_rs.Registry`` once per minor. Custom resources are checked against their CRD
(:mod:`gen.emit.crd_schemas`: upstream's, bundled, or the user's ``crds/``) the way the API
server checks them: nulls pruned and defaults applied to a copy (:mod:`gen.emit.crd_rules`),
the CRD's structural schema converted to JSON Schema (:mod:`gen.emit.crd_convert`, with
``metadata`` as the version's strict ObjectMeta), then list-map keys and the CEL rules. Every
object's metadata syntax (name per kind, namespace, labels, annotations, finalizers) is
checked too (:func:`metadata_findings`). A kind with no schema and no CRD is an error.

Validators are compiled once per (schema minor, apiVersion, kind, CRD) per process and kept in
one cache, :data:`_VALIDATORS` (:func:`compiled`, :func:`warm`), registered with
:mod:`gen.caches` like every other cache. A custom resource's validator is compiled once for
every minor whose ObjectMeta is the same: a converted CRD schema refers to nothing outside
itself but ObjectMeta (:data:`~gen.emit.crd_convert.OBJECT_META_REF`; CRDs cannot hold
``$ref``), so
two minors whose ObjectMeta definitions, with every definition they refer to, are equal get
the same validator (:func:`_meta_digest`; Kubernetes 1.32–1.35 share one). A render fills
the cache in the parent before it forks its workers, so they inherit the compiled validators
(and each CRD's :func:`~gen.emit.crd_rules.schema_checks`);
``jsonschema_rs`` validators do not pickle, so spawned workers compile their own.
``format`` is not checked, as ``jsonschema`` does not check it unless asked to.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
from collections.abc import Callable, Iterable, Mapping
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gen.caches import BoundedCache, memoize, once
from gen.emit import schema_shapes
from gen.emit.crd_convert import OBJECT_META_REF, CRDSchema
from gen.emit.crd_rules import schema_checks
from gen.emit.crd_schemas import CRDSet, json_schema
from gen.errors import Finding, SourceLocation
from gen.fleet.loader import format_key_path
from gen.k8s import names
from gen.rules import finding

if TYPE_CHECKING:
    from gen.emit.skeleton import Holes, ShapeHoles

__all__ = ["SchemaValidator", "compiled", "metadata_findings", "schema_version_for", "warm"]

_GROUP = re.compile(r"^([^./]*)(?:\.[^/]*)?/")
_DEFINITIONS_URI = "https://kubernetes.io/api/_definitions.json"

ValidatorKey = tuple[int, str, str, str]
"""(schema minor, apiVersion, kind, digest of the CRD's schema or "" for a built-in kind)."""

_VALIDATORS: BoundedCache[ValidatorKey, Any] = BoundedCache("gen.emit.validate.validators", 4096)
"""The process-wide validator cache: key → compiled ``jsonschema_rs`` validator, or ``None``
when no schema describes the kind in that version."""

_CUSTOM: BoundedCache[tuple[str, str, str, str], Any] = BoundedCache(
    "gen.emit.validate.custom_validators", 1024)
"""(apiVersion, kind, CRD schema digest, :func:`_meta_digest` of the minor) → the compiled
validator of a custom resource, shared by the minors whose ObjectMeta is the same."""


@once
def _schema_root() -> Path:
    """The bundled schemas' folder, found without importing ``kubernetes_validate`` (its
    ``__init__`` imports ``jsonschema``, ~60–90 ms that no caller here needs)."""
    spec = importlib.util.find_spec("kubernetes_validate")
    locations = spec.submodule_search_locations if spec is not None else None
    if locations:
        return Path(next(iter(locations))) / "kubernetes-json-schema"
    root = resources.files("kubernetes_validate") / "kubernetes-json-schema"
    return Path(str(root))


@once
def _available_minors() -> tuple[int, ...]:
    minors = []
    for entry in _schema_root().iterdir():
        match = re.match(r"^v1\.(\d+)\.0-local-strict$", entry.name)
        if match:
            minors.append(int(match.group(1)))
    return tuple(sorted(minors))


@memoize(maxsize=None)
def schema_version_for(minor: int) -> int:
    """The bundled schema minor used for a cluster minor: the newest not newer than it."""
    available = _available_minors()
    older = [m for m in available if m <= minor]
    return older[-1] if older else available[0]


@memoize(maxsize=64)
def _definitions(minor: int) -> tuple[Any, str]:
    """The ``_definitions.json`` of one version, parsed once: as a jsonschema-rs registry, and
    the :func:`_meta_digest` of its ObjectMeta (the parsed definitions are not kept)."""
    import jsonschema_rs

    path = _schema_root() / f"v1.{minor}.0-local-strict" / "_definitions.json"
    definitions = json.loads(path.read_text(encoding="utf-8"))
    return (jsonschema_rs.Registry([(_DEFINITIONS_URI, definitions)]),
            _meta_digest(definitions, minor))


def _registry(minor: int) -> Any:
    """The definitions of one version as a jsonschema-rs registry (:func:`_definitions`)."""
    return _definitions(minor)[0]


_LOCAL_DEF = re.compile(r"^#/\$defs/([^/~]+)$")


def _meta_digest(definitions: Mapping[str, Any], minor: int) -> str:
    """SHA-256 of ObjectMeta in one version's definitions and of every definition it refers
    to, transitively: equal digests, equal verdicts on ``metadata``. A reference of another
    form (or to a missing definition) makes the digest the minor's own: nothing is shared."""
    defs = definitions.get("$defs")
    name = OBJECT_META_REF.rpartition("/")[2]
    if not isinstance(defs, Mapping) or name not in defs:
        return f"v1.{minor}"
    closure: dict[str, Any] = {}
    todo = [name]
    while todo:
        current = todo.pop()
        if current in closure:
            continue
        closure[current] = defs[current]
        stack: list[Any] = [defs[current]]
        while stack:
            node = stack.pop()
            if isinstance(node, dict):
                ref = node.get("$ref")
                if ref is not None:
                    match = _LOCAL_DEF.match(ref) if isinstance(ref, str) else None
                    if match is None or match.group(1) not in defs:
                        return f"v1.{minor}"
                    todo.append(match.group(1))
                stack.extend(node.values())
            elif isinstance(node, list):
                stack.extend(node)
    text = json.dumps(closure, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _schema_file(minor: int, api_version: str, kind: str) -> Path:
    group_version = _GROUP.sub(r"\1-", api_version)
    return _schema_root() / f"v1.{minor}.0-local-strict" / f"{kind.lower()}-{group_version}.json"


def _is_schema_file(minor: int, file: Path) -> bool:
    """Whether :func:`_schema_file` named a schema of version ``minor``. A kind or apiVersion
    that makes no plain file name there (a ``/`` in it, a NUL byte, more than 255 bytes)
    names none, and the file system is not asked: it would raise. The API server serves no
    such kind either."""
    name = file.name
    if file.parent != _schema_root() / f"v1.{minor}.0-local-strict" or "\0" in name or \
            len(name.encode()) > 255:
        return False
    return file.is_file()


def _kind_schema(minor: int, api_version: str, kind: str) -> Any:
    """The schema file of a built-in kind that :func:`_build` compiled, read again."""
    return json.loads(_schema_file(minor, api_version, kind).read_text(encoding="utf-8"))


def _build(minor: int, api_version: str, kind: str, crd: CRDSchema | None) -> Any:
    """Compile the validator of one kind in one schema version (``None``: no schema)."""
    import jsonschema_rs

    if crd is not None:
        registry, meta = _definitions(minor)
        shared = (api_version, kind, crd.digest, meta)
        found = _CUSTOM.data.get(shared) if crd.digest else None
        if found is None:
            found = jsonschema_rs.Draft202012Validator(
                json_schema(crd), registry=registry, validate_formats=False)
            if crd.digest:
                _CUSTOM.put(shared, found)
        return found
    file = _schema_file(minor, api_version, kind)
    if not _is_schema_file(minor, file):
        return None
    schema = json.loads(file.read_text(encoding="utf-8"))
    return jsonschema_rs.Draft202012Validator(
        schema, registry=_registry(minor), validate_formats=False)


def compiled(minor: int, api_version: str, kind: str, crd: CRDSchema | None = None) -> Any:
    """The cached validator for a kind in schema version ``minor`` (``None``: no schema);
    ``crd`` is the CRD version that defines a custom kind (:class:`CRDSet.lookup`)."""
    key = (minor, api_version, kind, crd.digest if crd is not None else "")
    try:
        return _VALIDATORS.data[key]
    except KeyError:
        return _VALIDATORS.put(key, _build(minor, api_version, kind, crd))


def warm(keys: Iterable[tuple[int, str, str]], crds: CRDSet | None = None) -> None:
    """Compile the validators of (cluster minor, apiVersion, kind) ahead of use, and the
    :func:`~gen.emit.crd_rules.schema_checks` of each custom resource's CRD."""
    crds = crds or CRDSet()
    for cluster_minor, api_version, kind in keys:
        crd = crds.lookup(api_version, kind)
        compiled(schema_version_for(cluster_minor), api_version, kind, crd)
        if crd is not None:
            schema_checks(crd.schema, crd.digest)


class SchemaValidator:
    """Validates manifests of any supported Kubernetes version (validators: :func:`compiled`)
    against the built-in schemas and the CRDs of ``crds`` (default: the bundled ones)."""

    def __init__(self, crds: CRDSet | None = None) -> None:
        self.crds = crds or CRDSet()
        self._shapes: dict[tuple[int, str], schema_shapes.ShapeKey] = {}
        """(cluster minor, shape digest) → the :data:`~gen.emit.schema_shapes.ShapeKey` of a
        built-in kind (no CRD of :attr:`crds` defines it) an object of the shape passed."""

    def validate(
        self,
        data: Mapping[str, Any],
        cluster_minor: int,
        where: SourceLocation,
        origin: SourceLocation | None = None,
        holes: Holes | None = None,
    ) -> list[Finding]:
        """All schema, metadata and rule errors of one object, located at its output file.

        ``holes``: where the values of the object's template shape sit in ``data``
        (:attr:`gen.emit.render.RenderedObject.holes`); the checks then walk its values,
        and the rest of the object once per shape (:mod:`gen.emit.schema_shapes` for the
        schema of a built-in kind). The findings are the same."""
        if holes is not None:
            key = self._shapes.get((cluster_minor, holes.shape.shape))
            if key is not None and data.get("kind") == key[2] and \
                    data.get("apiVersion") == key[1] and schema_shapes.passes(key, holes):
                return metadata_findings(data, where, (origin,) if origin is not None else (),
                                         holes)
        minor = schema_version_for(cluster_minor)
        api_version = str(data.get("apiVersion", ""))
        kind = str(data.get("kind", ""))
        related = (origin,) if origin is not None else ()
        findings = metadata_findings(data, where, related, holes)
        crd = self.crds.lookup(api_version, kind)
        validator = compiled(minor, api_version, kind, crd)
        if crd is not None:
            return findings + _custom_findings(validator, data, crd, where, related, holes)
        if holes is not None and validator is not None:
            key = (minor, api_version, kind, holes.shape.shape)
            if schema_shapes.passes(key, holes):
                return findings  # the values pass, and the fixed part passed before
            if validator.is_valid(data):
                if schema_shapes.learn(key, holes, lambda: _kind_schema(minor, api_version, kind),
                                       _registry(minor)):
                    if len(self._shapes) >= 4096:
                        self._shapes.clear()
                    self._shapes[(cluster_minor, holes.shape.shape)] = key
                return findings
        elif validator is not None and validator.is_valid(data):
            return findings  # the common case, and quicker than collecting errors
        return findings + _findings(validator, data, minor, where, related)


def _custom_findings(validator: Any, data: Mapping[str, Any], crd: CRDSchema,
                     where: SourceLocation, related: tuple[SourceLocation, ...],
                     holes: Holes | None = None) -> list[Finding]:
    """GEN020 (schema) and GEN024 (list-map keys, CEL rules) of a custom resource, judged as
    the API server does: on a copy with nulls pruned and defaults set."""
    checks = schema_checks(crd.schema, crd.digest)
    prepared = checks.prepare(data, holes)
    if not validator.is_valid(prepared):
        what = f"{crd.kind} does not match its CRD ({crd.source})"
        return [finding("GEN020", f"{what}: {error.message}", where,
                        key_path=format_key_path(list(error.instance_path)),
                        related=_with_crd(related, crd))
                for error in validator.iter_errors(prepared)]
    # A rule gen cannot compile is reported once, at its CRD (GEN025, by load_crd_dir).
    errors = checks.errors(prepared, holes)
    return [finding("GEN024", f"{crd.kind} breaks a rule of its CRD ({crd.source}): "
                    f"{error.message}", where, key_path=format_key_path(list(error.path)),
                    related=_with_crd(related, crd))
            for error in errors if error.evaluated] if errors else []


def _with_crd(related: tuple[SourceLocation, ...], crd: CRDSchema) -> tuple[SourceLocation, ...]:
    return (*related, crd.location) if crd.location is not None else related


def _findings(validator: Any, data: Mapping[str, Any], minor: int, where: SourceLocation,
              related: tuple[SourceLocation, ...]) -> list[Finding]:
    """The GEN020 findings of a built-in object that failed (or has no schema)."""
    api_version = str(data.get("apiVersion", ""))
    kind = str(data.get("kind", ""))
    if validator is None:
        return [finding(
            "GEN020",
            f"no schema for {kind} {api_version} in Kubernetes 1.{minor} and no CRD for it: "
            "the cluster's API server does not serve it",
            where, related=related,
            hint="check the cluster's kubernetes_version and the API versions it enables; "
                 "for a custom resource, put its CRD in crds/ beside profiles/ (or --crds)",
        )]
    return [
        finding(
            "GEN020", f"{kind} does not match the 1.{minor} schema: {error.message}",
            where, key_path=format_key_path(list(error.instance_path)), related=related,
        )
        for error in validator.iter_errors(data)
    ]


def metadata_findings(data: Mapping[str, Any], where: SourceLocation,
                      related: tuple[SourceLocation, ...] = (),
                      holes: Holes | None = None) -> list[Finding]:
    """GEN022: ``metadata`` name, namespace, label, annotation and finalizer syntax, as the API
    server checks it on every object (:mod:`gen.k8s.names`); shapes are the schema's.

    ``holes``: where the values of the object's template shape sit; once one object of the
    shape passed, only the values in its metadata are checked (:func:`_metadata_program`)."""
    meta = data.get("metadata")
    if type(meta) is dict:
        if holes is not None:
            program = _META_PROGRAMS.data.get(holes.shape.shape)
            if program is not None and _values_clean(program, holes, meta, data):
                return []
        if _metadata_clean(meta, str(data.get("apiVersion", "")), str(data.get("kind", ""))):
            if holes is not None and holes.shape.shape not in _META_PROGRAMS.data:
                _META_PROGRAMS.put(holes.shape.shape, _metadata_program(data, holes.shape))
            return []
    if not isinstance(meta, Mapping):
        return []
    name, namespace, finalizers = meta.get("name"), meta.get("namespace"), meta.get("finalizers")
    errors = _metadata_errors(
        str(data.get("apiVersion", "")), str(data.get("kind", "")),
        name if isinstance(name, str) else "", bool(meta.get("generateName")),
        namespace if isinstance(namespace, str) else "",
        _strings(meta.get("labels")), _strings(meta.get("annotations")),
        tuple((i, v) for i, v in enumerate(finalizers if isinstance(finalizers, list) else ())
              if isinstance(v, str)))
    return [finding("GEN022", message, where, key_path=key_path, related=related)
            for key_path, message in errors]


# Strings known to pass one syntax check (only passes are kept: a failure takes the exact
# path below, which words the messages). The fast path answers from these with a hash look-up.
_GOOD_SUBDOMAIN: BoundedCache[str, bool] = BoundedCache("gen.emit.validate.good_subdomain", 65536)
_GOOD_LABEL: BoundedCache[str, bool] = BoundedCache("gen.emit.validate.good_dns_label", 65536)
_GOOD_1035: BoundedCache[str, bool] = BoundedCache("gen.emit.validate.good_dns1035", 65536)
_GOOD_QNAME: BoundedCache[str, bool] = BoundedCache("gen.emit.validate.good_qualified", 65536)
_GOOD_VALUE: BoundedCache[str, bool] = BoundedCache("gen.emit.validate.good_label_value", 65536)
_GOOD_NOTE: BoundedCache[str, bool] = BoundedCache("gen.emit.validate.good_annotation", 65536)
_NAME_CACHES: dict[Callable[[str], list[str]], BoundedCache[str, bool]] = {
    names.dns1123_subdomain_errors: _GOOD_SUBDOMAIN, names.dns1123_label_errors: _GOOD_LABEL,
    names.dns1035_label_errors: _GOOD_1035}


def _good(cache: BoundedCache[str, bool], value: object,
          errors: Callable[[str], list[str]]) -> bool:
    """Whether ``value`` is a string ``errors`` finds nothing wrong with (learnt in ``cache``)."""
    if type(value) is not str:
        return False
    if value in cache.data:
        return True
    if errors(value):
        return False
    cache.put(value, True)
    return True


def _note_key_errors(key: str) -> list[str]:
    return names.qualified_name_errors(key.lower())


def _labels_clean(labels: object) -> bool:
    if type(labels) is not dict:
        return False
    good_keys, good_values = _GOOD_QNAME.data, _GOOD_VALUE.data
    for key, value in labels.items():
        if type(value) is not str or (key not in good_keys and \
                not _good(_GOOD_QNAME, key, names.qualified_name_errors)):
            return False
        if value not in good_values and not _good(_GOOD_VALUE, value, names.label_value_errors):
            return False
    return True


def _notes_clean(notes: object) -> bool:
    if type(notes) is not dict:
        return False
    good_keys, size = _GOOD_NOTE.data, 0
    for key, value in notes.items():
        if type(value) is not str or (key not in good_keys and \
                not _good(_GOOD_NOTE, key, _note_key_errors)):
            return False
        size += len(key) + len(value)
    return size * 4 <= names.TOTAL_ANNOTATION_SIZE  # UTF-8: at most 4 bytes a character


def _finalizers_clean(finalizers: object) -> bool:
    if type(finalizers) is not list:
        return False
    good = _GOOD_QNAME.data
    return all(type(value) is str and (value in good or
                                       _good(_GOOD_QNAME, value, names.qualified_name_errors))
               for value in finalizers)


def _metadata_clean(meta: dict[str, Any], api_version: str, kind: str) -> bool:
    """True only when :func:`_metadata_errors` would find nothing: every field
    :func:`metadata_findings` reads is a plain string (list, map) that passed its check
    before. Anything else — a failure, a type the exact path treats specially, a missing
    name — answers False, and the exact path decides. Most objects of a fleet answer here."""
    name = meta.get("name")
    if type(name) is not str or not name:
        return False  # generateName, or no name: the exact path
    rule = names.name_rule(api_version, kind)
    if name not in (cache := _NAME_CACHES[rule]).data and not _good(cache, name, rule):
        return False
    namespace = meta.get("namespace")
    if namespace is not None and namespace != "" and (
            type(namespace) is not str or (namespace not in _GOOD_LABEL.data and
            not _good(_GOOD_LABEL, namespace, names.dns1123_label_errors))):
        return False
    labels, notes, finalizers = (meta.get("labels"), meta.get("annotations"),
                                 meta.get("finalizers"))
    return (labels is None or _labels_clean(labels)) and \
        (notes is None or _notes_clean(notes)) and \
        (finalizers is None or _finalizers_clean(finalizers))


# What a metadata program checks of one value (see _metadata_program).
(_NAME, _NAMESPACE, _LABELS, _LABEL_VALUE, _NOTES, _NOTE_VALUE, _FINALIZERS, _FINALIZER,
 _NAME_BY_KIND) = range(9)

_MetaProgram = tuple[tuple[tuple[int, int, Any], ...], int]
"""((value index, what to check, the name rule for ``_NAME``), the size of the fixed
annotations). ``_NAME_BY_KIND`` (index -1): the name, a value or not, checked by the rule of
the object's apiVersion and kind, which are values of the shape."""

_META_PROGRAMS: BoundedCache[str, _MetaProgram | None] = BoundedCache(
    "gen.emit.validate.metadata_programs", 4096)
"""Shape digest → what :func:`_metadata_clean` must still check of each object of the shape
once one passed (None: every object is checked whole)."""


def _metadata_program(data: Mapping[str, Any], shape: ShapeHoles) -> _MetaProgram | None:
    """What :func:`_metadata_clean` reads of the values of ``shape``, made from an object of
    it that passed (``data``): its fixed part passed, and is the same in every object of the
    shape. None where the metadata is a value, or a value sits where the check reads no
    whole string."""
    steps: list[tuple[int, int, Any]] = []
    by_kind = any(path[0] in ("apiVersion", "kind") for path in shape.paths)
    if by_kind:
        steps.append((-1, _NAME_BY_KIND, None))  # the name rule may change with the values
    meta = data["metadata"]
    notes = meta.get("annotations")
    fixed_notes = type(notes) is dict and ("metadata", "annotations") not in shape.paths
    size = sum(len(k) + len(v) for k, v in notes.items()) if fixed_notes else 0
    rule = names.name_rule(str(data.get("apiVersion", "")), str(data.get("kind", "")))
    for index, path in enumerate(shape.paths):
        if path[0] != "metadata" or (by_kind and path[1:] == ("name",)):
            continue
        if len(path) == 1:
            return None
        field = path[1]
        whole, item = _META_FIELDS.get(field, (None, None))  # type: ignore[arg-type]
        if whole is None:
            continue  # a field the check does not read (generateName, ownerReferences, ...)
        if len(path) == 2:
            steps.append((index, whole, rule))
        elif len(path) == 3 and item is not None:
            steps.append((index, item, rule))
            if item == _NOTE_VALUE:
                size -= len(notes[path[2]])  # counted for each object
        else:
            return None
    return tuple(steps), size


_META_FIELDS: dict[str, tuple[int, int | None]] = {
    "name": (_NAME, None), "namespace": (_NAMESPACE, None), "labels": (_LABELS, _LABEL_VALUE),
    "annotations": (_NOTES, _NOTE_VALUE), "finalizers": (_FINALIZERS, _FINALIZER)}
"""A metadata field → the check of a value that is the field, and of a value inside it."""


def _values_clean(program: _MetaProgram, holes: Holes, meta: Mapping[str, Any],
                  data: Mapping[str, Any]) -> bool:
    """True only when every value a metadata program checks passes as
    :func:`_metadata_clean` checks it (then the whole metadata passes). A label, annotation
    or finalizer collection that is one value passes once per JSON text."""
    steps, size = program
    values, texts = holes.values, holes.texts
    for index, check, rule in steps:
        if check == _NAME_BY_KIND:
            if not _string_clean(_NAME, meta.get("name"), names.name_rule(
                    str(data.get("apiVersion", "")), str(data.get("kind", "")))):
                return False
            continue
        value = values[index]
        if check == _NOTE_VALUE:
            if type(value) is not str:
                return False
            size += len(value)
        elif check in (_LABELS, _NOTES, _FINALIZERS):
            if value is not None and (check, texts[index]) not in _CLEAN_TEXTS.data:
                if not (_labels_clean(value) if check == _LABELS else
                        _notes_clean(value) if check == _NOTES else _finalizers_clean(value)):
                    return False
                _CLEAN_TEXTS.put((check, texts[index]), True)
        elif not _string_clean(check, value, rule):
            return False
    return size * 4 <= names.TOTAL_ANNOTATION_SIZE


def _string_clean(check: int, value: Any, rule: Callable[[str], list[str]]) -> bool:
    """A name (by ``rule``), namespace, label value or finalizer as :func:`_metadata_clean`
    checks it."""
    if check == _NAME:
        if type(value) is not str or not value:
            return False
        cache = _NAME_CACHES[rule]
        return value in cache.data or _good(cache, value, rule)
    if check == _NAMESPACE:
        return value is None or value == "" or (type(value) is str and (
            value in _GOOD_LABEL.data or _good(_GOOD_LABEL, value, names.dns1123_label_errors)))
    if check == _LABEL_VALUE:
        return type(value) is str and (value in _GOOD_VALUE.data or
                                       _good(_GOOD_VALUE, value, names.label_value_errors))
    return type(value) is str and (value in _GOOD_QNAME.data or  # a finalizer
                                   _good(_GOOD_QNAME, value, names.qualified_name_errors))


_CLEAN_TEXTS: BoundedCache[tuple[int, str], bool] = BoundedCache(
    "gen.emit.validate.clean_texts", 65536)
"""(``_LABELS``, ``_NOTES`` or ``_FINALIZERS``, the JSON text of a value) → it passed (only
passes are kept; the value is the text's parse)."""


def _strings(value: object) -> tuple[tuple[str, str], ...]:
    """A string map as a hashable key; empty when it is not one (the schema reports that)."""
    if not isinstance(value, Mapping):
        return ()
    items = tuple(value.items())
    return items if all(isinstance(k, str) and isinstance(v, str) for k, v in items) else ()


@memoize(maxsize=4096)
def _metadata_errors(api_version: str, kind: str, name: str, generate_name: bool,
                     namespace: str, labels: tuple[tuple[str, str], ...],
                     notes: tuple[tuple[str, str], ...],
                     finalizers: tuple[tuple[int, str], ...]) -> tuple[tuple[str, str], ...]:
    """(key path, message) of :func:`metadata_findings`, cached: the metadata of one kind of
    object repeats across a fleet."""
    found: list[tuple[str, str]] = []
    if name:
        found += [("metadata.name", f"{name!r}: {m}")
                  for m in names.name_rule(api_version, kind)(name)]
    elif not generate_name:
        found.append(("metadata.name", "name or generateName is required"))
    if namespace:
        found += [("metadata.namespace", f"{namespace!r}: {m}")
                  for m in names.dns1123_label_errors(namespace)]
    found += [(f"metadata.labels.{k}", m) for k, m in names.label_errors(dict(labels))]
    found += [(f"metadata.annotations.{k}" if k else "metadata.annotations", m)
              for k, m in names.annotation_errors(dict(notes))]
    for index, value in finalizers:
        found += [(f"metadata.finalizers[{index}]", f"{value!r}: {m}")
                  for m in names.qualified_name_errors(value)]
    return tuple(found)
