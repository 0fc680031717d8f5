"""Allocation on a node, the way the scheduler's structured allocator does it.

Kubernetes' allocator (kubernetes/kubernetes ``staging/src/k8s.io/dynamic-resource-allocation/
structured/internal/stable/allocator_stable.go``@v1.37.2, ``allocateOne`` and
``allocateDevice``) allocates a pod's claims on one node like this, and so does
:func:`allocate_claim`:

* requests in order; a request with ``firstAvailable`` tries its subrequests in order and
  takes the first that succeeds;
* for each device a request still needs, the devices in slice order (pool, slice, device),
  starting after the previous device of the same request (combinations, not permutations);
  a device is skipped when it is in use, fails a selector, breaks a ``matchAttribute``
  constraint (:class:`SameAttribute`), or consumes more of a shared counter than is left;
  otherwise it is taken and the search recurses, and on failure the device is given back
  and the next one tried (backtracking);
* ``allocationMode: All`` takes every matching device; if one of them cannot be taken, the
  (sub)request fails.

The first solution wins; there is no scoring. A search that tries :data:`SEARCH_BUDGET`
devices without an answer gives up (:data:`GAVE_UP`): gen cannot tell, which is not "does
not fit". Which node a pod lands on is the scheduler's choice among the nodes where
allocation succeeds: :class:`Packing` places pods first fit, pool by pool in the service's
pool order, nodes in index order, keeping a pool's nodes as runs of identical nodes so that
equal nodes are decided once; :func:`pack` places a demand in one of the arrival orders
(:class:`Order`). Devices without counters consume nothing but themselves.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import NamedTuple, assert_never

from gen.caches import BoundedCache
from gen.dra.devices import Device
from gen.dra.simulate import NodeInventory, group_key, node_device_names, node_partitions
from gen.fleet.plan import PoolPlan, ServicePlan

__all__ = [
    "GAVE_UP",
    "HEADROOM_LIMIT",
    "ORDERS",
    "SEARCH_BUDGET",
    "Allocation",
    "ClaimShape",
    "CounterModel",
    "CounterPart",
    "Demand",
    "Fill",
    "GaveUp",
    "NodeRun",
    "NodeState",
    "Order",
    "Packing",
    "PlacedBlock",
    "Placement",
    "PoolModel",
    "SameAttribute",
    "SubRequest",
    "allocate_claim",
    "arrival",
    "batches",
    "counter_model",
    "fill",
    "headroom",
    "pack",
    "pool_model",
    "verify_packing",
]

SEARCH_BUDGET = 200_000
"""Devices tried per claim on a node before the search gives up (a claim of many devices on
a large node is exponential in the worst case; the scheduler bounds it with a timeout)."""

HEADROOM_LIMIT = 64
""":func:`headroom` counts extra replicas up to this many: enough to tell "a little room"
from "a lot" in a finding, without packing a large pool to the brim per service."""


class Order(StrEnum):
    """An arrival order of a demand's replicas (:func:`arrival`)."""

    SERVICE = "service order"
    """Service by service (namespace/name), each service's replicas together."""
    LARGEST = "largest first"
    """Replicas of the claims that consume the most counter units first."""
    SMALLEST = "smallest first"
    """Replicas of the claims that consume the fewest counter units first."""
    ROUND_ROBIN = "round robin"
    """One replica of each service in turn."""
    REVERSE = "reverse"
    """Service order, services reversed."""


ORDERS = tuple(Order)
"""The arrival orders a cluster with dynamic MIG pools is judged in, service order first."""


@dataclass(frozen=True)
class CounterPart:
    """Where a device slot of a dynamic pool sits: its GPU and memory slices."""

    gpu: int
    """GPU index on the node."""
    profile: str | None
    """MIG profile; None for the full GPU."""
    start: int
    """First memory slice."""
    size: int
    """Memory slices."""


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
    parts: tuple[CounterPart, ...] = ()
    """Per device slot of a dynamic pool (empty for a pool without counters)."""


