"""What the API server does to a custom resource besides its JSON Schema: nulls, defaults,
list maps and CEL rules (apiextensions-apiserver ``pkg/apiserver/schema``@v0.36.3).

Before it validates an object, the API server drops every ``null`` of a field that is neither
``nullable`` nor defaulted (``defaulting/prunenulls.go``) and fills each absent field that has
a ``default`` (``defaulting/algorithm.go``). :meth:`SchemaChecks.prepare` does the same (without
changing the object: it shares what it leaves alone), so the
JSON Schema of :mod:`gen.emit.crd_convert` judges what the server judges, and the CEL rules
see the defaults (KEDA's ``minReplicaCount <= maxReplicaCount`` rule does).

After the schema, :meth:`SchemaChecks.errors` checks what JSON Schema cannot say:

* ``x-kubernetes-list-type: map``: no two items with the same ``x-kubernetes-list-map-keys``
  (``set`` becomes ``uniqueItems`` in the schema);
* ``x-kubernetes-validations``: each rule is CEL with ``self`` bound to the node, evaluated
  where the node is present (``cel/validation.go``). A rule that evaluates to false fails with
  its ``messageExpression``, else its ``message``, else ``failed rule: RULE``; one that errors
  fails with the error. Transition rules (those reading ``oldSelf``) are not evaluated: a
  render creates objects, and the API server runs them only on update.

The CEL environment is Kubernetes' base environment on cel-expr-python, the binding gen's
DRA selector engine (``gen.dra.cel``) runs on: ``self`` as ``dyn``, the strings extension
(version 2), optionals and ``cel.bind``. It is built here rather than borrowed from
``gen.dra.cel``, whose environment is the DRA one (a ``device`` variable, no ``self``): in
Kubernetes too the two are separate environments on the same CEL base. A rule that does not
compile here (it uses a library gen lacks, such as ``url()`` or ``ip()``) is reported once, at
the CRD, as a rule gen cannot evaluate (``GEN025``, :func:`unevaluable_rules`), never passed
in silence.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from gen.caches import BoundedCache, memoize, once

__all__ = [
    "CompiledRule",
    "RuleError",
    "SchemaChecks",
    "compile_rule",
    "schema_checks",
    "unevaluable_rules",
]

Path_ = tuple[str | int, ...]

_OLD_SELF = re.compile(r"\boldSelf\b")
_BINDING_ERRORS = (RuntimeError, ValueError, TypeError, OverflowError, MemoryError, RecursionError)
_STATUS = re.compile(r"^[A-Z_]+: |\s*\[[A-Z_]+\]$")


@dataclass(frozen=True)
class RuleError:
    """One failure: where (the node, or the rule's ``fieldPath``), what, and whether gen could
    evaluate the rule at all (``evaluated`` False: it could not, the API server will)."""

    path: Path_
    message: str
    rule: str = ""
    evaluated: bool = True


@once
def _env() -> Any:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

    return cel.NewEnv(
        variables={"self": cel.Type.DYN},
        extensions=[ext_strings.ExtStrings(version=2), ext_optional.ExtOptional(),
                    ext_bindings.ExtBindings()],
    )


def _clean(message: str) -> str:
    text = _STATUS.sub("", str(message).strip())
    text = re.sub(r'Key not found in map : "?(.*?)"?$', r"no such key: \1", text)
    return re.sub(r"No matching overloads found : (.*)$", r"no such overload: \1", text)


@dataclass(frozen=True)
class CompiledRule:
    """A rule ready to run (``program``), or why gen cannot run it (``error``)."""

    expression: str
    program: Any = None
    error: str = ""

    def evaluate(self, value: Any) -> tuple[bool | None, str]:
        """(True, "") when the rule holds on ``value``, (False, "") when it does not,
        (None, error) when it errors."""
        env = _env()
        try:
            result = self.program.eval(env.Activation({"self": value}))
        except _BINDING_ERRORS as err:
            return None, _clean(str(err))
        kind = result.type().name() if hasattr(result.type(), "name") else str(result.type())
        if str(kind).upper() == "BOOL":
            return bool(result.value()), ""
        if str(kind).upper() == "ERROR":
            return None, _clean(result.value())
        return None, f"rule result of type {str(kind).lower()} is not a bool"


@memoize(maxsize=4096)
def compile_rule(expression: str) -> CompiledRule:
    """Compile one rule (``self`` bound); never raises: a failure is ``CompiledRule.error``."""
    try:
        return CompiledRule(expression, _env().compile(expression))
    except _BINDING_ERRORS as err:
        return CompiledRule(expression, None, _clean(str(err)).split("\n")[0])


# --------------------------------------------------------------------- schema navigation


def _child(schema: Mapping[str, Any] | None, key: str | int) -> Mapping[str, Any] | None:
    if schema is None:
        return None
    if isinstance(key, int):
        items = schema.get("items")
        return items if isinstance(items, Mapping) else None
    props = schema.get("properties")
    if isinstance(props, Mapping) and key in props:
        child: Mapping[str, Any] = props[key]
        return child
    extra = schema.get("additionalProperties")
    return extra if isinstance(extra, Mapping) else None


def _fill(value: Any, schema: Mapping[str, Any] | None) -> Any:
    """Prune non-nullable nulls and apply defaults in ``value`` (a private copy), in place."""
    if schema is None:
        return value
    if isinstance(value, dict):
        for key in list(value):
            child = _child(schema, key)
            if value[key] is None and child is not None and child.get("nullable") is not True:
                if "default" in child:
                    value[key] = copy.deepcopy(child["default"])
                else:
                    del value[key]
        props = schema.get("properties")
        if isinstance(props, Mapping):
            for key, child in props.items():
                if key not in value and isinstance(child, Mapping) and "default" in child:
                    value[key] = copy.deepcopy(child["default"])
        for key in value:
            _fill(value[key], _child(schema, key))
    elif isinstance(value, list):
        items = _child(schema, 0)
        for item in value:
            _fill(item, items)
    return value


def _has_null(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return any(_has_null(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_null(v) for v in value)
    return False


@dataclass(frozen=True)
class _Node:
    """The part of a schema node (and of its subtree) the walks need; subtrees with nothing
    to do are left out, so a walk visits only where a default, a rule or a list map is."""

    props: Mapping[str, _Node]
    declared: frozenset[str]
    extra: _Node | None
    items: _Node | None
    defaults: Mapping[str, Any]
    rules: tuple[Mapping[str, Any], ...]
    map_keys: tuple[str, ...]


def _plan(schema: Mapping[str, Any], root: bool = False) -> _Node | None:
    raw_props = schema.get("properties")
    props_in = raw_props if isinstance(raw_props, Mapping) else {}
    skip = {"apiVersion", "kind", "metadata"} if root else set()
    props = {k: n for k, c in props_in.items()
             if k not in skip and isinstance(c, Mapping) and (n := _plan(c)) is not None}
    extra_schema, items_schema = schema.get("additionalProperties"), schema.get("items")
    extra = _plan(extra_schema) if isinstance(extra_schema, Mapping) else None
    items = _plan(items_schema) if isinstance(items_schema, Mapping) else None
    defaults = {k: c["default"] for k, c in props_in.items()
                if k not in skip and isinstance(c, Mapping) and "default" in c}
    raw_rules = schema.get("x-kubernetes-validations")
    rules = tuple(r for r in (raw_rules if isinstance(raw_rules, list) else ())
                  if isinstance(r, Mapping) and isinstance(r.get("rule"), str))
    keys = schema.get("x-kubernetes-list-map-keys")
    map_keys = tuple(keys) if schema.get("x-kubernetes-list-type") == "map" and \
        isinstance(keys, list) else ()
    if not (props or extra or items or defaults or rules or map_keys):
        return None
    return _Node(props, frozenset(props_in), extra, items, defaults, rules, map_keys)


def _apply(value: Any, node: _Node | None, schema: Mapping[str, Any] | None) -> Any:
    """``value`` with the defaults of ``node`` applied; shares what it does not change."""
    if node is None:
        return value
    if isinstance(value, dict):
        out: dict[str, Any] | None = None
        for key, default in node.defaults.items():
            if key not in value:
                out = out if out is not None else dict(value)
                child = _child(schema, key)
                out[key] = _apply(copy.deepcopy(default), node.props.get(key), child)
        for key, item in value.items():
            sub = node.props.get(key) if key in node.declared else node.extra
            if sub is None:
                continue
            new = _apply(item, sub, _child(schema, key))
            if new is not item:
                out = out if out is not None else dict(value)
                out[key] = new
        return out if out is not None else value
    if isinstance(value, list) and node.items is not None:
        new_items = [_apply(v, node.items, _child(schema, 0)) for v in value]
        if any(a is not b for a, b in zip(new_items, value, strict=True)):
            return new_items
    return value


@dataclass(frozen=True)
class SchemaChecks:
    """What the API server does to a custom resource besides its JSON Schema, for one CRD
    version, prepared once (:func:`schema_checks`)."""

    schema: Mapping[str, Any]
    root: _Node | None

    def prepare(self, obj: Mapping[str, Any]) -> Mapping[str, Any]:
        """``obj`` as the API server validates it: nulls pruned, defaults applied
        (``metadata``, ``apiVersion`` and ``kind`` are left as they are). Shares unchanged
        parts with ``obj``: treat the result as read-only."""
        if _has_null({k: v for k, v in obj.items() if k != "metadata"}):
            return _defaulted_slowly(obj, self.schema)
        prepared: Mapping[str, Any] = _apply(obj, self.root, self.schema)
        return prepared

    def errors(self, obj: Mapping[str, Any]) -> list[RuleError]:
        """Every list-map duplicate and CEL rule failure of the prepared ``obj``."""
        return _walk(obj, self.root, ()) if self.root is not None else []


_CHECKS: BoundedCache[str, SchemaChecks] = BoundedCache("gen.emit.crd_rules.checks", 256)
"""CRD schema digest → its :class:`SchemaChecks`."""


def schema_checks(schema: Mapping[str, Any], digest: str = "") -> SchemaChecks:
    """The checks of one CRD version's schema, built once per ``digest`` (the CRD's
    :attr:`~gen.emit.crd_convert.CRDSchema.digest`; without one, built every call)."""
    if not digest:
        return SchemaChecks(schema, _plan(schema, root=True))
    found = _CHECKS.data.get(digest)
    if found is None:
        found = _CHECKS.put(digest, SchemaChecks(schema, _plan(schema, root=True)))
    return found


def _defaulted_slowly(obj: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """:meth:`SchemaChecks.prepare` of an object that holds a ``null``: a copy, walked whole
    (a null may sit anywhere, so no part of the schema can be skipped)."""
    out = copy.deepcopy(dict(obj))
    props = schema.get("properties") if isinstance(schema.get("properties"), Mapping) else {}
    for key in list(out):
        if key in ("apiVersion", "kind", "metadata"):
            continue
        child = props.get(key) if isinstance(props, Mapping) else None
        if out[key] is None and isinstance(child, Mapping) and child.get("nullable") is not True \
                and "default" not in child:
            del out[key]
        elif isinstance(child, Mapping):
            out[key] = _fill(out[key], child)
    for key, child in (props or {}).items():
        if key not in out and key not in ("apiVersion", "kind", "metadata") and \
                isinstance(child, Mapping) and "default" in child:
            out[key] = _fill(copy.deepcopy(child["default"]), child)
    return out


# ---------------------------------------------------------------------------- the checks


def _field_path(base: Path_, field_path: str) -> Path_:
    """A rule's ``fieldPath`` (``.spec.x``, ``.a['b']``, ``.l[0]``) joined to the node path."""
    parts: list[str | int] = list(base)
    for match in re.finditer(r"\.([A-Za-z_$][\w$-]*)|\['([^']*)'\]|\[(\d+)\]", field_path):
        name, quoted, index = match.groups()
        parts.append(int(index) if index is not None else (name if name is not None else quoted))
    return tuple(parts)


