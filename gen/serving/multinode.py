"""A vLLM replica that spans nodes: a LeaderWorkerSet group instead of a Deployment.

The group shape comes from :func:`gen.fleet.parallelism.service_shape` (``size`` = pods per
group, ``gpu.count`` GPUs in each pod). The objects (LeaderWorkerSet
``leaderworkerset.x-k8s.io/v1``, kubernetes-sigs/lws v0.10.0
``api/leaderworkerset/v1/leaderworkerset_types.go``):

- **Launch.** By default vLLM's own multi-node launcher (``multi_node.executor: mp``): every
  pod runs ``vllm serve`` with the same ``--tensor-parallel-size``/``--pipeline-parallel-size``,
  ``--distributed-executor-backend mp --nnodes <size> --master-addr $(LWS_LEADER_ADDRESS)``;
  the leader is ``--node-rank 0`` and serves the API, the workers ``--node-rank
  $(LWS_WORKER_INDEX) --headless`` (vllm-project/vllm v0.33.0 ``vllm/entrypoints/cli/serve.py``
  ``run_headless``: a headless node with ``node_rank_within_dp > 0`` runs only the
  multiprocessing executor's workers, joined to ``master_addr:master_port``; the flags are
  in gen's facts of that release, ``gen/data/vllm-releases.yaml``). The LWS pod webhook
  injects ``LWS_LEADER_ADDRESS``, ``LWS_WORKER_INDEX`` and ``LWS_GROUP_SIZE`` into every
  container, and Kubernetes expands ``$(VAR)`` in ``args`` from the container's env.
- **Data / expert parallel** (``data`` > 1): vLLM's internal load balancing across nodes
  (vllm ``docs/serving/data_parallel_deployment.md``): the leader runs the API server and its
  ``--data-parallel-size-local`` engines, each worker ``--headless`` with
  ``--data-parallel-start-rank`` = worker index × local ranks (computed by ``sh`` from
  ``LWS_WORKER_INDEX``), all joined to ``--data-parallel-address $(LWS_LEADER_ADDRESS)
  --data-parallel-rpc-port``; ``expert: true`` adds ``--enable-expert-parallel``.
- **Ray** (``multi_node.executor: ray``): the leader starts a Ray head and runs ``vllm serve
  --distributed-executor-backend ray``; workers join it (``ray start --address ... --block``),
  the shape of lws ``docs/examples/vllm/GPU/lws.yaml``. The image must ship ``ray`` (GEN426).
- **Group semantics.** ``restartPolicy: RecreateGroupOnPodRestart`` (a rank that dies leaves
  the others hung in a collective: the whole group restarts), ``startupPolicy: LeaderCreated``
  (the leader turns ready only once its workers joined, so ``LeaderReady`` would never start
  them), ``maxSurge: 0`` with ``maxUnavailable: 1`` unless the pool has room for a spare
  group (:func:`gen.serving.groups.spare_group`; the LWS webhook refuses both at 0).
- **Leader only**: the Service selects the leaders (``leaderworkerset.sigs.k8s.io/
  worker-index: "0"``, the label the controller sets), and only the leader has the HTTP port
  and probes (headless workers serve no HTTP).
- **Devices per pod**: on DRA clusters each pod gets its own claim from the service's
  ResourceClaimTemplate (``gpu.count`` devices); on device-plugin clusters each pod requests
  ``gpu.count`` ``nvidia.com/gpu``.
- **Model cache per pod**: ``volumeClaimTemplates`` (the controller adds them to the
  leader's and the workers' StatefulSets: lws ``pkg/controllers/leaderworkerset_controller.go``
  and ``pod_controller.go`` ``WithVolumeClaimTemplates``), since the pods of a group are on
  different nodes.
"""

from __future__ import annotations

import math
from typing import Any

from gen.fleet.endpoints import PORT_NAME
from gen.fleet.endpoints import ROUTED_PORT as CONTAINER_PORT
from gen.fleet.manifests import has_addon, manifest, model_cache_storage, queue_labels
from gen.fleet.parallelism import (
    CLIQUE_LABEL,
    ComputeDomainPlan,
    GroupShape,
    compute_domain,
    service_shape,
)
from gen.fleet.plan import Built, ClusterPlan, ManifestSpec, ServicePlan
from gen.serving.build import (
    PRESTOP_SECONDS,
    PROBE_PERIOD,
    _image,
    _placement,
    engine_args,
    engine_env,
    extended_resource,
    scaled_object,
    service_labels,
    shm_size,
    startup_seconds,
)
from gen.serving.groups import spare_group

__all__ = ["LEADER_INDEX_LABEL", "MASTER_PORT", "build", "build_group", "group_commands"]

