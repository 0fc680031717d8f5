"""The two cel-expr-python environments: a typed one to check, an untyped one to run.

cel-expr-python (0.1.3) cannot carry a Python object through CEL: a function declared to
return an abstract type such as ``kubernetes.Quantity`` fails at run time ("Unimplemented
type"). So the Kubernetes types live twice:

* the **checker** environment declares ``kubernetes.Quantity``, ``kubernetes.Semver`` and
  ``kubernetes.DRADevice`` as abstract types, with Kubernetes' overloads, so type errors are
  compile errors as in Kubernetes (``quantity('1') < 2``, ``device.driver == 1``);
* the **runtime** environment is untyped (every overload takes ``dyn``): expressions are
  compiled with ``disable_check=True`` and a quantity or semver travels as a one-entry map
  (``{"kubernetes.Quantity": "85520809984"}``) that the Python implementations unwrap. The
  key is the exact normalised value, so CEL's own ``==`` on two carriers is Kubernetes'
  semantic ``Quantity.Equal`` / ``Semver.Equal``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from decimal import Decimal
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from gen.caches import memoize
from gen.dra.cel._libraries import format, ip, lists, quantity, regex, semver, sets, urls
from gen.dra.cel._libraries._base import BOOL, DYN, LIST_DYN, STR, Declarations, Overload
from gen.dra.cel._libraries._carriers import QUANTITY, quantity_carrier, semver_carrier
from gen.dra.cel._libraries.comprehensions import ITERABLE, iterable, map_insert
from gen.dra.cel._libraries.equality import (
    KUBERNETES_EQUALS,
    KUBERNETES_IN,
    KUBERNETES_NOT_EQUALS,
    kubernetes_equal,
    kubernetes_in,
    kubernetes_not_equal,
)
from gen.dra.cel._libraries.lists import TIME_LIST_FUNCTIONS, duration_sum, time_extreme
from gen.dra.cel._libraries.strings import IMPLEMENTATIONS as STRING_FUNCTIONS
from gen.dra.cel._libraries.strings import RUNTIME_NAMES as STRING_RUNTIME_NAMES
from gen.dra.devices import Device
from gen.k8s.quantity import QuantityFormat, format_quantity, int64_amount, parse_quantity
from gen.k8s.semver import Version

__all__ = [
    "LIBRARIES",
    "MEMBER_FUNCTIONS",
    "TWO_VARIABLE_COMPREHENSIONS",
    "checker_env",
    "device_data",
    "runtime_env",
    "runtime_implementations",
]

_DEVICE = cel.Type.AbstractType("kubernetes.DRADevice")

LIBRARIES: tuple[Declarations, ...] = (
    quantity.DECLARATIONS,
    semver.DECLARATIONS,
    lists.DECLARATIONS,
    regex.DECLARATIONS,
    sets.DECLARATIONS,
    ip.DECLARATIONS,
    urls.DECLARATIONS,
    format.DECLARATIONS,
)
"""The libraries declared as plain functions, in the order their overloads are merged (a
name two libraries declare, such as ``compareTo``, gets the overloads of both)."""


_STANDARD_MEMBERS = frozenset({
    # The standard library's member functions (google/cel-spec langdef.md).
    "size", "contains", "startsWith", "endsWith", "matches", "getFullYear", "getMonth",
    "getDayOfYear", "getDayOfMonth", "getDate", "getDayOfWeek", "getHours", "getMinutes",
    "getSeconds", "getMilliseconds",
    # The strings extension, version 2 (google/cel-go ext/strings.go@v0.29.2).
    "charAt", "indexOf", "lastIndexOf", "lowerAscii", "replace", "split", "substring", "trim",
    "upperAscii", "join", "format",
    # The lists extension, version 3 (ext/lists.go) and optional types (cel/library.go).
    "slice", "flatten", "distinct", "reverse", "sort", "sortBy", "first", "last",
    "hasValue", "value", "orValue", "or",
})


def _merged(libraries: Iterable[Declarations]) -> dict[str, list[Overload]]:
    out: dict[str, list[Overload]] = {}
    for library in libraries:
        for name, overloads in library.items():
            out.setdefault(name, []).extend(overloads)
    return out


def runtime_implementations(
    name: str, overloads: Iterable[Overload]
) -> dict[tuple[int, bool], Callable[..., Any]]:
    """(arity, member) → the one implementation the untyped runtime runs for ``name``.

    Raises :class:`ValueError` when two overloads of one arity and receiver kind have
    different implementations: the runtime could run only one of them.
    """
    out: dict[tuple[int, bool], Callable[..., Any]] = {}
    for overload in overloads:
        key = (len(overload.params), overload.member)
        if out.setdefault(key, overload.impl) is not overload.impl:
            raise ValueError(
                f"{name}: overload {overload.id} has an implementation of its own, but the "
                f"runtime keeps one per arity and receiver ({key[0]}, member={key[1]})"
            )
    return out


TWO_VARIABLE_COMPREHENSIONS = cel.NewEnvConfigFromYaml(
    "extensions:\n- name: two-var-comprehensions\n- name: lists\n  version: 2\n"
)
"""cel-cpp's two-variable comprehension macros and declarations (cel-go's
``ext.TwoVarComprehensions``) and its lists extension version 2 (``slice``, ``flatten``,
``lists.range``, ``distinct``, ``reverse``, ``sort``, ``sortBy``), which cel-expr-python
compiles in but does not expose as extension classes; the runtime half of the comprehensions,
``cel.@mapInsert``, is gen's (:func:`~gen.dra.cel._libraries.comprehensions.map_insert`)."""
_LISTS = cel.NewEnvConfigFromYaml("extensions:\n- name: lists\n  version: 2\n")


