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
import functools
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gen.caches import BoundedCache, memoize, once

if TYPE_CHECKING:
    from gen.emit.skeleton import Holes

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
    reads: tuple[tuple[str, bool], ...] | None = None
    """The fields of ``self`` the rule can read, each with whether their value matters
    (False: only ``has(self.f)`` reads it); ``None`` when the rule may read anything else
    (see :func:`reads_of`)."""

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
        return CompiledRule(expression, _env().compile(expression), reads=reads_of(expression))
    except _BINDING_ERRORS as err:
        return CompiledRule(expression, None, _clean(str(err)).split("\n")[0])


_TOKEN = re.compile(
    r"(?P<str>[rRbB]{0,2}(?:'''(?:\\.|[^\\])*?'''"
    r'|"""(?:\\.|[^\\])*?"""'
    r"|'(?:\\.|[^'\\\n])*'"
    r'|"(?:\\.|[^"\\\n])*"))'
    r"|(?P<id>[A-Za-z_][A-Za-z0-9_]*)|(?P<space>\s+)|(?P<other>.)", re.DOTALL)
"""CEL's tokens, as far as :func:`reads_of` needs them: string literals (single, double,
triple quoted; raw and bytes prefixes), identifiers, and any other character alone."""


@memoize(maxsize=4096)
def reads_of(expression: str) -> tuple[tuple[str, bool], ...] | None:
    """The fields of ``self`` a rule reads, when it can read nothing else: every ``self`` in
    it (outside string literals) is ``self.<field>`` with no call after the field, so the
    verdict on a map depends on those fields alone. A field that only ever appears as
    ``has(self.<field>)`` reads presence only (False). ``None`` for anything else — ``self``
    alone, ``self[...]``, ``self.?f``, a method or macro on ``self``, a comment, a quoted
    identifier (a backtick), a raw string — and then the verdict is never shared
    (:func:`verdict`). Only asked of a rule that compiled, so the text is valid CEL."""
    tokens = [(m.lastgroup, m.group()) for m in _TOKEN.finditer(expression)
              if m.lastgroup != "space"]
    fields: dict[str, bool] = {}
    for index, (kind, text) in enumerate(tokens):
        if kind == "other" and (text in "`'\"" or (text == "/" and
                                tokens[index + 1:index + 2] == [("other", "/")])):
            return None  # a backtick, a stray quote, a comment
        if kind == "str" and "r" in text[:len(text) - len(text.lstrip("rRbB"))].lower():
            return None  # raw strings: a backslash does not escape, keep clear of them
        if kind != "id" or text != "self":
            continue
        after = tokens[index + 1:index + 4]
        if len(after) < 2 or after[0] != ("other", ".") or after[1][0] != "id":
            return None
        if after[2:] == [("other", "(")]:
            return None  # self.all(...), self.size(): reads the whole node
        presence = tokens[index - 2:index] == [("id", "has"), ("other", "(")] and \
            after[2:] == [("other", ")")]
        fields[after[1][1]] = fields.get(after[1][1], False) or not presence
    return tuple(sorted(fields.items()))


class _Unshared(Exception):
    """A value whose verdict is not shared (:func:`_frozen`)."""


_INT_RANGE = range(-(2 ** 63), 2 ** 63)


def _frozen(value: Any) -> Any:
    """A hashable image of a plain value that two values share only when they are equal as
    CEL sees them (types kept apart: ``1``, ``1.0`` and ``True`` differ; floats by their
    ``repr``, so ``-0.0`` is not ``0.0``); :class:`_Unshared` for anything else."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return (kind, value)
    if kind is int:
        if value not in _INT_RANGE:
            raise _Unshared
        return (kind, value)
    if kind is float:
        return (kind, repr(value))
    if kind is dict:
        return (kind, tuple((_frozen(k), _frozen(v)) for k, v in value.items()))
    if kind is list:
        return (kind, tuple(_frozen(v) for v in value))
    raise _Unshared


def plain(value: Any) -> bool:
    """Whether CEL takes ``value`` in without error: maps with string keys, lists, strings,
    booleans, floats, ``null`` and 64-bit signed integers only. A rule's verdict is shared
    between nodes (:func:`verdict`) only when the node is plain, since cel-expr-python
    converts the whole node and fails on any field it cannot take."""
    stack = [value]
    pop, push = stack.pop, stack.extend
    while stack:
        item = pop()
        kind = type(item)
        if kind is dict:
            for key in item:
                if type(key) is not str:
                    return False
            push(item.values())
        elif kind is list:
            push(item)
        elif kind is int:
            if item not in _INT_RANGE:
                return False
        elif not (kind is str or kind is float or kind is bool or item is None):
            return False
    return True


_VERDICTS: BoundedCache[tuple[str, tuple[Any, ...]], tuple[bool | None, str]] = \
    BoundedCache("gen.emit.crd_rules.verdicts", 65536)
"""(rule, the fields it reads of a plain node, or the whole node) →
:meth:`CompiledRule.evaluate`'s answer."""


