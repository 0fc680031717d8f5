"""Tests for gen.gitops.build: Argo CD / Flux bootstrap objects and the NVIDIA platform charts."""

from __future__ import annotations

import json
import re
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from gen.emit.render import BUILTIN_TEMPLATES
from gen.errors import SourceLocation
from gen.fleet.manifests import MIG_CONFIGMAP_NAME, manifest
from gen.fleet.plan import BOOTSTRAP_DIR, ROOT_DIR, ClusterPlan
from gen.gitops import build as gitops
from gen.gitops.fleet import FLEET_MODE_THRESHOLD
from gen.pins import pin
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
    """The example fleet renders its bootstrap objects, schema-valid, under _bootstrap/; in
    fleet mode the Argo CD cluster's Application comes from the shared ApplicationSet."""
    boot = fleet_out / BOOTSTRAP_DIR
    found = sorted(p.relative_to(boot).as_posix() for p in boot.rglob("*.yaml"))
    assert [f for f in found if f.split("/")[0] in (*EXAMPLE_CLUSTERS, "_fleet")] == [
        "_fleet/argocd/applicationset-gen-root-clusters.yaml",
        "edge-l4/flux-system/gitrepository-edge-l4.yaml",
        "edge-l4/flux-system/kustomization-edge-l4-gpu.yaml",
        "edge-l4/flux-system/kustomization-edge-l4-platform.yaml",
        "edge-l4/flux-system/kustomization-edge-l4-workloads.yaml",
        "prod-us-east/argocd/application-prod-us-east-dra-driver-nvidia-gpu.yaml",
        "prod-us-east/argocd/application-prod-us-east-gpu-operator.yaml",
        "research-eu/flux-system/gitrepository-research-eu.yaml",
        "research-eu/flux-system/kustomization-research-eu-gpu.yaml",
        "research-eu/flux-system/kustomization-research-eu-platform.yaml",
        "research-eu/flux-system/kustomization-research-eu-workloads.yaml",
    ]


def test_one_root_per_engine_is_all_that_is_applied_by_hand(fleet_out: Path) -> None:
    """out/_root holds one object per Argo CD root and one per Flux cluster, nothing else;
    each syncs the bootstrap objects from Git, prune on, and has no finalizer (deleting a
    root orphans what it synced)."""
    roots = _docs(fleet_out / ROOT_DIR)
    assert sorted(roots) == [
        "_fleet/argocd/application-gen-root.yaml",
        "edge-l4/flux-system/kustomization-edge-l4-bootstrap.yaml",
        "mac-lab/flux-system/kustomization-mac-lab-bootstrap.yaml",
        "research-eu/flux-system/kustomization-research-eu-bootstrap.yaml",
        "research-multinode/flux-system/kustomization-research-multinode-bootstrap.yaml",
        "shared-lab/flux-system/kustomization-shared-lab-bootstrap.yaml",
    ]
    argo = roots["_fleet/argocd/application-gen-root.yaml"]
    assert "finalizers" not in argo["metadata"]
    assert argo["spec"]["source"]["path"] == "out/_bootstrap"
    assert argo["spec"]["source"]["directory"] == {
        "recurse": True, "include": "{prod-us-east/argocd/*,_fleet/argocd/*}",
    }
    assert argo["spec"]["syncPolicy"]["automated"] == {
        "prune": True, "selfHeal": True, "allowEmpty": False,
    }
    flux = roots["research-eu/flux-system/kustomization-research-eu-bootstrap.yaml"]["spec"]
    assert (flux["path"], flux["prune"], flux["deletionPolicy"]) == (
        "./out/_bootstrap/research-eu", True, "Orphan")
    # Everything the Flux root syncs exists and reads the source it adopts.
    assert (fleet_out / "_bootstrap/research-eu/flux-system/gitrepository-research-eu.yaml"
            ).is_file()


def test_bootstrap_kinds_never_in_synced_folders(fleet_out: Path) -> None:
    """Applications, GitRepositories and Flux Kustomizations live only outside the synced
    folders (_bootstrap/, and the roots in _root/)."""
    for rel, obj in _docs(fleet_out).items():
        bootstrap_kind = obj["kind"] in ("Application", "ApplicationSet", "GitRepository") or (
            obj["apiVersion"].startswith("kustomize.toolkit.fluxcd.io/")
        )
        assert bootstrap_kind == rel.startswith((f"{BOOTSTRAP_DIR}/", f"{ROOT_DIR}/")), rel


