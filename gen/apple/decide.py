"""Apple Silicon decisions, made once per cluster and recorded in its plan.

What the Apple builder (:mod:`gen.apple.build`) and the GEN6xx rules (:mod:`gen.apple.checks`)
both need is decided here, once, by :func:`decide`:

* per Apple VM pool: the chip, the GPU a model server sees inside the krunkit VM, and the
  generic device plugin's arguments for the pool's device resource;
* per in-cluster ``llama-server`` service: the Apple VM pools it lands on, the fit of its
  model on each pool's GPU, the context it serves and its llama-server arguments;
* per service on native macOS hosts: each host's chip and Metal budget, the fit of the model
  on each, the launchd job (:class:`~gen.apple.launchd.MacServer`) and its property list;
* per ``vllm`` service: the Apple VM pools it would land on (where it cannot run).

Nothing here raises for a profile: what cannot be decided is recorded as the error's message.
The builder builds nothing from a recorded error; a rule reports it at the profile line.

The pipeline records the result in ``ClusterPlan.apple`` before any builder runs;
:func:`decisions` reads it back (and decides on the spot for a plan that did not go through
the pipeline).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gen.errors import GenError
from gen.fleet.plan import ClusterPlan, Plan, PoolPlan, ServicePlan

if TYPE_CHECKING:
    from gen.apple.chips import AppleChip
    from gen.apple.fit import AppleFitReport, AppleGPU
    from gen.apple.launchd import MacServer
    from gen.models import InferenceService, NodePool
    from gen.models.cluster import AppleVM
    from gen.models.service import MacHost

__all__ = [
    "FALLBACK_CONTEXT",
    "KEY_FILE",
    "KEY_MOUNT",
    "LLAMA_PORT",
    "MAC_ROOT",
    "MODELS_MOUNT",
    "AppleDecisions",
    "LlamaDecision",
    "MacDecision",
    "MacHostDecision",
    "VMPoolDecision",
    "apple_pools",
    "decide",
    "decisions",
    "fit_report",
    "gguf_file",
    "host_device",
    "llama_slots",
    "mac_api_key_file",
    "service_fits",
    "vm_device",
]

MIB = 1 << 20

LLAMA_PORT = 8080
MODELS_MOUNT = "/models"
KEY_MOUNT = "/var/run/secrets/gen"
KEY_FILE = "api-key"
FALLBACK_CONTEXT = 8192
MAC_ROOT = "/Library/Application Support/gen"
"""Folder of a service on a Mac: the key file, the GGUF file, the engine's caches."""


# --------------------------------------------------------------------------- recorded data


@dataclass(frozen=True)
class VMPoolDecision:
    """An Apple VM pool (``platform: apple-vm``) as decided once for its cluster."""

    pool: PoolPlan
    index: int
    """Position of the pool in the cluster's ``node_pools`` (for profile locations)."""
    chip: AppleChip | None
    chip_error: str | None
    """Why the chip is unknown (GEN603); ``None`` when ``chip`` is set."""
    device: AppleGPU | None
    """The Venus GPU a model server sees in one VM node; ``None`` when it cannot be known."""
    device_error: str | None
    plugin_args: tuple[str, ...] | None
    """The generic device plugin's container args for the pool's resource and sharing."""
    plugin_error: str | None
    """Why the device resource is malformed (GEN605); ``None`` when ``plugin_args`` is set."""

    @property
    def name(self) -> str:
        """Pool name."""
        return self.pool.name

    @property
    def vm(self) -> AppleVM:
        """The pool's VM sizing."""
        vm = self.pool.pool.apple_vm
        assert vm is not None
        return vm


@dataclass(frozen=True)
class MacHostDecision:
    """A native macOS host of a service."""

    host: MacHost
    index: int
    """Position of the host in the service's ``mac_hosts``."""
    chip: AppleChip | None
    chip_error: str | None
    device: AppleGPU | None
    """Metal's share of the host's unified memory; ``None`` when it cannot be known."""
    device_error: str | None


@dataclass(frozen=True)
class LlamaDecision:
    """An in-cluster ``llama-server`` (Vulkan) service in one cluster."""

    pools: tuple[VMPoolDecision, ...]
    """The Apple VM pools it may land on (empty: GEN606)."""
    fits: tuple[AppleFitReport | None, ...]
    """Per pool: the model at the profile's ``max_model_len`` on the pool's GPU; ``None``
    where the GPU is unknown or the model has no architecture numbers."""
    context_length: int
    """The context served: the profile's, else the longest that fits every GPU."""
    args: tuple[str, ...] | None
    """llama-server's container args; ``None`` without pools or when they cannot be built."""
    args_error: str | None

    @property
    def ready(self) -> bool:
        """Every pool's GPU is known and the arguments were built: a Deployment can be."""
        return (
            bool(self.pools)
            and all(p.device is not None for p in self.pools)
            and self.args is not None
        )