LEADER_INDEX_LABEL = "leaderworkerset.sigs.k8s.io/worker-index"
"""The label the LWS controller sets on every pod of a group, "0" on the leader
(``WorkerIndexLabelKey``)."""
MASTER_PORT = 29500
"""torch.distributed's rendezvous port on the leader (vLLM's ``--master-port`` default)."""
DP_RPC_PORT = 13345
"""The data-parallel engines' handshake port on the leader (``--data-parallel-rpc-port``)."""
RAY_PORT = 6379
"""The Ray head's GCS port (``ray start --head`` default)."""


def _multi_args(shape: GroupShape) -> tuple[list[str], list[str]]:
    """(leader, worker) arguments added to ``vllm serve``'s for the mp launcher."""
    extra = ["--enable-expert-parallel"] if shape.expert else []
    if shape.data > 1:
        common = ["--data-parallel-size", str(shape.data),
                  "--data-parallel-size-local", str(shape.data_local),
                  "--data-parallel-address", "$(LWS_LEADER_ADDRESS)",
                  "--data-parallel-rpc-port", str(DP_RPC_PORT), *extra]
        return common, [*common, "--headless"]
    common = ["--distributed-executor-backend", "mp", "--nnodes", str(shape.pods),
              "--master-addr", "$(LWS_LEADER_ADDRESS)", "--master-port", str(MASTER_PORT),
              *extra]
    return ([*common, "--node-rank", "0"],
            [*common, "--node-rank", "$(LWS_WORKER_INDEX)", "--headless"])


def group_commands(svc: ServicePlan, shape: GroupShape
                   ) -> dict[str, tuple[list[str], list[str]]]:
    """``leader``/``worker`` → (container command, args) of a multi-node service."""
    base = engine_args(svc)
    if svc.service.multi_node.executor == "ray":
        extra = ["--enable-expert-parallel"] if shape.expert else []
        dp = (["--data-parallel-size", str(shape.data), "--data-parallel-backend", "ray"]
              if shape.data > 1 else [])
        leader = ["/bin/sh", "-c",
                  f'ray start --head --port={RAY_PORT} && exec vllm serve "$@"', "vllm"]
        worker = ["/bin/sh", "-c",
                  f'exec ray start --address="$LWS_LEADER_ADDRESS:{RAY_PORT}" --block']
        return {"leader": (leader, [*base, "--distributed-executor-backend", "ray", *dp,
                                    *extra]),
                "worker": (worker, [])}
    lead, work = _multi_args(shape)
    if shape.data > 1:
        # The start rank is index × local ranks: arithmetic Kubernetes' $(VAR) cannot do.
        worker = ["/bin/sh", "-c",
                  'exec vllm serve "$@" --data-parallel-start-rank '
                  f'"$((LWS_WORKER_INDEX * {shape.data_local}))"', "vllm"]
    else:
        worker = ["vllm", "serve"]
    return {"leader": (["vllm", "serve"], [*base, *lead]), "worker": (worker, [*base, *work])}


def _resources(plan: ClusterPlan, svc: ServicePlan, shape: GroupShape) -> dict[str, Any]:
    service = svc.service
    resources: dict[str, Any] = {
        "requests": {"cpu": service.resources.cpu, "memory": service.resources.memory},
        "limits": {"memory": service.resources.memory},
    }
    if plan.dra_api_version is not None:
        resources["claims"] = [{"name": "gpu"}]
    else:
        resource = extended_resource(plan, svc)
        resources["limits"][resource] = str(shape.gpus_per_pod)
        resources["requests"][resource] = str(shape.gpus_per_pod)
    return resources


GROUP_KEY_LABEL = "leaderworkerset.sigs.k8s.io/group-key"
"""The label the LWS pod webhook gives every pod of one group (``GroupUniqueHashLabelKey``)."""


def _affinity(plan: ClusterPlan, name: str,
              domain: ComputeDomainPlan | None) -> dict[str, Any] | None:
    """On an NVLink domain: every pod of a group in one clique (pod affinity on the group's
    own key, ``matchLabelKeys``: beta and on from Kubernetes 1.31), and never two pods of a
    group on one node (the ComputeDomain gives each node one IMEX channel: a second pod there
    hangs, NVIDIA/grove #485)."""
    if domain is None or plan.minor < 31:
        return None
    term = {"labelSelector": {"matchLabels": {"leaderworkerset.sigs.k8s.io/name": name}},
            "matchLabelKeys": [GROUP_KEY_LABEL]}
    return {
        "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {**term, "topologyKey": CLIQUE_LABEL}]},
        "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {**term, "topologyKey": "kubernetes.io/hostname"}]},
    }


