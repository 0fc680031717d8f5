"""Production vLLM workloads: Deployment, Service, PVC, PDB, autoscaling, monitoring, policy.

Defaults encode what hand-written vLLM pods get wrong: a startupProbe sized from the
checkpoint (download + load) so a slow start is not killed by liveness; ``/dev/shm`` as
a memory emptyDir sized for the parallelism; ``enableServiceLinks: false`` (a Service
named ``vllm`` injects ``VLLM_PORT``); graceful drain (preStop, ``--shutdown-timeout``,
a grace period covering both); Pod Security "restricted" with UID 2000 / GID 0 and
writable HOME and caches; secrets only through ``secretKeyRef``.
"""

from __future__ import annotations

import math
from typing import Any

from gen.fleet.endpoints import PORT_NAME, ROUTED_PORT, routed, workload_selector
from gen.fleet.manifests import (
    extended_resource_name,
    has_addon,
    labels,
    manifest,
    model_cache_storage,
    progress_deadline_seconds,
    queue_labels,
    tolerations,
)
from gen.fleet.placement import candidates
from gen.fleet.plan import Built, ClusterPlan, ManifestSpec, ServicePlan
from gen.fleet.sizing import resolved_max_model_len, serving_config

CONTAINER_PORT = ROUTED_PORT
"""vLLM's port on aggregated and prefill pods (the routing sidecar's on decode pods)."""
PRESTOP_SECONDS = 15
CACHE_MOUNT = "/models"
DOWNLOAD_BYTES_PER_S = 200 * 1024**2
"""Assumed checkpoint download rate for the startup budget (first start, cold cache)."""
LOAD_BYTES_PER_S = 1024**3
"""Assumed rate of loading weights from the cache volume into GPU memory."""
WARMUP_SECONDS = 300
"""Engine start, CUDA graph capture and compile warm-up."""
PROBE_PERIOD = 10


def startup_seconds(weight_bytes: int) -> int:
    """Worst-case time from container start to a healthy server."""
    download = weight_bytes / DOWNLOAD_BYTES_PER_S
    return int(WARMUP_SECONDS + download + weight_bytes / LOAD_BYTES_PER_S)


def shm_size(devices: int) -> str:
    """``/dev/shm`` size: 2Gi for one device, 8Gi per device beyond (NCCL buffers), ≤ 64Gi."""
    if devices <= 1:
        return "2Gi"
    return f"{min(64, 8 * devices)}Gi"


def gpu_devices(svc: ServicePlan) -> int:
    """Devices each replica gets (the first choice of its request)."""
    return svc.service.gpu.count if svc.service.gpu is not None else 0


def extended_resource(plan: ClusterPlan, svc: ServicePlan) -> str:
    """Device-plugin resource name for a service on a non-DRA cluster."""
    gpu_class = svc.gpu_class
    if gpu_class is not None and gpu_class.device_type == "mig" and gpu_class.match.mig_profile:
        if plan.mig_strategy == "mixed":
            return extended_resource_name(gpu_class.match.mig_profile, "mixed")
        return extended_resource_name(gpu_class.match.mig_profile, "single")
    return "nvidia.com/gpu"


def engine_env(svc: ServicePlan) -> list[dict[str, Any]]:
    service = svc.service
    env: list[dict[str, Any]] = [
        {"name": "HF_HOME", "value": f"{CACHE_MOUNT}/huggingface"},
        {"name": "HOME", "value": "/home/vllm"},
        {"name": "XDG_CACHE_HOME", "value": "/home/vllm/.cache"},
        {"name": "XDG_CONFIG_HOME", "value": "/home/vllm/.config"},
        {"name": "VLLM_CACHE_ROOT", "value": "/home/vllm/.cache/vllm"},
        {"name": "TRITON_CACHE_DIR", "value": "/home/vllm/.cache/triton"},
        {"name": "DO_NOT_TRACK", "value": "1"},
        {"name": "VLLM_NO_USAGE_STATS", "value": "1"},
    ]
    if svc.model is not None:
        env.append({
            "name": "VLLM_ENGINE_READY_TIMEOUT_S",
            "value": str(startup_seconds(svc.model.weight_bytes)),
        })
    if service.auth.hf_token is not None:
        env.append({"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
            "name": service.auth.hf_token.name, "key": service.auth.hf_token.key,
        }}})
    if service.auth.api_key is not None:
        env.append({"name": "VLLM_API_KEY", "valueFrom": {"secretKeyRef": {
            "name": service.auth.api_key.name, "key": service.auth.api_key.key,
        }}})
    return env


