"""The hand-written generator: ``jinja_render.py [--pure] [--validate] PROJECT OUT``.

Runs in bench/peers/.venv-bench. For each cluster's data file, renders each object's Jinja2
template, parses the text with PyYAML and writes it back as canonical YAML (keys sorted)
to ``OUT/<gen's path>``: what a generator written by hand around Jinja2 and PyYAML does.
``--pure`` uses PyYAML's Python loader and dumper (its default), otherwise libyaml's.
``--validate`` also checks each object with ``kubernetes_validate.validate`` (strict, the
cluster's Kubernetes version); kinds it has no schema for (CRDs, kustomizations) are counted.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import jinja2
import yaml


def main() -> None:
    """Render, parse, (validate,) dump and write every object; print counts as JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--pure", action="store_true")
    parser.add_argument("--validate", action="store_true")
    parser.add_argument("project", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    loader: Any = yaml.SafeLoader if args.pure else yaml.CSafeLoader
    dumper: Any = yaml.SafeDumper if args.pure else yaml.CSafeDumper
    if args.validate:
        import kubernetes_validate
        from kubernetes_validate.utils import SchemaNotFoundError
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(args.project / "templates"),
                             undefined=jinja2.StrictUndefined, autoescape=False)
    written = validated = no_schema = 0
    start = time.perf_counter()
    made: set[Path] = set()
    for data_file in sorted((args.project / "data").glob("*.json")):
        info = json.loads(data_file.read_text())
        version = f"1.{info['minor']}.0"
        for shape, records in info["objects"].items():
            template = env.get_template(f"{shape}.yaml.j2")
            for o in records:
                data = yaml.load(template.render(o=o), Loader=loader)
                if args.validate:
                    try:
                        kubernetes_validate.validate(data, version, strict=True)
                        validated += 1
                    except SchemaNotFoundError:
                        no_schema += 1
                target = args.out / o["path"]
                if target.parent not in made:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    made.add(target.parent)
                with open(target, "w") as f:  # noqa: PTH123 - the loop a script would write
                    yaml.dump(data, f, Dumper=dumper, sort_keys=True)
                written += 1
    print(json.dumps({"objects": written, "validated": validated, "no_schema": no_schema,
                      "seconds": time.perf_counter() - start, "pid": os.getpid()}))


if __name__ == "__main__":
    main()
