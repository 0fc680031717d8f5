"""Satisfiability of DRA claims against the devices the node pools publish.

For every service of a DRA cluster and every choice of its claim (the first choice, then
each alternative), on each pool the service may run on (:mod:`gen.dra.simulate` devices):

* which device shapes pass the class selectors (:func:`gen.dra.selectors.class_cel`) and the
  request selectors, in the allocator's order, stopping at the first false (GEN204 names
  the nearest misses, GEN206 a selector that errors at run time: the allocator aborts on it,
  so a pool where a selector errors cannot host the claim);
* how many replicas one node holds, by the allocator's search (:mod:`gen.dra.allocator`):
  ``count`` matching devices (``All``: every one), for ``same`` (matchAttribute) devices
  sharing the value, within the node's shared counters. Claims are exclusive: gen renders a
  ResourceClaimTemplate, so every pod gets its own claim, and time-slicing/MPS sharing only
  shares one claim's devices between its containers (kubernetes-sigs/dra-driver-nvidia-gpu
  ``api/nvidia.com/resource/v1beta1`` and ``demo/specs/quickstart/v1/gpu-test2.yaml``@2240711).

Whether the cluster holds every replica at once is :mod:`gen.dra.capacity`'s.

Selectors are evaluated once per (selector, device shape) by a :class:`Matcher`, whose
``evaluations`` counter shows it: a 1000-node pool costs what a 1-node pool costs.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import NamedTuple

from gen.dra.allocator import ClaimShape, NodeState, PoolModel, SubRequest, fill, pool_model
from gen.dra.cel import BUDGET_MESSAGE, Miss, SelectorResult, compile_selector, diagnose_miss
from gen.dra.devices import Device, ShapeKey
from gen.dra.simulate import NodeInventory, node_inventory, shape_summary
from gen.errors import CELCompileError, CELRuntimeError, Finding, Severity, SourceLocation
from gen.fleet.plan import ClusterPlan, PoolPlan, ServicePlan
from gen.fleet.roles import workloads
from gen.models import GPUClass
from gen.rules import finding

__all__ = [
    "Choice",
    "ChoiceAnalysis",
    "ClusterAnalysis",
    "Matcher",
    "PoolAnalysis",
    "Rejection",
    "Selector",
    "ShapeVerdict",
    "analyze_choice",
    "analyze_cluster",
    "analyze_service",
    "choices",
    "nvidia_pools",
]

_MAX_MISSES = 3


@dataclass
class Matcher:
    """Evaluates selectors once per (selector, device shape) and counts the evaluations."""

    evaluations: int = 0
    _results: dict[tuple[str, ShapeKey], SelectorResult] = field(default_factory=dict)
    _reasons: dict[tuple[str, ShapeKey], _Reason] = field(default_factory=dict)
    _inventories: dict[tuple[object, ...], NodeInventory] = field(default_factory=dict)
    _models: dict[tuple[object, ...], PoolModel] = field(default_factory=dict)

    def result(self, expression: str, device: Device) -> SelectorResult:
        """The selector's outcome on the device's shape; raises CELCompileError."""
        key = (expression, device.shape_key())
        cached = self._results.get(key)
        if cached is None:
            selector = compile_selector(expression)
            self.evaluations += 1
            try:
                cached = SelectorResult(selector.evaluate(device))
            except CELRuntimeError as err:
                cached = SelectorResult(False, err.message)
            self._results[key] = cached
        return cached

    def reason(self, expression: str, device: Device) -> _Reason:
        """Why the selector rejects the device's shape, and how far it got (memoised)."""
        key = (expression, device.shape_key())
        known = self._reasons.get(key)
        if known is None:
            miss = diagnose_miss(expression, device)
            known = _Reason(0, "no match", None) if miss is None else _reason(miss)
            self._reasons[key] = known
        return known

    def inventory(self, pool: PoolPlan) -> NodeInventory:
        """The pool's node inventory, built once per distinct node hardware.

        Pools of equal hardware (in other clusters, too) share the shapes and slots; the
        inventory returned always carries ``pool`` itself.
        """
        key = _hardware(pool)
        inv = self._inventories.get(key)
        if inv is None:
            inv = self._inventories[key] = node_inventory(pool)
        return inv if inv.pool is pool else replace(inv, pool=pool)

    def model(self, pool: PoolPlan) -> PoolModel:
        """The allocator's model of the pool, built once per distinct node hardware."""
        key = _hardware(pool)
        model = self._models.get(key)
        if model is None:
            model = self._models[key] = pool_model(pool, self.inventory(pool))
        return model if model.pool is pool else replace(model, pool=pool,
                                                        inventory=self.inventory(pool))


