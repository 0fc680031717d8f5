"""gen.serving.multinode and gen.serving.groups: a replica larger than a node as an LWS group."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gen.pipeline import lint, render
from tests.helpers import write_tree

CLUSTER = """\
    kind: Cluster
    name: mn
    kubernetes_version: "1.36.6"
    allocation: {allocation}
    addons: [lws, keda]
    node_pools:
      - name: h200
        gpu: h200-sxm
        gpus_per_node: 8
        nodes: {nodes}
        driver_version: "595.91.07"
        interconnect: infiniband
        labels: {{gen.dev/pool: h200}}
    ---
    kind: GPUClass
    name: h200
    match: {{product: h200-sxm}}
    """

SERVICE = """\
    kind: InferenceService
    name: big
    model: meta-llama/Llama-3.1-405B-Instruct-FP8
    clusters: [mn]
    gpu: {{gpu_class: h200, count: {count}}}
    parallelism: {parallelism}
    serving: {{max_model_len: 16384}}
    {extra}
    """


def _fleet(tmp_path: Path, *, parallelism: str = "{tensor: 8, pipeline: 2}", count: int = 8,
           nodes: int = 2, allocation: str = "dra", extra: str = "") -> Path:
    write_tree(tmp_path, {
        "profiles/cluster.yaml": CLUSTER.format(allocation=allocation, nodes=nodes),
        "profiles/service.yaml": SERVICE.format(parallelism=parallelism, count=count,
                                                extra=extra),
    })
    return tmp_path / "profiles"


def _objects(tmp_path: Path, profiles: Path) -> dict[str, dict[str, Any]]:
    render(profiles, tmp_path / "out", base=tmp_path, validator="embedded")
    found = {}
    for path in (tmp_path / "out" / "mn").rglob("*.yaml"):
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
        if doc.get("kind") != "Kustomization":
            found[f"{doc['kind']}/{doc['metadata']['name']}"] = doc
    return found


def _container(lws: dict[str, Any], role: str) -> dict[str, Any]:
    template = lws["spec"]["leaderWorkerTemplate"][f"{role}Template"]
    container: dict[str, Any] = template["spec"]["containers"][0]
    return container


def test_tp_pp_over_two_nodes(tmp_path: Path) -> None:
    """TP=8 × PP=2 on 8-GPU nodes: an LWS of size 2 with vLLM's mp launcher, no Deployment."""
    objects = _objects(tmp_path, _fleet(tmp_path))
    assert not [k for k in objects if k.startswith(("Deployment/", "PersistentVolumeClaim/"))]
    lws = objects["LeaderWorkerSet/big"]
    spec = lws["spec"]
    assert spec["leaderWorkerTemplate"]["size"] == 2
    assert spec["leaderWorkerTemplate"]["restartPolicy"] == "RecreateGroupOnPodRestart"
    assert spec["startupPolicy"] == "LeaderCreated"
    assert spec["rolloutStrategy"]["rollingUpdateConfiguration"] == {
        "maxSurge": 0, "maxUnavailable": 1}
    leader, worker = _container(lws, "leader"), _container(lws, "worker")
    assert leader["command"] == worker["command"] == ["vllm", "serve"]
    assert leader["args"][-10:] == [
        "--distributed-executor-backend", "mp", "--nnodes", "2",
        "--master-addr", "$(LWS_LEADER_ADDRESS)", "--master-port", "29500",
        "--node-rank", "0"]
    assert worker["args"][-3:] == ["--node-rank", "$(LWS_WORKER_INDEX)", "--headless"]
    assert "startupProbe" in leader and "startupProbe" not in worker
    assert "ports" not in worker
    claims = spec["leaderWorkerTemplate"]["workerTemplate"]["spec"]["resourceClaims"]
    assert claims[0]["resourceClaimTemplateName"].startswith("big-gpu-")
    claim = next(v for k, v in objects.items() if k.startswith("ResourceClaimTemplate/"))
    assert claim["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 8
    assert spec["leaderWorkerTemplate"]["volumeClaimTemplates"][0]["metadata"]["name"] == \
        "model-cache"


def test_leader_only_service_and_group_traffic(tmp_path: Path) -> None:
    """The Service selects the leaders; the NetworkPolicy lets the group's pods talk."""
    objects = _objects(tmp_path, _fleet(tmp_path))
    selector = objects["Service/big"]["spec"]["selector"]
    assert selector["leaderworkerset.sigs.k8s.io/worker-index"] == "0"
    ingress = objects["NetworkPolicy/big"]["spec"]["ingress"]
    assert {"from": [{"podSelector": {"matchLabels": {
        "app.kubernetes.io/component": "inference", "app.kubernetes.io/name": "big"}}}]} in ingress


def test_spare_group_allows_surge(tmp_path: Path) -> None:
    """With room for one more whole group the rollout surges by one group."""
    objects = _objects(tmp_path, _fleet(tmp_path, nodes=4))
    strategy = objects["LeaderWorkerSet/big"]["spec"]["rolloutStrategy"]
    assert strategy["rollingUpdateConfiguration"]["maxSurge"] == 1


def test_data_parallel_expert(tmp_path: Path) -> None:
    """DP=2 ranks of TP=8 with EP: one rank a pod, workers start at index × 1."""
    profiles = _fleet(tmp_path, parallelism="{tensor: 8, data: 2, expert: true}")
    lws = _objects(tmp_path, profiles)["LeaderWorkerSet/big"]
    leader, worker = _container(lws, "leader"), _container(lws, "worker")
    for flags in (leader["args"], worker["args"]):
        assert flags[flags.index("--data-parallel-size") + 1] == "2"
        assert flags[flags.index("--data-parallel-size-local") + 1] == "1"
        assert "--enable-expert-parallel" in flags
        assert "--nnodes" not in flags
    assert "--headless" in worker["args"] and "--headless" not in leader["args"]
    assert worker["command"][:2] == ["/bin/sh", "-c"]
    assert '"$((LWS_WORKER_INDEX * 1))"' in worker["command"][2]


def test_ray_executor(tmp_path: Path) -> None:
    """executor: ray starts a Ray head on the leader; workers join it."""
    profiles = _fleet(tmp_path, extra="multi_node: {executor: ray}")
    lws = _objects(tmp_path, profiles)["LeaderWorkerSet/big"]
    leader, worker = _container(lws, "leader"), _container(lws, "worker")
    assert "ray start --head" in leader["command"][2]
    assert leader["args"][-2:] == ["--distributed-executor-backend", "ray"]
    assert "--block" in worker["command"][2] and worker["args"] == []
    assert [f.rule for f in lint(profiles, base=tmp_path)] == ["GEN426"]


def test_device_plugin_pods(tmp_path: Path) -> None:
    """On a device-plugin cluster each pod asks for its GPUs as nvidia.com/gpu."""
    lws = _objects(tmp_path, _fleet(tmp_path, allocation="device-plugin"))["LeaderWorkerSet/big"]
    for role in ("leader", "worker"):
        resources = _container(lws, role)["resources"]
        assert resources["limits"]["nvidia.com/gpu"] == "8"
        assert "claims" not in resources


def test_autoscaled_group_targets_the_lws(tmp_path: Path) -> None:
    """KEDA scales the LeaderWorkerSet (its scale subresource), not a Deployment."""
    profiles = _fleet(tmp_path, nodes=4, extra="autoscaling: {min_replicas: 1, max_replicas: 2}")
    scaled = _objects(tmp_path, profiles)["ScaledObject/big"]
    assert scaled["spec"]["scaleTargetRef"] == {
        "apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet", "name": "big"}


def test_clean_fleet_lints_clean(tmp_path: Path) -> None:
    """The two-node fleet has no finding; one more replica than the pool holds is GEN422."""
    assert lint(_fleet(tmp_path), base=tmp_path) == []
    found = lint(_fleet(tmp_path, extra="replicas: 2"), base=tmp_path)
    assert [f.rule for f in found] == ["GEN422"]


def test_derived_gpus_per_pod(tmp_path: Path) -> None:
    """gpu.count left out: gen derives 8 GPUs a pod for a 16-GPU replica."""
    write_tree(tmp_path, {
        "profiles/cluster.yaml": CLUSTER.format(allocation="device-plugin", nodes=2),
        "profiles/service.yaml": SERVICE.format(parallelism="{tensor: 8, pipeline: 2}",
                                                count=8, extra="").replace(", count: 8", ""),
    })
    lws = _objects(tmp_path, tmp_path / "profiles")["LeaderWorkerSet/big"]
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    assert _container(lws, "worker")["resources"]["limits"]["nvidia.com/gpu"] == "8"


RACK = """\
    kind: Cluster
    name: rack
    kubernetes_version: "{version}"
    allocation: {allocation}
    addons: [lws]
    gitops:
      engine: flux
      repo_url: https://github.com/example-org/gpu-fleet.git
      revision: main
    node_pools:
      - name: nvl72
        gpu: gb200
        gpus_per_node: 4
        nodes: 18
        driver_version: "595.91.07"
        interconnect: nvlink
        labels: {{gen.dev/pool: nvl72}}
    ---
    kind: GPUClass
    name: gb200
    match: {{product: gb200}}
    ---
    kind: InferenceService
    name: ds
    model: deepseek-ai/DeepSeek-V3
    clusters: [rack]
    gpu: {{gpu_class: gb200, count: 4}}
    parallelism: {parallelism}
    serving: {{max_model_len: 16384}}
    """


def _rack(tmp_path: Path, *, version: str = "1.36.6", allocation: str = "dra",
          parallelism: str = "{tensor: 4, pipeline: 4}") -> Path:
    write_tree(tmp_path, {"profiles/rack.yaml": RACK.format(
        version=version, allocation=allocation, parallelism=parallelism)})
    return tmp_path / "profiles"


def test_nvl72_group_gets_a_compute_domain(tmp_path: Path) -> None:
    """Across GB200 trays: a ComputeDomain, its channel claim in every pod (the template is
    the controller's, not rendered), one clique per group, one pod per tray, and the DRA
    driver's computeDomains on."""
    profiles = _rack(tmp_path)
    assert lint(profiles, base=tmp_path) == []
    render(profiles, tmp_path / "out", base=tmp_path, validator="embedded")
    docs = [yaml.safe_load(p.read_text(encoding="utf-8"))
            for p in (tmp_path / "out" / "rack").rglob("*.yaml")]
    domain = next(d for d in docs if d["kind"] == "ComputeDomain")
    assert domain["spec"]["channel"] == {"allocationMode": "Single",
                                         "resourceClaimTemplate": {"name": "ds-imex-channel"}}
    assert "numNodes" not in domain["spec"]
    templates = [d["metadata"]["name"] for d in docs if d["kind"] == "ResourceClaimTemplate"]
    assert "ds-imex-channel" not in templates
    lws = next(d for d in docs if d["kind"] == "LeaderWorkerSet")
    for role in ("leader", "worker"):
        pod = lws["spec"]["leaderWorkerTemplate"][f"{role}Template"]["spec"]
        assert {"name": "imex", "resourceClaimTemplateName": "ds-imex-channel"} in \
            pod["resourceClaims"]
        assert {"name": "imex"} in pod["containers"][0]["resources"]["claims"]
        (together,) = pod["affinity"]["podAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]
        assert together["topologyKey"] == "nvidia.com/gpu.clique"
        assert together["matchLabelKeys"] == ["leaderworkerset.sigs.k8s.io/group-key"]
        (apart,) = pod["affinity"]["podAntiAffinity"][
            "requiredDuringSchedulingIgnoredDuringExecution"]
        assert apart["topologyKey"] == "kubernetes.io/hostname"
    release = next(d for d in docs if d["kind"] == "HelmRelease"
                   and "dra-driver" in d["metadata"]["name"])
    assert release["spec"]["values"]["resources"]["computeDomains"] == {"enabled": True}


def test_compute_domain_values_follow_the_services() -> None:
    """The DRA driver's computeDomains is on only where a service renders a ComputeDomain."""
    from gen.gitops.build import dra_driver_values
    from gen.pipeline import load_plan
    from tests.serving.test_build import ROOT

    plan = load_plan(ROOT / "profiles", base=ROOT)
    for cluster in plan.clusters:
        if cluster.dra_api_version is not None:
            assert dra_driver_values(cluster)["resources"]["computeDomains"] == {
                "enabled": False}, cluster.name


def test_group_larger_than_a_clique(tmp_path: Path) -> None:
    """32 trays of one replica do not fit an 18-tray NVL72 domain: GEN427."""
    rules = {f.rule for f in lint(_rack(tmp_path, parallelism="{tensor: 4, pipeline: 32}"),
                                  base=tmp_path)}
    assert "GEN427" in rules


def test_compute_domain_needs_dra_v1(tmp_path: Path) -> None:
    """On 1.33 (resource.k8s.io/v1beta2) the controller cannot create its v1 template; on a
    device-plugin cluster there is no ComputeDomain (warning)."""
    old = lint(_rack(tmp_path / "old", version="1.33.5"), base=tmp_path / "old")
    assert [(f.rule, f.severity.value) for f in old if f.rule == "GEN428"] == [
        ("GEN428", "error")]
    plugin = lint(_rack(tmp_path / "dp", allocation="device-plugin"), base=tmp_path / "dp")
    assert [(f.rule, f.severity.value) for f in plugin if f.rule == "GEN428"] == [
        ("GEN428", "warning")]
