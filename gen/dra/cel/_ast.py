"""The parsed CEL AST, read from cel-expr-python's serialized ``cel.expr.ParsedExpr``.

cel-expr-python does not expose its AST, but ``Expression.serialize()`` returns the protobuf
bytes of a ``google.protobuf.Any`` holding a ``cel.expr.ParsedExpr``. This module decodes the
few message fields it needs (protobuf wire format, no protobuf library) into :class:`Node` trees,
used for the static cost estimate and the source rewrite of unknown attribute domains.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Node", "ParsedAST", "decode_parsed_expr", "rename_calls"]

_MAX_DEPTH = 256


class ASTDecodeError(ValueError):
    """The serialized expression is not the ParsedExpr this module understands."""


@dataclass(frozen=True)
class Node:
    """One expression node.

    ``kind`` is one of ``const``, ``ident``, ``select``, ``call``, ``list``, ``map``, ``comp``.
    ``children``: select → (operand,); call → (target?, *args) with ``has_target``;
    list → elements; map → (key, value, key, value, ...); comp → (range, init, cond, step, result).
    """

    id: int
    kind: str
    name: str = ""
    value: object = None
    children: tuple[Node, ...] = ()
    has_target: bool = False
    test_only: bool = False
    iter_vars: tuple[str, ...] = ()
    accu_var: str = ""

    @property
    def args(self) -> tuple[Node, ...]:
        """Call arguments without the target."""
        return self.children[1:] if self.has_target else self.children

    @property
    def target(self) -> Node | None:
        """The receiver of a member call."""
        return self.children[0] if self.has_target else None

    def walk(self) -> Iterator[Node]:
        """This node and every node below it."""
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(reversed(node.children))


@dataclass(frozen=True)
class ParsedAST:
    """The root expression and the source offset (code points) of each node id."""

    root: Node
    positions: dict[int, int]


Fields = dict[int, list[int | bytes]]


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= len(data):
            raise ASTDecodeError("truncated varint")
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7


def _fields(data: bytes) -> Fields:
    out: Fields = {}
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(data, pos)
        elif wire == 1:
            value = data[pos : pos + 8]
            pos += 8
        elif wire == 2:
            length, pos = _varint(data, pos)
            value = data[pos : pos + length]
            pos += length
        elif wire == 5:
            value = data[pos : pos + 4]
            pos += 4
        else:
            raise ASTDecodeError(f"unsupported wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def _bytes(fields: Fields, number: int) -> bytes:
    values = fields.get(number)
    if not values:
        return b""
    value = values[-1]
    if not isinstance(value, bytes):
        raise ASTDecodeError(f"field {number} is not length-delimited")
    return value


def _int(fields: Fields, number: int) -> int:
    values = fields.get(number)
    if not values:
        return 0
    value = values[-1]
    if not isinstance(value, int):
        raise ASTDecodeError(f"field {number} is not a varint")
    return value


def _str(fields: Fields, number: int) -> str:
    return _bytes(fields, number).decode("utf-8")


def _constant(fields: Fields) -> object:
    if 2 in fields:
        return bool(_int(fields, 2))
    if 3 in fields:
        raw = _int(fields, 3)
        return raw - (1 << 64) if raw >= 1 << 63 else raw
    if 4 in fields:
        return _int(fields, 4)
    if 5 in fields:
        return struct.unpack("<d", _bytes(fields, 5))[0]
    if 6 in fields:
        return _str(fields, 6)
    if 7 in fields:
        return _bytes(fields, 7)
    return None


def _expr(data: bytes, depth: int) -> Node:
    if depth > _MAX_DEPTH:
        raise ASTDecodeError("expression nesting too deep")
    fields = _fields(data)
    node_id = _int(fields, 2)
    sub = depth + 1
    if 3 in fields:
        return Node(node_id, "const", value=_constant(_fields(_bytes(fields, 3))))
    if 4 in fields:
        return Node(node_id, "ident", name=_str(_fields(_bytes(fields, 4)), 1))
    if 5 in fields:
        sel = _fields(_bytes(fields, 5))
        operand = _expr(_bytes(sel, 1), sub)
        return Node(
            node_id, "select", name=_str(sel, 2), children=(operand,), test_only=bool(_int(sel, 3))
        )
    if 6 in fields:
        call = _fields(_bytes(fields, 6))
        target = [_expr(_bytes(call, 1), sub)] if 1 in call else []
        args = [_expr(a, sub) for a in call.get(3, []) if isinstance(a, bytes)]
        return Node(
            node_id, "call", name=_str(call, 2), children=(*target, *args), has_target=bool(target)
        )
    if 7 in fields:
        lst = _fields(_bytes(fields, 7))
        elems = tuple(_expr(e, sub) for e in lst.get(1, []) if isinstance(e, bytes))
        return Node(node_id, "list", children=elems)
    if 8 in fields:
        st = _fields(_bytes(fields, 8))
        kids: list[Node] = []
        for raw in st.get(2, []):
            if not isinstance(raw, bytes):
                continue
            entry = _fields(raw)
            key = (
                _expr(_bytes(entry, 3), sub)
                if 3 in entry
                else Node(0, "const", value=_str(entry, 2))
            )
            kids += [key, _expr(_bytes(entry, 4), sub)]
        return Node(node_id, "map", name=_str(st, 1), children=tuple(kids))
    if 9 in fields:
        comp = _fields(_bytes(fields, 9))
        parts = tuple(_expr(_bytes(comp, n), sub) for n in (2, 4, 5, 6, 7))
        iter_vars = tuple(v for v in (_str(comp, 1), _str(comp, 8)) if v)
        return Node(node_id, "comp", children=parts, iter_vars=iter_vars, accu_var=_str(comp, 3))
    return Node(node_id, "const", value=None)


def decode_parsed_expr(serialized: bytes) -> ParsedAST:
    """Decode ``Expression.serialize()`` of an expression compiled with ``disable_check=True``."""
    outer = _fields(serialized)
    if not _str(outer, 1).endswith("cel.expr.ParsedExpr"):
        raise ASTDecodeError(f"not a ParsedExpr: {_str(outer, 1)!r}")
    parsed = _fields(_bytes(outer, 2))
    source_info = _fields(_bytes(parsed, 3))
    positions: dict[int, int] = {}
    for raw in source_info.get(4, []):
        if isinstance(raw, bytes):
            entry = _fields(raw)
            positions[_int(entry, 1)] = _int(entry, 2)
    return ParsedAST(_expr(_bytes(parsed, 2), 0), positions)


_PRIMITIVES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}
_WELL_KNOWN = {1: "any", 2: "google.protobuf.Timestamp", 3: "google.protobuf.Duration"}


def type_name(raw: bytes) -> str:
    """cel-go's spelling of a serialized ``cel.expr.Type`` (``list(int)``, ``dyn``)."""
    fields = _fields(raw)
    if 1 in fields:
        return "dyn"
    if 2 in fields:
        return "null_type"
    if 3 in fields:
        return _PRIMITIVES.get(_int(fields, 3), "unknown")
    if 4 in fields:
        return f"wrapper({_PRIMITIVES.get(_int(fields, 4), 'unknown')})"
    if 5 in fields:
        return _WELL_KNOWN.get(_int(fields, 5), "unknown")
    if 6 in fields:
        return f"list({type_name(_bytes(_fields(_bytes(fields, 6)), 1))})"
    if 7 in fields:
        entry = _fields(_bytes(fields, 7))
        return f"map({type_name(_bytes(entry, 1))}, {type_name(_bytes(entry, 2))})"
    if 9 in fields:
        return _str(fields, 9)
    if 10 in fields:
        return _str(fields, 10)
    if 14 in fields:
        return _str(_fields(_bytes(fields, 14)), 1)
    return "unknown"