def test_argo_applicationset_fleet_mode(fleet_out: Path) -> None:
    """Fleet mode: one ApplicationSet, a Git files generator over the members' _meta files,
    RollingSync steps by wave, every generated Application with the resources finalizer and
    manifest-generate-paths; each generator file holds what the template names."""
    appset = yaml.safe_load((
        fleet_out / BOOTSTRAP_DIR / "_fleet/argocd/applicationset-gen-root-clusters.yaml"
    ).read_text("utf-8"))
    spec = appset["spec"]
    files = spec["generators"][0]["git"]["files"]
    assert files == [{"path": "out/_meta/prod-us-east/argocd.json"}]
    assert spec["strategy"]["type"] == "RollingSync"
    assert spec["strategy"]["rollingSync"]["steps"] == [{"matchExpressions": [
        {"key": "gen.dev/wave", "operator": "In", "values": ["1"]}]}]
    meta = spec["template"]["metadata"]
    assert meta["finalizers"] == ["resources-finalizer.argocd.argoproj.io"]
    assert meta["annotations"]["argocd.argoproj.io/manifest-generate-paths"] == "."
    assert meta["labels"]["gen.dev/wave"] == "{{.wave}}"
    assert "Delete=confirm" in appset["metadata"]["annotations"][
        "argocd.argoproj.io/sync-options"]
    params = json.loads((fleet_out / "_meta/prod-us-east/argocd.json").read_text("utf-8"))
    assert params["path"] == "out/prod-us-east" and params["wave"] == "1"
    keys = set(re.findall(r"\{\{\.(\w+)\}\}", json.dumps(spec["template"])))
    assert keys <= set(params), keys - set(params)


def test_argo_cluster_application(tmp_path: Path) -> None:
    """Without fleet mode, the cluster's Application syncs out/<cluster> automatically, with
    prune, self-heal, never to an empty source, only what is out of sync, the resources
    finalizer and manifest-generate-paths."""
    plan = _plan(tmp_path, {"profiles/c1.yaml": _cluster(engine="argocd")})
    app = _render_one(plan)["_bootstrap/c1/argocd/application-c1.yaml"]
    spec = app["spec"]
    assert app["metadata"]["namespace"] == "argocd"
    assert app["metadata"]["finalizers"] == ["resources-finalizer.argocd.argoproj.io"]
    assert app["metadata"]["annotations"]["argocd.argoproj.io/manifest-generate-paths"] == "."
    assert spec["source"] == {
        "repoURL": "https://github.com/org/fleet.git", "targetRevision": "main", "path": "out/c1",
    }
    assert spec["destination"] == {"server": "https://kubernetes.default.svc"}
    assert spec["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True,
                                               "allowEmpty": False}
    options = spec["syncPolicy"]["syncOptions"]
    assert {"ServerSideApply=true", "ApplyOutOfSyncOnly=true"} <= set(options)
    assert not any(o.startswith(("Force", "Replace")) for o in options)


def test_fleet_mode_is_the_default_above_the_threshold(tmp_path: Path) -> None:
    """fleet_mode auto: Applications up to FLEET_MODE_THRESHOLD clusters, an ApplicationSet
    with one RollingSync step per wave above it."""
    count = FLEET_MODE_THRESHOLD + 1
    files = {
        f"profiles/c{i}.yaml": _cluster(f"c{i}", engine="argocd").replace(
            "fleet.git\n", f"fleet.git\n  wave: {i % 3}\n", 1)
        for i in range(count)
    }
    write_tree(tmp_path, files)
    plan = load_plan(tmp_path / "profiles", base=tmp_path)
    objects = _render_one(plan.clusters[0])
    appset = objects["_bootstrap/_fleet/argocd/applicationset-gen-root-clusters.yaml"]
    steps = appset["spec"]["strategy"]["rollingSync"]["steps"]
    assert [s["matchExpressions"][0]["values"] for s in steps] == [["0"], ["1"], ["2"]]
    assert len(appset["spec"]["generators"][0]["git"]["files"]) == count
    assert "_bootstrap/c0/argocd/application-c0.yaml" not in objects
    # Every member renders the shared objects with the same bytes.
    from gen.emit.render import make_environment, render_cluster

    env = make_environment()
    shared = [{str(o.path): o.text for o in render_cluster(env, c)[0]
               if o.path.parts[1] == "_fleet"} for c in plan.clusters]
    assert all(s == shared[0] for s in shared) and len(shared[0]) == 2
    # One fewer cluster: Applications.
    write_tree(tmp_path / "small", dict(list(files.items())[:FLEET_MODE_THRESHOLD]))
    small = load_plan(tmp_path / "small/profiles", base=tmp_path / "small")
    objects = _render_one(small.clusters[0])
    assert "_bootstrap/c0/argocd/application-c0.yaml" in objects
    assert not any("applicationset" in p for p in objects)


