"""``kind: Cluster`` — one Kubernetes cluster, its node pools and how it is delivered."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from gen.models._base import ProfileKind, Spec, shared_default
from gen.models._types import (
    APIGroupVersion,
    DNSLabel,
    DNSSubdomain,
    DriverVersion,
    ImageRef,
    KubernetesVersion,
    LabelKey,
    LabelValue,
    check_url_credentials,
)
from gen.pins import pin

_ENGINE_SECRET = (
    "give the engine the repository credentials as a Secret instead (Argo CD: a Secret "
    "labelled argocd.argoproj.io/secret-type: repository; Flux: the GitRepository's "
    "spec.secretRef)"
)


class Taint(Spec):
    """A node taint that GPU workloads of the pool must tolerate."""

    key: LabelKey = Field(description="Taint key, e.g. 'nvidia.com/gpu'.")
    value: LabelValue = Field("", description="Taint value (may be empty).")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] = Field(
        "NoSchedule", description="Taint effect."
    )


class AppleVM(Spec):
    """Sizing of a Linux VM node on a Mac (krunkit/libkrun with a Venus paravirtual GPU)."""

    chip: str = Field(description="Apple chip of the host Mac, e.g. 'm2-ultra'.")
    host_memory_gb: int = Field(ge=8, le=1024, description="Unified memory of the host Mac in GB.")
    vm_memory_gb: int = Field(ge=2, le=1024, description="Memory given to the VM in GB.")
    resource_name: str = Field(
        "squat.ai/dri", description="Extended resource the generic device plugin advertises."
    )
    sharing: int = Field(1, ge=1, le=64, description="Pods that may share one /dev/dri device.")
    device_plugin_image: ImageRef | None = Field(
        None,
        description="Image of the generic device plugin (privileged) for this pool, pinned "
        "by tag or digest, e.g. your mirror; default: gen's digest-pinned upstream image.",
    )


class NodePool(Spec):
    """A group of identical GPU nodes."""

    name: DNSLabel = Field(description="Pool name, unique in the cluster.")
    platform: Literal["nvidia", "apple-vm"] = Field(
        "nvidia",
        description="'nvidia': NVIDIA GPUs (full or MIG). 'apple-vm': Linux VMs on Macs "
        "with a Vulkan paravirtual GPU (krunkit).",
    )
    gpu: str = Field(
        "",
        description="GPU model: catalog id, PCI device id or DRA product name "
        "(see 'gen catalog gpus'). Required for platform 'nvidia'.",
    )
    gpus_per_node: int = Field(1, ge=1, le=16, description="GPUs in each node.")
    nodes: int = Field(ge=0, le=100_000, description="Number of nodes in the pool.")
    driver_version: DriverVersion | None = Field(
        None, description="NVIDIA driver version installed on the nodes (platform 'nvidia')."
    )
    mig_layout: DNSLabel | None = Field(
        None, description="Name of a MIGLayout applied to every GPU of the pool."
    )
    mig: Literal["static", "dynamic"] | None = Field(
        None,
        description="'dynamic': MIG slices are carved when a claim is allocated (DRA "
        "partitionable devices, the DRA driver's DynamicMIG gate); no mig_layout. "
        "'static': the pool's mig_layout, applied by the GPU Operator (the default when "
        "mig_layout is set).",
    )
    previous_mig_layout: DNSLabel | None = Field(
        None,
        description="The layout the pool had before this change; set while a re-partition "
        "rolls out so lint points at the runbook.",
    )
    virtualized: bool = Field(
        False, description="Cloud or VM nodes: MIG changes need a reboot (WITH_REBOOT)."
    )
    labels: dict[LabelKey, LabelValue] = Field(
        default_factory=dict, description="Labels the nodes carry (used for node selection)."
    )
    taints: tuple[Taint, ...] = Field((), description="Taints the nodes carry.")
    interconnect: Literal["infiniband", "roce", "nvlink", "ethernet"] | None = Field(
        None,
        description="The network between the pool's nodes that a replica spanning nodes "
        "talks over (NCCL): 'infiniband' or 'roce' (GPUDirect RDMA), 'nvlink' (a multi-node "
        "NVLink fabric), 'ethernet' (TCP sockets only). Unset: not declared (GEN424).",
    )
    nvlink_domain_nodes: int | None = Field(
        None, ge=1, le=576,
        description="Nodes of one multi-node NVLink domain (clique) of the pool; default: the "
        "GPU's rack-scale system from the catalog (GB200/GB300 NVL72: 18 trays of 4 GPUs). "
        "A replica that spans nodes there gets a ComputeDomain (IMEX channel) and stays "
        "inside one clique (node label nvidia.com/gpu.clique).",
    )
    addressing_mode: Literal["ATS", "HMM", "None"] | None = Field(
        None,
        description="The memory addressing mode NVML reports on the pool's nodes, which the "
        "NVIDIA DRA driver publishes as the device attribute addressingMode: 'HMM' where the "
        "nodes run NVIDIA's open kernel modules on a kernel with HMM, 'ATS' on Grace systems, "
        "'None' where neither is active. Default: the GPU's catalog value ('ATS' for Grace "
        "parts, 'None' for the others).",
    )
    apple_vm: AppleVM | None = Field(None, description="VM sizing for platform 'apple-vm'.")

    @model_validator(mode="after")
    def _platform_fields(self) -> NodePool:
        if self.platform == "nvidia":
            if not self.gpu:
                raise ValueError("'gpu' is required for platform 'nvidia'")
            if self.driver_version is None:
                raise ValueError("'driver_version' is required for platform 'nvidia'")
            if self.apple_vm is not None:
                raise ValueError("'apple_vm' is only for platform 'apple-vm'")
            if self.mig == "dynamic" and self.mig_layout is not None:
                raise ValueError("'mig: dynamic' carves slices at allocation time; remove "
                                 "'mig_layout' (or set 'mig: static')")
            if self.mig == "static" and self.mig_layout is None:
                raise ValueError("'mig: static' needs a 'mig_layout'")
        else:
            if self.apple_vm is None:
                raise ValueError("'apple_vm' is required for platform 'apple-vm'")
            if self.mig_layout is not None or self.mig is not None:
                raise ValueError("MIG is NVIDIA-only; remove 'mig_layout' and 'mig'")
            if self.addressing_mode is not None:
                raise ValueError("'addressing_mode' is what NVML reports on NVIDIA nodes; "
                                 "remove it")
        return self


class GitOps(Spec):
    """How the cluster receives ``out/<cluster>/``."""

    engine: Literal["argocd", "flux"] = Field(description="GitOps engine that applies out/.")
    repo_url: str = Field(
        pattern=r"^(https://|ssh://|git@)[^\s]+(?!\n)$",
        description="Git URL of this fleet repository.",
    )
    revision: str = Field("main", min_length=1, description="Branch, tag or commit to sync.")
    path_prefix: str = Field(
        "out", pattern=r"^[A-Za-z0-9_.\-/]+(?!\n)$",
        description="Folder of out/ inside the repository.",
    )
    namespace: DNSLabel | None = Field(
        None, description="Namespace of the GitOps controller (default argocd / flux-system)."
    )
    project: DNSLabel = Field("default", description="Argo CD project.")
    destination_server: str = Field(
        "https://kubernetes.default.svc", description="Argo CD destination API server URL."
    )
    fleet_mode: Literal["auto", "applications", "applicationset"] = Field(
        "auto",
        description="Argo CD: one Application per cluster ('applications'), or one "
        "ApplicationSet with progressive syncs for all the clusters of the same Argo CD "
        "namespace, repository and revision ('applicationset'). 'auto': an ApplicationSet "
        "when more than 10 clusters share them. Every cluster of the group must agree.",
    )
    wave: int = Field(
        0, ge=0, le=99,
        description="Rollout wave in fleet mode: the ApplicationSet syncs the clusters of "
        "wave 0 first, and the next wave only once those are healthy.",
    )

    @field_validator("path_prefix")
    @classmethod
    def _inside_repository(cls, value: str) -> str:
        if value.startswith("/"):
            raise ValueError(
                f"{value!r} is absolute: path_prefix is a folder relative to the repository's "
                f"root, e.g. {value.strip('/') or 'out'!r}"
            )
        if ".." in value.split("/"):
            raise ValueError(
                f"{value!r} leaves the repository: '..' is not allowed in path_prefix"
            )
        return value

    @field_validator("repo_url")
    @classmethod
    def _repo_without_credentials(cls, value: str) -> str:
        return check_url_credentials(value, _ENGINE_SECRET)

    @field_validator("destination_server")
    @classmethod
    def _server_without_credentials(cls, value: str) -> str:
        return check_url_credentials(
            value, "Argo CD reads a destination's credentials from its cluster Secret")


class GPUOperator(Spec):
    """NVIDIA GPU Operator installation (Helm chart)."""

    version: str = Field(
        pin("gpu-operator").version, pattern=r"^v\d+\.\d+\.\d+(?!\n)$",
        description="Pinned chart version (default: gen's pin, docs/versions.md).",
    )
    namespace: DNSLabel = Field("gpu-operator", description="Namespace of the operator.")


class DRADriver(Spec):
    """NVIDIA DRA driver installation (Helm chart), for clusters with allocation 'dra'."""

    version: str = Field(
        pin("dra-driver").version, pattern=r"^v?\d+\.\d+\.\d+(?!\n)$",
        description="Pinned chart version (default: gen's pin, docs/versions.md).",
    )
    namespace: DNSLabel = Field("nvidia-dra-driver-gpu", description="Namespace of the driver.")
    feature_gates: dict[str, bool] = Field(
        default_factory=dict,
        description="Driver feature gates, e.g. TimeSlicingSettings, MPSSupport, DynamicMIG.",
    )


class WorkloadPriority(Spec):
    """A Kueue WorkloadPriorityClass the workloads of a quota's namespace are admitted with."""

    name: DNSSubdomain = Field(description="WorkloadPriorityClass name.")
    value: int = Field(
        ge=-2_147_483_648, le=1_000_000_000,
        description="Priority: a higher value is admitted first and may preempt lower ones "
        "(as the quota's preemption allows).",
    )


