"""``kind: InferenceService`` — a model served in one or more clusters."""

from __future__ import annotations

import ipaddress
import re
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from gen.models._base import ProfileKind, Spec, shared_default
from gen.models._types import DNSLabel, DNSSubdomain, ImageRef, LabelKey, Quantity

Engine = Literal["vllm", "llama-server", "vllm-metal", "vllm-mlx"]
MAC_ENGINES = ("vllm-metal", "vllm-mlx", "llama-server")
_GGUF_SEGMENT = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
"""One folder or file name of a GGUF path in a Hugging Face repository (the Hub's own names:
'Meta-Llama-3.1-8B-Instruct-Q8_0.gguf', 'UD-Q4_K_XL/…-00001-of-00002.gguf')."""


class SecretRef(Spec):
    """A key of a Kubernetes Secret; the value never appears in profiles or out/."""

    name: DNSSubdomain = Field(description="Secret name (in the service's namespace).")
    key: str = Field(pattern=r"^[-._a-zA-Z0-9]+(?!\n)$", description="Key inside the Secret.")


class GPUAlternative(Spec):
    """A fallback device choice (DRA firstAvailable), tried in order."""

    gpu_class: DNSSubdomain = Field(description="GPUClass of this alternative.")
    count: int = Field(1, ge=1, le=64, description="Devices of that class.")


class GPURequest(Spec):
    """The accelerators each replica needs."""

    gpu_class: DNSSubdomain = Field(description="GPUClass (DeviceClass) to request.")
    count: int = Field(1, ge=1, le=64, description="Devices per replica.")
    allocation_mode: Literal["ExactCount", "All"] = Field(
        "ExactCount", description="'All' takes every matching device on the node."
    )
    selectors: tuple[str, ...] = Field((), description="Extra CEL selectors for this request.")
    same: tuple[LabelKey, ...] = Field(
        (),
        description="Attributes all devices must share (matchAttribute), e.g. "
        "'resource.kubernetes.io/pcieRoot' or 'gpu.nvidia.com/parentUUID'.",
    )
    alternatives: tuple[GPUAlternative, ...] = Field(
        (), max_length=7, description="Fallbacks if the first choice is unavailable."
    )


class Parallelism(Spec):
    """How the model is split across devices: each replica runs on tensor × pipeline × data
    GPUs; above the pool's ``gpus_per_node`` the replica spans nodes (a LeaderWorkerSet
    group of pods, each with ``gpu.count`` GPUs; docs/multi-node.md)."""

    tensor: int = Field(1, ge=1, le=64, description="Tensor-parallel size.")
    pipeline: int = Field(1, ge=1, le=64, description="Pipeline-parallel size.")
    data: int = Field(
        1, ge=1, le=256, description="Data-parallel size: engine copies of tensor × pipeline "
        "GPUs each inside one replica (vLLM --data-parallel-size)."
    )
    expert: bool = Field(
        False, description="Expert parallelism for MoE layers (vLLM --enable-expert-parallel): "
        "the experts are sharded over tensor × data ranks instead of tensor-split."
    )

    @property
    def gpus(self) -> int:
        """GPUs of one replica: tensor × pipeline × data."""
        return self.tensor * self.pipeline * self.data


class MultiNode(Spec):
    """How a replica that spans nodes is launched."""

    executor: Literal["mp", "ray"] = Field(
        "mp", description="'mp': vLLM's own multi-node launcher (--nnodes, --node-rank, "
        "--master-addr, --headless workers). 'ray': a Ray cluster per group (the image must "
        "ship ray; see GEN426)."
    )


PickerProfile = Literal["default", "prefix-cache", "load-aware"]
"""How the endpoint picker scores a pool's pods (an ``EndpointPickerConfig`` scheduling profile,
llm-d-router): ``default`` weighs queue depth, KV-cache use and prefix-cache hits, as llm-d's
optimized baseline does; ``prefix-cache`` weighs prefix-cache hits most (long shared prompts);
``load-aware`` weighs queue depth and KV-cache use only."""


