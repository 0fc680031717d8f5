"""Whether a DRA cluster holds every replica of every service at once: GEN205, GEN240, GEN241.

One engine decides (docs/architecture.md, "DRA capacity"): the services' claims, as
:mod:`gen.dra.satisfiability` analysed them, are placed by :mod:`gen.dra.allocator` (the
scheduler's allocator, first fit over nodes). A cluster without dynamic MIG pools is judged in
service order (GEN205); one with a dynamic MIG pool in every :class:`~gen.dra.allocator.Order`
(GEN240: none fits; GEN241: only some do). A search that gives up is GEN206, a warning: gen
cannot tell.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from gen.dra.allocator import (
    ORDERS,
    ClaimShape,
    Demand,
    Order,
    Packing,
    PoolModel,
    SubRequest,
    headroom,
    pack,
)
from gen.dra.satisfiability import ChoiceAnalysis, Matcher, analyze_cluster
from gen.dra.simulate import is_dynamic
from gen.errors import Finding, Severity, SourceLocation
from gen.fleet.plan import ClusterPlan, Plan, PoolPlan, ServicePlan
from gen.fleet.roles import workloads
from gen.rules import finding

__all__ = [
    "Analyzed",
    "capacity_findings",
    "check",
    "check_with_matcher",
    "cluster_models",
    "cluster_packing",
    "demands_of",
    "has_dynamic_pools",
]

Analyzed = Sequence[tuple[ServicePlan, Sequence[ChoiceAnalysis]]]
"""(service, its choices analysed on its pools) per service, in service order."""
Models = Callable[[PoolPlan], PoolModel]
"""The allocator's model of a pool (:meth:`gen.dra.satisfiability.Matcher.model`)."""


def cluster_models(cluster: ClusterPlan, analyzed: Analyzed,
                   model: Models) -> dict[str, PoolModel]:
    """The allocator's model of every NVIDIA pool the analysed services may use."""
    pools = {p.name for svc, _ in analyzed for p in svc.pools
             if p.pool.platform == "nvidia" and p.gpu is not None}
    return {p.name: model(p) for p in cluster.pools if p.name in pools}


def demands_of(analyzed: Analyzed, models: Mapping[str, PoolModel],
               at_max: bool) -> list[Demand]:
    """Each service's replicas and its claim per pool, from the satisfiability analyses (a
    pool where a selector errors at run time takes no claim: the allocator aborts there)."""
    out = []
    for svc, analyses in analyzed:
        gpu = svc.service.gpu
        assert gpu is not None
        replicas = svc.service.max_replicas if at_max else svc.service.min_replicas
        claims = []
        size = 0
        for pool in svc.pools:
            model = models.get(pool.name)
            if model is None:
                continue
            subs = []
            for analysis in analyses:
                pa = next((p for p in analysis.pools if p.pool.name == pool.name), None)
                if pa is None or any(v.error is not None for v in pa.verdicts):
                    continue
                matched = {v.shape for v in pa.verdicts if v.matched}
                slots = tuple(s for s, (shape, _) in enumerate(model.inventory.slots)
                              if shape in matched)
                choice = analysis.choice
                subs.append(SubRequest(choice.label, choice.count, choice.all_devices, slots))
                if slots and not size:
                    size = choice.count * _slices_of(model, slots[0])
            if subs:
                claims.append(ClaimShape(pool.name, svc.service.name, tuple(subs),
                                         tuple(gpu.same)))
        out.append(Demand(svc, replicas, tuple(claims), size or 1))
    return out


def _slices_of(model: PoolModel, slot: int) -> int:
    """Memory slices a device consumes (1 for a device without counters)."""
    names = model.counters.names
    return sum(a for c, a in model.counters.consumes[slot]
               if "/memory-slice-" in names[c]) or 1


def has_dynamic_pools(cluster: ClusterPlan) -> bool:
    """Whether a pool of the cluster is dynamic MIG (then every arrival order is tried)."""
    return any(is_dynamic(p) for p in cluster.pools)