def decode_checked_expr(serialized: bytes) -> tuple[Node, dict[int, bytes]]:
    """The root and the checker's type of every node id, from a checked ``serialize()``."""
    outer = _fields(serialized)
    if not _str(outer, 1).endswith("cel.expr.CheckedExpr"):
        raise ASTDecodeError(f"not a CheckedExpr: {_str(outer, 1)!r}")
    checked = _fields(_bytes(outer, 2))
    types: dict[int, bytes] = {}
    for raw in checked.get(3, []):
        if isinstance(raw, bytes):
            entry = _fields(raw)
            types[_int(entry, 1)] = _bytes(entry, 2)
    return _expr(_bytes(checked, 4), 0), types


# --- renaming calls -------------------------------------------------------------------------
# Sub-expression fields of each message (cel.expr syntax.proto): Expr → its kind messages;
# Select.operand, Call.target/args, CreateList.elements, CreateStruct.entries →
# Entry.map_key/value, Comprehension.iter_range/accu_init/loop_condition/loop_step/result.
_EXPR_KINDS = {5: "select", 6: "call", 7: "list", 8: "struct", 9: "comp"}
_SUB_EXPRS = {
    "select": {1: "expr"},
    "call": {1: "expr", 3: "expr"},
    "list": {1: "expr"},
    "struct": {2: "entry"},
    "entry": {3: "expr", 4: "expr"},
    "comp": {2: "expr", 4: "expr", 5: "expr", 6: "expr", 7: "expr"},
}


