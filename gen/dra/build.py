"""DRA objects: DeviceClass per GPUClass, ResourceClaimTemplate per service, quotas.

The resource.k8s.io version follows the cluster (v1 from 1.34, v1beta2 on 1.33, v1beta1
on 1.32, v1alpha3 on 1.31), and with it the request shape: v1 and v1beta2 wrap a request
in ``exactly`` or ``firstAvailable``; v1beta1 and v1alpha3 are flat.
"""

from __future__ import annotations

from typing import Any

from gen.dra.selectors import class_cel
from gen.fleet.manifests import claim_template_name, extended_resource_name, labels, manifest
from gen.fleet.plan import Built, ClusterPlan, ManifestSpec, ServicePlan
from gen.fleet.roles import units
from gen.k8s.versions import flat_requests
from gen.models import GPUClass
from gen.models.cluster import GPUQuota

# DeviceClasses the NVIDIA DRA driver chart installs itself; gen never emits these.
CHART_CLASSES = frozenset({
    "gpu.nvidia.com", "mig.nvidia.com", "vfio.gpu.nvidia.com",
    "compute-domain-daemon.nvidia.com", "compute-domain-default-channel.nvidia.com",
})

IMMUTABLE_NOTE = (
    "ResourceClaimTemplate.spec is immutable: the API server rejects edits.\n"
    "Its name ends in a hash of its content: a changed claim is a new template, the\n"
    "Deployment that names it rolls, and the old template is pruned after the rollout."
)


def sharing_config(gpu_class: GPUClass) -> dict[str, Any] | None:
    """The NVIDIA opaque config for a class's sharing settings."""
    sharing = gpu_class.sharing
    if sharing is None:
        return None
    kind = "MigDeviceConfig" if gpu_class.device_type == "mig" else "GpuConfig"
    if sharing.strategy == "time-slicing":
        body: dict[str, Any] = {"strategy": "TimeSlicing"}
        if sharing.interval and kind == "GpuConfig":
            body["timeSlicingConfig"] = {"interval": sharing.interval}
    else:
        body = {"strategy": "MPS"}
        mps: dict[str, Any] = {}
        if sharing.active_thread_percentage is not None:
            mps["defaultActiveThreadPercentage"] = sharing.active_thread_percentage
        if sharing.pinned_memory_limit is not None:
            mps["defaultPinnedDeviceMemoryLimit"] = sharing.pinned_memory_limit
        if mps:
            body["mpsConfig"] = mps
    return {
        "driver": gpu_class.driver,
        "parameters": {
            "apiVersion": "resource.nvidia.com/v1beta1", "kind": kind, "sharing": body,
        },
    }