def _node_rules(value: Any, rules: tuple[Mapping[str, Any], ...],
                path: Path_) -> Iterator[RuleError]:
    for rule in rules:
        expression: str = rule["rule"]
        if _OLD_SELF.search(expression):
            continue  # a transition rule: only on update
        compiled = compile_rule(expression)
        where = _field_path(path, str(rule.get("fieldPath", "")))
        if compiled.error:
            yield RuleError(where, f"gen cannot evaluate the rule {expression!r}: "
                            f"{compiled.error}", expression, evaluated=False)
            continue
        ok, error = compiled.evaluate(value)
        if ok:
            continue
        if ok is None:
            yield RuleError(where, f"rule {expression!r} failed to evaluate: {error}", expression)
            continue
        yield RuleError(where, _message(rule, value, expression), expression)


def _message(rule: Mapping[str, Any], value: Any, expression: str) -> str:
    text = rule.get("messageExpression")
    if isinstance(text, str):
        compiled = compile_rule(text)
        if not compiled.error:
            try:
                result = compiled.program.eval(_env().Activation({"self": value})).value()
            except _BINDING_ERRORS:
                result = None
            if isinstance(result, str) and result.strip():
                return result
    message = rule.get("message")
    return message if isinstance(message, str) and message else f"failed rule: {expression}"


