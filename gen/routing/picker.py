"""The endpoint picker's facts at the pinned llm-d-router release (``gen/data/pins.yaml``).

Everything here is read from llm-d/llm-d-router at tag v0.10.0:

* flags: pkg/epp/server/options.go (``--pool-name``, ``--pool-namespace``, ``--pool-group``,
  ``--config-file``, ``--grpc-health-port``, ``--ha-enable-leader-election``,
  ``--metrics-endpoint-auth``, ``--zap-encoder``, ``--tracing``);
* ports, probes, resources, the Recreate strategy and the RBAC: the chart library
  config/charts/routerlib/templates (_deployment.yaml, _service.yaml, _rbac.yaml,
  _leader-election-rbac.yaml) and config/charts/llm-d-router-gateway/templates/rbac.yaml;
* the config file: apix/config/v1alpha1/endpointpickerconfig_types.go
  (``EndpointPickerConfig`` of group ``llm-d.ai``, version ``v1alpha1``, decoded strictly by
  pkg/epp/config/loader/configloader.go) and the plugin types registered in cmd/epp/runner.
"""

from __future__ import annotations

from typing import Any

from gen.models.service import PickerProfile
from gen.pins import pin

__all__ = [
    "CONFIG_API_VERSION",
    "CONFIG_FIELDS",
    "CONFIG_FILE",
    "EXT_PROC_PORT",
    "HEALTH_PORT",
    "METRICS_PORT",
    "OBJECTIVE_HEADER",
    "PLUGIN_TYPES",
    "PROFILE_WEIGHTS",
    "RESOURCES",
    "config",
    "config_problems",
    "pd_config",
    "picker_args",
    "picker_image",
    "queue_query",
    "rbac_rules",
]

OBJECTIVE_HEADER = "x-llm-d-inference-objective"
"""The request header that names a request's InferenceObjective (pkg/epp/metadata/consts.go,
``ObjectiveKey``; read in pkg/epp/handlers/request.go): without it a request has no
objective, so the route sets it for the service's priority to apply."""
EXT_PROC_PORT = 9002
"""The gRPC ext-proc port the gateway calls (container port ``grpc``)."""
HEALTH_PORT = 9003
"""The gRPC health port (``--grpc-health-port``; the probes' services)."""
METRICS_PORT = 9090
"""The Prometheus metrics port."""
CONFIG_API_VERSION = "llm-d.ai/v1alpha1"
"""The ``EndpointPickerConfig`` apiVersion the release decodes (not ``llm-d.ai/v1``: that
version does not exist at v0.10.0)."""
CONFIG_FILE = "config.yaml"
RESOURCES: dict[str, dict[str, str]] = {
    "requests": {"cpu": "8", "memory": "8Gi"},
    "limits": {"memory": "16Gi"},
}
"""The chart's default EPP resources (routerlib values.yaml: CPU unlimited for bursts,
memory capped)."""

PLUGIN_TYPES = frozenset({
    "queue-scorer", "kv-cache-utilization-scorer", "prefix-cache-scorer",
    "metrics-data-source", "core-metrics-extractor",
    "approx-prefix-cache-producer", "prefill-filter", "decode-filter", "max-score-picker",
    "disagg-profile-handler", "prefix-based-pd-decider",
})
"""The plugin types gen's configs use, each registered by the release's EPP."""

PROFILE_WEIGHTS: dict[PickerProfile, tuple[tuple[str, int], ...]] = {
    # llm-d's optimized baseline, as the chart's default-plugins.yaml weighs it.
    "default": (("queue-scorer", 2), ("kv-cache-utilization-scorer", 2),
                ("prefix-cache-scorer", 3)),
    # Long shared prompts: prefix-cache hits dominate, load breaks ties.
    "prefix-cache": (("queue-scorer", 1), ("kv-cache-utilization-scorer", 1),
                     ("prefix-cache-scorer", 5)),
    # Load only: no scorer that reads the prompt.
    "load-aware": (("queue-scorer", 1), ("kv-cache-utilization-scorer", 1)),
}


