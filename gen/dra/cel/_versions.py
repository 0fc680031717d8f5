"""Which CEL functions a DRA selector may use, by Kubernetes version: data from upstream.

Kubernetes builds its CEL environment from *versioned options*
(kubernetes/apiserver ``pkg/cel/environment/base.go`` @ v0.37.2, the staging copy of
kubernetes/kubernetes ``staging/src/k8s.io/apiserver/pkg/cel/environment/base.go`` @ v1.37.2,
built with cel-go v0.29.2 by its ``go.mod``):
each library or language option has an ``IntroducedVersion``. An API server keeps two
environments (``EnvSet``): **stored expressions** get every option the binary knows;
**new expressions** get only the options introduced at or before its *compatibility
version*, which is the previous minor (``DefaultCompatibilityVersion`` =
``MinCompatibilityVersion`` of the binary), so that a rollback by one minor still accepts
every stored object. DRA compiles a request or class selector on create with
``environment.NewExpressions`` (kubernetes/kubernetes ``pkg/apis/resource/validation/
validation.go`` @ v1.37.2, ``validateCELExpression``) and skips the check for stored ones.

gen lints what a user is about to apply, so it uses **new expressions**: a cluster running
1.N accepts a function introduced at 1.(N−1) or earlier. The DRA additions (the ``device``
variable, ``cel.bind``, the semver library) are introduced at 1.31 in
kubernetes/dynamic-resource-allocation ``cel/compile.go`` @ v0.37.2 and were in the DRA
environment from its first release (1.0 in ``cel/compile.go`` @ v0.31.0), so every cluster
gen renders DRA for has them.

1.37 adds Kubernetes' list library version 1 (``includes``; the version-0 library is removed
at 1.37 and replaced by it); the 1.38 pre-release (``base.go`` @ v0.38.0-beta.0) adds options
introduced at 1.38 only (CIDR library version 1, optional types version 2), which a new object
may use from 1.39.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from gen.dra.cel._ast import Node

__all__ = [
    "FEATURES",
    "Feature",
    "features_used",
    "first_new_object_minor",
    "unavailable",
]

TWO_VARIABLE = "two-variable comprehensions"
"""A macro, not a call: found as a comprehension with two iteration variables."""

BASE_GO = (
    "kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/cel/environment/base.go@v1.37.2"
)


@dataclass(frozen=True)
class Feature:
    """One versioned option of Kubernetes' CEL base environment."""

    name: str
    introduced: int
    """The ``IntroducedVersion`` minor (Kubernetes 1.x) in base.go; 0 for 1.0."""
    functions: frozenset[str] = frozenset()
    """Function names as written: ``isSorted``; a namespaced one as ``sets.contains``."""
    implemented: bool = True
    """False where gen cannot compile the feature (docs/cel.md, Deviations)."""
    arity: int | None = None
    """Only calls with this many arguments (receiver not counted) belong to the feature."""


FEATURES: tuple[Feature, ...] = (
    Feature(
        "Kubernetes' list library", 0,
        frozenset({"isSorted", "sum", "min", "max", "indexOf", "lastIndexOf"}),
    ),
    Feature("Kubernetes' regex library", 0, frozenset({"find", "findAll"})),
    Feature(
        "Kubernetes' URL library", 0,
        frozenset({"url", "isURL", "getScheme", "getHost", "getHostname", "getPort",
                   "getEscapedPath", "getQuery"}),
    ),
    Feature(
        "Kubernetes' quantity library", 28,
        frozenset({"quantity", "isQuantity", "sign", "isInteger", "asInteger",
                   "asApproximateFloat", "add", "sub"}),
    ),
    Feature(
        "optional types", 28,
        frozenset({"optional.of", "optional.ofNonZeroValue", "optional.none", "hasValue",
                   "orValue", "_?._", "_[?_]"}),
    ),
    Feature("the strings extension, version 2", 29, frozenset({"format", "strings.quote", "join"})),
    Feature(
        "the sets extension", 29,
        frozenset({"sets.contains", "sets.equivalent", "sets.intersects"}),
    ),
    Feature(
        "Kubernetes' IP library", 30,
        frozenset({"ip", "isIP", "ip.isCanonical", "family", "isUnspecified", "isLoopback",
                   "isLinkLocalMulticast", "isLinkLocalUnicast", "isGlobalUnicast"}),
    ),
    Feature(
        "Kubernetes' CIDR library", 30,
        frozenset({"cidr", "isCIDR", "containsIP", "containsCIDR", "prefixLength", "masked"}),
    ),
    Feature(
        "Kubernetes' format library", 31,
        frozenset({f"format.{n}" for n in (
            "named", "dns1123Label", "dns1123Subdomain", "dns1035Label", "qualifiedName",
            "dns1123LabelPrefix", "dns1123SubdomainPrefix", "dns1035LabelPrefix",
            "labelValue", "uri", "uuid", "byte", "date", "datetime",
        )} | {"validate"}),
    ),
    Feature(
        TWO_VARIABLE, 32,
        frozenset({"all", "exists", "existsOne", "exists_one", "transformList", "transformMap",
                   "transformMapEntry"}),
    ),
    Feature(
        "the semver library's normalize overloads", 33,
        frozenset({"semver", "isSemver"}), arity=2,
    ),
    Feature(
        "the lists extension, version 3", 34,
        frozenset({"slice", "flatten", "lists.range", "distinct", "reverse", "sort",
                   "sortBy", "first", "last"}),
    ),
    Feature("Kubernetes' list library, version 1", 37, frozenset({"includes"})),
)


def first_new_object_minor(feature: Feature) -> int:
    """The first Kubernetes minor whose API server accepts the feature in a new object
    (0: every version with CEL, for a feature of the 1.0 base)."""
    return feature.introduced + 1 if feature.introduced else 0


def _call_name(node: Node) -> str:
    target = node.target
    if target is not None and target.kind == "ident" and target.name in {
        "sets", "lists", "format", "optional", "ip", "strings"
    }:
        return f"{target.name}.{node.name}"
    return node.name


_MACRO_NAME = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*$")


def features_used(
    root: Node, source: str = "", positions: dict[int, int] | None = None
) -> Iterator[tuple[Feature, str, Node]]:
    """Each (feature, function as written, call or comprehension node) a parsed expression
    uses; ``source`` and ``positions`` name the macro of a two-variable comprehension."""
    for node in root.walk():
        if node.kind == "comp" and len(node.iter_vars) == 2:
            offset = (positions or {}).get(node.id, 0)
            match = _MACRO_NAME.search(source[:offset])
            feature = next(f for f in FEATURES if f.name == TWO_VARIABLE)
            yield feature, match[1] if match else "all", node
            continue
        if node.kind != "call":
            continue
        name = _call_name(node)
        arity = len(node.args)
        for feature in FEATURES:
            if name in feature.functions and feature.arity in (None, arity):
                yield feature, name, node


def unavailable(
    root: Node, minor: int | None, source: str = "", positions: dict[int, int] | None = None
) -> list[tuple[Feature, str, Node]]:
    """The uses whose feature gen cannot compile, or that a ``1.minor`` cluster lacks.

    ``minor`` None means the newest environment: only unimplemented features count.
    """
    out = []
    for feature, name, node in features_used(root, source, positions):
        too_new = minor is not None and first_new_object_minor(feature) > minor
        if too_new or not feature.implemented:
            out.append((feature, name, node))
    return out