def counter_model(pool: PoolPlan, inventory: NodeInventory) -> CounterModel:
    """The counters of a node of ``pool`` (none for a static pool) in slot order."""
    names: list[str] = []
    capacity: list[int] = []
    consumes: list[tuple[tuple[int, int], ...]] = []
    index: dict[str, int] = {}
    parts: list[CounterPart] = []
    for gpu in node_partitions(pool, "counters"):
        for counter, value in gpu.counters.items():
            index[f"{gpu.counter_set}/{counter}"] = len(names)
            names.append(f"{gpu.counter_set}/{counter}")
            capacity.append(value)
        for part in gpu.partitions:
            parts.append(CounterPart(gpu.index, part.profile, part.start, part.size))
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

    label: str = field(compare=False)
    """The choice it comes from (not part of its value: equal requests share a memo)."""
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

    @cached_property
    def hardware(self) -> tuple[object, ...]:
        """What the search reads of the pool, as a value (equal for pools of equal nodes)."""
        return (self.inventory.slots, tuple(s.device for s in self.inventory.shapes),
                self.counters.capacity, self.counters.consumes)

    def device(self, slot: int) -> Device:
        """The representative device of a slot."""
        return self.inventory.shapes[self.inventory.slots[slot][0]].device

    def slot_name(self, slot: int) -> str:
        """The device name of a slot on a node."""
        return self.counters.devices[slot]


def pool_model(pool: PoolPlan, inventory: NodeInventory) -> PoolModel:
    """The allocator's model of ``pool`` from its node inventory."""
    return PoolModel(pool, inventory, counter_model(pool, inventory), pool.pool.nodes)


@dataclass(frozen=True)
class NodeState:
    """What is allocated on one node: the slots in use and the counters consumed."""

    used: int
    """Bit ``s`` set: device slot ``s`` is allocated."""
    consumed: tuple[int, ...]
    """Per counter index, the amount consumed."""

    @classmethod
    def empty(cls, model: PoolModel) -> NodeState:
        """A node of ``model``'s pool with nothing allocated."""
        return cls(0, (0,) * len(model.counters.capacity))

    def taking(self, model: PoolModel, slots: Sequence[int]) -> NodeState:
        """This node after ``slots`` are allocated."""
        consumed = list(self.consumed)
        used = self.used
        for slot in slots:
            used |= 1 << slot
            _take(model, consumed, slot)
        return NodeState(used, tuple(consumed))


def _take(model: PoolModel, consumed: list[int], slot: int) -> None:
    for counter, amount in model.counters.consumes[slot]:
        consumed[counter] += amount


def _release(model: PoolModel, consumed: list[int], slot: int) -> None:
    for counter, amount in model.counters.consumes[slot]:
        consumed[counter] -= amount


class SameAttribute:
    """``matchAttribute``: the devices of one (sub)request share every attribute's value
    (upstream's ``matchAttributeConstraint``: ``add`` refuses a device that breaks it,
    ``remove`` undoes an ``add``)."""

    def __init__(self, inventory: NodeInventory, attributes: Sequence[str]) -> None:
        self.inventory = inventory
        self.attributes = tuple(attributes)
        """The attributes whose values must agree."""
        self.value: tuple[object, ...] | None = None
        """The values the devices taken so far share; None while none is taken."""
        self.devices = 0
        """Devices added and not removed."""

    def add(self, slot: int) -> bool:
        """Whether the device of ``slot`` keeps the constraint; if so, it counts as taken."""
        if not self.attributes:
            return True
        value = tuple(group_key(self.inventory, slot, a) for a in self.attributes)
        if None in value or (self.value is not None and value != self.value):
            return False
        self.value = value
        self.devices += 1
        return True

    def remove(self) -> None:
        """Undo the latest :meth:`add` that succeeded."""
        if not self.attributes:
            return
        self.devices -= 1
        if not self.devices:
            self.value = None


class Allocation(NamedTuple):
    """A claim's allocation on a node: which (sub)request, and its device slots."""

    subrequest: int
    slots: tuple[int, ...]


@dataclass(frozen=True)
class GaveUp:
    """The search tried ``tried`` devices without an answer: gen cannot tell."""

    tried: int


GAVE_UP = GaveUp(SEARCH_BUDGET)

Outcome = Allocation | GaveUp | None
"""What :func:`allocate_claim` finds: an allocation, a give-up, or None (does not fit)."""


class _OutOfBudget(Exception):
    """Raised inside a :class:`_Search` when its budget is spent."""


