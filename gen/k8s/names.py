"""Kubernetes' name, label and annotation syntax, as the API server checks every object.

The rules and their limits are those of k8s.io/apimachinery ``pkg/util/validation/validation.go``
and ``pkg/api/validation/objectmeta.go`` (kubernetes/apimachinery@v0.34.0):

* a **qualified name** (label and annotation keys, finalizers): an optional DNS-1123
  subdomain prefix and ``/``, then a name of at most 63 characters of ``[-A-Za-z0-9_.]``
  starting and ending with an alphanumeric; annotation keys are checked lower-cased;
* a **label value**: empty, or at most 63 characters of the same alphabet;
* a **DNS-1123 label** (63, ``[a-z0-9-]``), **DNS-1123 subdomain** (253, dot-separated
  labels) and **DNS-1035 label** (a DNS-1123 label starting with a letter);
* annotations together (every key and value, in bytes) hold at most 256 KiB.

Which name syntax an object's ``metadata.name`` must have depends on its kind:
:func:`name_rule`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from gen.caches import memoize

__all__ = [
    "DNS1035_KINDS",
    "DNS1123_LABEL_KINDS",
    "TOTAL_ANNOTATION_SIZE",
    "annotation_errors",
    "dns1035_label_errors",
    "dns1123_label_errors",
    "dns1123_subdomain_errors",
    "label_errors",
    "label_value_errors",
    "name_rule",
    "qualified_name_errors",
]

TOTAL_ANNOTATION_SIZE = 256 * 1024
"""The most bytes all of an object's annotation keys and values may hold together."""

_QNAME = re.compile(r"(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_LABEL_VALUE = re.compile(r"(?:(?:[A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
_DNS1123_LABEL = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?\Z")
_DNS1123_SUBDOMAIN = re.compile(
    r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9](?:[-a-z0-9]*[a-z0-9])?)*\Z")
_DNS1035_LABEL = re.compile(r"[a-z](?:[-a-z0-9]*[a-z0-9])?\Z")

_QNAME_TEXT = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and "
               "end with an alphanumeric character")


def _too_long(limit: int) -> str:
    return f"must be no more than {limit} characters"


def dns1123_label_errors(value: str) -> list[str]:
    """Why ``value`` is not a DNS-1123 label (empty: it is one)."""
    errors = [_too_long(63)] if len(value) > 63 else []
    if not _DNS1123_LABEL.match(value):
        errors.append("a lowercase RFC 1123 label must consist of lower case alphanumeric "
                      "characters or '-', and must start and end with an alphanumeric character")
    return errors


def dns1123_subdomain_errors(value: str) -> list[str]:
    """Why ``value`` is not a DNS-1123 subdomain (empty: it is one)."""
    errors = [_too_long(253)] if len(value) > 253 else []
    if not _DNS1123_SUBDOMAIN.match(value):
        errors.append("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric "
                      "characters, '-' or '.', and must start and end with an alphanumeric "
                      "character")
    return errors


def dns1035_label_errors(value: str) -> list[str]:
    """Why ``value`` is not a DNS-1035 label (empty: it is one)."""
    errors = [_too_long(63)] if len(value) > 63 else []
    if not _DNS1035_LABEL.match(value):
        errors.append("a DNS-1035 label must consist of lower case alphanumeric characters or "
                      "'-', start with an alphabetic character, and end with an alphanumeric "
                      "character")
    return errors


def qualified_name_errors(value: str) -> list[str]:
    """Why ``value`` is not a qualified name (``[prefix/]name``; empty: it is one)."""
    parts = value.split("/")
    if len(parts) > 2:
        return [f"a qualified name {_QNAME_TEXT}, with an optional DNS subdomain prefix and "
                "'/' (e.g. 'example.com/MyName')"]
    errors: list[str] = []
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            errors += [f"prefix part {e}" for e in dns1123_subdomain_errors(prefix)]
    name = parts[-1]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append(f"name part {_too_long(63)}")
    if not _QNAME.match(name):
        errors.append(f"name part {_QNAME_TEXT}")
    return errors


def label_value_errors(value: str) -> list[str]:
    """Why ``value`` is not a label value (empty: it is one)."""
    errors = [_too_long(63)] if len(value) > 63 else []
    if not _LABEL_VALUE.match(value):
        errors.append(f"a valid label value must be an empty string or {_QNAME_TEXT}")
    return errors


@memoize(maxsize=4096)
def _label_errors(key: str, value: str) -> tuple[tuple[str, str], ...]:
    return (*((key, f"key {key!r}: {m}") for m in qualified_name_errors(key)),
            *((key, f"value {value!r}: {m}") for m in label_value_errors(value)))


@memoize(maxsize=4096)
def _annotation_key_errors(key: str) -> tuple[tuple[str, str], ...]:
    return tuple((key, f"key {key!r}: {m}") for m in qualified_name_errors(key.lower()))


def label_errors(labels: Mapping[str, str]) -> list[tuple[str, str]]:
    """(key, message) for every key and value of ``labels`` Kubernetes refuses."""
    return [error for key, value in labels.items() for error in _label_errors(key, value)]


def annotation_errors(annotations: Mapping[str, str]) -> list[tuple[str, str]]:
    """(key, message) for every annotation key Kubernetes refuses, and ("", message) when
    the annotations together are larger than :data:`TOTAL_ANNOTATION_SIZE`."""
    found = [error for key in annotations for error in _annotation_key_errors(key)]
    size = sum(len(k.encode("utf-8")) + len(v.encode("utf-8")) for k, v in annotations.items())
    if size > TOTAL_ANNOTATION_SIZE:
        found.append(("", f"annotations size {size} is larger than limit {TOTAL_ANNOTATION_SIZE}"))
    return found


DNS1123_LABEL_KINDS = frozenset({("v1", "Namespace")})
"""Built-in kinds whose names are DNS-1123 labels (kubernetes/kubernetes
``pkg/apis/core/validation/validation.go``@v1.34.0: ``ValidateNamespaceName``)."""

DNS1035_KINDS = frozenset({("v1", "Service")})
"""Built-in kinds whose names are DNS-1035 labels (same file: ``ValidateServiceName``)."""


def name_rule(api_version: str, kind: str) -> Callable[[str], list[str]]:
    """The check ``metadata.name`` of a kind must pass: a DNS-1123 subdomain unless the kind
    is one of :data:`DNS1123_LABEL_KINDS` or :data:`DNS1035_KINDS` (custom resources are
    always subdomains: apiextensions-apiserver ``pkg/registry/customresource/validator.go``)."""
    if (api_version, kind) in DNS1035_KINDS:
        return dns1035_label_errors
    if (api_version, kind) in DNS1123_LABEL_KINDS:
        return dns1123_label_errors
    return dns1123_subdomain_errors