def _map_duplicates(value: list[Any], keys: tuple[str, ...],
                    path: Path_) -> Iterator[RuleError]:
    if not keys:
        return
    seen: set[str] = set()
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            continue
        identity = repr([item.get(k) for k in keys])
        if identity in seen:
            shown = ", ".join(f"{k}={item.get(k)!r}" for k in keys)
            yield RuleError((*path, index), f"Duplicate value: {{{shown}}}")
        seen.add(identity)


def _walk(value: Any, node: _Node, path: Path_) -> list[RuleError]:
    found: list[RuleError] = []
    if isinstance(value, dict):
        for key, item in value.items():
            sub = node.props.get(key) if key in node.declared else node.extra
            if sub is not None:
                found += _walk(item, sub, (*path, key))
    elif isinstance(value, list):
        if node.items is not None:
            for index, item in enumerate(value):
                found += _walk(item, node.items, (*path, index))
        found += _map_duplicates(value, node.map_keys, path)
    found += _node_rules(value, node.rules, path)
    return found


def unevaluable_rules(schema: Mapping[str, Any],
                      path: Path_ = ()) -> list[tuple[Path_, str, str]]:
    """(schema key path, rule, why) of every rule in ``schema`` gen cannot compile (transition
    rules aside: they are never evaluated on create)."""
    found: list[tuple[Path_, str, str]] = []
    rules = schema.get("x-kubernetes-validations")
    for index, rule in enumerate(rules if isinstance(rules, list) else ()):
        expression = rule.get("rule") if isinstance(rule, Mapping) else None
        if isinstance(expression, str) and not _OLD_SELF.search(expression):
            compiled = compile_rule(expression)
            if compiled.error:
                found.append(((*path, "x-kubernetes-validations", index, "rule"), expression,
                              compiled.error))
    props = schema.get("properties")
    for key, child in (props.items() if isinstance(props, Mapping) else ()):
        if isinstance(child, Mapping):
            found += unevaluable_rules(child, (*path, "properties", key))
    for key in ("additionalProperties", "items"):
        child = schema.get(key)
        if isinstance(child, Mapping):
            found += unevaluable_rules(child, (*path, key))
    return found