CONFIG_FIELDS: dict[str, frozenset[str]] = {
    "EndpointPickerConfig": frozenset({
        "apiVersion", "kind", "featureGates", "plugins", "schedulingProfiles", "dataLayer",
        "flowControl", "requestHandler", "saturationDetector", "parser"}),
    "PluginSpec": frozenset({"name", "type", "parameters"}),
    "SchedulingProfile": frozenset({"name", "plugins"}),
    "SchedulingPlugin": frozenset({"pluginRef", "weight"}),
}
"""The JSON fields of the config's Go types (apix/config/v1alpha1/endpointpickerconfig_types.go
at v0.10.0) that gen's configs reach; the loader decodes strictly, so any other key fails the
picker at start."""


def _unknown(where: str, struct: str, value: Any) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: not a mapping"]
    return [f"{where}.{key}: unknown field of {struct}"
            for key in sorted(set(value) - CONFIG_FIELDS[struct])]


def config_problems(doc: Any) -> list[str]:
    """Why the release's loader would refuse ``doc`` (strict decoding, then validation:
    apiVersion and kind, known plugin types, unique plugin names, each ``name`` defaulting to
    its ``type``, named and unique scheduling profiles whose ``pluginRef`` each name a
    plugin); empty when it loads."""
    problems = _unknown("config", "EndpointPickerConfig", doc)
    if problems and not isinstance(doc, dict):
        return problems
    if doc.get("apiVersion") != CONFIG_API_VERSION or doc.get("kind") != "EndpointPickerConfig":
        problems.append(f"config: apiVersion/kind must be {CONFIG_API_VERSION} "
                        "EndpointPickerConfig")
    names: list[str] = []
    for index, plugin in enumerate(doc.get("plugins") or []):
        where = f"plugins[{index}]"
        problems += _unknown(where, "PluginSpec", plugin)
        if not isinstance(plugin, dict):
            continue
        if plugin.get("type") not in PLUGIN_TYPES:
            problems.append(f"{where}.type: {plugin.get('type')!r} is not a plugin type gen "
                            "knows the release registers")
        name = plugin.get("name") or plugin.get("type") or ""
        if name in names:
            problems.append(f"{where}: duplicate plugin name {name!r}")
        names.append(name)
    profiles: list[str] = []
    for index, profile in enumerate(doc.get("schedulingProfiles") or []):
        where = f"schedulingProfiles[{index}]"
        problems += _unknown(where, "SchedulingProfile", profile)
        if not isinstance(profile, dict):
            continue
        if not profile.get("name") or profile["name"] in profiles:
            problems.append(f"{where}.name: missing or duplicate")
        profiles.append(str(profile.get("name")))
        for ref_index, ref in enumerate(profile.get("plugins") or []):
            ref_where = f"{where}.plugins[{ref_index}]"
            problems += _unknown(ref_where, "SchedulingPlugin", ref)
            if isinstance(ref, dict) and ref.get("pluginRef") not in names:
                problems.append(f"{ref_where}.pluginRef: names no plugin")
    return problems


def picker_image() -> str:
    """The EPP image at the pinned release."""
    return f"ghcr.io/llm-d/llm-d-router-endpoint-picker:{pin('llm-d-router').version}"