def test_argo_platform_applications_sync_first(fleet_out: Path) -> None:
    """The GPU Operator and DRA driver Applications carry waves before the cluster's own."""
    folder = fleet_out / BOOTSTRAP_DIR / "prod-us-east/argocd"
    apps = {p.name: yaml.safe_load(p.read_text("utf-8")) for p in folder.glob("*.yaml")}
    main = 0  # the cluster's Application (from the ApplicationSet) syncs at the default wave
    operator = apps["application-prod-us-east-gpu-operator.yaml"]
    dra = apps["application-prod-us-east-dra-driver-nvidia-gpu.yaml"]
    assert _wave(operator) < _wave(dra) < main
    source = operator["spec"]["source"]
    assert (source["repoURL"], source["chart"], source["targetRevision"]) == (
        gitops.NVIDIA_HELM_REPO, "gpu-operator", pin("gpu-operator").version,
    )
    assert dra["spec"]["source"]["targetRevision"] == pin("dra-driver").version.removeprefix("v")
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
        "research-eu/platform/flux-system/helmrelease-dra-driver-nvidia-gpu.yaml",
        "research-eu/platform/flux-system/helmrelease-gpu-operator.yaml",
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
    dra = releases["research-eu/platform/flux-system/helmrelease-dra-driver-nvidia-gpu.yaml"]
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


def test_claim_templates_are_never_forced_or_replaced(fleet_out: Path) -> None:
    """A claim template is named by its content: no Force/Replace, no Flux force; pruned
    last, after the rollout onto its successor."""
    claims = [o for o in _docs(fleet_out).values() if o["kind"] == "ResourceClaimTemplate"]
    assert len(claims) >= 3
    for claim in claims:
        annotations = claim["metadata"]["annotations"]
        assert annotations["argocd.argoproj.io/sync-options"] == "PruneLast=true"
        assert "kustomize.toolkit.fluxcd.io/force" not in annotations
        assert re.fullmatch(r".+-gpu-[0-9a-f]{8}", claim["metadata"]["name"])


def test_prune_protection_on_namespaces_and_model_caches(fleet_out: Path) -> None:
    """Namespaces are pruned or deleted by Argo CD only when confirmed; model-cache PVCs are
    never deleted with their Application; Flux prunes neither."""
    docs = {r: o for r, o in _docs(fleet_out).items() if not r.startswith("_")}
    namespaces = [o for o in docs.values() if o["kind"] == "Namespace"]
    pvcs = [o for o in docs.values() if o["kind"] == "PersistentVolumeClaim"]
    assert namespaces and pvcs
    for obj in namespaces:
        annotations = obj["metadata"]["annotations"]
        assert annotations["argocd.argoproj.io/sync-options"] == "Prune=confirm,Delete=confirm"
        assert annotations["kustomize.toolkit.fluxcd.io/prune"] == "disabled"
    for obj in pvcs:
        annotations = obj["metadata"]["annotations"]
        assert annotations["argocd.argoproj.io/sync-options"] == "Prune=confirm,Delete=false"
        assert annotations["kustomize.toolkit.fluxcd.io/prune"] == "disabled"


def test_flux_sources_check_out_only_their_cluster(fleet_out: Path) -> None:
    """Each Flux GitRepository clones only its cluster's synced folder and bootstrap."""
    for cluster in ("research-eu", "edge-l4"):
        repo = yaml.safe_load((fleet_out / BOOTSTRAP_DIR / cluster / "flux-system" /
                               f"gitrepository-{cluster}.yaml").read_text("utf-8"))
        assert repo["spec"]["sparseCheckout"] == [f"out/{cluster}", f"out/_bootstrap/{cluster}"]


def test_helm_releases_follow_helm_controller_recommendations(fleet_out: Path) -> None:
    """RetryOnFailure for install and upgrade (retry instead of uninstall or rollback),
    CRDs upgraded, drift detection on."""
    releases = [o for o in _docs(fleet_out).values() if o["kind"] == "HelmRelease"]
    assert releases
    for release in releases:
        spec = release["spec"]
        for action in ("install", "upgrade"):
            assert spec[action]["strategy"] == {"name": "RetryOnFailure", "retryInterval": "5m"}
            assert "remediation" not in spec[action]
        assert spec["driftDetection"] == {"mode": "enabled"}


def test_workloads_timeout_covers_the_slowest_progress_deadline(tmp_path: Path) -> None:
    """The workloads Kustomization waits longer than its slowest Deployment's deadline."""
    specs = [manifest("vllm/deployment.yaml.j2", SourceLocation("x"),
                             progress_deadline_seconds=3000)]
    assert gitops._workloads_timeout(specs) == "51m"
    assert gitops._workloads_timeout([]) == "30m"


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
    charts = gitops.platform_charts(plan)
    assert [c.release for c in charts] == ["gpu-operator", "dra-driver-nvidia-gpu"]
    assert charts[1].repo_url == "oci://registry.k8s.io/dra-driver-nvidia/charts"  # the SemVer pin


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


