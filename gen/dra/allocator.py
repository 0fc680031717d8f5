"""Allocation with shared counters, the way the scheduler's structured allocator does it.

Kubernetes' allocator (kubernetes/kubernetes ``staging/src/k8s.io/dynamic-resource-allocation/
structured/internal/incubating/allocator_incubating.go``, ``allocateOne`` and
``allocateDevice``, read at commit 03ab440c) allocates a pod's claims on one node like this,
and so does :func:`allocate_claim`:

* requests in order; a request with ``firstAvailable`` tries its subrequests in order and
  takes the first that succeeds;
* for each device a request still needs, the devices in slice order (pool, slice, device),
  starting after the previous device of the same request (combinations, not permutations);
  a device is skipped when it is in use, fails a selector, breaks a ``matchAttribute``
  constraint, or consumes more of a shared counter than is left (the counters consumed by
  the node's earlier allocations and by this attempt); otherwise it is taken and the search
  recurses, and on failure the device is given back and the next one tried (backtracking);
* ``allocationMode: All`` takes every matching device; if one of them cannot be taken, the
  (sub)request fails.

The first solution wins; there is no scoring. Which node a pod lands on is the scheduler's
choice among the nodes where allocation succeeds: :func:`pack` places pods first-fit, node
by node, pool by pool in the service's pool order, and tries several arrival orders of the
same demand (:data:`ORDERS`): whether every order fits, only some, or none, is the verdict
of :func:`capacity_findings` (GEN240: the demand does not fit; GEN241: it fits only in some
orders — fragmentation).

Static pools (devices without counters) go through the same code: their devices consume
nothing but themselves.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gen.dra.devices import Device
from gen.dra.simulate import (
    NodeInventory,
    group_key,
    is_dynamic,
    node_device_names,
    node_partitions,
)
from gen.errors import Finding, Severity
from gen.fleet.plan import ClusterPlan, PoolPlan, ServicePlan

if TYPE_CHECKING:
    from gen.dra.satisfiability import ChoiceAnalysis

Analyzed = Sequence[tuple[ServicePlan, Sequence["ChoiceAnalysis"]]]
"""(service, its choices analysed on its pools) per service, in service order."""
Inventory = Callable[[PoolPlan], NodeInventory]

__all__ = [
    "ORDERS",
    "ClaimShape",
    "CounterModel",
    "NodeState",
    "Packing",
    "PoolModel",
    "SubRequest",
    "allocate_claim",
    "capacity_findings",
    "counter_model",
    "pack",
    "packing_lines",
    "verify_packing",
]

SEARCH_BUDGET = 200_000
"""Devices tried per claim before the search gives up (a claim of many devices on a large
node is exponential in the worst case; the scheduler bounds it with a timeout)."""

ORDERS = ("service order", "largest first", "smallest first", "round robin", "reverse")
"""The arrival orders :func:`pack` tries for the same demand."""


@dataclass(frozen=True)
class CounterModel:
    """The shared counters of one node and what each device slot consumes of them."""

    names: tuple[str, ...]
    """``<counter set>/<counter>`` per counter index."""
    capacity: tuple[int, ...]
    consumes: tuple[tuple[tuple[int, int], ...], ...]
    """Per device slot: (counter index, amount)."""
    devices: tuple[str, ...] = ()
    """Per device slot: the device name on the node."""
    parts: tuple[tuple[int, str | None, int, int], ...] = ()
    """Per device slot of a dynamic pool: (GPU index, MIG profile or None, start, size)."""


def counter_model(pool: PoolPlan, inventory: NodeInventory) -> CounterModel:
    """The counters of a node of ``pool`` (none for a static pool) in slot order."""
    names: list[str] = []
    capacity: list[int] = []
    consumes: list[tuple[tuple[int, int], ...]] = []
    index: dict[str, int] = {}
    parts: list[tuple[int, str | None, int, int]] = []
    for gpu in node_partitions(pool, "counters"):
        for counter, value in gpu.counters.items():
            index[f"{gpu.counter_set}/{counter}"] = len(names)
            names.append(f"{gpu.counter_set}/{counter}")
            capacity.append(value)
        for part in gpu.partitions:
            parts.append((gpu.index, part.profile, part.start, part.size))
            consumes.append(tuple((index[f"{gpu.counter_set}/{k}"], v)
                                  for k, v in part.consumes.items()))
    if not consumes:
        consumes = [() for _ in inventory.slots]
    assert len(consumes) == len(inventory.slots)
    return CounterModel(tuple(names), tuple(capacity), tuple(consumes),
                        node_device_names(pool), tuple(parts))


@dataclass(frozen=True)
class SubRequest:
    """One (sub)request of a claim on one pool: which device slots of a node match it."""

    label: str
    count: int
    all_devices: bool
    matching: tuple[int, ...]
    """Slots whose device passes every selector, in slice order."""


@dataclass(frozen=True)
class ClaimShape:
    """A service's claim on one pool: its ``firstAvailable`` entries and constraints."""

    pool: str
    service: str
    subrequests: tuple[SubRequest, ...]
    same: tuple[str, ...] = ()


