"""A selector past cel-expr-python's iteration budget, evaluated element by element.

cel-expr-python stops an evaluation after 10,000 comprehension iterations (cel-cpp's
``comprehension_max_iterations``, which the binding does not expose); Kubernetes bounds a
selector by its cost only. A selector whose whole expression is a quantifier over a list
(``L.all(x, P)``, ``L.exists(x, P)``, ``L.exists_one(x, P)``) is run here as one program per
element, ``cel.bind(x, (L)[i], P)``, each with a budget of its own, and the results are
combined as cel-go's macros combine them (google/cel-go ``parser/macro.go``@v0.29.2:
``all`` folds with ``&&``, ``exists`` with ``||``, both absorbing an error when another
element decides the result; ``exists_one`` counts, and an error ends it).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from gen.dra.cel._ast import Node, ParsedAST
from gen.dra.cel._source import matching_bracket

__all__ = ["QUANTIFIERS", "Quantifier", "split_quantifier"]

QUANTIFIERS = ("all", "exists", "exists_one")

_MACRO = re.compile(r"\.\s*(all|exists_one|exists)\s*$")


class Quantifier:
    """A root quantifier: the macro, its range's text, its variable and its body's text."""

    def __init__(self, macro: str, range_text: str, variable: str, body: str) -> None:
        self.macro = macro
        self.range_text = range_text
        self.variable = variable
        self.body = body

    def size_expression(self) -> str:
        """The selector-shaped expression whose error or result gives the range's size."""
        return f"({self.range_text}).size()"

    def element(self, index: int) -> str:
        """The body run on element ``index``."""
        return f"cel.bind({self.variable}, ({self.range_text})[{index}], {self.body})"

    def decides(self, result: bool | str) -> bool:
        """Whether one element's result ends the fold as cel-go's loop condition does
        (``all`` at a false, ``exists`` at a true; ``exists_one`` runs to the end)."""
        return self.macro != "exists_one" and result is (self.macro == "exists")

    def combine(self, results: list[bool | str]) -> bool | str:
        """The macro's result from each element's (a bool, or the text of its error)."""
        if self.macro == "exists_one":
            count = 0
            for result in results:
                if isinstance(result, str):
                    return result
                count += result
            return count == 1
        decisive = self.macro == "exists"  # the value that ends the fold
        if decisive in results:
            return decisive
        errors = [r for r in results if isinstance(r, str)]
        return errors[0] if errors else not decisive


def split_quantifier(
    expression: str, ast: ParsedAST, start_of: Callable[[Node], int]
) -> Quantifier | None:
    """The root quantifier of ``expression`` over a list, or None when the root is
    anything else (``start_of`` gives where a node's text starts)."""
    root = ast.root
    if root.kind != "comp" or len(root.iter_vars) != 1 or "#unused" in root.iter_vars:
        return None
    paren = ast.positions.get(root.id, -1)
    macro = _MACRO.search(expression, 0, max(paren, 0))
    close = matching_bracket(expression, paren) if paren >= 0 else None
    if macro is None or close is None or expression[close + 1 :].strip():
        return None
    first = min((start_of(n) for n in root.children[0].walk()), default=-1)
    if not 0 <= first < macro.start() or expression[:first].strip("( \t\r\n"):
        return None  # the receiver is the start of the expression (with its parentheses)
    range_text = expression[: macro.start()].strip()
    arguments = expression[paren + 1 : close]
    variable, comma, body = arguments.partition(",")
    if not comma or variable.strip() != root.iter_vars[0]:
        return None
    return Quantifier(macro[1], range_text, variable.strip(), body.strip())
