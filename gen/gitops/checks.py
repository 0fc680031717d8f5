"""GitOps rules: objects whose CRDs the cluster lacks, storage it cannot provide, and
settings the clusters of one Argo CD root must agree on."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from gen.errors import Finding, SourceLocation
from gen.fleet.manifests import has_addon, model_cache_storage
from gen.fleet.plan import ClusterPlan, Plan, ServicePlan
from gen.gitops.fleet import fleet_view
from gen.rules import finding

__all__ = ["check_clusters", "fleet_modes"]


def _addons(cluster: ClusterPlan) -> list[Finding]:
    findings: list[Finding] = []
    monitoring = cluster.cluster.monitoring
    if (monitoring.service_monitors and "service_monitors" in monitoring.model_fields_set
            and not has_addon(cluster, "prometheus-operator")):
        findings.append(finding(
            "GEN700",
            f"cluster {cluster.name!r} asks for ServiceMonitors but does not declare the "
            "Prometheus Operator: without its CRD, Argo CD's dry run fails the whole sync "
            "and Flux the whole workloads stage",
            cluster.located.at("monitoring", "service_monitors"),
            key_path="monitoring.service_monitors",
            hint="add 'prometheus-operator' to the cluster's addons once it is installed, "
            "or set service_monitors: false", cluster=cluster.name,
        ))
    for svc in cluster.services:
        if svc.service.autoscaling is not None and not has_addon(cluster, "keda"):
            findings.append(finding(
                "GEN701",
                f"service {svc.service.name!r} autoscales in cluster {cluster.name!r}, which "
                "does not declare KEDA: its ScaledObject would fail the sync (no CRD) and "
                "nothing would scale it",
                svc.located.at("autoscaling"), key_path="autoscaling",
                hint="add 'keda' to the cluster's addons once KEDA is installed there, or "
                "remove autoscaling and set replicas",
                related=(cluster.located.at("addons"),),
                service=svc.service.name, cluster=cluster.name,
            ))
    return findings


def _cache_mode(svc: ServicePlan, cluster: ClusterPlan) -> tuple[str, str | None, int]:
    """(access mode, StorageClass named or None, replicas it is sized for) of the service's
    model-cache PVC."""
    from gen.fleet.parallelism import service_shape

    service = svc.service
    replicas = service.max_replicas if service.engine == "vllm" else service.replicas
    mode, klass = model_cache_storage(cluster, service, replicas)
    shape = service_shape(svc)
    if shape is not None and shape.multi_node:
        # A LeaderWorkerSet: one cache volume per pod (volumeClaimTemplates), so one replica's.
        return service.storage.access_mode or "ReadWriteOnce", klass, 1
    return mode, klass, replicas


def _mode_location(svc: ServicePlan, *, at_storage: bool) -> tuple[SourceLocation, str]:
    """Where the user changes a model cache's access mode: the mode itself, the class (or,
    ``at_storage``, the storage settings where a class is to be named), else what made it
    ReadWriteMany (the replicas, or the autoscaling maximum)."""
    storage = svc.service.storage
    data = svc.located.document.data
    if storage.access_mode is not None:
        return svc.located.at("storage", "access_mode"), "storage.access_mode"
    if storage.storage_class is not None:
        return svc.located.at("storage", "storage_class"), "storage.storage_class"
    if at_storage and isinstance(data, dict) and "storage" in data:
        return svc.located.at("storage"), "storage"
    if svc.service.autoscaling is not None:
        return svc.located.at("autoscaling", "max_replicas"), "autoscaling.max_replicas"
    return svc.located.at("replicas"), "replicas"


def _storage(cluster: ClusterPlan, svc: ServicePlan) -> Finding | None:
    service = svc.service
    if service.mac_hosts:
        return None  # served outside the cluster: no model-cache PVC
    mode, klass, replicas = _cache_mode(svc, cluster)
    classes = cluster.cluster.storage.classes
    declared = {c.name: c for c in classes}
    default = next((c.name for c in classes if c.default), None)
    why = "" if service.storage.access_mode else f" (the default for {replicas} replica(s))"
    if klass is None and default is None:
        if mode not in ("ReadWriteMany", "ReadOnlyMany"):
            return None
        where, key = _mode_location(svc, at_storage=True)
        return finding(
            "GEN704",
            f"the model cache of service {service.name!r} needs {mode}{why} and names no "
            f"StorageClass, and cluster {cluster.name!r} declares no default one: most "
            "default classes are block storage, on which the PVC and the pods stay Pending",
            where, key_path=key,
            hint="name a class that offers it (storage.storage_class, or the cluster's "
            "storage.model_cache_class), declare the default class with its access modes "
            "(storage.classes: [{name, access_modes, default: true}]), or one replica with "
            "ReadWriteOnce",
            related=(replace(cluster.located.at("storage"),
                             note=f"storage of cluster {cluster.name!r}"),),
            service=service.name, cluster=cluster.name,
        )
    klass = klass or default
    if klass is None or klass not in declared or mode in declared[klass].access_modes:
        return None
    where, key = _mode_location(svc, at_storage=False)
    return finding(
        "GEN702",
        f"the model cache of service {service.name!r} needs {mode}{why}, which StorageClass "
        f"{klass!r} of cluster {cluster.name!r} does not provide "
        f"({', '.join(declared[klass].access_modes)}): the PVC stays Pending",
        where, key_path=key,
        hint="name a class that offers it (storage.storage_class), or one replica with "
        "ReadWriteOnce", related=(cluster.located.at("storage"),),
        service=service.name, cluster=cluster.name,
    )


def _undeclared_classes(cluster: ClusterPlan) -> list[Finding]:
    """GEN705: class names the cluster's ``storage.classes`` do not declare (only where it
    declares some: a cluster that lists none cannot be checked)."""
    storage = cluster.cluster.storage
    declared = [c.name for c in storage.classes]
    if not declared:
        return []
    from gen.fleet.profiles import did_you_mean

    listed = ", ".join(declared)
    findings: list[Finding] = []
    if storage.model_cache_class is not None and storage.model_cache_class not in declared:
        name = storage.model_cache_class
        findings.append(finding(
            "GEN705",
            f"model_cache_class {name!r} is not a StorageClass cluster {cluster.name!r} "
            f"declares{did_you_mean(name, declared)}: the model-cache PVCs never bind",
            cluster.located.at("storage", "model_cache_class"),
            key_path="storage.model_cache_class",
            hint=f"declared classes: {listed}; add the class to storage.classes if it exists",
            cluster=cluster.name,
        ))
    for svc in cluster.services:
        named = svc.service.storage.storage_class
        if named is None or named in declared or svc.service.mac_hosts:
            continue
        findings.append(finding(
            "GEN705",
            f"StorageClass {named!r} of service {svc.service.name!r} is not one cluster "
            f"{cluster.name!r} declares{did_you_mean(named, declared)}: its model-cache PVC "
            "never binds",
            svc.located.at("storage", "storage_class"), key_path="storage.storage_class",
            hint=f"declared classes: {listed}; add the class to the cluster's storage.classes "
            "if it exists there", related=(cluster.located.at("storage", "classes"),),
            service=svc.service.name, cluster=cluster.name,
        ))
    return findings


def fleet_modes(plan: Plan) -> list[Finding]:
    """GEN703: the clusters one Argo CD root syncs disagree on fleet_mode (the profiles' own
    settings: nothing the builders decide)."""
    findings: list[Finding] = []
    view = fleet_view(plan.clusters)
    by_name = {c.name: c for c in plan.clusters}
    seen: set[str] = set()
    for group in view.argo.values():
        if group.root in seen:
            continue
        seen.add(group.root)
        explicit: list[tuple[str, ClusterPlan]] = []
        for name in group.members:
            member = by_name[name]
            gitops = member.cluster.gitops
            assert gitops is not None
            if gitops.fleet_mode != "auto":
                explicit.append((gitops.fleet_mode, member))
        counts = Counter(mode for mode, _ in explicit)
        if len(counts) < 2:
            continue
        # The mode most members set is the one to keep: the others are flagged. On a tie
        # there is no telling which cluster changed, so every explicit member is flagged.
        ranked = counts.most_common()
        keep = ranked[0][0] if ranked[0][1] > ranked[1][1] else None
        for mode, member in explicit:
            if mode == keep:
                continue
            others = [m for other, m in explicit if other != mode]
            other_modes = sorted({other for other, _ in explicit if other != mode})
            names = ", ".join(repr(m.name) for m in others)
            findings.append(finding(
                "GEN703",
                f"cluster {member.name!r} sets fleet_mode {mode!r}, but {names}, synced by "
                f"the same Argo CD root {group.root!r}, "
                f"{'sets' if len(others) == 1 else 'set'} "
                f"{' or '.join(repr(m) for m in other_modes)}",
                member.located.at("gitops", "fleet_mode"), key_path="gitops.fleet_mode",
                hint="one root Application delivers its clusters one way: give them the "
                "same fleet_mode (or leave it 'auto')",
                related=tuple(m.located.at("gitops", "fleet_mode") for m in others),
                cluster=member.name,
            ))
    return findings


def check_clusters(plan: Plan) -> list[Finding]:
    """The add-on and storage rules, on each cluster alone."""
    findings: list[Finding] = []
    for cluster in plan.clusters:
        findings.extend(_addons(cluster))
        findings.extend(_undeclared_classes(cluster))
        for svc in cluster.services:
            finding = _storage(cluster, svc)
            if finding is not None:
                findings.append(finding)
    return findings