class Picker(Spec):
    """The endpoint picker (llm-d-router's EPP) that the gateway asks which pod takes a request."""

    replicas: int = Field(1, ge=1, le=16, description="Picker pods (one leads, the others "
                          "stand by).")
    profile: PickerProfile = Field("default", description="How it scores the pool's pods.")


_PATH_PREFIX = r"^/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*(?!\n)$"
_HOSTNAME = r"^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*(?!\n)$"


class Routing(Spec):
    """Serve through a Gateway and an InferencePool whose endpoint picker chooses the pod for
    each request (Gateway API Inference Extension, llm-d-router)."""

    gateway: str = Field(
        pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(?!\n)$",
        max_length=127,
        description="A Gateway the cluster declares in 'gateways': its name, or "
        "'namespace/name' when two declared Gateways share the name.",
    )
    path_prefix: str = Field(
        "/", pattern=_PATH_PREFIX, max_length=1024,
        description="Requests whose path starts with this reach the service (HTTPRoute "
        "PathPrefix match).",
    )
    hostnames: tuple[Annotated[str, Field(pattern=_HOSTNAME, max_length=253)], ...] = Field(
        (), max_length=16,
        description="Host names the route answers (HTTPRoute hostnames); empty: those of "
        "the Gateway's listener.",
    )
    priority: int | None = Field(
        None, ge=-1000, le=1000,
        description="Priority of the service's requests when the pool is saturated "
        "(an InferenceObjective): higher is served first, lower is shed first.",
    )
    picker: Picker = Field(
        default_factory=shared_default(Picker), description="The endpoint picker."
    )
    request_timeout_seconds: int = Field(
        300, ge=1, le=86_400,
        description="Longest a request may take end to end (HTTPRoute timeouts.request): "
        "long generations need minutes.",
    )


Connector = Literal["nixl", "lmcache", "mooncake"]
"""The KV-cache transfer between prefill and decode pods (vLLM ``--kv-transfer-config``):
NIXL (``NixlConnector``), LMCache (``LMCacheConnectorV1``), Mooncake (``MooncakeConnector``)."""


class Role(Spec):
    """One side of a disaggregated service; every field defaults to the service's own."""

    replicas: int | None = Field(
        None, ge=0, le=1000, description="Pods of this role; default: the service's replicas."
    )
    parallelism: Parallelism | None = Field(
        None, description="TP/PP of this role; default: the service's parallelism."
    )
    gpu: GPURequest | None = Field(
        None, description="Accelerators per pod of this role; default: the service's gpu."
    )


class Disaggregation(Spec):
    """Prefill and decode in separate pods, the KV cache handed over by one connector."""

    connector: Connector = Field(description="KV-cache transfer used by both roles.")
    prefill: Role = Field(
        default_factory=shared_default(Role), description="Pods that process prompts."
    )
    decode: Role = Field(
        default_factory=shared_default(Role), description="Pods that generate tokens."
    )


class Autoscaling(Spec):
    """Scale on queued requests (vllm:num_requests_waiting)."""

    min_replicas: int = Field(1, ge=1, le=1000, description="Fewest replicas.")
    max_replicas: int = Field(ge=1, le=1000, description="Most replicas.")
    waiting_requests_per_replica: int = Field(
        5, ge=1, le=10_000, description="Scale out above this many waiting requests per replica."
    )

    @model_validator(mode="after")
    def _order(self) -> Autoscaling:
        if self.max_replicas < self.min_replicas:
            raise ValueError("max_replicas is less than min_replicas")
        return self


