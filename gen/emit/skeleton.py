"""Parse each template *shape* once, not each rendered object.

Every value a template writes goes through ``tojson``. While a template renders here,
``tojson`` writes a numbered placeholder instead of the value's JSON and records the
JSON. The rendered text, the *skeleton*, is then the same for every object that took the
same branches and loops through the same template, so it is parsed once and cached; each
object's data is the cached parse with the placeholders replaced by ``json.loads`` of the
recorded JSON. That is exactly what parsing the real text gives, because ``tojson``
writes JSON that YAML reads as the same value (see :func:`gen.emit.render.tojson`).

The shortcut is taken only when it provably gives the same data as the full parse:

* the template is *plain* (:func:`is_plain`): every ``{{ … }}`` ends in ``|tojson``,
  statements are only ``if``/``for``/``set`` and never call ``tojson``, so a placeholder
  can neither steer a branch nor be transformed after it is written;
* every placeholder is found, exactly once, as a whole key or value of the parse;
* no two keys of a mapping become equal once the values are in.

Anything else (YAML errors included) returns ``None`` and the caller renders and parses
the real text, so errors are reported exactly as before.

Each fill plan is compiled once into one Python expression (:func:`filler`) that indexes the
fixed parts and the values; a list or mapping value is parsed once per distinct JSON text
and shared, like the fixed parts (rendered data is read-only). Where ``tojson`` wrote a
string, integer, boolean or None it hands the value over with its text
(:func:`record`), so nothing is parsed back.

The canonical YAML text of a one-document skeleton is compiled once too
(:func:`gen.emit.yamlfast.compile_shape`, with each placeholder a hole), so
:func:`render_shape` also gives each object's text as ``yamlfast.dump`` writes it, from
the values alone, wherever that is provably the same bytes (no placeholder is a key, no
fixed part takes PyYAML's path, no value does: see :meth:`yamlfast.ShapeText.fill`).

Where a one-document skeleton writes no key from a value, :func:`render_filled` also says
where each value sits in the document (:class:`Holes`: the shape's digest and the path of
each placeholder). Everything else in the document is the shape's fixed part, the same in
every object of that shape, so a check whose answer on a subtree depends only on that
subtree can answer once per shape for the subtrees without a hole
(:meth:`gen.emit.crd_rules.SchemaChecks.prepare`).
"""

from __future__ import annotations

import contextvars
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import jinja2

from gen.caches import BoundedCache
from gen.emit import yamlfast

__all__ = ["EXPRESSION", "HOLE", "TOJSON_LAST", "Filled", "Holes", "ShapeHoles", "is_plain",
           "render_data", "render_filled", "render_shape"]

EXPRESSION = re.compile(r"\{\{-?(.*?)-?\}\}", re.DOTALL)
"""A ``{{ … }}`` expression (its inside in group 1)."""

TOJSON_LAST = re.compile(
    r"^[A-Za-z_][\w.]*(\[[^\]]+\])*"           # a name, attribute or item
    r"(\s*\|\s*(string|default\([^()]*\)))*"   # optional string / default(...) filters
    r"\s*\|\s*tojson$"                         # and always tojson last
)
"""The only expression form a plain template uses."""

_STATEMENT = re.compile(r"\{%-?\s*(\w+)(.*?)-?%\}", re.DOTALL)
_PLAIN_STATEMENTS = frozenset({"if", "elif", "else", "endif", "for", "endfor", "set"})
_PLACEHOLDER = re.compile("\x00Gn([0-9]+)\x00")
_IMMUTABLE = frozenset({str, int, float, bool, type(None)})

_recording: contextvars.ContextVar[tuple[list[str], list[Any]] | None] = (
    contextvars.ContextVar("gen_skeleton_recording", default=None))
"""The JSON texts ``tojson`` has written during the current skeleton render, and their
values where ``tojson`` knew them (:data:`FROM_TEXT` elsewhere); per thread."""

_SCALARS: BoundedCache[str, Any] = BoundedCache("gen.emit.skeleton.scalars", 100_000)
"""A recorded JSON text → its (immutable) value."""
_scalars = _SCALARS.data


class _Miss(Exception):  # control flow only: never escapes this module
    """The skeleton cannot stand for the real text."""