def build_group(plan: ClusterPlan, svc: ServicePlan, shape: GroupShape) -> list[ManifestSpec]:
    """Every object of one multi-node vLLM service in one cluster."""
    service = svc.service
    origin = svc.located.document.location
    name, ns = service.name, service.namespace
    meta, selector = service_labels(svc)
    weight_bytes = svc.model.weight_bytes if svc.model is not None else 20 * 1024**3
    startup = startup_seconds(weight_bytes)
    node_selector, pod_tolerations = _placement(svc)
    commands = group_commands(svc, shape)
    port = {"name": PORT_NAME, "containerPort": CONTAINER_PORT, "protocol": "TCP"}
    pods = [  # the leader (probes, the API port) first, then the workers
        {"labels": {**meta, "gen.dev/role": "leader"},
         "command": commands["leader"][0], "args": commands["leader"][1],
         "ports": [port], "probes": True},
        {"labels": {**meta, "gen.dev/role": "worker"},
         "command": commands["worker"][0], "args": commands["worker"][1],
         "ports": [], "probes": False},
    ]
    dra = plan.dra_api_version is not None
    claims = ([{"name": "gpu", "resourceClaimTemplateName": plan.claim_templates[name]}]
              if dra else [])
    resources = _resources(plan, svc, shape)
    domain = compute_domain(svc) if dra else None
    if domain is not None:
        # The IMEX channel of the group's ComputeDomain: a claim per pod from the template
        # the ComputeDomain controller creates (dra-driver-nvidia-gpu v0.5.0
        # templates/compute-domain-workload-claim-template.tmpl.yaml); gen renders none.
        claims.append({"name": "imex", "resourceClaimTemplateName": domain.channel_template})
        resources["claims"] = [*resources["claims"], {"name": "imex"}]
    specs = [
        manifest(
            "vllm/leaderworkerset.yaml.j2", origin,
            name=name, namespace=ns, labels={**meta, **queue_labels(plan, svc)},
            annotations={"argocd.argoproj.io/sync-wave": "0"},
            replicas=None if service.autoscaling else service.replicas,
            size=shape.pods, pods=pods, image=_image(svc), env=engine_env(svc),
            port_name=PORT_NAME, resources=resources, affinity=_affinity(plan, name, domain),
            startup_failure_threshold=math.ceil(startup / PROBE_PERIOD),
            probe_period=PROBE_PERIOD, shm_size=shm_size(shape.gpus_per_pod),
            node_selector=node_selector, tolerations=pod_tolerations,
            resource_claims=claims,
            grace_seconds=PRESTOP_SECONDS + service.serving.shutdown_timeout_seconds + 15,
            prestop_seconds=PRESTOP_SECONDS, native_sleep=plan.minor >= 30,
            max_surge=1 if spare_group(plan, svc) else 0,
            cache_access=service.storage.access_mode or "ReadWriteOnce",
            storage_class=model_cache_storage(plan, service, 1)[1],
            cache_size=service.storage.cache_size,
        ),
        manifest(
            "vllm/service.yaml.j2", origin,
            name=name, namespace=ns, labels=meta,
            selector={**selector, LEADER_INDEX_LABEL: "0"},
            port=service.exposure.port, port_name=PORT_NAME, target_port=PORT_NAME,
        ),
        manifest(
            "vllm/pdb.yaml.j2", origin,
            name=name, namespace=ns, labels=meta, selector=selector,
        ),
        manifest(
            "vllm/networkpolicy.yaml.j2", origin,
            name=name, namespace=ns, labels=meta, selector=selector,
            port=CONTAINER_PORT, group=selector,
            namespaces=sorted({*service.exposure.allow_from_namespaces,
                               plan.cluster.monitoring.namespace}),
        ),
    ]
    if domain is not None:
        specs.append(manifest(
            "vllm/computedomain.yaml.j2", origin,
            name=domain.name, namespace=ns, labels=meta,
            channel_template=domain.channel_template,
        ))
    if plan.cluster.monitoring.service_monitors and has_addon(plan, "prometheus-operator"):
        specs.append(manifest(
            "vllm/servicemonitor.yaml.j2", origin,
            name=name, namespace=ns, labels=meta, selector=selector, port_name=PORT_NAME,
        ))
    if service.autoscaling is not None and has_addon(plan, "keda"):
        specs.append(scaled_object(
            plan, svc, meta,
            target={"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet"}))
    return specs


def build(plan: ClusterPlan) -> Built:
    """The LeaderWorkerSet groups of every vLLM service of the cluster whose replica spans
    nodes (the others are :func:`gen.serving.build.build`'s Deployments)."""
    specs: list[ManifestSpec] = []
    for svc in plan.services:
        shape = service_shape(svc) if svc.service.gpu is not None else None
        if shape is not None and shape.multi_node and svc.service.disaggregation is None:
            specs.extend(build_group(plan, svc, shape))
    return Built(specs)
