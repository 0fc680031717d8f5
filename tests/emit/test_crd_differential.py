"""gen's validator against the upstream CRDs judged independently, on mutated custom resources.

The objects are every custom resource the example fleet renders plus a realistic example of
each other bundled kind (:mod:`tests.emit.mutants` makes them and their mutants, and reads
the bundled CRD data files). Each is mutated exhaustively at every node its CRD describes:
an unknown field at every depth, every field dropped (the required ones among them), every
optional field added, every value given other types, strings outside their enum, pattern and
length, numbers outside their bounds, lists past their item limits or with duplicates,
metadata with bad names, labels and annotations, and the fields the CRD's CEL rules read set
to values that break them.

The reference is written here from the Kubernetes rules, sharing no code with gen's validator
(the CRDs are read straight from the bundled data files): a structural-schema interpreter
(:func:`_structural`), its own null pruning and defaulting, its own CEL evaluation of
``x-kubernetes-validations`` on cel-expr-python, its own metadata rules (apimachinery's
regular expressions), and, as a second opinion on the JSON Schema gen converts to, the
pure-Python ``jsonschema``. The test fails on any object the reference rejects and gen
accepts (gen would let through what the API server refuses) and on any the reference
accepts and gen rejects (gen would refuse a valid upstream object).
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from gen.emit.crd_schemas import custom_schema
from gen.emit.validate import SchemaValidator, _schema_root
from gen.errors import SourceLocation
from tests.emit.mutants import canon as _canon
from tests.emit.mutants import child as _child
from tests.emit.mutants import crd_mutants as _mutants
from tests.emit.mutants import crd_objects as _objects
from tests.emit.mutants import upstream_crds as _upstream

Path_ = tuple[Any, ...]
WHERE = SourceLocation("out/x.yaml")

# ------------------------------------------------------------------------ the reference


LIST_MAP = "list-map-keys"
"""First element of the error path of a duplicate key in an ``x-kubernetes-list-type: map``
list."""


def _is_int(v: Any) -> bool:
    return (type(v) is int) or (type(v) is float and v.is_integer())


_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": _is_int,
    "number": lambda v: type(v) in (int, float),
    "boolean": lambda v: type(v) is bool,
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
}


def _prepare(v: Any, s: dict[str, Any] | None) -> Any:
    """prunenulls.go then algorithm.go: drop non-nullable undefaulted nulls, fill defaults."""
    if s is None:
        return v
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            c = _child(s, k)
            if x is None and c is not None and not c.get("nullable"):
                if "default" in c:
                    out[k] = _prepare(copy.deepcopy(c["default"]), c)
                continue
            out[k] = _prepare(x, c)
        for k, c in s.get("properties", {}).items():
            if k not in out and "default" in c:
                out[k] = _prepare(copy.deepcopy(c["default"]), c)
        return out
    if isinstance(v, list):
        return [_prepare(x, _child(s, 0)) for x in v]
    return v


def _structural(v: Any, s: dict[str, Any], path: Path_, errs: list[Path_],
                junctor: bool = False) -> None:
    """Kubernetes' validation of ``v`` against structural schema ``s`` (errors → ``errs``)."""
    if v is None:
        if not s.get("nullable") and (s.get("type") or s.get("x-kubernetes-int-or-string")):
            errs.append(path)
        return
    if s.get("x-kubernetes-int-or-string"):
        if not (isinstance(v, str) or _is_int(v)) or type(v) is bool:
            errs.append(path)
            return
    elif "type" in s and not _TYPES[s["type"]](v):
        errs.append(path)
        return
    if "enum" in s and _canon(v) not in {_canon(e) for e in s["enum"]}:
        errs.append(path)
    if isinstance(v, str):
        if len(v) > s.get("maxLength", len(v)) or len(v) < s.get("minLength", 0):
            errs.append(path)
        if "pattern" in s and not re.search(s["pattern"], v):
            errs.append(path)
    if type(v) in (int, float):
        low, high = s.get("minimum"), s.get("maximum")
        if low is not None and (v < low or (s.get("exclusiveMinimum") and v == low)):
            errs.append(path)
        if high is not None and (v > high or (s.get("exclusiveMaximum") and v == high)):
            errs.append(path)
    if isinstance(v, list):
        if len(v) > s.get("maxItems", len(v)) or len(v) < s.get("minItems", 0):
            errs.append(path)
        items = [_canon(x) for x in v]
        if (s.get("uniqueItems") or s.get("x-kubernetes-list-type") == "set") and \
                len(set(items)) < len(items):
            errs.append(path)
        if s.get("x-kubernetes-list-type") == "map":
            keys = [_canon([x.get(k) for k in s["x-kubernetes-list-map-keys"]])
                    for x in v if isinstance(x, dict)]
            if len(set(keys)) < len(keys):
                # Map keys are gen.emit.crd_rules' (JSON Schema cannot say them): marked so
                # that the converted schema's second opinion leaves them out.
                errs.append((LIST_MAP, *path))
        if isinstance(s.get("items"), dict):
            for i, x in enumerate(v):
                _structural(x, s["items"], (*path, i), errs, junctor)
    if isinstance(v, dict):
        if any(k not in v for k in s.get("required", ())):
            errs.append(path)
        if len(v) > s.get("maxProperties", len(v)) or len(v) < s.get("minProperties", 0):
            errs.append(path)
        props = s.get("properties", {})
        extra = s.get("additionalProperties")
        open_ = s.get("x-kubernetes-preserve-unknown-fields") or extra is True or junctor
        for k, x in v.items():
            if k in props:
                _structural(x, props[k], (*path, k), errs, junctor)
            elif isinstance(extra, dict):
                _structural(x, extra, (*path, k), errs, junctor)
            elif not open_:
                errs.append((*path, k))
    for sub in s.get("allOf", ()):
        _structural(v, sub, path, errs, True)
    if "anyOf" in s and not any(_passes(v, sub) for sub in s["anyOf"]):
        errs.append(path)
    if "oneOf" in s and sum(_passes(v, sub) for sub in s["oneOf"]) != 1:
        errs.append(path)
    if "not" in s and _passes(v, s["not"]):
        errs.append(path)


