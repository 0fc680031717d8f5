"""Hardware drift: the cluster's Nodes and ResourceSlices against what the profile declares.

A pure function of data (:func:`drift`): the built cluster plan and a
:class:`gen.verify.state.ClusterState`. Each difference is a finding at the line of the cluster
profile to change (the pool's ``nodes``, ``gpu``, ``gpus_per_node``, ``mig_layout``/``mig``,
``driver_version``; the cluster's ``kubernetes_version``), naming the nodes that differ.

**Which nodes are a pool's.** gen pins workloads to a pool by its ``labels`` (the Deployment's
node selector, :mod:`gen.serving.build`), so a node belongs to the pool whose labels it carries,
all of them; when several pools' labels match, the pool with the most labels wins, and a tie is
reported (GEN819) and the node left out. A pool without labels cannot be told apart (GEN819,
its nodes are not checked). The ``nvidia.com/mig.config`` label gen adds for a static MIG
pool (:attr:`gen.fleet.plan.PoolPlan.node_labels`) is not used to match: it is checked, as
part of the MIG comparison, since mig-manager applies what it says.

**What is compared, per node** (each rule once per pool and distinct observed value):

==========  ==========================================  =====================================
rule        DRA (ResourceSlices of ``gpu.nvidia.com``)  device plugin (Node capacity, labels)
==========  ==========================================  =====================================
GEN811      nodes matched vs ``nodes``                  the same
GEN812      ``productName``                             GFD ``nvidia.com/gpu.product``
GEN813      distinct GPUs (``uuid``/``parentUUID``)     ``nvidia.com/gpu`` (no MIG)
GEN814      devices per (type, MIG profile);            ``nvidia.com/mig-*`` / ``nvidia.com/
            ``nvidia.com/mig.config``                   gpu`` counts; ``nvidia.com/mig.config``
GEN815      ``driverVersion``                           GFD ``cuda.driver-version.full``
GEN816      shared counter sets (dynamic MIG)           —
GEN817      node publishes no device at all             no NVIDIA resource in capacity
==========  ==========================================  =====================================

GEN810 compares the server's Kubernetes minor with ``kubernetes_version``; GEN818 (warning)
names GPU nodes no pool declares. Apple VM pools are compared by node count and by their
device resource (``apple_vm.resource_name``) in capacity.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal

from gen.dra.simulate import DRIVER, is_dynamic
from gen.errors import Finding, SourceLocation
from gen.fleet.plan import ClusterPlan, PoolPlan
from gen.k8s.quantity import QuantityFormat, format_quantity
from gen.rules import finding
from gen.verify.inventory import (
    GPU_RESOURCE,
    MIG_CONFIG_LABEL,
    MIG_RESOURCE_PREFIX,
    DeviceKind,
    PluginInventory,
    SliceInventory,
    driver_text,
    expected_plugin_inventory,
    expected_slice_inventory,
    format_kinds,
    gfd_product,
    gfd_product_matches,
    plugin_inventory,
    slice_inventory,
    version_minor,
)
from gen.verify.state import ClusterState, NodeState, slices_of

__all__ = ["PoolNodes", "assign_nodes", "drift"]

SHOWN_NODES = 5
"""How many node names a finding lists before ``and N more``."""


@dataclass(frozen=True)
class PoolNodes:
    """The nodes of the cluster that belong to each pool, and what could not be assigned."""

    by_pool: Mapping[str, tuple[NodeState, ...]]
    unassigned: tuple[NodeState, ...]
    findings: tuple[Finding, ...]


def _names(names: Sequence[str]) -> str:
    shown = ", ".join(sorted(names)[:SHOWN_NODES])
    more = len(names) - SHOWN_NODES
    return shown + (f" and {more} more" if more > 0 else "")


def _selector(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


class _Where:
    """Locations in the cluster profile: the cluster's keys and each pool's."""

    def __init__(self, cluster: ClusterPlan) -> None:
        self.cluster = cluster
        self.index = {p.name: i for i, p in enumerate(cluster.cluster.node_pools)}

    def at(self, *key: str | int) -> SourceLocation:
        return self.cluster.located.at(*key)

    def pool(self, pool: PoolPlan, *key: str) -> tuple[SourceLocation, str]:
        i = self.index[pool.name]
        path = f"node_pools[{i}]" + "".join(f".{k}" for k in key)
        return self.cluster.located.at("node_pools", i, *key), path

    def finding(self, rule: str, pool: PoolPlan, keys: Sequence[str], message: str,
                hint: str) -> Finding:
        """A finding at the first of ``keys`` the pool's YAML has (else the pool itself)."""
        location, path = self.pool(pool)
        for key in keys:
            here, key_path = self.pool(pool, key)
            if here != location:
                location, path = here, key_path
                break
        return finding(rule, f"pool {pool.name!r}: {message}", location, key_path=path,
                       hint=hint, cluster=self.cluster.name)