def _hardware(pool: PoolPlan) -> tuple[object, ...]:
    """Everything :func:`gen.dra.simulate.node_inventory` reads from a pool, as a value."""
    spec = pool.pool
    return (pool.gpu, spec.platform, spec.driver_version, spec.gpus_per_node, spec.nodes,
            pool.mig_checks, spec.addressing_mode)


_CMP = re.compile(
    r"device\.(?:capacity|attributes)\[['\"][^'\"]+['\"]\]\.(?P<name>\w+)\.compareTo\("
    r"(?:quantity|semver)\(['\"](?P<limit>[^'\"]+)['\"]\)\) >= 0"
)
_EQ = re.compile(
    r"device\.attributes\[['\"][^'\"]+['\"]\]\.(?P<name>\w+) == (?P<want>'[^']*')"
)


class _Reason(NamedTuple):
    """Why a selector rejects a device shape."""

    depth: int
    """Index of the first false top-level ``&&`` operand: the higher, the nearer the miss."""
    text: str
    attribute: str | None
    """The device attribute the false term compares, when it is a compare of one value
    the device has (the term a class's ``match`` field writes)."""


def _reason(miss: Miss) -> _Reason:
    """``memory 81559Mi < 80Gi`` instead of the full false conjunct, where the false CEL
    source is a compare of one device value that the device has."""
    depth = miss.conjunct or 0
    if len(miss.reads) == 1 and miss.reads[0][1] is not None:
        name, value = miss.reads[0]
        match = _CMP.fullmatch(miss.source)
        if match is not None and match["name"] == name:
            return _Reason(depth, f"{name} {value} < {match['limit']}", name)
        match = _EQ.fullmatch(miss.source)
        if match is not None and match["name"] == name:
            return _Reason(depth, f"{name} {value} != {match['want']}", name)
    return _Reason(depth, miss.text, None)


class Selector(NamedTuple):
    """One selector of a choice, in allocator order."""

    label: str
    """``class 'h100' selector #0``, ``request selector #1``."""
    expression: str
    where: SourceLocation
    key_path: str
    """The class's ``match`` / ``cel[i]``, or the service's ``gpu.selectors[i]``."""


@dataclass(frozen=True)
class Choice:
    """One way to satisfy a claim: a class, a count, extra selectors (firstAvailable entry)."""

    label: str
    gpu_class: GPUClass
    count: int
    all_devices: bool
    selectors: tuple[Selector, ...]
    """In allocator order: class, then request."""
    where: SourceLocation
    key_path: str


def _class_selectors(cluster: ClusterPlan, gpu_class: GPUClass) -> list[Selector]:
    from gen.dra.selectors import class_cel

    located = cluster.gpu_classes[gpu_class.name]
    out = []
    for j, expression in enumerate(class_cel(gpu_class)):
        key = "match" if j == 0 else f"cel[{j - 1}]"
        where = located.at("match") if j == 0 else located.at("cel", j - 1)
        out.append(Selector(f"class {gpu_class.name!r} selector #{j}", expression, where, key))
    return out


def choices(cluster: ClusterPlan, svc: ServicePlan) -> list[Choice]:
    """The first choice and the alternatives of a service's claim."""
    gpu = svc.service.gpu
    if gpu is None or svc.gpu_class is None:
        return []
    request = [
        Selector(f"request selector #{j}", expr, svc.located.at("gpu", "selectors", j),
                 f"gpu.selectors[{j}]")
        for j, expr in enumerate(gpu.selectors)
    ]
    out = [Choice(
        "first choice", svc.gpu_class, gpu.count, gpu.allocation_mode == "All",
        (*_class_selectors(cluster, svc.gpu_class), *request),
        svc.located.at("gpu"), "gpu",
    )]
    for j, (gpu_class, count) in enumerate(svc.alternatives):
        out.append(Choice(
            f"alternative #{j}", gpu_class, count, False,
            tuple(_class_selectors(cluster, gpu_class)),
            svc.located.at("gpu", "alternatives", j), f"gpu.alternatives[{j}]",
        ))
    return out