def verdict(rule: CompiledRule, value: Any, is_plain: bool) -> tuple[bool | None, str]:
    """:meth:`CompiledRule.evaluate` of ``rule`` on ``value``, shared between the nodes that
    agree on every field the rule reads (:func:`reads_of`), or, for a rule that may read
    anything of its node, between equal nodes (equal as CEL sees them: :func:`_frozen`). It
    is shared only for a plain node (``is_plain``, :func:`plain`; a map, where the rule reads
    named fields); anything else is evaluated as it is. A miss evaluates the whole node, so
    a shared answer is always one gen computed on a node that reads the same."""
    reads = rule.reads
    if not is_plain:
        return rule.evaluate(value)
    key: tuple[str, tuple[Any, ...]]
    try:
        if reads is None:  # it may read anything of its node: keyed by the whole node
            key = (rule.expression, (_WHOLE, _frozen(value)))
        elif type(value) is not dict:
            return rule.evaluate(value)
        else:
            key = (rule.expression, tuple(
                (name, _frozen(value[name]) if name in value else _ABSENT) if needs_value
                else (name, name in value) for name, needs_value in reads))
    except _Unshared:
        return rule.evaluate(value)
    found = _VERDICTS.data.get(key)
    if found is None:
        found = _VERDICTS.put(key, rule.evaluate(value))
    return found


_ABSENT = ("absent",)
_WHOLE = ("whole",)


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


_NULL, _ODD = 1, 2


def _scan(value: Any) -> int:
    """What :meth:`SchemaChecks.prepare` needs to know of ``value``, in one walk: whether it
    holds a ``None`` anywhere in its dicts and lists (``_NULL``, as :func:`_fill` walks them)
    and whether it is not :func:`plain` (``_ODD``)."""
    found = 0
    stack = [value]
    pop, push = stack.pop, stack.extend
    while stack:
        item = pop()
        kind = type(item)
        if kind is dict:
            if not found & _ODD:
                for key in item:
                    if type(key) is not str:
                        found |= _ODD
                        break
            push(item.values())
        elif kind is list:
            push(item)
        elif item is None:
            found |= _NULL
        elif kind is int:
            if item not in _INT_RANGE:
                found |= _ODD
        elif not (kind is str or kind is float or kind is bool):
            found |= _ODD
            if isinstance(item, dict):
                push(item.values())
            elif isinstance(item, list):
                push(item)
    return found


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


_PLANNED = frozenset({"properties", "additionalProperties", "items", "x-kubernetes-validations",
                      "x-kubernetes-list-type"})
"""The keys of a schema node :func:`_plan` reads: a node with none of them has no work."""


def _plan(schema: Mapping[str, Any], root: bool = False) -> _Node | None:
    if _PLANNED.isdisjoint(schema):
        return None  # most nodes: a leaf without rules (the same answer, a set look-up)
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