@dataclass(frozen=True)
class PoolModel:
    """A pool as the allocator sees it: one node's slots and counters, and the node count."""

    pool: PoolPlan
    inventory: NodeInventory
    counters: CounterModel
    nodes: int

    @property
    def name(self) -> str:
        """Pool name."""
        return self.pool.name

    def device(self, slot: int) -> Device:
        """The representative device of a slot."""
        return self.inventory.shapes[self.inventory.slots[slot][0]].device

    def slot_name(self, slot: int) -> str:
        """The device name of a slot on a node."""
        return self.counters.devices[slot]


@dataclass
class NodeState:
    """What is allocated on one node: the slots in use and the counters consumed."""

    used: int = 0
    consumed: list[int] = field(default_factory=list)

    def copy(self) -> NodeState:
        """An independent copy."""
        return NodeState(self.used, list(self.consumed))


def _fits(model: PoolModel, state: NodeState, slot: int, extra: Mapping[int, int]) -> bool:
    for counter, amount in model.counters.consumes[slot]:
        have = state.consumed[counter] + extra.get(counter, 0)
        if have + amount > model.counters.capacity[counter]:
            return False
    return True


def _group(model: PoolModel, slot: int, same: Sequence[str]) -> tuple[object, ...]:
    return tuple(group_key(model.inventory, slot, attribute) for attribute in same)


def _exact(model: PoolModel, state: NodeState, sub: SubRequest, same: Sequence[str],
           budget: list[int]) -> tuple[int, ...] | None:
    chosen: list[int] = []
    extra: dict[int, int] = {}

    def search(start: int, group: tuple[object, ...] | None) -> bool:
        if len(chosen) == sub.count:
            return True
        for i in range(start, len(sub.matching)):
            slot = sub.matching[i]
            budget[0] -= 1
            if budget[0] < 0:
                return False
            if state.used >> slot & 1 or slot in chosen:
                continue
            key = _group(model, slot, same) if same else ()
            if same and (None in key or (group is not None and key != group)):
                continue
            if not _fits(model, state, slot, extra):
                continue
            chosen.append(slot)
            for counter, amount in model.counters.consumes[slot]:
                extra[counter] = extra.get(counter, 0) + amount
            if search(i + 1, key if same else None):
                return True
            chosen.pop()
            for counter, amount in model.counters.consumes[slot]:
                extra[counter] -= amount
        return False

    return tuple(chosen) if search(0, None) else None


def _all(model: PoolModel, state: NodeState, sub: SubRequest,
         same: Sequence[str]) -> tuple[int, ...] | None:
    if not sub.matching:
        return None
    extra: dict[int, int] = {}
    group: tuple[object, ...] | None = None
    for slot in sub.matching:
        if state.used >> slot & 1 or not _fits(model, state, slot, extra):
            return None
        if same:
            key = _group(model, slot, same)
            if None in key or (group is not None and key != group):
                return None
            group = key
        for counter, amount in model.counters.consumes[slot]:
            extra[counter] = extra.get(counter, 0) + amount
    return sub.matching


