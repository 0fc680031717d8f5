"""The CRDs gen validates custom resources against: upstream's, bundled, and the user's own.

gen renders objects whose kinds are not built into Kubernetes: Argo CD ``Application``,
``AppProject`` and ``ApplicationSet``, Flux ``GitRepository``, ``OCIRepository``,
``HelmRepository``, ``HelmChart``, ``Kustomization`` and ``HelmRelease``, KEDA
``ScaledObject`` and ``TriggerAuthentication``, Prometheus Operator ``ServiceMonitor`` and
``PodMonitor``. Their CRDs are bundled in ``gen/data/crd-schemas/``, one
``<crd name>.json.gz`` each, taken from the upstream manifests at pinned releases: the
repository, path, tag and the SHA-256 of the upstream file are in each file's ``source``
(:func:`bundled_sources`; ``tools/refresh_crds.py`` refreshes them and lists the pins). Only
the CRD's names, scope and each version's ``openAPIV3Schema`` without descriptions are kept.

Beside them, ``gen/data/crd-schemas/json-schema/`` ships each bundled CRD version already
converted to JSON Schema (:func:`json_schema_files`, written by the same tool; a test checks
that converting again gives the same bytes), with each repeated subschema written once under
``$defs`` (:func:`~gen.emit.crd_convert.share_subschemas`), which jsonschema-rs compiles
once: 20× quicker for Argo CD's ApplicationSet. Converting the bundled CRDs took about 0.17 s in
every process that validated; reading the converted ones back takes a few ms, and only those
a render meets are read. :func:`json_schema` hands out a CRD version's JSON Schema: the
shipped one for a bundled CRD whose schema digest it records, else converted here, once per
process (user CRDs; the Kubernetes minors of a fleet share it).

A fleet may bring its own CRDs (:func:`load_crd_dir`): a ``crds/`` folder beside
``profiles/`` (or ``--crds DIR``) holding CRD YAML as ``kubectl get crd -o yaml`` prints it,
one CRD or a ``List`` of them per file. A user CRD for a kind gen also bundles wins: it is
what the user's cluster runs. :class:`CRDSet` is the lookup both make, picklable for render
workers.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gen.caches import BoundedCache, once
from gen.emit.crd_convert import (
    OBJECT_META_REF,
    CRDSchema,
    crd_schemas,
    read_crds,
    share_subschemas,
    to_json_schema,
)
from gen.emit.crd_rules import unevaluable_rules
from gen.errors import Finding, SourceLocation
from gen.fleet.loader import display_path, format_key_path
from gen.rules import finding

__all__ = [
    "CRDSet",
    "bundled",
    "bundled_sources",
    "custom_schema",
    "custom_schema_dir",
    "json_schema",
    "json_schema_files",
    "known_custom_kinds",
    "kubeconform_schema",
    "load_crd_dir",
    "schema_file_name",
    "write_kubeconform_schemas",
]

_SCHEMA_DIR = Path(__file__).resolve().parents[1] / "data" / "crd-schemas"
_JSON_SCHEMA_DIR = _SCHEMA_DIR / "json-schema"
_CRD_SUFFIXES = (".yaml", ".yml", ".json")


def custom_schema_dir() -> Path:
    """The folder holding the bundled upstream CRDs."""
    return _SCHEMA_DIR


@once
def _bundled() -> tuple[tuple[CRDSchema, ...], tuple[Mapping[str, str], ...]]:
    schemas: list[CRDSchema] = []
    sources: list[Mapping[str, str]] = []
    for path in sorted(_SCHEMA_DIR.glob("*.json.gz")):
        content: dict[str, Any] = json.loads(gzip.decompress(path.read_bytes()))
        source = content["source"]
        shown = f"{source['repository']} {source['path']}@{source['tag']}"
        found, problems = crd_schemas(content["crd"], shown)
        if problems:  # pragma: no cover - the bundled data is tested
            raise ValueError(f"{path.name}: {problems}")
        schemas += found
        sources.append({"crd": content["crd"]["metadata"]["name"], **source})
    return tuple(schemas), tuple(sources)


def bundled() -> tuple[CRDSchema, ...]:
    """Every served version of every bundled CRD."""
    return _bundled()[0]


def bundled_sources() -> tuple[Mapping[str, str], ...]:
    """Each bundled CRD's name and source: repository, path, tag, sha256 of the upstream file."""
    return _bundled()[1]