def _passes(v: Any, s: dict[str, Any]) -> bool:
    errs: list[Path_] = []
    _structural(v, s, (), errs, True)
    return not errs


@functools.cache
def _cel() -> Any:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

    return cel.NewEnv(variables={"self": cel.Type.DYN}, extensions=[
        ext_strings.ExtStrings(version=2), ext_optional.ExtOptional(), ext_bindings.ExtBindings()])


@functools.cache
def _program(rule: str) -> Any:
    return _cel().compile(rule)


def _rules(v: Any, s: dict[str, Any] | None, path: Path_, errs: list[Path_]) -> None:
    """cel/validation.go: every rule where its node is present (transition rules aside)."""
    if s is None:
        return
    if isinstance(v, dict):
        for k, x in v.items():
            if path or k not in ("apiVersion", "kind", "metadata"):
                _rules(x, _child(s, k), (*path, k), errs)
    elif isinstance(v, list):
        for i, x in enumerate(v):
            _rules(x, _child(s, 0), (*path, i), errs)
    for rule in s.get("x-kubernetes-validations", ()):
        if "oldSelf" in rule["rule"]:
            continue
        try:
            result = _program(rule["rule"]).eval(_cel().Activation({"self": v}))
            ok = result.value() is True
        except RuntimeError:
            ok = False
        if not ok:
            errs.append(("rule", *path))


_QNAME = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_SUB = rf"{_LABEL}(\.{_LABEL})*"


def _qualified(key: str) -> bool:
    *prefix, name = key.split("/")
    if len(prefix) > 1 or (prefix and not (re.fullmatch(_SUB, prefix[0])
                                           and len(prefix[0]) <= 253)):
        return False
    return len(name) <= 63 and re.fullmatch(_QNAME, name) is not None