def _apply(value: Any, node: _Node | None) -> Any:
    """``value`` with the defaults of ``node`` applied; shares what it does not change."""
    if node is None:
        return value
    if isinstance(value, dict):
        out: dict[str, Any] | None = None
        for key, default in node.defaults.items():
            if key not in value:
                out = out if out is not None else dict(value)
                # Shared, not copied: the prepared object is read-only (see prepare).
                out[key] = _apply(default, node.props.get(key))
        if node.extra is None:  # only declared fields with work below them
            pairs: Iterable[tuple[str, _Node]] = (
                (key, sub) for key, sub in node.props.items() if key in value)
        else:
            pairs = ((key, sub) for key in value if (
                sub := node.props.get(key) if key in node.declared else node.extra) is not None)
        for key, sub in pairs:
            item = value[key]
            new = _apply(item, sub)
            if new is not item:
                out = out if out is not None else dict(value)
                out[key] = new
        return out if out is not None else value
    if isinstance(value, list) and node.items is not None:
        new_items = [_apply(v, node.items) for v in value]
        if any(a is not b for a, b in zip(new_items, value, strict=True)):
            return new_items
    return value


@dataclass(frozen=True)
class SchemaChecks:
    """What the API server does to a custom resource besides its JSON Schema, for one CRD
    version, prepared once (:func:`schema_checks`)."""

    schema: Mapping[str, Any]
    root: _Node | None
    digest: str = ""
    """The CRD schema's digest (``""``: none, and nothing is kept per shape)."""
    _last: list[Any] = field(default_factory=lambda: [None, False, None], compare=False,
                             repr=False)
    """The object :meth:`prepare` returned last, whether it is :func:`plain` as a whole, and
    the :class:`~gen.emit.skeleton.Holes` it was prepared with when it took the shape's
    program (held, not keyed by ``id``: the check is ``is``)."""

    @functools.cached_property
    def _defaults_plain(self) -> bool:
        return _defaults_plain(self.root)

    def prepare(self, obj: Mapping[str, Any], holes: Holes | None = None) -> Mapping[str, Any]:
        """``obj`` as the API server validates it: nulls pruned, defaults applied
        (``metadata``, ``apiVersion`` and ``kind`` are left as they are). Shares unchanged
        parts with ``obj``: treat the result as read-only.

        ``holes``: where the values of ``obj``'s template shape sit
        (:func:`gen.emit.skeleton.render_filled`). Then only the values are scanned for
        nulls and odd values, and defaults are applied to the values, the rest once per
        shape (:func:`_shape_scan`, :func:`_shape_apply`)."""
        found_by_key = _shape_scan(obj, holes) if holes is not None else None
        if found_by_key is None:
            holes = None
            whole_plain = type(obj) is dict and all(type(key) is str for key in obj)
            found_by_key = {key: _scan(value) for key, value in obj.items()}
        else:
            whole_plain = True  # the shape's keys are strings (_shape_scan checked)
        for key, found in found_by_key.items():
            if found & _NULL and key != "metadata":
                self._last[:] = [None, False, None]
                return _defaulted_slowly(obj, self.schema)
            whole_plain = whole_plain and not found & _ODD
        prepared: Mapping[str, Any] | None = None
        if holes is not None and self.digest and self.root is not None:
            prepared = _shape_apply(obj, self.root, holes, self.digest)
        if prepared is None:
            holes = None
            prepared = _apply(obj, self.root)
        self._last[:] = [prepared, whole_plain and self._defaults_plain, holes]
        return prepared

    def errors(self, obj: Mapping[str, Any], holes: Holes | None = None) -> list[RuleError]:
        """Every list-map duplicate and CEL rule failure of the prepared ``obj``.

        ``holes``: as for :meth:`prepare`, of the object ``obj`` was prepared from; then
        the subtrees with no value of the shape in them are walked once per shape and CRD
        (:func:`_shape_walk`)."""
        if self.root is None:
            return []
        last, whole_plain, prepared_with = self._last
        within_plain = whole_plain and last is obj
        if holes is not None and last is obj and prepared_with is holes:
            found = _shape_walk(obj, self.root, holes, self.digest, within_plain)
            if found is not None:
                return found
        return _walk(obj, self.root, (), within_plain)


def _defaults_plain(node: _Node | None) -> bool:
    """Whether every default below ``node`` is :func:`plain`."""
    if node is None:
        return True
    return all(plain(d) for d in node.defaults.values()) and \
        all(_defaults_plain(n) for n in (*node.props.values(), node.extra, node.items))


_CHECKS: BoundedCache[str, SchemaChecks] = BoundedCache("gen.emit.crd_rules.checks", 256)
"""CRD schema digest → its :class:`SchemaChecks`."""


