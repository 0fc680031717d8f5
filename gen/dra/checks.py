"""DRA rules: API versions and gates the cluster serves, selectors, sharing gates."""

from __future__ import annotations

from dataclasses import replace

from gen.errors import CELCompileError, Finding
from gen.fleet.plan import ClusterPlan, Plan
from gen.fleet.roles import workloads
from gen.k8s.versions import runtime_config_needed
from gen.rules import finding

MAX_SELECTORS = 32
"""Most selectors a DeviceClass or a device request may have: ``DeviceSelectorsMaxSize``
(kubernetes/kubernetes, staging/src/k8s.io/api/resource/v1/types.go, v1.34.0); the API
server refuses more."""

DRA_CHART_KUBE_FLOOR = 32
"""The NVIDIA DRA driver chart's ``kubeVersion: ">=1.32.0-0"`` (NVIDIA/k8s-dra-driver-gpu,
deployments/helm/nvidia-dra-driver-gpu/Chart.yaml, every tag from v25.3.1 to v25.12.0, and
deployments/helm/dra-driver-nvidia-gpu/Chart.yaml at v0.4.0): Helm refuses to install it on
an older cluster. v25.3.0 and older set no floor."""


def _version_findings(cluster: ClusterPlan) -> list[Finding]:
    spec = cluster.cluster
    where = cluster.located.at("allocation")
    if spec.allocation != "dra":
        return []
    if cluster.minor < 31:
        return [finding(
            "GEN201",
            f"Kubernetes 1.{cluster.minor} has no structured-parameters DRA "
            "(resource.k8s.io/v1alpha3 arrived in 1.31)",
            where, key_path="allocation", hint="use allocation: device-plugin on this cluster",
        )]
    findings = []
    data = cluster.located.document.data
    needed = runtime_config_needed(cluster.minor)
    if needed is not None:
        if needed not in spec.runtime_config:
            findings.append(finding(
                "GEN201",
                f"gen renders {needed} for Kubernetes 1.{cluster.minor}, which the API server "
                f"serves only with --runtime-config={needed}=true",
                cluster.located.at("runtime_config") if "runtime_config" in data else where,
                key_path="runtime_config",
                hint=f"enable it on the API server and add '{needed}' to runtime_config",
            ))
        if not spec.feature_gates.get("DynamicResourceAllocation", False):
            findings.append(finding(
                "GEN201",
                f"DynamicResourceAllocation is off by default on 1.{cluster.minor}",
                cluster.located.at("feature_gates") if "feature_gates" in data else where,
                key_path="feature_gates",
                hint="set the gate on apiserver, controller-manager, scheduler and kubelet, "
                "then declare DynamicResourceAllocation: true",
            ))
    return findings


def _gate(cluster: ClusterPlan, gate: str) -> str | None:
    """Why a field behind ``gate`` would be dropped on this cluster, or None when it is served.

    The gate's state at the cluster's minor comes from the gate table (:mod:`gen.k8s.gates`): a
    gate the release lacks drops the field; a locked gate keeps its default (a declaration of
    the other value is GEN220, since no component of that release starts with it); otherwise
    a declaration wins over the default.
    """
    from gen.k8s.gates import gate_table

    state = gate_table().state(gate, cluster.minor)
    if state.exists is False:
        return (f"Kubernetes 1.{cluster.minor} does not have it (the {gate} feature gate "
                f"arrived in 1.{state.since})")
    if state.locked:
        return None if state.default else f"{gate} is locked off on 1.{cluster.minor}"
    declared = cluster.cluster.feature_gates.get(gate)
    if declared is False:
        return f"the cluster declares the {gate} feature gate off (feature_gates.{gate}: false)"
    if declared or state.default:
        return None
    return f"the {gate} feature gate is {state.stage.lower()} and off by default on " \
        f"1.{cluster.minor}"