@dataclass(frozen=True)
class CRDSet:
    """The CRDs one render validates against: the user's (first) and the bundled ones."""

    user: tuple[CRDSchema, ...] = ()

    def lookup(self, api_version: str, kind: str) -> CRDSchema | None:
        """The CRD version that defines (apiVersion, kind), or ``None``."""
        for schema in self.user:
            if schema.api_version == api_version and schema.kind == kind:
                return schema
        return _bundled_index().get((api_version, kind))

    def digest(self) -> str:
        """What of this set changes a verdict: the user CRDs' digests (for caches)."""
        return ",".join(sorted(f"{s.api_version}/{s.kind}={s.digest}" for s in self.user))


@once
def _bundled_index() -> dict[tuple[str, str], CRDSchema]:
    return {(s.api_version, s.kind): s for s in bundled()}


_JSON_SCHEMAS: BoundedCache[tuple[str, str, str], dict[str, Any]] = BoundedCache(
    "gen.emit.crd_schemas.json_schemas", 256)
"""(apiVersion, kind, CRD schema digest) → its JSON Schema (shared: read-only)."""


def json_schema(crd: CRDSchema) -> dict[str, Any]:
    """The JSON Schema of one CRD version (:func:`~gen.emit.crd_convert.to_json_schema` of
    it), shared: treat it as read-only. A bundled CRD's is read from the converted file
    shipped beside it when that file records the same schema digest (its repeated
    subschemas written once: the same constraints); any other is converted once per process
    (per digest; without a digest, on every call)."""
    if not crd.digest:
        return to_json_schema(crd.schema, crd.api_version, crd.kind)
    key = (crd.api_version, crd.kind, crd.digest)
    found = _JSON_SCHEMAS.data.get(key)
    if found is None:
        found = _JSON_SCHEMAS.put(key, _shipped(crd) or
                                  to_json_schema(crd.schema, crd.api_version, crd.kind))
    return found


def _shipped(crd: CRDSchema) -> dict[str, Any] | None:
    """The shipped JSON Schema of a bundled CRD version, or ``None`` (not bundled, or the file
    is missing or records another schema)."""
    if _bundled_index().get((crd.api_version, crd.kind)) is None:
        return None
    path = _JSON_SCHEMA_DIR / f"{schema_file_name(crd.api_version, crd.kind)}.gz"
    try:
        content = json.loads(gzip.decompress(path.read_bytes()))
    except (OSError, ValueError):  # pragma: no cover - the shipped data is tested
        return None
    if not isinstance(content, dict) or content.get("digest") != crd.digest:
        return None  # pragma: no cover - the shipped data is tested
    schema: dict[str, Any] = content["schema"]
    return schema


def json_schema_files(bundle: Mapping[str, bytes]) -> dict[str, bytes]:
    """The shipped ``json-schema/`` files (name → bytes) of the bundled CRD files ``bundle``
    (name → bytes, as in ``gen/data/crd-schemas/``): each served version's JSON Schema, its
    repeated subschemas written once (:func:`~gen.emit.crd_convert.share_subschemas`: Argo
    CD's ApplicationSet compiles in 3 ms instead of 70), with the digest of the CRD schema it
    was converted from; gzip without a time stamp."""
    out: dict[str, bytes] = {}
    for name in sorted(bundle):
        content = json.loads(gzip.decompress(bundle[name]))
        found, problems = crd_schemas(content["crd"], name)
        if problems:
            raise ValueError(f"{name}: {problems}")
        for crd in found:
            schema = share_subschemas(to_json_schema(crd.schema, crd.api_version, crd.kind))
            text = json.dumps(
                {"digest": crd.digest, "schema": schema},
                sort_keys=True, separators=(",", ":"), ensure_ascii=True)
            out[f"{schema_file_name(crd.api_version, crd.kind)}.gz"] = gzip.compress(
                text.encode("ascii"), 9, mtime=0)
    return out


def custom_schema(api_version: str, kind: str) -> dict[str, Any] | None:
    """The JSON Schema of a bundled custom resource kind, or ``None`` (shared: read-only)."""
    crd = _bundled_index().get((api_version, kind))
    return None if crd is None else json_schema(crd)


def known_custom_kinds() -> tuple[tuple[str, str], ...]:
    """Every (apiVersion, kind) gen bundles a CRD for, sorted."""
    return tuple(sorted(_bundled_index()))