def engine_args(svc: ServicePlan, port: int = CONTAINER_PORT) -> list[str]:
    """``vllm serve`` arguments; every memory-relevant setting explicit, from the service's one
    :class:`gen.serving.fit.ServingConfig` (the settings lint and ``gen fit`` budget)."""
    service = svc.service
    serving = service.serving
    config = serving_config(svc)
    length = resolved_max_model_len(svc)
    args = [
        service.model,
        "--host", "0.0.0.0",
        "--port", str(port),
        "--served-model-name", serving.served_model_name or service.name,
        "--max-model-len", str(length),
        "--tensor-parallel-size", str(config.tensor_parallel),
        "--pipeline-parallel-size", str(config.pipeline_parallel),
        "--gpu-memory-utilization", _fraction(config.gpu_memory_utilization),
        "--max-num-seqs", str(config.max_num_seqs),
        "--max-num-batched-tokens", str(config.max_num_batched_tokens),
        "--kv-cache-dtype", config.kv_cache_dtype,
        *(("--quantization", config.quantization) if config.quantization else ()),
        *(("--enforce-eager",) if config.enforce_eager else ()),
        "--shutdown-timeout", str(serving.shutdown_timeout_seconds),
        *serving.extra_args,
    ]
    return args


def _fraction(value: float) -> str:
    # Two decimals as vLLM's docs write them, more only when the profile has more: the value
    # rendered is the value lint budgeted.
    two = f"{value:.2f}"
    return two if float(two) == value else repr(value)


def _image(svc: ServicePlan) -> str:
    from gen.serving.image import service_image

    return service_image(svc.service).pulled


def _placement(svc: ServicePlan) -> tuple[dict[str, str], list[dict[str, str]]]:
    # Only pools that offer the devices the class asks for (a MIG class: MIG pools).
    offering = {c.pool.name for c in candidates(svc)}
    pools = tuple(p for p in svc.pools if p.name in offering) or svc.pools
    selector: dict[str, str] = {}
    if len(pools) == 1:
        selector = pools[0].node_labels
    elif pools:
        common = set(pools[0].node_labels.items())
        for pool in pools[1:]:
            common &= set(pool.node_labels.items())
        selector = dict(sorted(common))
    return selector, tolerations(pools)


def service_labels(svc: ServicePlan) -> tuple[dict[str, str], dict[str, str]]:
    """(labels, selector labels) of a service's objects and pods."""
    service = svc.service
    meta = labels(service.name, "inference", **{"gen.dev/model": _label_safe(service.model)})
    return meta, workload_selector(service)


def deployment(
    plan: ClusterPlan,
    svc: ServicePlan,
    *,
    name: str,
    meta: dict[str, str],
    selector: dict[str, str],
    cache_claim: str,
    args: list[str],
    env: list[dict[str, Any]],
    port: int = CONTAINER_PORT,
    port_name: str = PORT_NAME,
    extra_ports: tuple[dict[str, Any], ...] = (),
    init_containers: tuple[dict[str, Any], ...] = (),
) -> ManifestSpec:
    """The Deployment of one vLLM workload: ``svc`` sizes its pods (devices, claim, probes,
    placement, drain); the caller names it, labels it and gives its engine's arguments."""
    service = svc.service
    origin = svc.located.document.location
    devices = gpu_devices(svc)
    weight_bytes = svc.model.weight_bytes if svc.model is not None else 20 * 1024**3
    startup = startup_seconds(weight_bytes)
    dra = plan.dra_api_version is not None
    resources: dict[str, Any] = {
        "requests": {"cpu": service.resources.cpu, "memory": service.resources.memory},
        "limits": {"memory": service.resources.memory},
    }
    if dra:
        resources["claims"] = [{"name": "gpu"}]
    elif devices:
        resource = extended_resource(plan, svc)
        resources["limits"][resource] = str(devices)
        resources["requests"][resource] = str(devices)
    node_selector, pod_tolerations = _placement(svc)
    grace = PRESTOP_SECONDS + service.serving.shutdown_timeout_seconds + 15
    return manifest(
        "vllm/deployment.yaml.j2", origin,
        name=name, namespace=service.namespace, labels={**meta, **queue_labels(plan, svc)},
        selector=selector,
        replicas=None if service.autoscaling else service.replicas,
        image=_image(svc),
        args=args,
        env=env,
        port=port, port_name=port_name,
        extra_ports=list(extra_ports),
        init_containers=list(init_containers),
        resources=resources,
        startup_failure_threshold=math.ceil(startup / PROBE_PERIOD),
        probe_period=PROBE_PERIOD,
        progress_deadline_seconds=progress_deadline_seconds(
            PROBE_PERIOD, math.ceil(startup / PROBE_PERIOD)),
        shm_size=shm_size(devices),
        cache_claim=cache_claim,
        node_selector=node_selector,
        tolerations=pod_tolerations,
        resource_claims=(
            [{"name": "gpu", "resourceClaimTemplateName": plan.claim_templates[service.name]}]
            if dra else []
        ),
        grace_seconds=grace,
        prestop_seconds=PRESTOP_SECONDS,
        native_sleep=plan.minor >= 30,
        max_surge=0 if devices else 1,
    )


def scraped(plan: ClusterPlan) -> bool:
    """Whether the cluster's Prometheus Operator scrapes the services (ServiceMonitors)."""
    return bool(plan.cluster.monitoring.service_monitors
                and has_addon(plan, "prometheus-operator"))


