"""Every rule id gen can report: its default severity, title, section and documentation.

This is the one registry of rule ids. ``GEN0xx`` are input and output (profiles, templates,
rendered manifests, and the default rule of gen's errors), ``GEN1xx`` MIG, ``GEN2xx`` DRA,
``GEN3xx`` serving / fit, ``GEN40x``-``GEN44x`` routing, prefill/decode and multi-node,
``GEN45x``-``GEN46x`` quotas (Kueue), ``GEN5xx`` security, ``GEN6xx`` Apple Silicon, ``GEN7xx``
GitOps, ``GEN8xx`` a live cluster against the profiles (``gen verify``). Ids are stable: a rule
is never renumbered, and an id is never reused.

The title is the one-line description SARIF viewers show (``tool.driver.rules``); the doc text
is the "what" column of ``docs/lint-rules.md``, which :func:`rules_markdown` generates::

    python -m gen.rules > docs/lint-rules.md

A test keeps the committed page equal to the generated one, and another keeps the registry
equal to the ids that appear in gen's source. To add a rule: add it here, use its id in a
check, regenerate the page.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from gen.errors import Finding, Severity, SourceLocation

__all__ = ["RULES", "Rule", "Section", "finding", "rule", "rules_markdown"]


class Section(enum.Enum):
    """The part of the fleet a rule is about; the value is its heading in the docs."""

    INPUT_OUTPUT = "Input and output"
    MIG = "MIG"
    DRA = "DRA"
    SERVING = "Serving"
    ROUTING = "Routing and prefill/decode"
    MULTI_NODE = "Multi-node serving"
    QUOTAS = "Quotas (Kueue)"
    SECURITY = "Security"
    APPLE = "Apple Silicon"
    GITOPS = "GitOps"
    CLUSTER = "Live cluster (gen verify)"


@dataclass(frozen=True)
class Rule:
    """One rule id: what it reports and how bad it is by default."""

    id: str
    title: str
    """One line, for SARIF's ``shortDescription``."""
    section: Section
    doc: str
    """The documentation (Markdown, one line): what fires the rule."""
    severity: Severity = Severity.ERROR
    """The severity a finding of this rule has unless the check says otherwise."""


_IO, _MIG, _DRA, _SERVING, _SECURITY, _APPLE, _GITOPS, _CLUSTER = (
    Section.INPUT_OUTPUT, Section.MIG, Section.DRA, Section.SERVING, Section.SECURITY,
    Section.APPLE, Section.GITOPS, Section.CLUSTER,
)
_ROUTING = Section.ROUTING
_MULTI_NODE = Section.MULTI_NODE
_QUOTAS = Section.QUOTAS
_WARNING, _INFO = Severity.WARNING, Severity.INFO