def cluster_packing(cluster: ClusterPlan, model: Models,
                    analyze: Callable[[ServicePlan], Sequence[ChoiceAnalysis]]
                    ) -> Packing | None:
    """The packing of the cluster's minimum replicas in service order (None: no dynamic
    MIG pool among the pools its services use)."""
    analyzed = [(svc, analyze(svc)) for svc in workloads(cluster)
                if svc.service.gpu is not None and svc.gpu_class is not None]
    models = cluster_models(cluster, analyzed, model)
    if not any(m.counters.parts for m in models.values()):
        return None
    return pack(models, demands_of(analyzed, models, at_max=False), Order.SERVICE)


def _short(packing: Packing) -> dict[str, int]:
    return dict(Counter(service for service, _ in packing.unplaced))


def _what(at_max: bool) -> str:
    return "autoscaling max_replicas" if at_max else "minimum replicas"


def _scenarios(analyzed: Analyzed, models: Mapping[str, PoolModel]
               ) -> list[tuple[bool, list[Demand]]]:
    """(at_max, demands) for the minimum, and for the maximum where it differs."""
    low, high = demands_of(analyzed, models, False), demands_of(analyzed, models, True)
    same = [d.replicas for d in low] == [d.replicas for d in high]
    return [(False, low)] if same else [(False, low), (True, high)]


def _gave_up(cluster: ClusterPlan, demands: Sequence[Demand], packing: Packing,
             at_max: bool) -> list[Finding]:
    """GEN206 warnings: the search gave up placing these services, so gen cannot tell
    whether the cluster holds the demand."""
    by_name = {d.name: d for d in demands}
    return [finding(
        "GEN206",
        f"gen's allocator search gave up on a node while placing the {_what(at_max)} of "
        f"service {name!r} on cluster {cluster.name!r} (more combinations of devices than it "
        "tries): gen cannot tell whether the cluster holds every replica",
        by_name[name].service.located.at("gpu"), key_path="gpu", severity=Severity.WARNING,
        hint="fewer devices per claim, or fewer matching devices per node, let gen decide",
        service=name, cluster=cluster.name,
    ) for name in packing.gave_up]


def capacity_findings(cluster: ClusterPlan, analyzed: Analyzed,
                      model: Models) -> list[Finding]:
    """GEN205 (no dynamic MIG pool) or GEN240/GEN241 (dynamic MIG pools) of one cluster."""
    models = cluster_models(cluster, analyzed, model)
    if has_dynamic_pools(cluster):
        return _dynamic(cluster, analyzed, models)
    return _static(cluster, analyzed, models)


def _dynamic(cluster: ClusterPlan, analyzed: Analyzed,
             models: Mapping[str, PoolModel]) -> list[Finding]:
    """GEN240 and GEN241 over every arrival order."""
    findings: list[Finding] = []
    for at_max, demands in _scenarios(analyzed, models):
        results = {order: pack(models, demands, order) for order in ORDERS}
        stuck = next((p for p in results.values() if p.gave_up), None)
        if stuck is not None:
            return findings + _gave_up(cluster, demands, stuck, at_max)
        fitting = [o for o, p in results.items() if not p.unplaced]
        if not fitting:
            findings += _no_order_fits(cluster, demands, models, results, at_max)
            if not at_max:
                break
            continue
        failing = [o for o in ORDERS if o not in fitting]
        if failing:
            findings.append(_fragments(cluster, demands, results, fitting[0], failing[0],
                                       at_max))
    return findings