def allocate_claim(model: PoolModel, state: NodeState,
                   claim: ClaimShape) -> tuple[int, tuple[int, ...]] | None:
    """(subrequest index, slots) of the first allocation the allocator finds, or None.

    ``state`` is not changed; :meth:`Packing.take` commits an allocation.
    """
    budget = [SEARCH_BUDGET]
    for k, sub in enumerate(claim.subrequests):
        slots = (_all(model, state, sub, claim.same) if sub.all_devices
                 else _exact(model, state, sub, claim.same, budget))
        if slots is not None:
            return k, slots
    return None


@dataclass(frozen=True)
class Placement:
    """One replica's claim as allocated: where, and which devices."""

    service: str
    replica: int
    pool: str
    node: int
    subrequest: int
    slots: tuple[int, ...]


@dataclass
class Packing:
    """Node states of every pool and the placements made, in the order they were made."""

    models: Mapping[str, PoolModel]
    nodes: dict[str, list[NodeState]] = field(default_factory=dict)
    placements: list[Placement] = field(default_factory=list)
    unplaced: list[tuple[str, int]] = field(default_factory=list)
    _memo: dict[tuple[int, int, tuple[int, ...]], tuple[int, tuple[int, ...]] | None] = field(
        default_factory=dict, repr=False)
    """(claim, used slots, consumed counters) → the allocation: nodes in equal states (full
    ones, above all) are decided once."""

    def allocate(self, model: PoolModel, state: NodeState,
                 claim: ClaimShape) -> tuple[int, tuple[int, ...]] | None:
        """:func:`allocate_claim`, memoised by the node's state."""
        key = (id(claim), state.used, tuple(state.consumed))
        if key not in self._memo:
            self._memo[key] = allocate_claim(model, state, claim)
        return self._memo[key]

    def node_states(self, pool: str) -> list[NodeState]:
        """The states of the pool's nodes that have allocations (others are empty)."""
        return self.nodes.setdefault(pool, [])

    def fresh(self, pool: str) -> NodeState:
        """An empty node of ``pool``."""
        return NodeState(0, [0] * len(self.models[pool].counters.capacity))

    def take(self, model: PoolModel, node: int, state: NodeState, service: str, replica: int,
             result: tuple[int, tuple[int, ...]]) -> None:
        """Commit an allocation on ``node`` of ``model``'s pool."""
        sub, slots = result
        for slot in slots:
            state.used |= 1 << slot
            for counter, amount in model.counters.consumes[slot]:
                state.consumed[counter] += amount
        self.placements.append(Placement(service, replica, model.name, node, sub, slots))

    def place(self, claims: Sequence[ClaimShape], service: str, replica: int) -> bool:
        """Place one replica first-fit (pools in the given order, nodes in order)."""
        for claim in claims:
            pool = claim.pool
            model = self.models[pool]
            states = self.node_states(pool)
            for node, state in enumerate(states):
                result = self.allocate(model, state, claim)
                if result is not None:
                    self.take(model, node, state, service, replica, result)
                    return True
            if len(states) < model.nodes:
                state = self.fresh(pool)
                result = self.allocate(model, state, claim)
                if result is not None:
                    states.append(state)
                    self.take(model, len(states) - 1, state, service, replica, result)
                    return True
        self.unplaced.append((service, replica))
        return False


@dataclass(frozen=True)
class Demand:
    """One service's replicas and its claim on each pool it may use, in pool order."""

    service: ServicePlan
    replicas: int
    claims: tuple[ClaimShape, ...]
    size: int
    """A sort key for 'largest first': counter units the first match consumes."""


def _order(demands: Sequence[Demand], order: str) -> list[tuple[Demand, int]]:
    flat = [(d, r) for d in demands for r in range(d.replicas)]
    if order == "largest first":
        return sorted(flat, key=lambda x: -x[0].size)
    if order == "smallest first":
        return sorted(flat, key=lambda x: x[0].size)
    if order == "reverse":
        return [(d, r) for d in reversed(demands) for r in range(d.replicas)]
    if order == "round robin":
        out = []
        for r in range(max((d.replicas for d in demands), default=0)):
            out += [(d, r) for d in demands if r < d.replicas]
        return out
    return flat