def test_all_dynamic_mig_turns_mig_manager_off(tmp_path: Path) -> None:
    """Every MIG pool dynamic: mig-manager off (the DRA driver owns MIG); beside a static
    layout it stays on, with gen's ConfigMap."""
    dynamic = H100_POOL + "    mig: dynamic\n"
    plan = _plan(tmp_path, {"profiles/c1.yaml": _cluster(pools=dynamic)})
    assert gitops.gpu_operator_values(plan)["migManager"] == {"enabled": False}
    static = H100_POOL.replace("name: h100", "name: h100-static") + "    mig_layout: uniform\n"
    plan = _plan(tmp_path / "both", {
        "profiles/c1.yaml": _cluster(pools=dynamic + static),
        "profiles/uniform.yaml": _layout("uniform", {"3g.40gb": 2}),
    })
    assert gitops.gpu_operator_values(plan)["migManager"]["enabled"] is True


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
    assert "c1/platform/flux-system/helmrepository-dra-driver-nvidia.yaml" not in docs
    repo = docs["c1/platform/flux-system/ocirepository-dra-driver-nvidia-gpu.yaml"]["spec"]
    assert repo["url"] == f"{gitops.DRA_OCI_REPO}/dra-driver-nvidia-gpu"
    assert repo["ref"] == {"tag": "0.4.1"}
    assert repo["layerSelector"]["mediaType"] == gitops.HELM_CHART_LAYER
    release = docs["c1/platform/flux-system/helmrelease-dra-driver-nvidia-gpu.yaml"]["spec"]
    assert release["chartRef"] == {"kind": "OCIRepository", "name": "dra-driver-nvidia-gpu"}
    assert "chart" not in release
    app = docs["_bootstrap/c2/argocd/application-c2-dra-driver-nvidia-gpu.yaml"]["spec"]
    assert app["source"]["repoURL"] == "registry.k8s.io/dra-driver-nvidia/charts"
    assert app["source"]["chart"] == "dra-driver-nvidia-gpu"


# --- bootstrap shape -------------------------------------------------------------------------


def test_cluster_without_gitops_gets_nothing(tmp_path: Path) -> None:
    """No gitops block: no bootstrap objects and no platform charts."""
    plan = _plan(tmp_path, {"profiles/c1.yaml": _cluster(engine=None)})
    built = gitops.build(plan)
    assert not built.specs and not built.files


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
    assert len(apps) == 4
    for path, app in apps.items():
        assert PurePosixPath(path).parts[1:3] in (("c1", "gitops"), ("_fleet", "gitops")), path
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


# --- syncs that never surprise ---------------------------------------------------------------


def test_changing_a_services_gpu_class_rolls_its_deployment(tmp_path: Path) -> None:
    """Switching llama-70b to another GPU class in the example fleet writes a new claim
    template under a new name, removes the old one, and changes the Deployment (it names the
    new template), so the pods roll onto the new claim."""
    root = copy_fleet(tmp_path / "fleet")
    render(root / "profiles", root / "out", validator="embedded", base=root)
    before = _docs(root / "out")
    (root / "profiles/gpu-classes/h100-large.yaml").write_text(
        "kind: GPUClass\nname: h100-large\nmatch:\n  product: h100-sxm5-80gb\n"
        "  min_memory: 79Gi\n", encoding="utf-8")
    service = root / "profiles/services/llama-70b.yaml"
    service.write_text(service.read_text("utf-8").replace(
        "gpu_class: h100\n", "gpu_class: h100-large\n", 1), encoding="utf-8")
    render(root / "profiles", root / "out", validator="embedded", base=root)
    after = _docs(root / "out")

    def claims(docs: dict[str, dict[str, Any]]) -> set[str]:
        return {r for r, o in docs.items() if o["kind"] == "ResourceClaimTemplate"
                and o["metadata"]["labels"]["app.kubernetes.io/name"] == "llama-70b"}

    old, new = claims(before), claims(after)
    assert len(old) == len(new) == 1 and old != new
    deployment = "prod-us-east/workloads/inference/deployment-llama-70b.yaml"
    assert before[deployment] != after[deployment]
    [claim] = after[deployment]["spec"]["template"]["spec"]["resourceClaims"]
    assert claim["resourceClaimTemplateName"] == after[next(iter(new))]["metadata"]["name"]
    assert not (root / "out" / next(iter(old))).exists()
    # The other service's template and Deployment are untouched.
    other = "prod-us-east/workloads/inference/deployment-llama-8b.yaml"
    assert before[other] == after[other]
