"""Validation per object: ``python bench/validation.py [--objects N] [--repeat R]
[--source bench|example] [--json F]``.

Renders a synthetic fleet (``bench/fleet.py``; or the example fleet, ``--source example``),
takes N of its objects in render order and validates the same objects, with every
validator compiled beforehand, with:

- ``jsonschema-rs``: gen's :class:`~gen.emit.validate.SchemaValidator` as it is now, on
  the objects alone and (``+ holes``) as a render calls it, with where each object's
  template shape put its values (:attr:`gen.emit.render.RenderedObject.holes`);
- ``schemac``: gen's previous validator, the hand-written schema compiler, loaded from git
  history (``git show b63986b:gen/emit/schemac.py`` and the ``validate.py`` of that commit)
  into temporary modules; skipped, and said so, when git or that commit is not at hand;
- ``jsonschema``: the pure-Python reference, the same schemas and registry;
- ``kubernetes_validate.validate`` (strict), on the core objects only (it knows no custom
  resources) and at most ``--kv-objects`` of them: it reads its schema files on every call.

Each figure is the median of ``--repeat`` runs over all the objects, in CPU µs per object; the
ratios are against jsonschema-rs on the same objects, in the same run.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import statistics
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
from fleet import write_fleet  # noqa: E402 - beside this script

PREVIOUS = "b63986b"
"""The last commit with gen/emit/schemac.py, the hand-written compiler jsonschema-rs replaced."""

Objects = list[tuple[int, dict[str, Any]]]


def sample_objects(count: int, source: str = "bench") -> Objects:
    """The first ``count`` rendered objects, (cluster minor, data), in the order a render
    validates them: cluster by cluster, each cluster's objects in render order
    (:func:`sample_shaped`, without the holes; each object's top level copied)."""
    return [(minor, dict(data)) for minor, data, _ in sample_shaped(count, source)]


def sample_shaped(count: int, source: str = "bench") -> list[tuple[int, Mapping[str, Any], Any]]:
    """The first ``count`` rendered objects, (cluster minor, data, holes), in render order,
    with each object's :class:`~gen.emit.skeleton.Holes` (or None) as a render hands them
    to the validator; the data is the render's own (read-only).

    ``bench``: the render of a 10-cluster synthetic fleet (``bench/fleet.py``); ``example``:
    the example fleet's render (``profiles/``, the objects of ``out/``), repeated to ``count``.
    """
    from gen.emit.render import make_environment, render_cluster
    from gen.fleet.profiles import load_profiles
    from gen.fleet.resolve import build_plan
    from gen.pipeline import build_manifests, load_plan

    if source == "example":
        plan = load_plan(REPO / "profiles", base=REPO)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            plan = build_manifests(build_plan(load_profiles(write_fleet(Path(tmp), 10, 16))))
    env = make_environment(None)
    found = [(c.minor, o.data, o.holes) for c in plan.clusters
             for o in render_cluster(env, c)[0]]
    return (found * (count // len(found) + 1))[:count]


def _medians_us(runs: dict[str, Callable[[], Any]], objects: int,
                repeat: int) -> dict[str, float]:
    """Median CPU µs per object of each run (this process's CPU time: the validators are
    single-threaded, and other load on the machine counts less than in wall time); the
    runs take turns, so that a change in the machine's state weighs on all of them alike."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(repeat):
        for name, fn in runs.items():
            gc.collect()
            gc.disable()  # as timeit does: a collection falls on whichever run is current
            try:
                start = time.process_time()
                fn()
                times[name].append(time.process_time() - start)
            finally:
                gc.enable()
    return {name: statistics.median(t) * 1e6 / objects for name, t in times.items()}


def _git_source(path: str) -> str | None:
    try:
        proc = subprocess.run(["git", "show", f"{PREVIOUS}:{path}"], cwd=REPO,
                              capture_output=True, text=True, check=False, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def previous_validator() -> tuple[Any, str]:
    """The schemac-based ``SchemaValidator`` of commit :data:`PREVIOUS`, or why there is none.

    Both modules are loaded from git into temporary modules; the old ``validate.py`` finds
    the old compiler through ``sys.modules['gen.emit.schemac']`` for as long as it runs.
    """
    schemac_src = _git_source("gen/emit/schemac.py")
    validate_src = _git_source("gen/emit/validate.py")
    if schemac_src is None or validate_src is None:
        return None, f"skipped: git or commit {PREVIOUS} not available"
    schemac = types.ModuleType("gen.emit.schemac")
    schemac.__file__ = f"<git {PREVIOUS}:gen/emit/schemac.py>"
    sys.modules["gen.emit.schemac"] = schemac
    exec(compile(schemac_src, schemac.__file__, "exec"), schemac.__dict__)  # noqa: S102 - our own history
    import gen.emit

    gen.emit.schemac = schemac  # type: ignore[attr-defined]  # `from gen.emit import schemac`
    spec = importlib.util.spec_from_loader("_previous_validate", loader=None)
    assert spec is not None
    old = importlib.util.module_from_spec(spec)
    old.__file__ = f"<git {PREVIOUS}:gen/emit/validate.py>"
    exec(compile(validate_src, old.__file__, "exec"), old.__dict__)  # noqa: S102 - our own history
    return old.SchemaValidator(), f"loaded from git {PREVIOUS}"


def _jsonschema_validators(objects: Objects) -> dict[tuple[int, str, str], Any]:
    from jsonschema import Draft7Validator, Draft202012Validator
    from referencing import Registry, Resource

    from gen.emit.crd_schemas import custom_schema
    from gen.emit.validate import _DEFINITIONS_URI, _schema_file, schema_version_for

    registries: dict[int, Any] = {}
    out: dict[tuple[int, str, str], Any] = {}
    for minor, data in objects:
        key = (schema_version_for(minor), data["apiVersion"], data["kind"])
        if key in out:
            continue
        file = _schema_file(*key)
        if key[0] not in registries:  # custom resources' metadata refers into it too
            defs = json.loads((file.parent / "_definitions.json").read_text("utf-8"))
            registries[key[0]] = Registry().with_resource(
                _DEFINITIONS_URI, Resource.from_contents(defs))
        if file.is_file():
            schema = json.loads(file.read_text("utf-8"))
            out[key] = Draft202012Validator(schema, registry=registries[key[0]])
        else:
            custom = custom_schema(key[1], key[2])
            assert custom is not None, key
            draft07 = "draft-07" in str(custom.get("$schema", ""))
            out[key] = (Draft7Validator if draft07 else Draft202012Validator)(
                custom, registry=registries[key[0]])
    return out


def _previous_run(objects: Objects) -> tuple[Callable[[], None] | None, str]:
    """A pass of :func:`previous_validator` over ``objects``, or why there is none: that
    commit has no CRD for the custom resources the templates have gained since (its
    validator then reaches for a remote ``$ref``), so it is skipped, and said so."""
    from gen.errors import SourceLocation

    old, why = previous_validator()
    if old is None:
        return None, why
    where = SourceLocation("out/x.yaml")

    def run() -> None:
        for minor, data in objects:
            if old.validate(data, minor, where):
                raise AssertionError(data["kind"])

    try:
        run()
    except Exception as err:  # noqa: BLE001 - whatever the old code raises, it is skipped
        return None, (f"skipped: {PREVIOUS}'s validator fails on these objects "
                      f"({type(err).__name__})")
    return run, why


def _shaped_run(validator: Any, shaped: list[tuple[int, Mapping[str, Any], Any]] | None,
                ) -> dict[str, Callable[[], None]]:
    """A pass of ``validator`` over ``shaped`` as a render makes it, with each object's holes
    (none without ``shaped``)."""
    from gen.errors import SourceLocation

    where = SourceLocation("out/x.yaml")

    def run() -> None:
        for minor, data, holes in shaped or ():
            if validator.validate(data, minor, where, None, holes):
                raise AssertionError(data["kind"])

    return {} if shaped is None else {"jsonschema-rs + holes": run}


def measure(objects: Objects, repeat: int, kv_objects: int = 100,
            shaped: list[tuple[int, Mapping[str, Any], Any]] | None = None) -> dict[str, Any]:
    """µs per object of each validator on ``objects`` (medians), and the ratios; ``shaped``:
    the same objects with their holes, validated as a render does (``+ holes``)."""
    import kubernetes_validate

    from gen.emit.validate import SchemaValidator, _schema_file, schema_version_for
    from gen.errors import SourceLocation

    where = SourceLocation("out/x.yaml")
    n = len(objects)
    result: dict[str, Any] = {"objects": n, "repeat": repeat,
                              "kinds": len({(m, d["apiVersion"], d["kind"]) for m, d in objects})}
    us: dict[str, float] = {}

    new = SchemaValidator()

    def run_new(sample: Objects = objects) -> None:
        for minor, data in sample:
            if new.validate(data, minor, where):
                raise AssertionError(data["kind"])

    runs: dict[str, Callable[[], Any]] = {"jsonschema-rs": run_new}
    runs.update(_shaped_run(new, shaped))
    run_old, result["schemac"] = _previous_run(objects)
    if run_old is not None:
        runs["schemac"] = run_old
    reference = _jsonschema_validators(objects)

    def run_jsonschema() -> None:
        for minor, data in objects:
            key = (schema_version_for(minor), data["apiVersion"], data["kind"])
            if list(reference[key].iter_errors(data)):
                raise AssertionError(data["kind"])

    runs["jsonschema"] = run_jsonschema
    for run in runs.values():  # compile first: the figures are validation, not compilation
        run()
    us = _medians_us(runs, n, repeat)
    result["us_per_object"] = us
    result["ratio_vs_jsonschema_rs"] = {k: v / us["jsonschema-rs"] for k, v in us.items()}

    core = [(m, d) for m, d in objects  # the kinds Kubernetes itself serves
            if _schema_file(schema_version_for(m), d["apiVersion"], d["kind"]).is_file()
            ][:kv_objects]

    def run_kv() -> None:
        for minor, data in core:
            kubernetes_validate.validate(data, f"1.{minor}.0", strict=True)

    kv_us = _medians_us({"kubernetes_validate": run_kv, "jsonschema-rs": lambda: run_new(core)},
                        len(core), max(1, min(repeat, 3)))
    result["kubernetes_validate"] = {
        "objects": len(core),
        "us_per_object": kv_us["kubernetes_validate"],
        "jsonschema_rs_us_per_object": kv_us["jsonschema-rs"],
        "ratio_vs_jsonschema_rs": kv_us["kubernetes_validate"] / kv_us["jsonschema-rs"],
    }
    return result


def report(result: dict[str, Any]) -> str:
    """The figures as a short table."""
    lines = [f"validation per object: {result['objects']} objects of {result['kinds']} kinds "
             f"({result.get('source', 'bench')} fleet), "
             f"median of {result['repeat']} runs; schemac {result['schemac']}"]
    for name, value in result["us_per_object"].items():
        ratio = result["ratio_vs_jsonschema_rs"][name]
        lines.append(f"  {name:<22} {value:9.1f} µs/object  {ratio:6.1f}× jsonschema-rs")
    kv = result["kubernetes_validate"]
    lines.append(f"  {'kubernetes_validate':<22} {kv['us_per_object']:9.1f} µs/object  "
                 f"{kv['ratio_vs_jsonschema_rs']:6.1f}× jsonschema-rs "
                 f"({kv['objects']} core objects; jsonschema-rs "
                 f"{kv['jsonschema_rs_us_per_object']:.1f} µs on them)")
    return "\n".join(lines)


def main() -> None:
    """Measure and print; ``--json`` also saves the figures."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--source", choices=("bench", "example"), default="bench",
                        help="objects of a synthetic 10-cluster fleet, or of the example fleet")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--kv-objects", type=int, default=100)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    shaped = sample_shaped(args.objects, args.source)
    result = measure([(m, dict(d)) for m, d, _ in shaped], args.repeat, args.kv_objects, shaped)
    result["source"] = args.source
    print(report(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