@dataclass(frozen=True)
class Rejection:
    """Which selector rejects a device shape, and why."""

    selector: int
    """Index into :attr:`Choice.selectors`."""
    reason: str
    """For a person: ``memory 81559Mi < 80Gi``, or the false term with the values it reads."""
    depth: int = 0
    """Top-level ``&&`` operands of the rejecting selector that passed (nearness)."""
    attribute: str | None = None
    """The device attribute the false term compares, where it is one value compared."""
    error: str | None = None
    """The run-time error the selector raises (None: it is false)."""
    detail: str = ""
    """For an error: what gen knows about its cause (``the device has no ...``)."""


@dataclass(frozen=True)
class ShapeVerdict:
    """One device shape of a pool under one choice's selectors."""

    shape: int
    rejection: Rejection | None = None
    """None: every selector selects the shape."""

    @property
    def matched(self) -> bool:
        """Every selector selects the shape."""
        return self.rejection is None

    @property
    def error(self) -> str | None:
        """The run-time error of the rejecting selector, if any."""
        return self.rejection.error if self.rejection is not None else None


@dataclass(frozen=True)
class PoolAnalysis:
    """A choice on one pool: matches, misses and how many replicas one node holds."""

    inventory: NodeInventory
    verdicts: tuple[ShapeVerdict, ...]
    matching_per_node: int
    replicas_per_node: int
    why_not: str = ""

    @property
    def pool(self) -> PoolPlan:
        """The pool."""
        return self.inventory.pool

    @property
    def hosting_nodes(self) -> int:
        """Nodes that can host one replica."""
        return self.pool.pool.nodes if self.replicas_per_node else 0


@dataclass(frozen=True)
class ChoiceAnalysis:
    """One choice over every eligible pool; ``compiles`` is False when a selector does not."""

    choice: Choice
    pools: tuple[PoolAnalysis, ...]
    compiles: bool = True

    @property
    def satisfiable(self) -> bool:
        """Some node of some pool holds the whole claim."""
        return any(p.replicas_per_node for p in self.pools)


def _verdicts(matcher: Matcher, choice: Choice, inv: NodeInventory) -> list[ShapeVerdict]:
    out = []
    for i, shape in enumerate(inv.shapes):
        verdict = ShapeVerdict(i)
        for j, selector in enumerate(choice.selectors):
            result = matcher.result(selector.expression, shape.device)
            if result.error is not None or not result.matched:
                why = matcher.reason(selector.expression, shape.device)
                # the reason of an error is the error, then what gen knows of its cause
                detail = (why.text.removeprefix(result.error).lstrip(": ")
                          if result.error is not None else "")
                verdict = ShapeVerdict(i, Rejection(j, why.text, why.depth, why.attribute,
                                                    result.error, detail))
                break
        out.append(verdict)
    return out


def _per_node(model: PoolModel, matching: frozenset[int], choice: Choice,
              same: Sequence[str]) -> int:
    """How many copies of the choice's claim one empty node holds, by the allocator's search
    (one where the search gives up at once: the capacity rules say gen cannot tell)."""
    slots = tuple(s for s, (shape, _) in enumerate(model.inventory.slots) if shape in matching)
    claim = ClaimShape(model.name, "", (SubRequest(choice.label, choice.count,
                                                   choice.all_devices, slots),), tuple(same))
    filled = fill(model, NodeState.empty(model), claim, len(model.inventory.slots))
    return len(filled.steps) or int(filled.gave_up)


def _why_not(inv: NodeInventory, matching: frozenset[int], choice: Choice,
             same: Sequence[str]) -> str:
    per_node = sum(1 for shape, _ in inv.slots if shape in matching)
    if not per_node:
        return "no device matches"
    if choice.all_devices:
        return f"allocationMode All: the {per_node} matching devices do not share {', '.join(same)}"
    if per_node < choice.count:
        return f"needs {choice.count} devices on one node; a node has {per_node} matching"
    return (f"needs {choice.count} devices sharing {', '.join(same)} on one node; "
            f"a node has {per_node} matching, in smaller groups")


