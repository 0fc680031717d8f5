"""Source-text helpers: matching brackets and top-level ``&&`` splitting, string-literal aware."""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["matching_bracket", "split_conjuncts"]

_OPEN = {"[": "]", "(": ")", "{": "}"}
_CLOSE = set(_OPEN.values())


def _skip_string(text: str, i: int) -> int:
    """Index just past the string literal that starts at ``text[i]`` (a quote)."""
    raw = i > 0 and text[i - 1] in "rR"
    quote = text[i]
    delim = quote * 3 if text.startswith(quote * 3, i) else quote
    j = i + len(delim)
    while j < len(text):
        if not raw and text[j] == "\\":
            j += 2
            continue
        if text.startswith(delim, j):
            return j + len(delim)
        j += 1
    return len(text)


def _tokens(text: str, start: int = 0) -> Iterator[tuple[int, str, int]]:
    """(index, character, depth before it) for every character outside string literals."""
    depth = 0
    i = start
    while i < len(text):
        ch = text[i]
        if ch in "'\"":
            i = _skip_string(text, i)
            continue
        if ch in _CLOSE:
            depth -= 1
        yield i, ch, depth
        if ch in _OPEN:
            depth += 1
        i += 1


def matching_bracket(text: str, index: int) -> int | None:
    """The index of the bracket closing the one at ``text[index]``, or None."""
    for i, ch, depth in _tokens(text, index):
        if i > index and depth == 0 and ch in _CLOSE:
            return i
    return None


def _strip_parens(text: str) -> str:
    text = text.strip()
    while text.startswith("(") and matching_bracket(text, 0) == len(text) - 1:
        text = text[1:-1].strip()
    return text


def split_conjuncts(text: str) -> list[str]:
    """The operands of a top-level ``a && b && c``; ``[text]`` when the top is not ``&&``."""
    text = _strip_parens(text)
    cuts: list[int] = []
    prev = ""
    for i, ch, depth in _tokens(text):
        if depth == 0:
            if ch == "?" and prev != ".":
                return [text]  # a conditional binds looser than &&
            if ch == "|" and prev == "|":
                return [text]
            if ch == "&" and prev == "&":
                cuts.append(i - 1)
        prev = ch
    if not cuts:
        return [text]
    parts, last = [], 0
    for cut in cuts:
        parts.append(text[last:cut].strip())
        last = cut + 2
    parts.append(text[last:].strip())
    return parts
