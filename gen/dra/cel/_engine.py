"""Compile and evaluate selectors: the core behind :mod:`gen.dra.cel`."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel

from gen.caches import memoize, once
from gen.dra.cel._ast import ParsedAST, decode_parsed_expr
from gen.dra.cel._cost import estimate_cost
from gen.dra.cel._library import checker_env, device_data, runtime_env
from gen.dra.cel._source import matching_bracket
from gen.dra.devices import Device
from gen.errors import CELCompileError, CELRuntimeError

__all__ = [
    "BUDGET_MESSAGE",
    "ITERATION_BUDGET",
    "MAX_COST",
    "MAX_EXPRESSION_LENGTH",
    "CompiledSelector",
    "SelectorResult",
    "compile_selector",
    "evaluate",
]

MAX_EXPRESSION_LENGTH = 10 * 1024
MAX_COST = 1_000_000
ITERATION_BUDGET = 10_000
"""cel-expr-python's comprehension budget: iterations per evaluation, all comprehensions
together (cel-cpp's ``comprehension_max_iterations``; the binding does not expose it)."""

BUDGET_MESSAGE = (
    f"gen's CEL evaluator (cel-expr-python) stopped this selector after {ITERATION_BUDGET:,} "
    "comprehension iterations in one evaluation; this is a limit of gen, not of Kubernetes "
    "(the API server bounds a selector by its cost, which this one is within), so gen cannot "
    "tell what it selects: reduce the nested list sizes or iterations"
)


@once
def _envs() -> tuple[Any, Any]:
    return checker_env(), runtime_env()


# What cel-expr-python's compile and eval raise besides returning an error value: an absl
# status as RuntimeError ("INTERNAL: Iteration budget exceeded"), and what a Python function
# extension or the pybind11 conversion lets through.
_BINDING_ERRORS = (RuntimeError, ValueError, TypeError, OverflowError, MemoryError, RecursionError)

NESTING_MESSAGE = (
    "the expression nests deeper than gen's CEL parser (cel-expr-python) allows (32 levels of "
    "operators, calls or literals); this is a limit of gen, not of Kubernetes (cel-go allows "
    "250): split the expression or use cel.bind"
)

_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX = re.compile(r"\s*\[[A-Z_]+\]$")
_RUNTIME_MESSAGES = (
    (re.compile(r'Key not found in map : "?(.*?)"?$'), r"no such key: \1"),
    (re.compile(r"No matching overloads found : (.*)$"), r"no such overload: \1"),
    (re.compile(r"^Iteration budget exceeded$"), BUDGET_MESSAGE),
    (
        re.compile(
            r"(?s)^(?:ERROR: <input>:-1:-1: )?(?:Exceeded max recursion depth of (\d+) when "
            r"parsing\.|Expression recursion limit exceeded\. limit: (\d+)).*$"
        ),
        NESTING_MESSAGE,
    ),
    (re.compile(r"divide by zero"), "division by zero"),
)


def _clean(message: str) -> str:
    text = _STATUS_SUFFIX.sub("", _STATUS_PREFIX.sub("", str(message).strip()))
    for pattern, replacement in _RUNTIME_MESSAGES:
        text, count = pattern.subn(replacement, text)
        if count:
            break
    return text


_DEVICE_SELECT = re.compile(
    r"<input>:(\d+):(\d+): expression of type 'kubernetes\.DRADevice' cannot be the operand "
    r"of a select operation"
)


def _compile_message(expression: str, message: str) -> str:
    """cel-go's wording for a misspelt device field: ``undefined field 'drivr'``."""
    text = _clean(message)
    match = _DEVICE_SELECT.search(text)
    if match is not None:
        lines = expression.split("\n")
        line, column = int(match[1]), int(match[2])
        rest = lines[line - 1][column - 1 :] if 0 < line <= len(lines) else ""
        field_name = re.match(r"\.\s*([A-Za-z_][A-Za-z0-9_]*)", rest)
        if field_name is not None:
            text = text.replace(
                match[0], f"<input>:{line}:{column}: undefined field '{field_name[1]}'"
            )
    return f"compilation failed: {text}"


def _type_name(cel_type: Any) -> str:
    name = str(cel_type.name()) if hasattr(cel_type, "name") else str(cel_type)
    return name.lower() if name.isupper() else name


def _domain_default_source(expression: str, ast: ParsedAST) -> str:
    """Rewrite ``device.attributes[D]`` / ``device.capacity[D]`` to default to an empty map."""
    inserts: list[tuple[int, str]] = []
    for node in ast.root.walk():
        if node.kind != "call" or node.name != "_[_]" or len(node.args) != 2:
            continue
        operand = node.args[0]
        if not (
            operand.kind == "select"
            and operand.name in {"attributes", "capacity"}
            and operand.children[0].kind == "ident"
            and operand.children[0].name == "device"
        ):
            continue
        start = ast.positions.get(node.id, -1)
        if not 0 <= start < len(expression) or expression[start] != "[":
            continue
        end = matching_bracket(expression, start)
        if end is None:
            continue
        inserts += [(start + 1, "?"), (end + 1, ".orValue({})")]
    text = expression
    for offset, piece in sorted(inserts, reverse=True):
        text = text[:offset] + piece + text[offset:]
    return text


@dataclass(frozen=True)
class CompiledSelector:
    """A selector that compiles; :meth:`evaluate` runs it on one device."""

    expression: str
    cost: int = field(default=0, compare=False)
    _program: Any = field(default=None, repr=False, compare=False)

    def evaluate(self, device: Device) -> bool:
        """The selector's result on ``device``; raises :class:`CELRuntimeError`."""
        try:
            value = self._program.eval(_activation(device))
        except _BINDING_ERRORS as err:
            # cel-expr-python raises RuntimeError (an absl status) for errors outside CEL's
            # error values: the iteration budget, internal limits.
            text = _clean(str(err))
            raise CELRuntimeError(
                text if text == BUDGET_MESSAGE else f"CEL runtime error: {text}"
            ) from None
        kind = value.type()
        if kind == cel.Type.BOOL:
            return bool(value.value())
        if kind == cel.Type.ERROR:
            raise CELRuntimeError(f"CEL runtime error: {_clean(value.value())}")
        raise CELRuntimeError(
            f"CEL result of type {_type_name(kind)} could not be converted to bool"
        )


@memoize(maxsize=4096)
def _activation(device: Device) -> Any:
    return _envs()[1].Activation({"device": device_data(device)})


@memoize(maxsize=4096)
def compile_selector(expression: str) -> CompiledSelector:
    """Compile a selector as the apiserver validates it; raises :class:`CELCompileError`."""
    try:
        size = len(expression.encode("utf-8"))
    except UnicodeEncodeError as err:
        raise CELCompileError(
            f"compilation failed: the expression is not valid UTF-8 (a lone surrogate at "
            f"character {err.start + 1})"
        ) from None
    if size > MAX_EXPRESSION_LENGTH:
        raise CELCompileError(
            f"Too long: may not be more than {MAX_EXPRESSION_LENGTH} bytes (got {size})"
        )
    checker, runtime = _envs()
    try:
        checked = checker.compile(expression)
    except _BINDING_ERRORS as err:
        raise CELCompileError(_compile_message(expression, str(err))) from None
    try:
        result_type = checked.return_type()
    except _BINDING_ERRORS as err:
        # The binding cannot express some checked types in Python ("Unsupported map key type:
        # kubernetes.Quantity"); none of them is bool.
        raise CELCompileError(
            f"must evaluate to bool or the unknown type, not a type gen cannot name "
            f"({_clean(str(err))})"
        ) from None
    if not (result_type == cel.Type.BOOL or result_type == cel.Type.DYN):
        raise CELCompileError(
            f"must evaluate to bool or the unknown type, not {_type_name(result_type)}"
        )
    try:
        ast = decode_parsed_expr(runtime.compile(expression, disable_check=True).serialize())
    except _BINDING_ERRORS as err:  # ASTDecodeError is a ValueError
        raise CELCompileError(f"compilation failed: {_clean(str(err))}") from None
    cost = estimate_cost(ast.root)
    if cost > MAX_COST:
        raise CELCompileError(
            f"too complex, exceeds cost limit (estimated cost {cost} > {MAX_COST})"
        )
    try:
        program = runtime.compile(_domain_default_source(expression, ast), disable_check=True)
    except _BINDING_ERRORS as err:
        raise CELCompileError(f"compilation failed: {_clean(str(err))}") from None
    return CompiledSelector(expression, cost, program)


@dataclass(frozen=True)
class SelectorResult:
    """The outcome on one device: matched, or the run-time error that stopped it."""

    matched: bool
    error: str | None = None


def evaluate(expression: str, device: Device) -> SelectorResult:
    """Run ``expression`` on ``device``; run-time errors become ``SelectorResult.error``.

    Raises :class:`CELCompileError` when the expression does not compile.
    """
    selector = compile_selector(expression)
    try:
        return SelectorResult(selector.evaluate(device))
    except CELRuntimeError as err:
        return SelectorResult(False, err.message)