def _declared_gate_findings(cluster: ClusterPlan) -> list[Finding]:
    """GEN220: a declared Kubernetes feature gate (of the DRA family the gate table holds)
    that the cluster's release does not have, or that is locked to the other value: every
    component given it refuses to start."""
    from gen.k8s.gates import gate_table

    table = gate_table()
    findings = []
    for gate, value in cluster.cluster.feature_gates.items():
        if not table.holds(gate):
            continue
        state = table.state(gate, cluster.minor)
        refusal = state.refusal(value)
        if refusal is None:
            continue
        if state.exists is False:
            close = table.close_match(gate, cluster.minor)
            hint = (f"did you mean {close}?" if close and close != gate
                    else "remove it from feature_gates and from the components' flags")
        else:
            hint = "remove it: the gate cannot be changed on this release"
        findings.append(finding(
            "GEN220",
            f"kube-apiserver, kube-scheduler, kube-controller-manager and kubelet of "
            f"Kubernetes 1.{cluster.minor} refuse to start with --feature-gates={gate}="
            f"{str(value).lower()}: {refusal} ({state.source})",
            cluster.located.at("feature_gates", gate), key_path=f"feature_gates.{gate}",
            hint=hint, cluster=cluster.name,
        ))
    return findings


def _runtime_config_findings(cluster: ClusterPlan) -> list[Finding]:
    """GEN221: a resource.k8s.io version in ``runtime_config`` that the cluster's release no
    longer serves (its removal release has come)."""
    from gen.k8s.gates import gate_table

    table = gate_table()
    findings = []
    for index, entry in enumerate(cluster.cluster.runtime_config):
        lifecycle = table.api_version(entry, cluster.minor)
        if lifecycle is None or lifecycle.removed is None or lifecycle.served(cluster.minor):
            continue
        findings.append(finding(
            "GEN221",
            f"Kubernetes 1.{cluster.minor} no longer serves {entry} (removed in "
            f"1.{lifecycle.removed}; {lifecycle.source}): --runtime-config={entry}=true does "
            "not bring it back, and anything that applies or reads it fails with 'the server "
            "could not find the requested resource'",
            cluster.located.at("runtime_config", index), key_path=f"runtime_config[{index}]",
            cluster=cluster.name,
            hint="remove the entry and move what still uses it to resource.k8s.io/v1 (gen "
            f"renders {cluster.dra_api_version or 'resource.k8s.io/v1'} for this cluster)",
        ))
    return findings


def _service_findings(cluster: ClusterPlan) -> list[Finding]:
    findings = []
    gates = cluster.cluster.dra_driver.feature_gates
    for svc in workloads(cluster):
        service = svc.service
        if service.gpu is None:
            continue
        if service.gpu.alternatives:
            why = _gate(cluster, "DRAPrioritizedList")
            if why:
                declared = cluster.cluster.feature_gates.get("DRAPrioritizedList") is False
                findings.append(finding(
                    "GEN202",
                    f"gpu.alternatives renders firstAvailable, but {why}: the API server "
                    "silently drops the field and then refuses the ResourceClaimTemplate "
                    "('exactly one of `exactly` or `firstAvailable` is required')",
                    svc.located.at("gpu", "alternatives"), key_path="gpu.alternatives",
                    hint="enable DRAPrioritizedList (1.33) or remove the alternatives",
                    related=(replace(
                        cluster.located.at("feature_gates", "DRAPrioritizedList"),
                        note=f"declared off in cluster {cluster.name!r}"),) if declared else (),
                    service=service.name, cluster=cluster.name,
                ))
        for gpu_class in [svc.gpu_class, *(c for c, _ in svc.alternatives)]:
            if gpu_class is None:
                continue
            located = cluster.gpu_classes[gpu_class.name]
            if gpu_class.extended_resource_name:
                why = _gate(cluster, "DRAExtendedResource")
                if why:
                    findings.append(finding(
                        "GEN202",
                        f"extendedResourceName of class {gpu_class.name!r} needs "
                        f"DRAExtendedResource, but {why}: the API server would drop it "
                        f"(cluster {cluster.name})",
                        located.at("extended_resource_name"), key_path="extended_resource_name",
                    ))
            if gpu_class.sharing is not None:
                gate = ("TimeSlicingSettings" if gpu_class.sharing.strategy == "time-slicing"
                        else "MPSSupport")
                if not gates.get(gate, False):
                    findings.append(finding(
                        "GEN207",
                        f"class {gpu_class.name!r} shares devices with "
                        f"{gpu_class.sharing.strategy}, which the NVIDIA DRA driver rejects "
                        f"unless its {gate} feature gate is on (cluster {cluster.name}): "
                        f"'unknown GPU sharing strategy'",
                        located.at("sharing", "strategy"), key_path="sharing.strategy",
                        hint=f"set dra_driver.feature_gates.{gate}: true in cluster "
                        f"{cluster.name!r}",
                    ))
    return findings