def assign_nodes(cluster: ClusterPlan, nodes: Iterable[NodeState]) -> PoolNodes:
    """Each node to the pool whose labels it carries (see the module docstring)."""
    where = _Where(cluster)
    findings: list[Finding] = []
    labelled = [p for p in cluster.pools if p.pool.labels]
    for pool in cluster.pools:
        if not pool.pool.labels:
            findings.append(where.finding(
                "GEN819", pool, ("labels",),
                "has no labels, so its nodes cannot be told from others: not checked",
                "give the pool the labels its nodes carry (gen also pins its workloads by them)"))
    by_pool: dict[str, list[NodeState]] = {p.name: [] for p in cluster.pools}
    unassigned: list[NodeState] = []
    ambiguous: dict[tuple[str, ...], list[str]] = {}
    for node in nodes:
        matches = [p for p in labelled
                   if all(node.labels.get(k) == v for k, v in p.pool.labels.items())]
        if not matches:
            unassigned.append(node)
            continue
        most = max(len(p.pool.labels) for p in matches)
        best = [p for p in matches if len(p.pool.labels) == most]
        if len(best) > 1:
            ambiguous.setdefault(tuple(p.name for p in best), []).append(node.name)
            continue
        by_pool[best[0].name].append(node)
    for names, node_names in sorted(ambiguous.items()):
        pool = next(p for p in cluster.pools if p.name == names[0])
        findings.append(where.finding(
            "GEN819", pool, ("labels",),
            f"node(s) {_names(node_names)} carry the labels of pools "
            f"{', '.join(repr(n) for n in names)} alike: not checked",
            "give each pool a label the others do not have"))
    return PoolNodes({k: tuple(v) for k, v in by_pool.items()}, tuple(unassigned),
                     tuple(findings))


def _grouped(nodes: Iterable[NodeState], value: Callable[[NodeState], Hashable]
             ) -> list[tuple[NodeState, list[str]]]:
    """Nodes grouped by ``value(node)``, in order of first appearance: (the first node of
    the group, the names of all of them)."""
    groups: dict[Hashable, tuple[NodeState, list[str]]] = {}
    for node in nodes:
        groups.setdefault(value(node), (node, []))[1].append(node.name)
    return list(groups.values())


def _version_finding(cluster: ClusterPlan, version: str) -> list[Finding]:
    server = version_minor(version)
    declared = version_minor(cluster.kubernetes_version)
    if server is None or declared is None or server == declared:
        return []
    return [finding(
        "GEN810",
        f"the API server runs Kubernetes {version}; the profile says "
        f"{cluster.cluster.kubernetes_version}: gen renders and lints for "
        f"{declared[0]}.{declared[1]}",
        cluster.located.at("kubernetes_version"), key_path="kubernetes_version",
        hint=f"set kubernetes_version: \"{version.lstrip('v').split('-')[0].split('+')[0]}\" "
        "and run gen lint && gen render",
        cluster=cluster.name,
    )]


def _count_finding(where: _Where, pool: PoolPlan, nodes: Sequence[NodeState]) -> list[Finding]:
    if len(nodes) == pool.pool.nodes:
        return []
    shown = f" ({_names([n.name for n in nodes])})" if nodes else ""
    return [where.finding(
        "GEN811", pool, ("nodes",),
        f"the cluster has {len(nodes)} node(s) labelled {_selector(pool.pool.labels)}{shown}; "
        f"the profile says nodes: {pool.pool.nodes}",
        "set nodes to what the cluster has, or add the missing nodes (gen sizes capacity, "
        "quotas and replicas by it)",
    )]


def _diff_kinds(got: Counter[DeviceKind], want: Counter[DeviceKind]) -> list[DeviceKind]:
    return sorted(k for k in got.keys() | want.keys() if got.get(k, 0) != want.get(k, 0))


