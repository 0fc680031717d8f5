"""Kubernetes' regex library (k8s.io/apiserver ``pkg/cel/library/regex.go``@v0.36.0): ``find``
and ``findAll``, with RE2's syntax as far as Python's ``re`` can follow it."""

from __future__ import annotations

import re

from cel_expr_python import cel

from gen.caches import memoize
from gen.dra.cel._libraries._base import INT, STR, Declarations, LibraryError, Overload

__all__ = ["DECLARATIONS"]


def _regex(pattern: object) -> re.Pattern[str]:
    """``pattern`` compiled as RE2 reads it, as far as Python's ``re`` can (ASCII classes)."""
    from gen.dra.cel._validate import RE2_ONLY, valid_regex

    text = str(pattern)
    if RE2_ONLY.search(text):
        raise LibraryError(
            "gen cannot evaluate RE2-only syntax (\\p, [[:, \\Q, \\z) in find/findAll; "
            "see docs/cel.md, Deviations"
        )
    if not valid_regex(text):
        raise LibraryError(f"Illegal regex: {text}")
    return _compiled_regex(text)


# A quantified group that itself holds a quantifier, ``(a+)+``: Python's backtracking ``re``
# can take exponential time on it where RE2 is linear.
_NESTED_QUANTIFIER = re.compile(r"\((?:[^()\\]|\\.)*[*+}](?:[^()\\]|\\.)*\)[*+{]")


_BACKTRACKING_TEXT = 24


def _search_text(pattern: re.Pattern[str], text: object) -> str:
    value = str(text)
    if len(value) > _BACKTRACKING_TEXT and _NESTED_QUANTIFIER.search(pattern.pattern):
        raise LibraryError(
            f"gen cannot evaluate find/findAll with a nested quantifier on a text longer than "
            f"{_BACKTRACKING_TEXT} characters (Python's regex engine may backtrack "
            "exponentially where RE2 does not); see docs/cel.md, Deviations"
        )
    return value


@memoize(maxsize=256)
def _compiled_regex(text: str) -> re.Pattern[str]:
    return re.compile(text, re.ASCII)


def _find(text: object, pattern: object) -> str:
    compiled = _regex(pattern)
    match = compiled.search(_search_text(compiled, text))
    return match[0] if match else ""


def _find_all(text: object, pattern: object, limit: object = -1) -> list[str]:
    # Go's FindAllString: at most ``limit`` matches when limit >= 0; an empty match right
    # after the previous match is skipped.
    n = int(limit) if isinstance(limit, int) else -1
    out: list[str] = []
    end = -1
    compiled = _regex(pattern)
    for match in compiled.finditer(_search_text(compiled, text)):
        if n >= 0 and len(out) >= n:
            break
        if match.start() == match.end() == end:
            continue
        out.append(match[0])
        end = match.end()
    return out


DECLARATIONS: Declarations = {
    "find": [Overload("string_find_string", STR, [STR, STR], True, _find)],
    "findAll": [
        Overload("string_find_all_string", cel.Type.List(STR), [STR, STR], True, _find_all),
        Overload("string_find_all_string_int", cel.Type.List(STR), [STR, STR, INT], True,
                 _find_all),
    ],
}
"""The regex library's functions."""