def is_plain(source: str) -> bool:
    """True when a template's source only ever writes values through a final ``tojson``."""
    for match in EXPRESSION.finditer(source):
        if not TOJSON_LAST.match(match.group(1).strip()):
            return False
    for match in _STATEMENT.finditer(source):
        keyword, body = match.group(1), match.group(2)
        if keyword not in _PLAIN_STATEMENTS or "tojson" in body:
            return False
    return True


FROM_TEXT: Any = object()
"""For :func:`record`: the value is not known here; take it from the JSON text."""


def record(json_text: str, value: Any = FROM_TEXT) -> str | None:
    """Called by ``tojson`` with the JSON it would write: the placeholder to write instead.

    ``value``, when given, is the immutable scalar a YAML parse of ``json_text`` gives
    (``tojson`` passes it for the strings, integers, booleans and None it writes plainly),
    so the value need not be parsed back. ``None`` outside a skeleton render (``tojson``
    then writes the JSON itself).
    """
    recorded = _recording.get()
    if recorded is None:
        return None
    texts, values = recorded
    texts.append(json_text)
    values.append(value)
    return f'"\\u0000Gn{len(texts) - 1}\\u0000"'


def _plain_templates(env: jinja2.Environment) -> dict[str, bool]:
    cache: dict[str, bool] | None = getattr(env, "gen_plain_templates", None)
    if cache is None:
        cache = {}
        env.extend(gen_plain_templates=cache)
    return cache


def _template_is_plain(env: jinja2.Environment, template: jinja2.Template) -> bool:
    cache = _plain_templates(env)
    name = template.name or ""
    if name not in cache:
        try:
            source = env.loader.get_source(env, name)[0] if env.loader else ""
        except jinja2.TemplateNotFound:
            source = "{{ unknown }}"
        cache[name] = bool(name) and is_plain(source)
    return cache[name]


def render_data(
    env: jinja2.Environment, template: jinja2.Template, context: Mapping[str, Any],
    load_all: Any,
) -> list[Any] | None:
    """The documents the template renders to, from the cached skeleton; None: not here.

    Template errors raise exactly as a normal render does. ``load_all`` parses YAML text.
    Parts of the result without a value in them are shared between objects of the same
    shape: rendered data is read-only.
    """
    shaped = render_shape(env, template, context, load_all)
    return None if shaped is None else shaped[0]


def render_shape(
    env: jinja2.Environment, template: jinja2.Template, context: Mapping[str, Any],
    load_all: Any,
) -> tuple[list[Any], str | None] | None:
    """:func:`render_data`, and ``yamlfast.dump`` of its one document where the shape's
    cached text gives it (None there: dump the data)."""
    filled = render_filled(env, template, context, load_all)
    return None if filled is None else (filled.docs, filled.text)


Path_ = tuple[str | int, ...]

HOLE = True
"""A leaf of :attr:`ShapeHoles.tree`: a value sits here."""


@dataclass(frozen=True)
class ShapeHoles:
    """Where the values of one skeleton shape sit in its document: ``paths[i]`` is the key
    path of value ``i``. Two shapes with the same ``shape`` digest have the same skeleton
    text, so the same fixed part."""

    shape: str
    """SHA-256 of the skeleton's text (the template's output with placeholders)."""
    paths: tuple[Path_, ...]
    tree: Mapping[str | int, Any] = field(compare=False, repr=False, default_factory=dict)
    """The paths as nested maps: a key that leads to a value maps to its subtree, a value
    itself to :data:`HOLE`; a key that is absent has no value below it."""

    @classmethod
    def of(cls, shape: str, paths: tuple[Path_, ...]) -> ShapeHoles:
        """The holes of ``shape`` at ``paths`` (with their :attr:`tree`)."""
        return cls(shape, paths, _tree(paths))


def _tree(paths: tuple[Path_, ...]) -> dict[str | int, Any]:
    root: dict[str | int, Any] = {}
    for path in paths:
        if not path:
            return {}  # the whole document is one value: nothing is fixed
        node = root
        for key in path[:-1]:
            node = node.setdefault(key, {})
        node[path[-1]] = HOLE
    return root