_ALL = (
    Rule(
        "GEN000", "error without a rule of its own", _IO,
        "an error no other rule covers (the default rule of gen's errors; the CLI prints its "
        "message): out/ cannot be written or is stale (`render --check`), a GPU, model or MIG "
        "profile name on the command line the catalogs do not know, an external tool or a "
        "render worker failed",
    ),
    Rule(
        "GEN001", "profile YAML cannot be read", _IO,
        "YAML syntax, encoding (not UTF-8, NUL bytes), size, nesting or alias-expansion limits, "
        "duplicate keys, scalars YAML cannot convert (`!!float x`, `2024-02-30`), file names "
        "that are not UTF-8 or hold line breaks",
    ),
    Rule(
        "GEN002", "profile does not match the schema", _IO,
        "the profile does not match the schema: unknown key, wrong type, missing key, bad name",
    ),
    Rule(
        "GEN003", "reference to something that does not exist", _IO,
        "a reference to something that does not exist (GPU class, cluster, MIG layout, model, "
        "node pool, catalog GPU)",
    ),
    Rule(
        "GEN004", "suppression matches no finding", _IO,
        "a suppression (`# gen: ignore[RULE] reason`, a profile's `lint.ignore`, an entry of "
        "the fleet's `gen.yaml`) that silences no finding: the problem is gone, or the "
        "suppression is on the wrong line; remove it",
        _WARNING,
    ),
    Rule(
        "GEN005", "suppression cannot be used", _IO,
        "a suppression without a reason, naming no rule, an unknown rule id, or a rule that "
        "cannot be suppressed (input, render and validation errors, and GEN004/GEN005)",
    ),
    Rule(
        "GEN010", "template failed", _IO,
        "a template failed (Jinja syntax, an undefined name, a template not found)",
    ),
    Rule(
        "GEN011", "template output is not one Kubernetes object", _IO,
        "a template rendered something that is not YAML or not one Kubernetes object",
    ),
    Rule("GEN012", "two objects render to one file", _IO, "two objects render to one file"),
    Rule(
        "GEN020", "rendered manifest fails the schema of its Kubernetes version", _IO,
        "a rendered manifest fails the strict JSON Schema of its cluster's Kubernetes version",
    ),
    Rule(
        "GEN021", "kubeconform reports a rendered manifest invalid", _IO,
        "kubeconform reports a rendered manifest invalid",
    ),
    Rule(
        "GEN022", "rendered object's name, labels or annotations break Kubernetes' syntax", _IO,
        "a rendered object's `metadata` the API server refuses: a name that is not a DNS-1123 "
        "subdomain (a DNS-1123 label for a Namespace, a DNS-1035 label for a Service), a "
        "namespace that is not a DNS-1123 label, a label key or annotation key that is not a "
        "qualified name (`prefix/name`), a label value longer than 63 characters or with other "
        "characters, annotations larger than 256 KiB together, a finalizer that is not a "
        "qualified name; checked on every object, built-in kinds included",
    ),
    Rule(
        "GEN023", "a CRD in the CRD folder cannot be used", _IO,
        "a file in `crds/` (or `--crds DIR`) that is not CRD YAML as `kubectl get crd -o yaml` "
        "prints it: not YAML, not an `apiextensions.k8s.io/v1` CustomResourceDefinition (or a "
        "`List` of them), a served version without `schema.openAPIV3Schema`, or a second CRD "
        "for a kind another file already defines; located at the document",
    ),
    Rule(
        "GEN024", "custom resource breaks an x-kubernetes-validations rule of its CRD", _IO,
        "a rendered custom resource for which a CEL rule of its CRD "
        "(`x-kubernetes-validations`) is false or errors, after defaults are applied as the API "
        "server applies them; the message is the rule's own",
    ),
    Rule(
        "GEN025", "CRD rule gen cannot evaluate", _IO,
        "a CEL rule (`x-kubernetes-validations`) of a CRD in `crds/` that gen's CEL "
        "environment cannot compile (it uses a Kubernetes CEL library gen does not have, such "
        "as `url()` or `ip()`): objects of that kind are not checked against it, the API "
        "server checks them when they are applied; located at the CRD",
        Severity.WARNING,
    ),
    Rule(
        "GEN030", "CEL expression does not compile", _IO,
        "a CEL expression Kubernetes would refuse (syntax, types, length or cost) given to "
        "`gen cel eval` or the library; in a profile it is reported as `GEN203`",
    ),
    Rule(
        "GEN031", "CEL expression errors at run time on a device", _IO,
        "a CEL expression that errors at run time on a device (`no such key`) in the library; "
        "in a profile it is reported as `GEN206`",
    ),
    Rule(
        "GEN101", "MIG layout cannot exist on the GPU (profile, count or placement)", _MIG,
        "the layout cannot exist on the GPU: unknown profile for that GPU, too many instances, "
        "no placement on the grid, more than one media-extension instance",
    ),
    Rule(
        "GEN102", "MIG layout needs a newer driver than the node pool has", _MIG,
        "a profile of the layout needs a newer driver than the node pool runs",
    ),
    Rule(
        "GEN103", "MIG layout change on a pool: follow the runbook", _MIG,
        "the pool's layout changes: running GPU pods are killed when mig-manager applies it — "
        "follow the runbook",
        _WARNING,
    ),
    Rule(
        "GEN104", "MIG layout used on a GPU without MIG", _MIG,
        "a MIG layout on a GPU without MIG",
    ),
    Rule(
        "GEN105", "per-GPU MIG layout leaves GPUs of the node as they were", _MIG,
        "a `per_gpu` layout whose entries name only some GPU indices of a pool's nodes: "
        "mig-parted configures the listed GPUs and leaves the others in whatever MIG mode "
        "and instances they had. Reported at the layout's `per_gpu`, naming the GPUs left out",
    ),
    Rule(
        "GEN110", "dynamic MIG pool on a cluster without DRA", _MIG,
        "a `mig: dynamic` pool on a device-plugin cluster: dynamic MIG is a DRA driver feature",
    ),
    Rule(
        "GEN111", "dynamic MIG pool on a GPU without MIG", _MIG,
        "a `mig: dynamic` pool whose GPU cannot do MIG",
    ),
    Rule(
        "GEN112", "dynamic MIG needs partitionable devices the cluster lacks", _MIG,
        "dynamic MIG needs Kubernetes' partitionable devices: none before 1.33, "
        "`DRAPartitionableDevices: true` declared on 1.33–1.35, not declared off from 1.36",
    ),
    Rule(
        "GEN113", "DRA driver chart without the DynamicMIG gate", _MIG,
        "the DRA driver chart is older than 25.12.0, which has no `DynamicMIG` feature gate",
    ),
    Rule(
        "GEN114", "DynamicMIG driver gate declared against the pools", _MIG,
        "`DynamicMIG` declared on without a `mig: dynamic` pool, or declared off with one; "
        "gen sets the gate itself for clusters with dynamic pools",
    ),
    Rule(
        "GEN115", "non-MIG GPU pool beside dynamic MIG on chart 25.12", _MIG,
        "a pool of GPUs without MIG in a cluster whose 25.12 driver runs `DynamicMIG`: its "
        "nodes publish no ResourceSlice (driver issue 1092, fixed in v0.4.0)",
    ),
    Rule(
        "GEN116", "static MIG layout beside dynamic MIG", _MIG,
        "a static `mig_layout` in a cluster whose DRA driver runs `DynamicMIG`: the gate is "
        "chart-wide and the driver destroys MIG devices it did not create",
    ),
    Rule(
        "GEN117", "MIG-capable pool published as partitionable without saying so", _MIG,
        "a MIG-capable pool without `mig: dynamic` in a cluster with dynamic MIG: the driver "
        "publishes its GPUs as partitionable (the full GPU reports the largest profile's "
        "memory)",
    ),
    Rule(
        "GEN118", "GPU Operator mig-manager not kept off a dynamic MIG pool", _MIG,
        "a `mig: dynamic` pool without the label `nvidia.com/gpu.deploy.mig-manager: \"false\"`"
        " in a cluster that keeps mig-manager on for static layouts: mig-manager would apply "
        "its default `all-disabled` config (gen turns mig-manager off where every MIG pool is "
        "dynamic)",
    ),
    Rule(
        "GEN119", "DRA driver gate that cannot run with DynamicMIG", _MIG,
        "`MPSSupport`, `PassthroughSupport` or `NVMLDeviceHealthCheck` on beside `DynamicMIG`: "
        "the driver does not start",
    ),
    Rule(
        "GEN201", "DRA API version not served by the cluster as configured", _DRA,
        "the cluster does not serve the resource.k8s.io version gen renders for it (needs "
        "`--runtime-config` and the `DynamicResourceAllocation` gate before 1.34; no DRA before "
        "1.31)",
    ),
    Rule(
        "GEN202", "field behind a feature gate the cluster does not enable (silently dropped)",
        _DRA,
        "a field behind a feature gate the cluster does not enable (`firstAvailable`, "
        "`extendedResourceName`): the API server would silently drop it",
    ),
    Rule(
        "GEN203", "CEL selector does not compile", _DRA,
        "a CEL selector does not compile as the cluster's API server compiles a new object "
        "(syntax, types, a function newer than its Kubernetes version, mixed literals, "
        "invalid literals, too long / too costly)",
    ),
    Rule(
        "GEN204", "claim cannot be satisfied by any device of the cluster", _DRA,
        "a claim no device of the cluster satisfies, with the nearest misses",
    ),
    Rule(
        "GEN205", "fleet cannot hold all replicas at once", _DRA,
        "the cluster cannot hold all replicas of all services at once",
    ),
    Rule(
        "GEN206", "CEL selector errors at run time on a device", _DRA,
        "a selector errors at run time on a device (`no such key`); a warning where gen cannot "
        "tell: its CEL evaluator or its allocator search ran out of budget",
    ),
    Rule(
        "GEN207", "DRA sharing needs a driver feature gate", _DRA,
        "DRA sharing (time-slicing, MPS) needs a driver feature gate that is off",
    ),
    Rule(
        "GEN208", "allocation mode or alternatives not supported by the cluster", _DRA,
        "alternatives on a device-plugin cluster are ignored",
        _WARNING,
    ),
    Rule(
        "GEN215", "DRA driver chart requires a newer Kubernetes", _DRA,
        "a DRA cluster older than the NVIDIA DRA driver chart's `kubeVersion` floor (1.32 for "
        "every chart since 25.3.1): Helm refuses to install it; reported at the cluster's "
        "`kubernetes_version`",
    ),
    Rule(
        "GEN216", "more than 32 selectors in a DeviceClass or request", _DRA,
        "a GPU class with more than 32 selectors (the structured match counts as one) or a "
        "request with more than 32: the API server refuses the object "
        "(`DeviceSelectorsMaxSize`)",
    ),
    Rule(
        "GEN217", "setting a device-plugin cluster cannot honour", _DRA,
        "a request selector, `same`, `allocation_mode: All`, a class's `cel:` selectors or "
        "its DRA sharing on a device-plugin cluster: gen cannot render it there and says so "
        "instead of dropping it silently",
        _WARNING,
    ),
    Rule(
        "GEN218", "GPU quota another DeviceClass bypasses", _DRA,
        "a namespace's quota on one GPU class, while another class of the cluster (used by "
        "a service or a quota) selects some of the same devices: a claim of the other class "
        "is not counted (a DRA quota counts devices per DeviceClass). Reported at the "
        "quota's `gpu_class`, naming the other class and a pool they share; a quota on the "
        "other class in the same namespace silences it",
        _WARNING,
    ),
    Rule(
        "GEN219", "GPU quota smaller than its namespace's demand", _DRA,
        "a namespace's quota on a GPU class allows fewer devices than the services of that "
        "namespace and class claim at their minimum replicas (replicas, or autoscaling "
        "`min_replicas`, times the request's `count`): ResourceQuota admission refuses the "
        "claims beyond it, and their pods never start. Reported at the quota's `devices`, "
        "each service a related location with what it claims. Services with `alternatives` "
        "are not counted (which class a claim is charged to depends on the device it gets)",
    ),
    Rule(
        "GEN220", "feature gate the cluster's Kubernetes release refuses", _DRA,
        "a declared DRA feature gate (`DRA*`, `DynamicResourceAllocation`) that the cluster's "
        "Kubernetes minor does not have (not yet added, removed, or misspelt: 'unrecognized "
        "feature gate') or that is locked to the other value ('feature is locked to'): the "
        "components refuse to start. Stages per minor from the gate table "
        "(docs/feature-gates.md)",
    ),
    Rule(
        "GEN221", "resource.k8s.io version the cluster's Kubernetes no longer serves", _DRA,
        "a `runtime_config` entry naming a resource.k8s.io version past its removal release "
        "(`resource.k8s.io/v1beta1` from 1.38, `v1beta2` from 1.39): the API server does not "
        "serve it, whatever `--runtime-config` says",
        _WARNING,
    ),
    Rule(
        "GEN240", "dynamic MIG pools cannot hold all replicas at once", _DRA,
        "the counters of a cluster with dynamic MIG pools cannot hold every replica at once "
        "(minimum replicas: error; autoscaling maximum: warning), found by the scheduler's "
        "allocation rules",
    ),
    Rule(
        "GEN241", "dynamic MIG demand fits only in some arrival orders", _DRA,
        "the demand on dynamic MIG pools fits in one arrival order but not in another "
        "(fragmentation); the finding names both orders and the headroom",
        _WARNING,
    ),
    Rule(
        "GEN301", "model does not fit the device memory", _SERVING,
        "the budget of the service's vLLM release (CUDA total × utilization − weights − "
        "activation peak − non-torch − CUDA-graph estimate) holds no full max_model_len "
        "sequence (at `serving.max_model_len`); with max_model_len omitted, not even 4,096 "
        "tokens; when the weights leave no room at any length, at the GPU request (see "
        "docs/fit.md)",
    ),
    Rule(
        "GEN302", "parallelism does not match the model or the claim", _SERVING,
        "parallelism does not match the model or the claim",
    ),
    Rule(
        "GEN303", "container CUDA runtime newer than the node driver supports", _SERVING,
        "the image's CUDA runtime needs a newer driver than the node pool runs",
    ),
    Rule(
        "GEN304", "service has no node pool it can run on", _SERVING,
        "no node pool of the cluster offers the devices the service needs (on a device-plugin "
        "cluster: no pool has GPUs the class's product, architecture, memory and compute "
        "capability admit)",
    ),
    Rule(
        "GEN305", "quantization does not match the checkpoint", _SERVING,
        "`serving.quantization` names a method vLLM refuses for the model's checkpoint (only "
        "`fp8` and, in the releases that have it (through 0.27), `bitsandbytes` quantize a "
        "16-bit checkpoint in flight)",
    ),
    Rule(
        "GEN306", "max_num_batched_tokens below max_num_seqs", _SERVING,
        "`serving.max_num_batched_tokens` is smaller than `serving.max_num_seqs`, which vLLM's "
        "scheduler config refuses at start-up",
    ),
    Rule(
        "GEN307", "option or value the service's vLLM release does not have", _SERVING,
        "an `extra_args` option, an option's value or `serving.quantization` that the vLLM "
        "release of the service's image (its tag, or `serving.image_of`) does not have: removed "
        "(e.g. `--calculate-kv-scales` in 0.28.0, bitsandbytes in 0.28.0), not yet added, or "
        "never an option; `vllm serve` exits at start-up",
    ),
    Rule(
        "GEN308", "vLLM release gen has no facts for", _SERVING,
        "the service's image runs a vLLM release older than the oldest gen knows (its options "
        "and defaults go unchecked) or a minor newer than the newest (checked as the newest)",
        _WARNING,
    ),
    Rule(
        "GEN330", "device-plugin cluster cannot run all replicas at once", _SERVING,
        "on a device-plugin cluster, the replicas of the services (min_replicas when "
        "autoscaled) need more `nvidia.com/gpu` or `nvidia.com/mig-<profile>` per node than "
        "the pools they may use have: the rest stay Pending; reported at the service's "
        "`replicas`, the pools as related locations",
    ),
    Rule(
        "GEN401", "route to a Gateway the cluster does not declare", _ROUTING,
        "`routing.gateway` names no Gateway of the cluster's `gateways` (or a bare name two "
        "declared Gateways in different namespaces share): the HTTPRoute's parentRef "
        "resolves to nothing and the route is never Accepted (kserve/kserve#4972, "
        "kserve/kserve#5385); reported at `routing.gateway`",
    ),
    Rule(
        "GEN402", "routing on a cluster without the inference-extension add-on", _ROUTING,
        "a routed service in a cluster whose `addons` lack `inference-extension`: without the "
        "InferencePool CRD the whole sync fails, so gen renders no routing objects; reported "
        "at `routing` (kubernetes-sigs/gateway-api-inference-extension, "
        "config/crd/bases/inference.networking.k8s.io_inferencepools.yaml@v1.6.0)",
    ),
    Rule(
        "GEN403", "Kubernetes too old for routed serving", _ROUTING,
        "a routed service in a cluster older than Kubernetes 1.29: the Gateway API Inference "
        "Extension v1.6.0 asks for sidecar containers, on by default since 1.29 "
        "(kubernetes-sigs/gateway-api-inference-extension "
        "site-src/_includes/prereqs.md@v1.6.0); reported at the cluster's "
        "`kubernetes_version`",
    ),
    Rule(
        "GEN404", "Gateway API too old for the HTTPRoute gen renders", _ROUTING,
        "a routed service in a cluster whose `gateway_api_version` is older than v1.2.0: "
        "HTTPRoute `timeouts` is in the standard channel only from v1.2.0 "
        "(kubernetes-sigs/gateway-api config/crd/standard/"
        "gateway.networking.k8s.io_httproutes.yaml at v1.1.0 and v1.2.0), so the API server "
        "drops the request timeout and long generations are cut at the gateway's default; "
        "reported at `gateway_api_version`",
    ),
    Rule(
        "GEN405", "InferencePool selector matches pods of another workload", _ROUTING,
        "a rendered InferencePool whose `selector.matchLabels` also match the pod template of "
        "a workload that is not one of its service's serving workloads (the endpoint picker's, "
        "another service's): the picker sends requests to pods that refuse them "
        "(llm-d/llm-d#2212, 'Connection refused'); only a template override can do this, and "
        "the finding is at the rendered pool with the workload related",
    ),
    Rule(
        "GEN406", "serving pod's port is not among the pool's targetPorts", _ROUTING,
        "a pod the InferencePool selects has no container port among its `targetPorts`: the "
        "pool silently drops it (kubernetes-sigs/gateway-api-inference-extension#2562); "
        "at the rendered workload (a template override), the pool related",
    ),
    Rule(
        "GEN407", "HTTPRoute backend is not an InferencePool of its namespace", _ROUTING,
        "a rendered HTTPRoute backendRef of kind InferencePool in the retired group "
        "`inference.networking.x-k8s.io` ('InferencePool not found', "
        "kubernetes-sigs/gateway-api-inference-extension#1530; `InvalidKind`, "
        "kserve/kserve#4833), or in another namespace (no ReferenceGrant gen renders), or "
        "naming no pool of the cluster; only a template override can do this",
    ),
    Rule(
        "GEN408", "two InferencePools behind one HTTPRoute rule", _ROUTING,
        "one HTTPRoute rule with more than one InferencePool backendRef: the pools share one "
        "picker's decision and an empty pool answers 503 for the whole rule "
        "(istio/istio#61594); only a template override can do this",
    ),
    Rule(
        "GEN409", "endpoint picker name taken", _ROUTING,
        "a routed service `S` and another service named `S-epp` in the same namespace: the "
        "picker's Deployment, Service and ServiceAccount `S-epp` would be the other "
        "service's objects; reported at the other service's `name`",
    ),
    Rule(
        "GEN410", "KV connector in serving.extra_args differs from the declared one", _ROUTING,
        "a disaggregated service's `serving.extra_args` holds `--kv-transfer-config` with "
        "another `kv_connector` (or none) than `disaggregation.connector`: both roles get it, "
        "and the engines and the routing sidecar disagree on the hand-over, so decode "
        "recomputes every prompt (kserve/kserve#5987; llm-d/llm-d-router#1221, a Mooncake "
        "engine behind a nixlv2 sidecar ran as aggregated serving)",
    ),
    Rule(
        "GEN411", "KV role in serving.extra_args: one side runs the other's role", _ROUTING,
        "a disaggregated service's `serving.extra_args` sets the `kv_role` "
        "(`--kv-transfer-config`): one value for both roles, so prefill and decode cannot be "
        "`kv_producer` and `kv_consumer` (swapped roles, llm-d/llm-d#394)",
    ),
    Rule(
        "GEN412", "prefill TP larger than decode TP with NIXL", _ROUTING,
        "`connector: nixl` with the prefill's tensor-parallel size above the decode's: "
        "\"Prefill TP > Decode TP is not supported for most model architectures\" (llm-d "
        "guides/pd-disaggregation README; llm-d/llm-d#394, vllm-project/vllm#43523): the "
        "client sees a hang, not an error",
        _WARNING,
    ),
    Rule(
        "GEN413", "prefill and decode TP sizes neither divides the other", _ROUTING,
        "`connector: nixl` or `mooncake` with prefill and decode tensor-parallel sizes "
        "neither of which divides the other: vLLM's `_get_tp_ratio` asserts divisibility at "
        "the KV handshake (vllm-project/vllm v0.33.0 `kv_connector/v1/nixl/tp_mapping.py`, "
        "`kv_connector/v1/mooncake/mooncake_connector.py`; vllm-project/vllm#50765)",
    ),
    Rule(
        "GEN414", "autoscaling on a disaggregated service does nothing", _ROUTING,
        "`autoscaling` on a service with `disaggregation`: the prefill and decode workloads "
        "run their own replicas (gen renders no ScaledObject for them)",
        _WARNING,
    ),
    Rule(
        "GEN420", "parallelism does not split into the group's pods", _MULTI_NODE,
        "tensor × pipeline × data is not `gpu.count` (GPUs per pod) × pods per group: the "
        "GPUs do not split into pods of `gpu.count` (vLLM's multi-node launcher gives every "
        "node the same number of ranks: vllm-project/vllm `vllm/config/parallel.py` "
        "`nnodes`), a pod holds no whole number of data-parallel ranks "
        "(`--data-parallel-size-local`), or a one-node replica with data > 1 claims another "
        "number of GPUs than tensor × pipeline × data (kserve #4946, gpustack #5089); at "
        "`gpu.count` (else `parallelism`)",
    ),
    Rule(
        "GEN421", "a pod of a multi-node group claims more GPUs than a node has", _MULTI_NODE,
        "a replica that spans nodes asks `gpu.count` GPUs per pod, more than the pool's "
        "`gpus_per_node`: no node can hold a pod, the group never starts (kserve #4226); at "
        "`gpu.count`",
    ),
    Rule(
        "GEN422", "the pool cannot hold every multi-node group at once", _MULTI_NODE,
        "replicas × pods per group of a multi-node service, with the other services' "
        "replicas on the same pool, need more nodes (whole pods of `gpu.count` GPUs) than "
        "the pool has: the leaders schedule and the workers strand (lws #167); at "
        "`replicas` (`autoscaling.min_replicas`)",
    ),
    Rule(
        "GEN423", "multi-node service on a cluster without LeaderWorkerSet", _MULTI_NODE,
        "a replica spans nodes (tensor × pipeline × data above `gpus_per_node`), so gen "
        "renders a LeaderWorkerSet (`leaderworkerset.x-k8s.io/v1`, kubernetes-sigs/lws), but "
        "the cluster does not list the add-on `lws`: without its CRD the sync fails; at "
        "`parallelism`, the cluster's `addons` related",
    ),
    Rule(
        "GEN424", "multi-node replica without a fast interconnect declared", _MULTI_NODE,
        "a replica spans nodes of a pool whose `interconnect` is not declared or is "
        "`ethernet`: tensor and pipeline traffic between the nodes then goes over TCP "
        "sockets (vLLM `docs/serving/parallelism_scaling.md`: 'NET/Socket ... is not "
        "efficient for cross-node tensor parallelism'); at the pool",
        _WARNING,
    ),
    Rule(
        "GEN425", "data-parallel rank larger than a node", _MULTI_NODE,
        "data > 1 with tensor × pipeline above `gpus_per_node`: each data-parallel rank would "
        "span nodes (vLLM `nnodes_within_dp` > 1), a shape gen does not launch; at "
        "`parallelism`",
    ),
    Rule(
        "GEN426", "Ray executor on an image without Ray", _MULTI_NODE,
        "`multi_node.executor: ray` with gen's pinned vLLM image: vLLM's CUDA requirements "
        "(vllm-project/vllm `requirements/cuda.txt`) list no `ray`, so the stock "
        "`vllm/vllm-openai` image has no `ray` binary (a report for v0.27.1: getainode #84) "
        "and the group's `ray start` exits 127; use `executor: mp` or an image with Ray "
        "(`serving.image`); at `multi_node.executor`",
        _WARNING,
    ),
    Rule(
        "GEN427", "multi-node group larger than one NVLink domain", _MULTI_NODE,
        "a replica spans more nodes (pods per group) than one NVLink domain (clique) of its "
        "pool has (`nvlink_domain_nodes`, GB200/GB300 NVL72: 18 trays): the group's pods must "
        "stay in one clique (node label `nvidia.com/gpu.clique`) to share its IMEX channel "
        "(NVIDIA/dra-driver-nvidia-gpu issue 892); at `parallelism`",
    ),
    Rule(
        "GEN428", "ComputeDomain on a cluster that cannot create its channels", _MULTI_NODE,
        "a replica spans trays of an NVLink domain, so gen renders a ComputeDomain "
        "(`resource.nvidia.com/v1beta1`), but its controller creates the channel's "
        "ResourceClaimTemplate as `resource.k8s.io/v1` (dra-driver-nvidia-gpu v0.5.0 "
        "`templates/compute-domain-workload-claim-template.tmpl.yaml`), which the cluster "
        "does not serve (error); on a device-plugin cluster there are no ComputeDomains and "
        "the trays talk over the network, not NVLink (warning); at `allocation` / "
        "`kubernetes_version`",
    ),
    Rule(
        "GEN429", "multi-node replica behind routing or disaggregation", _MULTI_NODE,
        "a replica that spans nodes (a LeaderWorkerSet group) on a service with `routing` or "
        "`disaggregation`: gen does not render that combination yet — the InferencePool would "
        "select the group's headless worker pods, which serve no requests (llm-d serves "
        "wide-EP groups through the leader's port only: llm-d/llm-d guides/wide-ep), and the "
        "role workloads are one-node Deployments; at `routing` / `disaggregation`",
    ),
    Rule(
        "GEN450", "a replica larger than its Kueue queue can ever admit", _QUOTAS,
        "on a `quota_engine: kueue` cluster, a replica whose devices (`gpu.count`) exceed, "
        "on every pool it can run on, its namespace ClusterQueue's nominal quota there plus "
        "what it may borrow from its cohort: Kueue admits a pod to one flavor whole, so it "
        "waits forever (kubernetes-sigs/kueue apis/kueue/v1beta2/clusterqueue_types.go "
        "@v0.19.2, `nominalQuota`/`borrowingLimit`; kueue #4329)",
    ),
    Rule(
        "GEN451", "Kueue flavor matching no pool with the quota's devices", _QUOTAS,
        "a quota whose `node_pools` names a pool the cluster lacks or one without devices "
        "of its class, or whose class no pool has: its ResourceFlavor matches no node that "
        "can run the pods, or its ClusterQueue has no flavor (kueue "
        "apis/kueue/v1beta2/resourceflavor_types.go @v0.19.2, `nodeLabels`)",
    ),
    Rule(
        "GEN452", "a GPU workload in a namespace with no LocalQueue", _QUOTAS,
        "on a `quota_engine: kueue` cluster, a service whose namespace has no quota and so "
        "no LocalQueue: it carries no `kueue.x-k8s.io/queue-name` label, Kueue does not "
        "manage it, and its GPUs count against no queue (kueue "
        "pkg/controller/constants/constants.go @v0.19.2, `QueueLabel`)",
        _WARNING,
    ),
    Rule(
        "GEN453", "a DRA device class no Kueue deviceClassMapping covers", _QUOTAS,
        "on a DRA cluster with `quota_engine: kueue`, a service claiming a class that no "
        "quota counts, so the Configuration's `resources.deviceClassMappings` lacks it: "
        "Kueue rejects the workload, `DeviceClass ... is not mapped in DRA configuration` "
        "(kueue pkg/dra/claims.go @v0.19.2)",
    ),
    Rule(
        "GEN454", "a claim Kueue cannot count", _QUOTAS,
        "on a DRA cluster with `quota_engine: kueue`, a service with `gpu.alternatives` "
        "(`firstAvailable`) or `allocation_mode: All`: Kueue's DRA integration supports "
        "neither, and the workload is inadmissible (kueue pkg/dra/claims.go @v0.19.2, "
        "`countDevicesPerClass`)",
    ),
    Rule(
        "GEN455", "Kueue on a Kubernetes or Kueue version without a feature gen uses", _QUOTAS,
        "`quota_engine: kueue` on a DRA cluster whose Kubernetes serves no "
        "`resource.k8s.io/v1` (before 1.34; Kueue v0.19 reads claims through it, kueue "
        "pkg/dra/claims.go @v0.19.2), or a `kueue.version` older than the feature gates "
        "gen's Configuration turns on (`QuotaCheckStrategy`, `KueueDRAIntegration`: 0.18, "
        "kueue pkg/features/kube_features.go @v0.19.2)",
    ),
    Rule(
        "GEN456", "a workload whose GPUs its Kueue queue does not cover", _QUOTAS,
        "a service whose GPU resource (extended resource, or DeviceClass mapped for another "
        "namespace) its namespace's ClusterQueue does not cover: with `quotaCheckStrategy: "
        "IgnoreUndeclared` Kueue admits it without counting them (kueue "
        "apis/config/v1beta2/configuration_types.go @v0.19.2)",
        _WARNING,
    ),
    Rule(
        "GEN457", "replicas their Kueue queue can never all admit", _QUOTAS,
        "a service whose `replicas` (or `autoscaling.min_replicas`) of `gpu.count` devices "
        "exceed what its ClusterQueue can ever admit, borrowing included: the rest stay "
        "gated, the Deployment never becomes Available and the rollout never completes "
        "(kueue #5118, #8769); a warning for `autoscaling.max_replicas`",
    ),
    Rule(
        "GEN501", "literal secret in a profile", _SECURITY,
        "a value that looks like a credential (Hugging Face, OpenAI-style, GitHub or GitLab "
        "token, AWS key, private key) in a profile, also where a Secret's name belongs (it "
        "is reported instead of the name's syntax error); gen never prints the value",
    ),
    Rule(
        "GEN502", "workload opts out of Pod Security 'restricted'", _SECURITY,
        'a workload opts out of Pod Security "restricted", with its reason',
        _INFO,
    ),
    Rule(
        "GEN601", "engine vllm on an Apple VM node pool (vLLM has no Vulkan backend)", _APPLE,
        "`engine: vllm` on an Apple VM pool; the hint names the two working paths",
    ),
    Rule(
        "GEN602",
        "model does not fit the Apple GPU memory (krunkit VM window or Mac Metal budget)", _APPLE,
        "the model does not fit the Apple GPU budget (VM window or Mac Metal cap)",
    ),
    Rule(
        "GEN603", "unknown Apple chip", _APPLE,
        "unknown Apple chip (the message names the nearest ones)",
    ),
    Rule(
        "GEN604", "chip and memory size Apple does not sell together", _APPLE,
        "a chip and memory size Apple does not sell together, e.g. an M3 Ultra with 192 GB",
        _WARNING,
    ),
    Rule(
        "GEN605", "krunkit VM sizing or device resource impossible", _APPLE,
        "krunkit VM sizing impossible (RAM above 60 GB or not below the Mac's) or a malformed "
        "device resource name",
    ),
    Rule(
        "GEN606", "llama-server service has no Apple VM node pool in the cluster", _APPLE,
        "a llama-server service with no Apple VM pool in the cluster",
    ),
    Rule(
        "GEN607", "pod asks for more than an Apple VM node has (memory, devices)", _APPLE,
        "the pod asks for more than an Apple VM node has: memory, more than one GPU, pools with "
        "different device resources",
    ),
    Rule(
        "GEN608", "setting the Apple engine cannot take", _APPLE,
        "a setting the Apple engine cannot take (vllm-mlx `max_model_len`, key flags in "
        "`extra_args`; an fp8 KV cache or `autoscaling`, which gen ignores here, are warnings)",
    ),
    Rule(
        "GEN609", "Apple VM pool without node labels", _APPLE,
        "an Apple VM pool without labels: the plugin and the pods cannot be pinned to it",
        _WARNING,
    ),
    Rule(
        "GEN610", "EndpointSlice to Macs in an Argo CD cluster (excluded by default)", _APPLE,
        "a `mac_hosts` service in an Argo CD cluster, whose defaults skip EndpointSlice",
        _WARNING,
    ),
    Rule(
        "GEN611", "llama-server service without a GGUF file name", _APPLE,
        "an `engine: llama-server` service whose `model` does not name a `.gguf` file and "
        "that sets no `gguf_file`: gen does not guess the file name",
    ),
    Rule(
        "GEN700", "ServiceMonitors asked for on a cluster without the Prometheus Operator",
        _GITOPS,
        "`monitoring.service_monitors: true` on a cluster whose `addons` lack "
        "`prometheus-operator`: without its CRD the ServiceMonitor fails the whole sync",
    ),
    Rule(
        "GEN701", "autoscaling on a cluster without KEDA", _GITOPS,
        "a service with `autoscaling` in a cluster whose `addons` lack `keda`: without its "
        "CRD the ScaledObject fails the whole sync, and without KEDA nothing scales",
    ),
    Rule(
        "GEN702", "model-cache access mode the StorageClass cannot provide", _GITOPS,
        "a model-cache PVC whose access mode (ReadWriteMany for more than one replica) is "
        "not among those `storage.classes` declares for its StorageClass: it stays Pending",
    ),
    Rule(
        "GEN703", "clusters of one Argo CD root disagree on fleet_mode", _GITOPS,
        "Argo CD clusters with the same controller namespace, repository, revision and "
        "path prefix (one root Application) set different `gitops.fleet_mode`s",
    ),
    Rule(
        "GEN704", "ReadWriteMany model cache on a StorageClass gen cannot see", _GITOPS,
        "a model-cache PVC that needs ReadWriteMany (more than one replica) with no "
        "StorageClass named (`storage.storage_class`, the cluster's `model_cache_class`) and "
        "no declared default class (`default: true` in `storage.classes`): most default "
        "classes are block storage, on which the PVC and the pods stay Pending",
        _WARNING,
    ),
    Rule(
        "GEN705", "StorageClass the cluster does not declare", _GITOPS,
        "a service's `storage.storage_class` or a cluster's `model_cache_class` that is not "
        "among the cluster's declared `storage.classes` (a typo, or a class of another "
        "cluster): no provisioner answers, and the PVC never binds",
    ),
    Rule(
        "GEN800", "gen verify cannot ask the cluster", _CLUSTER,
        "`gen verify` cannot ask the cluster: a kubeconfig that is missing or not valid, an "
        "unknown context, an unreachable API server, credentials it refuses (401: expired), "
        "an RBAC refusal of a read it needs (403, naming the verb and resource), a timeout",
    ),
    Rule(
        "GEN801", "the API server refuses a rendered object (dry-run)", _CLUSTER,
        "the server-side dry-run apply of an object of `out/<cluster>/` is refused (schema, "
        "admission, Pod Security, quota, RBAC); one finding per cause with its field path, "
        "at the profile that produced the object; also a file of `out/<cluster>/` that is not "
        "one object",
    ),
    Rule(
        "GEN802", "the cluster does not serve an object's kind (CRD not installed)", _CLUSTER,
        "an object whose kind the cluster does not serve: a custom resource whose CRD is not "
        "installed (install the add-on), or a built-in API version that is not enabled",
    ),
    Rule(
        "GEN803", "object not checked: created by the same apply", _CLUSTER,
        "an object the dry-run cannot check because its namespace (or its CRD) is created by "
        "the same `out/`: a dry-run persists nothing, so the server answers only \"namespace "
        "not found\"",
        _INFO,
    ),
    Rule(
        "GEN804", "the API server accepts an object with a warning", _CLUSTER,
        "the dry-run accepts an object with a `Warning` header (a deprecated API version, a "
        "field the server ignores)",
        _WARNING,
    ),
    Rule(
        "GEN810", "the cluster runs another Kubernetes minor than the profile says", _CLUSTER,
        "the API server's Kubernetes minor differs from the cluster's `kubernetes_version`: "
        "gen renders and lints for the wrong version",
    ),
    Rule(
        "GEN811", "a pool has another number of nodes than the profile says", _CLUSTER,
        "the nodes carrying a pool's labels are more or fewer than its `nodes`",
    ),
    Rule(
        "GEN812", "a pool's nodes have another GPU model", _CLUSTER,
        "a pool's nodes publish another GPU product than its `gpu` (the DRA driver's "
        "`productName`; GPU Feature Discovery's `nvidia.com/gpu.product` on device-plugin "
        "clusters)",
    ),
    Rule(
        "GEN813", "a pool's nodes have another number of GPUs", _CLUSTER,
        "a pool's nodes publish another number of GPUs than its `gpus_per_node` (distinct "
        "GPUs in their ResourceSlices; `nvidia.com/gpu` capacity on device-plugin clusters)",
    ),
    Rule(
        "GEN814", "a pool's MIG mode or devices differ", _CLUSTER,
        "a pool's nodes publish other devices than its MIG setting gives: MIG devices per "
        "profile, full GPUs, dynamic-MIG partitions (`nvidia.com/mig-*` capacity on "
        "device-plugin clusters), or a static MIG node without the pool's "
        "`nvidia.com/mig.config` label",
    ),
    Rule(
        "GEN815", "a pool's nodes run another NVIDIA driver", _CLUSTER,
        "a pool's nodes run another driver than its `driver_version` (the DRA driver's "
        "`driverVersion`; GPU Feature Discovery's `nvidia.com/cuda.driver-version.full`)",
    ),
    Rule(
        "GEN816", "a dynamic-MIG pool's counters differ", _CLUSTER,
        "the shared counter sets a `mig: dynamic` pool's nodes publish differ from what its "
        "GPU gives (counter names or amounts)",
    ),
    Rule(
        "GEN817", "a pool's nodes publish no GPU", _CLUSTER,
        "a pool's nodes publish no device (no `gpu.nvidia.com` ResourceSlice, no "
        "`nvidia.com/gpu` capacity, no Apple VM device resource), or a DRA cluster serves no "
        "ResourceSlice API at all",
    ),
    Rule(
        "GEN818", "GPU nodes that no pool declares", _CLUSTER,
        "nodes with NVIDIA GPUs whose labels match no pool of the cluster profile",
        _WARNING,
    ),
    Rule(
        "GEN819", "a pool's nodes cannot be told apart", _CLUSTER,
        "a pool without labels, or nodes that carry the labels of two pools alike: their "
        "hardware is not checked",
        _WARNING,
    ),
)

