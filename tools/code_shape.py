"""The shape of gen's code, as a reviewer measures it: the largest modules, the largest
functions and the import circles.

    python -m tools.code_shape            # gen/, the 10 largest of each
    python -m tools.code_shape --top 20 --json

A module's size is its physical lines; a function's (or method's) is
``end_lineno - lineno + 1`` from :mod:`ast`, docstring included. The import graph is the
layering test's (:func:`tests.layering.import_graph`: module-level, function-level and
``TYPE_CHECKING`` imports all count).
"""

from __future__ import annotations

import argparse
import ast
import json
import sys
from pathlib import Path

from tests.layering import import_cycles, import_graph

ROOT = Path(__file__).resolve().parent.parent / "gen"


def module_sizes(root: Path = ROOT) -> list[tuple[str, int]]:
    """(path relative to the repository, lines) of every module, largest first."""
    rows = [(str(p.relative_to(root.parent)), len(p.read_text(encoding="utf-8").splitlines()))
            for p in sorted(root.rglob("*.py"))]
    return sorted(rows, key=lambda r: (-r[1], r[0]))


def function_sizes(root: Path = ROOT) -> list[tuple[str, int]]:
    """(``path:line qualified.name``, lines) of every function and method, largest first."""
    rows: list[tuple[str, int]] = []

    def walk(node: ast.AST, rel: Path, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                name = f"{prefix}{child.name}"
                size = (child.end_lineno or child.lineno) - child.lineno + 1
                rows.append((f"{rel}:{child.lineno} {name}", size))
                walk(child, rel, f"{name}.")
            elif isinstance(child, ast.ClassDef):
                walk(child, rel, f"{prefix}{child.name}.")

    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        walk(tree, path.relative_to(root.parent), "")
    return sorted(rows, key=lambda r: (-r[1], r[0]))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    modules = module_sizes()[:args.top]
    functions = function_sizes()[:args.top]
    cycles = import_cycles(import_graph(ROOT))
    if args.json:
        sys.stdout.write(json.dumps({
            "modules": [{"path": p, "lines": n} for p, n in modules],
            "functions": [{"where": w, "lines": n} for w, n in functions],
            "import_cycles": [list(c) for c in cycles],
        }, indent=2) + "\n")
        return 0
    print("largest modules (lines):")
    print("\n".join(f"  {n:5d}  {p}" for p, n in modules))
    print("largest functions (lines):")
    print("\n".join(f"  {n:5d}  {w}" for w, n in functions))
    print(f"import circles: {len(cycles)}")
    for cycle in cycles:
        print("  " + " <-> ".join(cycle))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