def _standard_extensions() -> list[cel.CelExtensionBase]:
    # Kubernetes' base environment uses ext.Strings version 2.
    return [
        ext_strings.ExtStrings(version=2),
        ext_optional.ExtOptional(),
        ext_bindings.ExtBindings(),
    ]


def _decls(library: Declarations) -> list[cel.FunctionDecl]:
    return [
        cel.FunctionDecl(name, [cel.Overload(o.id, o.returns, o.params, is_member=o.member)
                                for o in overloads])
        for name, overloads in library.items()
    ]


def checker_env(consumable_capacity: bool = True) -> cel.Env:
    """The typed environment: Kubernetes' declarations, never evaluated.

    ``consumable_capacity``: whether the DRAConsumableCapacity feature gate is on, which adds
    the bool field ``device.allowMultipleAllocations`` (kubernetes/dynamic-resource-allocation
    ``cel/compile.go`` @ v0.36.2: ``deviceTypeV134ConsumableCapacity`` replaces
    ``deviceTypeV131`` when ``Features.EnableConsumableCapacity``).
    """
    attr_map = cel.Type.Map(STR, cel.Type.Map(STR, DYN))
    cap_map = cel.Type.Map(STR, cel.Type.Map(STR, QUANTITY))
    variables = {
        "device": _DEVICE,
        "device.driver": STR,
        "device.attributes": attr_map,
        "device.capacity": cap_map,
    }
    if consumable_capacity:
        variables["device.allowMultipleAllocations"] = BOOL
    # Declared as plain functions, not an extension: an extension would also register lazy
    # run-time overloads, and those collide (both abstract types are "opaque" at run time).
    # The list search functions must be an extension after the strings one
    # (lists.SEARCH_DECLARATIONS).
    search = cel.CelExtension("kubernetes.lists", _decls(lists.SEARCH_DECLARATIONS))
    return cel.NewEnv(
        config=TWO_VARIABLE_COMPREHENSIONS,
        variables=variables,
        extensions=[*_standard_extensions(), search],
        functions=_decls(_merged(LIBRARIES)),
    )