def schema_file_name(api_version: str, kind: str) -> str:
    """The file name kubeconform's ``{{ .ResourceKind }}{{ .KindSuffix }}.json`` gives a kind.

    ``argoproj.io/v1alpha1``, ``Application`` → ``application-argoproj-v1alpha1.json``;
    a core kind (``v1``, ``Service``) → ``service-v1.json``.
    """
    group, _, version = api_version.rpartition("/")
    suffix = f"-{group.split('.')[0].lower()}-{version.lower()}" if group else f"-{version.lower()}"
    return f"{kind.lower()}{suffix}.json"


def _with_meta(node: Any, meta: Mapping[str, Any]) -> Any:
    if isinstance(node, list):
        return [_with_meta(v, meta) for v in node]
    if isinstance(node, dict):
        if node.get("$ref") == OBJECT_META_REF:
            return {**{k: v for k, v in node.items() if k != "$ref"}, **meta}
        return {k: _with_meta(v, meta) for k, v in node.items()}
    return node


_TYPE_META = ("apiVersion", "kind", "metadata")
_VALUE_JUNCTORS = ("allOf", "anyOf", "oneOf", "not")


def _null_ok(converted: dict[str, Any]) -> dict[str, Any]:
    """``converted``, or ``null``: a schema kubeconform reads as the API server treats a null
    it drops (or replaces with the field's default) before it validates. ``null`` joins the
    node's types and enum; a node with junctors (which a null could fail) is wrapped in
    ``if null … else``."""
    if any(key in converted for key in _VALUE_JUNCTORS):
        return {"if": {"type": "null"}, "else": converted}
    out = dict(converted)
    types = out.get("type")
    if isinstance(types, str) and types != "null":
        out["type"] = [types, "null"]
    elif isinstance(types, list) and "null" not in types:
        out["type"] = [*types, "null"]
    if isinstance(out.get("enum"), list) and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def _admitted(node: Mapping[str, Any], converted: dict[str, Any], top: bool = False
              ) -> dict[str, Any]:
    """The JSON Schema ``converted`` (:func:`~gen.emit.crd_convert.to_json_schema` of the
    structural schema ``node``) as it applies to an object the API server has prepared:
    a field with a ``default`` is never missing, so it is not required, and a ``null`` in an
    object's field is dropped or defaulted, so it is accepted wherever the field may be
    absent (apiextensions-apiserver pkg/apiserver/schema/defaulting/prunenulls.go and
    algorithm.go@v0.36.3). A null list item is kept (and fails) unless the items have a
    default. gen's embedded validator applies the same steps to a copy of the object
    (:mod:`gen.emit.crd_rules`); kubeconform validates the object as written."""
    out = dict(converted)
    props = node.get("properties")
    props = props if isinstance(props, Mapping) else {}
    defaulted = {k for k, v in props.items() if isinstance(v, Mapping) and "default" in v}
    if defaulted:
        for key in ("required", *("allOf", "anyOf", "oneOf")):
            if key == "required" and isinstance(out.get(key), list):
                out[key] = [r for r in out[key] if r not in defaulted]
            elif isinstance(out.get(key), list):  # a junctor's required, at this node
                out[key] = [{**sub, "required": [r for r in sub["required"]
                                                 if r not in defaulted]}
                            if isinstance(sub, dict) and isinstance(sub.get("required"), list)
                            else sub for sub in out[key]]
    required = set(out.get("required", ()))
    if isinstance(out.get("properties"), dict):
        out["properties"] = dict(out["properties"])
        for key, sub in props.items():
            if (top and key in _TYPE_META) or not isinstance(sub, Mapping) or \
                    not isinstance(out["properties"].get(key), dict):
                continue
            child = _admitted(sub, out["properties"][key])
            out["properties"][key] = child if key in required else _null_ok(child)
    extra = node.get("additionalProperties")
    if isinstance(extra, Mapping) and isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = _null_ok(_admitted(extra, out["additionalProperties"]))
    items = node.get("items")
    if isinstance(items, Mapping) and isinstance(out.get("items"), dict):
        child = _admitted(items, out["items"])
        out["items"] = _null_ok(child) if "default" in items else child
    return out


_KUBECONFORM: BoundedCache[tuple[str, str, str], dict[str, Any]] = BoundedCache(
    "gen.emit.crd_schemas.kubeconform_schemas", 256)
"""(apiVersion, kind, CRD schema digest) → :func:`kubeconform_schema` (shared: read-only)."""