def analyze_choice(
    matcher: Matcher, choice: Choice, pools: Sequence[PoolPlan], same: Sequence[str]
) -> ChoiceAnalysis:
    """Evaluate one choice on every pool (selectors once per shape)."""
    try:
        for selector in choice.selectors:
            compile_selector(selector.expression)
    except CELCompileError:
        return ChoiceAnalysis(choice, (), compiles=False)
    out = []
    for pool in pools:
        model = matcher.model(pool)
        inv = model.inventory
        verdicts = _verdicts(matcher, choice, inv)
        matching = frozenset(v.shape for v in verdicts if v.matched)
        per_node = sum(inv.shapes[s].per_node for s in matching)
        if any(v.error for v in verdicts):
            why = ("gen's CEL evaluator stopped a selector (its iteration budget): unknown"
                   if any(v.error == BUDGET_MESSAGE for v in verdicts)
                   else "a selector errors at run time (the allocator aborts)")
            out.append(PoolAnalysis(inv, tuple(verdicts), per_node, 0, why))
            continue
        fits = _per_node(model, matching, choice, same) if pool.pool.nodes else 0
        why = "" if fits else ("the pool has no nodes" if not pool.pool.nodes
                               else _why_not(inv, matching, choice, same))
        out.append(PoolAnalysis(inv, tuple(verdicts), per_node, fits, why))
    return ChoiceAnalysis(choice, tuple(out))


def analyze_service(
    matcher: Matcher, cluster: ClusterPlan, svc: ServicePlan
) -> list[ChoiceAnalysis]:
    """Every choice of the service's claim on the pools it may run on."""
    gpu = svc.service.gpu
    same = gpu.same if gpu is not None else ()
    pools = nvidia_pools(svc)
    return [analyze_choice(matcher, c, pools, same) for c in choices(cluster, svc)]


def nvidia_pools(svc: ServicePlan) -> tuple[PoolPlan, ...]:
    """The service's pools whose devices the NVIDIA DRA driver publishes."""
    return tuple(p for p in svc.pools if p.pool.platform == "nvidia" and p.gpu is not None)


def _misses(analysis: ChoiceAnalysis) -> list[str]:
    """``8 NVIDIA H100 80GB HBM3 devices rejected by class 'x' selector #0: memory ...``."""
    groups: Counter[tuple[int, int, str, str]] = Counter()
    for pool in analysis.pools:
        for v in pool.verdicts:
            if v.rejection is not None:
                shape = pool.inventory.shapes[v.shape]
                r = v.rejection
                groups[(r.selector, r.depth, shape_summary(shape), r.reason)] += shape.total
    # Nearest first: rejected by a later selector, then by a later && operand.
    ranked = sorted(groups.items(), key=lambda kv: (-kv[0][0], -kv[0][1], -kv[1], kv[0]))
    sel = analysis.choice.selectors
    return [f"{n} {what} devices rejected by {sel[j].label}: {reason}"
            for (j, _, what, reason), n in ranked[:_MAX_MISSES]]


def _unsatisfiable(cluster: ClusterPlan, svc: ServicePlan, analysis: ChoiceAnalysis,
                   severity: Severity | None) -> Finding:
    choice = analysis.choice
    parts = _misses(analysis)
    parts += [f"pool {p.pool.name!r}: {p.why_not}" for p in analysis.pools
              if p.why_not and p.matching_per_node]
    if not analysis.pools:
        parts.append("the service has no node pool in this cluster")
    mode = "all matching devices" if choice.all_devices else f"{choice.count} device(s)"
    located = cluster.gpu_classes[choice.gpu_class.name]
    where, key_path = choice.where, choice.key_path
    related = (replace(located.document.location,
                                   note=f"class {choice.gpu_class.name!r}"),)
    source = _rejecting_match_field(analysis)
    if source is not None:
        # The class's own match field rejects the devices nearest to matching: that line
        # is the one to edit; the service that uses the class is where it is used.
        where, key_path = located.at(*source[0]), source[1]
        related = (replace(
            choice.where, note=f"used by service {svc.service.name!r} ({choice.key_path})"),)
    return finding(
        "GEN204",
        f"{choice.label} of service {svc.service.name!r} (request 'gpu', class "
        f"{choice.gpu_class.name!r}, {mode}) cannot be allocated on any node of cluster "
        f"{cluster.name!r}: " + "; ".join(parts or ["no device matches"]),
        where, key_path=key_path, severity=severity,
        hint="compare the selectors with the devices: "
        f"'gen explain {svc.service.name} --cluster {cluster.name}'",
        related=related,
        service=svc.service.name, cluster=cluster.name,
    )


_MATCH_FIELDS = {
    "memory": ("match", "min_memory"), "productName": ("match", "product"),
    "architecture": ("match", "architecture"), "profile": ("match", "mig_profile"),
    "cudaComputeCapability": ("match", "min_compute_capability"),
    "driverVersion": ("match", "min_driver_version"), "type": ("device_type",),
}
"""The device attribute a structured-match term compares → the class field it comes from."""


