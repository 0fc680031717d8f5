"""Validation per object, two checkouts side by side:
``python bench/validation_ab.py --base DIR [--objects N] [--repeat R] [--rounds K]``.

``DIR`` is another checkout of gen (``git worktree add /tmp/gen-base COMMIT``). The objects
are rendered once by this checkout (``bench/validation.py``'s :func:`sample_objects`, bench
and example fleets) and pickled; then each checkout validates the same objects in its own
process (``PYTHONPATH`` pointing at it), taking turns for ``--rounds`` rounds. Each figure is
the median CPU µs per object of ``--repeat`` passes over all the objects, every validator
compiled beforehand, and of passes over the built-in kinds and the custom resources alone
(as this checkout's bundled CRDs tell them apart). A checkout whose validator takes the
holes of each object's template shape (:attr:`gen.emit.render.RenderedObject.holes`) is
handed them, as its render does.
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent

_CHILD = """
import gc, pickle, statistics, sys, time
import gen.emit.validate
from gen.emit.validate import SchemaValidator
from gen.errors import SourceLocation
assert gen.emit.validate.__file__.startswith(sys.argv[3]), gen.emit.validate.__file__
try:  # a checkout whose render hands the validator each object's holes gets them too
    from gen.emit.skeleton import Holes, ShapeHoles
except ImportError:
    Holes = None
raw = pickle.loads(open(sys.argv[1], "rb").read())
objects = [(m, d, Holes(ShapeHoles.of(h[0], h[1]), h[2], h[3])
            if Holes is not None and h is not None else None) for m, d, h, _ in raw]
custom = [c for _, _, _, c in raw]
validator, where = SchemaValidator(), SourceLocation("out/x.yaml")
check = ((lambda d, m, h: validator.validate(d, m, where, None, h)) if Holes is not None
         else (lambda d, m, h: validator.validate(d, m, where)))
if sys.argv[2] == "accepts":  # the indices of the objects this checkout finds nothing in
    print(" ".join(str(i) for i, (m, d, h) in enumerate(objects) if not check(d, m, h)))
    sys.exit(0)
assert not any(check(d, m, h) for m, d, h in objects)
parts = (objects, [o for o, c in zip(objects, custom) if not c],
         [o for o, c in zip(objects, custom) if c])
times = [[] for _ in parts]
for _ in range(int(sys.argv[2])):
    for part, spent in zip(parts, times):
        gc.collect(); gc.disable()
        start = time.process_time()
        for minor, data, holes in part:
            check(data, minor, holes)
        spent.append(time.process_time() - start)
        gc.enable()
print(" ".join(f"{statistics.median(t) * 1e6 / max(len(p), 1):.1f}" for p, t in zip(parts, times)))
"""


def main() -> None:
    """Render, pickle, and time both checkouts in turn; print a line per run."""
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base", type=Path, required=True)
    parser.add_argument("--objects", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(BENCH))
    from validation import sample_shaped

    from gen.emit.crd_schemas import CRDSet

    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        trees = (("base", args.base.resolve()), ("this", REPO))
        for source in ("bench", "example"):
            files[source] = Path(tmp) / f"{source}.pkl"
            # Holes as plain data (a checkout without them reads the objects alone).
            crds = CRDSet()
            objects = [(m, d, None if h is None else
                        (h.shape.shape, h.shape.paths, h.values, h.texts),
                        crds.lookup(str(d.get("apiVersion", "")), str(d.get("kind", "")))
                        is not None)
                       for m, d, h in sample_shaped(args.objects, source)]
            files[source].write_bytes(pickle.dumps(objects))
            # Only objects both checkouts accept: the templates may have changed since base.
            kept = set(range(len(objects)))
            for _, tree in trees:
                kept &= {int(i) for i in _run(tree, files[source], "accepts").split()}
            if len(kept) < len(objects):
                print(f"{source}: {len(objects) - len(kept)} of {len(objects)} objects left "
                      "out (one checkout finds an error in them)")
            print(f"{source}: {sum(objects[i][3] for i in kept)} of the {len(kept)} kept are "
                  "custom resources")
            files[source].write_bytes(pickle.dumps([objects[i] for i in sorted(kept)]))
        for round_ in range(args.rounds):
            for name, tree in trees:
                for source, path in files.items():
                    out = _run(tree, path, str(args.repeat))
                    whole, built_in, custom = out.split()
                    print(f"round {round_ + 1} {name:4} {source:7} {whole} µs/object "
                          f"(built-in kinds {built_in}, custom resources {custom})")


def _run(tree: Path, objects: Path, mode: str) -> str:
    """The child's output, run in ``tree`` (``-c`` puts the working folder first on
    sys.path, ahead of PYTHONPATH)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(objects), mode, str(tree)],
                         env=env, cwd=tree, capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"{tree}: {out.stderr.strip()[-2000:]}")
    return out.stdout.strip()


if __name__ == "__main__":
    main()
