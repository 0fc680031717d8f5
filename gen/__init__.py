"""gen: validated GitOps manifests for GPU inference fleets, as a library.

The command line is a thin layer over these functions::

    from pathlib import Path
    import gen

    findings = gen.lint(Path("profiles"))                 # every lint rule; writes nothing
    result = gen.render(Path("profiles"), Path("out"))   # render, validate, write out/
    result = gen.render(Path("profiles"), Path("out"), check=True)  # compare only

    try:
        gen.render(Path("profiles"), Path("out"))
    except gen.GenError as err:                           # every error gen reports
        for finding in err.findings:
            print(finding.format())

Errors are :class:`GenError` subclasses carrying :class:`Finding` objects (file, line,
column, rule id, message, hint); nothing here prints or exits. Importing ``gen`` is cheap:
each name is loaded on first use, and none of them needs click or rich.
"""

from __future__ import annotations

from gen._version import __version__ as __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing: 'gen --version' stays fast
if TYPE_CHECKING:
    from typing import Any

    from gen.errors import (
        Finding,
        GenError,
        LintError,
        ManifestValidationError,
        ProfileError,
        Severity,
        SourceLocation,
        StaleOutputError,
    )
    from gen.fleet.plan import ClusterPlan, Plan
    from gen.pipeline import RenderResult, lint, load_plan, render

__all__ = [
    "ClusterPlan",
    "Finding",
    "GenError",
    "LintError",
    "ManifestValidationError",
    "Plan",
    "ProfileError",
    "RenderResult",
    "Severity",
    "SourceLocation",
    "StaleOutputError",
    "__version__",
    "lint",
    "load_plan",
    "render",
]

_HOME = {
    "lint": "gen.pipeline",
    "load_plan": "gen.pipeline",
    "render": "gen.pipeline",
    "RenderResult": "gen.pipeline",
    "Plan": "gen.fleet.plan",
    "ClusterPlan": "gen.fleet.plan",
    "Finding": "gen.errors",
    "GenError": "gen.errors",
    "LintError": "gen.errors",
    "ManifestValidationError": "gen.errors",
    "ProfileError": "gen.errors",
    "Severity": "gen.errors",
    "SourceLocation": "gen.errors",
    "StaleOutputError": "gen.errors",
}
"""Public name → the module that defines it (imported on first use)."""


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'gen' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