@dataclass(frozen=True)
class MacDecision:
    """A service on native macOS hosts (the same decision in every cluster of the service)."""

    hosts: tuple[MacHostDecision, ...]
    fits: tuple[AppleFitReport | None, ...]
    """Per host: the model at the profile's ``max_model_len`` within its Metal budget."""
    server: MacServer | None
    """The launchd job; ``None`` when a host's device is unknown or it cannot be built."""
    server_error: str | None
    plist: bytes | None
    """The job's property list (the same on every host)."""
    plist_error: str | None

    @property
    def devices_known(self) -> bool:
        """Every host's Metal budget is known."""
        return all(h.device is not None for h in self.hosts)

    @property
    def ready(self) -> bool:
        """The launchd job and its property list were built: the host files can be."""
        return self.server is not None and self.plist is not None


@dataclass(frozen=True)
class AppleDecisions:
    """Everything decided about Apple Silicon in one cluster."""

    pools: tuple[VMPoolDecision, ...]
    """The cluster's Apple VM pools, in ``node_pools`` order."""
    llama: Mapping[str, LlamaDecision]
    """In-cluster llama-server services, by service name."""
    macs: Mapping[str, MacDecision]
    """Services on native macOS hosts, by service name."""
    vllm: Mapping[str, tuple[VMPoolDecision, ...]]
    """vLLM services that would land on Apple VM pools (GEN601), by service name."""


# --------------------------------------------------------------------------- helpers


def apple_pools(pools: Iterable[PoolPlan]) -> list[PoolPlan]:
    """The pools that are krunkit VM nodes on Macs."""
    return [p for p in pools if p.pool.platform == "apple-vm" and p.pool.apple_vm is not None]


def _vm_device(chip: AppleChip, vm: AppleVM) -> AppleGPU:
    from gen.apple.chips import krunkit_vm_gpu_memory_bytes
    from gen.apple.fit import AppleGPU

    memory = krunkit_vm_gpu_memory_bytes(vm.vm_memory_gb, vm.host_memory_gb)
    return AppleGPU(
        f"{chip.name} Venus GPU (krunkit VM with {vm.vm_memory_gb} GB RAM)", memory, "venus",
        f"krunkit's VRAM window for a {vm.vm_memory_gb} GB VM on a {vm.host_memory_gb} GB Mac",
    )


def vm_device(pool: NodePool) -> AppleGPU:
    """The GPU a model server sees inside a krunkit VM node of ``pool``.

    Raises:
        CatalogLookupError: the pool's chip is not in the catalog.
        ProfileValidationError: the VM is larger than krunkit allows.
    """
    from gen.apple.chips import lookup_chip

    vm = pool.apple_vm
    assert vm is not None
    return _vm_device(lookup_chip(vm.chip), vm)


def _host_device(chip: AppleChip, host: MacHost) -> AppleGPU:
    from gen.apple.chips import macos_gpu_fraction, usable_unified_memory_bytes
    from gen.apple.fit import AppleGPU

    memory = usable_unified_memory_bytes(host.memory_gb)
    fraction = macos_gpu_fraction(host.memory_gb)
    return AppleGPU(f"{chip.name} ({host.memory_gb} GB)", memory, "metal",
                    f"macOS's default Metal working set, {fraction} of {host.memory_gb} GB")


def host_device(host: MacHost) -> AppleGPU:
    """The GPU of a native macOS host: Metal's share of its unified memory.

    Raises:
        CatalogLookupError: the host's chip is not in the catalog.
    """
    from gen.apple.chips import lookup_chip

    return _host_device(lookup_chip(host.chip), host)


def llama_slots(service: InferenceService) -> int:
    """The slots (``--parallel``) of a service: ``serving.max_num_seqs`` if the profile sets
    it, else 1; always 1 for vllm-metal and vllm-mlx, which grow their KV cache on demand.

    llama-server reserves the KV cache of every slot at start-up, so gen does not carry
    vLLM's default of 64 sequences over to it (see :mod:`gen.apple.fit`).
    """
    serving = service.serving
    if service.engine != "llama-server" or "max_num_seqs" not in serving.model_fields_set:
        return 1
    return serving.max_num_seqs


def fit_report(svc: ServicePlan, device: AppleGPU, max_model_len: int | None) -> AppleFitReport:
    """Budget the service's model on one Apple GPU (one server, unified memory)."""
    from gen.apple.fit import apple_fit

    assert svc.model is not None
    service = svc.service
    return apple_fit(svc.model, device, engine=service.engine, max_model_len=max_model_len,
                     slots=llama_slots(service),
                     gpu_memory_utilization=service.serving.gpu_memory_utilization)