ReclaimPolicy = Literal["Never", "LowerPriority", "Any"]
"""Kueue's ``preemption.reclaimWithinCohort``: which workloads of other ClusterQueues of the
cohort that borrowed this queue's quota it may preempt to get it back."""


class GPUQuota(Spec):
    """How many devices of a class a namespace may claim: a ResourceQuota
    (``quota_engine: resourcequota``) or a Kueue ClusterQueue with its LocalQueue
    (``quota_engine: kueue``). All the quotas of one namespace make one ClusterQueue, so
    they agree on ``cohort``, ``preemption`` and ``priority_class``."""

    namespace: DNSLabel = Field(description="Namespace the quota applies to.")
    gpu_class: DNSSubdomain = Field(description="GPUClass (DeviceClass) the quota counts.")
    devices: int = Field(ge=0, le=1_000_000, description="Most devices of that class.")
    cohort: DNSLabel | None = Field(
        None,
        description="Kueue: the cohort whose ClusterQueues lend each other unused quota. "
        "Without one, the namespace never gets more than 'devices'.",
    )
    borrowing_limit: int | None = Field(
        None, ge=0, le=1_000_000,
        description="Kueue: the most devices of the class this namespace may borrow from "
        "the cohort beyond 'devices' (default: as many as the cohort lends). Needs 'cohort'.",
    )
    lending_limit: int | None = Field(
        None, ge=0, le=1_000_000,
        description="Kueue: the most of its unused devices the namespace lends to the "
        "cohort (default: all of them); the rest stays reserved for it. Needs 'cohort'.",
    )
    preemption: ReclaimPolicy = Field(
        "Never",
        description="Kueue: which workloads of the cohort that borrowed this namespace's "
        "devices it may preempt to reclaim them ('Never', 'LowerPriority', 'Any').",
    )
    priority_class: WorkloadPriority | None = Field(
        None,
        description="Kueue: the WorkloadPriorityClass of the namespace's workloads "
        "(label kueue.x-k8s.io/priority-class).",
    )
    node_pools: tuple[DNSLabel, ...] = Field(
        (),
        description="Kueue: the pools (ResourceFlavors) the quota's devices come from, in "
        "the order Kueue tries them; default: every pool with devices of the class. "
        "'devices' is split over them, each pool's share up to its devices of the class.",
    )

    @field_validator("borrowing_limit", "lending_limit")
    @classmethod
    def _needs_cohort(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is not None and info.data.get("cohort") is None:
            raise ValueError(
                f"{info.field_name} needs a 'cohort': a ClusterQueue without one neither "
                "borrows nor lends (Kueue rejects the limit)")
        return value

    @field_validator("lending_limit")
    @classmethod
    def _lend_what_it_has(cls, value: int | None, info: ValidationInfo) -> int | None:
        devices = info.data.get("devices")
        if value is not None and isinstance(devices, int) and value > devices:
            raise ValueError(
                f"lending_limit {value} is more than the quota's {devices} devices")
        return value

    @field_validator("preemption")
    @classmethod
    def _reclaim_needs_cohort(cls, value: str, info: ValidationInfo) -> str:
        if value != "Never" and "cohort" in info.data and info.data["cohort"] is None:
            raise ValueError(
                f"preemption {value!r} reclaims quota lent to the cohort: set 'cohort'")
        return value


class Monitoring(Spec):
    """Where metrics go: Prometheus Operator and the Prometheus KEDA queries."""

    service_monitors: bool = Field(
        True,
        description="Render a ServiceMonitor per service (needs 'prometheus-operator' in "
        "the cluster's addons).",
    )
    prometheus_url: str = Field(
        "http://prometheus-operated.monitoring.svc:9090",
        pattern=r"^https?://[^\s]+(?!\n)$",
        description="Prometheus the autoscaler queries for vllm:num_requests_waiting.",
    )
    namespace: DNSLabel = Field(
        "monitoring", description="Namespace Prometheus scrapes from (allowed by NetworkPolicy)."
    )

    @field_validator("prometheus_url")
    @classmethod
    def _prometheus_without_credentials(cls, value: str) -> str:
        return check_url_credentials(
            value, "KEDA reads Prometheus credentials from a TriggerAuthentication's Secret")


AccessMode = Literal["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"]
"""A PersistentVolumeClaim access mode."""

Addon = Literal["prometheus-operator", "keda", "inference-extension", "kueue", "lws"]
"""A cluster add-on whose custom resources gen renders: Prometheus Operator
(``ServiceMonitor``), KEDA (``ScaledObject``), the Gateway API Inference Extension
(``InferencePool``, with llm-d-router's ``InferenceObjective``), Kueue (``ClusterQueue``,
``LocalQueue``, ``ResourceFlavor``, ``WorkloadPriorityClass``), LeaderWorkerSet
(``LeaderWorkerSet``, for replicas that span nodes)."""


class Gateway(Spec):
    """A Gateway the cluster runs (gen does not install the implementation: declaring it is the
    promise that it exists and accepts HTTPRoutes from the services' namespaces)."""

    name: DNSSubdomain = Field(description="The Gateway's name.")
    namespace: DNSLabel = Field(description="The Gateway's namespace.")
    gateway_class: DNSSubdomain = Field(
        alias="class", description="Its GatewayClass (e.g. 'istio', 'kgateway', "
        "'agentgateway'): the implementation that serves it.",
    )


class Kueue(Spec):
    """Kueue installation (Helm chart), for clusters with ``quota_engine: kueue``."""

    version: str = Field(
        pin("kueue").version, pattern=r"^v?\d+\.\d+\.\d+(?!\n)$",
        description="Pinned chart version (default: gen's pin, docs/versions.md).",
    )
    namespace: DNSLabel = Field("kueue-system", description="Namespace of Kueue's manager.")


class StorageClassInfo(Spec):
    """A StorageClass of the cluster and what its provisioner can do."""

    name: DNSSubdomain = Field(description="StorageClass name.")
    access_modes: tuple[AccessMode, ...] = Field(
        min_length=1,
        description="Access modes its volumes support, e.g. [ReadWriteOnce] for a block "
        "disk class, [ReadWriteOnce, ReadWriteMany] for NFS or CephFS.",
    )
    default: bool = Field(
        False,
        description="The cluster's default StorageClass (annotated "
        "storageclass.kubernetes.io/is-default-class): PVCs that name no class get it.",
    )


class ClusterStorage(Spec):
    """Storage classes of the cluster, for model-cache volumes."""

    model_cache_class: DNSSubdomain | None = Field(
        None,
        description="StorageClass of model-cache PVCs whose service names none; default: "
        "the cluster's default StorageClass.",
    )
    classes: tuple[StorageClassInfo, ...] = Field(
        (), description="StorageClasses and their access modes (checked by gen lint)."
    )

    @field_validator("classes")
    @classmethod
    def _one_default(cls, value: tuple[StorageClassInfo, ...]) -> tuple[StorageClassInfo, ...]:
        defaults = [c.name for c in value if c.default]
        if len(defaults) > 1:
            raise ValueError(f"more than one default StorageClass ({', '.join(defaults)}): "
                             "mark one 'default: true'")
        names = [c.name for c in value]
        twice = sorted({n for n in names if names.count(n) > 1})
        if twice:
            raise ValueError(f"StorageClass {twice[0]!r} is declared more than once")
        return value


class Cluster(ProfileKind):
    """A Kubernetes cluster of the fleet."""

    kind: Literal["Cluster"] = Field(description="Document kind.")
    name: DNSLabel = Field(description="Cluster name; also the folder out/<name>/.")
    kubernetes_version: KubernetesVersion
    allocation: Literal["dra", "device-plugin"] = Field(
        description="How pods get GPUs: DRA ResourceClaims, or device-plugin extended resources."
    )
    feature_gates: dict[str, bool] = Field(
        default_factory=dict,
        description="Kubernetes feature gates the admins set (e.g. DRAPrioritizedList: true).",
    )
    runtime_config: tuple[APIGroupVersion, ...] = Field(
        (),
        description="API versions enabled with --runtime-config, e.g. 'resource.k8s.io/v1beta1'.",
    )
    gitops: GitOps | None = Field(None, description="GitOps delivery settings.")
    gpu_operator: GPUOperator = Field(
        default_factory=shared_default(GPUOperator), description="NVIDIA GPU Operator settings."
    )
    dra_driver: DRADriver = Field(
        default_factory=shared_default(DRADriver),
        description="NVIDIA DRA driver settings (allocation 'dra')."
    )
    node_pools: tuple[NodePool, ...] = Field(min_length=1, description="GPU node pools.")
    quotas: tuple[GPUQuota, ...] = Field(
        (), description="GPU quotas per namespace: a DRA ResourceQuota (devices of the class) "
        "on DRA clusters, an extended-resource ResourceQuota (requests.nvidia.com/gpu or "
        "requests.nvidia.com/mig-<profile>) on device-plugin clusters.",
    )
    monitoring: Monitoring = Field(
        default_factory=shared_default(Monitoring), description="Metrics settings."
    )
    addons: tuple[Addon, ...] = Field(
        (),
        description="Add-ons installed in the cluster whose custom resources gen may "
        "render: 'prometheus-operator' (ServiceMonitors), 'keda' (ScaledObjects), 'lws' "
        "(LeaderWorkerSets of multi-node replicas). An "
        "object whose CRD the cluster lacks fails the whole sync, so gen renders none.",
    )
    storage: ClusterStorage = Field(
        default_factory=shared_default(ClusterStorage), description="Model-cache storage classes."
    )
    gateways: tuple[Gateway, ...] = Field(
        (), max_length=64,
        description="Gateways the cluster runs, that routed services ('routing.gateway') "
        "attach their HTTPRoutes to.",
    )
    gateway_api_version: str = Field(
        pin("gateway-api").version, pattern=r"^v?[0-9]+\.[0-9]+(\.[0-9]+)?(?!\n)$",
        description="The Gateway API release whose CRDs the cluster runs (HTTPRoute "
        "'timeouts' needs v1.2.0 or newer); default: the release gen validates against.",
    )

    @field_validator("gateways")
    @classmethod
    def _unique_gateways(cls, value: tuple[Gateway, ...]) -> tuple[Gateway, ...]:
        seen = [(g.namespace, g.name) for g in value]
        twice = sorted({f"{ns}/{name}" for ns, name in seen if seen.count((ns, name)) > 1})
        if twice:
            raise ValueError(f"gateway {twice[0]!r} is declared more than once")
        return value

    quota_engine: Literal["resourcequota", "kueue"] = Field(
        "resourcequota",
        description="What enforces 'quotas': 'resourcequota' (Kubernetes ResourceQuotas: "
        "a namespace's claims are refused once it is full), or 'kueue' (Kueue "
        "ClusterQueues and LocalQueues: pods wait for quota, cohorts lend idle GPUs, "
        "preemption; needs 'kueue' in addons).",
    )
    kueue: Kueue = Field(
        default_factory=shared_default(Kueue), description="Kueue settings (quota_engine kueue)."
    )

    @field_validator("quota_engine")
    @classmethod
    def _kueue_installed(cls, value: str, info: ValidationInfo) -> str:
        addons = info.data.get("addons")
        if value == "kueue" and addons is not None and "kueue" not in addons:
            raise ValueError(
                "quota_engine 'kueue' needs 'kueue' in addons: gen then installs Kueue and "
                "renders its queues (without the CRDs every queue fails the sync)")
        return value

    @field_validator("quotas")
    @classmethod
    def _one_queue_per_namespace(cls, value: tuple[GPUQuota, ...]) -> tuple[GPUQuota, ...]:
        first: dict[str, GPUQuota] = {}
        for quota in value:
            seen = first.setdefault(quota.namespace, quota)
            for key in ("cohort", "preemption", "priority_class"):
                if getattr(quota, key) != getattr(seen, key):
                    raise ValueError(
                        f"the quotas of namespace {quota.namespace!r} disagree on {key!r}: "
                        "they make one Kueue ClusterQueue; give them the same value")
        values: dict[str, int] = {}
        for quota in value:
            priority = quota.priority_class
            if priority is not None and values.setdefault(priority.name,
                                                          priority.value) != priority.value:
                raise ValueError(
                    f"priority_class {priority.name!r} has two values "
                    f"({values[priority.name]} and {priority.value}): it is one "
                    "WorkloadPriorityClass")
        return value

    @model_validator(mode="after")
    def _unique_pools(self) -> Cluster:
        names = [p.name for p in self.node_pools]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"node pool names must be unique: {', '.join(dupes)}")
        return self
