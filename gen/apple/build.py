"""Apple Silicon: the two working ways to serve a model from an Apple GPU.

* **In-cluster** (node pools with ``platform: apple-vm``: Linux VMs run by krunkit/libkrun on
  Macs, whose Venus paravirtual GPU appears as ``/dev/dri/renderD128``): squat's generic device
  plugin as a DaemonSet per pool (stage "platform", in its own privileged namespace), and for
  each ``engine: llama-server`` service a llama.cpp Vulkan Deployment that requests the device
  as an extended resource, with its Service, model volume, PDB, NetworkPolicy and
  ServiceMonitor. The GPU budget is the VM's VRAM window, not the Mac's memory.
* **Native macOS hosts** (``mac_hosts``): in every cluster of the service a selectorless Service
  and one ``discovery.k8s.io/v1`` EndpointSlice per address family; per host a launchd plist and
  per service a README under ``_hosts/<service>/`` (outside every synced path). The GPU budget
  is the Mac's Metal working-set cap.

The builders make no decision of their own: they read the cluster's Apple decisions
(:mod:`gen.apple.decide`: devices, device-plugin arguments, fit, context, llama-server
arguments, launchd jobs), recorded once in the plan. Where a decision recorded an error they
build nothing for it, and the GEN6xx rules (:mod:`gen.apple.checks`) report it, located at
the profile line.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from gen.apple.chips import GENERIC_DEVICE_PLUGIN_IMAGE
from gen.apple.decide import (
    KEY_FILE,
    KEY_MOUNT,
    LLAMA_PORT,
    MAC_ROOT,
    MODELS_MOUNT,
    AppleDecisions,
    LlamaDecision,
    MacDecision,
    decide,
    decisions,
)
from gen.fleet.generated import GENERATED_COMMENT
from gen.fleet.manifests import (
    has_addon,
    labels,
    manifest,
    model_cache_storage,
    progress_deadline_seconds,
    queue_labels,
    tolerations,
)
from gen.fleet.plan import (
    HOSTS_DIR,
    Built,
    ClusterPlan,
    FileSpec,
    ManifestSpec,
    PoolPlan,
    ServicePlan,
)

if TYPE_CHECKING:
    from gen.apple.fit import AppleFitReport, AppleGPU
    from gen.apple.launchd import MacServer

__all__ = [
    "DEVICE_PLUGIN_IMAGE",
    "DEVICE_PLUGIN_WAIVERS",
    "DRI_NAMESPACE",
    "LLAMA_PORT",
    "MAC_ROOT",
    "MODELS_MOUNT",
    "build",
    "decide",
]

MIB = 1 << 20
GIB = 1 << 30

DRI_NAMESPACE = "gen-apple-dri"
"""Namespace of the generic device plugin: Pod Security 'privileged' (it needs host /dev)."""
DEVICE_PLUGIN_IMAGE = GENERIC_DEVICE_PLUGIN_IMAGE
"""The plugin's default image, pinned by digest (``chips.GENERIC_DEVICE_PLUGIN_IMAGE``)."""
DEVICE_PLUGIN_PORT = 8080
"""The plugin's ``--listen`` default: ``/health`` and ``/metrics``."""
PORT_NAME = "http"
HOME = "/home/llama"
RUN_AS = 2000
PROBE_PERIOD = 10
LOAD_BYTES_PER_S = 256 * MIB
"""Assumed rate of reading GGUF weights from the volume into Venus memory [unverified]."""
WARMUP_SECONDS = 300
"""Vulkan device init and first shader compilation (Mesa Venus) [unverified]."""
SHUTDOWN_SECONDS = 30

DRI_NOTE = """\
The generic device plugin cannot run under Pod Security 'restricted' or 'baseline': it
mounts the host's /dev (to find /dev/dri/renderD128, the Venus GPU of the krunkit VM) and
/var/lib/kubelet/device-plugins (to register with the kubelet), and runs privileged. It
therefore lives alone in a namespace labelled pod-security.kubernetes.io/enforce: privileged;
the model servers that use the device stay 'restricted' in their own namespace."""

PLUGIN_NAMESPACE_NOTE = """\
Pod Security 'privileged' on purpose: only squat's generic device plugin runs here, and it
needs hostPath /dev and /var/lib/kubelet/device-plugins (see its DaemonSet). Keep every
other workload out of this namespace. A NetworkPolicy denies all traffic to and from its
pods: the plugin talks to the kubelet over a Unix socket only."""

