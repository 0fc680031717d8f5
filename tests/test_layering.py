"""The layering of gen/: capabilities do not import each other; lower layers import no higher.

The rule, as data (the layers, their ranks and modules, the facts modules free for every
layer above, the capability packages), lives in :mod:`tests.layering` with the checker;
its docstring states the rule. In short, lowest first: kernel (gen._version, gen.errors,
gen.rules, gen.k8s) < models < facts (catalogs and physical rules inside capability
packages) < fleet (load, resolve, the Plan, shared names and placement) < capabilities |
emit (siblings: neither imports the other) < pipeline < gen (the public API) < cli.
A module imports its own layer and lower ones; a capability module imports non-facts
modules only of its own capability package.

These tests check the real tree (no import circles either; docs/architecture.md's layer
table is the one :func:`tests.layering.layer_table` generates), and check on synthetic
trees that the checker does fail (a capability importing another capability's builder, inside
a function, under TYPE_CHECKING, or relatively), so a passing run means something.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import REPO, write_tree
from tests.layering import (
    BEGIN,
    CAPABILITIES,
    END,
    FACTS,
    LAYERS,
    check_tree,
    classify,
    import_cycles,
    import_graph,
    layer_table,
)

GEN = REPO / "gen"


def test_the_tree_keeps_the_layering() -> None:
    """No import in gen/ breaks the rule, and every module is in a layer."""
    assert check_tree(GEN) == []


def test_gen_has_no_import_circles() -> None:
    """No module of gen/ reaches itself through its imports (every kind of import counts)."""
    assert import_cycles(import_graph(GEN)) == []


def _module(path: Path) -> str:
    parts = list(path.relative_to(GEN.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST) -> Iterator[tuple[frozenset[str], ast.Import | ast.ImportFrom]]:
    """Each import statement with where it sits: in a function, under TYPE_CHECKING."""

    def walk(node: ast.AST, where: frozenset[str]) -> Iterator[
            tuple[frozenset[str], ast.Import | ast.ImportFrom]]:
        for child in ast.iter_child_nodes(node):
            inner = where
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                inner = where | {"in a function"}
            elif isinstance(child, ast.If) and ast.unparse(child.test) == "TYPE_CHECKING":
                inner = where | {"under TYPE_CHECKING"}
            if isinstance(child, ast.Import | ast.ImportFrom):
                yield where, child
            yield from walk(child, inner)

    yield from walk(tree, frozenset())


def _is_module(dotted: str) -> bool:
    path = GEN.parent.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def test_the_checker_sees_every_kind_of_import_in_the_real_tree() -> None:
    """Every import of gen in gen/, read here from the source on its own, is an edge of the
    graph at its line: module-level, function-level, TYPE_CHECKING, ``from package import
    module`` (an edge to the module) and a package's ``__init__``; each kind occurs."""
    edges = {(e.importer, e.line, e.target) for e in import_graph(GEN)}
    lines = {(importer, line) for importer, line, _ in edges}
    kinds: dict[str, int] = {}
    for path in sorted(GEN.rglob("*.py")):
        module = _module(path)
        for where, node in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                named = [a.name for a in node.names if a.name.split(".")[0] == "gen"]
            else:
                named = [node.module] if node.level == 0 and node.module and \
                    node.module.split(".")[0] == "gen" else []
            if not named or named == [module]:
                continue
            found = set(where) or {"module level"}
            if path.name == "__init__.py":
                found.add("in a package's __init__")
            assert (module, node.lineno) in lines, (module, node.lineno)
            if isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    if _is_module(f"{node.module}.{alias.name}"):
                        found.add("from a package, a module")
                        assert (module, node.lineno, f"{node.module}.{alias.name}") in edges
            for kind in found:
                kinds[kind] = kinds.get(kind, 0) + 1
    assert set(kinds) == {"module level", "in a function", "under TYPE_CHECKING",
                          "from a package, a module", "in a package's __init__"}, kinds


def test_the_architecture_page_shows_the_generated_layer_table() -> None:
    """docs/architecture.md's layer table is layer_table()'s: ``python -m tests.layering
    --table`` rewrites it."""
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert page.count(BEGIN) == page.count(END) == 1
    assert page[page.index(BEGIN) + len(BEGIN):page.index(END)].strip() == \
        layer_table().strip()


def test_every_facts_module_and_capability_exists() -> None:
    """The rule table names real modules (a rename must update it)."""
    edges = import_graph(GEN)
    modules = {e.importer for e in edges} | {e.target for e in edges}
    for name in FACTS:
        assert name in modules, name
    for pattern in CAPABILITIES:
        assert (GEN / pattern.removesuffix(".*").removeprefix("gen.")).is_dir(), pattern