class _Search:
    """The state of one claim's search on one node (upstream's ``allocator`` struct: "used
    while an Allocate is running")."""

    def __init__(self, model: PoolModel, state: NodeState) -> None:
        self.model = model
        self.used = state.used
        """Slots in use: the node's, and the ones this attempt holds."""
        self.consumed = list(state.consumed)
        """Counters consumed: the node's, and this attempt's."""
        self.budget = SEARCH_BUDGET
        """Devices the search may still try (one budget for every subrequest)."""
        self.chosen: list[int] = []
        """The slots this attempt holds, in the order taken."""

    def _fits(self, slot: int) -> bool:
        capacity = self.model.counters.capacity
        return all(self.consumed[c] + amount <= capacity[c]
                   for c, amount in self.model.counters.consumes[slot])

    def _free(self, slot: int) -> bool:
        return not (self.used >> slot) & 1

    def _hold(self, slot: int) -> None:
        self.used |= 1 << slot
        _take(self.model, self.consumed, slot)
        self.chosen.append(slot)

    def _unhold(self, slot: int) -> None:
        self.used &= ~(1 << slot)
        _release(self.model, self.consumed, slot)
        self.chosen.pop()

    def drop(self) -> None:
        """Give back every slot this attempt holds (a failed subrequest)."""
        while self.chosen:
            self._unhold(self.chosen[-1])

    def exact(self, sub: SubRequest, same: SameAttribute) -> bool:
        """Take ``sub.count`` devices, first fit with backtracking."""
        def search(start: int) -> bool:
            if len(self.chosen) == sub.count:
                return True
            for i in range(start, len(sub.matching)):
                slot = sub.matching[i]
                self.budget -= 1
                if self.budget < 0:
                    raise _OutOfBudget
                if not self._free(slot) or not self._fits(slot) or not same.add(slot):
                    continue
                self._hold(slot)
                if search(i + 1):
                    return True
                self._unhold(slot)
                same.remove()
            return False

        return search(0)

    def all(self, sub: SubRequest, same: SameAttribute) -> bool:
        """Take every matching device (``allocationMode: All``)."""
        if not sub.matching:
            return False
        for slot in sub.matching:
            if not self._free(slot) or not self._fits(slot) or not same.add(slot):
                return False
            self._hold(slot)
        return True


def allocate_claim(model: PoolModel, state: NodeState, claim: ClaimShape) -> Outcome:
    """The first allocation the allocator finds for ``claim`` on a node in ``state``: the
    first (sub)request that succeeds, or None; :data:`GAVE_UP` when the budget runs out."""
    search = _Search(model, state)
    try:
        for k, sub in enumerate(claim.subrequests):
            same = SameAttribute(model.inventory, claim.same)
            if search.all(sub, same) if sub.all_devices else search.exact(sub, same):
                return Allocation(k, tuple(search.chosen))
            search.drop()
    except _OutOfBudget:
        return GAVE_UP
    return None


class _FillKey(NamedTuple):
    """What :func:`fill` reads, as values."""

    hardware: tuple[object, ...]
    subrequests: tuple[SubRequest, ...]
    same: tuple[str, ...]
    state: NodeState


class Fill(NamedTuple):
    """One node filled with copies of one claim: each allocation and the state after it."""

    steps: tuple[tuple[Allocation, NodeState], ...]
    complete: bool
    """Whether the fill stopped because no further copy fits (or the search gave up), not
    at the number of copies asked for."""
    gave_up: bool
    """Whether the search gave up on the state after the last step."""


_FILLS: BoundedCache[_FillKey, Fill] = BoundedCache("gen.dra.allocator.fills", 100_000)
"""Memo of :func:`fill` by value: equal nodes (of any pool, any plan) are filled once."""


def fill(model: PoolModel, state: NodeState, claim: ClaimShape, limit: int) -> Fill:
    """Up to ``limit`` copies of ``claim`` placed on one node in ``state``, one after
    another, each by :func:`allocate_claim` (memoised by value)."""
    key = _FillKey(model.hardware, claim.subrequests, claim.same, state)
    hit = _FILLS.data.get(key)
    if hit is not None and (hit.complete or len(hit.steps) >= limit):
        return hit
    steps: list[tuple[Allocation, NodeState]] = []
    outcome: Outcome = None
    while len(steps) < limit:
        outcome = allocate_claim(model, state, claim)
        if not isinstance(outcome, Allocation):
            break
        state = state.taking(model, outcome.slots)
        steps.append((outcome, state))
    return _FILLS.put(key, Fill(tuple(steps), len(steps) < limit,
                                 isinstance(outcome, GaveUp)))


@dataclass
class NodeRun:
    """``count`` consecutive nodes of a pool, all in ``state``."""

    state: NodeState
    count: int


@dataclass(frozen=True)
class Placement:
    """One replica's claim as allocated: where, and which devices."""

    service: str
    replica: int
    pool: str
    node: int
    subrequest: int
    slots: tuple[int, ...]


