"""The upstream components the judge builds, each pinned to a release the Go module proxy serves.

Each entry names its Go module, the version, the package that is built and where its source can be
read (repository and tag). Bumping a pin is a change here, then ``python tools/judge`` (the cache
is keyed by the version, so the new build sits beside the old one).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["COMPONENTS", "Component"]

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Component:
    """One binary the judge builds."""

    name: str
    """The executable's name, and its folder in the cache."""
    version: str
    """The release; the cache key."""
    source: str
    """Where the upstream code is: ``owner/repo@tag``."""
    module_dir: Path | None
    """Our Go module that builds it (``go.mod`` pins everything), or ``None`` for ``go install``."""
    package: str
    """The package to build: a path inside ``module_dir``, or ``module/path@version``."""
    ldflags: str = ""


KUBERNETES = "v1.37.2"
"""k8s.io/kubernetes; its staging modules are replaced by the published ``v0.37.2``."""

COMPONENTS: dict[str, Component] = {
    "kubeconform": Component(
        name="kubeconform",
        version="v0.8.0",
        source="yannh/kubeconform@v0.8.0",
        module_dir=None,
        package="github.com/yannh/kubeconform/cmd/kubeconform@v0.8.0",
    ),
    "controlplane": Component(
        name="controlplane",
        version=KUBERNETES,
        source=f"kubernetes/kubernetes@{KUBERNETES} (cmd/kube-apiserver, "
        "cmd/kube-controller-manager, cmd/kube-scheduler), etcd-io/etcd@v3.7.0 (server/embed)",
        module_dir=HERE / "controlplane",
        package=".",
        ldflags=(
            f"-X k8s.io/component-base/version.gitVersion={KUBERNETES} "
            "-X k8s.io/component-base/version.gitMajor=1 "
            f"-X k8s.io/component-base/version.gitMinor={KUBERNETES.split('.')[1]}"
        ),
    ),
    "oracle": Component(
        name="oracle",
        version="v0.37.2",
        source="kubernetes/dynamic-resource-allocation@v0.37.2, "
        "kubernetes/pod-security-admission@v0.37.2",
        module_dir=HERE / "oracle",
        package=".",
    ),
}