RULES: Mapping[str, Rule] = MappingProxyType({r.id: r for r in _ALL})
"""Rule id → :class:`Rule`, in id order."""


def rule(rule_id: str) -> Rule:
    """The rule with id ``rule_id``; ``KeyError`` when gen has no such rule."""
    try:
        return RULES[rule_id]
    except KeyError:
        raise KeyError(f"unknown rule id {rule_id!r}") from None


def finding(
    rule_id: str,
    message: str,
    location: SourceLocation | None = None,
    *,
    key_path: str = "",
    severity: Severity | None = None,
    hint: str = "",
    related: tuple[SourceLocation, ...] = (),
    service: str = "",
    cluster: str = "",
) -> Finding:
    """A finding of rule ``rule_id`` with the registry's default severity
    (:attr:`Rule.severity`), unless the check passes ``severity`` because this finding is
    worse or milder than the rule's default (a test refuses a ``severity`` equal to it).
    ``KeyError`` for a rule id the registry does not have."""
    return Finding(rule_id, message, location, key_path=key_path,
                   severity=rule(rule_id).severity if severity is None else severity,
                   hint=hint, related=related, service=service, cluster=cluster)


_INTRO = """\
# Lint rules

<!-- Generated from gen/rules.py: `python -m gen.rules > docs/lint-rules.md`. -->

`gen lint` runs every rule on the profiles and writes nothing; `gen render` runs them too
and refuses to write when one of severity `error` fires. Each finding has a rule id, a
severity, the `file:line:col` of the profile value that causes it, the key path and a
hint. `--format json` and `--format sarif` carry the same fields.

```
profiles/gpu-classes/h100.yaml:7:3: error GEN204: match: claim of service 'llama-70b' …
    hint: …
```

Rules are errors unless marked (warning) or (info).
"""


def rules_markdown() -> str:
    """``docs/lint-rules.md``: the intro, then one table of rules per section."""
    parts = [_INTRO]
    for section in Section:
        parts.append(f"\n## {section.value}\n\n| id | what |\n| --- | --- |\n")
        for r in RULES.values():
            if r.section is section:
                marker = "" if r.severity is Severity.ERROR else f"({r.severity.value}) "
                parts.append(f"| `{r.id}` | {marker}{r.doc} |\n")
    return "".join(parts)


if __name__ == "__main__":
    import sys

    sys.stdout.write(rules_markdown())
