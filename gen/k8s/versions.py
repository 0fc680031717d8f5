"""Kubernetes version facts: the minor of a version and the resource.k8s.io version per minor.

gen renders, for each Kubernetes minor, the newest resource.k8s.io version that minor's API
server has (:data:`DRA_API_VERSIONS`; each row cites the ``APILifecycleIntroduced`` of
kubernetes/kubernetes ``staging/src/k8s.io/api/resource/<version>/
zz_generated.prerelease-lifecycle.go`` at the tag it was read at). The lifecycles of the
versions still served at the minors :mod:`gen.k8s.gates` reads agree with these rows (a test
says so); v1alpha3 left before those minors, so its row is read at v1.31.0 only.

Alpha and beta versions are off by default: the API server serves them only with
``--runtime-config=<version>=true`` (kubernetes/kubernetes ``pkg/controlplane/instance.go``,
``alphaAPIGroupVersionsDisabledByDefault`` and ``betaAPIGroupVersionsDisabledByDefault``,
@v1.33.0).
"""

from __future__ import annotations

import re
from typing import NamedTuple, overload

__all__ = [
    "DRA_API_VERSIONS",
    "DRAVersion",
    "dra_api_version",
    "dra_version",
    "flat_requests",
    "kubernetes_minor",
    "runtime_config_needed",
    "slice_api_version",
]

_VERSION = re.compile(r"v?1\.(\d{1,3})(?:\.\d{1,4})?")


@overload
def kubernetes_minor(version: str | int) -> int: ...


@overload
def kubernetes_minor(version: None) -> None: ...


def kubernetes_minor(version: str | int | None) -> int | None:
    """``'1.34'``, ``'v1.34.2'`` or ``34`` → 34; None stays None.

    Raises :class:`ValueError` for anything else.
    """
    if version is None or isinstance(version, int):
        return version
    match = _VERSION.fullmatch(version)
    if match is None:
        raise ValueError(f"not a Kubernetes version (want 1.MINOR or 1.MINOR.PATCH): {version!r}")
    return int(match[1])


class DRAVersion(NamedTuple):
    """A resource.k8s.io version and the minors gen renders it for."""

    group_version: str
    introduced: int
    """The first minor that serves it (``APILifecycleIntroduced``)."""
    on_by_default: bool
    """GA: served as released; alpha and beta need ``--runtime-config``."""
    flat: bool
    """A device request is flat (``deviceClassName`` on the request), not wrapped in
    ``exactly`` / ``firstAvailable``; a device's fields sit under ``basic``."""
    source: str


_LIFECYCLE = "kubernetes/kubernetes staging/src/k8s.io/api/resource/{}/" \
    "zz_generated.prerelease-lifecycle.go@{}"

DRA_API_VERSIONS = (
    DRAVersion("resource.k8s.io/v1alpha3", 31, on_by_default=False, flat=True,
               source=_LIFECYCLE.format("v1alpha3", "v1.31.0")),
    DRAVersion("resource.k8s.io/v1beta1", 32, on_by_default=False, flat=True,
               source=_LIFECYCLE.format("v1beta1", "v1.32.0")),
    DRAVersion("resource.k8s.io/v1beta2", 33, on_by_default=False, flat=False,
               source=_LIFECYCLE.format("v1beta2", "v1.33.0")),
    DRAVersion("resource.k8s.io/v1", 34, on_by_default=True, flat=False,
               source=_LIFECYCLE.format("v1", "v1.34.0")),
)
"""The resource.k8s.io versions with structured parameters, oldest first; gen renders the
newest one a minor serves."""

_V1 = DRA_API_VERSIONS[-1]


def dra_version(minor: int) -> DRAVersion | None:
    """The resource.k8s.io version gen renders for ``1.minor`` (None before 1.31)."""
    return next((v for v in reversed(DRA_API_VERSIONS) if v.introduced <= minor), None)


def dra_api_version(minor: int) -> str | None:
    """The group/version gen renders for ``1.minor``, e.g. ``resource.k8s.io/v1beta2``."""
    version = dra_version(minor)
    return None if version is None else version.group_version


def runtime_config_needed(minor: int) -> str | None:
    """The ``--runtime-config`` entry the API server of ``1.minor`` needs to serve what gen
    renders (an alpha or beta version); None when it is served as released or there is none."""
    version = dra_version(minor)
    return None if version is None or version.on_by_default else version.group_version


def slice_api_version(minor: int | None) -> str:
    """The version a ResourceSlice of v1's shape is published in on ``1.minor``: what gen
    renders there when that has v1's shape (v1beta2 on 1.33), else v1 (also for None)."""
    version = None if minor is None else dra_version(minor)
    return _V1.group_version if version is None or version.flat else version.group_version


def flat_requests(group_version: str | None) -> bool:
    """Whether a claim's device requests are flat (``deviceClassName`` on the request) in
    ``group_version`` (``resource.k8s.io/v1beta1``); False for v1's shape and for a version
    gen does not render."""
    return any(v.flat for v in DRA_API_VERSIONS if v.group_version == group_version)