def _mig_words(pool: PoolPlan) -> str:
    if is_dynamic(pool):
        return "mig: dynamic (every MIG placement, carved per claim)"
    if pool.mig_layout is not None:
        return f"mig_layout {pool.mig_layout.name!r}"
    return "full GPUs (no MIG)"


def _mig_keys(pool: PoolPlan) -> tuple[str, ...]:
    return ("mig", "mig_layout") if is_dynamic(pool) else ("mig_layout", "gpu")


def _counters_text(sets: Mapping[str, Mapping[str, Decimal]],
                   other: Mapping[str, Mapping[str, Decimal]]) -> str:
    """The counters of ``sets`` that differ from ``other``'s, as ``set/counter=value``."""
    parts = []
    for name in sorted(sets.keys() | other.keys()):
        mine, theirs = sets.get(name), other.get(name)
        if mine is None:
            parts.append(f"{name}: absent")
            continue
        for counter in sorted(mine.keys() | (theirs or {}).keys()):
            value = mine.get(counter)
            if theirs is None or value != theirs.get(counter):
                text = "absent" if value is None else format_quantity(
                    value, QuantityFormat.BINARY_SI)
                parts.append(f"{name}/{counter}={text}")
    shown = parts[:6]
    return ", ".join(shown) + (f" and {len(parts) - 6} more" if len(parts) > 6 else "")


def _slice_findings(where: _Where, pool: PoolPlan, nodes: Sequence[NodeState],
                    published: Mapping[str, SliceInventory]) -> list[Finding]:
    """DRA: each node's published devices against the simulation of the pool's."""
    assert pool.gpu is not None
    want = expected_slice_inventory(pool, where.cluster.minor)
    findings: list[Finding] = []
    silent = [n.name for n in nodes if published[n.name].empty]
    if silent:
        findings.append(where.finding(
            "GEN817", pool, (),
            f"node(s) {_names(silent)} publish no {DRIVER} device (no ResourceSlice, or an "
            "empty one): no claim can be allocated there",
            "check that the NVIDIA DRA driver's kubelet plugin runs on those nodes "
            "(kubectl get resourceslices -o wide)"))
    live = [n for n in nodes if not published[n.name].empty]

    def inventory(node: NodeState) -> SliceInventory:
        return published[node.name]

    product = pool.gpu.product_name
    for first, names in _grouped(live, lambda n: inventory(n).products):
        products = inventory(first).products
        if products != {product}:
            findings.append(where.finding(
                "GEN812", pool, ("gpu",),
                f"node(s) {_names(names)} publish GPUs "
                f"{', '.join(repr(p) for p in sorted(products)) or 'without a productName'}; "
                f"the profile says gpu: {pool.pool.gpu} ({product!r})",
                "set gpu to the model the nodes have (gen catalog gpus), or move the nodes"))
    for first, names in _grouped(live, lambda n: inventory(n).gpus):
        gpus = inventory(first).gpus
        if gpus != want.gpus:
            findings.append(where.finding(
                "GEN813", pool, ("gpus_per_node",),
                f"node(s) {_names(names)} publish {gpus} GPU(s) each; the profile says "
                f"gpus_per_node: {pool.pool.gpus_per_node}",
                "set gpus_per_node to what the nodes have; a GPU missing from a node is "
                "often a failed GPU or an XID error (nvidia-smi on the node)"))
    findings += _mig_findings(where, pool, live, inventory, want)
    driver = driver_text(pool.pool.driver_version or "")
    for first, names in _grouped(live, lambda n: inventory(n).drivers):
        drivers = inventory(first).drivers
        if drivers and drivers != {driver}:
            findings.append(where.finding(
                "GEN815", pool, ("driver_version",),
                f"node(s) {_names(names)} run NVIDIA driver "
                f"{', '.join(sorted(drivers))}; the profile says driver_version: "
                f"{pool.pool.driver_version}",
                "set driver_version to what the nodes run: gen checks CUDA images and MIG "
                "profiles against it"))
    if is_dynamic(pool):
        for first, names in _grouped(
                live, lambda n: tuple(sorted((k, tuple(sorted(v.items())))
                                             for k, v in inventory(n).counter_sets.items()))):
            got = inventory(first).counter_sets
            if dict(got) != dict(want.counter_sets):
                findings.append(where.finding(
                    "GEN816", pool, ("mig",),
                    f"node(s) {_names(names)} publish dynamic-MIG counters "
                    f"{_counters_text(got, want.counter_sets) or 'none'}; the profile's GPU "
                    f"gives {_counters_text(want.counter_sets, got) or 'none'}",
                    "the nodes' GPUs or the driver's DynamicMIG gate differ from the pool's "
                    "profile: check gpu and the DRA driver version"))
    return findings


