"""Benchmarks: ``python bench/run.py [--sizes small,medium,large,huge] [--json F] [--svg F]``.

For each fleet size (a synthetic valid fleet from ``bench/fleet.py``), in a fresh
process so that peak memory is its own: load, resolve + build, lint (and the CEL
evaluations it needed), render, validate and write, as seconds and µs per object, with
the process's peak RSS after each stage; the whole ``gen render`` command end to end
(default workers, and ``--jobs 1``), and a second render with nothing changed; the
embedded validator against ``kubernetes_validate.validate`` on the same objects; and
render + validate against a bare PyYAML C-dumper dump of the same objects. Then
``gen --version`` against a bare interpreter. In-process stages are medians of
``--repeat`` runs (``huge`` runs once: a run is tens of seconds).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
from fleet import write_fleet  # noqa: E402 - beside this script
from plot import svg_chart  # noqa: E402

if TYPE_CHECKING:
    from gen.emit.cache import CacheRecord
    from gen.emit.render import RenderedObject
    from gen.fleet.plan import Plan

SIZES = {  # name: (clusters, services per cluster)
    "small": (2, 8),
    "medium": (10, 16),
    "large": (40, 32),
    "huge": (100, 56),
}
STAGES = ("load", "resolve_build", "lint", "render", "validate", "write")


def _median(fn: Callable[[], Any], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _rss_mib() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _gen(args: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "gen", *args], cwd=cwd, check=True,
                   capture_output=True)
    return time.perf_counter() - start


def _stat_tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.stat().st_ino, p.stat().st_mtime_ns)
            for p in root.rglob("*") if p.is_file()}


def bench_size(name: str, repeat: int) -> dict[str, Any]:
    """Every figure for one size (run in a child process: see ``--one``)."""
    import yaml

    from gen.dra.capacity import check_with_matcher
    from gen.dra.satisfiability import Matcher
    from gen.emit.output import write_tree
    from gen.emit.render import make_environment, render_cluster
    from gen.emit.validate import SchemaValidator
    from gen.errors import SourceLocation
    from gen.fleet.profiles import load_profiles
    from gen.fleet.resolve import build_plan
    from gen.pipeline import build_manifests, default_jobs, render_outputs, run_checks

    clusters, services = SIZES[name]
    row: dict[str, Any] = {"size": name, "clusters": clusters, "services": clusters * services}
    rss: dict[str, float] = {}
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        profiles_dir = write_fleet(root, clusters, services)
        seconds["load"] = _median(lambda: load_profiles(profiles_dir), repeat)
        profiles = load_profiles(profiles_dir)
        rss["load"] = _rss_mib()
        seconds["resolve_build"] = _median(lambda: build_manifests(build_plan(profiles)), repeat)
        plan = build_manifests(build_plan(profiles))
        rss["resolve_build"] = _rss_mib()
        seconds["lint"] = _median(lambda: run_checks(plan), repeat)
        matcher = Matcher()
        check_with_matcher(plan, matcher)
        row["cel_evaluations"] = matcher.evaluations
        rss["lint"] = _rss_mib()

        env = make_environment(None)
        seconds["render"] = _median(lambda: [render_cluster(env, c) for c in plan.clusters],
                                    repeat)
        objects = [(c.minor, o) for c in plan.clusters for o in render_cluster(env, c)[0]]
        rss["render"] = _rss_mib()
        located = [(minor, obj, SourceLocation(f"out/{obj.path}")) for minor, obj in objects]

        def validate() -> None:
            validator = SchemaValidator()
            for minor, obj, where in located:
                validator.validate(obj.data, minor, where)

        validate()  # compile the schemas once, as any run past its first objects has
        seconds["validate"] = _median(validate, repeat)
        rss["validate"] = _rss_mib()
        outputs, _, _ = render_outputs(plan, templates_dir=None, out_label="out", jobs=1)
        start = time.perf_counter()
        write_tree(outputs, root / "written")
        seconds["write"] = time.perf_counter() - start
        row["write_unchanged_s"] = _median(lambda: write_tree(outputs, root / "written"), repeat)
        row["bare_write_s"] = _bare_write(outputs, root / "bare")
        rss["write"] = _rss_mib()

        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        datas = [o.data for _, o in objects]
        row["c_dump_s"] = _median(
            lambda: [yaml.dump(d, Dumper=dumper, sort_keys=True) for d in datas], repeat)
        row.update(_kubernetes_validate(objects))

        # The command users run, end to end, in a fresh process.
        args = ["render", "-q", "--validator", "embedded", "--profiles", str(profiles_dir)]
        row["gen_render_s"] = _gen([*args, "--out", str(root / "out")], root)
        before = _stat_tree(root / "out")
        row["gen_render_unchanged_s"] = _gen([*args, "--out", str(root / "out")], root)
        row["unchanged_rewrote_nothing"] = _stat_tree(root / "out") == before
        row.update(_bench_cache(args, root, profiles_dir))
        row["gen_render_jobs1_s"] = _gen([*args, "--out", str(root / "out1"), "--jobs", "1"],
                                         root)
    n = len(objects)
    row["objects"] = n
    row["stages_s"] = seconds
    row["stages_us_per_object"] = {k: v * 1e6 / n for k, v in seconds.items()}
    row["peak_rss_mib_after"] = rss
    row["render_validate_vs_c_dump"] = (seconds["render"] + seconds["validate"]) / row["c_dump_s"]
    row["jobs"] = default_jobs(plan)
    return row


def _bench_cache(args: list[str], root: Path, profiles_dir: Path) -> dict[str, Any]:
    """No-op ``gen render`` and ``--check`` on the fleet fast path, with the per-cluster
    cache alone and with ``--no-cache``, a one-cluster change, and where each kind of
    cached no-op spends its time (in process)."""
    from gen.emit.cache import FLEET_RECORD, render_digest, vouched_outputs
    from gen.emit.output import compute_changes
    from gen.pipeline import load_plan, run_checks

    out = ["--out", str(root / "out")]
    row: dict[str, Any] = {
        "gen_render_unchanged_nocache_s": _gen([*args, *out, "--no-cache"], root),
        # the fleet fast path (out/.gen-cache/_fleet.json): medians of three fresh processes
        "gen_render_noop_fast_s": _median(lambda: _gen([*args, *out], root), 3),
        "gen_check_s": _median(lambda: _gen([*args, *out, "--check"], root), 3),
        "gen_check_nocache_s": _gen([*args, *out, "--check", "--no-cache"], root),
    }
    fast: dict[str, float] = {}
    start = time.perf_counter()
    digest = render_digest(profiles_dir, None, None, (), "embedded")
    fast["input_digest"] = time.perf_counter() - start
    assert digest is not None
    start = time.perf_counter()
    result = vouched_outputs(root / "out", digest)
    fast["verify_out"] = time.perf_counter() - start
    row["noop_fast_phases_s"] = fast
    row["noop_fast_path"] = result is not None
    # without the fleet record: the per-cluster cache alone (a --check writes nothing, so
    # the record stays away until the next render)
    (root / "out" / FLEET_RECORD).unlink()
    row["gen_check_cluster_cache_s"] = _gen([*args, *out, "--check"], root)
    phases: dict[str, float] = {}
    start = time.perf_counter()
    plan = load_plan(profiles_dir)
    phases["load_resolve_build"] = time.perf_counter() - start
    start = time.perf_counter()
    run_checks(plan)
    phases["lint"] = time.perf_counter() - start
    start = time.perf_counter()
    fingerprints = _fingerprints(plan)
    phases["fingerprint"] = time.perf_counter() - start
    start = time.perf_counter()
    reused = _reusable(plan, root / "out", fingerprints, validate=True)
    phases["verify_files"] = time.perf_counter() - start
    outputs = {p: d for _, _, files in reused.values() for p, d in files.items()}
    start = time.perf_counter()
    compute_changes(outputs, root / "out", verified=list(outputs))
    phases["compare"] = time.perf_counter() - start
    row["noop_phases_s"] = phases
    row["noop_skipped_all"] = len(reused) == len(plan.clusters)
    # one cluster's service changes: only that cluster is rendered again
    first = profiles_dir / "c0000.yaml"
    first.write_text(first.read_text().replace("replicas: 2", "replicas: 3", 1))
    row["gen_render_one_change_s"] = _gen([*args, *out], root)
    return row


def _fingerprints(plan: Plan) -> dict[str, str | None]:
    """Every cluster's fingerprint (None: it cannot be cached), through the loader a render
    of the built-in templates uses."""
    from gen.emit.cache import Fingerprinter
    from gen.emit.render import make_environment

    fingerprinter = Fingerprinter(make_environment(None))
    return {c.name: fingerprinter.fingerprint(c) for c in plan.clusters}


def _reusable(
    plan: Plan, out_dir: Path, fingerprints: dict[str, str | None], validate: bool,
) -> dict[str, tuple[CacheRecord, bytes, Mapping[PurePosixPath, bytes]]]:
    """The clusters the render cache vouches for, each looked up in turn here (a render
    looks up each cluster in its worker): cluster → (its record, the record's bytes, its
    files as read from out/). Each needs a record with the fingerprint it has now,
    validated if this render validates, and every recorded file in out/ with the bytes
    recorded."""
    from gen.emit.cache import read_record, verified_files

    reused: dict[str, tuple[CacheRecord, bytes, Mapping[PurePosixPath, bytes]]] = {}
    for cluster in plan.clusters:
        fingerprint = fingerprints.get(cluster.name)
        if fingerprint is None:
            continue
        found = read_record(out_dir, cluster.name)
        if found is None:
            continue
        record, data = found
        if record.fingerprint != fingerprint or (validate and not record.validated):
            continue
        files = verified_files(out_dir, record)
        if files is not None:
            reused[cluster.name] = (record, data, files)
    return reused


def _bare_write(outputs: dict[Any, bytes], folder: Path) -> float:
    """The file system's floor: the same files written by a bare loop, no checks, no swap."""
    start = time.perf_counter()
    made: set[Path] = set()
    for rel, data in outputs.items():
        target = folder / str(rel)
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.write(fd, data)
        os.close(fd)
    return time.perf_counter() - start