def schema_checks(schema: Mapping[str, Any], digest: str = "") -> SchemaChecks:
    """The checks of one CRD version's schema, built once per ``digest`` (the CRD's
    :attr:`~gen.emit.crd_convert.CRDSchema.digest`; without one, built every call)."""
    if not digest:
        return SchemaChecks(schema, _plan(schema, root=True))
    found = _CHECKS.data.get(digest)
    if found is None:
        found = _CHECKS.put(digest, SchemaChecks(schema, _plan(schema, root=True), digest))
    return found


# ------------------------------------------------------------- per template shape

_SHAPE_SCANS: BoundedCache[str, tuple[dict[str, int], tuple[str, ...]] | None] = \
    BoundedCache("gen.emit.crd_rules.shape_scans", 4096)
"""Shape digest → :func:`_scan` of each top-level key's fixed part, and the top-level key
of each value (None: the shape's top level is not one of string keys, each value below
one of them)."""

def _fixed_scan(value: Any, tree: Any) -> int:
    """:func:`_scan` of ``value`` with the values at the :data:`~gen.emit.skeleton.HOLE`
    leaves of ``tree`` left out (``tree`` None: no value below)."""
    from gen.emit.skeleton import HOLE

    if tree is None:
        return _scan(value)
    if tree is HOLE:
        return 0
    found = 0
    kind = type(value)
    if kind is dict:
        if any(type(key) is not str for key in value):
            found |= _ODD
        for key, item in value.items():
            found |= _fixed_scan(item, tree.get(key))
    elif kind is list:
        for index, item in enumerate(value):
            found |= _fixed_scan(item, tree.get(index))
    else:
        found |= _scan(value)  # a shape's holes sit in its dicts and lists only
    return found


def _shape_scan(obj: Mapping[str, Any], holes: Holes) -> dict[str, int] | None:
    """:func:`_scan` of each top-level value of ``obj``, from its shape's fixed part (once
    per shape) and its values; None where the shape does not allow it."""
    shape = holes.shape
    data = _SHAPE_SCANS.data
    if shape.shape in data:
        known = data[shape.shape]
    else:
        tree = shape.tree
        if type(obj) is not dict or any(type(key) is not str for key in obj) or \
                any(type(path[0]) is not str or path[0] not in obj for path in shape.paths):
            known = None
        else:
            fixed = {key: _fixed_scan(value, tree.get(key)) for key, value in obj.items()}
            known = (fixed, tuple(str(path[0]) for path in shape.paths))
        _SHAPE_SCANS.put(shape.shape, known)
    if known is None or len(holes.values) != len(known[1]):
        return None
    found = dict(known[0])
    scans = _TEXT_SCANS.data
    for key, value, text in zip(known[1], holes.values, holes.texts, strict=True):
        kind = type(value)
        if kind is str or kind is bool or kind is float:
            continue
        if kind is int:
            if value not in _INT_RANGE:
                found[key] |= _ODD
        elif value is None:
            found[key] |= _NULL
        else:  # a list or map, the same value wherever its JSON text is the same
            bits = scans.get(text)
            if bits is None:
                bits = _TEXT_SCANS.put(text, _scan(value))
            found[key] |= bits
    return found


_TEXT_SCANS: BoundedCache[str, int] = BoundedCache("gen.emit.crd_rules.text_scans", 16_384)
"""The JSON text ``tojson`` wrote for a list or map value → :func:`_scan` of the value it
parses to."""


# A shape's programs: for each node with a value of the shape below it, what :func:`_apply`
# and :func:`_walk` do there, with the subtrees that hold no value done once. They hold
# for every object of the shape prepared without pruning a null (then the keys of every
# node with a value below are the shape's, and the defaults added to them the same).
_FIXED, _VALUE, _BELOW = 0, 1, 2

_Step = tuple[str | int, int, Any]
"""(key or index, what is there: ``_FIXED`` done, ``_VALUE`` a value, ``_BELOW`` a value
below, the payload: the result, the schema node, the program below)."""

_ApplyProgram = tuple[bool, tuple[tuple[str, Any], ...], tuple[_Step, ...]]
"""(a list, the defaults added as (key, value), the steps over the children)."""

_WalkProgram = tuple[bool, tuple[tuple[str | int, int, Any, Path_], ...], _Node, Path_]
"""(a list, the steps with their paths, the schema node, its path)."""