def test_the_longest_pattern_decides_the_layer() -> None:
    """A facts module inside a capability package is a fact, its neighbours capability."""
    by_name = {layer.name: layer for layer in LAYERS}
    assert classify("gen.nvidia.gpus") == (by_name["facts"], "gen.nvidia.gpus")
    assert classify("gen.nvidia.build") == (by_name["capabilities"], "gen.nvidia.*")
    assert classify("gen") == (by_name["api"], "gen")
    assert classify("gen.stray") is None


def _tree(root: Path, files: dict[str, str]) -> Path:
    """A package gen/ under root with the given modules (and every __init__.py)."""
    base = {"gen/__init__.py": ""}
    for rel in files:
        parts = Path(rel).parts
        for i in range(1, len(parts) - 1):
            base.setdefault("/".join((*parts[:i + 1], "__init__.py")), "")
    write_tree(root, {**base, **files})
    return root / "gen"


BUILDERS = {
    "gen/dra/build.py": "def claim_template_name() -> str:\n    return 'x'\n",
    "gen/fleet/plan.py": "",
    "gen/emit/output.py": "GENERATED_COMMENT = ''\n",
    "gen/nvidia/gpus.py": "",
}


def test_a_capability_importing_another_capabilitys_builder_fails(tmp_path: Path) -> None:
    """The synthetic bad graph: serving's builder imports the DRA builder inside a function."""
    root = _tree(tmp_path, {**BUILDERS, "gen/serving/build.py": """\
        def name() -> str:
            from gen.dra.build import claim_template_name

            return claim_template_name()
        """})
    (line,) = check_tree(root)
    assert "gen.serving.build -> gen.dra.build" in line
    assert "capability gen.serving must not import capability gen.dra" in line
    assert line.startswith(f"{root / 'serving' / 'build.py'}:2:")


@pytest.mark.parametrize(("module", "source", "reason"), [
    ("gen/serving/build.py",
     "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from gen.dra import build\n",
     "capability gen.serving must not import capability gen.dra"),
    ("gen/serving/build.py", "from ..dra.build import claim_template_name\n",
     "capability gen.serving must not import capability gen.dra"),
    ("gen/nvidia/mig_svg.py", "from gen.emit.output import GENERATED_COMMENT\n",
     "capabilities and emit are sibling layers"),
    ("gen/emit/render.py", "import gen.dra.build\n", "emit and capabilities are sibling layers"),
    ("gen/nvidia/mig.py", "from gen.fleet import plan\n",
     "facts must not import the higher layer fleet"),
    ("gen/errors.py", "import gen\n", "kernel must not import the higher layer api"),
    ("gen/stray.py", "", "gen.stray is in no layer"),
])
def test_each_kind_of_breach_fails(
    tmp_path: Path, module: str, source: str, reason: str,
) -> None:
    root = _tree(tmp_path, {**BUILDERS, module: source})
    lines = check_tree(root)
    assert len(lines) == 1 and reason in lines[0], lines


@pytest.mark.parametrize(("module", "source"), [
    ("gen/dra/simulate.py", "from gen.nvidia.gpus import GPU\n"),  # another capability's fact
    ("gen/dra/checks.py", "from . import build\nfrom .build import claim_template_name\n"),
    ("gen/emit/render.py", "from gen.fleet import plan\n"),
    ("gen/pipeline.py", "from gen.dra import build\nfrom gen.emit import output\n"),
    ("gen/cli/__init__.py", "import gen\nfrom gen.pipeline import x\n"),
])
def test_allowed_imports_pass(tmp_path: Path, module: str, source: str) -> None:
    files = {**BUILDERS, module: source}
    if "gen.pipeline" in source:
        files["gen/pipeline.py"] = ""
    assert check_tree(_tree(tmp_path, files)) == []


def test_import_cycles_finds_every_circle_and_only_circles(tmp_path: Path) -> None:
    """A two-module circle, a three-module one (one edge under TYPE_CHECKING, one inside a
    function), and a chain that is no circle."""
    write_tree(tmp_path, {
        "gen/__init__.py": "",
        "gen/a.py": "from gen import b\n",
        "gen/b.py": "def f() -> None:\n    import gen.a\n",
        "gen/c.py": ("from typing import TYPE_CHECKING\n"
                     "if TYPE_CHECKING:\n    from gen.d import x\n"),
        "gen/d.py": "from gen.e import y\nx = 1\n",
        "gen/e.py": "from gen import c\ny = 2\n",
        "gen/f.py": "from gen import a\n",
    })
    assert import_cycles(import_graph(tmp_path / "gen")) == [
        ("gen.a", "gen.b"), ("gen.c", "gen.d", "gen.e")]
