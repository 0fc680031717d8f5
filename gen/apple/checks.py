"""Apple Silicon rules (GEN601–GEN611): engines that cannot use an Apple GPU, memory fit on
krunkit VM nodes and native Macs, the chip catalog, VM sizing, and native-host plumbing.

The rules read the Apple decisions recorded in each cluster's plan (:mod:`gen.apple.decide`:
chips, devices, device-plugin arguments, fit reports, llama-server arguments, launchd jobs)
and turn their recorded errors and fit reports into findings; they run no builder code.

Apple's GPU backend is ``apple-metal`` in gen, never a bare "mps" (NVIDIA's Multi-Process
Service is ``nvidia-mps``).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from gen.apple.decide import LlamaDecision, MacDecision, VMPoolDecision, decisions
from gen.errors import Finding, Severity, SourceLocation
from gen.fleet.plan import ClusterPlan, Plan, ServicePlan
from gen.rules import finding

if TYPE_CHECKING:
    from gen.apple.chips import AppleChip
    from gen.apple.fit import AppleFitReport, AppleGPU

Device = tuple[str, "AppleGPU", str, "AppleFitReport | None"]
"""(where it is, the device, how to make room, the model's fit on it) for the fit rule."""

__all__ = ["check_clusters", "mac_findings"]

GIB = 1 << 30

_TWO_PATHS = (
    "use engine: llama-server (llama.cpp with Vulkan) on this pool, or serve the model from "
    "native macOS hosts (mac_hosts with engine vllm-metal, vllm-mlx or llama-server) "
    "reached through a selectorless Service; see docs/apple-silicon.md"
)


def _chip(chip: AppleChip | None, error: str | None, memory_gb: int, where: SourceLocation,
          memory_at: SourceLocation, key: str, memory_key: str) -> list[Finding]:
    """GEN603 (unknown chip) and GEN604 (a memory size Apple never sold with it)."""
    if chip is None:
        return [finding("GEN603", error or "", where, key_path=f"{key}.chip",
                        hint="see 'gen catalog gpus' for the Apple chips gen knows")]
    if chip.supports(memory_gb=memory_gb):
        return []
    sizes = ", ".join(f"{m} GB" for m in chip.memory_gb_options)
    return [finding(
        "GEN604", f"Apple does not sell the {chip.name} with {memory_gb} GB (it comes with "
        f"{sizes}); the memory budget may be wrong", memory_at, key_path=f"{key}.{memory_key}",
        hint="check the chip and the memory of the host",
    )]


def _pool_findings(
    cluster: ClusterPlan, pools: tuple[VMPoolDecision, ...]
) -> Iterator[Finding]:
    """GEN603–GEN605, GEN609 on each Apple VM pool."""
    from gen.apple.chips import KRUNKIT_MAX_VM_MEMORY_MIB

    located = cluster.located
    for decided in pools:
        i, pool, vm = decided.index, decided.pool.pool, decided.vm
        key = f"node_pools[{i}].apple_vm"
        yield from _chip(decided.chip, decided.chip_error, vm.host_memory_gb,
                         located.at("node_pools", i, "apple_vm", "chip"),
                         located.at("node_pools", i, "apple_vm", "host_memory_gb"),
                         key, "host_memory_gb")
        vm_at = located.at("node_pools", i, "apple_vm", "vm_memory_gb")
        limit_gb = KRUNKIT_MAX_VM_MEMORY_MIB // 1024
        if vm.vm_memory_gb > limit_gb:
            yield finding(
                "GEN605", f"krunkit gives a VM at most {limit_gb} GB of RAM (RAM and the GPU's "
                f"VRAM window share one 62 GiB guest address space); {vm.vm_memory_gb} GB "
                "cannot start", vm_at, key_path=f"{key}.vm_memory_gb",
                hint="give the VM less RAM: what it does not take is left to the GPU",
            )
        elif vm.vm_memory_gb >= vm.host_memory_gb:
            yield finding(
                "GEN605", f"the VM ({vm.vm_memory_gb} GB) cannot have as much memory as its "
                f"Mac ({vm.host_memory_gb} GB)", vm_at, key_path=f"{key}.vm_memory_gb",
                hint="leave memory to macOS and to the GPU",
            )
        if decided.plugin_error is not None:
            yield finding("GEN605", decided.plugin_error,
                          located.at("node_pools", i, "apple_vm", "resource_name"),
                          key_path=f"{key}.resource_name")
        if not pool.labels:
            yield finding(
                "GEN609", f"Apple VM pool {pool.name!r} has no labels: the device plugin "
                "DaemonSet runs on every node and llama-server pods cannot be pinned to the "
                "VM nodes", located.at("node_pools", i), key_path=f"node_pools[{i}].labels",
                hint="label the VM nodes (e.g. gen.dev/accelerator: apple-venus) and list "
                "the labels here",
            )


def _fit_findings(svc: ServicePlan, devices: list[Device]) -> Iterator[Finding]:
    """GEN602 for each device the model does not fit."""
    service = svc.service
    if svc.model is None:
        return
    length = service.serving.max_model_len
    where = svc.located.at("serving", "max_model_len") if length else svc.located.at("model")
    seen: set[str] = set()
    for what, device, hint, report in devices:
        if device.name in seen:
            continue
        seen.add(device.name)
        assert report is not None  # recorded for every known device when the model is known
        if report.fits:
            continue
        best = report.max_model_len_fit
        slots = report.slots
        # Too many llama-server slots: point at max_num_seqs, the setting that multiplies the KV.
        at_slots = slots > 1 and report.max_slots_fit >= 1
        yield finding(
            "GEN602",
            f"{service.model} does not fit the {device.name}, {what}: "
            f"{device.memory_bytes / GIB:.1f} GiB of GPU memory; " + "; ".join(report.errors),
            svc.located.at("serving", "max_num_seqs") if at_slots else where,
            key_path="serving.max_num_seqs" if at_slots else
            ("serving.max_model_len" if length else "model"),
            hint=(f"serving.max_num_seqs: {report.max_slots_fit} (each llama-server slot "
                  f"holds a full max_model_len); or " if at_slots else "")
            + (f"the largest max_model_len that fits {slots} slot(s) is {best}; or "
               if best else "") + hint,
        )


def _engine_findings(svc: ServicePlan) -> Iterator[Finding]:
    """GEN608: a setting the Apple engine cannot take."""
    service = svc.service
    if service.autoscaling is not None:
        yield finding(
            "GEN608", f"gen does not autoscale {service.engine} on Apple GPUs; 'autoscaling' "
            "is ignored", svc.located.at("autoscaling"), key_path="autoscaling",
            severity=Severity.WARNING,
            hint="set replicas (in-cluster) or list the Macs in mac_hosts",
        )
    if service.serving.kv_cache_dtype != "auto":
        yield finding(
            "GEN608", f"engine {service.engine} is not given an fp8 KV cache by gen; the "
            "setting is ignored", svc.located.at("serving", "kv_cache_dtype"),
            key_path="serving.kv_cache_dtype", severity=Severity.WARNING,
            hint="remove serving.kv_cache_dtype",
        )


def _llama_findings(cluster: ClusterPlan, svc: ServicePlan,
                    decided: LlamaDecision) -> Iterator[Finding]:
    """GEN602, GEN606–GEN608 for an in-cluster llama-server service."""
    from gen.k8s.quantity import parse_quantity

    service = svc.service
    pools = decided.pools
    if not pools:
        where = "node_pool" if service.node_pool else "clusters"
        yield finding(
            "GEN606", f"cluster {cluster.name!r} has no Apple VM node pool (platform: "
            f"apple-vm) for this llama-server service; gen runs llama-server in a cluster "
            "only on Apple VM nodes", svc.located.at(where), key_path=where,
            hint="pin node_pool to an apple-vm pool, or list another cluster",
        )
        return
    if service.auth.api_key is None:
        yield finding(
            "GEN608", "llama-server needs an API key: the pod reads it with --api-key-file",
            svc.located.at("auth"), key_path="auth.api_key",
            hint="auth.api_key: {name: <secret>, key: <key>}",
        )
    if decided.args_error is not None:  # a blank served_model_name, a literal --api-key
        yield finding("GEN608", decided.args_error, svc.located.at("serving"), key_path="serving")
    yield from _engine_findings(svc)
    if len({p.vm.resource_name for p in pools}) > 1:
        yield finding(
            "GEN607", "the Apple VM pools this service may use advertise different device "
            "resources; one Deployment can request only one", svc.located.at("node_pool"),
            key_path="node_pool", hint="pin node_pool to one pool",
        )
    if service.gpu is not None and service.gpu.count != 1:
        yield finding(
            "GEN607", f"a krunkit VM node has one Venus GPU; gpu.count {service.gpu.count} "
            "cannot be met by one pod", svc.located.at("gpu", "count"), key_path="gpu.count",
            hint="gpu.count: 1; add replicas to use more VM nodes",
        )
    memory = parse_quantity(service.resources.memory)
    devices: list[Device] = []
    for pool, report in zip(pools, decided.fits, strict=True):
        vm = pool.vm
        if memory >= vm.vm_memory_gb * GIB:
            yield finding(
                "GEN607", f"resources.memory {service.resources.memory} does not fit the "
                f"{vm.vm_memory_gb} GB VM nodes of pool {pool.name!r}",
                svc.located.at("resources", "memory"), key_path="resources.memory",
                hint="llama-server keeps the model in GPU memory; a few GiB of RAM suffice",
            )
        device = pool.device
        if device is None:
            continue  # GEN603 / GEN605 on the pool
        window = device.memory_bytes / GIB
        devices.append((
            f"pool {pool.name!r} of cluster {cluster.name!r}", device,
            f"{vm.vm_memory_gb} GB of VM RAM leaves {window:.0f} GiB to the GPU; give the VM "
            "less RAM (krunkit's RAM and VRAM share 62 GiB), use a smaller quantization or "
            "context, or serve from native Macs (mac_hosts)", report,
        ))
    yield from _fit_findings(svc, devices)


def _mac_findings(svc: ServicePlan, decided: MacDecision) -> Iterator[Finding]:
    """GEN602–GEN604, GEN608 for a service on native macOS hosts (once per service)."""
    service = svc.service
    devices: list[Device] = []
    hint = ("a Mac with more memory, a smaller quantization, a shorter context, or a higher "
            "Metal limit (sudo sysctl iogpu.wired_limit_mb=<MiB>)")
    for decided_host, report in zip(decided.hosts, decided.fits, strict=True):
        i, host = decided_host.index, decided_host.host
        yield from _chip(decided_host.chip, decided_host.chip_error, host.memory_gb,
                         svc.located.at("mac_hosts", i, "chip"),
                         svc.located.at("mac_hosts", i, "memory_gb"), f"mac_hosts[{i}]",
                         "memory_gb")
        if decided_host.device is None:
            continue  # GEN603 above
        devices.append((f"host {host.name!r}", decided_host.device, hint, report))
    yield from _engine_findings(svc)
    if not decided.devices_known:
        return
    if service.engine == "vllm-mlx" and service.serving.max_model_len is not None:
        yield finding(
            "GEN608", "vllm-mlx has no max-model-len flag (its --max-kv-size truncates the "
            "context instead)", svc.located.at("serving", "max_model_len"),
            key_path="serving.max_model_len",
            hint="remove serving.max_model_len, or use engine llama-server or vllm-metal",
        )
        return
    error = decided.server_error or decided.plist_error
    if error is not None:
        yield finding("GEN608", f"engine {service.engine} on macOS: {error}",
                      svc.located.at("serving"), key_path="serving")
    yield from _fit_findings(svc, devices)


def _gguf_finding(svc: ServicePlan) -> Finding | None:
    """GEN611: a llama-server service that names no GGUF file."""
    from gen.apple.decide import gguf_file

    service = svc.service
    if service.engine != "llama-server" or gguf_file(service) is not None:
        return None
    return finding(
        "GEN611", f"llama-server loads one GGUF file, and model {service.model!r} names none; "
        "gen does not guess the file name", svc.located.at("model"), key_path="model",
        hint="set gguf_file to the file on the model volume, e.g. gguf_file: "
        "Meta-Llama-3.1-8B-Instruct-Q8_0.gguf (or end model in /<file>.gguf)",
    )


def _located_vllm_on_apple(cluster: ClusterPlan, svc: ServicePlan,
                           pools: tuple[VMPoolDecision, ...]) -> Finding:
    names = ", ".join(repr(p.name) for p in pools)
    where = "node_pool" if svc.service.node_pool else "engine"
    return finding(
        "GEN601",
        f"vLLM cannot use the Apple GPU of pool {names} in cluster {cluster.name!r}: the "
        "nodes are Linux VMs whose GPU is Vulkan (Mesa Venus); vLLM has no Vulkan backend, "
        "and vllm-metal needs macOS and Metal, which no Linux pod has",
        svc.located.at(where), key_path=where, hint=_TWO_PATHS,
    )


def _argocd(cluster: ClusterPlan, svc: ServicePlan) -> Finding | None:
    gitops = cluster.cluster.gitops
    if gitops is None or gitops.engine != "argocd":
        return None
    return finding(
        "GEN610",
        f"cluster {cluster.name!r} is synced by Argo CD, whose default resource.exclusions "
        "(argocd-cm) skip EndpointSlice: the Service to the Macs would have no endpoints",
        svc.located.at("clusters"), key_path="clusters",
        hint="remove discovery.k8s.io/EndpointSlice from resource.exclusions in argocd-cm",
    )


def check_clusters(plan: Plan) -> list[Finding]:
    """GEN601–GEN611 on each cluster alone: everything but the native-Mac rules
    (:func:`mac_findings`), which count once per service however many clusters it is in."""
    findings: list[Finding] = []
    for cluster in plan.clusters:
        decided = decisions(cluster)
        findings += _pool_findings(cluster, decided.pools)
        for svc in cluster.services:
            service = svc.service
            if service.mac_hosts:
                argo = _argocd(cluster, svc)
                if argo is not None:
                    findings.append(argo)
            elif service.engine == "llama-server":
                findings += _llama_findings(cluster, svc, decided.llama[service.name])
                gguf = _gguf_finding(svc)
                if gguf is not None:
                    findings.append(gguf)
            elif service.name in decided.vllm:
                findings.append(_located_vllm_on_apple(cluster, svc, decided.vllm[service.name]))
    return findings


def mac_findings(cluster: ClusterPlan) -> dict[str, list[Finding]]:
    """The native-Mac rules of each service of ``cluster`` on macOS hosts, by service name.
    A service in several clusters counts once: its findings from the first of them in plan
    order (the ``once`` scope of :func:`gen.pipeline.check_parts`)."""
    decided = decisions(cluster)
    found: dict[str, list[Finding]] = {}
    for svc in cluster.services:
        service = svc.service
        if service.mac_hosts and service.name not in found:
            findings = list(_mac_findings(svc, decided.macs[service.name]))
            gguf = _gguf_finding(svc)
            if gguf is not None:
                findings.append(gguf)
            found[service.name] = findings
    return found
