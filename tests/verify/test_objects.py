"""Tests for gen.verify.objects: the objects of out/<cluster>/ and the profile each came from."""

from __future__ import annotations

import shutil
from pathlib import Path, PurePosixPath

import pytest

from gen.fleet.plan import ClusterPlan
from gen.pipeline import load_plan, render
from gen.verify.objects import origins, read_out
from tests.helpers import copy_fleet
from tests.verify.fake import profile_line


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ClusterPlan]:
    root = copy_fleet(tmp_path_factory.mktemp("fleet"))
    render(root / "profiles", root / "out", base=root, validator="none")
    plan = load_plan(root / "profiles", base=root)
    return root, next(c for c in plan.clusters if c.name == "prod-us-east")


def test_every_synced_object_is_read_with_its_profile(rendered: tuple[Path, ClusterPlan],
                                                      tmp_path: Path) -> None:
    """out/prod-us-east/ less its kustomizations; each object located at its profile."""
    root, cluster = rendered
    objects, findings = read_out(cluster, root / "out", None)
    assert findings == []
    files = sorted(p for p in (root / "out" / "prod-us-east").rglob("*.yaml")
                   if p.name != "kustomization.yaml")
    assert [o.path for o in objects] == [
        PurePosixPath(p.relative_to(root / "out").as_posix()) for p in files]
    deployment = next(o for o in objects if o.title == "Deployment inference/llama-70b")
    assert deployment.origin.path == "profiles/services/llama-70b.yaml"
    assert deployment.origin.line == profile_line(root / deployment.origin.path,
                                                  "kind: InferenceService")
    assert deployment.shown.endswith("out/prod-us-east/workloads/inference/"
                                     "deployment-llama-70b.yaml")
    namespace = next(o for o in objects if o.kind == "Namespace")
    assert (namespace.namespace, namespace.name) == ("", "inference")
    # The bootstrap objects are not the cluster's.
    assert not any(str(o.path).startswith("_") for o in objects)


def test_origins_are_the_renders(rendered: tuple[Path, ClusterPlan]) -> None:
    _, cluster = rendered
    where = origins(cluster, None)
    assert where[PurePosixPath("prod-us-east/gpu/_cluster/deviceclass-h100.yaml")].path == \
        "profiles/gpu-classes/h100.yaml"


def test_a_file_the_render_does_not_make_is_located_at_itself(
        rendered: tuple[Path, ClusterPlan], tmp_path: Path) -> None:
    root, cluster = rendered
    out = tmp_path / "out"
    shutil.copytree(root / "out", out)
    extra = out / "prod-us-east/workloads/inference/configmap-by-hand.yaml"
    extra.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: by-hand, "
                     "namespace: inference}\n", encoding="utf-8")
    objects, findings = read_out(cluster, out, None)
    assert findings == []
    hand = next(o for o in objects if o.name == "by-hand")
    assert hand.origin.path == hand.shown == f"{out.as_posix()}/prod-us-east/workloads/" \
        "inference/configmap-by-hand.yaml"


def test_unreadable_files_are_findings(rendered: tuple[Path, ClusterPlan],
                                       tmp_path: Path) -> None:
    """Not YAML, or not one object: GEN801 at the profile, the file named; the rest read."""
    root, cluster = rendered
    out = tmp_path / "out"
    shutil.copytree(root / "out", out)
    broken = out / "prod-us-east/workloads/inference/service-llama-70b.yaml"
    broken.write_text("apiVersion: v1\nkind: [Service\n", encoding="utf-8")
    two = out / "prod-us-east/workloads/inference/service-llama-8b.yaml"
    two.write_text("apiVersion: v1\nkind: Service\n---\napiVersion: v1\nkind: Service\n",
                   encoding="utf-8")
    objects, findings = read_out(cluster, out, None)
    assert sorted(f.rule for f in findings) == ["GEN801", "GEN801"]
    not_yaml = next(f for f in findings if "cannot be read" in f.message)
    assert not_yaml.location is not None
    assert not_yaml.location.path == "profiles/services/llama-70b.yaml"
    assert "(line 3)" in not_yaml.message
    assert not any(o.name in ("llama-70b", "llama-8b") and o.kind == "Service" for o in objects)


def test_a_cluster_never_rendered(rendered: tuple[Path, ClusterPlan], tmp_path: Path) -> None:
    _, cluster = rendered
    objects, findings = read_out(cluster, tmp_path / "nothing", None)
    assert objects == []
    assert [f.rule for f in findings] == ["GEN801"]
    assert "gen render --cluster prod-us-east" in findings[0].hint
