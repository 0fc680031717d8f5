"""Tests for gen.gitops.build: Argo CD / Flux bootstrap objects and the NVIDIA platform charts."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from gen.emit.render import BUILTIN_TEMPLATES
from gen.fleet.manifests import MIG_CONFIGMAP_NAME
from gen.fleet.plan import BOOTSTRAP_DIR, ClusterPlan
from gen.gitops import build as gitops
from gen.pipeline import load_plan, render
from tests.helpers import copy_fleet, write_tree

H100_POOL = """
  - name: h100
    gpu: h100-sxm5-80gb
    gpus_per_node: 8
    nodes: 2
    driver_version: "580.95.05"
"""


def _cluster(
    name: str = "c1",
    *,
    engine: str | None = "flux",
    allocation: str = "dra",
    pools: str = H100_POOL,
    extra: str = "",
) -> str:
    gitops_block = (
        f"gitops:\n  engine: {engine}\n  repo_url: https://github.com/org/fleet.git\n"
        if engine else ""
    )
    return (
        f"kind: Cluster\nname: {name}\nkubernetes_version: \"1.34.2\"\n"
        f"allocation: {allocation}\n{gitops_block}{extra}node_pools:{pools}"
    )


def _layout(name: str, profiles: dict[str, int]) -> str:
    body = "".join(f"  {p}: {n}\n" for p, n in profiles.items())
    return f"kind: MIGLayout\nname: {name}\ngpu: h100-sxm5-80gb\nprofiles:\n{body}"


def _plan(tmp_path: Path, files: dict[str, str], name: str = "c1") -> ClusterPlan:
    write_tree(tmp_path, files)
    plan = load_plan(tmp_path / "profiles", base=tmp_path)
    return next(c for c in plan.clusters if c.name == name)


def _render_one(plan: ClusterPlan) -> dict[str, dict[str, Any]]:
    """Render one cluster's manifests: {relative path: object}."""
    from gen.emit.render import make_environment, render_cluster

    objects, _ = render_cluster(make_environment(), plan)
    return {str(o.path): dict(o.data) for o in objects}


