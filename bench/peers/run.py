"""gen side by side with Helm's engine and Kapitan: ``python bench/peers/run.py``.

Options: ``[--fleet plain|serving] [--sizes 10x16,40x32] [--repeat 3] [--json F] [--venv DIR]
[--only gen,helm,...]``.

For each size (clusters × services per cluster, a fleet from ``bench/fleet.py``), in a
scratch folder (``TMPDIR``; use tmpfs, as ``bench/run.py`` does):

1. gen renders the fleet; every YAML file it writes is one object.
2. ``bench/peers/build.py`` turns that render into each peer's project: a Helm chart and
   values, a Kapitan inventory and kadet component, Jinja2 templates and data.
3. Each peer runs in a fresh process (``bench/peers/.venv-bench``, made by
   ``bench/peers/setup.sh``) into an empty output folder, timed end to end, medians of
   ``--repeat``; its output is then parsed and compared with gen's object by object.
4. gen itself is timed the same way (``gen render -j 2``, ``--jobs 1``), and its render stage
   alone in one process (templates and canonical YAML, no load, lint or validation).

Ratios are to ``gen render -j 2`` in the same run. Prints one JSON line per measurement
and writes everything with ``--json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

PEERS = Path(__file__).resolve().parent
BENCH = PEERS.parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
from fleet import FLEETS, write_fleet  # noqa: E402 - beside this script

from peers import build  # noqa: E402

DRIVERS = PEERS / "drivers"
VENV = PEERS / ".venv-bench"

RENDER_STAGE = """
import json, statistics, sys, time
from pathlib import Path
from gen.emit.render import make_environment, render_cluster
from gen.pipeline import load_plan
plan = load_plan(Path(sys.argv[1]))
env = make_environment(None)
times = []
for _ in range(int(sys.argv[2])):
    start = time.perf_counter()
    for c in plan.clusters:
        render_cluster(env, c)
    times.append(time.perf_counter() - start)
