"""Render the bench chart once per cluster with Helm's engine: ``helm_render.py CHART VALUES OUT``.

Runs in bench/peers/.venv-bench (helm-python-sdk: Helm's Go SDK through ctypes). Loads the
chart once, renders it with each cluster's values, and writes each template's output to
``OUT/<cluster>/<template>`` as ``helm template --output-dir`` does. Prints the seconds the
renders alone took (no start-up, no writes) as JSON.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import helm_python  # type: ignore[import-not-found]  # only in .venv-bench


def main() -> None:
    """Render every cluster; print the render-only seconds."""
    chart_dir, values_dir, out = (Path(a) for a in sys.argv[1:4])
    render_s = 0.0
    with helm_python.Chart.load(str(chart_dir)) as chart:
        for values_file in sorted(values_dir.glob("*.json")):
            cluster = values_file.stem
            values = json.loads(values_file.read_text())
            start = time.perf_counter()
            manifests = chart.render(values, name=cluster, namespace="default")
            render_s += time.perf_counter() - start
            target = out / cluster
            target.mkdir(parents=True, exist_ok=True)
            for template, text in manifests.items():
                if text.strip():
                    (target / Path(template).name).write_text(text)
    print(json.dumps({"render_s": render_s, "helm": helm_python.helm_sdk_version()}))


if __name__ == "__main__":
    main()