_SHAPE_APPLY: BoundedCache[tuple[str, str], _ApplyProgram | None] = \
    BoundedCache("gen.emit.crd_rules.shape_apply", 4096)
"""(CRD schema digest, shape digest) → the shape's :func:`_apply` program."""

_SHAPE_WALK: BoundedCache[tuple[str, str], _WalkProgram | None] = \
    BoundedCache("gen.emit.crd_rules.shape_walk", 4096)
"""(CRD schema digest, shape digest) → the shape's :func:`_walk` program, whose fixed
steps hold the errors of the subtrees without a value."""

_MISMATCH = (KeyError, IndexError, TypeError)
"""What running a program on an object that is not of its shape raises (never expected:
the object is then prepared and walked as any other)."""


def _children(value: Any, node: _Node) -> list[tuple[str | int, Any, _Node]]:
    """The children :func:`_walk` visits, in its order, with their schema nodes."""
    if isinstance(value, dict):
        props, extra = node.props, node.extra
        return [(key, item, sub) for key, item in value.items()
                if (sub := props.get(key) if extra is None or key in node.declared else extra)
                is not None]
    if isinstance(value, list) and node.items is not None:
        return [(index, item, node.items) for index, item in enumerate(value)]
    return []


def _compile_apply(value: Any, node: _Node, tree: Mapping[Any, Any]) -> _ApplyProgram | None:
    """The :func:`_apply` program of ``value`` at ``node``, values at the leaves of
    ``tree``; None where :func:`_apply` leaves it alone."""
    from gen.emit.skeleton import HOLE

    if isinstance(value, dict):
        adds = tuple((key, _apply(default, node.props.get(key)))
                     for key, default in node.defaults.items() if key not in value)
        if node.extra is None:
            pairs: list[tuple[str | int, Any, _Node]] = [
                (key, value[key], sub) for key, sub in node.props.items() if key in value]
        else:
            pairs = [(key, item, sub) for key, item, sub in _children(value, node)]
        listed = False
    elif isinstance(value, list) and node.items is not None:
        adds, listed = (), True
        pairs = [(index, item, node.items) for index, item in enumerate(value)]
    else:
        return None
    steps: list[_Step] = []
    for key, item, sub in pairs:
        below = tree.get(key)
        if below is HOLE:
            steps.append((key, _VALUE, sub))
        elif below is not None:
            steps.append((key, _BELOW, _compile_apply(item, sub, below)))
        else:
            steps.append((key, _FIXED, _apply(item, sub)))
    return listed, adds, tuple(steps)


def _run_apply(value: Any, program: _ApplyProgram | None) -> Any:
    """:func:`_apply` of ``value`` by its shape's program."""
    if program is None:
        return value
    listed, adds, steps = program
    if listed:
        new_items = [_run_step(value[key], how, payload) for key, how, payload in steps]
        if len(new_items) != len(value):
            raise IndexError("not of the shape")
        if any(a is not b for a, b in zip(new_items, value, strict=True)):
            return new_items
        return value
    out: dict[str | int, Any] | None = None
    if adds:
        out = dict(value)
        out.update(adds)
    for key, how, payload in steps:
        item = value[key]
        new = _run_step(item, how, payload)
        if new is not item:
            out = out if out is not None else dict(value)
            out[key] = new
    return out if out is not None else value


def _run_step(item: Any, how: int, payload: Any) -> Any:
    if how == _FIXED:
        return payload
    if how == _VALUE:
        return _apply(item, payload)
    return _run_apply(item, payload)


def _shape_apply(obj: Mapping[str, Any], root: _Node, holes: Holes,
                 digest: str) -> Mapping[str, Any] | None:
    """:func:`_apply` of ``obj`` at ``root`` by its shape's program (made from the first
    object of the shape); None where the shape has none."""
    key = (digest, holes.shape.shape)
    data = _SHAPE_APPLY.data
    if key in data:
        program = data[key]
    else:
        program = _SHAPE_APPLY.put(key, _compile_apply(obj, root, holes.shape.tree))
    if program is None:
        return None
    try:
        prepared: Mapping[str, Any] = _run_apply(obj, program)
    except _MISMATCH:
        return None
    return prepared


