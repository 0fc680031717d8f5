"""Import boundaries: models stay light, and 'gen --version' imports no heavy dependency."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import REPO


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


def test_version_imports_no_jinja_pydantic_or_yaml() -> None:
    """'gen --version' runs without importing jinja2, pydantic or yaml."""
    modules, stdout = _modules_after(
        "sys.argv = ['gen', '--version']\nfrom gen.cli import main\nmain()\n"
    )
    assert stdout.startswith("gen ")
    assert "click" in modules
    assert modules.isdisjoint({"jinja2", "pydantic", "yaml"}), (
        modules & {"jinja2", "pydantic", "yaml"}
    )