class Serving(Spec):
    """Engine settings."""

    max_model_len: int | None = Field(
        None, ge=128, le=10_000_000, description="Context length; default: the largest that fits."
    )
    gpu_memory_utilization: float = Field(
        0.90, gt=0.1, le=0.98, description="Share of device memory vLLM may use."
    )
    max_num_seqs: int = Field(64, ge=1, le=4096, description="Concurrent sequences.")
    max_num_batched_tokens: int | None = Field(
        None, ge=1, le=1_000_000, description="Tokens per scheduler step; default: vLLM's for "
        "the service's GPUs and vLLM release (see docs/fit.md)."
    )
    kv_cache_dtype: Literal[
        "auto", "bfloat16", "fp8", "fp8_e4m3", "fp8_e5m2", "fp8_inc", "fp8_ds_mla"
    ] = Field("auto", description="KV-cache precision (vLLM's --kv-cache-dtype choices).")
    quantization: Literal[
        "awq", "awq_marlin", "gptq", "gptq_marlin", "fp8", "mxfp4", "compressed-tensors",
        "modelopt", "bitsandbytes",
    ] | None = Field(
        None, description="vLLM --quantization; default: the checkpoint's own (fp8 also "
        "quantizes a 16-bit checkpoint online)."
    )
    enforce_eager: bool = Field(
        False, description="Capture no CUDA graphs (vLLM --enforce-eager): more KV cache, "
        "slower decode."
    )
    image: ImageRef | None = Field(None, description="Engine image; default: gen's pinned one.")
    image_of: ImageRef | None = Field(
        None, description="The upstream release tag 'image' is a copy of (a mirror in a private "
        "registry), e.g. 'vllm/vllm-openai:v0.33.0': gen reads the engine version and CUDA "
        "runtime from it, so its version and driver checks still run.",
    )
    served_model_name: str | None = Field(
        None, max_length=200, description="Name clients use; default: the service name."
    )
    extra_args: tuple[str, ...] = Field((), description="Extra engine arguments.")
    shutdown_timeout_seconds: int = Field(
        30, ge=0, le=3600, description="Time to drain requests on shutdown."
    )

    @model_validator(mode="after")
    def _mirror_of_an_image(self) -> Serving:
        if self.image_of is not None and self.image is None:
            raise ValueError("image_of names the upstream tag of 'image': set 'image' (the "
                             "mirror the pods pull) too")
        return self

    @field_validator("extra_args")
    @classmethod
    def _no_secrets_in_args(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for arg in value:
            flag = arg.split("=", 1)[0]
            # vLLM reads '--api_key' as '--api-key': its FlexibleArgumentParser turns '_'
            # into '-' in an option's name (vllm-project/vllm, vllm/utils/argparse_utils.py,
            # FlexibleArgumentParser.parse_args).
            if flag.startswith("--") and flag.replace("_", "-") in ("--api-key", "--hf-token"):
                raise ValueError(f"{flag} takes a secret: use 'auth' instead")
        return value


class Exposure(Spec):
    """How clients reach the service."""

    port: int = Field(8000, ge=1, le=65535, description="Service port.")
    allow_from_namespaces: tuple[DNSLabel, ...] = Field(
        (), description="Namespaces allowed to call it (NetworkPolicy); empty: same namespace."
    )


class Auth(Spec):
    """Secrets, by reference only."""

    hf_token: SecretRef | None = Field(None, description="Hugging Face token for gated models.")
    api_key: SecretRef | None = Field(None, description="API key clients must send.")


class Storage(Spec):
    """Model cache volume."""

    cache_size: Quantity = Field("200Gi", description="Size of the model cache PVC.")
    storage_class: DNSSubdomain | None = Field(
        None, description="StorageClass of the PVC; default: the cluster's model_cache_class."
    )
    access_mode: (
        Literal["ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", "ReadWriteOncePod"] | None
    ) = Field(
        None,
        description="Access mode of the PVC; default: ReadWriteOnce for one replica, "
        "ReadWriteMany when replicas (or the autoscaling maximum) exceed one.",
    )


class Resources(Spec):
    """CPU and memory of each replica."""

    cpu: Quantity = Field("8", description="CPU request.")
    memory: Quantity = Field("64Gi", description="Memory request and limit.")


class MacHost(Spec):
    """A macOS host serving the model natively (outside the cluster)."""

    name: DNSLabel = Field(description="Host name, unique within the service.")
    address: str = Field(description="IP address in-cluster clients connect to.")
    chip: str = Field(description="Apple chip, e.g. 'm3-ultra' (see 'gen catalog gpus').")
    memory_gb: int = Field(ge=8, le=1024, description="Unified memory in GB.")

    @field_validator("address")
    @classmethod
    def _ip(cls, value: str) -> str:
        ipaddress.ip_address(value)
        return value


class PodSecurity(Spec):
    """Opt out of Pod Security 'restricted', with a reason."""

    privileged_reason: str | None = Field(
        None, min_length=10, description="Why this workload cannot run 'restricted'."
    )


class InferenceService(ProfileKind):
    """A model served with an inference engine."""

    kind: Literal["InferenceService"] = Field(description="Document kind.")
    name: DNSLabel = Field(description="Service name (not 'vllm': it collides with VLLM_PORT).")
    namespace: DNSLabel = Field("inference", description="Namespace of the workload.")
    model: str = Field(
        min_length=1, max_length=200, description="Hugging Face repo id or a Model profile name."
    )
    engine: Engine = Field("vllm", description="Inference engine.")
    clusters: tuple[DNSLabel, ...] = Field(min_length=1, description="Clusters it runs in.")
    node_pool: DNSLabel | None = Field(None, description="Pin to one node pool by name.")
    gpu: GPURequest | None = Field(None, description="Accelerators per replica (in-cluster).")
    parallelism: Parallelism = Field(
        default_factory=shared_default(Parallelism),
        description="Tensor, pipeline, data and expert parallelism."
    )
    multi_node: MultiNode = Field(
        default_factory=shared_default(MultiNode),
        description="Launch of a replica that spans nodes (tensor × pipeline × data above the "
        "pool's gpus_per_node).",
    )
    replicas: int = Field(1, ge=0, le=1000, description="Replicas when not autoscaled.")
    autoscaling: Autoscaling | None = Field(None, description="Scale on queue depth.")
    serving: Serving = Field(
        default_factory=shared_default(Serving), description="Engine settings."
    )
    exposure: Exposure = Field(
        default_factory=shared_default(Exposure), description="Service settings."
    )
    auth: Auth = Field(default_factory=shared_default(Auth), description="Secret references.")
    storage: Storage = Field(default_factory=shared_default(Storage), description="Model cache.")
    resources: Resources = Field(
        default_factory=shared_default(Resources), description="CPU / memory."
    )
    pod_security: PodSecurity = Field(
        default_factory=shared_default(PodSecurity), description="Exceptions."
    )
    mac_hosts: tuple[MacHost, ...] = Field(
        (), description="Native macOS hosts serving the model (engines vllm-metal, vllm-mlx, "
        "llama-server); in-cluster clients reach them through a selectorless Service."
    )
    routing: Routing | None = Field(
        None, description="Route requests through a Gateway and an InferencePool's endpoint "
        "picker (needs the 'inference-extension' add-on and a declared Gateway).",
    )
    disaggregation: Disaggregation | None = Field(
        None, description="Split prefill from decode (needs 'routing'): two role workloads "
        "that hand the KV cache over with one connector.",
    )
    gguf_file: str | None = Field(
        None, min_length=6, max_length=255,
        description="llama-server: the GGUF file to load, relative to the model volume "
        "('/models' in a pod, the service's models folder on a Mac), e.g. "
        "'Meta-Llama-3.1-8B-Instruct-Q8_0.gguf' or 'Q4_K_M/model-00001-of-00002.gguf'. "
        "Needed unless 'model' ends in the file's name ('<org>/<repo>/<file>.gguf').",
    )

    @field_validator("gguf_file")
    @classmethod
    def _gguf_file(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if "://" in value or value.startswith("hf:"):
            raise ValueError("gguf_file is the file's path inside the model repository, not "
                             "a URL: e.g. 'Llama-3.1-8B-Instruct-Q8_0.gguf'")
        if not value.endswith(".gguf"):
            raise ValueError("gguf_file must name a .gguf file, e.g. "
                             "'Llama-3.1-8B-Instruct-Q8_0.gguf'")
        bad = next((p for p in value.split("/") if not _GGUF_SEGMENT.fullmatch(p)), None)
        if bad is not None:
            shown = "an empty part ('//' or a leading '/')" if not bad else repr(bad[:60])
            raise ValueError(
                f"gguf_file must be a plain path inside the model repository: {shown} is not "
                "a file or folder name of letters, digits, '_', '.', '+' and '-' (starting "
                "with a letter, digit or '_'; no '..', '~', '$', spaces or '\\'), e.g. "
                "'Q4_K_M/model-00001-of-00002.gguf'"
            )
        return value

    @field_validator("routing")
    @classmethod
    def _routed_pods(cls, value: Routing | None, info: ValidationInfo) -> Routing | None:
        # Fields validate in declaration order: 'mac_hosts' is known here (a field validator
        # is located at its own key, a model validator only at the document).
        if value is not None and info.data.get("mac_hosts"):
            raise ValueError("'routing' serves in-cluster pods; a service on mac_hosts has "
                             "none for an InferencePool to select")
        return value

    @field_validator("disaggregation")
    @classmethod
    def _disaggregated_routing(
        cls, value: Disaggregation | None, info: ValidationInfo
    ) -> Disaggregation | None:
        if value is None:
            return None
        if "routing" in info.data and info.data["routing"] is None:
            raise ValueError("'disaggregation' needs 'routing': only the endpoint picker "
                             "sends a request to a prefill pod and then to a decode pod")
        if info.data.get("engine", "vllm") != "vllm":
            raise ValueError("'disaggregation' is for engine vllm (its KV connectors)")
        return value

    @field_validator("clusters")
    @classmethod
    def _clusters_once(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        twice = sorted({name for name in value if value.count(name) > 1})
        if twice:
            raise ValueError(f"cluster {twice[0]!r} is listed more than once (it would "
                             "render the same objects twice)")
        return value

    @model_validator(mode="after")
    def _shape(self) -> InferenceService:
        if self.name == "vllm":
            raise ValueError(
                "a Service named 'vllm' makes Kubernetes inject VLLM_PORT, which vLLM "
                "misreads; choose another name"
            )
        if self.mac_hosts:
            if self.engine not in MAC_ENGINES:
                raise ValueError(f"mac_hosts need engine one of {', '.join(MAC_ENGINES)}")
            if self.gpu is not None:
                raise ValueError("a service on mac_hosts has no in-cluster 'gpu' request")
            if self.auth.api_key is None:
                raise ValueError(
                    "traffic to mac_hosts leaves the pod network: 'auth.api_key' is required"
                )
            names = [h.name for h in self.mac_hosts]
            if len(set(names)) != len(names):
                raise ValueError("mac_hosts names must be unique")
        elif self.engine in ("vllm-metal", "vllm-mlx"):
            raise ValueError(f"engine {self.engine!r} runs only on mac_hosts")
        # A vllm service without 'gpu' is refused once its pools are known (resolve): on an
        # Apple VM pool the reason is that vLLM cannot run there at all (GEN601).
        if self.gguf_file is not None and self.engine != "llama-server":
            raise ValueError("'gguf_file' is for engine llama-server (GGUF models)")

        return self

    @property
    def min_replicas(self) -> int:
        """Replicas at the autoscaling minimum (the replicas that must all run at once)."""
        return self.autoscaling.min_replicas if self.autoscaling else self.replicas

    @property
    def max_replicas(self) -> int:
        """Replicas at the autoscaling maximum."""
        return self.autoscaling.max_replicas if self.autoscaling else self.replicas
