"""DRA rules: API versions and gates the cluster serves, selectors, sharing gates."""

from __future__ import annotations

from gen.errors import CELCompileError, Finding, Severity
from gen.fleet.plan import ClusterPlan, Plan

_RUNTIME_CONFIG = {31: "resource.k8s.io/v1alpha3", 32: "resource.k8s.io/v1beta1",
                   33: "resource.k8s.io/v1beta2"}


def _version_findings(cluster: ClusterPlan) -> list[Finding]:
    spec = cluster.cluster
    where = cluster.located.at("allocation")
    if spec.allocation != "dra":
        return []
    if cluster.minor < 31:
        return [Finding(
            "GEN201",
            f"Kubernetes 1.{cluster.minor} has no structured-parameters DRA "
            "(resource.k8s.io/v1alpha3 arrived in 1.31)",
            where, "allocation", hint="use allocation: device-plugin on this cluster",
        )]
    findings = []
    if cluster.minor in _RUNTIME_CONFIG:
        needed = _RUNTIME_CONFIG[cluster.minor]
        if needed not in spec.runtime_config:
            findings.append(Finding(
                "GEN201",
                f"gen renders {needed} for Kubernetes 1.{cluster.minor}, which the API server "
                f"serves only with --runtime-config={needed}=true",
                cluster.located.at("runtime_config") if spec.runtime_config else where,
                "runtime_config",
                hint=f"enable it on the API server and add '{needed}' to runtime_config",
            ))
        if not spec.feature_gates.get("DynamicResourceAllocation", False):
            findings.append(Finding(
                "GEN201",
                f"DynamicResourceAllocation is off by default on 1.{cluster.minor}",
                cluster.located.at("feature_gates") if spec.feature_gates else where,
                "feature_gates",
                hint="set the gate on apiserver, controller-manager, scheduler and kubelet, "
                "then declare DynamicResourceAllocation: true",
            ))
    return findings


def _gate(cluster: ClusterPlan, gate: str, ga_minor: int, since_minor: int) -> str | None:
    """Why a gated field would be dropped, or None when it is served."""
    if cluster.minor >= ga_minor:
        return None
    if cluster.minor < since_minor:
        return f"Kubernetes 1.{cluster.minor} does not have it (added in 1.{since_minor})"
    if cluster.cluster.feature_gates.get(gate, False):
        return None
    return f"the {gate} feature gate is off on 1.{cluster.minor}"


def _service_findings(cluster: ClusterPlan) -> list[Finding]:
    findings = []
    gates = cluster.cluster.dra_driver.feature_gates
    for svc in cluster.services:
        service = svc.service
        if service.gpu is None:
            continue
        if service.gpu.alternatives:
            # firstAvailable: alpha 1.33, beta (on) 1.34, GA 1.36.
            why = _gate(cluster, "DRAPrioritizedList", 34, 33)
            if why:
                findings.append(Finding(
                    "GEN202",
                    f"gpu.alternatives renders firstAvailable, but {why}: the API server "
                    "would silently drop the field and the claim would request nothing "
                    "(or be rejected)",
                    svc.located.at("gpu", "alternatives"), "gpu.alternatives",
                    hint="enable DRAPrioritizedList (1.33) or remove the alternatives",
                ))
        for gpu_class in [svc.gpu_class, *(c for c, _ in svc.alternatives)]:
            if gpu_class is None:
                continue
            located = cluster.gpu_classes[gpu_class.name]
            if gpu_class.extended_resource_name:
                why = _gate(cluster, "DRAExtendedResource", 36, 34)
                if why:
                    findings.append(Finding(
                        "GEN202",
                        f"extendedResourceName of class {gpu_class.name!r} needs "
                        f"DRAExtendedResource, but {why}: the API server would drop it "
                        f"(cluster {cluster.name})",
                        located.at("extended_resource_name"), "extended_resource_name",
                    ))
            if gpu_class.sharing is not None:
                gate = ("TimeSlicingSettings" if gpu_class.sharing.strategy == "time-slicing"
                        else "MPSSupport")
                if not gates.get(gate, False):
                    findings.append(Finding(
                        "GEN207",
                        f"class {gpu_class.name!r} shares devices with "
                        f"{gpu_class.sharing.strategy}, which the NVIDIA DRA driver rejects "
                        f"unless its {gate} feature gate is on (cluster {cluster.name}): "
                        f"'unknown GPU sharing strategy'",
                        located.at("sharing", "strategy"), "sharing.strategy",
                        hint=f"set dra_driver.feature_gates.{gate}: true in cluster "
                        f"{cluster.name!r}",
                    ))
    return findings


def _first_compile_error(expression: str, minors: dict[int, list[str]]) -> str | None:
    """The compile error of ``expression`` in the oldest of the clusters (by minor) that
    carry it, or in the newest environment when none does; None when it compiles."""
    from gen.dra.cel import compile_selector

    versions: list[int | None] = [*sorted(minors)] or [None]
    for minor in versions:
        try:
            compile_selector(expression, minor)
        except CELCompileError as err:
            clusters = sorted(set(minors.get(minor, []))) if minor is not None else []
            where = f" (cluster {', '.join(map(repr, clusters))})" if clusters else ""
            return err.message + (where if "this cluster runs" in err.message else "")
    return None


def _selector_findings(plan: Plan) -> list[Finding]:
    """GEN203 per selector, compiled for the Kubernetes version of each DRA cluster using it."""
    from gen.dra.selectors import class_cel

    class_minors: dict[str, dict[int, list[str]]] = {}
    service_minors: dict[tuple[str, str], dict[int, list[str]]] = {}
    for cluster in plan.clusters:
        if cluster.dra_api_version is None:
            continue
        for svc in cluster.services:
            classes = [svc.gpu_class, *(c for c, _ in svc.alternatives)]
            for gpu_class in classes:
                if gpu_class is not None:
                    by_minor = class_minors.setdefault(gpu_class.name, {})
                    by_minor.setdefault(cluster.minor, []).append(cluster.name)
            service = (svc.service.namespace, svc.service.name)
            by_cluster = service_minors.setdefault(service, {})
            by_cluster.setdefault(cluster.minor, []).append(cluster.name)
    findings = []
    for located in plan.profiles.gpu_classes.values():
        minors = class_minors.get(located.value.name, {})
        for j, expression in enumerate(class_cel(located.value)):
            message = _first_compile_error(expression, minors)
            if message is not None:
                raw = j - 1
                where = located.at("cel", raw) if raw >= 0 else located.at("match")
                key = f"cel[{raw}]" if raw >= 0 else "match"
                findings.append(Finding("GEN203", message, where, key))
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
                findings.append(Finding(
                    "GEN203", message, svc_located.at("gpu", "selectors", j),
                    f"gpu.selectors[{j}]",
                ))
    return findings


def check(plan: Plan) -> list[Finding]:
    """GEN201–GEN208 (satisfiability lives in gen.dra.satisfiability)."""
    findings: list[Finding] = []
    for cluster in plan.clusters:
        findings += _version_findings(cluster)
        if cluster.dra_api_version is not None:
            findings += _service_findings(cluster)
        elif any(s.service.gpu and s.service.gpu.alternatives for s in cluster.services):
            for svc in cluster.services:
                if svc.service.gpu and svc.service.gpu.alternatives:
                    findings.append(Finding(
                        "GEN208",
                        f"cluster {cluster.name!r} uses the device plugin: alternatives "
                        "(firstAvailable) need DRA and are ignored",
                        svc.located.at("gpu", "alternatives"), "gpu.alternatives",
                        severity=Severity.WARNING,
                    ))
    findings += _selector_findings(plan)
    return findings
