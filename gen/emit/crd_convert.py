"""CustomResourceDefinitions → JSON Schemas that judge an object as the API server does.

A CRD's ``openAPIV3Schema`` is a *structural* schema (apiextensions-apiserver
``pkg/apiserver/schema``). It is not a JSON Schema: fields a schema does not declare are
unknown (pruned, or refused under strict field validation, as ``kubectl`` and server-side
apply ask for), ``nullable`` decides whether ``null`` is a value, ``x-kubernetes-int-or-string``
is a type, a ``default`` fills an absent field before validation, and rules under
``x-kubernetes-validations`` are CEL. :func:`to_json_schema` writes the draft 2020-12 schema that
holds the same constraints, the way kubeconform's ``openapi2jsonschema.py`` does, but faithful
to the structural rules where that script is loose:

* every object node without ``additionalProperties`` or
  ``x-kubernetes-preserve-unknown-fields: true`` gets ``additionalProperties: false``, the root
  included, and an object node with neither properties nor additionalProperties accepts no
  field at all (Kubernetes prunes every field of ``{type: object}``);
* ``nullable: true`` adds ``"null"`` to the type (and to an ``enum``); a non-nullable ``null``
  field is dropped by the API server before validation (``defaulting/prunenulls.go``), which
  :mod:`gen.emit.crd_rules` does to a copy of the object before this schema sees it;
* ``x-kubernetes-int-or-string: true`` is ``type: [integer, string]``;
* OpenAPI v3.0's boolean ``exclusiveMinimum``/``exclusiveMaximum`` become 2020-12's numbers;
* ``allOf``/``anyOf``/``oneOf``/``not`` hold value validations only: their ``properties``
  constrain declared fields and never close an object;
* ``metadata`` of the root and of every ``x-kubernetes-embedded-resource`` is Kubernetes'
  ``ObjectMeta``, by reference into the definitions of the cluster's version, strict;
* ``x-kubernetes-list-type: set`` is ``uniqueItems`` (``map`` keys: :mod:`gen.emit.crd_rules`);
* ``format`` is not checked (gen checks no ``format``, built-in kinds neither), and
  ``default``, ``example`` and descriptions are annotations.

:func:`read_crds` reads CRD YAML as ``kubectl get crd -o yaml`` prints it (one
CustomResourceDefinition per document, or a ``List`` of them), with a located finding for
each document that is not one. :func:`compact_crd` is what the bundled data keeps of an
upstream CRD (``tools/refresh_crds.py``).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from gen.errors import Finding, SourceLocation
from gen.fleet.loader import Document, format_key_path, parse_text
from gen.rules import finding

__all__ = [
    "OBJECT_META_REF",
    "CRDSchema",
    "compact_crd",
    "crd_schemas",
    "inline_subschemas",
    "read_crds",
    "share_subschemas",
    "to_json_schema",
]

OBJECT_META_REF = (
    "https://kubernetes.io/api/_definitions.json"
    "#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
)
"""Where ObjectMeta is in the definitions registry of :mod:`gen.emit.validate`."""

RULE = "GEN023"

# Value validations copied as they are (OpenAPI v3.0 and JSON Schema spell them alike).
_COPIED = ("maximum", "minimum", "multipleOf", "maxLength", "minLength", "pattern", "maxItems",
           "minItems", "uniqueItems", "maxProperties", "minProperties", "required")
_JUNCTORS = ("allOf", "anyOf", "oneOf")


@dataclass(frozen=True)
class CRDSchema:
    """One served version of a CRD: the kind it defines and its structural schema."""

    api_version: str
    kind: str
    namespaced: bool
    schema: Mapping[str, Any] = field(repr=False, compare=False)
    """The version's ``openAPIV3Schema`` (shared: treat as read-only)."""
    source: str
    """Where the CRD comes from: ``repository path@tag`` for the bundled ones, else the file."""
    location: SourceLocation | None = None
    """The CRD document (user CRDs): findings about the CRD itself point here."""
    digest: str = ""
    """SHA-256 of the schema's canonical JSON: the identity caches key on."""


