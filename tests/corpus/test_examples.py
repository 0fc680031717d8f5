"""docs/lint-examples.md is the page tests/corpus/examples.py generates from the corpus."""

from __future__ import annotations

from gen.rules import RULES
from tests.corpus.examples import examples_markdown
from tests.helpers import REPO


def test_committed_page_is_generated() -> None:
    """Regenerate with: python -m tests.corpus.examples > docs/lint-examples.md"""
    committed = (REPO / "docs" / "lint-examples.md").read_text(encoding="utf-8")
    assert committed == examples_markdown()


def test_every_rule_has_a_row() -> None:
    """One row per rule id."""
    page = examples_markdown()
    assert all(f"| `{rule}` " in page for rule in RULES)
