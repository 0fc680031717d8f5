"""Validator set-up in a fresh process: ``python bench/validation_setup.py [--source
bench|example|both] [--runs N] [--clusters C] [--services S] [--parts]``.

A render validates with one compiled ``jsonschema_rs`` validator per (schema minor, apiVersion,
kind) it meets. This script renders a fleet once (``bench/fleet.py``'s ``write_fleet(root, C,
S)``, or the example fleet) to learn those keys, then, in ``--runs`` fresh interpreters each,
times :func:`gen.emit.validate.warm` on them: everything a cold process spends before its
first object is validated, imports excluded (they are timed separately). Figures are CPU
seconds of the process (``time.process_time``: the set-up is single-threaded, and this counts
less of the other load on a shared machine than wall time), medians over the runs; the wall
time's median is shown beside them.

``--prepare`` times, in fresh processes too, what a parallel ``render_outputs`` does in the
parent before it forks its workers (``gen._render_task.BuiltClusterTask.prepare``: one probe
render per template and minor, then :func:`~gen.emit.validate.warm`), on the bench fleet.

``--parts`` also times, in one more fresh process, each part of that set-up on its own: the
bundled CRDs read, each (apiVersion, kind)'s JSON Schema built (a CRD converted, or a
built-in kind's file read), each minor's ``_definitions.json`` registry, and the
jsonschema-rs compiles; and how many of the compiled schemas are byte-identical across
minors.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
from fleet import write_fleet  # noqa: E402 - beside this script

_WARM = """
import json, sys, time
start, cpu0 = time.perf_counter(), time.process_time()
import gen.emit.validate as v
imported, cpu1 = time.perf_counter(), time.process_time()
keys = [tuple(k) for k in json.loads(open(sys.argv[1]).read())]
v.warm(keys)
done, cpu2 = time.perf_counter(), time.process_time()
assert v.__file__.startswith(sys.argv[2]), v.__file__
print(json.dumps({"import": cpu1 - cpu0, "warm": cpu2 - cpu1, "warm wall": done - imported}))
"""

_PREPARE = """
import sys, time, json
sys.path.insert(0, sys.argv[3])
from pathlib import Path
import gen.emit.validate as v
assert v.__file__.startswith(sys.argv[2]), v.__file__
from gen.pipeline import build_manifests
from gen.fleet.profiles import load_profiles
from gen.fleet.resolve import build_plan
plan = build_manifests(build_plan(load_profiles(Path(sys.argv[1]))))
try:
    from gen._render_task import BuiltClusterTask, RenderOptions
    task = BuiltClusterTask(plan, RenderOptions(None, "out", validate=True))
except ImportError:  # a checkout from before gen._render_task
    from gen.pipeline import _RenderCluster
    task = _RenderCluster(plan, None, "out", validate=True)
wall, cpu = time.perf_counter(), time.process_time()
task.prepare()
print(json.dumps({"prepare": time.process_time() - cpu,
                  "prepare wall": time.perf_counter() - wall}))
"""

_PARTS = """
import hashlib, json, sys, time
import gen.emit.validate as v
from gen.emit import crd_schemas
import jsonschema_rs
keys = [tuple(k) for k in json.loads(open(sys.argv[1]).read())]
t = time.process_time
parts = {}
s = t(); crd_schemas.bundled(); parts["bundled CRDs read"] = t() - s
crds = crd_schemas.CRDSet()
schemas, registries, digests = {}, {}, {}
s = t()
for minor_c, api, kind in keys:
    m = v.schema_version_for(minor_c)
    key = (m, api, kind)
    if key in schemas:
        continue
    crd = crds.lookup(api, kind)
    convert = getattr(crd_schemas, "json_schema",  # shipped, once per process
                      lambda c: crd_schemas.to_json_schema(c.schema, c.api_version, c.kind))
    schemas[key] = convert(crd) if crd is not None else (
        json.loads(v._schema_file(m, api, kind).read_text()) if
        v._schema_file(m, api, kind).is_file() else None)
parts["schemas built/read"] = t() - s
s = t()
for (m, _, _) in schemas:
    if m not in registries:
        registries[m] = v._registry(m)
parts["registries"] = t() - s
crd_time = core_time = 0.0
for (m, api, kind), schema in schemas.items():
    if schema is None:
        continue
    s = t()
    jsonschema_rs.Draft202012Validator(schema, registry=registries[m], validate_formats=False)
    d = t() - s
    if crds.lookup(api, kind) is not None:
        crd_time += d
    else:
        core_time += d
    text = json.dumps(schema, sort_keys=True)
    digests.setdefault((api, kind), set()).add(hashlib.sha256(text.encode()).hexdigest())