def _request(
    name: str, class_name: str, count: int, mode: str, selectors: tuple[str, ...]
) -> dict[str, Any]:
    body: dict[str, Any] = {"deviceClassName": class_name, "allocationMode": mode}
    if mode == "ExactCount":
        body["count"] = count
    if selectors:
        body["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    return {"name": name, **body}


def claim_requests(plan: ClusterPlan, svc: ServicePlan) -> list[dict[str, Any]]:
    """The device requests of a service's claim, in the cluster's API shape."""
    gpu = svc.service.gpu
    assert gpu is not None and svc.gpu_class is not None
    flat = flat_requests(plan.dra_api_version)
    first = _request("gpu", svc.gpu_class.name, gpu.count, gpu.allocation_mode, gpu.selectors)
    if svc.alternatives:
        subs = [{**first, "name": "first"}] + [
            _request(f"alt-{i}", cls.name, count, "ExactCount", ())
            for i, (cls, count) in enumerate(svc.alternatives)
        ]
        return [{"name": "gpu", "firstAvailable": subs}]
    if flat:
        return [first]
    body = {k: v for k, v in first.items() if k != "name"}
    return [{"name": "gpu", "exactly": body}]


def _extended_resource(plan: ClusterPlan, gpu_class: GPUClass) -> str:
    """The device-plugin resource a class's devices are counted as (whole GPUs, or the MIG
    profile's own resource under the mixed strategy)."""
    profile = gpu_class.match.mig_profile if gpu_class.device_type == "mig" else None
    return extended_resource_name(profile, "single" if plan.mig_strategy == "single"
                                  else "mixed")


def _quota_name(resource: str) -> str:
    """``gpu-quota`` for whole GPUs, ``gpu-quota-mig-3g-40gb`` for a MIG profile."""
    if resource == "nvidia.com/gpu":
        return "gpu-quota"
    return ("gpu-quota-" + resource.removeprefix("nvidia.com/")).replace(".", "-")[:63]


def _resource_quotas(plan: ClusterPlan) -> tuple[GPUQuota, ...]:
    """The quotas that are ResourceQuotas: none where Kueue's ClusterQueues enforce them
    (``quota_engine: kueue``; the Kueue builder renders those)."""
    return plan.cluster.quotas if plan.cluster.quota_engine == "resourcequota" else ()


def device_plugin_quotas(plan: ClusterPlan) -> list[ManifestSpec]:
    """The GPU quotas of a device-plugin cluster: extended-resource ResourceQuotas
    (``requests.nvidia.com/gpu``, ``requests.nvidia.com/mig-<profile>``). Kubernetes quotas
    extended resources by their ``requests.`` name only ("Resource quota for extended
    resources", https://kubernetes.io/docs/concepts/policy/resource-quotas/)."""
    hard: dict[tuple[str, str], dict[str, int]] = {}
    for quota in _resource_quotas(plan):
        resource = _extended_resource(plan, plan.gpu_classes[quota.gpu_class].value)
        per_ns = hard.setdefault((quota.namespace, resource), {})
        per_ns[f"requests.{resource}"] = per_ns.get(f"requests.{resource}", 0) + quota.devices
    return [
        manifest(
            "dra/resourcequota.yaml.j2", plan.located.at("quotas"), stage="gpu",
            name=_quota_name(resource),
            namespace=namespace,
            labels=labels(_quota_name(resource), "gpu-quota"),
            hard={key: str(value) for key, value in sorted(items.items())},
        )
        for (namespace, resource), items in sorted(hard.items())
    ]


def _claimed(plan: ClusterPlan) -> list[ServicePlan]:
    """The services of the cluster that get a ResourceClaimTemplate."""
    if plan.dra_api_version is None:
        return []
    return [
        unit.plan for svc in plan.services for unit in units(plan, svc)
        if unit.plan.service.gpu is not None and unit.plan.gpu_class is not None
        and unit.plan.service.engine == "vllm"
    ]


def claim_content(plan: ClusterPlan, svc: ServicePlan) -> dict[str, Any]:
    """What a service's ResourceClaimTemplate holds under ``spec`` (all of it immutable)."""
    assert svc.service.gpu is not None
    devices: dict[str, Any] = {"requests": claim_requests(plan, svc)}
    constraints = [{"requests": [], "matchAttribute": attr} for attr in svc.service.gpu.same]
    if constraints:
        devices["constraints"] = constraints
    return {
        "metadata": {"labels": labels(svc.service.name, "gpu-claim")},
        "spec": {"devices": devices},
    }


def claim_templates(plan: ClusterPlan) -> dict[str, str]:
    """Service name → the name of its ResourceClaimTemplate (derived from the content);
    a disaggregated service's roles by their workload names (``<service>-prefill``,
    :mod:`gen.fleet.roles`)."""
    return {
        svc.service.name: claim_template_name(svc.service, claim_content(plan, svc))
        for svc in _claimed(plan)
    }


def build(plan: ClusterPlan) -> Built:
    """DeviceClasses, ResourceClaimTemplates and quotas of a DRA cluster; the quotas of a
    device-plugin cluster as extended-resource quotas."""
    return Built(_specs(plan))


def _specs(plan: ClusterPlan) -> list[ManifestSpec]:
    if plan.dra_api_version is None:
        return device_plugin_quotas(plan)
    specs = []
    used = sorted({
        name
        for svc in plan.services for unit in units(plan, svc)
        if unit.plan.gpu_class is not None
        for name in (unit.plan.gpu_class.name, *(c.name for c, _ in unit.plan.alternatives))
    } | {q.gpu_class for q in plan.cluster.quotas})
    for name in used:
        located = plan.gpu_classes[name]
        gpu_class = located.value
        if gpu_class.name in CHART_CLASSES:
            continue
        config = sharing_config(gpu_class)
        specs.append(manifest(
            "dra/deviceclass.yaml.j2", located.document.location, stage="gpu",
            api_version=plan.dra_api_version,
            name=gpu_class.name,
            labels=labels(gpu_class.name, "gpu-class"),
            selectors=list(class_cel(gpu_class)),
            config=[{"opaque": config}] if config else [],
            extended_resource_name=gpu_class.extended_resource_name,
        ))
    for svc in _claimed(plan):
        service = svc.service
        content = claim_content(plan, svc)
        devices = content["spec"]["devices"]
        specs.append(manifest(
            "dra/resourceclaimtemplate.yaml.j2", svc.located.document.location,
            note=IMMUTABLE_NOTE,
            api_version=plan.dra_api_version,
            name=claim_template_name(service, content),
            namespace=service.namespace,
            labels=content["metadata"]["labels"],
            requests=devices["requests"],
            constraints=devices.get("constraints", []),
        ))
    for quota in _resource_quotas(plan):
        specs.append(manifest(
            "dra/resourcequota.yaml.j2", plan.located.at("quotas"), stage="gpu",
            name=f"gpu-{quota.gpu_class}".replace(".", "-")[:63],
            namespace=quota.namespace,
            labels=labels(quota.gpu_class, "gpu-quota"),
            hard={f"{quota.gpu_class}.deviceclass.resource.k8s.io/devices": str(quota.devices)},
        ))
    return specs
