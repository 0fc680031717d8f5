"""Fast paths for the two YAML steps of every render: parse-back and canonical dump.

PyYAML's C extension only scans and emits; building Python objects (constructor,
resolver) and building events from them (representer, serializer) run in Python and
were four fifths of a render. Both steps here keep PyYAML's exact semantics and bytes
but work per *distinct scalar*: a rendered fleet repeats the same keys and values
thousands of times, so each distinct scalar is resolved or represented once and cached.

* :func:`load_one` builds the documents straight from libyaml's events. A plain scalar
  is resolved by PyYAML's own safe resolver and constructor (cached by text); anything
  rarer (anchors, aliases, explicit tags, merge keys) falls back to ``yaml.load_all``.
* :func:`dump` writes the canonical block form of JSON-like data (sorted keys, ``- ``
  items not indented under their key, ``{}``/``[]`` for empty collections) and asks
  PyYAML for each distinct scalar's text. Data it cannot prove it writes identically
  (multi-line or very long strings, non-string keys, other types) is dumped by PyYAML.
* :func:`compile_shape` writes that block form once for a document whose values are not
  all known yet (*holes*, as :mod:`gen.emit.skeleton` has them), and
  :meth:`ShapeText.fill` writes the document's text from the values alone, with the
  very code :func:`dump` runs for each value in that position.

``tests/test_yamlfast.py`` checks both against PyYAML on generated data, byte for byte.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import yaml

from gen.caches import BoundedCache

__all__ = ["DuplicateKeyError", "ShapeText", "compile_shape", "dump", "dump_slow", "load_all"]

_CParser: Any
try:
    from yaml._yaml import CParser as _CParser
except ImportError:  # PyYAML without libyaml: PyYAML's own path, same results
    _CParser = None
_SafeLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_BaseDumper: type[Any] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

_MAX_FAST_SCALAR = 512
"""Longer strings may be folded by the emitter; they take PyYAML's path."""


class DuplicateKeyError(ValueError):
    """A mapping in the parsed text repeats a key; ``problem_mark`` is where (as PyYAML's)."""

    def __init__(self, message: str, problem_mark: Any = None) -> None:
        super().__init__(message)
        self.problem_mark = problem_mark


class _Fallback(Exception):  # control flow only: never escapes this module
    """The fast path met something only PyYAML handles exactly."""


# --- parse -----------------------------------------------------------------------------

_resolver: Any = yaml.SafeLoader("")
_PLAIN: BoundedCache[str, Any] = BoundedCache("gen.emit.yamlfast.plain", 100_000)
"""A plain scalar's text → its value."""
_plain_cache = _PLAIN.data


def _plain(value: str) -> Any:
    """A plain scalar's value, resolved exactly as ``yaml.safe_load`` does."""
    try:
        return _plain_cache[value]
    except KeyError:
        pass
    tag = _resolver.resolve(yaml.ScalarNode, value, (True, False))
    construct = _resolver.yaml_constructors.get(tag)
    if construct is None or tag == "tag:yaml.org,2002:merge":
        raise _Fallback
    return _PLAIN.put(value, construct(_resolver, yaml.ScalarNode(tag, value)))


_NO_KEY: Any = object()
_OK_TAGS = (None, "!")


def _build(parser: Any) -> list[Any]:  # noqa: C901 - one hot loop, kept inline for speed
    """Documents from the parser's events; raise :class:`_Fallback` on rare features."""
    scalar_event, mapping_start, sequence_start = (
        yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)
    ends = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
    get_event = parser.get_event
    plain_cache = _plain_cache
    docs: list[Any] = []
    # The open collections; for a mapping, keys[i] is its pending key (or _NO_KEY).
    stack: list[Any] = []
    keys: list[Any] = []
    container: Any = None  # stack[-1]
    root: Any = None
    value: Any
    while True:
        event = get_event()
        kind = type(event)
        if kind is scalar_event:
            if event.anchor is not None or event.tag not in _OK_TAGS:
                raise _Fallback
            value = event.value
            if event.implicit[0]:
                value = plain_cache[value] if value in plain_cache else _plain(value)
        elif kind is mapping_start or kind is sequence_start:
            if event.anchor is not None or event.tag not in _OK_TAGS:
                raise _Fallback
            value = {} if kind is mapping_start else []
        elif kind in ends:
            stack.pop()
            keys.pop()
            container = stack[-1] if stack else None
            continue
        elif kind is yaml.DocumentEndEvent:
            docs.append(root)
            root = None
            continue
        elif kind is yaml.StreamEndEvent:
            return docs
        elif kind is yaml.AliasEvent:
            raise _Fallback
        else:  # stream and document start
            continue
        # Attach the new node to the open collection (or make it the document).
        if container is None:
            root = value
            if type(value) is dict or type(value) is list:
                stack.append(value)
                keys.append(_NO_KEY)
                container = value
            continue
        if type(container) is list:
            container.append(value)
        elif keys[-1] is _NO_KEY:
            if type(value) is dict or type(value) is list:
                raise _Fallback  # a collection as a key
            if value in container:
                raise DuplicateKeyError(f"duplicate key {value!r}", event.start_mark)
            keys[-1] = value
            continue
        else:
            container[keys[-1]] = value
            keys[-1] = _NO_KEY
        if type(value) is dict or type(value) is list:
            stack.append(value)
            keys.append(_NO_KEY)
            container = value