def _mig_findings(where: _Where, pool: PoolPlan, live: Sequence[NodeState],
                  inventory: Callable[[NodeState], SliceInventory],
                  want: SliceInventory) -> list[Finding]:
    findings: list[Finding] = []
    for first, names in _grouped(live, lambda n: tuple(sorted(inventory(n).layouts.items()))):
        got = inventory(first).devices
        keys = _diff_kinds(got, want.devices)
        if keys and inventory(first).other_layouts(want):
            findings.append(where.finding(
                "GEN814", pool, _mig_keys(pool),
                f"node(s) {_names(names)} publish {format_kinds(got, keys)}; the profile "
                f"({_mig_words(pool)}) gives {format_kinds(want.devices, keys)}",
                _mig_hint(pool)))
    findings += _mig_label_findings(where, pool, live)
    return findings


def _mig_hint(pool: PoolPlan) -> str:
    if is_dynamic(pool):
        return ("dynamic MIG needs the DRA driver's DynamicMIG gate and MIG mode on the GPUs; "
                "gen sets the gate in the driver's values (out/_bootstrap)")
    if pool.mig_layout is not None:
        return ("mig-manager has not applied the layout (kubectl get node -L "
                "nvidia.com/mig.config.state), or the layout differs: set mig_layout to what "
                "the nodes run")
    return "MIG is on where the profile says full GPUs: set mig_layout, or turn MIG off"


def _mig_label_findings(where: _Where, pool: PoolPlan,
                        nodes: Sequence[NodeState]) -> list[Finding]:
    """A static MIG pool's nodes must carry ``nvidia.com/mig.config=<layout>``."""
    if pool.mig_layout is None or is_dynamic(pool):
        return []
    wanted = pool.mig_layout.name
    findings = []
    for first, names in _grouped(nodes, lambda n: n.labels.get(MIG_CONFIG_LABEL)):
        value = first.labels.get(MIG_CONFIG_LABEL)
        if value != wanted:
            shown = "no nvidia.com/mig.config label" if value is None else \
                f"nvidia.com/mig.config={value}"
            findings.append(where.finding(
                "GEN814", pool, ("mig_layout",),
                f"node(s) {_names(names)} carry {shown}; the profile's layout is {wanted!r}: "
                "mig-manager applies what the label says",
                f"kubectl label node <node> nvidia.com/mig.config={wanted} --overwrite "
                "(follow the runbook in out/_reports)"))
    return findings


def _plugin_findings(where: _Where, pool: PoolPlan,
                     nodes: Sequence[NodeState]) -> list[Finding]:
    """Device plugin: each Node's capacity and GFD labels against the pool."""
    assert pool.gpu is not None
    want = expected_plugin_inventory(where.cluster, pool)
    seen = {n.name: plugin_inventory(n) for n in nodes}
    findings: list[Finding] = []
    silent = [n.name for n in nodes if seen[n.name].empty]
    if silent:
        findings.append(where.finding(
            "GEN817", pool, (),
            f"node(s) {_names(silent)} advertise no {GPU_RESOURCE} or {MIG_RESOURCE_PREFIX}* "
            "capacity: pods asking for GPUs stay Pending there",
            "check that the NVIDIA device plugin runs on those nodes (GPU Operator)"))
    live = [n for n in nodes if not seen[n.name].empty]

    def inventory(node: NodeState) -> PluginInventory:
        return seen[node.name]

    for first, names in _grouped(live, lambda n: inventory(n).product):
        label = inventory(first).product
        if label is not None and not gfd_product_matches(label, pool.gpu.product_name):
            findings.append(where.finding(
                "GEN812", pool, ("gpu",),
                f"node(s) {_names(names)} are labelled nvidia.com/gpu.product={label}; the "
                f"profile says gpu: {pool.pool.gpu} ({gfd_product(pool.gpu.product_name)})",
                "set gpu to the model the nodes have (gen catalog gpus), or move the nodes"))
    mig = pool.mig_layout is not None
    for first, names in _grouped(live, lambda n: tuple(sorted(inventory(n).resources.items()))):
        got = inventory(first).resources
        keys = sorted(k for k in got.keys() | want.keys() if got.get(k, 0) != want.get(k, 0))
        if not keys:
            continue
        text = ", ".join(f"{k}: {got.get(k, 0)}" for k in keys)
        wanted = ", ".join(f"{k}: {want.get(k, 0)}" for k in keys)
        if mig or any(k != GPU_RESOURCE for k in keys):
            findings.append(where.finding(
                "GEN814", pool, ("mig_layout", "gpu"),
                f"node(s) {_names(names)} advertise {text}; the profile "
                f"({_mig_words(pool)}, MIG strategy {where.cluster.mig_strategy}) gives "
                f"{wanted}", _mig_hint(pool)))
        else:
            findings.append(where.finding(
                "GEN813", pool, ("gpus_per_node",),
                f"node(s) {_names(names)} advertise {text}; the profile says gpus_per_node: "
                f"{pool.pool.gpus_per_node}",
                "set gpus_per_node to what the nodes have; a GPU missing from a node is "
                "often a failed GPU or an XID error (nvidia-smi on the node)"))
    findings += _mig_label_findings(where, pool, live)
    driver = driver_text(pool.pool.driver_version or "")
    for first, names in _grouped(live, lambda n: inventory(n).driver):
        version = inventory(first).driver
        if version is not None and version != driver:
            findings.append(where.finding(
                "GEN815", pool, ("driver_version",),
                f"node(s) {_names(names)} run NVIDIA driver {version}; the profile says "
                f"driver_version: {pool.pool.driver_version}",
                "set driver_version to what the nodes run: gen checks CUDA images and MIG "
                "profiles against it"))
    return findings


