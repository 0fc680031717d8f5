"""Generate a synthetic but valid fleet of N clusters for benchmarks.

Each cluster gets an H100 pool, an H100 MIG pool, services on full GPUs and MIG slices;
Kubernetes versions cycle through 1.32–1.35 so several DRA API versions are exercised.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

VERSIONS = ("1.34.2", "1.33.4", "1.35.1", "1.32.5")
SERVICES_PER_CLUSTER = 8


def _cluster(i: int, services: int) -> str:
    version = VERSIONS[i % len(VERSIONS)]
    minor = int(version.split(".")[1])
    extra = ""
    if minor < 34:
        api = {33: "v1beta2", 32: "v1beta1"}[minor]
        extra = (f"runtime_config: [resource.k8s.io/{api}]\n"
                 "feature_gates: {DynamicResourceAllocation: true}\n")
    return textwrap.dedent(f"""\
        kind: Cluster
        name: c{i:04d}
        kubernetes_version: "{version}"
        allocation: dra
        gitops: {{engine: {"argocd" if i % 2 else "flux"}, repo_url: "https://git.example.com/fleet.git"}}
        addons: [prometheus-operator, keda]
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
        """) + extra


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


def write_fleet(root: Path, clusters: int, services: int = SERVICES_PER_CLUSTER) -> Path:
    """Write ``clusters`` clusters with ``services`` services each under ``root/profiles``."""
    profiles = root / "profiles"
    profiles.mkdir(parents=True, exist_ok=True)
    (profiles / "common.yaml").write_text(COMMON)
    for i in range(clusters):
        docs = [_cluster(i, services)]
        docs += [_service(i, s).replace(f"name: svc-{s:02d}", f"name: c{i:04d}-svc-{s:02d}")
                 for s in range(services)]
        (profiles / f"c{i:04d}.yaml").write_text("---\n".join(docs))
    return profiles