def load_all(text: str) -> list[Any]:
    """Every document of ``text``, as ``list(yaml.load_all(text, SafeLoader))`` gives them.

    Unlike PyYAML, a repeated mapping key raises :class:`DuplicateKeyError` (a subclass
    of ``ValueError``) instead of silently keeping the last value.
    """
    if _CParser is not None:
        parser = _CParser(text)
        try:
            return _build(parser)
        except _Fallback:
            pass
        finally:
            parser.dispose()
    return list(yaml.load_all(text, Loader=_SafeLoader))


# --- dump ------------------------------------------------------------------------------


class _Dumper(_BaseDumper):  # type: ignore[misc]
    """Safe dumper that writes multi-line strings as literal blocks."""


def _str_representer(dumper: Any, value: str) -> Any:
    if "\n" in value and not any(c in value for c in "\r\t") and value == value.rstrip(" "):
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str_representer)

# What reads out/ (kubectl, Argo CD, kubeconform: sigs.k8s.io/yaml) resolves plain scalars
# with go-yaml v2 (go.yaml.in/yaml/v2 resolve.go@v2.4.4), which reads more of them as
# booleans and numbers than PyYAML does: ``y``, ``Y``, ``n``, ``N``; ``1e3``, ``08``, ``0o17``,
# ``0X1F`` (``strconv.ParseInt(s, 0, 64)`` and its ``yamlStyleFloat``). Strings like these
# are quoted, so every reader gets the string gen validated.
_Dumper.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))
_Dumper.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?$"),
    list("-+0123456789."))
_Dumper.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^[-+]?0[bBoOxX][0-9a-fA-F_]+$"), list("-+0"))


def dump_slow(data: Any) -> str:
    """The canonical YAML form, by PyYAML: sorted keys, block style, literal blocks."""
    text: str = yaml.dump(
        data, Dumper=_Dumper, sort_keys=True, default_flow_style=False,
        allow_unicode=True, width=4096, explicit_start=False,
    )
    return text


_SCALAR: BoundedCache[tuple[type, Any], str] = BoundedCache("gen.emit.yamlfast.scalar", 100_000)
"""(type, value) → the text :func:`dump_slow` writes for it."""
_scalar_cache = _SCALAR.data
_LINE_BREAKS = frozenset("\r\n\x85\u2028\u2029")


_PLAIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_./-]*")
"""Strings PyYAML writes plain, as they are, unless the resolver would read them as another
type: a letter first (no number, timestamp, ``.inf``, indicator or merge key can start so),
then only characters that are never indicators or need quoting in a block scalar."""
_RESOLVES = frozenset({
    "yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE", "false", "False", "FALSE",
    "on", "On", "ON", "off", "Off", "OFF", "null", "Null", "NULL", "y", "Y", "n", "N",
})
"""Of those, the ones PyYAML's implicit resolvers read as a bool or null (its ``bool`` and
``null`` patterns, ``yaml/resolver.py``), and go-yaml v2's other booleans (:class:`_Dumper`):
they are quoted."""


def _scalar(value: Any) -> str:
    """The text :func:`dump_slow` writes for ``value`` as a mapping value (one line)."""
    # By type, and floats by their repr: 0.0 == -0.0 (and 1 == 1.0 == True) as dict keys.
    key = (type(value), repr(value) if type(value) is float else value)
    try:
        return _scalar_cache[key]
    except KeyError:
        pass
    if type(value) is str:
        if len(value) > _MAX_FAST_SCALAR or not _LINE_BREAKS.isdisjoint(value):
            raise _Fallback
        if _PLAIN_WORD.fullmatch(value) and value not in _RESOLVES:
            return _SCALAR.put(key, value)
    elif type(value) is int:
        return _SCALAR.put(key, int.__repr__(value))
    text = dump_slow({"k": value})
    if not text.startswith("k: ") or text.count("\n") != 1:
        raise _Fallback
    return _SCALAR.put(key, text[3:-1])


_SCALARS = frozenset({str, int, float, bool, type(None)})


