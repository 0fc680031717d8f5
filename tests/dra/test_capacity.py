"""gen.dra.capacity and the allocator's node bookkeeping: one engine for GEN205 and GEN240/241."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gen.caches
from gen.dra import allocator
from gen.dra.allocator import (
    ORDERS,
    Allocation,
    NodeState,
    Order,
    Placement,
    PoolModel,
    SameAttribute,
    allocate_claim,
    arrival,
    pack,
    verify_packing,
)
from gen.dra.capacity import Analyzed, check, cluster_models, demands_of
from gen.dra.satisfiability import Matcher, analyze_service
from gen.errors import Severity
from gen.pipeline import load_plan
from tests.dra.test_allocator import ONE_GPU
from tests.dra.test_satisfiability import CLUSTER
from tests.helpers import REPO, write_tree

STATIC = CLUSTER.format(full_nodes=3)
"""Cluster c1: three 8×H100 nodes (pool ``full``, no counters) and a MIG node."""

DYNAMIC = ONE_GPU.replace("gpus_per_node: 1", "gpus_per_node: 2").replace("nodes: 1", "nodes: 3")
"""Cluster dyn: three nodes of two dynamic-MIG H100s."""

_PROFILES = ("1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb")


def _service(name: str, cluster: str, gpu: str, replicas: int) -> str:
    return (f"kind: InferenceService\nname: {name}\nnamespace: inference\n"
            f"model: meta-llama/Llama-3.2-1B-Instruct\nclusters: [{cluster}]\ngpu: {gpu}\n"
            f"replicas: {replicas}\nserving: {{max_model_len: 4096}}\n")


def _static_fleet(root: Path, counts: list[int]) -> Path:
    docs = [STATIC] + [
        _service(f"s{i}", "c1", f"{{gpu_class: h100, count: {1 + i % 4}, "
                 "same: [resource.kubernetes.io/pcieRoot]}", n)
        for i, n in enumerate(counts) if n
    ]
    write_tree(root, {"fleet.yaml": "---\n".join(docs),
                      "classes.yaml": "kind: GPUClass\nname: h100\n"
                      "match: {product: h100-sxm5-80gb}\n"})
    return root


def _dynamic_fleet(root: Path, counts: list[int]) -> Path:
    shutil.copytree(REPO / "tests" / "fixtures" / "dynamic-mig", root)
    for name in ("small", "medium", "large"):
        (root / "services" / f"{name}.yaml").unlink()
    classes = "\n---\n".join(
        f"kind: GPUClass\nname: p-{p.replace('.', '-')}\ndevice_type: mig\n"
        f"match: {{mig_profile: {p}}}" for p in _PROFILES)
    services = {f"services/s{i}.yaml": _service(f"s{i}", "dyn",
                                                f"{{gpu_class: p-{p.replace('.', '-')}}}", n)
                for i, (p, n) in enumerate(zip(_PROFILES, counts, strict=False)) if n}
    (root / "clusters" / "dyn.yaml").write_text(textwrap.dedent(DYNAMIC))
    write_tree(root, {"gpu-classes/props.yaml": classes, **services})
    return root


def _analyzed(root: Path) -> tuple[Analyzed, dict[str, PoolModel]]:
    cluster = load_plan(root).clusters[0]
    matcher = Matcher()
    analyzed = [(s, analyze_service(matcher, cluster, s)) for s in cluster.services]
    return analyzed, cluster_models(cluster, analyzed, matcher.model)


def _node_by_node(models: dict[str, PoolModel], demands: list[allocator.Demand],
                  order: Order) -> tuple[list[Placement], list[tuple[str, int]]]:
    """First fit over every node one at a time, without runs or memo: what the runs mean."""
    nodes = {name: [NodeState.empty(m)] * m.nodes for name, m in models.items()}
    placed, unplaced = [], []
    for demand, replica in arrival(demands, order):
        for claim in demand.claims:
            model, states = models[claim.pool], nodes[claim.pool]
            hit = next(((i, a) for i, s in enumerate(states)
                        if isinstance(a := allocate_claim(model, s, claim), Allocation)), None)
            if hit is not None:
                i, a = hit
                states[i] = states[i].taking(model, a.slots)
                placed.append(Placement(demand.name, replica, claim.pool, i, a.subrequest,
                                        a.slots))
                break
        else:
            unplaced.append((demand.name, replica))
    return placed, unplaced


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(counts=st.lists(st.integers(0, 7), min_size=4, max_size=4),
       order=st.sampled_from(ORDERS), dynamic=st.booleans())
def test_runs_of_equal_nodes_place_what_node_by_node_first_fit_places(
    tmp_path_factory: pytest.TempPathFactory, counts: list[int], order: Order, dynamic: bool
) -> None:
    """The packing kept as runs of equal nodes (the fast path) is first fit node by node:
    the same placements, in the same order, and the same replicas left over."""
    root = tmp_path_factory.mktemp("runs") / "profiles"
    root = _dynamic_fleet(root, counts) if dynamic else _static_fleet(root, counts)
    analyzed, models = _analyzed(root)
    demands = demands_of(analyzed, models, at_max=False)
    packing = pack(models, demands, order)
    assert verify_packing(packing, demands) == []
    assert (packing.placements, packing.unplaced) == _node_by_node(models, demands, order)


def test_every_order_arrives_every_replica_once(tmp_path: Path) -> None:
    """Each order is a permutation of the replicas; service order is the first order."""
    analyzed, models = _analyzed(_static_fleet(tmp_path / "p", [2, 3, 1, 0]))
    demands = demands_of(analyzed, models, at_max=False)
    flat = sorted((d.name, r) for d, r in arrival(demands, Order.SERVICE))
    assert ORDERS[0] is Order.SERVICE and len(flat) == 6
    for order in ORDERS:
        assert sorted((d.name, r) for d, r in arrival(demands, order)) == flat
    assert next(d.name for d, _ in arrival(demands, Order.REVERSE)) == "s2"


def test_same_attribute_add_and_remove_are_symmetric(tmp_path: Path) -> None:
    """A device of another PCIe root is refused while one is taken, accepted once removed."""
    _, models = _analyzed(_static_fleet(tmp_path / "p", [1]))
    inventory = models["full"].inventory
    same = SameAttribute(inventory, ["resource.kubernetes.io/pcieRoot"])
    assert same.add(0) and same.add(1) and not same.add(7)
    same.remove()
    same.remove()
    assert same.value is None and same.add(7)


def test_a_search_out_of_budget_is_gen_cannot_tell(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    """With no budget every search gives up: GEN206 warnings that say gen cannot tell,
    never a GEN205 or GEN240 error, on a pool without counters and on a dynamic one."""
    gen.caches.clear()
    monkeypatch.setattr(allocator, "SEARCH_BUDGET", 0)
    _, models = _analyzed(_static_fleet(tmp_path / "s", [30]))
    model = models["full"]
    claim = allocator.ClaimShape("full", "s0", (allocator.SubRequest("x", 1, False, (0,)),))
    assert allocate_claim(model, NodeState.empty(model), claim) == allocator.GAVE_UP
    for root in (_static_fleet(tmp_path / "a", [30]), _dynamic_fleet(tmp_path / "b", [30])):
        found = check(load_plan(root))
        assert [f.rule for f in found] == ["GEN206"], found
        assert found[0].severity is Severity.WARNING
        assert "gen cannot tell" in found[0].message and found[0].key_path == "gpu"
    gen.caches.clear()


def test_more_replicas_than_the_nodes_hold_is_gen205(tmp_path: Path) -> None:
    """25 one-GPU replicas on 3 nodes of 8: the cluster holds 24 (a located error)."""
    found = check(load_plan(_static_fleet(tmp_path / "p", [25])))
    assert [(f.rule, f.severity) for f in found] == [("GEN205", Severity.ERROR)]
    assert "holds 24 of the 25 replicas" in found[0].message


def test_a_fleet_with_large_pools_is_cheap(tmp_path: Path) -> None:
    """1,000 nodes cost about what a few do: equal nodes are filled once, not per node."""
    text = CLUSTER.format(full_nodes=1000)
    write_tree(tmp_path, {"fleet.yaml": text + _service("s0", "c1", "{gpu_class: h100, count: 8}",
                                                        1000),
                          "classes.yaml": "kind: GPUClass\nname: h100\n"
                          "match: {product: h100-sxm5-80gb}\n"})
    analyzed, models = _analyzed(tmp_path)
    packing = pack(models, demands_of(analyzed, models, at_max=False), Order.SERVICE)
    assert packing.unplaced == [] and len(packing.blocks) == 1
    assert [(r.count, r.state.used.bit_count()) for r in packing.runs["full"]] == [(1000, 8)]


def test_whole_gpus_short_on_a_dynamic_pool_speak_of_gpus(tmp_path: Path) -> None:
    """Seven whole H100s on three nodes of two dynamic-MIG H100s: GEN240 counts GPUs, and the
    hint points at `gen explain --slices` (who holds each GPU), not at `gen plan`, which
    sizes slices only."""
    root = _dynamic_fleet(tmp_path / "w", [])
    write_tree(root, {"gpu-classes/whole.yaml": "kind: GPUClass\nname: whole\n"
                      "match: {product: h100-sxm5-80gb}\n",
                      "services/w.yaml": _service("w", "dyn", "{gpu_class: whole}", 7)})
    found = [f for f in check(load_plan(root)) if f.rule == "GEN240"]
    assert len(found) == 1, found
    assert "each whole GPU takes every slice of its GPU" in found[0].message
    assert "hold 6 of the 7 replicas" in found[0].message
    assert "'gen explain w --cluster dyn --slices'" in (found[0].hint or "")
    assert "gen plan" not in (found[0].hint or "")
