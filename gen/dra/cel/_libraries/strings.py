"""The strings extension's index functions as cel-go runs them: ``charAt``, ``substring``,
``indexOf`` and ``lastIndexOf`` of a string (google/cel-go ``ext/strings.go``@v0.29.2, the
cel-go of k8s.io/apiserver v0.37.2).

cel-cpp's strings extension words their errors differently (``<pos> is greater than
<string>.size()``, without the index) and refuses an ``indexOf`` / ``lastIndexOf`` offset past
the end, where cel-go answers ``-1``. gen runs these calls on a string receiver as the
functions below (:data:`RUNTIME_NAMES`), so that the result and the error text are cel-go's:
``index out of range: 5``, ``invalid substring range. start: 2, end: 1``. Indexes count code
points, as cel-go's ``[]rune`` does.
"""

from __future__ import annotations

from collections.abc import Callable

from gen.dra.cel._libraries._base import LibraryError

__all__ = ["IMPLEMENTATIONS", "RUNTIME_NAMES"]


_CEL_TYPES = ((bool, "bool"), (int, "int"), (float, "double"), (str, "string"),
              (bytes, "bytes"), (type(None), "null_type"), (list, "list"), (dict, "map"))


def _cel_type(value: object) -> str:
    return next((name for kind, name in _CEL_TYPES if isinstance(value, kind)), "dyn")


def _checked(name: str, args: tuple[object, ...], *kinds: type) -> None:
    """cel-go's dispatch error for arguments of other types than the overload's:
    ``no such overload: charAt(int, int)``."""
    if len(args) != len(kinds) or any(
        isinstance(a, bool) != (k is bool) or not isinstance(a, k)
        for a, k in zip(args, kinds, strict=True)
    ):
        raise LibraryError(
            f"no such overload: {name}({', '.join(_cel_type(a) for a in args)})"
        )


def _as_int(value: object) -> int:
    """An argument :func:`_checked` has found to be an int."""
    return value if isinstance(value, int) else 0


def _char_at(text: object, index: object) -> str:
    _checked("charAt", (text, index), str, int)
    runes, i = str(text), _as_int(index)
    if i < 0 or i > len(runes):
        raise LibraryError(f"index out of range: {i}")
    return runes[i] if i < len(runes) else ""


def _substring(text: object, start: object, end: object = None) -> str:
    args = (text, start) if end is None else (text, start, end)
    _checked("substring", args, str, int, *((int,) if end is not None else ()))
    runes, begin = str(text), _as_int(start)
    if end is None:
        if begin < 0 or begin > len(runes):
            raise LibraryError(f"index out of range: {begin}")
        return runes[begin:]
    stop = _as_int(end)
    if begin > stop:
        raise LibraryError(f"invalid substring range. start: {begin}, end: {stop}")
    for i in (begin, stop):
        if i < 0 or i > len(runes):
            raise LibraryError(f"index out of range: {i}")
    return runes[begin:stop]


def _search_args(name: str, text: object, sub: object, offset: object) -> tuple[str, str]:
    """The text and needle of indexOf / lastIndexOf, their argument types checked as
    cel-go's overloads take them (string, string[, int])."""
    args = (text, sub) if offset is None else (text, sub, offset)
    _checked(name, args, str, str, *((int,) if offset is not None else ()))
    return str(text), str(sub)


def _index_of(text: object, sub: object, offset: object = None) -> int:
    runes, needle = _search_args("indexOf", text, sub, offset)
    off = 0 if offset is None else _as_int(offset)
    if off < 0:
        raise LibraryError(f"index out of range: {off}")
    if needle == "":
        return min(off, len(runes))
    if off >= len(runes):
        return -1
    return runes.find(needle, off)


def _last_index_of(text: object, sub: object, offset: object = None) -> int:
    runes, needle = _search_args("lastIndexOf", text, sub, offset)
    if offset is None:
        if needle == "":
            return len(runes)
        if len(runes.encode("utf-8")) < len(needle.encode("utf-8")):
            return -1
        off = len(runes) - 1
    else:
        off = _as_int(offset)
        if off < 0:
            raise LibraryError(f"index out of range: {off}")
        if needle == "":
            return min(off, len(runes))
    if off >= len(runes):
        return -1
    off = min(off, len(runes) - len(needle))
    return runes.rfind(needle, 0, off + len(needle)) if off >= 0 else -1


IMPLEMENTATIONS: dict[str, Callable[..., object]] = {
    "charAt": _char_at,
    "substring": _substring,
    "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
}
"""The functions by their CEL name."""

RUNTIME_NAMES = {name: f"gen_string_{name}" for name in IMPLEMENTATIONS}
"""The name each runs under: the checker keeps the strings extension's declarations, the
runtime parse of a call on a string receiver is renamed to gen's function."""
