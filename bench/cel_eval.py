"""CEL evaluation per selector: gen (cel-expr-python) against cel-python.

``python bench/cel_eval.py [--celpy PYTHON] [--repeat R] [--loops N] [--json F]``

Both engines compile each selector once and evaluate it ``--loops`` times on the same H100
device (its activation built once, as gen's matcher does per device shape); each figure is
the median over ``--repeat`` rounds, in CPU µs per evaluation. cel-python
(https://pypi.org/project/cel-python/, pure Python) runs in its own interpreter, ``--celpy``
(default: ``$CELPY_PYTHON``, else ``bench/.venv-celpy/bin/python``), through
``bench/cel_celpy.py``: it is never a dependency of gen. Create that venv with::

    python3 -m venv bench/.venv-celpy && bench/.venv-celpy/bin/pip install cel-python==0.5.0

The selectors use only what both engines have: cel-python has neither Kubernetes' libraries
(quantity, semver) nor optionals nor ``cel.bind``. Both must give the same result on every
selector; a disagreement is printed and makes the run exit 1.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent

ATTRIBUTES: dict[str, str | int] = {
    "type": "gpu",
    "uuid": "GPU-4f1e0c2a-0000-0000-0000-000000000000",
    "productName": "NVIDIA H100 80GB HBM3",
    "brand": "Nvidia",
    "architecture": "Hopper",
    "index": 0,
    "minor": 0,
    "driverVersion": "580.65.6",
}
DRIVER = "gpu.nvidia.com"
ATTR = f'device.attributes["{DRIVER}"]'

SELECTORS = [
    f'device.driver == "{DRIVER}"',
    f'{ATTR}.productName == "NVIDIA H100 80GB HBM3"',
    f'{ATTR}.type == "gpu" && {ATTR}.architecture == "Hopper" && {ATTR}.brand == "Nvidia"',
    f'{ATTR}.productName.startsWith("NVIDIA H") && {ATTR}.index < 8',
    f'{ATTR}.productName.matches("H(100|200)")',
    f'"{DRIVER}" in device.attributes && {ATTR}.exists(k, k == "uuid")',
    f'[0, 1, 2, 3, 4, 5, 6, 7].exists(i, {ATTR}.index == i)',
    f'{ATTR}.productName in ["NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA B200"]',
]
"""Shaped like the selectors gen renders for GPU classes, and those users write."""


def device_data() -> dict[str, Any]:
    """The device as the CEL variable both engines see (domain → name → value)."""
    return {"driver": DRIVER, "attributes": {DRIVER: dict(ATTRIBUTES)}, "capacity": {}}


def _median_us(fn: Any, loops: int, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.process_time()
            for _ in range(loops):
                fn()
            times.append(time.process_time() - start)
        finally:
            gc.enable()
    return statistics.median(times) * 1e6 / loops


def measure_gen(loops: int, repeat: int) -> list[dict[str, Any]]:
    """gen's compiled selectors, evaluated on the device (CPU µs per evaluation)."""
    sys.path.insert(0, str(REPO))
    from gen.dra.cel import compile_selector
    from gen.dra.devices import Device

    device = Device(DRIVER, "gpu-0", {f"{DRIVER}/{k}": v for k, v in ATTRIBUTES.items()}, {})
    out = []
    for expression in SELECTORS:
        selector = compile_selector(expression)
        result = selector.evaluate(device)
        out.append({
            "expression": expression,
            "result": result,
            "us": _median_us(lambda s=selector: s.evaluate(device), loops, repeat),
        })
    return out


def measure_celpy(python: str, loops: int, repeat: int) -> list[dict[str, Any]] | str:
    """cel-python's figures from its own interpreter, or why there are none."""
    if not Path(python).exists():
        return f"skipped: no cel-python interpreter at {python}"
    job = {"selectors": SELECTORS, "device": device_data(), "loops": loops, "repeat": repeat}
    proc = subprocess.run(
        [python, str(BENCH / "cel_celpy.py")], input=json.dumps(job), capture_output=True,
        text=True, check=False, timeout=3600,
    )
    if proc.returncode != 0:
        return f"failed: {proc.stderr.strip()[-400:]}"
    results: list[dict[str, Any]] = json.loads(proc.stdout)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--celpy", default=os.environ.get(
        "CELPY_PYTHON", str(BENCH / ".venv-celpy" / "bin" / "python")))
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--loops", type=int, default=2000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    gen_rows = measure_gen(args.loops, args.repeat)
    peer = measure_celpy(args.celpy, max(1, args.loops // 10), args.repeat)
    report: dict[str, Any] = {"gen": gen_rows, "cel-python": peer}
    status = 0
    print(f"{'selector':72} {'gen µs':>8} {'cel-python µs':>14} {'ratio':>7}")
    ratios = []
    for i, row in enumerate(gen_rows):
        other = peer[i] if isinstance(peer, list) else None
        if other is not None and other["result"] != row["result"]:
            print(f"DISAGREE on {row['expression']}: gen {row['result']}, "
                  f"cel-python {other['result']}")
            status = 1
        ratio = other["us"] / row["us"] if other is not None else None
        if ratio is not None:
            ratios.append(ratio)
        print(f"{row['expression'][:72]:72} {row['us']:8.2f} "
              f"{(other['us'] if other else float('nan')):14.1f} "
              f"{(f'{ratio:.0f}×' if ratio else '-'):>7}")
    if isinstance(peer, str):
        print(f"cel-python: {peer}")
    else:
        report["median_ratio"] = statistics.median(ratios)
        report["min_ratio"] = min(ratios)
        print(f"median ratio {statistics.median(ratios):.0f}×, lowest {min(ratios):.0f}×")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return status


if __name__ == "__main__":
    sys.exit(main())