CelEnv = tuple[int, bool]
"""The CEL environment a cluster's API server validates a selector in: its minor and whether
its DRAConsumableCapacity gate is on (the compiler's ``Features``)."""


def _cel_env(cluster: ClusterPlan) -> CelEnv:
    from gen.dra.cel import CONSUMABLE_CAPACITY
    from gen.k8s.gates import gate_table

    minor = cluster.minor
    return minor, gate_table().enabled(CONSUMABLE_CAPACITY, minor, cluster.cluster.feature_gates)


def _first_compile_error(expression: str, envs: dict[CelEnv, list[str]]) -> str | None:
    """The compile error of ``expression`` in the oldest of the clusters' environments (by
    minor, the gate off first) that carry it, or in the newest environment when none does;
    None when it compiles."""
    from gen.dra.cel import compile_selector

    keys: list[CelEnv | None] = [*sorted(envs)] or [None]
    for key in keys:
        try:
            if key is None:
                compile_selector(expression)
            else:
                compile_selector(expression, key[0], key[1])
        except CELCompileError as err:
            clusters = sorted(set(envs.get(key, []))) if key is not None else []
            where = f" (cluster {', '.join(map(repr, clusters))})" if clusters else ""
            named = "this cluster runs" in err.message or "off on this cluster" in err.message
            return err.message + (where if named else "")
    return None


def _selector_findings(plan: Plan) -> list[Finding]:
    """GEN203 per selector, compiled for the Kubernetes version of each DRA cluster using it."""
    from gen.dra.selectors import class_cel

    class_minors: dict[str, dict[CelEnv, list[str]]] = {}
    service_minors: dict[tuple[str, str], dict[CelEnv, list[str]]] = {}
    for cluster in plan.clusters:
        if cluster.dra_api_version is None:
            continue
        for svc in workloads(cluster):
            classes = [svc.gpu_class, *(c for c, _ in svc.alternatives)]
            for gpu_class in classes:
                if gpu_class is not None:
                    by_minor = class_minors.setdefault(gpu_class.name, {})
                    by_minor.setdefault(_cel_env(cluster), []).append(cluster.name)
            service = (svc.service.namespace, svc.service.name)
            by_cluster = service_minors.setdefault(service, {})
            by_cluster.setdefault(_cel_env(cluster), []).append(cluster.name)
    findings = []
    for located in plan.profiles.gpu_classes.values():
        minors = class_minors.get(located.value.name, {})
        for j, expression in enumerate(class_cel(located.value)):
            message = _first_compile_error(expression, minors)
            if message is not None:
                raw = j - 1
                where = located.at("cel", raw) if raw >= 0 else located.at("match")
                key = f"cel[{raw}]" if raw >= 0 else "match"
                findings.append(finding("GEN203", message, where, key_path=key))
    for svc_located in plan.profiles.services.values():
        gpu = svc_located.value.gpu
        if gpu is None:
            continue
        svc_minors = service_minors.get(
            (svc_located.value.namespace, svc_located.value.name), {}
        )
        for j, expression in enumerate(gpu.selectors):
            message = _first_compile_error(expression, svc_minors)
            if message is not None:
                findings.append(finding(
                    "GEN203", message, svc_located.at("gpu", "selectors", j),
                    key_path=f"gpu.selectors[{j}]",
                ))
    return findings