def gguf_file(service: InferenceService) -> str | None:
    """The GGUF file a llama-server service loads, relative to its model volume.

    ``gguf_file`` when the profile sets it; else the last segment of a model id that names a
    file in a Hugging Face repository (``<org>/<repo>/<file>.gguf``); else ``None``: gen does
    not guess a file name (GEN611).
    """
    if service.gguf_file is not None:
        return service.gguf_file
    name = service.model.rstrip("/").rsplit("/", 1)[-1]
    return name if name.endswith(".gguf") else None


def mac_api_key_file(service: str) -> str:
    """Where the API key lies on each Mac (mode 0600, owner root)."""
    return f"{MAC_ROOT}/{service}/api-key"


def _served_name(service: InferenceService) -> str:
    return service.serving.served_model_name or service.name


def _fits(
    svc: ServicePlan, devices: Sequence[AppleGPU | None]
) -> tuple[AppleFitReport | None, ...]:
    """The model at the profile's max_model_len on each device (once per distinct device)."""
    if svc.model is None:
        return tuple(None for _ in devices)
    length = svc.service.serving.max_model_len
    reports: dict[AppleGPU, AppleFitReport] = {}
    for device in devices:
        if device is not None and device not in reports:
            reports[device] = fit_report(svc, device, length)
    return tuple(None if d is None else reports[d] for d in devices)


def _context_length(svc: ServicePlan, fits: Iterable[AppleFitReport | None]) -> int:
    """The context served: the profile's, else the longest that fits every device.

    ``fits`` are the reports at the profile's max_model_len, so without one they are the
    reports at the model's own context, whose ``max_model_len_fit`` is what fits.
    """
    length = svc.service.serving.max_model_len
    if length is not None:
        return length
    if svc.model is None:
        return FALLBACK_CONTEXT
    best = [r.max_model_len_fit for r in fits if r is not None and r.max_model_len_fit > 0]
    if not best:
        return min(svc.model.max_context, FALLBACK_CONTEXT)
    return min(min(best), svc.model.max_context)


# --------------------------------------------------------------------------- deciding


def _decide_pool(pool: PoolPlan, index: int) -> VMPoolDecision:
    from gen.apple.chips import generic_device_plugin_args, lookup_chip

    vm = pool.pool.apple_vm
    assert vm is not None
    chip: AppleChip | None = None
    chip_error: str | None = None
    device: AppleGPU | None = None
    device_error: str | None = None
    try:
        chip = lookup_chip(vm.chip)
    except GenError as err:
        chip_error = device_error = err.message
    if chip is not None:
        try:
            device = _vm_device(chip, vm)
        except GenError as err:
            device_error = err.message
    plugin_args: tuple[str, ...] | None = None
    plugin_error: str | None = None
    try:
        plugin_args = tuple(generic_device_plugin_args(vm.resource_name, vm.sharing))
    except GenError as err:
        plugin_error = err.message
    return VMPoolDecision(pool, index, chip, chip_error, device, device_error,
                          plugin_args, plugin_error)


def _decide_llama(svc: ServicePlan, pools: tuple[VMPoolDecision, ...]) -> LlamaDecision:
    from gen.apple.chips import llama_server_vulkan_args

    fits = _fits(svc, [p.device for p in pools])
    context = _context_length(svc, fits)
    args: tuple[str, ...] | None = None
    args_error: str | None = None
    service = svc.service
    gguf = gguf_file(service)
    if pools and gguf is not None:  # no GGUF file: GEN611
        try:
            args = tuple(llama_server_vulkan_args(
                f"{MODELS_MOUNT}/{gguf}", LLAMA_PORT, context,
                _served_name(service), service.serving.extra_args,
                api_key_file=f"{KEY_MOUNT}/{KEY_FILE}", parallel=llama_slots(service),
            ))
        except GenError as err:
            args_error = err.message
    return LlamaDecision(pools, fits, context, args, args_error)


def _decide_host(host: MacHost, index: int) -> MacHostDecision:
    from gen.apple.chips import lookup_chip

    try:
        chip = lookup_chip(host.chip)
    except GenError as err:
        return MacHostDecision(host, index, None, err.message, None, err.message)
    try:
        return MacHostDecision(host, index, chip, None, _host_device(chip, host), None)
    except GenError as err:
        return MacHostDecision(host, index, chip, None, None, err.message)


