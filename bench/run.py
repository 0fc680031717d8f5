"""Benchmarks: ``python bench/run.py [--sizes small,medium,large] [--json FILE]``.

Measures, per fleet size: load, resolve + build, lint, render, validate and write, as
time per object; the embedded validator against ``kubernetes_validate.validate`` on the
same objects; render + validate against a bare PyYAML C-dumper dump of the same objects;
and ``gen --version`` against a bare interpreter start. Medians of repeated runs.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fleet import write_fleet

SIZES = {"small": 2, "medium": 10, "large": 40, "huge": 100}


def _median(fn: Any, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_size(name: str, clusters: int, repeat: int) -> dict[str, Any]:
    import yaml

    from gen.build import build_manifests
    from gen.checks import run_checks
    from gen.output import write_tree
    from gen.pipeline import render_outputs
    from gen.profiles import load_profiles
    from gen.render import make_environment, render_cluster
    from gen.resolve import build_plan
    from gen.validate import SchemaValidator

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        profiles_dir = write_fleet(root, clusters)
        t_load = _median(lambda: load_profiles(profiles_dir), repeat)
        profiles = load_profiles(profiles_dir)
        t_resolve = _median(lambda: build_manifests(build_plan(profiles)), repeat)
        plan = build_manifests(build_plan(profiles))
        t_lint = _median(lambda: run_checks(plan), repeat)
        env = make_environment(None)
        objects = []
        t_render = _median(lambda: [render_cluster(env, c) for c in plan.clusters], repeat)
        for cluster in plan.clusters:
            objs, _ = render_cluster(env, cluster)
            objects.extend((cluster.minor, o) for o in objs)
        n = len(objects)

        def validate() -> None:
            validator = SchemaValidator()
            for minor, obj in objects:
                validator.validate(obj.data, minor, None)  # type: ignore[arg-type]

        validate()  # warm the schema caches, as a run after the first object is
        t_validate = _median(validate, repeat)
        loader = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        datas = [o.data for _, o in objects]
        t_dump = _median(
            lambda: [yaml.dump(d, Dumper=loader, sort_keys=True) for d in datas], repeat
        )
        outputs, _, _ = render_outputs(plan, templates_dir=None, out_label="out")
        out_dir = root / "out"
        start = time.perf_counter()
        write_tree(outputs, out_dir)
        t_write_first = time.perf_counter() - start
        t_write_again = _median(lambda: write_tree(outputs, out_dir), repeat)

        import kubernetes_validate

        core = {"apps/v1", "v1", "policy/v1", "networking.k8s.io/v1"}
        sample = [(m, o) for m, o in objects
                  if o.api_version in core or o.api_version.startswith("resource.k8s.io/")]
        sample = sample[: min(60, len(sample))]
        start = time.perf_counter()
        for minor, obj in sample:
            kubernetes_validate.validate(dict(obj.data), f"1.{minor}.0", strict=True)
        t_kv = (time.perf_counter() - start) / len(sample)
        validator = SchemaValidator()
        for minor, obj in sample:
            validator.validate(obj.data, minor, None)  # type: ignore[arg-type]
        start = time.perf_counter()
        for minor, obj in sample:
            validator.validate(obj.data, minor, None)  # type: ignore[arg-type]
        t_emb = (time.perf_counter() - start) / len(sample)
    per = 1e6 / n
    return {
        "size": name, "clusters": clusters, "objects": n,
        "load_s": t_load, "resolve_build_s": t_resolve, "lint_s": t_lint,
        "render_s": t_render, "validate_s": t_validate, "c_dump_s": t_dump,
        "write_first_s": t_write_first, "write_unchanged_s": t_write_again,
        "render_us_per_object": t_render * per, "validate_us_per_object": t_validate * per,
        "c_dump_us_per_object": t_dump * per,
        "render_validate_vs_dump": (t_render + t_validate) / t_dump,
        "kubernetes_validate_us_per_object": t_kv * 1e6,
        "embedded_validate_us_per_object": t_emb * 1e6,
        "embedded_speedup": t_kv / t_emb,
    }


def bench_startup(repeat: int) -> dict[str, float]:
    def run(args: list[str]) -> float:
        return _median(lambda: subprocess.run(args, check=True, capture_output=True), repeat)

    bare = run([sys.executable, "-c", "pass"])
    gen = run([sys.executable, "-m", "gen", "--version"])
    return {"python_s": bare, "gen_version_s": gen, "ratio": gen / bare}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="small,medium,large")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    results: dict[str, Any] = {
        "machine": f"{platform.machine()} {platform.processor() or ''} "
                   f"python {platform.python_version()}".strip(),
        "sizes": [],
    }
    for name in args.sizes.split(","):
        row = bench_size(name, SIZES[name], args.repeat)
        results["sizes"].append(row)
        print(json.dumps(row, indent=None, default=float), flush=True)
    results["startup"] = bench_startup(max(5, args.repeat))
    print(json.dumps(results["startup"]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, sort_keys=True))


if __name__ == "__main__":
    main()