DRI_EXCEPTION = (
    "squat's generic device plugin mounts the host's /dev (to find the Venus render node) "
    "and /var/lib/kubelet/device-plugins (to register with the kubelet) as hostPath volumes "
    "and runs privileged; only the plugin runs in this namespace"
)
"""The Pod Security exception of the plugin's namespace and DaemonSet (inherent to a device
plugin, so not a profile setting)."""

DEVICE_PLUGIN_WAIVERS = {
    "CKV_K8S_16": "a device plugin needs the host's /dev; it runs alone in a privileged "
                  "namespace",
    "CKV_K8S_20": "privileged implies privilege escalation (the API rejects "
                  "allowPrivilegeEscalation false on a privileged container)",
    "CKV_K8S_23": "runs as root to create its socket in the root-owned "
                  "/var/lib/kubelet/device-plugins",
    "CKV_K8S_28": "a privileged container holds every capability; dropping NET_RAW has no "
                  "effect",
    "CKV_K8S_29": "a pod securityContext would only restate root and privileged",
    "CKV_K8S_31": "seccomp profiles do not apply to privileged containers (always Unconfined)",
    "CKV_K8S_37": "a privileged container holds every capability; dropping them has no effect",
    "CKV_K8S_40": "runs as root (CKV_K8S_23)",
}
"""checkov checks the plugin fails by design, rendered as ``checkov.io/skipN`` annotations on
its DaemonSet so the waiver (and its reason) travels with the object; see docs/security.md."""

LLAMA_NOTE = """\
llama.cpp (Vulkan) on a krunkit/libkrun VM node: the Apple GPU reaches the guest through
Mesa Venus as /dev/dri/renderD128, allocated by the generic device plugin. vLLM has no
Vulkan backend and cannot run here. The GGUF file must already be on the volume at the
path given by -m (see docs/apple-silicon.md). Non-root access to the render node needs the
container runtime's device_ownership_from_security_context = true on the VM nodes. The
command refuses to start (exit 78) when the API key Secret holds no key: llama-server would
otherwise serve without authentication."""

MAC_NOTE = """\
Native macOS hosts, outside the cluster: there is no kubelet on macOS. Traffic to this
Service leaves the pod network for the Macs listed in the EndpointSlice, so the servers
require the API key (Secret {secret}, key {key}) and clients must send it. Nothing
probes these endpoints: a Mac that is down still receives traffic until it is removed
here. The launchd jobs are in _hosts/{service}/ (not synced)."""

ARGO_NOTE = """
Argo CD's default argocd-cm resource.exclusions skip EndpointSlice (discovery.k8s.io):
remove that exclusion in this cluster's Argo CD, or the EndpointSlice is never applied
and the Service has no endpoints."""


# --------------------------------------------------------------------------- shared helpers


def _model_label(value: str) -> str:
    text = "".join(c if c.isalnum() or c in "-_." else "_" for c in value)[-63:]
    return text.strip("-_.") or "model"


