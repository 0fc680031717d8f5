"""gen.k8s.formats: the named formats of Kubernetes' CEL format library.

Messages from kubernetes/apimachinery pkg/util/validation/validation.go and
pkg/api/validate/content/kube.go @ v0.36.0; the CEL-level cases are in
tests/dra/cel/corpus/format.yaml.
"""

from __future__ import annotations

import pytest

from gen.k8s.formats import FORMATS, validate


def test_every_named_format_of_the_library() -> None:
    assert set(FORMATS) == {
        "dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName",
        "dns1123LabelPrefix", "dns1123SubdomainPrefix", "dns1035LabelPrefix", "labelValue",
        "uri", "uuid", "byte", "date", "datetime",
    }


def test_a_label_with_dots_is_a_subdomain_not_a_label() -> None:
    assert validate("dns1123Label", "a.b") == ["must not contain dots"]
    assert validate("dns1123Label", "a" * 64) == ["must be no more than 63 characters"]


def test_prefix_formats_mask_a_trailing_dash() -> None:
    assert validate("dns1123LabelPrefix", "my-prefix-") == []
    assert validate("dns1123Label", "my-prefix-") != []
    assert validate("dns1035LabelPrefix", "-") != []


def test_qualified_name_parts() -> None:
    assert validate("qualifiedName", "example.com/MyName") == []
    assert validate("qualifiedName", "/x") == ["prefix part must be non-empty"]
    assert validate("qualifiedName", "a/b/c")[0].startswith("a valid label key must consist")


@pytest.mark.parametrize(("name", "value", "ok"), [
    ("uuid", "123E4567E89B12D3A456426614174000", True),
    ("uuid", "123e4567-e89b-12d3-a456-42661417400", False),
    ("byte", "", False),
    ("date", "2024-02-29", True),
    ("date", "2023-02-29", False),
    ("datetime", "2021-01-01T00:00:00.123+01:00", True),
    ("datetime", "2021-01-01T24:00:00Z", False),
    ("uri", "/path", True),
    ("uri", "../x", False),
])
def test_strfmt_formats(name: str, value: str, ok: bool) -> None:
    assert (validate(name, value) == []) is ok