def check_clusters(plan: Plan) -> list[Finding]:
    """GEN201–GEN208, GEN215–GEN221 (with :func:`check_fleet`; satisfiability lives in
    gen.dra.satisfiability): the rules on each cluster alone (versions, gates, the chart,
    quotas)."""
    findings: list[Finding] = []
    for cluster in plan.clusters:
        findings += _version_findings(cluster)
        findings += _declared_gate_findings(cluster)
        findings += _runtime_config_findings(cluster)
        if cluster.dra_api_version is not None:
            findings += _service_findings(cluster)
        elif any(s.service.gpu and s.service.gpu.alternatives for s in workloads(cluster)):
            for svc in workloads(cluster):
                if svc.service.gpu and svc.service.gpu.alternatives:
                    findings.append(finding(
                        "GEN208",
                        f"cluster {cluster.name!r} uses the device plugin: alternatives "
                        "(firstAvailable) need DRA and are ignored",
                        svc.located.at("gpu", "alternatives"), key_path="gpu.alternatives",
                    ))
        findings += _chart_floor(cluster)
        if cluster.dra_api_version is None:
            findings += _device_plugin_drops(cluster)
        elif cluster.cluster.quota_engine == "resourcequota":
            # The ResourceQuota rules; on a Kueue cluster the ClusterQueues are the quotas
            # and its own rules (gen.kueue.checks) say what they admit.
            findings += _quota_bypasses(cluster)
            findings += _quota_shortfalls(cluster)
    return findings


def check_fleet(plan: Plan) -> list[Finding]:
    """The rules on each selector and selector list, compiled for every DRA cluster that
    uses it (GEN203, GEN216): they read the resolved fleet, nothing the builders decide."""
    return [*_selector_findings(plan), *_selector_counts(plan)]


def _rendered_classes(cluster: ClusterPlan) -> list[str]:
    """The classes a DRA cluster's claims and quotas name (the DeviceClasses gen renders,
    and the chart's own classes a profile names)."""
    return sorted({
        name
        for svc in workloads(cluster) if svc.gpu_class is not None
        for name in (svc.gpu_class.name, *(c.name for c, _ in svc.alternatives))
    } | {q.gpu_class for q in cluster.cluster.quotas})


def _quota_bypasses(cluster: ClusterPlan) -> list[Finding]:
    """GEN218: a namespace's quota on one DeviceClass that a claim of another class in the
    same namespace escapes, though both classes select the same devices.

    A DRA ResourceQuota counts ``<class>.deviceclass.resource.k8s.io/devices``: the devices
    claims of *that* DeviceClass request ("Resource quota for DRA",
    https://kubernetes.io/docs/concepts/policy/resource-quotas/). A claim of another class
    whose selectors accept the same devices is not counted (kubernetes/kubernetes,
    pkg/quota/v1/evaluator/core/resource_claims.go @v1.34.0: usage is summed per
    ``DeviceClassName``). A namespace with a quota on the
    other class too is bounded by the two quotas together, and not reported.
    """
    from gen.dra.admission import selected_shapes
    from gen.dra.satisfiability import Matcher
    from gen.dra.simulate import shape_summary

    quotas = cluster.cluster.quotas
    if not quotas:
        return []
    matcher = Matcher()
    pools = [p for p in cluster.pools if p.pool.platform == "nvidia" and p.gpu is not None]
    selected = {name: selected_shapes(cluster.gpu_classes[name].value, pools, matcher)
                for name in _rendered_classes(cluster) if name in cluster.gpu_classes}
    by_pool = {p.name: p for p in pools}
    findings = []
    for index, quota in enumerate(quotas):
        mine = selected.get(quota.gpu_class)
        if not mine:
            continue
        limited = {q.gpu_class for q in quotas if q.namespace == quota.namespace}
        for other, theirs in selected.items():
            if other in limited or not theirs:
                continue
            shared = [(pool, sorted(mine[pool] & theirs[pool]))
                      for pool in sorted(mine.keys() & theirs.keys())
                      if mine[pool] & theirs[pool]]
            if not shared:
                continue
            pool, shapes = shared[0]
            device = shape_summary(matcher.inventory(by_pool[pool]).shapes[shapes[0]])
            located = cluster.gpu_classes[other]
            findings.append(finding(
                "GEN218",
                f"the quota on class {quota.gpu_class!r} in namespace {quota.namespace!r} can "
                f"be bypassed: class {other!r} selects the same devices ({device} on pool "
                f"{pool!r}), and claims of {other!r} are not counted by this quota",
                cluster.located.at("quotas", index, "gpu_class"),
                key_path=f"quotas[{index}].gpu_class",
                related=(replace(located.document.location, note=f"class {other!r}"),),
                cluster=cluster.name,
                hint=f"add a quota on class {other!r} in namespace {quota.namespace!r}, or "
                "narrow one class's match so that the two share no device",
            ))
    return findings