def _holes(plan: _Plan, text: str) -> ShapeHoles | None:
    """The :class:`ShapeHoles` of a document's plan; None when a key is a value (then the
    keys of the fixed part are not fixed) or the whole document is one value."""
    paths: dict[int, Path_] = {}

    def walk(part: _Plan, path: Path_) -> bool:
        tag = part[0]
        if tag == "p":
            paths[int(part[1])] = path
        elif tag == "l":
            return all(walk(item, (*path, i)) for i, item in enumerate(part[1]))
        elif tag == "d":
            for key_plan, value_plan in part[1]:
                if key_plan[0] != "s" or not walk(value_plan, (*path, key_plan[1])):
                    return False
        return True

    if not walk(plan, ()) or () in paths.values():
        return None
    ordered = tuple(paths[i] for i in sorted(paths))
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return ShapeHoles.of(digest, ordered)


class Holes(NamedTuple):
    """One object's values and where they sit (:class:`ShapeHoles`)."""

    shape: ShapeHoles
    values: tuple[Any, ...]
    texts: tuple[str, ...]
    """The JSON text ``tojson`` wrote for each value (the value is its parse)."""


class Filled(NamedTuple):
    """What :func:`render_filled` gives for one template render."""

    docs: list[Any]
    text: str | None
    """``yamlfast.dump`` of the one document, from the shape's text (None: dump the data)."""
    holes: Holes | None
    """Where the values sit (None: not known, for a shape with more than one document or a
    key written from a value)."""


def render_filled(
    env: jinja2.Environment, template: jinja2.Template, context: Mapping[str, Any],
    load_all: Any,
) -> Filled | None:
    """:func:`render_shape`, and where the values sit in the document (:class:`Holes`)."""
    if not _template_is_plain(env, template):
        return None
    recorded: list[str] = []
    known: list[Any] = []
    token = _recording.set((recorded, known))
    try:
        text = template.render(**context)
    finally:
        _recording.reset(token)
    if text in _skeletons:
        compiled = _skeletons[text]
    else:
        compiled = _SKELETONS.put(text, _compile(text, load_all))
    if compiled is None or compiled[1] != len(recorded):
        # The template writes values where a skeleton cannot stand for them (a comment, a
        # block string): stop rendering it twice and take the full parse from now on.
        _plain_templates(env)[template.name or ""] = False
        return None
    try:
        values = [
            _value(json_text) if value is FROM_TEXT else value
            for json_text, value in zip(recorded, known, strict=True)
        ]
        docs = [
            _fill(plan, values) if fill is None else fill(values)
            for plan, fill in zip(compiled[0], compiled[3], strict=True)
        ]
    except _Miss:
        return None
    shape, holes = compiled[2], compiled[4]
    return Filled(docs, None if shape is None else shape.fill(values, recorded),
                  None if holes is None else Holes(holes, tuple(values), tuple(recorded)))


_Plan = tuple[Any, ...]
_Filler = Callable[[list[Any]], Any]
_Compiled = tuple[list[_Plan], int, yamlfast.ShapeText | None, list[_Filler | None],
                  ShapeHoles | None]
_SKELETONS: BoundedCache[str, _Compiled | None] = BoundedCache(
    "gen.emit.skeleton.skeletons", 4096)
"""A skeleton render's text → its compiled plans, placeholder count and canonical text
(None: no skeleton)."""
_skeletons = _SKELETONS.data


def _compile(text: str, load_all: Any) -> _Compiled | None:
    """Parse a skeleton into fill plans; None when it cannot stand for the real text."""
    try:
        docs = load_all(text)
    except Exception:  # noqa: BLE001 - the real text's parse reports it
        return None
    found: list[int] = []
    try:
        plans = [_plan(doc, found) for doc in docs]
    except _Miss:
        return None
    if sorted(found) != list(range(len(found))):
        return None  # a placeholder lost (in a comment, a block string) or repeated
    shape = yamlfast.compile_shape(docs[0], _hole) if len(docs) == 1 else None
    holes = _holes(plans[0], text) if len(docs) == 1 else None
    return plans, len(found), shape, [filler(plan) for plan in plans], holes


def _hole(node: Any) -> int | None:
    """The number of the placeholder ``node`` is (each was checked whole by ``_plan``)."""
    if type(node) is str and "\x00" in node:
        return int(_PLACEHOLDER.fullmatch(node).group(1))  # type: ignore[union-attr]
    return None


def _index(text: str, found: list[int]) -> int:
    match = _PLACEHOLDER.fullmatch(text)
    if match is None:
        raise _Miss  # a placeholder inside a longer string
    found.append(int(match.group(1)))
    return found[-1]


