"""Generate a synthetic but valid fleet of N clusters for benchmarks.

Each cluster gets an H100 pool, an H100 MIG pool, services on full GPUs and MIG slices, and
a shared-file StorageClass for their model caches (the fleet lints clean); Kubernetes
versions cycle through 1.32–1.35 so several DRA API versions are exercised.

``serving=True`` (``--fleet serving`` in the budget scripts) extends every cluster with
the serving objects of 2026 on Kubernetes 1.36–1.37: a Gateway and the inference extension
(an InferencePool, its endpoint picker and an HTTPRoute for every fourth full-GPU
service), one prefill/decode-disaggregated service, one multi-node service on an
InfiniBand H200 pool (a LeaderWorkerSet), and Kueue quotas for every namespace (a
ClusterQueue, a LocalQueue and the workloads' queue labels).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path

VERSIONS = ("1.34.2", "1.33.4", "1.35.1", "1.32.5")
SERVING_VERSIONS = ("1.37.2", "1.36.6")
NAMESPACES = 3
SERVICES_PER_CLUSTER = 8


def _cluster(i: int, services: int, serving: bool = False) -> str:
    versions = SERVING_VERSIONS if serving else VERSIONS
    version = versions[i % len(versions)]
    minor = int(version.split(".")[1])
    extra = ""
    if minor < 34:
        api = {33: "v1beta2", 32: "v1beta1"}[minor]
        extra = (f"runtime_config: [resource.k8s.io/{api}]\n"
                 "feature_gates: {DynamicResourceAllocation: true}\n")
    addons = "prometheus-operator, keda" + (", inference-extension, lws, kueue" if serving else "")
    text = textwrap.dedent(f"""\
        kind: Cluster
        name: c{i:04d}
        kubernetes_version: "{version}"
        allocation: dra
        gitops: {{engine: {"argocd" if i % 2 else "flux"}, repo_url: "https://git.example.com/fleet.git"}}
        addons: [{addons}]
        node_pools:
          - name: h100
            gpu: h100-sxm5-80gb
            gpus_per_node: 8
            nodes: 16
            driver_version: "580.95.05"
          - name: h100-mig
            gpu: h100-sxm5-80gb
            gpus_per_node: 8
            nodes: {max(4, services // 2)}
            driver_version: "580.95.05"
            mig_layout: mixed
        """)
    if serving:
        text += H200_POOL
    text += STORAGE + extra
    return text + _serving_cluster(services) if serving else text


STORAGE = textwrap.dedent("""\
    storage:
      model_cache_class: cephfs
      classes:
        - {name: cephfs, access_modes: [ReadWriteOnce, ReadWriteMany]}
    """)
"""A shared-file model cache class: two replicas of a service share one ReadWriteMany
cache (without it every service is GEN704's: a fleet that lints clean is what is timed)."""

H200_POOL = textwrap.indent(textwrap.dedent("""\
    - name: h200-ib
      gpu: h200-sxm
      gpus_per_node: 8
      nodes: 2
      driver_version: "580.95.05"
      interconnect: infiniband
    """), "  ")
"""The InfiniBand H200 pool of a ``serving`` cluster, for its multi-node service."""


def _serving_cluster(services: int) -> str:
    """What ``serving=True`` adds to a cluster after its pools: a gateway, and a Kueue quota
    per namespace and class (room for every service's replicas, so that the quotas are
    met)."""
    quotas = "".join(
        f"  - {{namespace: team-{n}, gpu_class: {cls}, devices: {2 * services}, cohort: fleet}}\n"
        for n in range(NAMESPACES) for cls in ("h100", "mig-3g"))
    return textwrap.dedent("""\
        quota_engine: kueue
        gateways:
          - {name: inference-gateway, namespace: gateway-system, class: istio}
        quotas:
          - {namespace: team-0, gpu_class: h200, devices: 16, cohort: fleet}
        """) + quotas


def _service(c: int, s: int) -> str:
    mig = s % 2 == 1
    model = "meta-llama/Llama-3.1-8B-Instruct" if mig else "Qwen/Qwen2.5-32B-Instruct"
    gpu = "{gpu_class: mig-3g, count: 1}" if mig else "{gpu_class: h100, count: 1}"
    return textwrap.dedent(f"""\
        kind: InferenceService
        name: svc-{s:02d}
        namespace: team-{s % 3}
        model: {model}
        clusters: [c{c:04d}]
        gpu: {gpu}
        replicas: 2
        serving: {{max_model_len: 8192}}
        """)


MIG_LAYOUT = textwrap.dedent("""\
    kind: MIGLayout
    name: mixed
    gpu: h100-sxm5-80gb
    profiles: {3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}
    """)
"""The H100 layout both benchmark fleets use: 3g.40gb + 2g.20gb + 2 × 1g.10gb."""

COMMON = MIG_LAYOUT + textwrap.dedent("""\
    ---
    kind: GPUClass
    name: h100
    match: {product: h100-sxm5-80gb}
    ---
    kind: GPUClass
    name: mig-3g
    device_type: mig
    match: {mig_profile: 3g.40gb}
    """)


ROUTED = "routing: {gateway: inference-gateway}\n"
DISAGGREGATED = textwrap.dedent("""\
    disaggregation:
      connector: nixl
      prefill: {replicas: 2}
      decode: {replicas: 1}
    """)

SERVING_COMMON = textwrap.dedent("""\
    ---
    kind: GPUClass
    name: h200
    match: {product: h200-sxm}
    """)


def _multi_node(c: int) -> str:
    """The multi-node service of a ``serving`` cluster: one replica over both H200 nodes."""
    return textwrap.dedent(f"""\
        kind: InferenceService
        name: c{c:04d}-llama-405b
        namespace: team-0
        model: meta-llama/Llama-3.1-405B-Instruct
        clusters: [c{c:04d}]
        gpu: {{gpu_class: h200, count: 8}}
        parallelism: {{tensor: 8, pipeline: 2}}
        serving: {{max_model_len: 32768}}
        """)


def _serving_service(s: int, text: str) -> str:
    """A service of a ``serving`` cluster: every fourth full-GPU one routed, the third one
    disaggregated into prefill and decode (and routed, as disaggregation needs)."""
    if s % 8 == 0:
        return text + ROUTED
    if s == 2:
        return text.replace("replicas: 2\n", "") + ROUTED + DISAGGREGATED
    return text


def one_cluster_changes(profiles: Path, repeat: int) -> Iterator[int]:
    """Change one cluster of a fleet ``write_fleet`` wrote, ``repeat`` times: the first
    service of the first cluster gets another replica count, then the next change puts it
    back (so each run after a change has something to render). Yields the change's number
    after each; the file is as it was when the loop ends (or is left)."""
    first = profiles / "c0000.yaml"
    text = first.read_text()
    try:
        for i in range(repeat):
            first.write_text(text.replace("replicas: 2", "replicas: 3", 1) if i % 2 == 0
                             else text)
            yield i
    finally:
        first.write_text(text)


FLEETS = ("plain", "serving")
"""The fleets the budget scripts take with ``--fleet``: the plain one, or ``serving``."""


def write_fleet(root: Path, clusters: int, services: int = SERVICES_PER_CLUSTER,
                serving: bool = False) -> Path:
    """Write ``clusters`` clusters with ``services`` services each under ``root/profiles``
    (with ``serving``, the serving objects of 2026 too: see the module's docstring)."""
    profiles = root / "profiles"
    profiles.mkdir(parents=True, exist_ok=True)
    (profiles / "common.yaml").write_text(COMMON + (SERVING_COMMON if serving else ""))
    for i in range(clusters):
        docs = [_cluster(i, services, serving)]
        for s in range(services):
            text = _service(i, s).replace(f"name: svc-{s:02d}", f"name: c{i:04d}-svc-{s:02d}")
            docs.append(_serving_service(s, text) if serving else text)
        if serving:
            docs.append(_multi_node(i))
        (profiles / f"c{i:04d}.yaml").write_text("---\n".join(docs))
    return profiles