def _kubernetes_validate(objects: list[tuple[int, RenderedObject]]) -> dict[str, float]:
    """Both validators on the same sample of core and resource.k8s.io objects."""
    import kubernetes_validate

    from gen.emit.validate import SchemaValidator
    from gen.errors import SourceLocation

    core = {"apps/v1", "v1", "policy/v1", "networking.k8s.io/v1"}
    sample = [(m, o, SourceLocation(f"out/{o.path}")) for m, o in objects
              if o.api_version in core or o.api_version.startswith("resource.k8s.io/")][:60]
    start = time.perf_counter()
    for minor, obj, _ in sample:
        kubernetes_validate.validate(dict(obj.data), f"1.{minor}.0", strict=True)
    t_kv = (time.perf_counter() - start) / len(sample)
    validator = SchemaValidator()
    for minor, obj, where in sample:  # compile the schemas first, as a long run has
        validator.validate(obj.data, minor, where)
    start = time.perf_counter()
    for minor, obj, where in sample:
        validator.validate(obj.data, minor, where)
    t_emb = (time.perf_counter() - start) / len(sample)
    return {"kubernetes_validate_us_per_object": t_kv * 1e6,
            "embedded_validate_us_per_object": t_emb * 1e6,
            "embedded_speedup": t_kv / t_emb}


