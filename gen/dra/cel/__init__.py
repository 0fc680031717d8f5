"""DRA device selectors compiled and evaluated the way Kubernetes does (cel-expr-python).

Public API (stable; other capabilities call it):

* :func:`compile_selector` ``(expression, kubernetes_version=None, consumable_capacity=None)``
  → :class:`CompiledSelector` (``.cost``, ``.evaluate(device)``), or
  :class:`gen.errors.CELCompileError` with Kubernetes' wording. ``kubernetes_version``
  (``'1.34'``, ``'v1.34.2'``, ``34``) compiles as that version's API server does for a *new*
  object (the previous minor's environment); None is the newest environment gen knows.
  ``consumable_capacity`` is the cluster's DRAConsumableCapacity gate (None: its default at
  that version, :func:`consumable_capacity_default`): on, ``device`` has the bool field
  ``allowMultipleAllocations``.
* :func:`evaluate` ``(expression, device, kubernetes_version=None, consumable_capacity=None)``
  → :class:`SelectorResult` (``matched``, ``error``): run-time errors are data, never
  exceptions.
* :func:`kubernetes_minor` parses a version (:mod:`gen.k8s.versions`);
  :func:`explain_miss` / :func:`diagnose_miss` say why a device is not selected.

The environment is Kubernetes' DRA selector environment (kubernetes/dynamic-resource-allocation
``cel/compile.go``@v0.36.0) on top of the versioned base environment (:mod:`._versions`):
one variable ``device`` with ``driver`` (string), ``attributes`` (domain → name → value),
``capacity`` (domain → name → quantity) and, with DRAConsumableCapacity,
``allowMultipleAllocations`` (bool); Kubernetes' quantity, semver, list, regex, URL, IP,
CIDR and format libraries; the strings (version 2), sets and lists (version 3) extensions,
two-variable comprehensions, optionals and ``cel.bind``; the compile-time validators of
literals and aggregates (:mod:`._validate`).

Kubernetes semantics kept:

* an unknown attribute or capacity *domain* is an empty map; an unknown *key* is the run-time
  error ``no such key: X``; ``'d' in device.attributes`` sees only the device's real domains;
* the result must be a bool or an attribute value (Kubernetes' unknown type): anything else,
  ``dyn`` included, is a compile error; a non-bool attribute is a run-time error ("CEL result
  of type X could not be converted to bool");
* expressions longer than 10 Ki (10240 UTF-8 bytes, Go's ``len``) are rejected before compiling;
* an estimated cost above 1,000,000 is rejected at compile time ("too complex, exceeds cost
  limit"), see :mod:`gen.dra.cel._cost`. At run time cel-expr-python's comprehension iteration
  budget (:data:`ITERATION_BUDGET` iterations per evaluation, fixed in the binding) stops a
  loop that Kubernetes would run: the error (:data:`BUDGET_MESSAGE`) says that gen, not
  Kubernetes, stopped it. Every error the binding raises becomes a :class:`CELCompileError`
  or :class:`CELRuntimeError`.

How the pieces fit: :mod:`gen.dra.cel._library` holds a typed checker environment and an untyped
runtime environment (cel-expr-python cannot pass Python objects through CEL values), built
from the libraries of :mod:`gen.dra.cel._libraries` (one module per Kubernetes library);
:mod:`gen.dra.cel._ast` reads the parsed AST; the source is rewritten so that
``device.attributes[D]`` runs as ``device.attributes[?D].orValue({})`` (the empty-map default).
"""

from __future__ import annotations

from gen.dra.cel._engine import (
    BUDGET_MESSAGE,
    CONSUMABLE_CAPACITY,
    ITERATION_BUDGET,
    MAX_COST,
    MAX_EXPRESSION_LENGTH,
    CompiledSelector,
    SelectorResult,
    compile_selector,
    consumable_capacity_default,
    evaluate,
)
from gen.dra.cel._explain import Miss, diagnose_miss, explain_miss
from gen.k8s.versions import kubernetes_minor

__all__ = [
    "BUDGET_MESSAGE",
    "CONSUMABLE_CAPACITY",
    "ITERATION_BUDGET",
    "MAX_COST",
    "MAX_EXPRESSION_LENGTH",
    "CompiledSelector",
    "Miss",
    "SelectorResult",
    "compile_selector",
    "consumable_capacity_default",
    "diagnose_miss",
    "evaluate",
    "explain_miss",
    "kubernetes_minor",
]