def pack(models: Mapping[str, PoolModel], demands: Sequence[Demand], order: str) -> Packing:
    """Place every replica of ``demands`` in ``order`` (one of :data:`ORDERS`)."""
    packing = Packing(models)
    for demand, replica in _order(demands, order):
        packing.place(demand.claims, demand.service.service.name, replica)
    return packing


def verify_packing(packing: Packing, demands: Sequence[Demand]) -> list[str]:
    """What is wrong with a packing by the allocator's rules (empty: nothing).

    Independent of the search: every placed device matches its subrequest, no device is
    taken twice on a node, ``same`` attributes agree, counts are right, and no shared
    counter of a node is consumed beyond its value.
    """
    problems = []
    claims = {(d.service.service.name, c.pool): c for d in demands for c in d.claims}
    used: dict[tuple[str, int], set[int]] = {}
    consumed: dict[tuple[str, int], dict[int, int]] = {}
    for p in packing.placements:
        model = packing.models[p.pool]
        claim = claims[(p.service, p.pool)]
        sub = claim.subrequests[p.subrequest]
        expected = len(sub.matching) if sub.all_devices else sub.count
        if len(p.slots) != expected:
            problems.append(f"{p.service}#{p.replica}: {len(p.slots)} devices, not {expected}")
        taken = used.setdefault((p.pool, p.node), set())
        for slot in p.slots:
            if slot not in sub.matching:
                problems.append(f"{p.service}#{p.replica}: {model.slot_name(slot)} does not "
                                "match")
            if slot in taken:
                problems.append(f"{p.service}#{p.replica}: {model.slot_name(slot)} taken twice")
            taken.add(slot)
            totals = consumed.setdefault((p.pool, p.node), {})
            for counter, amount in model.counters.consumes[slot]:
                totals[counter] = totals.get(counter, 0) + amount
        if claim.same:
            keys = {_group(model, s, claim.same) for s in p.slots}
            if len(keys) > 1 or any(None in k for k in keys):
                problems.append(f"{p.service}#{p.replica}: devices differ in "
                                f"{', '.join(claim.same)}")
    for (pool, node), totals in consumed.items():
        model = packing.models[pool]
        for counter, amount in totals.items():
            if amount > model.counters.capacity[counter]:
                problems.append(f"pool {pool} node {node}: counter "
                                f"{model.counters.names[counter]} consumed {amount} > "
                                f"{model.counters.capacity[counter]}")
    return problems


# --- lint -------------------------------------------------------------------------------


def _models(pools: Sequence[PoolPlan], inventory: Inventory) -> dict[str, PoolModel]:
    out = {}
    for pool in pools:
        inv = inventory(pool)
        out[pool.name] = PoolModel(pool, inv, counter_model(pool, inv), pool.pool.nodes)
    return out


def demands_of(analyzed: Analyzed, models: Mapping[str, PoolModel],
               at_max: bool) -> list[Demand]:
    """Each service's replicas and its claim per pool, from the satisfiability analyses."""
    out = []
    for svc, analyses in analyzed:
        gpu = svc.service.gpu
        assert gpu is not None
        replicas = svc.service.max_replicas if at_max else svc.service.min_replicas
        claims = []
        size = 0
        for pool in svc.pools:
            pool_name = pool.name
            model = models.get(pool_name)
            if model is None:
                continue
            subs = []
            for analysis in analyses:
                pa = next((p for p in analysis.pools if p.pool.name == pool_name), None)
                if pa is None:
                    continue
                matched = {v.shape for v in pa.verdicts if v.matched}
                slots = tuple(s for s, (shape, _) in enumerate(model.inventory.slots)
                              if shape in matched)
                choice = analysis.choice
                subs.append(SubRequest(choice.label, choice.count, choice.all_devices, slots))
                if slots and not size:
                    size = choice.count * _slices_of(model, slots[0])
            if subs:
                claims.append(ClaimShape(pool_name, svc.service.name, tuple(subs),
                                         tuple(gpu.same)))
        out.append(Demand(svc, replicas, tuple(claims), size or 1))
    return out


