"""Kubernetes version facts: a version's minor, and the resource.k8s.io version per minor,
checked against the API lifecycles of the gate table."""

from __future__ import annotations

import pytest

from gen.k8s.gates import gate_table
from gen.k8s.versions import (
    DRA_API_VERSIONS,
    dra_api_version,
    flat_requests,
    kubernetes_minor,
    runtime_config_needed,
    slice_api_version,
)

V1A3, V1B1, V1B2, V1 = (f"resource.k8s.io/{v}" for v in ("v1alpha3", "v1beta1", "v1beta2", "v1"))


@pytest.mark.parametrize(("version", "minor"), [
    ("1.34", 34), ("v1.34.2", 34), ("1.31.0", 31), (36, 36), (None, None),
])
def test_kubernetes_minor(version: str | int | None, minor: int | None) -> None:
    assert kubernetes_minor(version) == minor


def test_kubernetes_minor_refuses_what_is_no_version() -> None:
    with pytest.raises(ValueError, match="not a Kubernetes version"):
        kubernetes_minor("1.34.2.1")


def test_the_rendered_version_per_minor() -> None:
    """The newest version a minor serves; alpha and beta need --runtime-config."""
    minors = (30, 31, 32, 33, 34, 36)
    assert [dra_api_version(m) for m in minors] == [None, V1A3, V1B1, V1B2, V1, V1]
    assert [runtime_config_needed(m) for m in minors] == [None, V1A3, V1B1, V1B2, None, None]
    assert [slice_api_version(m) for m in (None, *minors)] == [V1, V1, V1, V1, V1B2, V1, V1]


def test_the_table_agrees_with_the_gate_data() -> None:
    """Each version the gate table reads has the row's introduction; a GA row (served as
    released) is one with no removal; what gen renders is served where the data says."""
    table = gate_table()
    rows = {v.group_version: v for v in DRA_API_VERSIONS}
    seen = set()
    for minor in sorted(table.releases):
        for lifecycle in table.api_versions(minor):
            row = rows[lifecycle.group_version]
            seen.add(row.group_version)
            assert lifecycle.introduced == row.introduced, lifecycle
            assert (lifecycle.removed is None) == row.on_by_default, lifecycle
        rendered = table.api_version(dra_api_version(minor) or "", minor)
        assert rendered is not None and rendered.served(minor)
    assert seen == set(rows) - {V1A3}  # v1alpha3 was gone before the oldest minor read
    assert [v.introduced for v in DRA_API_VERSIONS] == sorted(
        v.introduced for v in DRA_API_VERSIONS)


def test_flat_requests_follow_the_table() -> None:
    assert [v.group_version for v in DRA_API_VERSIONS if flat_requests(v.group_version)] == [
        "resource.k8s.io/v1alpha3", "resource.k8s.io/v1beta1"]
    assert not flat_requests(None)
    assert not flat_requests("resource.k8s.io/v2")