def bench_startup(repeat: int) -> dict[str, float]:
    """``gen --version`` against ``python -c pass``: medians, interleaved."""
    bare: list[float] = []
    gen: list[float] = []
    for _ in range(repeat):
        for args, sink in (([sys.executable, "-c", "pass"], bare),
                           ([sys.executable, "-m", "gen", "--version"], gen)):
            start = time.perf_counter()
            subprocess.run(args, check=True, capture_output=True)
            sink.append(time.perf_counter() - start)
    b, g = statistics.median(bare), statistics.median(gen)
    return {"python_s": b, "gen_version_s": g, "ratio": g / b}


def growth(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Log-log slope of time against objects, smallest to largest size (1.0 = linear)."""
    first, last = rows[0], rows[-1]
    span = math.log(last["objects"] / first["objects"])
    out = {}
    for stage in (*STAGES, "gen_render"):
        a = first["stages_s"].get(stage, first.get(f"{stage}_s"))
        b = last["stages_s"].get(stage, last.get(f"{stage}_s"))
        out[stage] = math.log(b / a) / span
    return out


def chart(rows: list[dict[str, Any]]) -> str:
    """Seconds against objects per stage, log-log, as SVG."""
    series = {stage: [(r["objects"], r["stages_s"][stage]) for r in rows] for stage in STAGES}
    series["gen render (end to end)"] = [(r["objects"], r["gen_render_s"]) for r in rows]
    series["gen render --jobs 1"] = [(r["objects"], r["gen_render_jobs1_s"]) for r in rows]
    return svg_chart(series, title="gen: time against fleet size",
                     x_label="objects rendered", y_label="seconds")


def main() -> None:
    """Run each size in its own process, then start-up; print and save the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="small,medium,large,huge")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--svg", type=Path, default=None)
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        repeat = 1 if args.one == "huge" else args.repeat
        sys.stdout.write(json.dumps(bench_size(args.one, repeat)) + "\n")
        return
    rows = []
    for name in args.sizes.split(","):
        child = subprocess.run(
            [sys.executable, __file__, "--one", name, "--repeat", str(args.repeat)],
            check=True, capture_output=True, text=True,
        )
        rows.append(json.loads(child.stdout))
        print(json.dumps(rows[-1]), flush=True)
    results: dict[str, Any] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
                   f"Python {platform.python_version()}",
        "sizes": rows,
        "growth_loglog_slope": growth(rows) if len(rows) > 1 else {},
        "startup": bench_startup(max(11, args.repeat)),
    }
    print(json.dumps({k: results[k] for k in ("growth_loglog_slope", "startup")}), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    if args.svg and len(rows) > 1:
        args.svg.write_text(chart(rows))


if __name__ == "__main__":
    main()