def _slices_of(model: PoolModel, slot: int) -> int:
    """Memory slices a device consumes (1 for a device without counters)."""
    names = model.counters.names
    return sum(a for c, a in model.counters.consumes[slot]
               if "/memory-slice-" in names[c]) or 1



def _short(packing: Packing) -> dict[str, int]:
    out: dict[str, int] = {}
    for service, _ in packing.unplaced:
        out[service] = out.get(service, 0) + 1
    return out


def headroom(packing: Packing, demands: Sequence[Demand]) -> dict[str, int]:
    """Per service, how many more replicas would still fit after ``packing``."""
    out = {}
    for demand in demands:
        trial = Packing(packing.models, {k: [s.copy() for s in v]
                                         for k, v in packing.nodes.items()})
        n = 0
        while n < 64 and trial.place(demand.claims, demand.service.service.name, -1):
            n += 1
        out[demand.service.service.name] = n
    return out


def gpu_picture(packing: Packing) -> list[str]:
    """Per used GPU of a dynamic pool: which service holds each memory slice, the free ones,
    and the multiprocessors counter used, e.g. ``h100 node 0 gpu-0: 0-3 3g.40gb (large),
    4-5 2g.20gb (medium), 6 1g.10gb (small), 7 free; multiprocessors 108/132``."""
    lines = []
    for pool, states in sorted(packing.nodes.items()):
        model = packing.models[pool]
        if not model.counters.parts:
            continue
        for node, state in enumerate(states):
            held: dict[int, list[tuple[int, int, str]]] = {}
            for p in packing.placements:
                if p.pool != pool or p.node != node:
                    continue
                for slot in p.slots:
                    gpu, profile, start, size = model.counters.parts[slot]
                    held.setdefault(gpu, []).append((start, size, f"{profile or 'full GPU'} "
                                                                  f"({p.service})"))
            for gpu, pieces in sorted(held.items()):
                lines.append(f"{pool} node {node} gpu-{gpu}: "
                             + _slice_map(model, state, gpu, sorted(pieces)))
    return lines


def _slice_map(model: PoolModel, state: NodeState, gpu: int,
               pieces: Sequence[tuple[int, int, str]]) -> str:
    names = model.counters.names
    prefix = f"gpu-{gpu}-counter-set/"
    slices = sum(1 for n in names if n.startswith(prefix + "memory-slice-"))
    taken = {i for start, size, _ in pieces for i in range(start, start + size)}
    out = [f"{start}-{start + size - 1} {what}" if size > 1 else f"{start} {what}"
           for start, size, what in pieces]
    free = [i for i in range(slices) if i not in taken]
    if free:
        out.append(",".join(str(i) for i in free) + " free")
    sms = names.index(prefix + "multiprocessors") if prefix + "multiprocessors" in names else -1
    tail = (f"; multiprocessors {state.consumed[sms]}/{model.counters.capacity[sms]}"
            if sms >= 0 else "")
    return ", ".join(out) + tail


def cluster_packing(cluster: ClusterPlan, matcher_inventory: Inventory,
                    analyze: Callable[[ServicePlan], Sequence[ChoiceAnalysis]]
                    ) -> Packing | None:
    """The packing of the cluster's minimum replicas in service order (None: no dynamic
    MIG pool among the pools its services use)."""
    analyzed = [(svc, analyze(svc)) for svc in cluster.services
                if svc.service.gpu is not None and svc.gpu_class is not None]
    models = cluster_models(cluster, analyzed, matcher_inventory)
    if not any(m.counters.parts for m in models.values()):
        return None
    return pack(models, demands_of(analyzed, models, at_max=False), ORDERS[0])


def gpu_placements(packing: Packing) -> dict[tuple[str, int, int], list[tuple[str, int, int]]]:
    """(pool, node, GPU index) → (profile, start, size) of each slice allocated on it."""
    out: dict[tuple[str, int, int], list[tuple[str, int, int]]] = {}
    for p in packing.placements:
        parts = packing.models[p.pool].counters.parts
        for slot in p.slots:
            if parts:
                gpu, profile, start, size = parts[slot]
                out.setdefault((p.pool, p.node, gpu), []).append(
                    (profile or "full GPU", start, size))
    return dict(sorted(out.items()))


