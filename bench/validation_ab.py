"""Validation per object, two checkouts side by side:
``python bench/validation_ab.py --base DIR [--objects N] [--repeat R] [--rounds K]``.

``DIR`` is another checkout of gen (``git worktree add /tmp/gen-base COMMIT``). The objects
are rendered once by this checkout (``bench/validation.py``'s :func:`sample_objects`, bench
and example fleets) and pickled; then each checkout validates the same objects in its own
process (``PYTHONPATH`` pointing at it), taking turns for ``--rounds`` rounds. Each figure is
the median CPU µs per object of ``--repeat`` passes over all the objects, every validator
compiled beforehand.
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
objects = pickle.loads(open(sys.argv[1], "rb").read())
validator, where = SchemaValidator(), SourceLocation("out/x.yaml")
if sys.argv[2] == "accepts":  # the indices of the objects this checkout finds nothing in
    print(" ".join(str(i) for i, (m, d) in enumerate(objects)
                   if not validator.validate(d, m, where)))
    sys.exit(0)
assert not any(validator.validate(d, m, where) for m, d in objects)
times = []
for _ in range(int(sys.argv[2])):
    gc.collect(); gc.disable()
    start = time.process_time()
    for minor, data in objects:
        validator.validate(data, minor, where)
    times.append(time.process_time() - start)
    gc.enable()
print(f"{statistics.median(times) * 1e6 / len(objects):.1f}")
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
    from validation import sample_objects

    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        trees = (("base", args.base.resolve()), ("this", REPO))
        for source in ("bench", "example"):
            files[source] = Path(tmp) / f"{source}.pkl"
            objects = sample_objects(args.objects, source)
            files[source].write_bytes(pickle.dumps(objects))
            # Only objects both checkouts accept: the templates may have changed since base.
            kept = set(range(len(objects)))
            for _, tree in trees:
                kept &= {int(i) for i in _run(tree, files[source], "accepts").split()}
            if len(kept) < len(objects):
                print(f"{source}: {len(objects) - len(kept)} of {len(objects)} objects left "
                      "out (one checkout finds an error in them)")
            files[source].write_bytes(pickle.dumps([objects[i] for i in sorted(kept)]))
        for round_ in range(args.rounds):
            for name, tree in trees:
                for source, path in files.items():
                    out = _run(tree, path, str(args.repeat))
                    print(f"round {round_ + 1} {name:4} {source:7} {out} µs/object")


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