def _digest(schema: Mapping[str, Any]) -> str:
    text = json.dumps(schema, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def crd_schemas(crd: Mapping[str, Any], source: str,
                location: SourceLocation | None = None) -> tuple[list[CRDSchema], list[str]]:
    """The served versions of one CRD object, and what makes it unusable (empty: nothing)."""
    problems: list[str] = []
    if crd.get("kind") != "CustomResourceDefinition" or \
            crd.get("apiVersion") != "apiextensions.k8s.io/v1":
        return [], [f"not an apiextensions.k8s.io/v1 CustomResourceDefinition (apiVersion "
                    f"{crd.get('apiVersion')!r}, kind {crd.get('kind')!r})"]
    spec = crd.get("spec")
    spec = spec if isinstance(spec, Mapping) else {}
    group, names, versions = spec.get("group"), spec.get("names"), spec.get("versions")
    kind = names.get("kind") if isinstance(names, Mapping) else None
    if not isinstance(group, str) or not group or not isinstance(kind, str) or not kind:
        return [], ["spec.group and spec.names.kind must be non-empty strings"]
    if not isinstance(versions, list) or not versions:
        return [], ["spec.versions must be a non-empty list"]
    found = []
    for index, version in enumerate(versions):
        if not isinstance(version, Mapping) or not isinstance(version.get("name"), str):
            problems.append(f"spec.versions[{index}] has no name")
            continue
        if version.get("served") is False:
            continue
        schema = version.get("schema")
        open_api = schema.get("openAPIV3Schema") if isinstance(schema, Mapping) else None
        if not isinstance(open_api, Mapping):
            problems.append(f"spec.versions[{index}] ({version['name']}) has no "
                            "schema.openAPIV3Schema: gen cannot validate its objects")
            continue
        found.append(CRDSchema(
            f"{group}/{version['name']}", kind, spec.get("scope") != "Cluster", open_api,
            source, location, _digest(open_api)))
    return found, problems


def _crd_documents(doc: Document) -> Iterator[tuple[Any, SourceLocation, str]]:
    """(CRD object, its location, its key path) of one document: the document itself, or
    each item of a ``List``."""
    data = doc.data
    if isinstance(data, Mapping) and data.get("kind") == "List" and "items" in data:
        items = data["items"]
        for index, item in enumerate(items if isinstance(items, list) else []):
            where, path = doc.locate(("items", index))
            yield item, where, format_key_path(path)
        return
    yield data, doc.location, ""


def read_crds(text: str, path: str) -> tuple[list[CRDSchema], list[Finding]]:
    """The CRD versions in one file's text (``path`` as shown), and a located finding for each
    document that is not a usable CRD."""
    documents, findings = parse_text(text, path)
    findings = [finding(RULE, f"cannot read the CRD file: {f.message}", f.location)
                for f in findings]
    schemas: list[CRDSchema] = []
    for doc in documents:
        for crd, where, key_path in _crd_documents(doc):
            if not isinstance(crd, Mapping):
                findings.append(finding(RULE, "not a CustomResourceDefinition (not a mapping)",
                                        where, key_path=key_path))
                continue
            found, problems = crd_schemas(crd, path, where)
            schemas += found
            findings += [finding(RULE, p, where, key_path=key_path,
                                 hint="put CRDs here as `kubectl get crd NAME -o yaml` prints them")
                         for p in problems]
    return schemas, findings


# ------------------------------------------------------------------------------ conversion


def _types(node: Mapping[str, Any]) -> list[str]:
    if node.get("x-kubernetes-int-or-string") is True:
        types = ["integer", "string"]
    elif isinstance(node.get("type"), str):
        types = [node["type"]]
    else:
        return []
    return [*types, "null"] if node.get("nullable") is True else types


def _scalars(node: Mapping[str, Any], out: dict[str, Any]) -> None:
    """Type, bounds, lengths, patterns and enum of one node."""
    types = _types(node)
    if types:
        out["type"] = types[0] if len(types) == 1 else types
    for key in _COPIED:
        if key in node:
            out[key] = node[key]
    for bound in ("Minimum", "Maximum"):
        if node.get(f"exclusive{bound}") is True and bound.lower() in out:
            out[f"exclusive{bound}"] = out.pop(bound.lower())
    if "enum" in node:
        enum = list(node["enum"])
        out["enum"] = [*enum, None] if node.get("nullable") is True and None not in enum else enum


def _values(node: Mapping[str, Any], structural: bool) -> dict[str, Any]:
    """The JSON Schema of one node; ``structural`` is False inside a junctor."""
    out: dict[str, Any] = {}
    _scalars(node, out)
    if isinstance(node.get("properties"), Mapping):
        out["properties"] = {k: _values(v, structural) for k, v in node["properties"].items()}
    additional = node.get("additionalProperties")
    if isinstance(additional, Mapping):
        out["additionalProperties"] = _values(additional, structural)
    elif isinstance(additional, bool):
        out["additionalProperties"] = additional
    if isinstance(node.get("items"), Mapping):
        out["items"] = _values(node["items"], structural)
    if node.get("x-kubernetes-list-type") == "set":
        out["uniqueItems"] = True
    for junctor in _JUNCTORS:
        if isinstance(node.get(junctor), list):
            out[junctor] = [_values(v, False) for v in node[junctor]]
    if isinstance(node.get("not"), Mapping):
        out["not"] = _values(node["not"], False)
    if structural:
        _close(node, out)
    return out


def _close(node: Mapping[str, Any], out: dict[str, Any]) -> None:
    """Structural rules of one object node: embedded resources and strictness."""
    is_object = node.get("type") == "object" or "properties" in node
    if not is_object:
        return
    if node.get("x-kubernetes-embedded-resource") is True:
        props = out.setdefault("properties", {})
        props.setdefault("apiVersion", {"type": "string", "minLength": 1})
        props.setdefault("kind", {"type": "string", "minLength": 1})
        props["metadata"] = {"$ref": OBJECT_META_REF}
        out["required"] = sorted({*out.get("required", ()), "apiVersion", "kind"})
    if "additionalProperties" not in node and \
            node.get("x-kubernetes-preserve-unknown-fields") is not True:
        out["additionalProperties"] = False


def to_json_schema(schema: Mapping[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    """The draft 2020-12 JSON Schema of a CRD version's objects (see the module docstring)."""
    out = _values(schema, True)
    props = out.setdefault("properties", {})
    props["apiVersion"] = {"const": api_version}
    props["kind"] = {"const": kind}
    declared = schema.get("properties", {}).get("metadata")
    props["metadata"] = {"$ref": OBJECT_META_REF}
    if isinstance(declared, Mapping) and (set(declared) - {"type"}):
        # A CRD may constrain metadata.name and .generateName; ObjectMeta stays the shape.
        props["metadata"] = {"allOf": [{"$ref": OBJECT_META_REF}, _values(declared, False)]}
    out["type"] = "object"
    out["required"] = sorted({*out.get("required", ()), "apiVersion", "kind", "metadata"})
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": f"{kind} ({api_version})", **out}


# ------------------------------------------------------------------- shared subschemas

_SCHEMA_MAPS = ("properties", "patternProperties")
_SCHEMA_ONE = ("items", "additionalProperties", "not")
_SHARED_PREFIX = "#/$defs/gen-shared-"
SHARE_MIN_CHARS = 256
"""The smallest subschema (characters of its canonical JSON) :func:`share_subschemas` moves
into ``$defs``: smaller ones cost more as a reference than as a copy."""


def _canonical(node: Any, texts: dict[int, str], schemas: list[tuple[Any, str]],
               at_schema: bool) -> str:
    """The canonical JSON of ``node`` (``json.dumps`` with sorted keys and no spaces), built
    from its children's; every subschema met at a schema position is listed in ``schemas``."""
    if isinstance(node, dict):
        parts = []
        for key in sorted(node):
            value = node[key]
            if at_schema and key in _SCHEMA_MAPS and isinstance(value, dict):
                inner = ",".join(f"{json.dumps(k)}:{_canonical(v, texts, schemas, True)}"
                                 for k, v in sorted(value.items()))
                text = f"{{{inner}}}"
            elif at_schema and key in _JUNCTORS and isinstance(value, list):
                text = f"[{','.join(_canonical(v, texts, schemas, True) for v in value)}]"
            else:
                text = _canonical(value, texts, schemas,
                                  at_schema and key in _SCHEMA_ONE and isinstance(value, dict))
            parts.append(f"{json.dumps(key)}:{text}")
        found = f"{{{','.join(parts)}}}"
        if at_schema:
            texts[id(node)] = found
            schemas.append((node, found))
        return found
    if isinstance(node, list):
        return f"[{','.join(_canonical(v, texts, schemas, False) for v in node)}]"
    return json.dumps(node)


def share_subschemas(schema: Mapping[str, Any],
                     min_chars: int = SHARE_MIN_CHARS) -> dict[str, Any]:
    """``schema`` with each subschema that occurs more than once (and has at least
    ``min_chars`` characters) written once, under ``$defs``, and referred to elsewhere.

    The same constraints, compiled far quicker: Argo CD's ApplicationSet repeats its
    generator schemas inside each matrix and merge generator (about 9,800 schema nodes,
    94 ms to compile with jsonschema-rs; 10 ms shared). A subschema means the same wherever
    it stands (these schemas hold no ``$id``, relative ``$ref``, ``$dynamicRef`` or
    ``unevaluated*``), and :func:`inline_subschemas` gives ``schema`` back exactly. Only
    schema positions are shared (``properties`` values, ``items``, ``additionalProperties``,
    junctor branches, ``not``), never ``enum``, ``const`` or ``default`` values."""
    if "$defs" in schema:
        return dict(schema)  # not a schema of to_json_schema: left as it is
    texts: dict[int, str] = {}
    schemas: list[tuple[Any, str]] = []
    _canonical(schema, texts, schemas, True)
    counts: dict[str, int] = {}
    for node, text in schemas:
        if node is not schema:
            counts[text] = counts.get(text, 0) + 1
    names = {text: f"{n}" for n, text in enumerate(
        sorted(t for t, c in counts.items() if c > 1 and len(t) >= min_chars))}
    defs: dict[str, Any] = {}
    out = _shared_children(schema, _Sharing(texts, names, defs))
    if defs:
        out["$defs"] = {f"gen-shared-{name}": value for name, value in defs.items()}
    return out


@dataclass
class _Sharing:
    texts: dict[int, str]
    """id of a subschema → its canonical JSON"""
    names: dict[str, str]
    """canonical JSON of a shared subschema → its name"""
    defs: dict[str, Any]
    """name → the shared subschema, in the order of first use"""


def _shared(node: Any, sharing: _Sharing) -> Any:
    """One subschema of :func:`share_subschemas`: a reference when it is shared."""
    if not isinstance(node, dict):
        return node
    name = sharing.names.get(sharing.texts.get(id(node), ""))
    if name is None:
        return _shared_children(node, sharing)
    if name not in sharing.defs:
        sharing.defs[name] = {}  # placeholder: keeps the order of first use
        sharing.defs[name] = _shared_children(node, sharing)
    return {"$ref": f"{_SHARED_PREFIX}{name}"}


def _shared_children(node: Mapping[str, Any], sharing: _Sharing) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {k: _shared(v, sharing) for k, v in value.items()}
        elif key in _JUNCTORS and isinstance(value, list):
            out[key] = [_shared(v, sharing) for v in value]
        elif key in _SCHEMA_ONE and isinstance(value, dict):
            out[key] = _shared(value, sharing)
        else:
            out[key] = value
    return out


def inline_subschemas(schema: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`share_subschemas` undone: every shared reference replaced by its subschema."""
    defs = schema.get("$defs", {})
    prefix = _SHARED_PREFIX.removeprefix("#/$defs/")
    shared = {k: v for k, v in defs.items() if k.startswith(prefix)} \
        if isinstance(defs, Mapping) else {}

    def expand(node: Any) -> Any:
        if isinstance(node, list):
            return [expand(v) for v in node]
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if len(node) == 1 and isinstance(ref, str) and ref.startswith(_SHARED_PREFIX):
            return expand(shared[ref.removeprefix("#/$defs/")])
        return {k: expand(v) for k, v in node.items()}

    out = {k: expand(v) for k, v in schema.items() if k != "$defs" or not shared}
    if isinstance(defs, Mapping) and shared and len(shared) != len(defs):
        out["$defs"] = {k: v for k, v in defs.items() if k not in shared}
    return out


# ------------------------------------------------------------------------- bundled data

_ANNOTATIONS = ("description", "example", "externalDocs")


def _strip(node: Any) -> Any:
    """A schema without its annotations (``description`` and the like); a *property* named
    ``description`` is kept, it is a field."""
    if isinstance(node, list):
        return [_strip(v) for v in node]
    if not isinstance(node, Mapping):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _ANNOTATIONS:
            continue
        if key in ("properties", "patternProperties", "definitions"):
            out[key] = {k: _strip(v) for k, v in value.items()}
        elif key in ("default", "enum"):
            out[key] = value  # values, not schemas
        else:
            out[key] = _strip(value)
    return out


APPROVAL_ANNOTATION = "api-approved.kubernetes.io"


def compact_crd(crd: Mapping[str, Any]) -> dict[str, Any]:
    """What gen keeps of an upstream CRD: its names, scope and each version's name, served flag
    and ``openAPIV3Schema`` without annotations (a fraction of the size; same verdicts), and
    the ``api-approved.kubernetes.io`` annotation of a group under ``k8s.io`` (the API server
    installs such a CRD only with it: kubernetes/enhancements#1111)."""
    spec = crd["spec"]
    names = {k: spec["names"][k] for k in ("kind", "plural", "singular", "listKind")
             if k in spec["names"]}
    metadata: dict[str, Any] = {"name": crd["metadata"]["name"]}
    approved = (crd["metadata"].get("annotations") or {}).get(APPROVAL_ANNOTATION)
    if approved is not None:
        metadata["annotations"] = {APPROVAL_ANNOTATION: approved}
    return {
        "apiVersion": crd["apiVersion"],
        "kind": crd["kind"],
        "metadata": metadata,
        "spec": {
            "group": spec["group"],
            "names": names,
            "scope": spec["scope"],
            "versions": [
                {"name": v["name"], "served": v.get("served", True),
                 "storage": v.get("storage", False),
                 "schema": {"openAPIV3Schema": _strip(v["schema"]["openAPIV3Schema"])}}
                for v in spec["versions"] if "schema" in v
            ],
        },
    }