def _apple_findings(where: _Where, pool: PoolPlan,
                    nodes: Sequence[NodeState]) -> list[Finding]:
    vm = pool.pool.apple_vm
    if vm is None:
        return []
    silent = [n.name for n in nodes if not n.capacity.get(vm.resource_name)]
    if not silent:
        return []
    return [where.finding(
        "GEN817", pool, ("apple_vm",),
        f"node(s) {_names(silent)} advertise no {vm.resource_name} capacity: the llama.cpp "
        "pods stay Pending there",
        "check that the generic device plugin DaemonSet gen renders runs on those nodes")]


def _gpu_node(node: NodeState, slices: Mapping[str, object]) -> bool:
    return node.name in slices or any(
        (k == GPU_RESOURCE or k.startswith(MIG_RESOURCE_PREFIX)) and v > 0
        for k, v in node.capacity.items())


def drift(cluster: ClusterPlan, state: ClusterState) -> list[Finding]:
    """Every difference between the cluster profile's pools and the live cluster."""
    where = _Where(cluster)
    findings = _version_finding(cluster, state.version)
    assigned = assign_nodes(cluster, state.nodes)
    findings += assigned.findings
    by_node = slices_of(state, DRIVER)
    dra = cluster.cluster.allocation == "dra"
    if dra and state.slices is None:
        findings.append(finding(
            "GEN817", "the cluster serves no ResourceSlice API (resource.k8s.io): the profile "
            "says allocation: dra, so no GPU claim can be allocated",
            cluster.located.at("allocation"), key_path="allocation",
            hint="enable DRA on the cluster, or set allocation: device-plugin",
            cluster=cluster.name))
    for pool in cluster.pools:
        if not pool.pool.labels:
            continue
        nodes = assigned.by_pool[pool.name]
        findings += _count_finding(where, pool, nodes)
        if pool.pool.platform != "nvidia":
            findings += _apple_findings(where, pool, nodes)
        elif pool.gpu is None:
            continue
        elif dra:
            if state.slices is not None:
                published = {n.name: slice_inventory(by_node.get(n.name, ())) for n in nodes}
                findings += _slice_findings(where, pool, nodes, published)
        else:
            findings += _plugin_findings(where, pool, nodes)
    strays = [n.name for n in assigned.unassigned if _gpu_node(n, by_node)]
    if strays:
        findings.append(finding(
            "GEN818",
            f"node(s) {_names(strays)} have NVIDIA GPUs but carry the labels of no pool of "
            "the profile: gen's workloads never land there, and its capacity checks do not "
            "count them",
            cluster.located.at("node_pools"), key_path="node_pools",
            hint="declare a pool for them with the labels they carry, or label them as an "
            "existing pool's nodes",
            cluster=cluster.name))
    return findings
