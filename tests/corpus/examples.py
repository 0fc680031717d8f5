"""docs/lint-examples.md: one example per rule, taken from the corpus (its first firing case).

``python -m tests.corpus.examples > docs/lint-examples.md``; tests/corpus/test_examples.py
keeps the committed page equal to this output, and the corpus test checks each example's
location, so the page shows, for every rule, a change and the line gen reports it at.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from gen.rules import RULES
from tests.corpus.test_corpus import CASES, NOT_FROM_PROFILES, NOT_YET, Case


def _code(text: str) -> str:
    shown = text.replace("\n", "⏎").replace("|", "\\|")
    if len(shown) > 90:
        shown = shown[:87] + "…"
    tick = "``" if "`" in shown else "`"
    return f"{tick}{shown}{tick}" if shown.strip() else "(nothing)"


def _edit(edit: Mapping[str, Any]) -> str:
    file = f"`{edit['file']}`"
    if "replace" in edit:
        return f"{file}: {_code(edit['replace'])} → {_code(edit['with'])}"
    if "append" in edit:
        return f"{file}: append {_code(edit['append'])}"
    if "write" in edit:
        return f"new {file}: {_code(edit['write'])}"
    if "symlink" in edit:
        return f"{file}: a symbolic link to `{edit['symlink']}`"
    return f"{file}: deleted"


def _where(case: Case) -> str:
    expect = case.expect or {}
    if expect.get("file") is None:
        return {"check": "`gen render --check`", "render": "`gen render`",
                "cel": "`gen cel eval`"}.get(case.mode, "(no file)")
    if "at" in expect:
        return f"`{expect['file']}`, the line with {_code(expect['at'])}"
    line = expect.get("line", 0)
    return f"`{expect['file']}`" + (f", line {line}" if line else " (the file)")


def examples_markdown(cases: Iterable[Case] = CASES) -> str:
    """The page: per rule, the change of its first firing case and where gen reports it."""
    first: dict[str, Case] = {}
    for each in cases:
        if each.expect is not None and not each.xfail:
            first.setdefault(each.expect["rule"], each)
    lines = [
        "# Lint rules by example",
        "",
        "For every rule, one change to the example fleet (`profiles/`) and where `gen lint`",
        "reports it: the line to edit. Generated from the test corpus (`tests/corpus/`), whose",
        "tests check each of these locations; regenerate with",
        "`python -m tests.corpus.examples > docs/lint-examples.md`.",
        "[lint-rules.md](lint-rules.md) says what each rule means.",
        "",
        "| rule | change | reported at |",
        "| --- | --- | --- |",
    ]
    for rule_id, rule in RULES.items():
        case = first.get(rule_id)
        if case is None:
            lines.append(f"| `{rule_id}` {rule.title} | — | not reachable from profiles: "
                         f"{NOT_FROM_PROFILES.get(rule_id) or NOT_YET.get(rule_id, 'no example')}"
                         " |")
            continue
        change = "; ".join(_edit(e) for e in case.edits) if case.edits else (
            f"`{case.cel['expression']}`" if case.cel else "(none)")
        if case.setup:
            files = ", ".join(f"`{f}`" for f in dict.fromkeys(e["file"] for e in case.setup))
            change = (f"(set up: {files}, as in [cases/{case.group}.yaml]"
                      f"(../tests/corpus/cases/{case.group}.yaml)) {change}")
        lines.append(f"| `{rule_id}` {rule.title} | {change} | {_where(case)} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(examples_markdown(), end="")
