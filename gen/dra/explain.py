"""Explain a service's device claims: what each pool's devices make of them, and the fit.

:func:`explain` answers, as data, what ``gen explain`` prints: per cluster, the service's
claims (first choice and alternatives) with their selectors in allocator order, which device
shapes of each eligible pool match and which selector rejects the others (and why), how many
replicas one node holds, the memory fit per distinct device, and the cluster's GEN204/GEN205
findings about that service, associated by their ``service``/``cluster`` fields. On request
it adds the simulated ResourceSlices of one node per pool and the cluster's MIG runbook.

Nothing here prints or exits: the CLI formats an :class:`Explanation` as text or JSON.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from gen.errors import Finding, Severity, UnresolvedReferenceError

if TYPE_CHECKING:
    from collections.abc import Callable

    from gen.dra.allocator import NodeState, Packing, PoolModel
    from gen.dra.satisfiability import ChoiceAnalysis
    from gen.fleet.plan import ClusterPlan, Plan, ServicePlan

__all__ = [
    "EXPLAINED_RULES",
    "JSON_SCHEMA_VERSION",
    "ClaimExplanation",
    "ClusterExplanation",
    "Explanation",
    "FitExplanation",
    "PoolExplanation",
    "PoolSlices",
    "Runbook",
    "Selector",
    "ServiceExplanation",
    "ShapeMatch",
    "explain",
    "gpu_picture",
    "gpu_placements",
    "packing_lines",
    "to_json",
]

EXPLAINED_RULES = ("GEN204", "GEN205", "GEN240", "GEN241")
"""The findings an explanation carries: a claim no node can allocate, and capacity (with
shared counters too: GEN240, and fragmentation: GEN241)."""


@dataclass(frozen=True)
class Selector:
    """One selector of a claim, in allocator order (class selectors, then the request's)."""

    label: str
    expression: str


@dataclass(frozen=True)
class ShapeMatch:
    """Devices of one shape on a pool under one claim, with the selector that rejects them."""

    shape: str
    """``NVIDIA H100 80GB HBM3`` or ``NVIDIA H100 80GB HBM3 MIG 3g.40gb``."""
    per_node: int
    total: int
    """Devices of this shape (and verdict) in the whole pool."""
    matched: bool
    selector: str = ""
    """Label of the rejecting selector; empty when matched."""
    reason: str = ""
    """Why that selector rejects the shape; empty when matched."""


@dataclass(frozen=True)
class PoolExplanation:
    """One claim on one pool: matches, misses, and how many replicas the nodes hold."""

    name: str
    nodes: int
    devices_per_node: int
    shapes: tuple[ShapeMatch, ...]
    replicas_per_node: int
    hosting_nodes: int
    why_not: str = ""
    """Why no node holds a replica; empty when some do."""


@dataclass(frozen=True)
class ClaimExplanation:
    """One way to satisfy the service's claim: the first choice or an alternative."""

    label: str
    gpu_class: str
    count: int
    all_devices: bool
    selectors: tuple[Selector, ...]
    same: tuple[str, ...]
    """Attributes every device of the claim must share (``matchAttribute``)."""
    compiles: bool
    """False when a selector does not compile (GEN203); then ``pools`` is empty."""
    pools: tuple[PoolExplanation, ...]
    satisfiable: bool


@dataclass(frozen=True)
class FitExplanation:
    """The model's memory fit on one device the service can get."""

    model: str
    device: str
    pool: str
    fits: bool
    max_model_len_fit: int


@dataclass(frozen=True)
class ServiceExplanation:
    """A service in one cluster."""

    service: str
    cluster: str
    dra_api_version: str | None
    """None on a device-plugin cluster: selectors shown as a DRA cluster would apply them."""
    has_dra_devices: bool
    """False when no NVIDIA pool of the cluster can run it: nothing to match."""
    claims: tuple[ClaimExplanation, ...]
    fit: tuple[FitExplanation, ...]
    findings: tuple[Finding, ...]
    """The cluster's :data:`EXPLAINED_RULES` findings about this service."""
    group: str = ""
    """The group shape of a replica that spans nodes
    (:meth:`gen.fleet.parallelism.GroupShape.describe`), "" for a one-pod replica."""

    @property
    def allocatable(self) -> bool:
        """No finding of severity error: the claims can be allocated for every replica."""
        return not any(f.severity is Severity.ERROR for f in self.findings)


@dataclass(frozen=True)
class PoolSlices:
    """The simulated ResourceSlice documents node 0 of a pool publishes."""

    pool: str
    documents: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class ClusterExplanation:
    """One cluster: the service's explanation there, and the extras asked for."""

    name: str
    services: tuple[ServiceExplanation, ...]
    slices: tuple[PoolSlices, ...] | None = None
    """None unless asked for; one entry per pool with GPUs and nodes."""
    runbook: str | None = None
    """The cluster's MIG runbook (Markdown) when asked for."""


@dataclass(frozen=True)
class Explanation:
    """What :func:`explain` found, cluster by cluster."""

    service: str | None
    clusters: tuple[ClusterExplanation, ...]

    @property
    def ok(self) -> bool:
        """Every explained service's claims are allocatable in every cluster explained."""
        return all(s.allocatable for c in self.clusters for s in c.services)


def _clusters(plan: Plan, service: str | None, wanted: Sequence[str]) -> list[ClusterPlan]:
    """The clusters to explain, in the order asked (all, by name, when none is asked)."""
    plan.select(wanted)  # raises on an unknown cluster
    if service is not None:
        if service not in plan.profiles.services:
            names = sorted(plan.profiles.services)
            raise UnresolvedReferenceError(
                f"unknown service {service!r}; known: {', '.join(names) or 'none defined'}"
            )
        runs_in = [c.name for c in plan.clusters
                   if any(s.service.name == service for s in c.services)]
        outside = [name for name in wanted if name not in runs_in]
        if outside:
            raise UnresolvedReferenceError(
                f"service {service!r} does not run in {', '.join(outside)}; "
                f"it runs in: {', '.join(runs_in) or 'no cluster'}"
            )
        wanted = wanted or runs_in
    known = {c.name: c for c in plan.clusters}
    return [known[name] for name in (wanted or sorted(known))]


def _pool(analysis: ChoiceAnalysis, index: int) -> PoolExplanation:
    from gen.dra.simulate import shape_summary

    pool = analysis.pools[index]
    selectors = analysis.choice.selectors
    rows: dict[tuple[str, bool, str, str], list[int]] = {}
    for v in pool.verdicts:
        shape = pool.inventory.shapes[v.shape]
        r = v.rejection
        label, reason = ("", "") if r is None else (selectors[r.selector].label, r.reason)
        row = rows.setdefault((shape_summary(shape), v.matched, label, reason), [0, 0])
        row[0] += shape.per_node
        row[1] += shape.total
    return PoolExplanation(
        name=pool.pool.name,
        nodes=pool.pool.pool.nodes,
        devices_per_node=pool.inventory.devices_per_node,
        shapes=tuple(ShapeMatch(summary, per_node, total, matched, label, reason)
                     for (summary, matched, label, reason), (per_node, total) in rows.items()),
        replicas_per_node=pool.replicas_per_node,
        hosting_nodes=pool.hosting_nodes,
        why_not=pool.why_not,
    )


def _claim(analysis: ChoiceAnalysis, same: tuple[str, ...]) -> ClaimExplanation:
    choice = analysis.choice
    return ClaimExplanation(
        label=choice.label,
        gpu_class=choice.gpu_class.name,
        count=choice.count,
        all_devices=choice.all_devices,
        selectors=tuple(Selector(s.label, s.expression) for s in choice.selectors),
        same=same,
        compiles=analysis.compiles,
        pools=tuple(_pool(analysis, i) for i in range(len(analysis.pools))),
        satisfiable=analysis.satisfiable,
    )


def _fit(svc: ServicePlan) -> tuple[FitExplanation, ...]:
    from gen.fleet.sizing import service_fit

    # The verdict lint gives (GEN301), at the max_model_len the Deployment renders.
    return tuple(
        FitExplanation(svc.service.model, cand.name, cand.pool.name, report.fits,
                       report.max_model_len_fit)
        for cand, report in service_fit(svc)[1]
    )


def _service(cluster: ClusterPlan, svc: ServicePlan,
             findings: Sequence[Finding]) -> ServiceExplanation:
    from gen.dra.satisfiability import Matcher, analyze_service, nvidia_pools

    name = svc.service.name
    mine = tuple(f for f in findings if f.rule in EXPLAINED_RULES
                 and f.service == name and f.cluster == cluster.name)
    has_devices = bool(nvidia_pools(svc))
    claims: tuple[ClaimExplanation, ...] = ()
    fit: tuple[FitExplanation, ...] = ()
    if has_devices:
        gpu = svc.service.gpu
        same = tuple(gpu.same) if gpu is not None else ()
        claims = tuple(_claim(a, same) for a in analyze_service(Matcher(), cluster, svc))
        fit = _fit(svc)
    from gen.fleet.parallelism import service_shape

    shape = service_shape(svc)
    group = shape.describe() if shape is not None and shape.multi_node else ""
    return ServiceExplanation(name, cluster.name, cluster.dra_api_version, has_devices,
                              claims, fit, mine, group)


def _slices(cluster: ClusterPlan) -> tuple[PoolSlices, ...]:
    from gen.dra.simulate import resource_slices

    return tuple(
        PoolSlices(pool.name, tuple(resource_slices(pool, 0, cluster.minor)))
        for pool in cluster.pools if pool.gpu is not None and pool.pool.nodes
    )


Runbook: TypeAlias = "Callable[[ClusterPlan], str]"
"""Writes a cluster's MIG runbook (``gen.nvidia.build.runbook``; handed in by the caller,
since the DRA capability does not import the NVIDIA one)."""


def explain(plan: Plan, service: str | None = None, clusters: Sequence[str] = (), *,
            runbook: Runbook | None = None, slices: bool = False) -> Explanation:
    """Explain ``service`` (or nothing but the extras) in ``clusters`` (default: all it runs in).

    With ``runbook``, each cluster's explanation carries the MIG runbook it writes; with
    ``slices``, the simulated ResourceSlices of one node per pool.

    Raises :class:`UnresolvedReferenceError` for an unknown cluster or service, or a cluster
    the service does not run in.
    """
    from gen.dra.capacity import check

    chosen = _clusters(plan, service, clusters)
    findings = check(plan) if service is not None else []
    out = []
    for cluster in chosen:
        services = tuple(_service(cluster, svc, findings) for svc in cluster.services
                         if service is not None and svc.service.name == service)
        mig_runbook = runbook(cluster) if runbook is not None else None
        out.append(ClusterExplanation(cluster.name, services,
                                      _slices(cluster) if slices else None, mig_runbook))
    return Explanation(service, tuple(out))


def _pool_json(pool: PoolExplanation) -> dict[str, Any]:
    return {
        "name": pool.name,
        "nodes": pool.nodes,
        "devices_per_node": pool.devices_per_node,
        "shapes": [
            {"shape": s.shape, "per_node": s.per_node, "total": s.total, "matched": s.matched,
             "selector": s.selector or None, "reason": s.reason or None}
            for s in pool.shapes
        ],
        "replicas_per_node": pool.replicas_per_node,
        "hosting_nodes": pool.hosting_nodes,
        "why_not": pool.why_not or None,
    }


def _service_json(svc: ServiceExplanation) -> dict[str, Any]:
    return {
        "service": svc.service,
        "dra_api_version": svc.dra_api_version,
        "has_dra_devices": svc.has_dra_devices,
        "allocatable": svc.allocatable,
        "claims": [
            {
                "label": c.label,
                "gpu_class": c.gpu_class,
                "count": None if c.all_devices else c.count,
                "all_devices": c.all_devices,
                "selectors": [{"label": s.label, "expression": s.expression}
                              for s in c.selectors],
                "same": list(c.same),
                "compiles": c.compiles,
                "satisfiable": c.satisfiable if c.compiles else None,
                "pools": [_pool_json(p) for p in c.pools],
            }
            for c in svc.claims
        ],
        "fit": [
            {"model": f.model, "device": f.device, "pool": f.pool, "fits": f.fits,
             "max_model_len_fit": f.max_model_len_fit}
            for f in svc.fit
        ],
        "findings": [f.to_json() for f in svc.findings],
        "group": svc.group or None,
    }


JSON_SCHEMA_VERSION = 1


def to_json(explanation: Explanation) -> dict[str, Any]:
    """The documented JSON form (``gen explain --json``), schema version 1.

    Keys: ``schema_version``, ``service`` (or null), ``ok``, ``clusters``: per cluster
    ``name``, ``services`` (the service there: ``dra_api_version``, ``has_dra_devices``,
    ``allocatable``, ``group`` (a replica that spans nodes: its shape, else null), ``claims``
    with their ``selectors``, ``same``, ``compiles``,
    ``satisfiable`` and per pool the device ``shapes`` that match or not and why, the
    replicas per node; ``fit`` per device; ``findings`` as ``gen lint --format json`` writes
    them), ``slices`` (per pool the ResourceSlice documents, or null) and ``runbook``
    (Markdown, or null).
    """
    return {
        "schema_version": JSON_SCHEMA_VERSION,
        "service": explanation.service,
        "ok": explanation.ok,
        "clusters": [
            {
                "name": c.name,
                "services": [_service_json(s) for s in c.services],
                "slices": None if c.slices is None else [
                    {"pool": s.pool, "documents": [dict(d) for d in s.documents]}
                    for s in c.slices
                ],
                "runbook": c.runbook,
            }
            for c in explanation.clusters
        ],
    }


# --- the packing of dynamic MIG pools (``gen explain --slices``) ---------------------------


def gpu_picture(packing: Packing) -> list[str]:
    """Per used GPU of a dynamic pool: which service holds each memory slice, the free ones,
    and the multiprocessors counter used, e.g. ``h100 node 0 gpu-0: 0-3 3g.40gb (large),
    4-5 2g.20gb (medium), 6 1g.10gb (small), 7 free; multiprocessors 108/132``."""
    held: dict[tuple[str, int], dict[int, list[tuple[int, int, str]]]] = {}
    for p in packing.placements:
        parts = packing.models[p.pool].counters.parts
        for slot in p.slots if parts else ():
            part = parts[slot]
            held.setdefault((p.pool, p.node), {}).setdefault(part.gpu, []).append(
                (part.start, part.size, f"{part.profile or 'full GPU'} ({p.service})"))
    lines = []
    for (pool, node), gpus in sorted(held.items()):
        model = packing.models[pool]
        state = packing.node_state(pool, node)
        for gpu, pieces in sorted(gpus.items()):
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


def gpu_placements(packing: Packing) -> dict[tuple[str, int, int], list[tuple[str, int, int]]]:
    """(pool, node, GPU index) → (profile, start, size) of each slice allocated on it."""
    out: dict[tuple[str, int, int], list[tuple[str, int, int]]] = {}
    for p in packing.placements:
        parts = packing.models[p.pool].counters.parts
        for slot in p.slots if parts else ():
            part = parts[slot]
            out.setdefault((p.pool, p.node, part.gpu), []).append(
                (part.profile or "full GPU", part.start, part.size))
    return dict(sorted(out.items()))


def packing_lines(cluster: str, packing: Packing) -> list[str]:
    """The text picture of a cluster's packing: a heading, a line per used GPU, the unplaced."""
    lines = [f"packing of cluster {cluster} (minimum replicas, service order):"]
    lines += ["  " + line for line in gpu_picture(packing)]
    lines += [f"  unplaced: {service} replica {replica}" for service, replica in packing.unplaced]
    return lines