def _docs(out: Path) -> dict[str, dict[str, Any]]:
    """Every rendered object under ``out`` by relative path (kustomization files excluded)."""
    result = {}
    for path in sorted(out.rglob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        result[path.relative_to(out).as_posix()] = yaml.safe_load(path.read_text("utf-8"))
    return result


@pytest.fixture(scope="module")
def fleet_out(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh render of the example fleet (a copy) with embedded schema validation."""
    root = copy_fleet(tmp_path_factory.mktemp("fleet"))
    render(root / "profiles", root / "out", validator="embedded", base=root)
    return root / "out"


EXAMPLE_CLUSTERS = ("prod-us-east", "research-eu", "edge-l4")
"""The example clusters these tests know (others may join the example fleet)."""


def _wave(obj: dict[str, Any]) -> int:
    annotations = obj["metadata"].get("annotations") or {}
    return int(annotations.get("argocd.argoproj.io/sync-wave", "0"))


# --- the example fleet -------------------------------------------------------------------


def test_example_bootstraps_render_and_validate(fleet_out: Path) -> None:
    """The example fleet renders its bootstrap objects, schema-valid, under _bootstrap/."""
    boot = fleet_out / BOOTSTRAP_DIR
    found = sorted(p.relative_to(boot).as_posix() for p in boot.rglob("*.yaml"))
    assert [f for f in found if f.split("/")[0] in EXAMPLE_CLUSTERS] == [
        "edge-l4/flux-system/gitrepository-edge-l4.yaml",
        "edge-l4/flux-system/kustomization-edge-l4-gpu.yaml",
        "edge-l4/flux-system/kustomization-edge-l4-platform.yaml",
        "edge-l4/flux-system/kustomization-edge-l4-workloads.yaml",
        "prod-us-east/argocd/application-prod-us-east-gpu-operator.yaml",
        "prod-us-east/argocd/application-prod-us-east-nvidia-dra-driver-gpu.yaml",
        "prod-us-east/argocd/application-prod-us-east.yaml",
        "research-eu/flux-system/gitrepository-research-eu.yaml",
        "research-eu/flux-system/kustomization-research-eu-gpu.yaml",
        "research-eu/flux-system/kustomization-research-eu-platform.yaml",
        "research-eu/flux-system/kustomization-research-eu-workloads.yaml",
    ]


def test_bootstrap_kinds_never_in_synced_folders(fleet_out: Path) -> None:
    """Applications, GitRepositories and Flux Kustomizations live only in _bootstrap/."""
    for rel, obj in _docs(fleet_out).items():
        bootstrap_kind = obj["kind"] in ("Application", "GitRepository") or (
            obj["apiVersion"].startswith("kustomize.toolkit.fluxcd.io/")
        )
        assert bootstrap_kind == rel.startswith(f"{BOOTSTRAP_DIR}/"), rel


def test_argo_cluster_application(fleet_out: Path) -> None:
    """The Argo CD Application syncs out/<cluster> automatically, with prune and self-heal."""
    app = yaml.safe_load((
        fleet_out / BOOTSTRAP_DIR / "prod-us-east/argocd/application-prod-us-east.yaml"
    ).read_text("utf-8"))
    spec = app["spec"]
    assert app["metadata"]["namespace"] == "argocd"
    assert spec["project"] == "default"
    assert spec["source"] == {
        "repoURL": "https://github.com/example-org/gpu-fleet.git",
        "targetRevision": "main",
        "path": "out/prod-us-east",
    }
    assert spec["destination"] == {"server": "https://kubernetes.default.svc"}
    assert spec["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}
    assert "ServerSideApply=true" in spec["syncPolicy"]["syncOptions"]


def test_argo_platform_applications_sync_first(fleet_out: Path) -> None:
    """The GPU Operator and DRA driver Applications carry waves before the cluster's own."""
    folder = fleet_out / BOOTSTRAP_DIR / "prod-us-east/argocd"
    apps = {p.name: yaml.safe_load(p.read_text("utf-8")) for p in folder.glob("*.yaml")}
    main = _wave(apps["application-prod-us-east.yaml"])
    operator = apps["application-prod-us-east-gpu-operator.yaml"]
    dra = apps["application-prod-us-east-nvidia-dra-driver-gpu.yaml"]
    assert _wave(operator) < _wave(dra) < main
    source = operator["spec"]["source"]
    assert (source["repoURL"], source["chart"], source["targetRevision"]) == (
        gitops.NVIDIA_HELM_REPO, "gpu-operator", "v25.10.1",
    )
    assert dra["spec"]["source"]["targetRevision"] == "25.12.0"
    for app in (operator, dra):
        assert app["spec"]["destination"]["namespace"] in ("gpu-operator", "nvidia-dra-driver-gpu")
        assert "CreateNamespace=true" in app["spec"]["syncPolicy"]["syncOptions"]
        assert app["spec"]["syncPolicy"]["managedNamespaceMetadata"]["labels"][
            "pod-security.kubernetes.io/enforce"
        ] == "privileged"
    assert operator["spec"]["ignoreDifferences"] == [{
        "group": "nvidia.com", "kind": "ClusterPolicy", "jsonPointers": ["/spec/cdi/default"],
    }]
    assert "RespectIgnoreDifferences=true" in operator["spec"]["syncPolicy"]["syncOptions"]


def test_flux_kustomization_chain(fleet_out: Path) -> None:
    """Flux clusters get platform → gpu → workloads, each waiting, pruning, path present."""
    for cluster in ("research-eu", "edge-l4"):
        folder = fleet_out / BOOTSTRAP_DIR / cluster / "flux-system"
        chain = {}
        for path in folder.glob("kustomization-*.yaml"):
            obj = yaml.safe_load(path.read_text("utf-8"))
            chain[obj["metadata"]["name"]] = obj["spec"]
        assert sorted(chain) == [f"{cluster}-{s}" for s in ("gpu", "platform", "workloads")]
        assert "dependsOn" not in chain[f"{cluster}-platform"]
        assert chain[f"{cluster}-gpu"]["dependsOn"] == [{"name": f"{cluster}-platform"}]
        assert chain[f"{cluster}-workloads"]["dependsOn"] == [{"name": f"{cluster}-gpu"}]
        for stage in ("platform", "gpu", "workloads"):
            spec = chain[f"{cluster}-{stage}"]
            assert spec["path"] == f"./out/{cluster}/{stage}"
            assert (spec["prune"], spec["wait"]) == (True, True)
            assert spec["sourceRef"] == {"kind": "GitRepository", "name": cluster}
            assert {"interval", "timeout"} <= set(spec)
            assert (fleet_out / cluster / stage / "kustomization.yaml").is_file()


def test_flux_platform_charts_in_platform_stage(fleet_out: Path) -> None:
    """Flux clusters install their charts from out/<cluster>/platform/ with CRD policies."""
    docs = _docs(fleet_out)
    releases = {
        rel: obj for rel, obj in docs.items()
        if obj["kind"] in ("HelmRelease", "HelmRepository")
        and rel.split("/")[0] in EXAMPLE_CLUSTERS
    }
    assert sorted(releases) == [
        "edge-l4/platform/flux-system/helmrelease-gpu-operator.yaml",
        "edge-l4/platform/flux-system/helmrepository-nvidia.yaml",
        "research-eu/platform/flux-system/helmrelease-gpu-operator.yaml",
        "research-eu/platform/flux-system/helmrelease-nvidia-dra-driver-gpu.yaml",
        "research-eu/platform/flux-system/helmrepository-nvidia.yaml",
    ]
    for rel, obj in releases.items():
        if obj["kind"] != "HelmRelease":
            assert obj["spec"]["url"] == gitops.NVIDIA_HELM_REPO
            continue
        spec = obj["spec"]
        assert spec["install"]["crds"] == spec["upgrade"]["crds"] == "CreateReplace", rel
        assert (fleet_out / rel.split("/")[0] / "platform/_cluster" / (
            f"namespace-{spec['targetNamespace']}.yaml"
        )).is_file()
    dra = releases["research-eu/platform/flux-system/helmrelease-nvidia-dra-driver-gpu.yaml"]
    assert dra["spec"]["dependsOn"] == [{"name": "gpu-operator"}]


def test_sync_waves_order_dra_objects(fleet_out: Path) -> None:
    """DeviceClass and the MIG ConfigMap (-10) precede claim templates (-5) and workloads."""
    docs = _docs(fleet_out)
    synced = {rel: obj for rel, obj in docs.items() if not rel.startswith("_")}
    classes = [o for o in synced.values() if o["kind"] == "DeviceClass"]
    claims = [o for o in synced.values() if o["kind"] == "ResourceClaimTemplate"]
    configmaps = [
        o for o in synced.values()
        if o["kind"] == "ConfigMap" and o["metadata"]["name"] == MIG_CONFIGMAP_NAME
    ]
    workloads = [o for o in synced.values() if o["kind"] == "Deployment"]
    assert classes and claims and configmaps and workloads
    assert {_wave(o) for o in classes} == {-10}
    assert {_wave(o) for o in configmaps} == {-10}
    assert {_wave(o) for o in claims} == {-5}
    assert min(_wave(o) for o in workloads) >= 0


def test_every_claim_template_is_replaced_on_change(fleet_out: Path) -> None:
    """Every rendered ResourceClaimTemplate carries Argo Replace=true and Flux force."""
    claims = [o for o in _docs(fleet_out).values() if o["kind"] == "ResourceClaimTemplate"]
    assert len(claims) >= 3
    for claim in claims:
        annotations = claim["metadata"]["annotations"]
        assert "Replace=true" in annotations["argocd.argoproj.io/sync-options"].split(",")
        assert annotations["kustomize.toolkit.fluxcd.io/force"].lower() == "enabled"


# --- Helm values from the plan -------------------------------------------------------------


def test_dra_cluster_disables_device_plugin(tmp_path: Path) -> None:
    """On a DRA cluster the device plugin is off, CDI on, and the DRA driver serves GPUs."""
    plan = _plan(tmp_path, {"profiles/c1.yaml": _cluster()})
    values = gitops.gpu_operator_values(plan)
    assert values == {"devicePlugin": {"enabled": False}, "cdi": {"enabled": True}}
    dra = gitops.dra_driver_values(plan)
    assert dra["gpuResourcesEnabledOverride"] is True
    assert dra["resources"] == {"gpus": {"enabled": True}, "computeDomains": {"enabled": False}}
    assert dra["nvidiaDriverRoot"] == "/run/nvidia/driver"
    assert "featureGates" not in dra
    assert [c.release for c in gitops.platform_charts(plan)] == [
        "gpu-operator", "nvidia-dra-driver-gpu",
    ]


def test_device_plugin_cluster_keeps_device_plugin(tmp_path: Path) -> None:
    """A device-plugin cluster enables the device plugin and gets no DRA driver chart."""
    plan = _plan(tmp_path, {"profiles/c1.yaml": _cluster(allocation="device-plugin")})
    assert gitops.gpu_operator_values(plan) == {"devicePlugin": {"enabled": True}}
    assert [c.release for c in gitops.platform_charts(plan)] == ["gpu-operator"]


def test_mixed_mig_layout_sets_mixed_strategy(tmp_path: Path) -> None:
    """Several profiles per GPU: strategy mixed, mig-manager reads gen's ConfigMap."""
    pools = H100_POOL + "    mig_layout: mixed\n"
    plan = _plan(tmp_path, {
        "profiles/c1.yaml": _cluster(pools=pools),
        "profiles/mixed.yaml": _layout("mixed", {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}),
    })
    values = gitops.gpu_operator_values(plan)
    assert values["mig"] == {"strategy": "mixed"}
    assert values["migManager"] == {
        "enabled": True,
        "config": {"name": "gen-mig-parted-config", "default": "all-disabled"},
    }


def test_uniform_mig_layout_sets_single_strategy(tmp_path: Path) -> None:
    """One profile on every GPU: strategy single."""
    pools = H100_POOL + "    mig_layout: uniform\n"
    plan = _plan(tmp_path, {
        "profiles/c1.yaml": _cluster(allocation="device-plugin", pools=pools),
        "profiles/uniform.yaml": _layout("uniform", {"3g.40gb": 2}),
    })
    values = gitops.gpu_operator_values(plan)
    assert values["mig"] == {"strategy": "single"}
    assert values["devicePlugin"] == {"enabled": True}
    assert "env" not in values["migManager"]


def test_no_mig_leaves_mig_values_out(tmp_path: Path) -> None:
    """Without MIG pools gen sets neither mig.strategy nor mig-manager's config."""
    plan = _plan(tmp_path, {"profiles/c1.yaml": _cluster()})
    assert plan.mig_strategy == "none"
    values = gitops.gpu_operator_values(plan)
    assert "mig" not in values and "migManager" not in values


def test_virtualized_mig_pool_enables_reboot(tmp_path: Path) -> None:
    """A virtualized MIG pool sets WITH_REBOOT=true in mig-manager's environment."""
    pools = H100_POOL + "    mig_layout: uniform\n    virtualized: true\n"
    plan = _plan(tmp_path, {
        "profiles/c1.yaml": _cluster(pools=pools),
        "profiles/uniform.yaml": _layout("uniform", {"3g.40gb": 2}),
    })
    env = gitops.gpu_operator_values(plan)["migManager"]["env"]
    assert env == [{"name": "WITH_REBOOT", "value": "true"}]


def test_virtualized_pool_without_mig_needs_no_reboot(tmp_path: Path) -> None:
    """A virtualized pool without MIG sets no mig-manager values."""
    pools = H100_POOL + "    virtualized: true\n"
    plan = _plan(tmp_path, {"profiles/c1.yaml": _cluster(pools=pools)})
    assert "migManager" not in gitops.gpu_operator_values(plan)


def test_dra_feature_gates_and_versions_come_from_profile(tmp_path: Path) -> None:
    """The DRA driver's featureGates and both chart versions are the profile's pins."""
    extra = (
        "gpu_operator:\n  version: v26.3.1\n"
        "dra_driver:\n  version: 25.8.1\n"
        "  feature_gates: {TimeSlicingSettings: true, MPSSupport: false}\n"
    )
    plan = _plan(tmp_path, {"profiles/c1.yaml": _cluster(extra=extra)})
    assert gitops.dra_driver_values(plan)["featureGates"] == {
        "MPSSupport": False, "TimeSlicingSettings": True,
    }
    charts = {c.release: c for c in gitops.platform_charts(plan)}
    assert charts["gpu-operator"].version == "v26.3.1"
    assert charts["nvidia-dra-driver-gpu"].version == "25.8.1"


def test_taints_become_tolerations(tmp_path: Path) -> None:
    """Pool taints are tolerated by the DRA kubelet plugin and the operator's DaemonSets."""
    pools = H100_POOL + (
        "    taints:\n"
        "      - {key: nvidia.com/gpu, effect: NoSchedule}\n"
        "      - {key: dedicated, value: llm, effect: NoExecute}\n"
    )
    plan = _plan(tmp_path, {"profiles/c1.yaml": _cluster(pools=pools)})
    expected = [
        {"key": "dedicated", "operator": "Exists", "effect": "NoExecute"},
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
    ]
    assert gitops.dra_driver_values(plan)["kubeletPlugin"] == {"tolerations": expected}
    assert gitops.gpu_operator_values(plan)["daemonsets"]["tolerations"] == [
        gitops.DEFAULT_OPERATOR_TOLERATION, expected[0],
    ]


def test_semver_dra_driver_comes_from_oci(tmp_path: Path) -> None:
    """A 0.x DRA driver version installs dra-driver-nvidia-gpu from registry.k8s.io (OCI)."""
    extra = "dra_driver:\n  version: v0.4.1\n"
    write_tree(tmp_path, {
        "profiles/flux.yaml": _cluster(extra=extra),
        "profiles/argo.yaml": _cluster("c2", engine="argocd", extra=extra),
    })
    render(tmp_path / "profiles", tmp_path / "out", validator="embedded", base=tmp_path)
    docs = _docs(tmp_path / "out")
    repo = docs["c1/platform/flux-system/helmrepository-dra-driver-nvidia.yaml"]["spec"]
    assert (repo["type"], repo["url"]) == ("oci", gitops.DRA_OCI_REPO)
    release = docs["c1/platform/flux-system/helmrelease-dra-driver-nvidia-gpu.yaml"]["spec"]
    assert release["chart"]["spec"]["version"] == "0.4.1"
    app = docs["_bootstrap/c2/argocd/application-c2-dra-driver-nvidia-gpu.yaml"]["spec"]
    assert app["source"]["repoURL"] == "registry.k8s.io/dra-driver-nvidia/charts"
    assert app["source"]["chart"] == "dra-driver-nvidia-gpu"


# --- bootstrap shape -------------------------------------------------------------------------


def test_cluster_without_gitops_gets_nothing(tmp_path: Path) -> None:
    """No gitops block: no bootstrap objects and no platform charts."""
    plan = _plan(tmp_path, {"profiles/c1.yaml": _cluster(engine=None)})
    assert gitops.build(plan) == []


def test_flux_chain_skips_empty_stages(tmp_path: Path) -> None:
    """A cluster with no services has only a platform stage; only it gets a Kustomization."""
    write_tree(tmp_path, {"profiles/c1.yaml": _cluster()})
    render(tmp_path / "profiles", tmp_path / "out", validator="embedded", base=tmp_path)
    docs = _docs(tmp_path / "out")
    kustomizations = [o for r, o in docs.items() if r.startswith("_bootstrap/c1/flux-system/k")]
    assert [k["metadata"]["name"] for k in kustomizations] == ["c1-platform"]
    assert "dependsOn" not in kustomizations[0]["spec"]
    assert (tmp_path / "out/c1/platform/kustomization.yaml").is_file()


def test_gitops_namespace_override(tmp_path: Path) -> None:
    """gitops.namespace replaces argocd / flux-system for every bootstrap object."""
    extra = "  namespace: gitops\n  project: gpu\n"
    text = _cluster(engine="argocd").replace("fleet.git\n", "fleet.git\n" + extra, 1)
    plan = _plan(tmp_path, {"profiles/c1.yaml": text})
    objects = _render_one(plan)
    apps = {p: o for p, o in objects.items() if o["kind"] == "Application"}
    assert len(apps) == 3
    for path, app in apps.items():
        assert PurePosixPath(path).parts[:3] == (BOOTSTRAP_DIR, "c1", "gitops")
        assert app["spec"]["project"] == "gpu"


@pytest.mark.parametrize(("url", "expected"), [
    ("git@github.com:org/fleet.git", "ssh://git@github.com/org/fleet.git"),
    ("ssh://git@github.com/org/fleet.git", "ssh://git@github.com/org/fleet.git"),
    ("https://github.com/org/fleet.git", "https://github.com/org/fleet.git"),
])
def test_flux_git_url(url: str, expected: str) -> None:
    """Flux gets an ssh:// URL for scp-style git@host:path addresses."""
    assert gitops.flux_git_url(url) == expected


@pytest.mark.parametrize(("revision", "ref"), [
    ("main", {"branch": "main"}),
    ("refs/tags/v1.2.0", {"name": "refs/tags/v1.2.0"}),
    ("0123456789abcdef" * 2 + "01234567", {"commit": "0123456789abcdef" * 2 + "01234567"}),
])
def test_flux_revision_ref(tmp_path: Path, revision: str, ref: dict[str, str]) -> None:
    """A branch, a full ref and a commit SHA map to the GitRepository's ref fields."""
    text = _cluster().replace("fleet.git\n", f"fleet.git\n  revision: {revision!r}\n", 1)
    objects = _render_one(_plan(tmp_path, {"profiles/c1.yaml": text}))
    repo = objects["_bootstrap/c1/flux-system/gitrepository-c1.yaml"]
    assert repo["spec"]["ref"] == ref


def test_gitops_templates_emit_scalars_through_tojson() -> None:
    """Every expression in the gitops templates ends in |tojson."""
    for template in sorted((BUILTIN_TEMPLATES / "gitops").glob("*.yaml.j2")):
        for expression in re.findall(r"{{(.*?)}}", template.read_text("utf-8")):
            assert expression.strip().endswith("|tojson"), (template.name, expression)
