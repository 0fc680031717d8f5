"""The upstream components the judge builds, each pinned to a release the Go module proxy serves.

Each entry names its Go module, the version, the package that is built and where its source can be
read (repository and tag). The versions are gen's pins (``gen/data/pins.yaml``: ``kubeconform``,
``judge-kubernetes``, ``judge-etcd``; the oracle's staging modules follow the Kubernetes pin).
Bumping a pin is a change there and in the Go module that builds it (``go.mod``), then
``python tools/judge`` (the cache is keyed by the version, so the new build sits beside the old
one).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gen.pins import pin

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


KUBERNETES = pin("judge-kubernetes").version
"""k8s.io/kubernetes; its staging modules are replaced by the published ``v0.<minor>.<patch>``."""
STAGING = "v0." + KUBERNETES.removeprefix("v1.")
"""The published staging modules (k8s.io/dynamic-resource-allocation, …) of that release."""
ETCD = pin("judge-etcd").version
KUBECONFORM = pin("kubeconform").version

COMPONENTS: dict[str, Component] = {
    "kubeconform": Component(
        name="kubeconform",
        version=KUBECONFORM,
        source=f"yannh/kubeconform@{KUBECONFORM}",
        module_dir=None,
        package=f"github.com/yannh/kubeconform/cmd/kubeconform@{KUBECONFORM}",
    ),
    "controlplane": Component(
        name="controlplane",
        version=KUBERNETES,
        source=f"kubernetes/kubernetes@{KUBERNETES} (cmd/kube-apiserver, "
        f"cmd/kube-controller-manager, cmd/kube-scheduler), etcd-io/etcd@{ETCD} (server/embed)",
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
        version=STAGING,
        source=f"kubernetes/dynamic-resource-allocation@{STAGING}, "
        f"kubernetes/pod-security-admission@{STAGING}",
        module_dir=HERE / "oracle",
        package=".",
    ),
}