def _quota_shortfalls(cluster: ClusterPlan) -> list[Finding]:
    """GEN219: a namespace's quota on a class below what its services claim at once.

    ResourceQuota admission charges each ResourceClaim, as the resourceclaim controller creates
    it from a pod's template, with the devices it requests of each DeviceClass
    (``<class>.deviceclass.resource.k8s.io/devices``; kubernetes/kubernetes
    ``pkg/quota/v1/evaluator/core/resource_claims.go``@v1.36.3) and refuses the claim that
    would pass the hard limit: that pod waits for its claim forever. A service's demand is
    its minimum replicas (``replicas``, or ``autoscaling.min_replicas``) times its request's
    ``count``; a service with ``alternatives`` is left out, since which class it is charged
    for depends on the subrequest it gets.
    """
    findings = []
    for index, quota in enumerate(cluster.cluster.quotas):
        users = []
        for svc in workloads(cluster):
            service = svc.service
            gpu = service.gpu
            if gpu is None or gpu.alternatives or service.namespace != quota.namespace \
                    or svc.gpu_class is None or svc.gpu_class.name != quota.gpu_class:
                continue
            replicas = service.min_replicas
            if replicas * gpu.count:
                users.append((svc, replicas, gpu.count))
        demand = sum(replicas * count for _, replicas, count in users)
        if demand <= quota.devices:
            continue
        parts = ", ".join(f"{svc.service.name} {replicas}×{count}"
                          for svc, replicas, count in users)
        findings.append(finding(
            "GEN219",
            f"the quota allows {quota.devices} device(s) of class {quota.gpu_class!r} in "
            f"namespace {quota.namespace!r}, but its services claim {demand} at their minimum "
            f"replicas ({parts}): admission refuses the claims beyond {quota.devices}, and "
            "their pods never start",
            cluster.located.at("quotas", index, "devices"), key_path=f"quotas[{index}].devices",
            related=tuple(replace(svc.located.at("gpu", "gpu_class"),
                                  note=f"{svc.service.name} claims {replicas * count}")
                          for svc, replicas, count in users),
            cluster=cluster.name,
            hint=f"raise the quota to {demand}, or lower the services' replicas or count",
        ))
    return findings


def _chart_floor(cluster: ClusterPlan) -> list[Finding]:
    """GEN215: the DRA driver chart gen renders cannot be installed on this Kubernetes."""
    spec = cluster.cluster
    if spec.allocation != "dra" or cluster.minor >= DRA_CHART_KUBE_FLOOR:
        return []
    version = tuple(int(p) for p in spec.dra_driver.version.lstrip("v").split("."))
    if not (version >= (25, 3, 1) or (version[0] == 0 and version >= (0, 4, 0))):
        return []
    return [finding(
        "GEN215",
        f"the NVIDIA DRA driver chart {spec.dra_driver.version} requires Kubernetes >= "
        f"1.{DRA_CHART_KUBE_FLOOR} (its kubeVersion); Helm refuses to install it on "
        f"1.{cluster.minor}",
        cluster.located.at("kubernetes_version"), key_path="kubernetes_version",
        hint="upgrade the cluster to 1.32 or newer, or use allocation: device-plugin",
        related=(replace(cluster.located.at("dra_driver", "version")
                         if "dra_driver" in cluster.located.document.data
                         else cluster.located.at("allocation"),
                         note="the DRA driver chart is rendered for allocation: dra"),),
        cluster=cluster.name,
    )]


