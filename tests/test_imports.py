"""Import boundaries: models stay light, and 'gen --version' imports no heavy dependency."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from gen import __version__ as VERSION
from tests.helpers import REPO, copy_fleet


def _modules_after(code: str) -> tuple[set[str], str]:
    """Run ``code`` in a fresh interpreter; return the modules loaded at exit and stdout."""
    probe = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: sys.stderr.write(\n"
        "    '\\nMODULES=' + json.dumps(sorted(sys.modules))))\n"
        + code
    )
    proc = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True,
                          text=True, check=False, timeout=60)
    marker = proc.stderr.rsplit("MODULES=", 1)
    assert len(marker) == 2, proc.stderr
    return {m.split(".")[0] for m in json.loads(marker[1])}, proc.stdout


def test_models_import_no_jinja_click_or_subprocess() -> None:
    """Importing gen.models loads neither jinja2, click nor subprocess."""
    modules, _ = _modules_after("import gen.models\n")
    assert "gen" in modules and "pydantic" in modules
    assert modules.isdisjoint({"jinja2", "click", "subprocess"}), (
        modules & {"jinja2", "click", "subprocess"}
    )


def test_version_imports_nothing_but_gen() -> None:
    """'gen --version' is answered before click or any dependency is imported."""
    modules, stdout = _modules_after(
        "sys.argv = ['gen', '--version']\nfrom gen._entry import main\nmain()\n"
    )
    assert stdout == f"gen {VERSION}\n"
    assert modules.isdisjoint({"click", "jinja2", "pydantic", "yaml", "rich"}), (
        modules & {"click", "jinja2", "pydantic", "yaml", "rich"}
    )


def test_cli_group_imports_no_jinja_pydantic_or_yaml() -> None:
    """Help and other group options load click but no sub-command's dependencies."""
    modules, stdout = _modules_after(
        "sys.argv = ['gen', '--help']\nfrom gen._entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
    )
    assert stdout.startswith("Usage: gen")
    assert "click" in modules
    assert modules.isdisjoint({"jinja2", "pydantic", "yaml"}), (
        modules & {"jinja2", "pydantic", "yaml"}
    )


def test_module_and_console_script_agree() -> None:
    """``python -m gen --version`` prints what click's version option prints."""
    proc = subprocess.run([sys.executable, "-m", "gen", "--version"], cwd=REPO,
                          capture_output=True, text=True, check=True, timeout=60)
    assert proc.stdout == f"gen {VERSION}\n"


def test_import_gen_loads_no_cli_template_or_progress_library() -> None:
    """'import gen' (the library API) loads neither click, jinja2 nor rich."""
    modules, _ = _modules_after("import gen\n")
    assert modules.isdisjoint({"click", "jinja2", "rich"}), modules & {"click", "jinja2", "rich"}


def test_public_api_names_resolve_lazily() -> None:
    """Every name in gen.__all__ resolves; an unknown one is an AttributeError."""
    import pytest

    import gen
    from gen.errors import GenError
    from gen.pipeline import render

    assert gen.render is render and gen.GenError is GenError
    for name in gen.__all__:
        assert getattr(gen, name) is not None, name
    assert set(gen.__all__) <= set(dir(gen))
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = gen.nothing


def test_public_api_lints_and_checks_the_example_fleet(tmp_path: Path) -> None:
    """The module docstring's calls work on the example fleet: lint, then render --check."""
    import gen

    root = copy_fleet(tmp_path)
    shutil.copytree(REPO / "out", root / "out")
    # out/ is rendered with templates/ beside profiles/ (as 'gen render' finds it there):
    # the render-cache records hash that override folder too.
    shutil.copytree(REPO / "templates", root / "templates")
    findings = gen.lint(root / "profiles", base=root)
    assert not [f for f in findings if f.severity is gen.Severity.ERROR]
    result = gen.render(root / "profiles", root / "out", check=True, base=root,
                        templates_dir=root / "templates")
    assert result.changes.empty and result.objects > 0