def _no_order_fits(cluster: ClusterPlan, demands: Sequence[Demand],
                   models: Mapping[str, PoolModel], results: Mapping[Order, Packing],
                   at_max: bool) -> list[Finding]:
    best_order = min(results, key=lambda o: len(results[o].unplaced))
    by_name = {d.name: d for d in demands}
    out = []
    for service, missing in sorted(_short(results[best_order]).items()):
        demand = by_name[service]
        where, key = demand.service.replicas_at(at_max)
        whole = _whole_gpus(demand)
        held = (f"the GPUs of the dynamic MIG pools of cluster {cluster.name!r} (each whole "
                "GPU takes every slice of its GPU) hold" if whole else
                f"the dynamic MIG counters of cluster {cluster.name!r} hold")
        out.append(finding(
            "GEN240",
            f"{held} "
            f"{demand.replicas - missing} of the {demand.replicas} replicas ({_what(at_max)}) "
            f"of service {service!r} at once, in the best of the arrival orders gen tried "
            f"({best_order}); pools: {', '.join(models)}",
            where, key_path=key,
            severity=Severity.WARNING if at_max else None,
            # gen plan sizes slices; for whole GPUs, explain shows who holds each GPU.
            hint=("add nodes or GPUs, lower the replicas, or ask for a MIG slice instead of "
                  f"a whole GPU; see 'gen explain {service} --cluster {cluster.name} --slices'"
                  if whole else
                  "add nodes or GPUs, lower the replicas, or ask for a smaller slice; see "
                  f"'gen plan --cluster {cluster.name}'"),
            related=tuple(cluster.located.at("node_pools", i) for i, p in
                          enumerate(cluster.pools) if p.name in models),
            service=service, cluster=cluster.name,
        ))
    return out


def _whole_gpus(demand: Demand) -> bool:
    """The demand is for whole GPUs: on a partitionable GPU such a device consumes every
    counter of it (dra-driver-nvidia-gpu partitions.go@v0.5.0, PartConsumesCounters), so its
    findings speak of GPUs, not slices."""
    gpu_class = demand.service.gpu_class
    return gpu_class is not None and gpu_class.device_type == "gpu"


def _fragments(cluster: ClusterPlan, demands: Sequence[Demand],
               results: Mapping[Order, Packing], fits: Order, fails: Order,
               at_max: bool) -> Finding:
    room = headroom(results[fits], demands)
    short = _short(results[fails])
    lost = ", ".join(f"{n} of {s!r}" for s, n in sorted(short.items()))
    whole = any(_whole_gpus(d) for d in demands if d.name in short)
    why = ("a whole GPU needs a GPU none of whose slices is taken, and the allocator puts "
           "each slice on the first GPU with room" if whole else
           "the allocator takes the first free slice in device order and strands memory slices")
    first = demands[0].service
    return finding(
        "GEN241",
        f"the {_what(at_max)} of cluster {cluster.name!r} fit its dynamic MIG pools when pods "
        f"arrive in the order '{fits}', but not in '{fails}' ({lost} left Pending: {why}); "
        "headroom after the fitting order: "
        + ", ".join(f"{n} more {s!r}" for s, n in sorted(room.items())),
        first.located.at("gpu"), key_path="gpu",
        hint="keep headroom, use fewer distinct slice sizes per pool, or a static "
        f"layout from 'gen plan --cluster {cluster.name}'",
        related=tuple(d.service.located.at("gpu") for d in demands[1:]),
        service=first.service.name, cluster=cluster.name,
    )


def _static(cluster: ClusterPlan, analyzed: Analyzed,
            models: Mapping[str, PoolModel]) -> list[Finding]:
    """GEN205 in service order."""
    findings: list[Finding] = []
    analyses = {svc.service.name: a for svc, a in analyzed}
    for at_max, demands in _scenarios(analyzed, models):
        packing = pack(models, demands, Order.SERVICE)
        if packing.gave_up:
            return findings + _gave_up(cluster, demands, packing, at_max)
        missing = _short(packing)
        short = [(d.service, d.replicas, d.replicas - missing[d.name]) for d in demands
                 if d.name in missing]
        if at_max:
            findings += _growth_blame(cluster, [d.service for d in demands], short)
            short = [entry for entry in short if entry[0].service.autoscaling is not None]
        taken = _taken(packing)
        for svc, wanted, placed in short:
            before = _takers(analyses[svc.service.name], demands, taken, svc)
            findings.append(_holds(cluster, svc, wanted, placed, before, at_max))
        if short and not at_max:
            break  # the minimum does not fit: the maximum cannot either
    return findings


