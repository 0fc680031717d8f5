"""gen.k8s.names: Kubernetes' name, label and annotation syntax (apimachinery v0.34.0)."""

from __future__ import annotations

import pytest

from gen.k8s import names


@pytest.mark.parametrize("value", ["a", "app.kubernetes.io/name", "MyName", "my.name", "123-abc",
                                   "example.com/My_Name", "x" * 63, f"{'a' * 253}/b"])
def test_qualified_names(value: str) -> None:
    """Names apimachinery's IsQualifiedName accepts."""
    assert names.qualified_name_errors(value) == []


@pytest.mark.parametrize(("value", "why"), [
    ("", "name part must be non-empty"),
    ("/a", "prefix part must be non-empty"),
    ("a/", "name part must be non-empty"),
    ("a/b/c", "a qualified name must consist of"),
    ("-a", "name part must consist of"),
    ("a_", "name part must consist of"),
    ("x" * 64, "name part must be no more than 63 characters"),
    ("Example.com/a", "prefix part a lowercase RFC 1123 subdomain"),
    ("bad key", "name part must consist of"),
])
def test_not_qualified_names(value: str, why: str) -> None:
    """Names IsQualifiedName refuses, with its reason."""
    assert any(why in e for e in names.qualified_name_errors(value))


def test_label_values() -> None:
    """Empty is a label value; 64 characters, a space or a leading dash are not."""
    assert names.label_value_errors("") == []
    assert names.label_value_errors("v1.2_3-x") == []
    assert names.label_value_errors("x" * 64) == ["must be no more than 63 characters"]
    assert names.label_value_errors("a b")
    assert names.label_value_errors("-a")


def test_label_and_annotation_maps() -> None:
    """Every bad key and value is reported, keyed; annotation keys are checked lower-cased."""
    assert names.label_errors({"ok": "fine", "bad key": "x", "k": "bad value"}) == [
        ("bad key", "key 'bad key': name part must consist of alphanumeric characters, '-', "
         "'_' or '.', and must start and end with an alphanumeric character"),
        ("k", "value 'bad value': a valid label value must be an empty string or must consist "
         "of alphanumeric characters, '-', '_' or '.', and must start and end with an "
         "alphanumeric character"),
    ]
    assert names.annotation_errors({"Example.COM/Key": "anything at all"}) == []
    assert [k for k, _ in names.annotation_errors({"a/b/c": ""})] == ["a/b/c"]


def test_annotation_size_limit() -> None:
    """Keys and values together may hold 256 KiB, in bytes; one more is too large."""
    limit = names.TOTAL_ANNOTATION_SIZE
    assert names.annotation_errors({"k": "x" * (limit - 1)}) == []
    assert names.annotation_errors({"k": "x" * limit}) == [
        ("", f"annotations size {limit + 1} is larger than limit {limit}")]
    assert names.annotation_errors({"k": "é" * (limit // 2)})  # two bytes each


def test_dns_names() -> None:
    """Subdomains allow dots and 253 characters; labels neither; DNS-1035 starts with a letter."""
    assert names.dns1123_subdomain_errors("a.b-c.d") == []
    assert names.dns1123_subdomain_errors("a" * 254)
    assert names.dns1123_subdomain_errors("A")
    assert names.dns1123_label_errors("a-1") == []
    assert names.dns1123_label_errors("a.b")
    assert names.dns1035_label_errors("a-1") == []
    assert names.dns1035_label_errors("1a")


def test_name_rule_per_kind() -> None:
    """Services are DNS-1035 labels, Namespaces DNS-1123 labels, the rest subdomains."""
    assert names.name_rule("v1", "Service") is names.dns1035_label_errors
    assert names.name_rule("v1", "Namespace") is names.dns1123_label_errors
    assert names.name_rule("apps/v1", "Deployment") is names.dns1123_subdomain_errors
    assert names.name_rule("argoproj.io/v1alpha1", "Application") is \
        names.dns1123_subdomain_errors