def _placement(pools: Sequence[PoolPlan]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    common = set(pools[0].node_labels.items()) if pools else set()
    for pool in pools[1:]:
        common &= set(pool.node_labels.items())
    return dict(sorted(common)), list(tolerations(pools))


# --------------------------------------------------------------------------- in-cluster


def _plugin_specs(plan: ClusterPlan, decided: AppleDecisions) -> list[ManifestSpec]:
    from gen.security.podsecurity import ENFORCE_LABEL, EXCEPTION_ANNOTATION

    exception = {EXCEPTION_ANNOTATION: DRI_EXCEPTION}
    waivers = {
        f"checkov.io/skip{i}": f"{check}={reason}"
        for i, (check, reason) in enumerate(sorted(DEVICE_PLUGIN_WAIVERS.items()), start=1)
    }
    specs: list[ManifestSpec] = []
    for decision in decided.pools:
        if decision.plugin_args is None:
            continue  # GEN605 reports the malformed resource name
        pool, vm, args = decision.pool, decision.vm, list(decision.plugin_args)
        name = f"dri-{pool.name}"[:63].rstrip("-")
        selector = {"app.kubernetes.io/name": name, "app.kubernetes.io/component": "device-plugin"}
        node_selector, tolerations = _placement([pool])
        specs.append(manifest(
            "apple/daemonset.yaml.j2", pool.located_at, note=DRI_NOTE, stage="platform",
            name=name, namespace=DRI_NAMESPACE,
            labels=labels(name, "device-plugin", **{"gen.dev/pool": pool.name}),
            selector=selector, image=vm.device_plugin_image or DEVICE_PLUGIN_IMAGE, args=args,
            port=DEVICE_PLUGIN_PORT, annotations={**exception, **waivers},
            node_selector=node_selector, tolerations=tolerations,
        ))
    if specs:
        origin = plan.located.document.location
        specs[:0] = [
            manifest(
                "core/namespace.yaml.j2", origin,
                note=PLUGIN_NAMESPACE_NOTE, stage="platform", name=DRI_NAMESPACE,
                labels={
                    **labels(DRI_NAMESPACE, "namespace"),
                    ENFORCE_LABEL: "privileged",
                    "pod-security.kubernetes.io/enforce-version": "latest",
                },
                annotations=exception,
            ),
            manifest(
                "apple/networkpolicy-deny.yaml.j2", origin, stage="platform",
                name="default-deny", namespace=DRI_NAMESPACE,
                labels=labels("default-deny", "device-plugin"),
            ),
        ]
    return specs


def _startup_threshold(svc: ServicePlan) -> int:
    weights = svc.model.weight_bytes if svc.model is not None else 20 * GIB
    return math.ceil((WARMUP_SECONDS + weights / LOAD_BYTES_PER_S) / PROBE_PERIOD)


def _llama_specs(
    plan: ClusterPlan, svc: ServicePlan, decision: LlamaDecision
) -> list[ManifestSpec]:
    from gen.apple.chips import RAMALAMA_IMAGE

    service = svc.service
    api_key = service.auth.api_key
    if api_key is None:
        return []  # GEN608 says why
    if decision.args is None or not decision.ready:
        return []  # GEN603 / GEN605 / GEN606 / GEN608 say why
    from gen.apple.launchd import key_guard_argv

    pools: list[PoolPlan] = [p.pool for p in decision.pools]
    args = list(decision.args)
    # llama-server serves without authentication when its key file holds no key (an empty
    # Secret): the guard shell refuses to start instead (exit 78), see launchd.KEY_GUARD.
    command = key_guard_argv(f"gen-{service.name}", f"{KEY_MOUNT}/{KEY_FILE}", ["llama-server"])
    origin = svc.located.document.location
    name, ns = service.name, service.namespace
    meta = labels(name, "inference", **{
        "gen.dev/model": _model_label(service.model), "gen.dev/engine": "llama-server",
    })
    selector = {"app.kubernetes.io/name": name, "app.kubernetes.io/component": "inference"}
    vm = pools[0].pool.apple_vm
    assert vm is not None
    # One Venus GPU per VM node: gpu may be omitted (GEN607 refuses a count above 1).
    devices_per_pod = str(service.gpu.count if service.gpu is not None else 1)
    resources = {
        "requests": {"cpu": service.resources.cpu, "memory": service.resources.memory,
                     vm.resource_name: devices_per_pod},
        "limits": {"memory": service.resources.memory, vm.resource_name: devices_per_pod},
    }
    node_selector, tolerations = _placement(pools)
    claim = f"{name}-models"
    cache_access, cache_class = model_cache_storage(plan, service, service.replicas)
    specs = [
        manifest(
            "apple/deployment.yaml.j2", origin, note=LLAMA_NOTE,
            name=name, namespace=ns, labels={**meta, **queue_labels(plan, svc)},
            selector=selector,
            replicas=service.replicas, image=service.serving.image or RAMALAMA_IMAGE,
            command=command, args=args,
            env=[{"name": "HOME", "value": HOME},
                 {"name": "XDG_CACHE_HOME", "value": f"{HOME}/.cache"}],
            port=LLAMA_PORT, port_name=PORT_NAME, resources=resources,
            probe_period=PROBE_PERIOD, startup_failure_threshold=_startup_threshold(svc),
            progress_deadline_seconds=progress_deadline_seconds(
                PROBE_PERIOD, _startup_threshold(svc)),
            grace_seconds=SHUTDOWN_SECONDS, uid=RUN_AS,
            node_selector=node_selector, tolerations=tolerations,
            models_mount=MODELS_MOUNT, models_claim=claim, home=HOME,
            key_mount=KEY_MOUNT, key_file=KEY_FILE,
            key_secret=api_key.name, key_key=api_key.key,
        ),
        manifest(
            "apple/service.yaml.j2", origin,
            name=name, namespace=ns, labels=meta, selector=selector,
            port=service.exposure.port, port_name=PORT_NAME, target_port=PORT_NAME,
        ),
        manifest(
            "apple/pvc.yaml.j2", origin,
            name=claim, namespace=ns, labels=meta,
            access_mode=cache_access, size=service.storage.cache_size,
            storage_class=cache_class,
        ),
        manifest(
            "apple/pdb.yaml.j2", origin,
            name=name, namespace=ns, labels=meta, selector=selector,
        ),
        manifest(
            "apple/networkpolicy.yaml.j2", origin,
            name=name, namespace=ns, labels=meta, selector=selector, port=LLAMA_PORT,
            namespaces=sorted({*service.exposure.allow_from_namespaces,
                               plan.cluster.monitoring.namespace}),
        ),
    ]
    if plan.cluster.monitoring.service_monitors and has_addon(plan, "prometheus-operator"):
        specs.append(manifest(
            "apple/servicemonitor.yaml.j2", origin,
            name=name, namespace=ns, labels=meta, selector=selector, port_name=PORT_NAME,
            key_secret=api_key.name, key_key=api_key.key,
        ))
    return specs


# --------------------------------------------------------------------------- native macOS


def _address_type(address: str) -> str:
    return "IPv6" if ipaddress.ip_address(address).version == 6 else "IPv4"


def _mac_specs(plan: ClusterPlan, svc: ServicePlan) -> list[ManifestSpec]:
    service = svc.service
    api_key = service.auth.api_key
    if api_key is None:  # pragma: no cover - the model requires it with mac_hosts
        return []
    origin = svc.located.document.location
    name, ns = service.name, service.namespace
    meta = labels(name, "inference", **{
        "gen.dev/model": _model_label(service.model), "gen.dev/engine": service.engine,
    })
    note = MAC_NOTE.format(secret=api_key.name, key=api_key.key, service=name)
    if plan.cluster.gitops is not None and plan.cluster.gitops.engine == "argocd":
        note += ARGO_NOTE
    port = service.exposure.port
    specs = [manifest(
        "apple/service.yaml.j2", origin, note=note,
        name=name, namespace=ns, labels=meta, selector={},
        port=port, port_name=PORT_NAME, target_port=port,
    )]
    families: dict[str, list[dict[str, str]]] = {}
    for host in service.mac_hosts:
        families.setdefault(_address_type(host.address), []).append(
            {"address": str(ipaddress.ip_address(host.address)), "hostname": host.name}
        )
    for family in sorted(families):
        slice_name = f"{name}-{family.lower()}"
        specs.append(manifest(
            "apple/endpointslice.yaml.j2", origin, note=note,
            name=slice_name, namespace=ns,
            labels={
                **labels(slice_name, "inference", **{"gen.dev/engine": service.engine}),
                "kubernetes.io/service-name": name,
                "endpointslice.kubernetes.io/managed-by": "gen.dev",
            },
            address_type=family, endpoints=families[family],
            port=port, port_name=PORT_NAME,
        ))
    return specs


def _mac_files(svc: ServicePlan, decision: MacDecision) -> list[FileSpec]:
    from gen.apple.launchd import plist_filename

    service = svc.service
    server, plist = decision.server, decision.plist
    if server is None or plist is None:
        return []  # GEN603 / GEN608 say why
    devices = [h.device for h in decision.hosts if h.device is not None]
    base = PurePosixPath(HOSTS_DIR, service.name)
    files = [
        FileSpec(base / host.name / plist_filename(server), plist,
                 svc.located.at("mac_hosts", i))
        for i, host in enumerate(service.mac_hosts)
    ]
    fits = {r.device: r for r in decision.fits if r is not None}
    readme = _mac_readme(svc, server, devices, list(fits.values()))
    files.append(FileSpec(base / "README.md", readme.encode("utf-8"),
                          svc.located.at("mac_hosts")))
    return files


_ENGINE_INSTALL = {
    "llama-server": "`brew install llama.cpp` (Metal build; `llama-server` lands in "
                    "/opt/homebrew/bin). Put the GGUF file at `{model}`.",
    "vllm-metal": "install vllm-metal (macOS 15+, arm64 Python 3.12; it creates "
                  "`~/.venv-vllm-metal`) and link its `vllm` into /usr/local/bin. The model is "
                  "downloaded into the service folder on first start.",
    "vllm-mlx": "install vllm-mlx {vllm_mlx} (`pipx install 'vllm-mlx=={vllm_mlx}'`; gen's "
                "flags need {vllm_mlx_min} or later) and link its `vllm-mlx` "
                "into /usr/local/bin. The model is downloaded into the service folder on "
                "first start. vllm-mlx takes the key only on its command line: local users "
                "of the Mac can read it with `ps`, so keep the Mac single-tenant.",
}


def _mac_readme(svc: ServicePlan, server: MacServer, devices: Sequence[AppleGPU],
                fits: Sequence[AppleFitReport]) -> str:
    from gen.apple.launchd import (
        VLLM_MLX_MIN_VERSION,
        VLLM_MLX_VERSION,
        health_url,
        launchd_label,
        plist_filename,
    )

    service = svc.service
    label = launchd_label(service.name)
    plist = plist_filename(server)
    folder = f"{MAC_ROOT}/{service.name}"
    key = service.auth.api_key
    assert key is not None
    rows = "\n".join(
        f"| {h.name} | {h.address} | {h.chip} | {h.memory_gb} GB | "
        f"{d.memory_bytes / GIB:.1f} GiB | {health_url(server, h.address)} |"
        for h, d in zip(service.mac_hosts, devices, strict=True)
    )
    install = _ENGINE_INSTALL[service.engine].format(
        model=server.model, vllm_mlx=VLLM_MLX_VERSION, vllm_mlx_min=VLLM_MLX_MIN_VERSION)
    clusters = ", ".join(service.clusters)
    budgets = "\n\n".join(
        "    " + r.format().replace("\n", "\n    ").replace("    \n", "\n") for r in fits
    )
    return f"""\
{GENERATED_COMMENT}
# {service.name} on native macOS hosts

Generated by gen from the InferenceService `{service.name}`; do not edit. These files are
not synced to any cluster. In-cluster clients ({clusters}) reach the Macs through the
selectorless Service `{service.namespace}/{service.name}` and its EndpointSlice: traffic
leaves the pod network, so every request must carry the API key.

Engine: `{service.engine}`, model `{service.model}`, served as `{server.served_model_name}`
on port {server.port}.

| host | address | chip | memory | Metal budget | health |
| --- | --- | --- | --- | --- | --- |
{rows}

The Metal budget is macOS's default GPU working-set cap (2/3 of memory up to 32 GB, 3/4
above); gen's fit check uses it. `sudo sysctl iogpu.wired_limit_mb=<MiB>` raises it until
the next reboot.

## Memory fit

What gen checked (`gen lint`, GEN602), term by term, per kind of host; `gen apple-fit
--service {service.name}` prints it again (`--json` for the figures):

{budgets}

## Install on each host

1. Engine: {install}
2. The API key, from the Secret `{key.name}` (key `{key.key}`) in namespace
   `{service.namespace}`, into `{server.api_key_file}`, owned by root, mode 0600:

       sudo mkdir -p "{folder}" /Library/Logs/gen
       kubectl -n {service.namespace} get secret {key.name} -o jsonpath='{{.data.{key.key}}}' \\
         | base64 -d | sudo sh -c 'umask 077 && cat > "$1"' sh "{server.api_key_file}"

   The plist names only this file; the job refuses to start (exit 78) when it is
   missing, empty or holds only blank lines.
3. The job (a LaunchDaemon: it runs at boot, as root, with no user logged in):

       # <host> is the host's folder next to this README
       sudo install -m 0644 -o root -g wheel <host>/{plist} /Library/LaunchDaemons/{plist}
       sudo launchctl bootstrap system /Library/LaunchDaemons/{plist}

   After an update: `sudo launchctl bootout system/{label}`, then bootstrap again.
   Logs: `/Library/Logs/gen/{service.name}.out.log` and `.err.log`.
4. Let only the clusters' node and pod addresses reach port {server.port} (macOS
   firewall or the network): the server listens on all interfaces.

Nothing in Kubernetes probes these hosts. When a Mac goes away for long, remove it from
`mac_hosts` and render again.
"""


# --------------------------------------------------------------------------- entry point


def build(plan: ClusterPlan) -> Built:
    """Apple Silicon objects of one cluster, and the files for its services' Macs."""
    decided = decisions(plan)
    specs = _plugin_specs(plan, decided)
    files: list[FileSpec] = []
    for svc in plan.services:
        service = svc.service
        if service.mac_hosts:
            specs += _mac_specs(plan, svc)
            files += _mac_files(svc, decided.macs[service.name])
        elif service.engine == "llama-server":
            specs += _llama_specs(plan, svc, decided.llama[service.name])
    return Built(specs, files)