def _mac_server(svc: ServicePlan, context: int) -> MacServer | None:
    """The launchd job description of a service on its Macs (the same on every host);
    ``None`` for llama-server without a GGUF file name (GEN611).

    Raises:
        ProfileValidationError: a setting the engine cannot take (e.g. a max_model_len for
            vllm-mlx, a key flag in extra_args).
        CatalogLookupError: an engine launchd does not know.
    """
    from gen.apple.launchd import MacServer

    service = svc.service
    serving = service.serving
    engine = service.engine
    if engine == "llama-server":
        gguf = gguf_file(service)
        if gguf is None:
            return None  # GEN611
        model = f"{MAC_ROOT}/{service.name}/models/{gguf}"
    else:
        model = service.model
    extra: list[str] = []
    if engine == "vllm-metal":
        extra += ["--gpu-memory-utilization", f"{serving.gpu_memory_utilization:.2f}"]
    extra += serving.extra_args
    return MacServer(
        service=service.name,
        engine=engine,  # type: ignore[arg-type]  # validated by MacServer
        model=model,
        port=service.exposure.port,
        served_model_name=_served_name(service),
        max_model_len=serving.max_model_len if engine == "vllm-mlx" else context,
        parallel=llama_slots(service),
        api_key_file=mac_api_key_file(service.name),
        extra_args=tuple(extra),
    )


def _decide_mac(svc: ServicePlan) -> MacDecision:
    from gen.apple.launchd import launchd_plist

    hosts = tuple(_decide_host(h, i) for i, h in enumerate(svc.service.mac_hosts))
    fits = _fits(svc, [h.device for h in hosts])
    server: MacServer | None = None
    server_error: str | None = None
    plist: bytes | None = None
    plist_error: str | None = None
    if all(h.device is not None for h in hosts):
        try:
            server = _mac_server(svc, _context_length(svc, fits))
        except GenError as err:
            server_error = err.message
    if server is not None:
        try:
            plist = launchd_plist(server)
        except GenError as err:
            plist_error = err.message
    return MacDecision(hosts, fits, server, server_error, plist, plist_error)


def decide(plan: ClusterPlan) -> AppleDecisions:
    """Every Apple Silicon decision of one cluster, made once."""
    index = {p.name: i for i, p in enumerate(plan.cluster.node_pools)}
    pools = {p.name: _decide_pool(p, index[p.name]) for p in apple_pools(plan.pools)}

    def landing(svc: ServicePlan) -> tuple[VMPoolDecision, ...]:
        return tuple(pools.get(p.name) or _decide_pool(p, index[p.name])
                     for p in apple_pools(svc.pools))

    llama: dict[str, LlamaDecision] = {}
    macs: dict[str, MacDecision] = {}
    vllm: dict[str, tuple[VMPoolDecision, ...]] = {}
    for svc in plan.services:
        service = svc.service
        if service.mac_hosts:
            macs[service.name] = _decide_mac(svc)
        elif service.engine == "llama-server":
            llama[service.name] = _decide_llama(svc, landing(svc))
        elif service.engine == "vllm" and (on_apple := landing(svc)):
            vllm[service.name] = on_apple
    return AppleDecisions(tuple(pools.values()), llama, macs, vllm)


def decisions(plan: ClusterPlan) -> AppleDecisions:
    """The Apple decisions recorded in ``plan`` (decided now if the pipeline did not)."""
    recorded = plan.apple
    if isinstance(recorded, AppleDecisions):
        return recorded
    return decide(plan)


def service_fits(
    plan: Plan, service: str, clusters: Sequence[str] = ()
) -> list[tuple[str, AppleFitReport]]:
    """``(where, report)`` for each device an Apple service can get: the fit lint decided.

    ``where`` names the cluster and pool (in-cluster llama-server) or the Mac host. A service
    on Macs is listed once, whatever its clusters; ``clusters`` narrows the in-cluster ones.

    Raises:
        CatalogLookupError: no Apple service of that name (in those clusters).
    """
    from gen.errors import CatalogLookupError

    out: list[tuple[str, AppleFitReport]] = []
    seen_macs = False
    for cluster in plan.clusters:
        if clusters and cluster.name not in clusters:
            continue
        decided = decisions(cluster)
        if service in decided.llama:
            llama = decided.llama[service]
            out += [(f"cluster {cluster.name}, pool {pool.name}", report)
                    for pool, report in zip(llama.pools, llama.fits, strict=True)
                    if report is not None]
        elif service in decided.macs and not seen_macs:
            seen_macs = True
            mac = decided.macs[service]
            out += [(f"host {h.host.name}", report)
                    for h, report in zip(mac.hosts, mac.fits, strict=True) if report is not None]
    if not out:
        raise CatalogLookupError(
            f"no Apple service {service!r} with a known model and device"
            + (f" in cluster(s) {', '.join(clusters)}" if clusters else "")
            + " (llama-server on an Apple VM pool, or a service on mac_hosts)"
        )
    return out
