"""The named formats of Kubernetes' CEL format library, with apimachinery's own messages.

``format.<name>().validate(s)`` (kubernetes/apiserver ``pkg/cel/library/format.go`` @ v0.36.0,
``ConstantFormats``) returns the messages of these validators:

* ``dns1123Label``, ``dns1123Subdomain``, ``dns1035Label`` and their ``…Prefix`` forms:
  ``NameIsDNSLabel`` / ``NameIsDNSSubdomain`` / ``NameIsDNS1035Label`` (kubernetes/apimachinery
  ``pkg/api/validation/generic.go`` @ v0.36.0; a prefix has a trailing ``-`` masked) over
  ``IsDNS1123Label`` / ``IsDNS1123Subdomain`` / ``IsDNS1035Label``
  (``pkg/util/validation/validation.go``);
* ``qualifiedName`` and ``labelValue``: ``IsLabelKey`` / ``IsLabelValue``
  (``pkg/api/validate/content/kube.go``);
* ``uri``: Go's ``url.ParseRequestURI`` error; ``uuid``, ``byte``, ``date``, ``datetime``:
  kube-openapi's ``strfmt`` checks (``pkg/validation/strfmt``), with the library's fixed
  messages ("does not match the UUID format", "invalid base64", "invalid date",
  "invalid datetime").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date

from gen.k8s.urls import URLError, parse_request_uri

__all__ = ["FORMATS", "validate"]

_DNS1123_LABEL = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN = _DNS1123_LABEL + "(\\." + _DNS1123_LABEL + ")*"
_DNS1035_LABEL = "[a-z]([-a-z0-9]*[a-z0-9])?"
_LABEL_KEY = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_VALUE = "(" + _LABEL_KEY + ")?"
_LABEL_KEY_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and "
                  "end with an alphanumeric character")


def _full(pattern: str) -> re.Pattern[str]:
    return re.compile(f"(?:{pattern})\\Z")


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    """apimachinery's ``RegexError``."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    listed = " or ".join(f"'{e}', " for e in examples)
    return f"{message} (e.g. {listed}regex used for validation is '{fmt}')"


def _max_len(limit: int) -> str:
    return f"must be no more than {limit} characters"


def _dns1123_label(value: str) -> list[str]:
    errors = [_max_len(63)] if len(value.encode()) > 63 else []
    if not _full(_DNS1123_LABEL).match(value):
        if _full(_DNS1123_SUBDOMAIN).match(value):
            errors.append("must not contain dots")
        else:
            errors.append(_regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters "
                "or '-', and must start and end with an alphanumeric character",
                _DNS1123_LABEL, "my-name", "123-abc"))
    return errors


def _dns1123_subdomain(value: str) -> list[str]:
    errors = [_max_len(253)] if len(value.encode()) > 253 else []
    if not _full(_DNS1123_SUBDOMAIN).match(value):
        errors.append(_regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character",
            _DNS1123_SUBDOMAIN, "example.com"))
    return errors


def _dns1035_label(value: str) -> list[str]:
    errors = [_max_len(63)] if len(value.encode()) > 63 else []
    if not _full(_DNS1035_LABEL).match(value):
        errors.append(_regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
            "with an alphabetic character, and end with an alphanumeric character",
            _DNS1035_LABEL, "my-name", "abc-123"))
    return errors


def _label_key(value: str) -> list[str]:
    parts = value.split("/")
    errors: list[str] = []
    if len(parts) > 2:
        return ["a valid label key " + _regex_error(
            _LABEL_KEY_MSG, _LABEL_KEY, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if len(parts) == 2:
        if not parts[0]:
            errors.append("prefix part must be non-empty")
        else:
            errors += ["prefix part " + m for m in _dns1123_subdomain(parts[0])]
    name = parts[-1]
    if not name:
        errors.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errors.append("name part " + _max_len(63))
    if not _full(_LABEL_KEY).match(name):
        errors.append("name part " + _regex_error(
            _LABEL_KEY_MSG, _LABEL_KEY, "MyName", "my.name", "123-abc"))
    return errors


def _label_value(value: str) -> list[str]:
    errors = [_max_len(63)] if len(value.encode()) > 63 else []
    if not _full(_LABEL_VALUE).match(value):
        errors.append(_regex_error(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', "
            "'_' or '.', and must start and end with an alphanumeric character",
            _LABEL_VALUE, "MyValue", "my_value", "12345"))
    return errors


def _prefix(check: Callable[[str], list[str]]) -> Callable[[str], list[str]]:
    """``maskTrailingDash``: a generateName prefix may end in '-'."""
    def masked(value: str) -> list[str]:
        if len(value.encode()) > 1 and value.endswith("-"):
            value = value[:-2] + "a"
        return check(value)

    return masked


def _uri(value: str) -> list[str]:
    try:
        parse_request_uri(value)
    except URLError as err:
        return [str(err)]
    return []


_UUID = re.compile(
    r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}\Z", re.IGNORECASE
)
_BASE64 = re.compile(
    r"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})\Z"
)
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_TIME = re.compile(
    r"T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?\Z"
)


def _valid_date(text: str) -> bool:
    match = _DATE.match(text)
    if match is None:
        return False
    try:
        date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return False
    return True


def _valid_datetime(text: str) -> bool:
    """strfmt's ``ParseDateTime``: RFC 3339 with optional fraction, offset or seconds."""
    if len(text) < 16 or not _valid_date(text[:10]):
        return False
    match = _TIME.match(text, 10)
    if match is None:
        return False
    hour, minute, second = int(match[1]), int(match[2]), int(match[3] or 0)
    if hour > 23 or minute > 59 or second > 59:
        return False
    offset = match[4] or "Z"
    return offset == "Z" or (int(offset[1:3]) <= 23 and int(offset[-2:]) <= 59)


def _fixed(test: Callable[[str], bool], message: str) -> Callable[[str], list[str]]:
    return lambda value: [] if test(value) else [message]


FORMATS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": _dns1123_label,
    "dns1123Subdomain": _dns1123_subdomain,
    "dns1035Label": _dns1035_label,
    "qualifiedName": _label_key,
    "dns1123LabelPrefix": _prefix(_dns1123_label),
    "dns1123SubdomainPrefix": _prefix(_dns1123_subdomain),
    "dns1035LabelPrefix": _prefix(_dns1035_label),
    "labelValue": _label_value,
    "uri": _uri,
    "uuid": _fixed(lambda s: _UUID.match(s) is not None, "does not match the UUID format"),
    "byte": _fixed(lambda s: _BASE64.match(s) is not None, "invalid base64"),
    "date": _fixed(lambda s: len(s) == 10 and _valid_date(s), "invalid date"),
    "datetime": _fixed(_valid_datetime, "invalid datetime"),
}
"""Each named format's validator: the list of what is wrong with a value (empty: valid)."""


def validate(name: str, value: str) -> list[str]:
    """The messages of format ``name`` for ``value``; raises KeyError for an unknown name."""
    return FORMATS[name](value)
