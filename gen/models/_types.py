"""Constrained scalar types shared by the profile kinds."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field, StringConstraints

_DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(?!\n)$"
_DNS_SUBDOMAIN = (
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(?!\n)$"
)
# Every pattern ends in (?!\n)$: with Python's re (the models' regex engine) a bare $ also
# matches before a final newline, so "qwen-7b\n" would pass and name a file.
_LABEL_VALUE = r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?(?!\n)$"

DNSLabel = Annotated[
    str,
    StringConstraints(min_length=1, max_length=63, pattern=_DNS_LABEL),
    Field(description="A DNS-1123 label: lower-case letters, digits and '-', at most 63."),
]
DNSSubdomain = Annotated[
    str,
    StringConstraints(min_length=1, max_length=253, pattern=_DNS_SUBDOMAIN),
    Field(description="A DNS-1123 subdomain: DNS labels joined by '.', at most 253."),
]
_KUBERNETES_VERSION = r"^v?1\.(2[5-9]|3[0-9])(\.\d{1,3})?(?!\n)$"
_DRIVER_VERSION = r"^\d{3}(\.\d{1,3}){1,2}(?!\n)$"
_RULE_ID = r"^GEN\d{3}(?!\n)$"
KubernetesVersion = Annotated[
    str,
    StringConstraints(pattern=_KUBERNETES_VERSION),
    Field(description="Kubernetes version of the cluster, e.g. '1.34' or '1.34.2' (1.25–1.39)."),
]
DriverVersion = Annotated[
    str,
    StringConstraints(pattern=_DRIVER_VERSION),
    Field(description="NVIDIA driver version, e.g. '570.124.06'."),
]
RuleId = Annotated[
    str,
    StringConstraints(pattern=_RULE_ID),
    Field(description="A lint rule id, e.g. 'GEN303' (docs/lint-rules.md lists them)."),
]


_REASON = r"\S"
Reason = Annotated[
    str,
    StringConstraints(min_length=1, pattern=_REASON),
    Field(description="Why a rule does not apply here (required; shown with --show-suppressed)."),
]


def _check_quantity(value: str) -> str:
    from gen.errors import QuantityError
    from gen.k8s.quantity import parse_quantity

    try:
        parse_quantity(value)
    except (QuantityError, ArithmeticError):
        # An exponent beyond ±1000 or more than 200 significant digits (decimal.Inexact).
        raise ValueError(f"{value[:40]!r} is too large or too precise a quantity") from None
    return value


Quantity = Annotated[
    str,
    StringConstraints(
        pattern=(r"^[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)"
                 r"([eE][-+]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?(?!\n)$"),
    ),
    AfterValidator(_check_quantity),
    Field(description="A Kubernetes quantity, e.g. '80Gi', '500m', '2'."),
]
_QUALIFIED = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$"
)


def _check_label_key(value: str) -> str:
    if not _QUALIFIED.fullmatch(value) or len(value) > 316:
        raise ValueError(f"{value!r} is not a valid Kubernetes label or attribute name")
    return value


LabelKey = Annotated[str, AfterValidator(_check_label_key)]
LabelValue = Annotated[
    str, StringConstraints(max_length=63, pattern=_LABEL_VALUE)
]

def _check_image(value: str) -> str:
    from gen.k8s.image import ImageReferenceError, parse_image_reference

    try:
        reference = parse_image_reference(value)
    except ImageReferenceError as err:
        raise ValueError(f"not a container image reference: {err}") from None
    if not reference.digest and reference.tag in ("", "latest"):
        raise ValueError(f"image {value!r} is not pinned: give a version tag or a digest")
    return value


ImageRef = Annotated[
    str,
    AfterValidator(_check_image),
    Field(description="A pinned container image: 'repo/name:tag' (not 'latest') or '@sha256:…'."),
]


_API_GROUP_VERSION = re.compile(
    r"(?:[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
    r"v[1-9][0-9]*(?:(?:alpha|beta)[1-9][0-9]*)?"
)


def _check_api_group_version(value: str) -> str:
    # An API group is a DNS-1123 subdomain and a version 'v1', 'v1beta2', 'v1alpha3'
    # (kubernetes/apimachinery pkg/version/helpers.go, kubeVersionRegex, @ v0.34.0); the
    # core group is the bare version ('v1'). --runtime-config also takes 'api/all' and
    # '=false'; gen decides from this list which versions the API server serves, so it
    # holds the enabled group/versions themselves.
    shown = repr(value[:80])
    if any(c.isspace() for c in value):
        raise ValueError(f"{shown} holds a space or a line break: give one API group/version "
                         "per entry, e.g. 'resource.k8s.io/v1beta2'")
    name, equals, state = value.partition("=")
    if equals and _API_GROUP_VERSION.fullmatch(name):
        raise ValueError(f"{shown}: list the enabled group/version alone, without "
                         f"'={state[:10]}' (an entry is on), e.g. {name!r}")
    if name.startswith("api/"):
        raise ValueError(f"{shown} enables a set of versions: list each group/version the "
                         "cluster serves, e.g. 'resource.k8s.io/v1beta2'")
    if not _API_GROUP_VERSION.fullmatch(value):
        raise ValueError(f"{shown} is not an API group/version such as "
                         "'resource.k8s.io/v1beta2'")
    return value


APIGroupVersion = Annotated[
    str,
    AfterValidator(_check_api_group_version),
    Field(description="An API group/version, e.g. 'resource.k8s.io/v1beta2'."),
]


def check_url_credentials(value: str, instead: str) -> str:
    """Refuse a URL that carries user information with a password, or any in http(s): a
    credential in a profile is committed to Git (and rendered into out/)."""
    scheme, sep, rest = value.partition("://")
    authority = rest.split("/", 1)[0] if sep else ""
    user, at, _ = authority.rpartition("@")
    if at and (":" in user or scheme.lower() in ("http", "https")):
        raise ValueError(f"the URL carries credentials ('<redacted>@' in {scheme}://…): "
                         f"remove them; {instead}")
    return value


PATTERN_WORDS: dict[str, str] = {
    _DNS_LABEL: "lowercase letters, digits and '-', starting and ending with a letter or "
    "digit (a DNS-1123 label)",
    _DNS_SUBDOMAIN: "lowercase letters, digits, '-' and '.', each dot-separated part starting "
    "and ending with a letter or digit (a DNS-1123 subdomain)",
    _LABEL_VALUE: "letters, digits, '-', '_' and '.', starting and ending with a letter or "
    "digit, or empty (a Kubernetes label value)",
    _KUBERNETES_VERSION: "a Kubernetes version gen supports, 1.25 to 1.39, as a quoted string: "
    "'1.34' or '1.34.2'",
    _DRIVER_VERSION: "an NVIDIA driver version as a quoted string, e.g. '580.95.05'",
    _RULE_ID: "a rule id: 'GEN' and three digits, e.g. 'GEN303'",
    _REASON: "a reason: say why the rule does not apply here",
}
"""Words for the patterns users meet most, shown instead of the regular expression."""