def runtime_env() -> cel.Env:
    """The untyped environment selectors run in; every Kubernetes overload takes ``dyn``."""
    decls = []
    for name, overloads in _merged(LIBRARIES).items():
        decls.append(
            cel.FunctionDecl(
                name,
                [
                    cel.Overload(
                        f"{name}_dyn_{n}{'_member' if member else ''}",
                        DYN,
                        [DYN] * n,
                        is_member=member,
                        impl=impl,
                    )
                    for (n, member), impl in runtime_implementations(name, overloads).items()
                ],
            )
        )
    for name, kinds in TIME_LIST_FUNCTIONS.items():
        for kind, runtime_name in kinds.items():
            if name == "sum" and kind == "timestamp":
                continue
            impl = duration_sum if name == "sum" else time_extreme(name)
            returns = cel.Type.DURATION if kind == "duration" else cel.Type.TIMESTAMP
            decls.append(cel.FunctionDecl(runtime_name, [
                cel.Overload(f"{runtime_name}_list", returns, [LIST_DYN], is_member=True,
                             impl=impl)
            ]))
    for name, overloads in lists.SEARCH_DECLARATIONS.items():
        (impl,) = runtime_implementations(name, overloads).values()
        decls.append(cel.FunctionDecl(name, [
            cel.Overload(f"{name}_list_dyn", DYN, [LIST_DYN, DYN], is_member=True, impl=impl)
        ]))
    for name, equality in (
        (KUBERNETES_EQUALS, kubernetes_equal),
        (KUBERNETES_NOT_EQUALS, kubernetes_not_equal),
        (KUBERNETES_IN, kubernetes_in),
    ):
        decls.append(cel.FunctionDecl(name, [
            cel.Overload(name.replace(".", "_"), BOOL, [DYN, DYN], impl=equality)
        ]))
    for name, impl in STRING_FUNCTIONS.items():
        runtime_name = STRING_RUNTIME_NAMES[name]
        decls.append(cel.FunctionDecl(runtime_name, [
            cel.Overload(f"{runtime_name}_{n}", DYN, [DYN] * (n + 1), is_member=True, impl=impl)
            for n in ((1,) if name == "charAt" else (1, 2))
        ]))
    decls.append(cel.FunctionDecl(ITERABLE, [
        cel.Overload(ITERABLE, DYN, [DYN], impl=iterable),
    ]))
    decls.append(cel.FunctionDecl("cel.@mapInsert", [
        cel.Overload("map_insert_key_value", DYN, [DYN, DYN, DYN], impl=map_insert),
        cel.Overload("map_insert_map", DYN, [DYN, DYN],
                     impl=lambda m, entries: map_insert(m, entries, pair=True)),
    ]))
    extensions = [*_standard_extensions(), cel.CelExtension("kubernetes", decls)]
    # No two-variable comprehension config here: it would declare cel.@mapInsert without an
    # implementation. Expressions are parsed by the checker environment (which has the
    # macros) and deserialized here.
    return cel.NewEnv(config=_LISTS, variables={"device": DYN}, extensions=extensions)


def _split_name(qualified: str, driver: str) -> tuple[str, str]:
    # Kubernetes' parseQualifiedName: split at the first "/"; no domain means the driver's.
    domain, sep, name = qualified.partition("/")
    return (domain, name) if sep else (driver, qualified)


def device_data(device: Device) -> dict[str, object]:
    """The runtime value of ``device``: driver, attributes and capacity by domain, then name."""
    attributes: dict[str, dict[str, object]] = {}
    for qualified, value in device.attributes.items():
        domain, name = _split_name(qualified, device.driver)
        cel_value: object = semver_carrier(value) if isinstance(value, Version) else value
        attributes.setdefault(domain, {})[name] = cel_value
    capacity: dict[str, dict[str, object]] = {}
    for qualified, amount in device.capacity.items():
        domain, name = _split_name(qualified, device.driver)
        # Stored as ParseQuantity stores the canonical text gen publishes (BinarySI).
        capacity.setdefault(domain, {})[name] = _capacity_carrier(amount)
    return {"driver": device.driver, "allowMultipleAllocations": device.allow_multiple_allocations,
            "attributes": attributes, "capacity": capacity}


@memoize(maxsize=4096)
def _capacity_carrier(amount: Decimal) -> dict[str, str]:
    text = format_quantity(amount, QuantityFormat.BINARY_SI)
    return quantity_carrier(parse_quantity(text), int64_amount(text))


MEMBER_FUNCTIONS: frozenset[str] = _STANDARD_MEMBERS | frozenset(
    name for name, overloads in _merged(LIBRARIES).items() if any(o.member for o in overloads)
)
"""The member functions gen's checker declares: a call of one with arguments none of its
overloads takes is cel-go's "found no matching overload" (cel-cpp says "undeclared
reference")."""