parts["compile: custom resources"] = crd_time
parts["compile: built-in kinds"] = core_time
from gen.emit.crd_rules import schema_checks
s = t()
for (m, api, kind) in schemas:
    crd = crds.lookup(api, kind)
    if crd is not None:
        schema_checks(crd.schema, crd.digest)
parts["CRD checks (crd_rules)"] = t() - s
compiled = sum(1 for s_ in schemas.values() if s_ is not None)
distinct = sum(len(d) for d in digests.values())
print(json.dumps({"parts": parts, "validators": compiled, "distinct schemas": distinct,
                  "custom": sum(1 for (m, a, k) in schemas if crds.lookup(a, k) is not None)}))
"""


def render_keys(source: str, clusters: int, services: int) -> list[tuple[int, str, str]]:
    """The sorted (cluster minor, apiVersion, kind) a render of the fleet validates."""
    from gen.emit.render import make_environment, render_cluster
    from gen.fleet.profiles import load_profiles
    from gen.fleet.resolve import build_plan
    from gen.pipeline import build_manifests, load_plan

    if source == "example":
        plan = load_plan(REPO / "profiles", base=REPO)
    else:
        with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir()
                                         else None) as tmp:
            plan = build_manifests(build_plan(load_profiles(
                write_fleet(Path(tmp), clusters, services))))
    env = make_environment(None)
    keys = {(c.minor, o.api_version, o.kind) for c in plan.clusters
            for o in render_cluster(env, c)[0]}
    return sorted(keys)


def _child(code: str, keys_file: Path, tree: Path = REPO, *extra: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    # cwd: ``-c`` puts the working folder first on sys.path, ahead of PYTHONPATH.
    out = subprocess.run([sys.executable, "-c", code, str(keys_file), str(tree), *extra],
                         env=env, cwd=tree, capture_output=True, text=True, check=True).stdout
    result: dict[str, Any] = json.loads(out)
    return result


def _prepare(trees: dict[str, Path], args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir()
                                     else None) as tmp:
        profiles = write_fleet(Path(tmp), args.clusters, args.services)
        runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
        for _ in range(args.runs):
            for name, tree in trees.items():
                runs[name].append(_child(_PREPARE, profiles, tree, str(BENCH)))
    for name, found in runs.items():
        cpu = statistics.median(float(r["prepare"]) for r in found)
        wall = statistics.median(float(r["prepare wall"]) for r in found)
        spread = ", ".join(f"{float(r['prepare']):.3f}" for r in found)
        print(f"bench ({name}): prepare() before the fork {cpu:.3f} s CPU (runs {spread}; "
              f"wall {wall:.3f} s)")


def main() -> None:
    """Learn the keys, then time the cold set-up in fresh processes; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", choices=("bench", "example", "both"), default="both")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--clusters", type=int, default=40)
    parser.add_argument("--services", type=int, default=32)
    parser.add_argument("--parts", action="store_true")
    parser.add_argument("--prepare", action="store_true")
    parser.add_argument("--base", type=Path, default=None,
                        help="another checkout (git worktree add DIR COMMIT), timed in turns")
    args = parser.parse_args()
    trees = {"this": REPO, **({"base": args.base.resolve()} if args.base else {})}
    sources = ("example", "bench") if args.source == "both" else (args.source,)
    with tempfile.TemporaryDirectory() as tmp:
        for source in sources:
            keys = render_keys(source, args.clusters, args.services)
            keys_file = Path(tmp) / f"{source}.json"
            keys_file.write_text(json.dumps(keys))
            runs: dict[str, list[dict[str, Any]]] = {name: [] for name in trees}
            for _ in range(args.runs):  # the checkouts take turns
                for name, tree in trees.items():
                    runs[name].append(_child(_WARM, keys_file, tree))
            for name, found in runs.items():
                warm = statistics.median(float(r["warm"]) for r in found)
                imp = statistics.median(float(r["import"]) for r in found)
                wall = statistics.median(
                    float(r["warm wall"]) for r in found)
                spread = ", ".join(f"{float(r['warm']):.3f}" for r in found)
                print(f"{source} ({name}): {len(keys)} keys; cold warm() {warm:.3f} s CPU "
                      f"(runs {spread}; wall {wall:.3f} s); import {imp:.3f} s CPU")
            if args.prepare and source == "bench":
                _prepare(trees, args)
            if args.parts:
                parts = _child(_PARTS, keys_file)
                print(f"  {parts['validators']} validators ({parts['custom']} custom), "
                      f"{parts['distinct schemas']} distinct schemas")
                for name, value in parts["parts"].items():
                    print(f"  {name:<28} {value:.3f} s")


if __name__ == "__main__":
    main()