print(json.dumps({"render_s": statistics.median(times)}))
"""


def _timed(cmd: list[str], cwd: Path, out: Path | None, repeat: int) -> dict[str, Any]:
    """Median wall seconds of ``cmd`` in a fresh process, ``out`` emptied before each run."""
    times: list[float] = []
    last = ""
    for _ in range(repeat):
        if out is not None and out.exists():
            shutil.rmtree(out)
        start = time.perf_counter()
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        if proc.returncode:
            raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-3000:]}")
        last = proc.stdout
    row: dict[str, Any] = {"s": statistics.median(times), "runs": times}
    tail = last.strip().splitlines()[-1:] if last.strip() else []
    if tail and tail[0].startswith("{"):
        row["reported"] = json.loads(tail[0])
    return row


def _versions(python: Path) -> dict[str, str]:
    code = ("import json, importlib.metadata as m; print(json.dumps({n: m.version(n) for n in "
            "('kapitan', 'kadet', 'reclass-rs', 'rapidyaml', 'helm-python-sdk', 'jinja2', "
            "'pyyaml', 'kubernetes-validate')}))")
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    versions: dict[str, str] = json.loads(out.stdout)
    code = "import helm_python as h; print(h.helm_sdk_version())"
    helm = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    versions["helm (Go SDK in the wheel)"] = helm.stdout.strip()
    return versions


def bench_size(clusters: int, services: int, repeat: int, venv: Path,
               only: set[str], serving: bool = False) -> dict[str, Any]:
    """Every figure and check for one fleet size."""
    from gen.pipeline import load_plan

    python = str(venv / "bin" / "python")
    row: dict[str, Any] = {"clusters": clusters, "services": clusters * services}
    times: dict[str, Any] = {}
    checks: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="gen-peers-") as tmp:
        root = Path(tmp)
        profiles = write_fleet(root, clusters, services, serving=serving)
        gen_out = root / "gen-out"
        gen = [sys.executable, "-m", "gen", "render", "-q", "--validator", "embedded",
               "--profiles", str(profiles)]
        times["gen -j 2"] = _timed([*gen, "--out", str(gen_out), "-j", "2"], root, gen_out,
                                   repeat)
        jobs1 = root / "gen-out-1"
        if "gen" in only:
            times["gen --jobs 1"] = _timed([*gen, "--out", str(jobs1), "--jobs", "1"], root,
                                           jobs1, repeat)
            stage = _timed([sys.executable, "-c", RENDER_STAGE, str(profiles), str(repeat)],
                           REPO, None, 1)
            times["gen render stage"] = {"s": stage["reported"]["render_s"]}

        expected = build.read_tree(gen_out)
        minors = {c.name: c.minor for c in load_plan(profiles).clusters}
        exp = build.export(expected, minors)
        row["objects"] = exp.object_count()
        row["shapes"] = len(exp.shapes)
        projects = build.write_all(exp, root / "peers")

        def peer(name: str, cmd: list[str], cwd: Path, out: Path, reader: Callable[[], Any],
                 runs: int = repeat) -> None:
            times[name] = _timed(cmd, cwd, out, runs)
            checks[name] = build.compare(expected, reader())
            print(json.dumps({"clusters": clusters, name: times[name]["s"],
                              "equal": checks[name]["ok"]}), flush=True)

        if "helm" in only:
            out = root / "helm-out"
            peer("helm", [python, str(DRIVERS / "helm_render.py"), str(projects["helm"]),
                          str(root / "peers" / "helm" / "values"), str(out)],
                 root, out, lambda: build.read_helm(root / "helm-out"))
        if "kapitan" in only:
            kroot = projects["kapitan"]
            cmd = [str(venv / "bin" / "kapitan"), "compile", "--inventory-backend", "reclass-rs",
                   "--yaml-use-rapidyaml", "-p", "2"]
            peer("kapitan", cmd, kroot, kroot / "compiled",
                 lambda: build.read_kapitan(kroot / "compiled"))
        jinja = [python, str(DRIVERS / "jinja_render.py")]
        jout = root / "jinja-out"
        if "jinja" in only:
            for name, flags in (("jinja2 + pyyaml", ["--pure"]),
                                ("jinja2 + pyyaml (libyaml)", [])):
                peer(name, [*jinja, *flags, str(projects["jinja"]), str(jout)], root, jout,
                     lambda: build.read_tree(jout))
        if "validate" in only:
            peer("jinja2 + pyyaml (libyaml) + kubernetes-validate",
                 [*jinja, "--validate", str(projects["jinja"]), str(jout)], root, jout,
                 lambda: build.read_tree(jout), runs=1)
    base = times["gen -j 2"]["s"]
    row["seconds"] = {k: v["s"] for k, v in times.items()}
    row["relative_to_gen_j2"] = {k: v["s"] / base for k, v in times.items()}
    row["runs"] = {k: v.get("runs") for k, v in times.items()}
    row["reported"] = {k: v["reported"] for k, v in times.items() if "reported" in v}
    row["equal_to_gen"] = checks
    if "helm" in times:
        row["gen_j2_over_helm"] = base / times["helm"]["s"]
    return row


def main() -> None:
    """Run each size; print and save the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10x16,40x32")
    parser.add_argument("--fleet", choices=FLEETS, default="plain",
                        help="the bench fleet, or it with routing, multi-node and Kueue")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--venv", type=Path, default=VENV)
    parser.add_argument("--only", default="gen,helm,kapitan,jinja,validate")
    args = parser.parse_args()
    if not (args.venv / "bin" / "python").exists():
        raise SystemExit(f"no peers in {args.venv}: run bench/peers/setup.sh first")
    only = set(args.only.split(","))
    rows = []
    for size in args.sizes.split(","):
        clusters, services = (int(x) for x in size.split("x"))
        rows.append(bench_size(clusters, services, args.repeat, args.venv, only,
                               serving=args.fleet == "serving"))
        print(json.dumps(rows[-1]), flush=True)
    results = {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
                   f"Python {platform.python_version()}",
        "tmpdir": tempfile.gettempdir(),
        "repeat": args.repeat,
        "fleet": args.fleet,
        "versions": _versions(args.venv / "bin" / "python"),
        "sizes": rows,
    }
    if args.json:
        args.json.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