def _plan(node: Any, found: list[int]) -> _Plan:
    """("s", node): no value inside, shared as it is; ("p", i): value i; ("d"/"l", parts)."""
    before = len(found)
    kind = type(node)
    plan: _Plan
    if kind is str:
        return ("p", _index(node, found)) if "\x00" in node else ("s", node)
    if kind is dict:
        items = []
        for key, value in node.items():
            key_plan: _Plan = (
                ("p", _index(key, found)) if type(key) is str and "\x00" in key else ("s", key)
            )
            items.append((key_plan, _plan(value, found)))
        plan = ("d", tuple(items))
    elif kind is list:
        plan = ("l", tuple(_plan(item, found) for item in node))
    elif kind in _IMMUTABLE:
        return ("s", node)
    else:
        raise _Miss  # timestamps, sets, binary: rare; the real parse handles them
    return plan if len(found) > before else ("s", node)


def _fill(plan: _Plan, values: list[Any]) -> Any:
    tag = plan[0]
    if tag == "s":
        return plan[1]
    if tag == "p":
        return values[plan[1]]
    if tag == "l":
        return [_fill(item, values) for item in plan[1]]
    out: dict[Any, Any] = {}
    for key_plan, value_plan in plan[1]:
        key = key_plan[1]
        if key_plan[0] == "p":
            key = values[key]
            if type(key) not in _IMMUTABLE:
                raise _Miss
        if key in out:
            raise _Miss  # a value made two keys equal: the real parse reports it
        out[key] = _fill(value_plan, values)
    return out


_MAX_DEPTH = 64
"""Deeper plans keep :func:`_fill` (Python's compiler limits how deep an expression nests)."""


def filler(plan: _Plan) -> _Filler | None:
    """:func:`_fill` of ``plan`` as one compiled expression: ``filler(plan)(values)`` builds
    the same document (the same fixed parts shared, the values in the same places, the
    keys in the same order). None where a key is a value: those keep :func:`_fill`, which
    checks each such key.

    The expression only indexes two tuples, the fixed parts (``K``) and the values (``v``):
    no text from a template or a value is ever part of the code compiled.
    """
    fixed: list[Any] = []

    def const(node: Any) -> str:
        fixed.append(node)
        return f"K[{len(fixed) - 1}]"

    def expr(part: _Plan, depth: int) -> str:
        if depth > _MAX_DEPTH:
            raise _Miss
        tag = part[0]
        if tag == "s":
            return const(part[1])
        if tag == "p":
            return f"v[{int(part[1])}]"
        if tag == "l":
            return "[" + "".join(f"{expr(item, depth + 1)}, " for item in part[1]) + "]"
        entries = []
        for key_plan, value_plan in part[1]:
            if key_plan[0] != "s":
                raise _Miss  # a key from a value: _fill checks it is hashable and new
            entries.append(f"{const(key_plan[1])}: {expr(value_plan, depth + 1)}")
        return "{" + ", ".join(entries) + "}"

    try:
        source = f"lambda v: {expr(plan, 0)}"
    except _Miss:
        return None
    namespace = {"K": tuple(fixed)}
    function: _Filler = eval(compile(source, "<gen.emit.skeleton>", "eval"), namespace)
    return function


_SURROGATE_ESCAPE = re.compile(r"\\ud[89a-f]", re.IGNORECASE)
"""JSON joins an escaped surrogate pair into one character; YAML keeps two."""


def _value(json_text: str) -> Any:
    cached = _scalars.get(json_text)
    if cached is not None or json_text == "null":
        return cached
    cached = _collections.get(json_text)
    if cached is not None:
        return cached
    if "\\u" in json_text and _SURROGATE_ESCAPE.search(json_text):
        raise _Miss
    value = json.loads(json_text)
    if type(value) in _IMMUTABLE:
        _SCALARS.put(json_text, value)
    elif len(json_text) <= _MAX_SHARED:
        # A collection (labels, args, env, …) is parsed once per distinct text and shared
        # by every object that writes it: rendered data is read-only (render_data).
        _COLLECTIONS.put(json_text, value)
    return value


_COLLECTIONS: BoundedCache[str, Any] = BoundedCache("gen.emit.skeleton.collections", 16_384)
"""A recorded JSON text of a list or mapping → its value, shared (read-only)."""
_collections = _COLLECTIONS.data
_MAX_SHARED = 8192
