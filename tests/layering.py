"""The layering rule of ``gen/``, as data, and a checker of the import graph against it.

Layers, lowest first: ``LAYERS`` (a pattern ending in ``.*`` names a package and everything
under it, any other pattern one module; the longest matching pattern wins). The layer table of
``docs/architecture.md`` is generated from it (:func:`layer_table`)::

    python -m tests.layering --table    # rewrite the table in docs/architecture.md
    python -m tests.layering --check    # exit 1 when the committed table differs

The rule:

1. a module may import modules of its own layer and of layers of a lower rank;
2. two layers of the same rank are siblings and must not import each other
   (capabilities and emit: a builder does not render, the renderer knows no capability);
3. inside the capabilities layer a module may import only modules of its own capability
   package; capabilities meet in the fleet layer (the Plan) and in the pipeline.

Facts modules therefore import only kernel, models and facts, and a facts module of one
capability is free for every other capability to use (``gen.dra.simulate`` reads the
GPU catalog and the MIG placement rules of ``gen.nvidia``).

Every import counts: module level, inside functions, under ``if TYPE_CHECKING:``, and
relative imports (resolved against the importing module). ``from pkg import name`` is an
edge to ``pkg.name`` when that is a module, else to ``pkg``. Imports through
``importlib.import_module`` with a string are not seen (only the CLI's lazy command table
uses one, and the CLI may import anything).
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "BEGIN",
    "CAPABILITIES",
    "END",
    "FACTS",
    "LAYERS",
    "OWN_PACKAGE_ONLY",
    "PAGE",
    "Edge",
    "Layer",
    "Violation",
    "check_tree",
    "classify",
    "import_cycles",
    "import_graph",
    "layer_table",
    "unclassified",
    "violations",
]


@dataclass(frozen=True)
class Layer:
    """One layer: its name, its rank (lower is more basic) and the modules it holds."""

    name: str
    rank: int
    patterns: tuple[str, ...]
    doc: str


FACTS = (
    "gen.nvidia.gpus",  # the GPU catalog: PCI ids, product names, memory, MIG profiles
    "gen.nvidia.mig",  # MIG placement rules: which layouts a GPU can physically hold
    "gen.nvidia.dynamic",  # dynamic MIG: Kubernetes and DRA driver versions and gates
    "gen.serving.model_catalog",  # the model catalog (architecture numbers)
    "gen.serving.param_count",  # a model's exact parameter count from its architecture
    "gen.serving.hf_files",  # a model's Hugging Face files on disk: config, index, headers
    "gen.serving.hf_config",  # a model's numbers from its Hugging Face files (offline)
    "gen.serving.memory",  # vLLM's memory arithmetic, term by term, with sources
    "gen.serving.memory_profiles",  # vLLM's memory accounting by release range, with sources
    "gen.serving.config",  # the serving settings and the fit question, as records
    "gen.serving.budget",  # the per-GPU budget's numbers, and the prose made from them
    "gen.serving.fit",  # the memory budget of a model on a device (pure arithmetic)
    "gen.serving.engines",  # engine images and their CUDA driver minimums
    "gen.serving.vllm_releases",  # vLLM's facts by release: options, choices, defaults, tiers
    "gen.serving.image",  # the image a service runs and the release it reads from it
    "gen.apple.chips",  # the Apple chip catalog and llama.cpp / krunkit facts
    "gen.security.podsecurity",  # the Pod Security Standards as rules over a pod spec
    "gen.routing.picker",  # llm-d-router's endpoint picker at the pinned release
)
"""Pure knowledge modules inside capability packages: they import only kernel, models and
other facts, and any layer above may use them."""

CAPABILITIES = (
    "gen.nvidia.*",
    "gen.dra.*",
    "gen.serving.*",
    "gen.apple.*",
    "gen.gitops.*",
    "gen.security.*",
    "gen.routing.*",
    "gen.kueue.*",
)
"""The capability packages; a module of one imports no non-facts module of another."""

LAYERS = (
    Layer("kernel", 0, ("gen._version", "gen._data", "gen.caches", "gen.errors", "gen.redact",
                        "gen.rules", "gen.pins", "gen.k8s.*"),
          "the version, gen's data files, the cache registry, the error tree, redaction, the "
          "rule registry, the upstream pins, Kubernetes value types and version facts"),
    Layer("models", 1, ("gen.models.*",), "the profile kinds (pydantic)"),
    Layer("facts", 2, FACTS,
          "the knowledge modules of the capabilities (catalogs and physical rules), free for "
          "every layer above"),
    Layer("fleet", 3, ("gen.fleet.*",),
          "load, resolve, the Plan, and what capabilities share: names (`manifests`), "
          "placement and sizing (which devices a service can land on, and whether its model "
          "fits there), the generated-file header (`generated`)"),
    Layer("capabilities", 4, CAPABILITIES,
          "every other module of these packages (builders and checks), one package per "
          "capability"),
    Layer("emit", 4, ("gen.emit.*",), "render, YAML, validate, write, parallel"),
    Layer("pipeline", 5, ("gen.pipeline", "gen._render_task"),
          "the façade and the capability registry; the render's worker task"),
    Layer("verify", 5, ("gen.verify.*",),
          "`gen verify`, out/ and the built Plan against a live cluster (read-only; the only "
          "code that talks to a cluster, through the `kubernetes` client imported lazily)"),
    Layer("api", 6, ("gen",), "the package root, the public library API"),
    Layer("cli", 7, ("gen.cli.*", "gen._entry", "gen._noop", "gen.__main__"),
          "the command line: parse options, call the library, format, exit"),
)
"""The layers of gen/, lowest first."""

OWN_PACKAGE_ONLY = "capabilities"
"""The layer whose modules import, of their own layer, only their own package (rule 3)."""


@dataclass(frozen=True)
class Edge:
    """One import: ``importer`` imports ``target`` at ``line`` of ``path``."""

    importer: str
    target: str
    path: Path
    line: int


@dataclass(frozen=True)
class Violation:
    """An import the layering rule forbids (or a module no layer holds)."""

    edge: Edge
    reason: str

    def __str__(self) -> str:
        return f"{self.edge.path}:{self.edge.line}: {self.edge.importer} -> {self.edge.target}: " \
            f"{self.reason}"


def _matches(pattern: str, module: str) -> bool:
    if pattern.endswith(".*"):
        package = pattern[:-2]
        return module == package or module.startswith(package + ".")
    return module == pattern


def classify(module: str, layers: Iterable[Layer] = LAYERS) -> tuple[Layer, str] | None:
    """The layer of a module and the pattern that placed it there (the longest match)."""
    best: tuple[Layer, str] | None = None
    for layer in layers:
        for pattern in layer.patterns:
            if _matches(pattern, module) and (best is None or len(pattern) > len(best[1])):
                best = (layer, pattern)
    return best


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules(root: Path) -> dict[str, Path]:
    return {_module_name(root, p): p for p in sorted(root.rglob("*.py"))}


def _resolve_from(module: str, is_package: bool, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    package = module.split(".") if is_package else module.split(".")[:-1]
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def import_graph(root: Path) -> list[Edge]:
    """Every import between modules of the package at ``root`` (e.g. ``.../gen``)."""
    modules = _modules(root)
    top = root.name
    edges: list[Edge] = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve_from(module, is_package, node)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    targets.append(sub if sub in modules else base)
            else:
                continue
            for target in targets:
                if (target == top or target.startswith(top + ".")) and target != module:
                    edges.append(Edge(module, target, path, node.lineno))
    return sorted(set(edges), key=lambda e: (e.importer, e.line, e.target))


def _capability(pattern: str) -> str:
    return pattern.removesuffix(".*")


def violations(edges: Iterable[Edge], layers: Iterable[Layer] = LAYERS) -> list[Violation]:
    """The edges the layering rule forbids, with the reason for each."""
    layers = tuple(layers)
    found: list[Violation] = []
    for edge in edges:
        source = classify(edge.importer, layers)
        target = classify(edge.target, layers)
        if source is None or target is None:
            missing = edge.importer if source is None else edge.target
            found.append(Violation(edge, f"{missing} is in no layer"))
            continue
        (src_layer, src_pattern), (dst_layer, dst_pattern) = source, target
        if dst_layer.rank > src_layer.rank:
            found.append(Violation(
                edge, f"{src_layer.name} must not import the higher layer {dst_layer.name}"))
        elif dst_layer.rank == src_layer.rank and dst_layer.name != src_layer.name:
            found.append(Violation(
                edge, f"{src_layer.name} and {dst_layer.name} are sibling layers: "
                "neither imports the other"))
        elif src_layer.name == dst_layer.name == OWN_PACKAGE_ONLY \
                and src_pattern != dst_pattern:
            found.append(Violation(
                edge, f"capability {_capability(src_pattern)} must not import capability "
                f"{_capability(dst_pattern)} (they meet in gen.fleet and gen.pipeline)"))
    return found


def unclassified(modules: Iterable[str], layers: Iterable[Layer] = LAYERS) -> list[str]:
    """Modules that no layer holds."""
    layers = tuple(layers)
    return [m for m in modules if classify(m, layers) is None]


def check_tree(root: Path, layers: Iterable[Layer] = LAYERS) -> list[str]:
    """Every breach of the rule in the package at ``root``, one line each (empty: none)."""
    layers = tuple(layers)
    lines = [f"{m} is in no layer" for m in unclassified(_modules(root), layers)]
    lines += [str(v) for v in violations(import_graph(root), layers)]
    return lines


PAGE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
BEGIN = "<!-- generated by python -m tests.layering --table from tests/layering.py: do not edit -->"
END = "<!-- end of the generated layer table -->"


def _may_import(layer: Layer, layers: tuple[Layer, ...]) -> str:
    lower = [other.name for other in layers if other.rank < layer.rank]
    siblings = [other.name for other in layers
                if other.rank == layer.rank and other.name != layer.name]
    text = ", ".join(lower) or "—"
    if siblings:
        text += "; not " + ", ".join(siblings)
    if layer.name == OWN_PACKAGE_ONLY:
        text += "; of its own layer only its own package's modules"
    return text


def layer_table(layers: Iterable[Layer] = LAYERS) -> str:
    """The Markdown table of the layers, lowest first, as docs/architecture.md shows it."""
    layers = tuple(layers)
    lines = ["| rank | layer | modules | may also import |", "| ---: | --- | --- | --- |"]
    for layer in layers:
        modules = ", ".join(f"`{p.removesuffix('.*')}`" for p in layer.patterns)
        lines.append(f"| {layer.rank} | {layer.name} | {modules} — {layer.doc} | "
                     f"{_may_import(layer, layers)} |")
    return "\n".join(lines) + "\n"


def _with_table(page: str, table: str) -> str:
    start, end = page.find(BEGIN), page.find(END)
    if start < 0 or end < start:
        raise ValueError(f"{PAGE.name} lacks the markers {BEGIN!r} ... {END!r}")
    return page[:start + len(BEGIN)] + "\n\n" + table + "\n" + page[end:]


def _main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.layering",
                                     description="the layer table of docs/architecture.md")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--table", action="store_true", help="rewrite the table in the page")
    action.add_argument("--check", action="store_true", help="exit 1 when the page differs")
    args = parser.parse_args(argv)
    page = PAGE.read_text(encoding="utf-8")
    wanted = _with_table(page, layer_table())
    if args.check:
        if wanted != page:
            print(f"{PAGE} is stale: run python -m tests.layering --table", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(wanted, encoding="utf-8")
    return 0


def import_cycles(edges: Iterable[Edge]) -> list[tuple[str, ...]]:
    """The import circles among ``edges``: each strongly connected set of two or more
    modules (every import counts, ``TYPE_CHECKING`` and function-level ones too), sorted,
    in name order. Empty when the graph has no cycle."""
    graph: dict[str, set[str]] = {}
    for edge in edges:
        graph.setdefault(edge.importer, set()).add(edge.target)
        graph.setdefault(edge.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[tuple[str, ...]] = []

    def visit(node: str) -> None:  # Tarjan's algorithm; the graph is a few hundred nodes
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(tuple(sorted(component)))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
