"""Satisfiability and capacity of DRA claims against the devices the node pools publish.

For every service of a DRA cluster and every choice of its claim (the first choice, then
each alternative), on each pool the service may run on (:mod:`gen.dra.simulate` devices):

* which device shapes pass the class selectors (:func:`gen.dra.selectors.class_cel`) and the
  request selectors, in the allocator's order, stopping at the first false (GEN204 names
  the nearest misses, GEN206 a selector that errors at run time: the allocator aborts on it,
  so a pool where a selector errors cannot host the claim);
* whether one node holds the whole claim: ``count`` matching devices (``All``: at least one,
  all free), and for ``same`` (matchAttribute) devices sharing the value
  (:func:`gen.dra.simulate.group_key`);
* whether the cluster holds every replica of every service at once (GEN205), greedily in
  service order, first choice before alternatives. Claims are exclusive: gen renders a
  ResourceClaimTemplate, so every pod gets its own claim, and time-slicing/MPS sharing only
  shares one claim's devices between its containers (kubernetes-sigs/dra-driver-nvidia-gpu
  ``api/nvidia.com/resource/v1beta1`` and ``demo/specs/quickstart/v1/gpu-test2.yaml``@2240711).

Selectors are evaluated once per (selector, device shape) by a :class:`Matcher`, whose
``evaluations`` counter shows it: a 1000-node pool costs what a 1-node pool costs.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from gen.caches import BoundedCache
from gen.dra.cel import BUDGET_MESSAGE, Miss, SelectorResult, compile_selector, diagnose_miss
from gen.dra.devices import Device, ShapeKey
from gen.dra.simulate import NodeInventory, group_key, node_inventory, shape_summary
from gen.errors import CELCompileError, CELRuntimeError, Finding, Severity, SourceLocation
from gen.fleet.plan import ClusterPlan, Plan, PoolPlan, ServicePlan
from gen.models import GPUClass

__all__ = [
    "Choice",
    "ChoiceAnalysis",
    "Matcher",
    "PoolAnalysis",
    "ShapeVerdict",
    "analyze_service",
    "check",
    "check_with_matcher",
    "choices",
    "nvidia_pools",
]

_MAX_MISSES = 3


@dataclass
class Matcher:
    """Evaluates selectors once per (selector, device shape) and counts the evaluations."""

    evaluations: int = 0
    _results: dict[tuple[str, ShapeKey], SelectorResult] = field(default_factory=dict)
    _reasons: dict[tuple[str, ShapeKey], tuple[int, str]] = field(default_factory=dict)
    _inventories: dict[tuple[object, ...], NodeInventory] = field(default_factory=dict)

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

    def reason(self, expression: str, device: Device) -> tuple[int, str]:
        """Why the selector rejects the device's shape, and how far it got (memoised).

        The depth is the index of the first false top-level ``&&`` operand: the higher,
        the nearer the miss.
        """
        key = (expression, device.shape_key())
        known = self._reasons.get(key)
        if known is None:
            miss = diagnose_miss(expression, device)
            if miss is None:
                known = (0, "no match")
            else:
                known = (miss.conjunct or 0, _short_reason(miss))
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


def _hardware(pool: PoolPlan) -> tuple[object, ...]:
    """Everything :func:`gen.dra.simulate.node_inventory` reads from a pool, as a value."""
    spec = pool.pool
    return (pool.gpu, spec.platform, spec.driver_version, spec.gpus_per_node, spec.nodes,
            pool.mig_checks)


_CMP = re.compile(
    r"device\.(?:capacity|attributes)\[['\"][^'\"]+['\"]\]\.(?P<name>\w+)\.compareTo\("
    r"(?:quantity|semver)\(['\"](?P<limit>[^'\"]+)['\"]\)\) >= 0"
)
_EQ = re.compile(
    r"device\.attributes\[['\"][^'\"]+['\"]\]\.(?P<name>\w+) == (?P<want>'[^']*')"
)


def _short_reason(miss: Miss) -> str:
    """``memory 81559Mi < 80Gi`` instead of the full false conjunct, where the false CEL
    source is a compare of one device value that the device has."""
    if len(miss.reads) == 1 and miss.reads[0][1] is not None:
        name, value = miss.reads[0]
        match = _CMP.fullmatch(miss.source)
        if match is not None and match["name"] == name:
            return f"{name} {value} < {match['limit']}"
        match = _EQ.fullmatch(miss.source)
        if match is not None and match["name"] == name:
            return f"{name} {value} != {match['want']}"
    return miss.text


@dataclass(frozen=True)
class Choice:
    """One way to satisfy a claim: a class, a count, extra selectors (firstAvailable entry)."""

    label: str
    gpu_class: GPUClass
    count: int
    all_devices: bool
    selectors: tuple[tuple[str, str, SourceLocation, str], ...]
    """(label, expression, where, key path) in allocator order: class, then request."""
    where: SourceLocation
    key_path: str


def _class_selectors(
    cluster: ClusterPlan, gpu_class: GPUClass
) -> list[tuple[str, str, SourceLocation, str]]:
    from gen.dra.selectors import class_cel

    located = cluster.gpu_classes[gpu_class.name]
    out = []
    for j, expression in enumerate(class_cel(gpu_class)):
        key = "match" if j == 0 else f"cel[{j - 1}]"
        where = located.at("match") if j == 0 else located.at("cel", j - 1)
        out.append((f"class {gpu_class.name!r} selector #{j}", expression, where, key))
    return out


def choices(cluster: ClusterPlan, svc: ServicePlan) -> list[Choice]:
    """The first choice and the alternatives of a service's claim."""
    gpu = svc.service.gpu
    if gpu is None or svc.gpu_class is None:
        return []
    request = [
        (f"request selector #{j}", expr, svc.located.at("gpu", "selectors", j),
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
class ShapeVerdict:
    """One device shape of a pool under one choice's selectors."""

    shape: int
    matched: bool
    selector: int = -1
    """Index into Choice.selectors of the selector that rejected it (-1: matched)."""
    reason: str = ""
    error: str | None = None
    depth: int = 0
    """Top-level ``&&`` operands of the rejecting selector that passed (nearness)."""


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
        verdict = ShapeVerdict(i, True)
        for j, (_, expression, _, _) in enumerate(choice.selectors):
            result = matcher.result(expression, shape.device)
            if result.error is not None or not result.matched:
                depth, reason = matcher.reason(expression, shape.device)
                verdict = ShapeVerdict(i, False, j, reason, result.error, depth)
                break
        out.append(verdict)
    return out


def _pick(
    inv: NodeInventory, free: int, matching: frozenset[int], choice: Choice, same: Sequence[str]
) -> int | None:
    """Bitmask of the slots one claim takes on a node with ``free`` slots, or None."""
    slots = [s for s, (shape, _) in enumerate(inv.slots) if shape in matching]
    if choice.all_devices:
        if not slots or any(not free >> s & 1 for s in slots):
            return None
        keys = {tuple(group_key(inv, s, a) for a in same) for s in slots}
        if same and (len(keys) != 1 or None in next(iter(keys))):
            return None
        return sum(1 << s for s in slots)
    slots = [s for s in slots if free >> s & 1]
    if not same:
        return sum(1 << s for s in slots[: choice.count]) if len(slots) >= choice.count else None
    groups: dict[tuple[object, ...], list[int]] = {}
    for s in slots:
        key = tuple(group_key(inv, s, a) for a in same)
        if None not in key:
            groups.setdefault(key, []).append(s)
    fitting = [g for g in groups.values() if len(g) >= choice.count]
    if not fitting:
        return None
    best = min(fitting, key=len)  # best fit keeps larger groups for larger claims
    return sum(1 << s for s in best[: choice.count])


_FillKey = tuple[tuple[tuple[int, int], ...], tuple[Device, ...], int, frozenset[int], int, bool,
                 tuple[str, ...]]
_FILLS: BoundedCache[_FillKey, tuple[int, ...]] = BoundedCache(
    "gen.dra.satisfiability.fills", 100_000)
"""Memo of :func:`_fill` by value: the node's slots and shape devices (all that
:func:`_pick` reads of an inventory, :func:`group_key` included), the free slots and the
claim's shape."""


def _fill(
    inv: NodeInventory, free: int, matching: frozenset[int], choice: Choice, same: Sequence[str]
) -> tuple[int, ...]:
    """Free masks of one node after 1, 2, ... claims placed greedily (empty: none fits).

    Services of a fleet repeat a few claim shapes on a few node shapes: each distinct
    (node, free slots, matching shapes, count, mode, constraints) is placed once.
    """
    key = (inv.slots, tuple(s.device for s in inv.shapes), free, matching, choice.count,
           choice.all_devices, tuple(same))
    hit = _FILLS.data.get(key)
    if hit is not None:
        return hit
    states: list[int] = []
    while True:
        taken = _pick(inv, free, matching, choice, same)
        if taken is None:
            break
        free &= ~taken
        states.append(free)
    return _FILLS.put(key, tuple(states))


def _full(inv: NodeInventory) -> int:
    return (1 << len(inv.slots)) - 1


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
        for _, expression, _, _ in choice.selectors:
            compile_selector(expression)
    except CELCompileError:
        return ChoiceAnalysis(choice, (), compiles=False)
    out = []
    for pool in pools:
        inv = matcher.inventory(pool)
        verdicts = _verdicts(matcher, choice, inv)
        matching = frozenset(v.shape for v in verdicts if v.matched)
        per_node = sum(inv.shapes[s].per_node for s in matching)
        if any(v.error for v in verdicts):
            why = ("gen's CEL evaluator stopped a selector (its iteration budget): unknown"
                   if any(v.error == BUDGET_MESSAGE for v in verdicts)
                   else "a selector errors at run time (the allocator aborts)")
            out.append(PoolAnalysis(inv, tuple(verdicts), per_node, 0, why))
            continue
        fits = len(_fill(inv, _full(inv), matching, choice, same)) if pool.pool.nodes else 0
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
            if not v.matched:
                shape = pool.inventory.shapes[v.shape]
                groups[(v.selector, v.depth, shape_summary(shape), v.reason)] += shape.total
    # Nearest first: rejected by a later selector, then by a later && operand.
    ranked = sorted(groups.items(), key=lambda kv: (-kv[0][0], -kv[0][1], -kv[1], kv[0]))
    sel = analysis.choice.selectors
    return [f"{n} {what} devices rejected by {sel[j][0]}: {reason}"
            for (j, _, what, reason), n in ranked[:_MAX_MISSES]]


def _unsatisfiable(cluster: ClusterPlan, svc: ServicePlan, analysis: ChoiceAnalysis,
                   severity: Severity) -> Finding:
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
    return Finding(
        "GEN204",
        f"{choice.label} of service {svc.service.name!r} (request 'gpu', class "
        f"{choice.gpu_class.name!r}, {mode}) cannot be allocated on any node of cluster "
        f"{cluster.name!r}: " + "; ".join(parts or ["no device matches"]),
        where, key_path, severity=severity,
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
    best: tuple[int, int, str] | None = None
    for pool in analysis.pools:
        for v in pool.verdicts:
            if not v.matched and v.error is None:
                candidate = (v.selector, v.depth, v.reason)
                if best is None or candidate[:2] > best[:2]:
                    best = candidate
    if best is None:
        return None
    key = analysis.choice.selectors[best[0]][3]
    raw = re.fullmatch(r"cel\[(\d+)\]", key)
    if raw is not None:  # one of the class's raw CEL selectors: that line is the one to edit
        return ("cel", int(raw.group(1))), key
    if key != "match":
        return None
    source = _MATCH_FIELDS.get(best[2].split(" ", 1)[0])
    match = analysis.choice.gpu_class.match
    if source is None or (source[0] == "match" and getattr(match, source[1], None) is None):
        return None
    return source, ".".join(source)


def _runtime_errors(cluster: ClusterPlan, analysis: ChoiceAnalysis) -> list[Finding]:
    findings = []
    for pool in analysis.pools:
        for v in pool.verdicts:
            if v.error is None:
                continue
            label, _, where, key = analysis.choice.selectors[v.selector]
            extra = v.reason.removeprefix(v.error).lstrip(": ")
            shape = pool.inventory.shapes[v.shape]
            if v.error == BUDGET_MESSAGE:
                # gen's evaluator gave up, not Kubernetes': a warning, gen cannot verify it.
                findings.append(Finding(
                    "GEN206",
                    f"{label}: {v.error} (on {shape_summary(shape)} devices of pool "
                    f"{pool.pool.name!r}, cluster {cluster.name!r})",
                    where, key, severity=Severity.WARNING,
                    hint="gen cannot check which devices this selector matches nor whether the "
                    "cluster holds the service; smaller comprehensions let it",
                    cluster=cluster.name,
                ))
                continue
            findings.append(Finding(
                "GEN206",
                f"{label}: {v.error}" + (f" — {extra}" if extra else "")
                + f" (on {shape_summary(shape)} devices of pool {pool.pool.name!r}, "
                f"cluster {cluster.name!r}); the allocator aborts: the pod stays Pending",
                where, key,
                hint="guard optional attributes with has(...) or .?name.orValue(...)",
                cluster=cluster.name,
            ))
    return findings


def _beyond_budget(analyses: Sequence[ChoiceAnalysis]) -> bool:
    """Whether gen's evaluator stopped a selector of these choices (its iteration budget)."""
    return any(
        v.error == BUDGET_MESSAGE for a in analyses for p in a.pools for v in p.verdicts
    )



def _place(
    analyses: Sequence[ChoiceAnalysis], replicas: int, same: Sequence[str],
    states: dict[str, Counter[int]], taken: Counter[str] | None = None,
) -> int:
    """Place replicas greedily (first choice first), updating node states; return placed.

    ``taken`` counts, per pool, the devices the placed replicas take there."""
    remaining = replicas
    for analysis in analyses:
        for pool in analysis.pools:
            if not pool.replicas_per_node or not remaining:
                continue
            before = remaining
            matching = frozenset(v.shape for v in pool.verdicts if v.matched)
            counter = states.setdefault(
                pool.pool.name, Counter({_full(pool.inventory): pool.pool.pool.nodes})
            )
            # Partly used nodes first: whole nodes stay free for larger claims.
            for mask in sorted(counter, key=lambda m: (m.bit_count(), m)):
                if not remaining:
                    break
                seq = _fill(pool.inventory, mask, matching, analysis.choice, same)
                if not seq:
                    continue
                nodes, k = counter.pop(mask), len(seq)
                whole = min(nodes, remaining // k)
                if whole:
                    counter[seq[-1]] += whole
                    remaining -= whole * k
                rest = nodes - whole
                if remaining and rest:
                    counter[seq[remaining - 1]] += 1
                    rest -= 1
                    remaining = 0
                if rest:
                    counter[mask] += rest
            if taken is not None and remaining < before:
                taken[pool.pool.name] += (before - remaining) * analysis.choice.count
    return replicas - remaining


def _capacity(cluster: ClusterPlan, analyzed: list[tuple[ServicePlan, list[ChoiceAnalysis]]]
              ) -> list[Finding]:
    findings: list[Finding] = []
    for at_max in (False, True):
        states: dict[str, Counter[int]] = {}
        short = []
        takers: list[tuple[ServicePlan, Counter[str]]] = []
        related: dict[str, tuple[SourceLocation, ...]] = {}
        for svc, analyses in analyzed:
            gpu = svc.service.gpu
            assert gpu is not None
            wanted = svc.service.max_replicas if at_max else svc.service.min_replicas
            taken: Counter[str] = Counter()
            placed = _place(analyses, wanted, gpu.same, states, taken)
            if placed < wanted:
                short.append((svc, wanted, placed))
                related[svc.service.name] = _takers(analyses, takers)
            takers.append((svc, taken))
        if at_max:
            findings += _growth_blame(cluster, analyzed, short)
            short = [entry for entry in short if entry[0].service.autoscaling is not None]
        for svc, wanted, placed in short:
            what = "autoscaling max_replicas" if at_max else (
                "autoscaling min_replicas" if svc.service.autoscaling else "replicas")
            sharing = svc.gpu_class is not None and svc.gpu_class.sharing is not None
            before = related.get(svc.service.name, ())
            findings.append(Finding(
                "GEN205",
                f"cluster {cluster.name!r} holds {placed} of the {wanted} replicas "
                f"({what}) of service {svc.service.name!r}"
                + (f" once the services before it (in namespace/name order) have their "
                   f"devices: {', '.join(r.note for r in before)}" if before else ""),
                *svc.replicas_at(at_max), related=before,
                severity=Severity.WARNING if at_max else Severity.ERROR,
                hint="add nodes, lower the replicas, or allow alternatives"
                + ("; sharing only shares one claim's devices between its containers, "
                   "every replica still gets its own claim" if sharing else ""),
                service=svc.service.name, cluster=cluster.name,
            ))
        if short and not at_max:
            break  # the minimum does not fit: the maximum cannot either
    return findings


def _takers(analyses: Sequence[ChoiceAnalysis],
            takers: list[tuple[ServicePlan, Counter[str]]]) -> tuple[SourceLocation, ...]:
    """The services placed so far that took devices of the pools ``analyses`` can use, each at
    its replica line with what it takes there."""
    pools = {p.pool.name for a in analyses for p in a.pools if p.replicas_per_node}
    out = []
    for other, taken in takers:
        mine = {name: n for name, n in sorted(taken.items()) if name in pools and n}
        if not mine:
            continue
        where, _ = other.replicas_at()
        what = ", ".join(f"{n} device(s) of pool {name!r}" for name, n in mine.items())
        out.append(replace(where, note=f"service {other.service.name!r} takes {what}"))
    return tuple(out)


def _growth_blame(
    cluster: ClusterPlan, analyzed: list[tuple[ServicePlan, list[ChoiceAnalysis]]],
    short: list[tuple[ServicePlan, int, int]],
) -> list[Finding]:
    """Warnings at the autoscaled services whose growth to max_replicas leaves a service
    without autoscaling short: the one that causes the shortage is named, at the line that
    causes it (the service that is short has no max_replicas to lower)."""
    findings = []
    order = [svc for svc, _ in analyzed]
    for svc, wanted, placed in short:
        if svc.service.autoscaling is not None:
            continue
        for grower in order[:order.index(svc)]:
            if grower.service.autoscaling is None:
                continue
            findings.append(Finding(
                "GEN205",
                f"at its autoscaling max_replicas, service {grower.service.name!r} takes "
                f"devices of cluster {cluster.name!r} that service {svc.service.name!r} "
                f"(no autoscaling) needs: {placed} of its {wanted} replicas would then fit",
                *grower.replicas_at(True), severity=Severity.WARNING,
                hint="lower max_replicas, add nodes, or give the other service alternatives",
                related=(replace(svc.located.at("gpu"),
                                 note=f"service {svc.service.name!r} is left short"),),
                service=grower.service.name, cluster=cluster.name,
            ))
    return findings


def check_with_matcher(plan: Plan, matcher: Matcher) -> list[Finding]:
    """GEN204–GEN206 with a caller's matcher (whose ``evaluations`` then tell the cost)."""
    from gen.dra.allocator import capacity_findings, has_dynamic_pools
    from gen.fleet.placement import candidates

    findings: list[Finding] = []
    for cluster in plan.clusters:
        if cluster.dra_api_version is None:
            continue
        analyzed = []
        for svc in cluster.services:
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
                    severity = Severity.WARNING if any_ok else Severity.ERROR
                    findings.append(_unsatisfiable(cluster, svc, analysis, severity))
            if any_ok:
                analyzed.append((svc, analyses))
        if has_dynamic_pools(cluster):  # shared counters: the allocator's model decides
            findings += capacity_findings(cluster, analyzed, matcher.inventory)
        else:
            findings += _capacity(cluster, analyzed)
    return findings


def check(plan: Plan) -> list[Finding]:
    """GEN204 unsatisfiable claims, GEN205 capacity, GEN206 selector run-time errors."""
    return check_with_matcher(plan, Matcher())
