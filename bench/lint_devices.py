"""Lint a 1,000,000-device fleet: ``python bench/lint_devices.py [--clusters N] [--json FILE]``.

Budget (DESIGN.md): lint of a fleet of 1,000,000 DRA devices, MIG slices included, in under
30 s and 2 GB, because selectors are evaluated once per distinct device shape.

Each cluster (Kubernetes 1.34, DRA) has a pool of 500 H100 nodes × 8 full GPUs (4,000 devices)
and a pool of 125 H100 nodes × 8 GPUs with a 3g.40gb + 2g.20gb + 2 × 1g.10gb layout
(4 MIG devices per GPU: 4,000 devices); 125 clusters make 1,000,000 devices. Services claim
full GPUs (2 per replica, ``same: pcieRoot``), MIG 3g.40gb and MIG 1g.10gb slices.

Reported: profile load + resolve + build time, the time of the DRA satisfiability and
capacity rule alone and of every lint rule (``lint_total_s`` = load + resolve + build + all
rules, what ``gen lint`` does), the peak memory the rule allocates (tracemalloc, in a second
traced run) and the process's peak RSS (getrusage), and the number of CEL evaluations the
satisfiability rule made.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import textwrap
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fleet import MIG_LAYOUT  # beside this script

COMMON = MIG_LAYOUT + textwrap.dedent("""\
    ---
    kind: GPUClass
    name: h100
    match: {product: h100-sxm5-80gb, min_memory: 79Gi}
    ---
    kind: GPUClass
    name: mig-3g
    device_type: mig
    match: {mig_profile: 3g.40gb}
    ---
    kind: GPUClass
    name: mig-1g
    device_type: mig
    match: {mig_profile: 1g.10gb}
    """)


def _cluster(i: int) -> str:
    return textwrap.dedent(f"""\
        kind: Cluster
        name: c{i:04d}
        kubernetes_version: "1.34.2"
        allocation: dra
        node_pools:
          - {{name: h100, gpu: h100-sxm5-80gb, gpus_per_node: 8, nodes: 500,
              driver_version: "580.95.05"}}
          - {{name: h100-mig, gpu: h100-sxm5-80gb, gpus_per_node: 8, nodes: 125,
              driver_version: "580.95.05", mig_layout: mixed}}
        """)


def _services(i: int) -> list[str]:
    base = "model: meta-llama/Llama-3.1-8B-Instruct\nserving: {max_model_len: 8192}\n"
    return [
        f"kind: InferenceService\nname: c{i:04d}-full\nclusters: [c{i:04d}]\n{base}"
        "gpu: {gpu_class: h100, count: 2, same: [resource.kubernetes.io/pcieRoot]}\n"
        "parallelism: {tensor: 2}\n"
        "autoscaling: {min_replicas: 100, max_replicas: 1000}\n",
        f"kind: InferenceService\nname: c{i:04d}-mig3g\nclusters: [c{i:04d}]\n{base}"
        "gpu: {gpu_class: mig-3g}\nreplicas: 500\n",
        f"kind: InferenceService\nname: c{i:04d}-mig1g\nclusters: [c{i:04d}]\n"
        "model: meta-llama/Llama-3.2-3B-Instruct\nserving: {max_model_len: 4096}\n"
        "gpu: {gpu_class: mig-1g, same: [gpu.nvidia.com/parentUUID]}\nreplicas: 1000\n",
    ]


def write_fleet(root: Path, clusters: int) -> Path:
    """Write the profiles of ``clusters`` clusters under ``root/profiles``."""
    profiles = root / "profiles"
    profiles.mkdir(parents=True, exist_ok=True)
    (profiles / "common.yaml").write_text(COMMON)
    for i in range(clusters):
        docs = [_cluster(i), *_services(i)]
        (profiles / f"c{i:04d}.yaml").write_text("---\n".join(docs))
    return profiles


def run(clusters: int) -> dict[str, Any]:
    """Build the fleet, lint it, and return the figures."""
    from gen.dra.capacity import check_with_matcher
    from gen.dra.satisfiability import Matcher
    from gen.dra.simulate import node_inventory
    from gen.pipeline import load_plan, run_checks

    with tempfile.TemporaryDirectory() as tmp:
        profiles = write_fleet(Path(tmp), clusters)
        start = time.perf_counter()
        plan = load_plan(profiles)
        t_plan = time.perf_counter() - start
    devices = sum(
        node_inventory(p).devices_per_node * p.pool.nodes for c in plan.clusters for p in c.pools
    )
    matcher = Matcher()
    start = time.perf_counter()
    findings = check_with_matcher(plan, matcher)
    t_rule = time.perf_counter() - start
    start = time.perf_counter()
    all_findings = run_checks(plan)
    t_all = time.perf_counter() - start
    tracemalloc.start()  # a second run, traced: tracing slows Python down several times
    check_with_matcher(plan, Matcher())
    _, peak_rule = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "clusters": clusters,
        "devices": devices,
        "load_resolve_build_s": round(t_plan, 2),
        "satisfiability_rule_s": round(t_rule, 3),
        "satisfiability_peak_traced_mib": round(peak_rule / 2**20, 1),
        "all_rules_s": round(t_all, 2),
        "lint_total_s": round(t_plan + t_all, 2),
        "peak_rss_mib": round(rss_kib / 1024, 1),
        "cel_evaluations": matcher.evaluations,
        "satisfiability_findings": len(findings),
        "all_findings": len(all_findings),
        "rules_fired": sorted({f.rule for f in all_findings}),
    }


def main() -> None:
    """Parse arguments, run, print (and optionally save) the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clusters", type=int, default=125)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    figures = run(args.clusters)
    text = json.dumps(figures, indent=2)
    sys.stdout.write(text + "\n")
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
