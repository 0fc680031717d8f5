"""Every name one gen module imports from another is in that module's ``__all__``: the
public surface each module declares is the one the others use."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import NamedTuple

import gen
from tests.layering import _modules, _resolve_from

GEN = Path(gen.__file__).resolve().parent

SCOPE = ("gen.emit",)
"""The packages whose modules are held to it (importer or imported inside one). Outside
it about a hundred imports still name what a module does not export (``gen.models._types``
and ``gen.models._base`` most of them)."""

KNOWN = frozenset({
    ("gen.emit.kubeconform", "gen.emit.validate", "_is_schema_file"),
    ("gen.emit.kubeconform", "gen.emit.validate", "_schema_file"),
    ("gen.emit.kubeconform", "gen.emit.validate", "_schema_root"),
})
"""(importer, module, name) of the imports inside the scope that are not fixed yet: the
schema files kubeconform shares with the embedded validator."""


class Use(NamedTuple):
    """``importer`` (at ``line``) imports ``name`` from ``module``."""

    importer: str
    line: int
    module: str
    name: str


def imported_names(root: Path = GEN) -> list[Use]:
    """Every ``from <gen module> import <name>`` in the package at ``root`` whose name is
    not itself a module."""
    modules = _modules(root)
    uses: list[Use] = []
    for importer, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            module = _resolve_from(importer, path.name == "__init__.py", node)
            if module not in modules or module == importer:
                continue
            uses.extend(Use(importer, node.lineno, module, alias.name) for alias in node.names
                        if f"{module}.{alias.name}" not in modules)
    return uses


def _in_scope(use: Use) -> bool:
    return any(m == p or m.startswith(p + ".") for m in (use.importer, use.module)
               for p in SCOPE)


def _unexported(uses: list[Use]) -> list[Use]:
    """The uses of a name its module's ``__all__`` does not list (a dunder is no API)."""
    found = []
    for use in uses:
        exported = getattr(importlib.import_module(use.module), "__all__", None)
        dunder = use.name.startswith("__") and use.name.endswith("__")
        if not dunder and (exported is None or use.name not in exported):
            found.append(use)
    return found


def test_every_imported_name_is_exported() -> None:
    missing = _unexported([use for use in imported_names() if _in_scope(use)])
    assert [f"{u.importer}:{u.line}: {u.name} from {u.module}" for u in missing
            if (u.importer, u.module, u.name) not in KNOWN] == []
    assert {(u.importer, u.module, u.name) for u in missing} == KNOWN  # fixed: drop it


def test_the_scan_sees_the_imports() -> None:
    """The scan finds a known import, so an empty result means something."""
    assert ("gen.emit.output", "gen.emit.cache.fleet", "FleetRecord") in {
        (u.importer, u.module, u.name) for u in imported_names()}
