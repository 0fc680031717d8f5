"""cel-python's side of ``bench/cel_eval.py``; runs in cel-python's own interpreter.

Reads ``{"selectors", "device", "loops", "repeat"}`` as JSON on stdin and prints, per
selector, ``{"expression", "result", "us"}`` (median CPU µs per evaluation) as JSON.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from typing import Any


def main() -> int:
    import celpy  # type: ignore[import-not-found]  # only in cel-python's interpreter

    job = json.load(sys.stdin)
    env = celpy.Environment()
    activation = {"device": celpy.json_to_cel(job["device"])}
    out: list[dict[str, Any]] = []
    for expression in job["selectors"]:
        program = env.program(env.compile(expression))
        result = bool(program.evaluate(activation))
        times = []
        for _ in range(job["repeat"]):
            gc.collect()
            gc.disable()
            try:
                start = time.process_time()
                for _ in range(job["loops"]):
                    program.evaluate(activation)
                times.append(time.process_time() - start)
            finally:
                gc.enable()
        out.append({
            "expression": expression,
            "result": result,
            "us": statistics.median(times) * 1e6 / job["loops"],
        })
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