def _holds(cluster: ClusterPlan, svc: ServicePlan, wanted: int, placed: int,
           before: tuple[SourceLocation, ...], at_max: bool) -> Finding:
    what = "autoscaling max_replicas" if at_max else (
        "autoscaling min_replicas" if svc.service.autoscaling else "replicas")
    sharing = svc.gpu_class is not None and svc.gpu_class.sharing is not None
    where, key = svc.replicas_at(at_max)
    return finding(
        "GEN205",
        f"cluster {cluster.name!r} holds {placed} of the {wanted} replicas "
        f"({what}) of service {svc.service.name!r}"
        + (f" once the services before it (in namespace/name order) have their "
           f"devices: {', '.join(r.note for r in before)}" if before else ""),
        where, key_path=key, related=before,
        severity=Severity.WARNING if at_max else None,
        hint="add nodes, lower the replicas, or allow alternatives"
        + ("; sharing only shares one claim's devices between its containers, "
           "every replica still gets its own claim" if sharing else ""),
        service=svc.service.name, cluster=cluster.name,
    )


def _taken(packing: Packing) -> dict[str, Counter[str]]:
    """Per service, the devices its placed replicas take per pool."""
    out: dict[str, Counter[str]] = {}
    for block in packing.blocks:
        out.setdefault(block.service, Counter())[block.pool] += block.devices
    return out


def _takers(analyses: Sequence[ChoiceAnalysis], demands: Sequence[Demand],
            taken: Mapping[str, Counter[str]], svc: ServicePlan) -> tuple[SourceLocation, ...]:
    """The services placed before ``svc`` that took devices of the pools ``analyses`` can
    use, each at its replica line with what it takes there."""
    pools = {p.pool.name for a in analyses for p in a.pools if p.replicas_per_node}
    out = []
    for demand in demands:
        if demand.name == svc.service.name:
            break
        mine = {name: n for name, n in sorted(taken.get(demand.name, Counter()).items())
                if name in pools and n}
        if not mine:
            continue
        where, _ = demand.service.replicas_at()
        what = ", ".join(f"{n} device(s) of pool {name!r}" for name, n in mine.items())
        out.append(replace(where, note=f"service {demand.name!r} takes {what}"))
    return tuple(out)


def _growth_blame(cluster: ClusterPlan, order: Sequence[ServicePlan],
                  short: Sequence[tuple[ServicePlan, int, int]]) -> list[Finding]:
    """Warnings at the autoscaled services whose growth to max_replicas leaves a service
    without autoscaling short: the one that causes the shortage is named, at the line that
    causes it (the service that is short has no max_replicas to lower)."""
    findings = []
    for svc, wanted, placed in short:
        if svc.service.autoscaling is not None:
            continue
        for grower in order[:order.index(svc)]:
            if grower.service.autoscaling is None:
                continue
            where, key = grower.replicas_at(True)
            findings.append(finding(
                "GEN205",
                f"at its autoscaling max_replicas, service {grower.service.name!r} takes "
                f"devices of cluster {cluster.name!r} that service {svc.service.name!r} "
                f"(no autoscaling) needs: {placed} of its {wanted} replicas would then fit",
                where, key_path=key, severity=Severity.WARNING,
                hint="lower max_replicas, add nodes, or give the other service alternatives",
                related=(replace(svc.located.at("gpu"),
                                 note=f"service {svc.service.name!r} is left short"),),
                service=grower.service.name, cluster=cluster.name,
            ))
    return findings


def check_with_matcher(plan: Plan, matcher: Matcher) -> list[Finding]:
    """GEN204–GEN206 and the capacity rules with a caller's matcher (whose ``evaluations``
    then tell the cost)."""
    findings: list[Finding] = []
    for cluster in plan.clusters:
        if cluster.dra_api_version is None:
            continue
        analysis = analyze_cluster(matcher, cluster)
        findings += analysis.findings
        findings += capacity_findings(cluster, analysis.analyzed, matcher.model)
    return findings


def check(plan: Plan) -> list[Finding]:
    """GEN204 unsatisfiable claims, GEN205/GEN240/GEN241 capacity, GEN206 run-time errors
    and searches gen could not finish."""
    return check_with_matcher(plan, Matcher())