def packing_lines(cluster: str, packing: Packing) -> list[str]:
    """The text picture of a cluster's packing: a heading, a line per used GPU, the unplaced."""
    lines = [f"packing of cluster {cluster} (minimum replicas, service order):"]
    lines += ["  " + line for line in gpu_picture(packing)]
    lines += [f"  unplaced: {service} replica {replica}" for service, replica in packing.unplaced]
    return lines


def cluster_models(cluster: ClusterPlan, analyzed: Analyzed,
                   inventory: Inventory) -> dict[str, PoolModel]:
    """The allocator's model of every NVIDIA pool the analysed services may use."""
    pools = {p.name for svc, _ in analyzed for p in svc.pools
             if p.pool.platform == "nvidia" and p.gpu is not None}
    return _models([p for p in cluster.pools if p.name in pools], inventory)


def has_dynamic_pools(cluster: ClusterPlan) -> bool:
    """Whether a pool of the cluster is dynamic MIG (then this module owns capacity)."""
    return any(is_dynamic(p) for p in cluster.pools)


def capacity_findings(cluster: ClusterPlan, analyzed: Analyzed,
                      inventory: Inventory) -> list[Finding]:
    """GEN240 and GEN241 for a cluster with dynamic MIG pools (all its pools, all services)."""
    models = cluster_models(cluster, analyzed, inventory)
    findings: list[Finding] = []
    previous: list[int] = []
    for at_max in (False, True):
        demands = demands_of(analyzed, models, at_max)
        if [d.replicas for d in demands] == previous:
            break  # no autoscaling beyond the minimum: the same demand again
        previous = [d.replicas for d in demands]
        results = {order: pack(models, demands, order) for order in ORDERS}
        fitting = [o for o, p in results.items() if not p.unplaced]
        what = "autoscaling max_replicas" if at_max else "minimum replicas"
        if not fitting:
            best_order = min(results, key=lambda o: len(results[o].unplaced))
            best = results[best_order]
            for service, missing in sorted(_short(best).items()):
                svc = next(d.service for d in demands if d.service.service.name == service)
                wanted = next(d.replicas for d in demands if d.service.service.name == service)
                findings.append(Finding(
                    "GEN240",
                    f"the dynamic MIG counters of cluster {cluster.name!r} hold "
                    f"{wanted - missing} of the {wanted} replicas ({what}) of service "
                    f"{service!r} at once, in the best of the arrival orders gen tried "
                    f"({best_order}); pools: {', '.join(models)}",
                    *svc.replicas_at(at_max),
                    severity=Severity.WARNING if at_max else Severity.ERROR,
                    hint="add nodes or GPUs, lower the replicas, or ask for a smaller slice; "
                    f"see 'gen plan --cluster {cluster.name}'",
                    related=tuple(cluster.located.at("node_pools", i) for i, p in
                                  enumerate(cluster.pools) if p.name in models),
                    service=service, cluster=cluster.name,
                ))
            if not at_max:
                break
            continue
        failing = [o for o in ORDERS if o not in fitting]
        if failing:
            bad = results[failing[0]]
            room = headroom(results[fitting[0]], demands)
            lost = ", ".join(f"{n} of {s!r}" for s, n in sorted(_short(bad).items()))
            first = demands[0].service
            findings.append(Finding(
                "GEN241",
                f"the {what} of cluster {cluster.name!r} fit its dynamic MIG pools when pods "
                f"arrive in the order '{fitting[0]}', but not in '{failing[0]}' ({lost} left "
                "Pending: the "
                "allocator takes the first free slice in device order and strands memory "
                "slices); headroom after the fitting order: "
                + ", ".join(f"{n} more {s!r}" for s, n in sorted(room.items())),
                first.located.at("gpu"), "gpu", severity=Severity.WARNING,
                hint="keep headroom, use fewer distinct slice sizes per pool, or a static "
                f"layout from 'gen plan --cluster {cluster.name}'",
                related=tuple(d.service.located.at("gpu") for d in demands[1:]),
                service=first.service.name, cluster=cluster.name,
            ))
    return findings
