"""The built-in templates: every expression goes through tojson; every template parses."""

from __future__ import annotations

from pathlib import Path

import jinja2
import pytest

from gen.emit.render import BUILTIN_TEMPLATES, make_environment
from gen.emit.skeleton import EXPRESSION, TOJSON_LAST, is_plain

TEMPLATES = sorted(BUILTIN_TEMPLATES.rglob("*.j2"))
IDS = [p.relative_to(BUILTIN_TEMPLATES).as_posix() for p in TEMPLATES]
SAFE = TOJSON_LAST


def test_there_are_templates() -> None:
    """The scan below sees the built-in templates."""
    assert len(TEMPLATES) >= 10


@pytest.mark.parametrize("path", TEMPLATES, ids=IDS)
def test_every_expression_ends_with_tojson(path: Path) -> None:
    """Every {{ ... }} in a built-in template ends with |tojson, so no value can change YAML."""
    text = path.read_text(encoding="utf-8")
    bad = [m.strip() for m in EXPRESSION.findall(text) if not SAFE.match(m.strip())]
    assert bad == [], f"{path.name}: expressions without a final |tojson: {bad}"


@pytest.mark.parametrize("path", TEMPLATES, ids=IDS)
def test_every_builtin_template_is_plain(path: Path) -> None:
    """Built-ins take the cached-skeleton path (gen.emit.skeleton): values only via tojson."""
    assert is_plain(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", TEMPLATES, ids=IDS)
def test_templates_compile(path: Path) -> None:
    """Every built-in template compiles in gen's environment."""
    env = make_environment()
    env.get_template(path.relative_to(BUILTIN_TEMPLATES).as_posix())


def test_scan_rejects_unsafe_expressions() -> None:
    """The scan's pattern refuses expressions that end in another filter or have none."""
    for ok in ("name|tojson", "x|string|tojson", 'w|default("-10")|tojson', "a.b | tojson"):
        assert SAFE.match(ok), ok
    for bad in ("name", "name|tojson|upper", "name|upper", "a ~ b|tojson", "'x' + y|tojson"):
        assert not SAFE.match(bad), bad


def test_environment_settings() -> None:
    """The environment is strict, unescaped and keeps trailing newlines."""
    env = make_environment()
    assert env.undefined is jinja2.StrictUndefined
    assert env.autoescape is False
    assert env.keep_trailing_newline and env.trim_blocks and env.lstrip_blocks