_KEY: BoundedCache[str, str] = BoundedCache("gen.emit.yamlfast.key", 100_000)
_STR: BoundedCache[str, str] = BoundedCache("gen.emit.yamlfast.str", 100_000)
_key_cache = _KEY.data
_str_cache = _STR.data
"""The hot caches: key text and string-value text, by the string itself."""


def _key(key: Any) -> str:
    if type(key) is not str or not key or not _LINE_BREAKS.isdisjoint(key):
        raise _Fallback  # libyaml writes these as complex "? " keys
    text = _scalar(key)
    if len(text) > 120:  # libyaml writes longer keys as complex "? " keys
        raise _Fallback
    return _KEY.put(key, text)


def _value(value: Any) -> str:
    if type(value) is str:
        return _STR.put(value, _scalar(value))
    return _scalar(value)


def _emit(data: Any, indent: str, out: list[str]) -> None:
    """Append the block form of a non-empty collection ``data`` at ``indent``."""
    append = out.append
    if type(data) is dict:
        keys, strs = _key_cache, _str_cache
        for key in sorted(data):
            value = data[key]
            head = keys.get(key) or _key(key)
            kind = type(value)
            if kind is str:
                append(f"{indent}{head}: {strs.get(value) or _value(value)}\n")
            elif kind is dict:
                if value:
                    append(f"{indent}{head}:\n")
                    _emit(value, indent + "  ", out)
                else:
                    append(f"{indent}{head}: {{}}\n")
            elif kind is list:
                if value:
                    append(f"{indent}{head}:\n")
                    _emit(value, indent, out)
                else:
                    append(f"{indent}{head}: []\n")
            elif kind in _SCALARS:
                append(f"{indent}{head}: {_value(value)}\n")
            else:
                raise _Fallback
        return
    for item in data:
        kind = type(item)
        if kind is str:
            append(f"{indent}- {_str_cache.get(item) or _value(item)}\n")
        elif kind is dict or kind is list:
            if not item:
                append(indent + "- " + ("{}" if kind is dict else "[]") + "\n")
                continue
            # The first line of the nested block shares the "- " line.
            nested: list[str] = []
            _emit(item, indent + "  ", nested)
            append(indent + "- " + nested[0][len(indent) + 2:])
            out.extend(nested[1:])
        elif kind in _SCALARS:
            append(f"{indent}- {_value(item)}\n")
        else:
            raise _Fallback


def dump(data: Any) -> str:
    """:func:`dump_slow`, faster: the same bytes, for the JSON-like data gen renders."""
    if type(data) not in (dict, list) or not data:
        return dump_slow(data)
    out: list[str] = []
    try:
        _emit(data, "", out)
    except (_Fallback, TypeError):  # TypeError: keys that do not sort
        return dump_slow(data)
    return "".join(out)


# --- per-shape text ----------------------------------------------------------------------
#
# What :func:`_emit` writes for one mapping entry or one sequence item depends only on
# its key, its value and its indent, and the order of a mapping's entries only on its
# keys. So for a document whose keys are all known and some values are holes, the text
# is fixed everywhere except at the holes, and each hole's text is what ``_emit`` writes
# for the value at that (key, indent). The one interaction between neighbours is a
# sequence item that is a collection: its first line shares the ``- `` line, which
# rewrites the first characters of that line; where that line is a hole's, the rewrite is
# made once, here, to the hole's fixed start (every line a hole writes first starts with
# it, see :meth:`ShapeText.fill`).

_ENTRY, _ITEM = 0, 1


class ShapeText:
    """The canonical text of a document with holes: fill it with the holes' values."""

    __slots__ = ("_head", "_holes")

    def __init__(self, head: str, holes: tuple[tuple[int, str, str, int, str], ...]) -> None:
        self._head = head
        self._holes = holes  # (kind, start, indent, hole index, literal text after it)

    def fill(self, values: Sequence[Any], keys: Sequence[str] | None = None) -> str | None:
        """``dump`` of the document with ``values[i]`` in hole ``i``; None: ask ``dump``.

        None where ``dump`` would not take its fast path for a value (it then writes
        PyYAML's text, which only ``dump_slow`` of the whole document gives).

        ``keys``, when given, names each value exactly (equal keys, equal values: the
        skeleton passes each value's JSON text): a collection's text at a given indent is
        then written once per key and reused (:data:`_BLOCKS`).
        """
        out = [self._head]
        append = out.append
        strs = _str_cache
        blocks = _blocks
        try:
            for kind, start, indent, index, tail in self._holes:
                value = values[index]
                vtype = type(value)
                if vtype is str:
                    text = strs.get(value) or _value(value)
                    append(f"{start} {text}\n" if kind is _ENTRY else f"{start}{text}\n")
                elif vtype is dict or vtype is list:
                    if keys is None:
                        append(start + _block(value, vtype, kind, indent))
                    else:
                        block_key = (keys[index], kind, indent)
                        block = blocks.get(block_key)
                        if block is None:
                            block = _block(value, vtype, kind, indent)
                            if len(block) <= _MAX_BLOCK:
                                _BLOCKS.put(block_key, block)
                        append(start + block)
                elif vtype in _SCALARS:
                    text = _value(value)
                    append(f"{start} {text}\n" if kind is _ENTRY else f"{start}{text}\n")
                else:
                    return None
                append(tail)
        except (_Fallback, TypeError):
            return None
        return "".join(out)