def kubeconform_schema(crd: CRDSchema) -> dict[str, Any]:
    """The JSON Schema kubeconform reads for one CRD version: :func:`to_json_schema` of it,
    :func:`_admitted` (defaults and nulls as the API server treats them), its repeated
    subschemas written once (:func:`share_subschemas`: kubeconform compiled Argo CD's
    ApplicationSet in 4 s inlined, in 0.2 s shared), ``metadata`` still gen's
    ObjectMeta reference. Cached per schema digest (shared: read-only)."""
    key = (crd.api_version, crd.kind, crd.digest)
    found = _KUBECONFORM.data.get(key) if crd.digest else None
    if found is None:
        found = share_subschemas(_admitted(
            crd.schema, to_json_schema(crd.schema, crd.api_version, crd.kind), top=True))
        if crd.digest:
            _KUBECONFORM.put(key, found)
    return found


def write_kubeconform_schemas(folder: Path, crds: CRDSet | None = None,
                              object_meta: Mapping[str, Any] | None = None,
                              kinds: Iterable[tuple[str, str]] | None = None) -> str:
    """Write every CRD's JSON Schema for kubeconform (:func:`kubeconform_schema`; user CRDs
    over bundled ones; only those of the (apiVersion, kind) pairs ``kinds`` when given) into
    ``folder`` as kubeconform names them; return the ``-schema-location`` template that
    reads them.

    ``metadata`` is ``object_meta``: a ``$ref`` into the schema's own ``$defs`` and the
    definitions to add there (the cluster's version's ObjectMeta,
    :func:`gen.emit.kubeconform.object_meta`), as the embedded validator checks it; without
    it, any object (kubeconform cannot follow gen's own reference, whose definitions live in
    the embedded validator's registry)."""
    crds = crds or CRDSet()
    meta = {"$ref": object_meta["$ref"]} if object_meta else {"type": "object"}
    definitions = dict(object_meta.get("$defs", {})) if object_meta else {}
    chosen = {(s.api_version, s.kind): s for s in (*bundled(), *crds.user)}
    wanted = None if kinds is None else set(kinds)
    for (api_version, kind), crd in sorted(chosen.items()):
        if wanted is not None and (api_version, kind) not in wanted:
            continue
        schema = _with_meta(kubeconform_schema(crd), meta)
        if definitions:
            schema["$defs"] = {**schema.get("$defs", {}), **definitions}
        (folder / schema_file_name(api_version, kind)).write_text(
            json.dumps(schema, sort_keys=True), encoding="utf-8")
    return f"{folder.as_posix()}/{{{{ .ResourceKind }}}}{{{{ .KindSuffix }}}}.json"


def _crd_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*")
                  if p.suffix in _CRD_SUFFIXES and p.is_file() and not p.name.startswith("."))


def load_crd_dir(folder: Path | None, base: Path | None = None) -> tuple[CRDSet, list[Finding]]:
    """The user CRDs of ``folder`` (none when it is ``None`` or absent) and a finding for each
    file or document gen cannot use (``GEN023``), located at it. Two CRDs defining one
    (apiVersion, kind) are an error at the second. A rule gen cannot compile is a
    ``GEN025`` warning at its CRD."""
    if folder is None or not folder.is_dir():
        return CRDSet(), []
    schemas: list[CRDSchema] = []
    findings: list[Finding] = []
    for path in _crd_files(folder):
        shown = display_path(path, base)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            findings.append(finding("GEN023", f"cannot read the CRD file: {err}",
                                    SourceLocation(shown)))
            continue
        found, problems = read_crds(text, shown)
        schemas += found
        findings += problems
        findings += [_unevaluable(schema, *rule) for schema in found
                     for rule in unevaluable_rules(schema.schema)]
    return CRDSet(_unique(schemas, findings)), findings


def _unevaluable(schema: CRDSchema, path: tuple[str | int, ...], rule: str,
                 why: str) -> Finding:
    version = schema.api_version.rpartition("/")[2]
    return finding(
        "GEN025", f"gen cannot evaluate the rule {rule!r} of {schema.kind} {version}: {why}",
        schema.location, key_path=format_key_path(["spec", "versions", version, "schema",
                                                   "openAPIV3Schema", *path]),
        hint="objects of this kind are not checked against this rule; the API server checks "
             "them when they are applied")


def _unique(schemas: Iterable[CRDSchema], findings: list[Finding]) -> tuple[CRDSchema, ...]:
    seen: dict[tuple[str, str], CRDSchema] = {}
    for schema in schemas:
        key = (schema.api_version, schema.kind)
        if key in seen:
            findings.append(finding(
                "GEN023", f"a second CRD for {schema.kind} {schema.api_version} (the first is "
                f"{seen[key].location or seen[key].source})", schema.location,
                hint="keep one CRD per kind in the CRD folder"))
            continue
        seen[key] = schema
    return tuple(seen.values())