def shared_objects(
    plan: ClusterPlan, svc: ServicePlan, *, pods: int, target_port: int | None = None,
) -> list[ManifestSpec]:
    """The objects every pod of a service shares: Service, model-cache PVC (sized for
    ``pods`` mounting it), PDB, NetworkPolicy, ServiceMonitor; ``target_port`` a number
    where the pods' port 8000 is not one container's named port."""
    service = svc.service
    origin = svc.located.document.location
    name, ns = service.name, service.namespace
    meta, selector_labels = service_labels(svc)
    cache_access, cache_class = model_cache_storage(plan, service, pods)
    specs = [
        manifest(
            "vllm/service.yaml.j2", origin,
            name=name, namespace=ns, labels=meta, selector=selector_labels,
            port=service.exposure.port, port_name=PORT_NAME,
            target_port=PORT_NAME if target_port is None else target_port,
        ),
        manifest(
            "vllm/pvc.yaml.j2", origin,
            name=f"{name}-model-cache", namespace=ns, labels=meta,
            access_mode=cache_access, size=service.storage.cache_size,
            storage_class=cache_class,
        ),
        manifest(
            "vllm/pdb.yaml.j2", origin,
            name=name, namespace=ns, labels=meta, selector=selector_labels,
        ),
    ]
    if not routed(plan, svc):
        # A routed service's pods get the routing capability's policy instead (only the
        # gateway and the endpoint picker reach them): policies add up, so this one, open to
        # the whole namespace, would undo it.
        specs.append(manifest(
            "vllm/networkpolicy.yaml.j2", origin,
            name=name, namespace=ns, labels=meta, selector=selector_labels,
            port=CONTAINER_PORT,
            namespaces=sorted({*service.exposure.allow_from_namespaces,
                               plan.cluster.monitoring.namespace}),
        ))
    if scraped(plan):
        specs.append(manifest(
            "vllm/servicemonitor.yaml.j2", origin,
            name=name, namespace=ns, labels=meta, selector=selector_labels,
            port_name=PORT_NAME,
        ))
    return specs


def scaled_object(plan: ClusterPlan, svc: ServicePlan, meta: dict[str, str], *,
                  target: dict[str, str] | None = None) -> ManifestSpec:
    """The KEDA ScaledObject of an autoscaled service: requests waiting in vLLM, or in the
    endpoint picker's view of the pool for a routed service (llm-d's recommendation, KEDA +
    EPP metrics); ``target`` the scaled workload's kind when it is not a Deployment."""
    service = svc.service
    auto = service.autoscaling
    assert auto is not None
    name, ns = service.name, service.namespace
    query = (f'sum(vllm:num_requests_waiting{{namespace="{ns}",'
             f'model_name="{service.serving.served_model_name or name}"}})')
    if routed(plan, svc) and scraped(plan):
        # The same requests waiting, one series from the picker instead of one per pod.
        from gen.routing.picker import queue_query

        query = queue_query(service.name, ns)
    return manifest(
        "vllm/scaledobject.yaml.j2", svc.located.document.location,
        name=name, namespace=ns, labels=meta,
        min_replicas=auto.min_replicas, max_replicas=auto.max_replicas,
        server=plan.cluster.monitoring.prometheus_url, query=query,
        threshold=str(auto.waiting_requests_per_replica), target=target,
    )


def build_service(plan: ClusterPlan, svc: ServicePlan) -> list[ManifestSpec]:
    """Every object of one vLLM service in one cluster."""
    service = svc.service
    name = service.name
    meta, selector_labels = service_labels(svc)
    specs = [
        deployment(
            plan, svc, name=name, meta=meta, selector=selector_labels,
            cache_claim=f"{name}-model-cache", args=engine_args(svc), env=engine_env(svc),
        ),
        *shared_objects(plan, svc, pods=service.max_replicas),
    ]
    if service.autoscaling is not None and has_addon(plan, "keda"):
        specs.append(scaled_object(plan, svc, meta))
    return specs


def _label_safe(value: str) -> str:
    text = "".join(c if c.isalnum() or c in "-_." else "_" for c in value)[-63:]
    return text.strip("-_.") or "model"


def build(plan: ClusterPlan) -> Built:
    """vLLM objects of every in-cluster vLLM service of the cluster (a disaggregated one is
    :mod:`gen.serving.disaggregation`'s, a multi-node one :mod:`gen.serving.multinode`'s)."""
    from gen.fleet.parallelism import service_shape

    specs: list[ManifestSpec] = []
    for svc in plan.services:
        if svc.service.engine == "vllm" and svc.service.gpu is not None:
            if svc.service.disaggregation is not None:
                continue  # the role workloads: gen.serving.disaggregation
            shape = service_shape(svc)
            if shape is None or not shape.multi_node:  # groups: gen.serving.multinode
                specs.extend(build_service(plan, svc))
    return Built(specs)