def pd_config() -> dict[str, Any]:
    """The ``EndpointPickerConfig`` of a disaggregated service: llm-d-router's own P/D
    configuration at v0.10.0 (deploy/config/pd-epp-config.yaml): a ``prefill`` and a
    ``decode`` scheduling profile, filtered by the pods' ``llm-d.ai/role``
    (``prefill-filter``, ``decode-filter``), chosen per request by ``disagg-profile-handler``
    with ``prefix-based-pd-decider`` (prefill runs remotely only for prompts with more than 16
    uncached tokens)."""
    profile_plugins = [{"pluginRef": "max-score-picker"},
                       {"pluginRef": "prefix-cache-scorer", "weight": 2},
                       {"pluginRef": "queue-scorer", "weight": 1}]
    return {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "EndpointPickerConfig",
        "plugins": [
            {"type": "approx-prefix-cache-producer",
             "parameters": {"maxPrefixTokensToMatch": 16384, "lruCapacityPerServer": 31250}},
            {"type": "prefix-cache-scorer"},
            {"type": "queue-scorer"},
            {"type": "prefill-filter"},
            {"type": "decode-filter"},
            {"type": "max-score-picker"},
            {"type": "disagg-profile-handler",
             "parameters": {"deciders": {"prefill": "prefix-based-pd-decider"}}},
            {"type": "prefix-based-pd-decider", "parameters": {"nonCachedTokens": 16}},
        ],
        "schedulingProfiles": [
            {"name": role, "plugins": [{"pluginRef": f"{role}-filter"}, *profile_plugins]}
            for role in ("prefill", "decode")
        ],
    }


def config(profile: PickerProfile) -> dict[str, Any]:
    """The ``EndpointPickerConfig`` of a picker profile (one scheduling profile, ``default``)."""
    weights = PROFILE_WEIGHTS[profile]
    plugins: list[dict[str, Any]] = [{"type": name} for name, _ in weights]
    plugins += [
        {"type": "metrics-data-source",
         "parameters": {"scheme": "http", "path": "/metrics", "insecureSkipVerify": True}},
        {"type": "core-metrics-extractor"},
    ]
    return {
        "apiVersion": CONFIG_API_VERSION,
        "kind": "EndpointPickerConfig",
        "plugins": plugins,
        "schedulingProfiles": [{
            "name": "default",
            "plugins": [{"pluginRef": name, "weight": weight} for name, weight in weights],
        }],
    }


def picker_args(pool: str, namespace: str, replicas: int) -> list[str]:
    """The EPP's arguments: bound to one pool, its config file, leader election when more
    than one replica runs, metrics without token authentication (the NetworkPolicy admits
    only the monitoring namespace to the metrics port, and the picker needs no cluster-wide
    RBAC for TokenReviews)."""
    args = [
        "--pool-name", pool,
        "--pool-namespace", namespace,
        "--pool-group", "inference.networking.k8s.io",
        "--zap-encoder", "json",
        "--config-file", f"/config/{CONFIG_FILE}",
        "--grpc-health-port", str(HEALTH_PORT),
    ]
    if replicas > 1:
        args.append("--ha-enable-leader-election")
    args += ["--tracing=false", "--metrics-endpoint-auth=false"]
    return args


def rbac_rules(replicas: int) -> list[dict[str, list[str]]]:
    """The namespaced rules the EPP needs: the pool's pods, the pool, the objectives and
    model rewrites it watches; leases and events for leader election."""
    read = ["get", "list", "watch"]
    rules = [
        {"apiGroups": [""], "resources": ["pods"], "verbs": read},
        {"apiGroups": ["inference.networking.k8s.io"], "resources": ["inferencepools"],
         "verbs": read},
        {"apiGroups": ["llm-d.ai"],
         "resources": ["inferenceobjectives", "inferencemodelrewrites"], "verbs": read},
    ]
    if replicas > 1:
        rules += [
            {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
             "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]},
            {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
        ]
    return rules


def queue_query(pool: str, namespace: str) -> str:
    """PromQL for the requests waiting in a pool's pods, from the picker's own metrics
    (pkg/epp/metrics/llm_d_router_metrics.go at v0.10.0: ``llm_d_epp_average_queue_size`` and
    ``llm_d_epp_ready_endpoints``, labelled ``name`` = the pool, refreshed by
    pkg/epp/datalayer/logger/logger.go): the mean queue times the ready pods. ``max`` keeps one
    value when several picker replicas export it."""
    match = f'{{namespace="{namespace}",name="{pool}"}}'
    return (f"max(llm_d_epp_average_queue_size{match}) * "
            f"max(llm_d_epp_ready_endpoints{match})")