_BLOCKS: BoundedCache[tuple[str, int, str], str] = BoundedCache("gen.emit.yamlfast.blocks", 16_384)
"""(a value's exact key, hole kind, indent) → the text a collection hole writes after its
fixed start; only blocks up to :data:`_MAX_BLOCK` characters are kept."""
_blocks = _BLOCKS.data
_MAX_BLOCK = 8192


def _block(value: Any, vtype: type, kind: int, indent: str) -> str:
    """What :func:`_emit` writes for a collection hole after the hole's fixed start."""
    if not value:
        empty = "{}" if vtype is dict else "[]"
        return f" {empty}\n" if kind is _ENTRY else f"{empty}\n"
    out: list[str] = []
    if kind is _ENTRY:
        out.append("\n")
        _emit(value, indent + "  " if vtype is dict else indent, out)
        return "".join(out)
    _emit(value, indent + "  ", out)
    out[0] = out[0][len(indent) + 2:]
    return "".join(out)


def compile_shape(doc: Any, hole: Callable[[Any], int | None]) -> ShapeText | None:
    """The text :func:`dump` writes for ``doc`` where ``hole(node)`` numbers the holes.

    None where it cannot be proven the same for every value: ``doc`` is not a non-empty
    mapping, a key is a hole (the order of keys would depend on it), or a fixed part takes
    PyYAML's path. Each hole must be a whole mapping value or sequence item.
    """
    if type(doc) is not dict or not doc:
        return None
    parts: list[Any] = []
    try:
        _shape(doc, "", hole, parts)
    except (_Fallback, TypeError):
        return None
    # Literal lines between the holes, joined: text, (hole, text), (hole, text), ...
    texts: list[list[str]] = [[]]
    found: list[list[Any]] = []
    for part in parts:
        if type(part) is str:
            texts[-1].append(part)
        else:
            found.append(part)
            texts.append([])
    holes = tuple(
        (kind, start, indent, index, "".join(tail))
        for (kind, start, indent, index), tail in zip(found, texts[1:], strict=True)
    )
    return ShapeText("".join(texts[0]), holes)


def _shape(  # noqa: C901 - kept line for line beside _emit, which it mirrors
    data: Any, indent: str, hole: Callable[[Any], int | None], out: list[Any],
) -> None:
    """:func:`_emit` of a document with holes: lines, and ``[kind, start, indent, i]``."""
    if type(data) is dict:
        for key in sorted(data):
            if hole(key) is not None:
                raise _Fallback
            value = data[key]
            head = _key_cache.get(key) or _key(key)
            index = hole(value)
            if index is not None:
                out.append([_ENTRY, f"{indent}{head}:", indent, index])
                continue
            kind = type(value)
            if kind is dict:
                if value:
                    out.append(f"{indent}{head}:\n")
                    _shape(value, indent + "  ", hole, out)
                else:
                    out.append(f"{indent}{head}: {{}}\n")
            elif kind is list:
                if value:
                    out.append(f"{indent}{head}:\n")
                    _shape(value, indent, hole, out)
                else:
                    out.append(f"{indent}{head}: []\n")
            elif kind in _SCALARS:
                out.append(f"{indent}{head}: {_value(value)}\n")
            else:
                raise _Fallback
        return
    for item in data:
        index = hole(item)
        if index is not None:
            out.append([_ITEM, f"{indent}- ", indent, index])
            continue
        kind = type(item)
        if kind is dict or kind is list:
            if not item:
                out.append(indent + "- " + ("{}" if kind is dict else "[]") + "\n")
                continue
            nested: list[Any] = []
            _shape(item, indent + "  ", hole, nested)
            first = nested[0]
            if type(first) is str:
                nested[0] = indent + "- " + first[len(indent) + 2:]
            else:  # a hole writes the first line: the "- " goes into its fixed start
                first[1] = indent + "- " + first[1][len(indent) + 2:]
            out.extend(nested)
        elif kind in _SCALARS:
            out.append(f"{indent}- {_value(item)}\n")
        else:
            raise _Fallback
