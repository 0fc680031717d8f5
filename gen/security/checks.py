"""Security rules: no literal secret in a profile; Pod Security exceptions are visible."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from gen.errors import Finding, Severity
from gen.fleet.loader import format_key_path
from gen.fleet.plan import Plan

_SECRET_PATTERNS = (
    ("a Hugging Face token", re.compile(r"\bhf_[A-Za-z0-9]{30,}\b")),
    ("an OpenAI-style API key", re.compile(r"\bsk-[A-Za-z0-9_\-]{20,}\b")),
    ("a GitHub token", re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}\b")),
    ("an AWS access key", re.compile(r"\bAKIA[0-9A-Z]{16}\b")),
    ("a private key", re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----")),
)


KeyPath = tuple[str | int, ...]


def _strings(data: Any, path: KeyPath = ()) -> Iterator[tuple[KeyPath, str]]:
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


def literal_secrets(data: Any) -> Iterator[tuple[KeyPath, str]]:
    """(key path, what it looks like) for every string that looks like a credential."""
    for path, text in _strings(data):
        for what, pattern in _SECRET_PATTERNS:
            if pattern.search(text):
                yield path, what
                break


def check(plan: Plan) -> list[Finding]:
    """GEN501, GEN502."""
    findings = []
    profiles = plan.profiles
    groups = (profiles.clusters, profiles.gpu_classes, profiles.services,
              profiles.mig_layouts, profiles.models)
    for group in groups:
        for located in group.values():
            for path, what in literal_secrets(located.document.data):
                findings.append(Finding(
                    "GEN501",
                    f"this value looks like {what}; profiles are committed to Git and must "
                    "not hold secrets",
                    located.document.locate(path)[0], format_key_path(path),
                    hint="store it in a Secret and reference it (auth.hf_token / "
                    "auth.api_key: {name, key})",
                ))
    for located in profiles.services.values():
        reason = located.value.pod_security.privileged_reason
        if reason:
            findings.append(Finding(
                "GEN502", f"opts out of Pod Security 'restricted': {reason}",
                located.at("pod_security", "privileged_reason"),
                "pod_security.privileged_reason", severity=Severity.INFO,
            ))
    return findings
