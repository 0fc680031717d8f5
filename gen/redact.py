"""Credentials in text: what looks like one, and the one function that hides it.

Everything gen prints about a user's input passes through :func:`redact`: a finding's
message, hint, key path and related notes (:class:`gen.errors.Finding` redacts itself when it
is built, so its text, JSON and SARIF forms all hold the redacted words) and every error's
summary message. :func:`literal_secrets` finds the same shapes in a profile's data, for the
rule that refuses them (GEN501), before schema errors are worded.

The shapes are the issuers' published token formats:

* Hugging Face user access tokens start ``hf_`` (huggingface/huggingface_hub
  ``src/huggingface_hub/utils/_auth.py`` and the Hub's security-tokens docs);
* GitHub tokens start ``ghp_``, ``gho_``, ``ghu_``, ``ghs_``, ``ghr_`` or ``github_pat_``
  (GitHub docs, "About authentication to GitHub", GitHub's token formats);
* GitLab personal access tokens start ``glpat-`` (GitLab docs, "Token overview");
* OpenAI-style API keys start ``sk-``; AWS access key ids ``AKIA`` and 16 upper-case
  letters or digits (AWS IAM user guide, "Manage access keys");
* a PEM private key (RFC 7468 ``-----BEGIN … PRIVATE KEY-----``), up to its END line;
* the password part of a URL's user information (``https://user:pass@host``), and any user
  information of an ``http(s)`` URL, which can only be a token there
  (``https://<token>@github.com``); ``ssh://git@host`` keeps its user name.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

__all__ = ["SECRET_SHAPES", "literal_secrets", "redact"]

SECRET_SHAPES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("an OpenAI-style API key", re.compile(r"\bsk-[A-Za-z0-9_\-]{20,}\b")),
    ("a GitHub token",
     re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})\b")),
    ("a GitLab token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}\b")),
    ("an AWS access key", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    ("a private key", re.compile(
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?:.*?-----END [A-Z ]*PRIVATE KEY-----|.*)",
        re.DOTALL)),
    ("a password in a URL", re.compile(r"(?<=://)[^/\s@:'\"]+:[^/\s@'\"]+(?=@)")),
    ("a token in a URL",
     re.compile(r"(?<=https://)[^/\s@:'\"]+(?=@)|(?<=http://)[^/\s@:'\"]+(?=@)")),
)
"""(what it looks like, pattern) of every credential shape gen recognises."""

_ANY = re.compile("|".join(f"(?:{pattern.pattern})" for _, pattern in SECRET_SHAPES),
                  re.DOTALL)

_MAY_HOLD = re.compile(r"hf_|sk-|gh[pousr]_|github_pat_|glpat-|AKIA|-----BEGIN |://")
"""A literal every match of one of :data:`SECRET_SHAPES` contains (its prefix, the PEM
header, the ``://`` a URL's user information follows): text without one holds no
credential shape. Searching for these literals alone is about twenty times cheaper than
:data:`_ANY` with its look-behinds, and most text gen redacts holds none of them."""

_MAY_HOLD_TOKEN = re.compile(r"hf_|sk-|gh[pousr]_|github_pat_|glpat-|AKIA|-----BEGIN ")
""":data:`_MAY_HOLD` without the URL's ``://``: a literal every shape
:func:`literal_secrets` looks for contains."""


def redact(text: str) -> str:
    """``text`` with every credential-shaped part replaced by ``<redacted>``."""
    if not text or _MAY_HOLD.search(text) is None:
        return text
    return _ANY.sub("<redacted>", text)


def _strings(data: Any, path: tuple[str | int, ...] = ()) -> Iterator[
        tuple[tuple[str | int, ...], str]]:
    if isinstance(data, str):
        yield path, data
    elif isinstance(data, dict):
        for key, value in data.items():
            if isinstance(key, str):
                yield (*path, key), key  # a key can hold a secret too
            yield from _strings(value, (*path, str(key)))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield from _strings(value, (*path, i))


def literal_secrets(data: Any) -> Iterator[tuple[tuple[str | int, ...], str]]:
    """(key path, what it looks like) for every string of ``data`` that holds a token or
    key; a URL's user information is left to the field that holds the URL, which says
    where the credential belongs instead."""
    if not _may_hold_token(data):
        return
    for path, text in _strings(data):
        if _MAY_HOLD_TOKEN.search(text) is None:
            continue  # none of the literals every shape contains
        for what, pattern in SECRET_SHAPES:
            if "URL" not in what and pattern.search(text):
                yield path, what
                break


def _may_hold_token(data: Any) -> bool:
    """Whether some string of ``data`` may hold a token: one search of the whole of it as
    JSON text (which writes every string and key as it is but for escapes, and none of
    :data:`_MAY_HOLD_TOKEN`'s characters is escaped, nor can a literal span two strings
    across the quotes between them), instead of a walk that builds each string's key path.
    Data JSON cannot write (a key of another type, a date) is walked."""
    try:
        text = json.dumps(data, ensure_ascii=False)
    except (TypeError, ValueError):
        return True
    return _MAY_HOLD_TOKEN.search(text) is not None