@dataclass(frozen=True)
class PlacedBlock:
    """Replicas of one service placed on consecutive nodes that were in equal states: node
    by node, each node taking ``steps`` in order."""

    service: str
    replicas: range
    pool: str
    node: int
    """The first node."""
    nodes: int
    steps: tuple[Allocation, ...]

    def placements(self) -> Iterator[Placement]:
        """The block's placements, replica by replica."""
        k = len(self.steps)
        for i, replica in enumerate(self.replicas):
            step = self.steps[i % k]
            yield Placement(self.service, replica, self.pool, self.node + i // k,
                            step.subrequest, step.slots)

    @property
    def devices(self) -> int:
        """Devices the block's replicas take."""
        return self.nodes * sum(len(step.slots) for step in self.steps)


@dataclass
class Packing:
    """Node states of every pool and the placements made, in the order they were made."""

    models: Mapping[str, PoolModel]
    runs: dict[str, list[NodeRun]] = field(default_factory=dict)
    """Per pool, its nodes in index order as runs of equal states."""
    blocks: list[PlacedBlock] = field(default_factory=list)
    """The placements made, in order, a block of equal nodes at a time."""
    unplaced: list[tuple[str, int]] = field(default_factory=list)
    """(service, replica) of each replica no node took."""
    gave_up: list[str] = field(default_factory=list)
    """The services for which the search gave up on some node: where their replicas went
    (and so everything after them) is not known."""

    @property
    def placements(self) -> list[Placement]:
        """Every replica placed, in the order placed."""
        return [p for block in self.blocks for p in block.placements()]

    def pool_runs(self, pool: str) -> list[NodeRun]:
        """The runs of ``pool`` (all its nodes empty at first)."""
        runs = self.runs.get(pool)
        if runs is None:
            model = self.models[pool]
            runs = self.runs[pool] = ([NodeRun(NodeState.empty(model), model.nodes)]
                                      if model.nodes else [])
        return runs

    def node_state(self, pool: str, node: int) -> NodeState:
        """The state of node ``node`` of ``pool``."""
        first = 0
        for run in self.pool_runs(pool):
            if node < first + run.count:
                return run.state
            first += run.count
        raise IndexError(node)

    def copy(self) -> Packing:
        """An independent copy."""
        return Packing(self.models, {k: [NodeRun(r.state, r.count) for r in v]
                                     for k, v in self.runs.items()},
                       list(self.blocks), list(self.unplaced), list(self.gave_up))

    def place(self, claims: Sequence[ClaimShape], service: str, replicas: range) -> int:
        """Place ``replicas`` of one service one after another, each first fit (pools in
        ``claims`` order, nodes in index order); return how many were placed.

        A node where one replica does not fit does not take a later one either (a node's
        free devices and counters only shrink), so the search goes on from there.
        """
        todo = replicas
        gave_up = False
        for claim in claims:
            model = self.models[claim.pool]
            runs = self.pool_runs(claim.pool)
            i, first = 0, 0
            while todo and i < len(runs):
                filled = fill(model, runs[i].state, claim, len(todo))
                gave_up |= filled.gave_up
                if not filled.steps:
                    first += runs[i].count
                    i += 1
                    continue
                todo, added = self._fill_run(runs, i, first, filled, model, service, todo)
                i += added
                first = sum(r.count for r in runs[:i])
        if gave_up and service not in self.gave_up:
            self.gave_up.append(service)
        self.unplaced += [(service, r) for r in todo]
        return len(replicas) - len(todo)

    def _fill_run(self, runs: list[NodeRun], i: int, first: int, filled: Fill,
                  model: PoolModel, service: str, todo: range) -> tuple[range, int]:
        """Fill the nodes of ``runs[i]`` in order with the first replicas of ``todo``;
        return the replicas left, and how many runs now stand where ``runs[i]`` stood,
        before the run of the nodes left untouched."""
        run, k = runs[i], len(filled.steps)
        steps = tuple(allocation for allocation, _ in filled.steps)
        whole = min(run.count, len(todo) // k)
        new: list[NodeRun] = []
        if whole:
            self.blocks.append(PlacedBlock(service, todo[:whole * k], model.name, first,
                                           whole, steps))
            new.append(NodeRun(filled.steps[-1][1], whole))
            todo = todo[whole * k:]
        left = run.count - whole
        if todo and left:
            part = len(todo)
            self.blocks.append(PlacedBlock(service, todo, model.name, first + whole, 1,
                                           steps[:part]))
            new.append(NodeRun(filled.steps[part - 1][1], 1))
            todo = todo[part:]
            left -= 1
        runs[i:i + 1] = [*new, *([NodeRun(run.state, left)] if left else [])]
        if i and new and runs[i - 1].state == new[0].state:  # equal neighbours: one run
            runs[i - 1].count += runs.pop(i).count
            return todo, len(new) - 1
        return todo, len(new)


@dataclass(frozen=True)
class Demand:
    """One service's replicas and its claim on each pool it may use, in pool order."""

    service: ServicePlan
    replicas: int
    claims: tuple[ClaimShape, ...]
    size: int
    """A sort key for 'largest first': counter units the first match consumes."""

    @property
    def name(self) -> str:
        """The service's name."""
        return self.service.service.name


def batches(demands: Sequence[Demand], order: Order) -> list[tuple[Demand, range]]:
    """The replicas in the order they arrive, consecutive replicas of one service together."""
    match order:
        case Order.SERVICE:
            ordered = list(demands)
        case Order.LARGEST:
            ordered = sorted(demands, key=lambda d: -d.size)
        case Order.SMALLEST:
            ordered = sorted(demands, key=lambda d: d.size)
        case Order.REVERSE:
            ordered = list(reversed(demands))
        case Order.ROUND_ROBIN:
            rounds = max((d.replicas for d in demands), default=0)
            return [(d, range(r, r + 1)) for r in range(rounds) for d in demands
                    if r < d.replicas]
        case _:
            assert_never(order)
    return [(d, range(d.replicas)) for d in ordered]


def arrival(demands: Sequence[Demand], order: Order) -> list[tuple[Demand, int]]:
    """(demand, replica) in the order the replicas arrive."""
    return [(d, r) for d, replicas in batches(demands, order) for r in replicas]


def pack(models: Mapping[str, PoolModel], demands: Sequence[Demand], order: Order) -> Packing:
    """Place every replica of ``demands`` in ``order``."""
    packing = Packing(models)
    for demand, replicas in batches(demands, order):
        packing.place(demand.claims, demand.name, replicas)
    return packing


def headroom(packing: Packing, demands: Sequence[Demand]) -> dict[str, int]:
    """Per service, how many more replicas (up to :data:`HEADROOM_LIMIT`) still fit after
    ``packing``, each service asked alone."""
    out = {}
    for demand in demands:
        extra = range(demand.replicas, demand.replicas + HEADROOM_LIMIT)
        out[demand.name] = packing.copy().place(demand.claims, demand.name, extra)
    return out


def verify_packing(packing: Packing, demands: Sequence[Demand]) -> list[str]:
    """What is wrong with a packing by the allocator's rules (empty: nothing).

    Independent of the search: every placed device matches its subrequest, no device is
    taken twice on a node, ``same`` attributes agree, counts are right, and no shared
    counter of a node is consumed beyond its value.
    """
    problems = []
    claims = {(d.name, c.pool): c for d in demands for c in d.claims}
    used: dict[tuple[str, int], set[int]] = {}
    consumed: dict[tuple[str, int], list[int]] = {}
    for p in packing.placements:
        model = packing.models[p.pool]
        claim = claims[(p.service, p.pool)]
        sub = claim.subrequests[p.subrequest]
        expected = len(sub.matching) if sub.all_devices else sub.count
        if len(p.slots) != expected:
            problems.append(f"{p.service}#{p.replica}: {len(p.slots)} devices, not {expected}")
        taken = used.setdefault((p.pool, p.node), set())
        totals = consumed.setdefault((p.pool, p.node), [0] * len(model.counters.capacity))
        for slot in p.slots:
            if slot not in sub.matching:
                problems.append(f"{p.service}#{p.replica}: {model.slot_name(slot)} does not "
                                "match")
            if slot in taken:
                problems.append(f"{p.service}#{p.replica}: {model.slot_name(slot)} taken twice")
            taken.add(slot)
            _take(model, totals, slot)
        if claim.same:
            keys = {tuple(group_key(model.inventory, s, a) for a in claim.same)
                    for s in p.slots}
            if len(keys) > 1 or any(None in k for k in keys):
                problems.append(f"{p.service}#{p.replica}: devices differ in "
                                f"{', '.join(claim.same)}")
    for (pool, node), totals in consumed.items():
        model = packing.models[pool]
        for counter, amount in enumerate(totals):
            if amount > model.counters.capacity[counter]:
                problems.append(f"pool {pool} node {node}: counter "
                                f"{model.counters.names[counter]} consumed {amount} > "
                                f"{model.counters.capacity[counter]}")
    return problems