def _rejecting_match_field(
    analysis: ChoiceAnalysis,
) -> tuple[tuple[str | int, ...], str] | None:
    """The class field (``("match", "min_memory")``, or a raw selector ``("cel", 0)``) whose
    term rejects the devices that come nearest to matching, when it is one the class sets,
    with its key path; None otherwise (a request selector, or nothing rejects)."""
    best: Rejection | None = None
    for pool in analysis.pools:
        for v in pool.verdicts:
            r = v.rejection
            if r is not None and r.error is None and (
                    best is None or (r.selector, r.depth) > (best.selector, best.depth)):
                best = r
    if best is None:
        return None
    key = analysis.choice.selectors[best.selector].key_path
    raw = re.fullmatch(r"cel\[(\d+)\]", key)
    if raw is not None:  # one of the class's raw CEL selectors: that line is the one to edit
        return ("cel", int(raw.group(1))), key
    if key != "match" or best.attribute is None:
        return None
    source = _MATCH_FIELDS.get(best.attribute)
    match = analysis.choice.gpu_class.match
    if source is None or (source[0] == "match" and getattr(match, source[1], None) is None):
        return None
    return source, ".".join(source)


def _runtime_errors(cluster: ClusterPlan, analysis: ChoiceAnalysis) -> list[Finding]:
    findings = []
    for pool in analysis.pools:
        for v in pool.verdicts:
            r = v.rejection
            if r is None or r.error is None:
                continue
            label, _, where, key = analysis.choice.selectors[r.selector]  # a Selector
            shape = pool.inventory.shapes[v.shape]
            if r.error == BUDGET_MESSAGE:
                # gen's evaluator gave up, not Kubernetes': a warning, gen cannot verify it.
                findings.append(finding(
                    "GEN206",
                    f"{label}: {r.error} (on {shape_summary(shape)} devices of pool "
                    f"{pool.pool.name!r}, cluster {cluster.name!r})",
                    where, key_path=key, severity=Severity.WARNING,
                    hint="gen cannot check which devices this selector matches nor whether the "
                    "cluster holds the service; smaller comprehensions let it",
                    cluster=cluster.name,
                ))
                continue
            findings.append(finding(
                "GEN206",
                f"{label}: {r.error}" + (f" — {r.detail}" if r.detail else "")
                + f" (on {shape_summary(shape)} devices of pool {pool.pool.name!r}, "
                f"cluster {cluster.name!r}); the allocator aborts: the pod stays Pending",
                where, key_path=key,
                hint="guard optional attributes with has(...) or .?name.orValue(...)",
                cluster=cluster.name,
            ))
    return findings


def _beyond_budget(analyses: Sequence[ChoiceAnalysis]) -> bool:
    """Whether gen's evaluator stopped a selector of these choices (its iteration budget)."""
    return any(
        v.error == BUDGET_MESSAGE for a in analyses for p in a.pools for v in p.verdicts
    )


class ClusterAnalysis(NamedTuple):
    """A DRA cluster's claims analysed: GEN204/GEN206 findings, and the services whose claim
    some node holds, with their analyses (what the capacity rules place)."""

    findings: list[Finding]
    analyzed: list[tuple[ServicePlan, list[ChoiceAnalysis]]]


def analyze_cluster(matcher: Matcher, cluster: ClusterPlan) -> ClusterAnalysis:
    """GEN204 and GEN206 of one DRA cluster, and the services the capacity rules place."""
    from gen.fleet.placement import candidates

    findings: list[Finding] = []
    analyzed = []
    for svc in workloads(cluster):
        if svc.service.gpu is None or svc.gpu_class is None or not nvidia_pools(svc):
            continue  # GEN304 reports a service without pools; Apple pools are not DRA
        if svc.service.engine == "vllm" and not candidates(svc, match_class=False):
            continue  # GEN304 already says no pool offers the class's devices
        analyses = analyze_service(matcher, cluster, svc)
        if not all(a.compiles for a in analyses):
            continue  # GEN203 reports the selector
        for analysis in analyses:
            findings += _runtime_errors(cluster, analysis)
        if _beyond_budget(analyses):
            continue  # gen cannot tell what the selector matches (GEN206 says so)
        any_ok = any(a.satisfiable for a in analyses)
        for analysis in analyses:
            if not analysis.satisfiable:
                severity = Severity.WARNING if any_ok else None  # else: the rule's error
                findings.append(_unsatisfiable(cluster, svc, analysis, severity))
        if any_ok:
            analyzed.append((svc, analyses))
    return ClusterAnalysis(findings, analyzed)