def _compile_walk(value: Any, node: _Node, tree: Mapping[Any, Any], path: Path_,
                  plain_: bool) -> _WalkProgram:
    """The :func:`_walk` program of the prepared ``value`` at ``node``."""
    from gen.emit.skeleton import HOLE

    steps: list[tuple[str | int, int, Any, Path_]] = []
    for key, item, sub in _children(value, node):
        below, at = tree.get(key), (*path, key)
        if below is HOLE:
            steps.append((key, _VALUE, sub, at))
        elif below is not None:
            steps.append((key, _BELOW, _compile_walk(item, sub, below, at, plain_), at))
        else:
            fixed = tuple(_walk(item, sub, at, plain_))
            if fixed:
                steps.append((key, _FIXED, fixed, at))
    return isinstance(value, list), tuple(steps), node, path


def _run_walk(value: Any, program: _WalkProgram, plain_: bool) -> list[RuleError]:
    """:func:`_walk` of ``value`` by its shape's program."""
    listed, steps, node, path = program
    if listed is not isinstance(value, list):
        raise TypeError("not of the shape")
    found: list[RuleError] = []
    for key, how, payload, at in steps:
        if how == _FIXED:
            found += payload
        elif how == _VALUE:
            found += _walk(value[key], payload, at, plain_)
        else:
            found += _run_walk(value[key], payload, plain_)
    if listed:
        found += _map_duplicates(value, node.map_keys, path)
    if node.rules:
        found += _node_rules(value, node.rules, path, plain_)
    return found


def _shape_walk(obj: Mapping[str, Any], root: _Node, holes: Holes, digest: str,
                plain_: bool) -> list[RuleError] | None:
    """:func:`_walk` of the prepared ``obj`` by its shape's program (made from the first
    object of the shape: a subtree without a value is the same in every object of the
    shape, so are its errors, and a rule reads only its node); None where it cannot."""
    key = (digest, holes.shape.shape)
    data = _SHAPE_WALK.data
    if key in data:
        program = data[key]
    else:
        program = _SHAPE_WALK.put(key, _compile_walk(obj, root, holes.shape.tree, (),
                                                     plain_))
    if program is None:
        return None
    try:
        return _run_walk(obj, program, plain_)
    except _MISMATCH:
        return None


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
                path: Path_, within_plain: bool = False) -> Iterator[RuleError]:
    is_plain: bool | None = True if within_plain else None
    for rule in rules:
        expression: str = rule["rule"]
        if _transition(expression):
            continue  # a transition rule: only on update
        compiled = compile_rule(expression)
        if compiled.error:
            yield RuleError(_field_path(path, str(rule.get("fieldPath", ""))),
                            f"gen cannot evaluate the rule {expression!r}: "
                            f"{compiled.error}", expression, evaluated=False)
            continue
        if is_plain is None:
            is_plain = plain(value)  # once per node
        ok, error = verdict(compiled, value, bool(is_plain))
        if ok:
            continue
        where = _field_path(path, str(rule.get("fieldPath", "")))
        if ok is None:
            yield RuleError(where, f"rule {expression!r} failed to evaluate: {error}", expression)
            continue
        yield RuleError(where, _message(rule, value, expression), expression)


@memoize(maxsize=4096)
def _transition(expression: str) -> bool:
    """Whether a rule reads ``oldSelf`` (a transition rule)."""
    return _OLD_SELF.search(expression) is not None


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


def _walk(value: Any, node: _Node, path: Path_, plain_: bool = False) -> list[RuleError]:
    """The errors at and below ``node``; ``plain_``: ``value`` is part of a plain whole."""
    found: list[RuleError] = []
    if isinstance(value, dict):
        props, extra = node.props, node.extra
        for key, item in value.items():
            sub = props.get(key) if extra is None or key in node.declared else extra
            if sub is not None:
                found += _walk(item, sub, (*path, key), plain_)
    elif isinstance(value, list):
        if node.items is not None:
            for index, item in enumerate(value):
                found += _walk(item, node.items, (*path, index), plain_)
        found += _map_duplicates(value, node.map_keys, path)
    if node.rules:
        found += _node_rules(value, node.rules, path, plain_)
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
