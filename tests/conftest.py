"""Shared pytest configuration: the ``--update-golden`` option, the ``runner`` fixture and the
``control_plane`` fixture (a real API server, scheduler and controllers)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner

if TYPE_CHECKING:
    from tools.judge.cluster import ControlPlane


def pytest_configure(config: pytest.Config) -> None:
    """Keep gen's user cache (the parse cache, :mod:`gen.emit.cache.parsed`) in a folder of
    this test run's own, for gen run here and in subprocesses alike."""
    import os
    import tempfile

    os.environ.setdefault("GEN_CACHE_DIR", tempfile.mkdtemp(prefix="gen-test-cache-"))


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--update-golden`` (rewrite the repo's out/ instead of comparing)."""
    parser.addoption(
        "--update-golden",
        action="store_true",
        default=False,
        help="Rewrite the committed out/ with 'gen render' instead of comparing with it.",
    )


@pytest.fixture
def update_golden(request: pytest.FixtureRequest) -> bool:
    """True when the run was started with ``--update-golden``."""
    return bool(request.config.getoption("--update-golden"))


@pytest.fixture
def runner() -> CliRunner:
    """A click CliRunner (stdout and stderr kept apart, click >= 8.2)."""
    return CliRunner()


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A real control plane (etcd, kube-apiserver, kube-controller-manager, kube-scheduler
    from k8s.io/kubernetes, :mod:`tools.judge.cluster`), with gen's bundled CRDs installed.
    Built on first use and cached outside the repository; a build that fails fails the test
    (never a skip). Stopped at the end of the session, whatever happened."""
    from tools.judge.build import ensure
    from tools.judge.cluster import running
    from tools.judge.live import prepare

    with running(tmp_path_factory.mktemp("control-plane"), ensure("controlplane")) as plane:
        prepare(plane)
        yield plane


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses the control plane runs on one xdist worker, in collection order
    (``--dist loadgroup``): the plane is cluster-wide state, and a module's tests set it up
    once for all of them, so another module's test must not run in between."""
    for item in items:
        if "control_plane" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("control-plane"))
