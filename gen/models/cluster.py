"""``kind: Cluster`` — one Kubernetes cluster, its node pools and how it is delivered."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from gen.models._base import ProfileKind, Spec
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


class GPUQuota(Spec):
    """A DRA ResourceQuota: how many devices of a class a namespace may claim."""

    namespace: DNSLabel = Field(description="Namespace the quota applies to.")
    gpu_class: DNSSubdomain = Field(description="GPUClass (DeviceClass) the quota counts.")
    devices: int = Field(ge=0, le=1_000_000, description="Most devices of that class.")


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

Addon = Literal["prometheus-operator", "keda", "inference-extension"]
"""A cluster add-on whose custom resources gen renders: Prometheus Operator
(``ServiceMonitor``), KEDA (``ScaledObject``), the Gateway API Inference Extension
(``InferencePool``, with llm-d-router's ``InferenceObjective``)."""


class Gateway(Spec):
    """A Gateway the cluster runs (gen does not install the implementation: declaring it is the
    promise that it exists and accepts HTTPRoutes from the services' namespaces)."""

    name: DNSSubdomain = Field(description="The Gateway's name.")
    namespace: DNSLabel = Field(description="The Gateway's namespace.")
    gateway_class: DNSSubdomain = Field(
        alias="class", description="Its GatewayClass (e.g. 'istio', 'kgateway', "
        "'agentgateway'): the implementation that serves it.",
    )


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
        default_factory=GPUOperator, description="NVIDIA GPU Operator settings."
    )
    dra_driver: DRADriver = Field(
        default_factory=DRADriver, description="NVIDIA DRA driver settings (allocation 'dra')."
    )
    node_pools: tuple[NodePool, ...] = Field(min_length=1, description="GPU node pools.")
    quotas: tuple[GPUQuota, ...] = Field(
        (), description="GPU quotas per namespace: a DRA ResourceQuota (devices of the class) "
        "on DRA clusters, an extended-resource ResourceQuota (requests.nvidia.com/gpu or "
        "requests.nvidia.com/mig-<profile>) on device-plugin clusters.",
    )
    monitoring: Monitoring = Field(default_factory=Monitoring, description="Metrics settings.")
    addons: tuple[Addon, ...] = Field(
        (),
        description="Add-ons installed in the cluster whose custom resources gen may "
        "render: 'prometheus-operator' (ServiceMonitors), 'keda' (ScaledObjects). An "
        "object whose CRD the cluster lacks fails the whole sync, so gen renders none.",
    )
    storage: ClusterStorage = Field(
        default_factory=ClusterStorage, description="Model-cache storage classes."
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

    @model_validator(mode="after")
    def _unique_pools(self) -> Cluster:
        names = [p.name for p in self.node_pools]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"node pool names must be unique: {', '.join(dupes)}")
        return self