@functools.cache
def _object_meta() -> Draft202012Validator:
    definitions = json.loads(
        (_schema_root() / "v1.34.0-local-strict" / "_definitions.json").read_text())
    uri = "https://kubernetes.io/api/_definitions.json"
    ref = {"$ref": f"{uri}#/$defs/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    return Draft202012Validator(
        ref, registry=Registry().with_resource(uri, Resource.from_contents(definitions)))


def _metadata(obj: dict[str, Any], errs: list[Path_]) -> None:
    meta = obj.get("metadata")
    if not _object_meta().is_valid(meta):
        errs.append(("metadata",))
        return
    if not isinstance(meta, dict):
        errs.append(("metadata", "name"))  # name or generateName is required
        return
    name = meta.get("name", "")
    if not (re.fullmatch(_SUB, name) and len(name) <= 253):
        errs.append(("metadata", "name"))
    if "namespace" in meta and not re.fullmatch(_LABEL, meta["namespace"]):
        errs.append(("metadata", "namespace"))
    for k, v in (meta.get("labels") or {}).items():
        if not _qualified(k) or not (v == "" or (len(v) <= 63 and re.fullmatch(_QNAME, v))):
            errs.append(("metadata", "labels", k))
    notes = meta.get("annotations") or {}
    if any(not _qualified(k.lower()) for k in notes) or \
            sum(len(k.encode()) + len(v.encode()) for k, v in notes.items()) > 256 * 1024:
        errs.append(("metadata", "annotations"))


def _schema_check(obj: dict[str, Any], schema: dict[str, Any], errs: list[Path_]) -> None:
    """The CRD's structural schema over everything but metadata, and TypeMeta."""
    _structural({k: v for k, v in obj.items() if k != "metadata"},
                {**schema, "required": [r for r in schema.get("required", ()) if r != "metadata"],
                 "properties": {
                    **{k: v for k, v in schema.get("properties", {}).items() if k != "metadata"},
                    "apiVersion": {"type": "string"}, "kind": {"type": "string"}}},
                (), errs)


def reference(obj: dict[str, Any]) -> tuple[list[Path_], bool]:
    """The reference's error paths for one object, and whether the converted JSON Schema under
    the pure-Python ``jsonschema`` also rejects it (a second opinion on the conversion)."""
    schema = _upstream()[(obj["apiVersion"], obj["kind"])]
    prepared = _prepare({k: v for k, v in obj.items() if k != "metadata"}, schema)
    prepared["metadata"] = obj.get("metadata")
    errs: list[Path_] = []
    _metadata(prepared, errs)
    _schema_check(prepared, schema, errs)
    if not errs:
        _rules(prepared, schema, (), errs)
    converted = custom_schema(obj["apiVersion"], obj["kind"])
    assert converted is not None
    js = _json_schema(obj["apiVersion"], obj["kind"])
    return errs, not js.is_valid(prepared)


@functools.cache
def _json_schema(api_version: str, kind: str) -> Draft202012Validator:
    definitions = json.loads(
        (_schema_root() / "v1.34.0-local-strict" / "_definitions.json").read_text())
    uri = "https://kubernetes.io/api/_definitions.json"
    return Draft202012Validator(
        custom_schema(api_version, kind) or {},
        registry=Registry().with_resource(uri, Resource.from_contents(definitions)))


# ------------------------------------------------------------------------ the test


def _compare(objects: tuple[dict[str, Any], ...], stride: int = 1) -> dict[str, Any]:
    """Every ``stride``-th mutant of ``objects`` under the reference and gen; the tallies."""
    validator = SchemaValidator()
    counts: dict[str, Any] = {"objects": 0, "mutants": 0, "rejected": 0, "rule_only": 0,
                              "gen_accepts_invalid": [], "gen_rejects_valid": [],
                              "jsonschema_differs": []}
    for obj in objects:
        counts["objects"] += 1
        for index, mutant in enumerate(_mutants(obj)):
            if index % stride:
                continue
            counts["mutants"] += 1
            errs, js_rejects = reference(mutant)
            findings = validator.validate(mutant, 34, WHERE)
            rejected = bool(errs)
            counts["rejected"] += rejected
            counts["rule_only"] += rejected and all(e[:1] == ("rule",) for e in errs)
            if js_rejects != any(e[:1] not in (("rule",), (LIST_MAP,)) for e in errs) and \
                    not any(e[:1] == ("metadata",) for e in errs):
                counts["jsonschema_differs"].append((errs, mutant))
            if rejected and not findings:
                counts["gen_accepts_invalid"].append((errs, mutant))
            if findings and not rejected:
                counts["gen_rejects_valid"].append(([f.format() for f in findings], mutant))
    return counts