def _selector_counts(plan: Plan) -> list[Finding]:
    """GEN216: more selectors than Kubernetes allows in a DeviceClass or a request."""
    from gen.dra.selectors import class_cel

    findings = []
    dra_classes = {name for c in plan.clusters if c.dra_api_version is not None
                   for name in c.gpu_classes}
    for name, located in plan.profiles.gpu_classes.items():
        count = len(class_cel(located.value))
        if name in dra_classes and count > MAX_SELECTORS:
            first = MAX_SELECTORS - 1  # selector #0 is the structured match
            findings.append(finding(
                "GEN216",
                f"the DeviceClass would have {count} selectors (the structured match and "
                f"{count - 1} cel entries); Kubernetes allows at most {MAX_SELECTORS}, so the "
                "API server refuses it",
                located.at("cel", first), key_path=f"cel[{first}]",
                hint="join conditions with && into fewer expressions",
            ))
    for svc in plan.profiles.services.values():
        gpu = svc.value.gpu
        if gpu is not None and len(gpu.selectors) > MAX_SELECTORS:
            findings.append(finding(
                "GEN216",
                f"the request has {len(gpu.selectors)} selectors; Kubernetes allows at most "
                f"{MAX_SELECTORS}, so the API server refuses the claim template",
                svc.at("gpu", "selectors", MAX_SELECTORS),
                key_path=f"gpu.selectors[{MAX_SELECTORS}]",
                hint="join conditions with && into fewer expressions",
                service=svc.value.name,
            ))
    return findings


def _device_plugin_drops(cluster: ClusterPlan) -> list[Finding]:
    """GEN217: settings a device-plugin cluster cannot honour, which gen leaves out."""
    findings = []
    why = f"cluster {cluster.name!r} uses the device plugin, which cannot honour it"
    for svc in workloads(cluster):
        gpu = svc.service.gpu
        if gpu is None:
            continue
        dropped = []
        if gpu.selectors:
            dropped.append((("gpu", "selectors"), "gpu.selectors",
                            "request selectors (DRA CEL) are not rendered"))
        if gpu.same:
            dropped.append((("gpu", "same"), "gpu.same",
                            "'same' (a DRA matchAttribute constraint) is not rendered"))
        if gpu.allocation_mode == "All":
            dropped.append((("gpu", "allocation_mode"), "gpu.allocation_mode",
                            f"allocation_mode All becomes a request for {gpu.count} "
                            "device(s)"))
        for path, key, what in dropped:
            findings.append(finding(
                "GEN217", f"{what}: {why}", svc.located.at(*path), key_path=key,
                service=svc.service.name, cluster=cluster.name,
                hint="remove it, or run the service on a DRA cluster",
            ))
        gpu_class = svc.gpu_class
        if gpu_class is not None and gpu_class.cel:
            located = cluster.gpu_classes[gpu_class.name]
            findings.append(finding(
                "GEN217",
                f"the CEL selectors of class {gpu_class.name!r} (cel) are not rendered: "
                f"service {svc.service.name!r} gets any device of its node pools, also those "
                f"the expressions exclude; {why}",
                located.at("cel"), key_path="cel",
                related=(replace(svc.located.at("gpu", "gpu_class"),
                                 note=f"used by service {svc.service.name!r}"),),
                service=svc.service.name, cluster=cluster.name,
                hint="express the choice with the class's match (product, memory, MIG "
                "profile: these pick the node pools) or the service's node_pool, or run the "
                "service on a DRA cluster",
            ))
        if gpu_class is not None and gpu_class.sharing is not None:
            located = cluster.gpu_classes[gpu_class.name]
            findings.append(finding(
                "GEN217",
                f"class {gpu_class.name!r} shares devices through the DRA driver "
                f"({gpu_class.sharing.strategy}), which service {svc.service.name!r} does not "
                f"get: {why}",
                located.at("sharing"), key_path="sharing",
                related=(replace(svc.located.at("gpu"),
                                 note=f"used by service {svc.service.name!r}"),),
                service=svc.service.name, cluster=cluster.name,
                hint="configure time-slicing in the GPU Operator's device plugin instead",
            ))
    return findings