def _raw_fields(data: bytes) -> list[tuple[int, int, bytes]]:
    """(field number, wire type, the field's encoded payload) in the order of ``data``."""
    out = []
    pos = 0
    while pos < len(data):
        tag, start = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            _, end = _varint(data, start)
        elif wire == 1:
            end = start + 8
        elif wire == 2:
            length, start = _varint(data, start)
            end = start + length
        elif wire == 5:
            end = start + 4
        else:
            raise ASTDecodeError(f"unsupported wire type {wire}")
        out.append((number, wire, data[start:end]))
        pos = end
    return out


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _encode(fields: list[tuple[int, int, bytes]]) -> bytes:
    out = bytearray()
    for number, wire, payload in fields:
        out += _encode_varint(number << 3 | wire)
        if wire == 2:
            out += _encode_varint(len(payload))
        out += payload
    return bytes(out)


def _rename(data: bytes, kind: str, names: dict[int, str], depth: int) -> bytes:
    if depth > _MAX_DEPTH:
        raise ASTDecodeError("expression nesting too deep")
    fields = _raw_fields(data)
    if kind == "expr":
        node_id = next((int(_varint(p, 0)[0]) for n, w, p in fields if n == 2 and w == 0), 0)
        out = []
        for number, wire, payload in fields:
            sub = _EXPR_KINDS.get(number)
            if sub is not None and wire == 2:
                payload = _rename(payload, sub, names, depth + 1)
                if sub == "call" and node_id in names:
                    payload = _encode([
                        (n, w, names[node_id].encode() if n == 2 else p)
                        for n, w, p in _raw_fields(payload)
                    ])
            out.append((number, wire, payload))
        return _encode(out)
    subs = _SUB_EXPRS[kind]
    return _encode([
        (n, w, _rename(p, subs[n], names, depth + 1) if n in subs and w == 2 else p)
        for n, w, p in fields
    ])


def rename_calls(serialized: bytes, names: dict[int, str]) -> bytes:
    """``serialized`` (a parsed ``Expression.serialize()``) with the function of each call
    node whose id is a key of ``names`` renamed to its value."""
    if not names:
        return serialized
    outer = _raw_fields(serialized)
    out = []
    for number, wire, payload in outer:
        if number == 2 and wire == 2:
            payload = _encode([
                (n, w, _rename(p, "expr", names, 0) if n == 2 and w == 2 else p)
                for n, w, p in _raw_fields(payload)
            ])
        out.append((number, wire, payload))
    return _encode(out)