STRIDE = 3
"""The fast loop judges every third mutant; the slow run (``-m slow``) all of them."""


@functools.cache
def _campaign(stride: int = STRIDE) -> dict[str, Any]:
    return _compare(_objects(), stride)


def test_every_object_is_valid_under_the_reference() -> None:
    """The unmutated objects pass the reference and gen."""
    for obj in _objects():
        assert reference(obj) == ([], False), obj
        assert SchemaValidator().validate(obj, 34, WHERE) == []


def test_the_campaign_covers_every_bundled_kind_and_rule() -> None:
    """Every bundled kind is mutated, thousands of times in all, CEL rules among the causes."""
    kinds = {(o["apiVersion"], o["kind"]) for o in _objects()}
    assert kinds == set(_upstream())
    counts = _campaign()
    assert counts["mutants"] > 7000 // STRIDE
    assert counts["rejected"] > 4000 // STRIDE
    assert counts["rule_only"] >= 5


@pytest.mark.parametrize("key", ["gen_accepts_invalid", "gen_rejects_valid",
                                 "jsonschema_differs"])
def test_no_disagreement(key: str) -> None:
    """gen never accepts what the reference rejects (nor the reverse), and jsonschema on the
    converted schema agrees with the structural interpreter."""
    bad = _campaign()[key]
    assert bad == [], f"{len(bad)} cases, first: {bad[:3]}"


@pytest.mark.slow
@pytest.mark.parametrize("key", ["gen_accepts_invalid", "gen_rejects_valid",
                                 "jsonschema_differs"])
def test_no_disagreement_on_every_mutant(key: str) -> None:
    """The same on every mutant."""
    counts = _campaign(1)
    print({k: (len(v) if isinstance(v, list) else v) for k, v in counts.items()})
    assert counts[key] == []


def test_the_campaign_catches_a_validator_that_skips_rules_or_metadata(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail: a gen without CEL rules or metadata checks is caught."""
    from gen.emit import validate

    monkeypatch.setattr(validate, "schema_checks", lambda _schema, _digest: type(
        "NoRules", (), {"prepare": lambda _self, o, *_: o, "errors": lambda _self, *_: []})())
    monkeypatch.setattr(validate, "metadata_findings", lambda *_: [])
    objects = tuple(o for o in _objects() if o["kind"] in ("HelmRelease", "ScaledObject"))
    counts = _compare(objects[:3], stride=2)
    causes = {e[:1] for errs, _ in counts["gen_accepts_invalid"] for e in errs}
    assert {("rule",), ("metadata",)} <= causes


def test_the_campaign_catches_a_weakened_json_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison can fail on the JSON Schema too: converted schemas that let unknown
    fields through (as a stale or edited shipped ``json-schema/`` file could) are caught."""
    import gen.caches
    from gen.emit import validate
    from gen.emit.crd_schemas import json_schema

    def opened(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: opened(v) for k, v in node.items()
                    if not (k == "additionalProperties" and v is False)}
        return [opened(v) for v in node] if isinstance(node, list) else node

    monkeypatch.setattr(validate, "json_schema", lambda crd: opened(json_schema(crd)))
    gen.caches.clear()  # compile the weakened validators, and keep them from later tests
    try:
        objects = tuple(o for o in _objects() if o["kind"] in ("HelmRelease", "Application"))
        counts = _compare(objects[:3], stride=2)
    finally:
        gen.caches.clear()
    causes = {e[:1] for errs, _ in counts["gen_accepts_invalid"] for e in errs}
    assert causes - {("rule",), ("metadata",)}, causes
