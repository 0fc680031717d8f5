"""gen.caches: one registry of process-wide caches, bounded, cleared by one call."""

from __future__ import annotations

import gc
import textwrap
from pathlib import Path

import pytest

import gen.caches
from gen.caches import BoundedCache, CacheStats, memoize, once
from gen.dra.capacity import check_with_matcher
from gen.dra.satisfiability import Matcher
from gen.emit import skeleton, yamlfast
from gen.k8s.quantity import parse_quantity
from gen.nvidia.gpus import gpu_catalog
from gen.pipeline import load_plan

ROOT = Path(__file__).resolve().parents[1]


def test_bounded_cache_never_holds_more_than_its_limit() -> None:
    """A store into a full cache empties it first; the limit and the stores are data."""
    cache: BoundedCache[int, str] = BoundedCache("tests.test_caches.bounded", 3)
    for i in range(3):
        assert cache.put(i, str(i)) == str(i)
    assert len(cache) == 3 and cache.get(0) == "0"
    cache.put(2, "two")  # a key already there replaces its value: nothing is dropped
    assert len(cache) == 3 and cache.data[2] == "two"
    cache.put(3, "3")
    assert len(cache) == 1 and 3 in cache and 0 not in cache
    for i in range(100):
        cache.put(i, "x")
        assert len(cache) <= 3
    assert gen.caches.stats()["tests.test_caches.bounded"] == CacheStats(
        len(cache), 3, None, 105, "bounded")


def test_bounded_cache_needs_a_positive_limit() -> None:
    """A limit below one is a programming error."""
    with pytest.raises(ValueError, match="at least 1"):
        BoundedCache("tests.test_caches.zero", 0)


def test_memoize_registers_by_qualified_name_and_counts() -> None:
    """memoize is lru_cache, registered under module.qualname, with its hits and misses."""
    calls: list[int] = []

    @memoize(maxsize=2)
    def double(x: int) -> int:
        calls.append(x)
        return 2 * x

    name = f"{__name__}.test_memoize_registers_by_qualified_name_and_counts.<locals>.double"
    assert name in gen.caches.names()
    assert [double(1), double(1), double(2), double(3), double(1)] == [2, 2, 4, 6, 2]
    assert calls == [1, 2, 3, 1]  # least recently used evicted at maxsize 2
    assert gen.caches.stats()[name] == CacheStats(2, 2, 1, 4, "memoize")


def test_memoize_takes_an_explicit_name_and_refuses_a_duplicate() -> None:
    """Two live caches cannot share a name (clear() would miss one of them)."""
    first = memoize(maxsize=8, name="tests.test_caches.int")(int)
    assert first("7") == 7
    with pytest.raises(ValueError, match="already registered"):
        memoize(maxsize=8, name="tests.test_caches.int")(int)
    with pytest.raises(ValueError, match="already registered"):
        BoundedCache("tests.test_caches.int", 8)


def test_once_loads_on_first_use_and_survives_clear() -> None:
    """A once loader runs one time per process, is listed, and clear() keeps its value."""
    runs: list[int] = []

    @once
    def table() -> dict[str, int]:
        runs.append(1)
        return {"a": 1}

    first = table()
    gen.caches.clear()
    assert table() is first and runs == [1]
    name = f"{__name__}.test_once_loads_on_first_use_and_survives_clear.<locals>.table"
    assert gen.caches.stats()[name] == CacheStats(1, 1, 1, 1, "once")


def test_an_unreferenced_cache_leaves_the_registry() -> None:
    """The registry holds caches weakly: a dropped cache neither leaks nor blocks its name."""
    cache: BoundedCache[str, str] = BoundedCache("tests.test_caches.dropped", 4)
    cache.put("k", "v")
    del cache
    gc.collect()
    assert "tests.test_caches.dropped" not in gen.caches.names()
    BoundedCache("tests.test_caches.dropped", 4)  # the name is free again


def test_clear_empties_every_registered_cache() -> None:
    """After a lint and a render-like workload, clear() leaves every cache empty and reset,
    but the package-data loaders (their objects are constants callers hold), which keep what
    they held (whether this test alone or earlier tests too filled them)."""
    load_plan(ROOT / "profiles")
    from gen.pipeline import lint

    lint(ROOT / "profiles")
    yamlfast.load_all(yamlfast.dump({"kind": "ConfigMap", "data": {"a": "1", "b": 2}}))
    sizes = {name: s.size for name, s in gen.caches.stats().items()}
    for used in ("gen.k8s.quantity.parse_quantity", "gen.dra.cel._engine.compile_selector",
                 "gen.dra.allocator.fills", "gen.emit.yamlfast.key",
                 "gen.emit.yamlfast.plain", "gen.nvidia.gpus.gpu_catalog"):
        assert sizes[used] > 0, used
    catalog = gpu_catalog()
    gen.caches.clear()
    after = gen.caches.stats()
    assert {"gen.nvidia.gpus.gpu_catalog", "gen.serving.model_catalog.model_catalog",
            "gen.dra.cel._engine._envs"} <= {n for n, s in after.items() if s.kind == "once"}
    for name, s in after.items():
        if s.kind == "once":  # kept as it was: filled by the workload or not yet loaded
            assert s.size == sizes[name] and s.limit == 1, name
            continue
        assert s.size == 0, name
        assert s.hits in (0, None) and s.misses == 0, name
    assert gpu_catalog() is catalog


def test_a_module_cache_is_cleared_in_place() -> None:
    """clear() empties the dicts the hot paths bound at import; they refill and agree."""
    data = {"metadata": {"name": "x", "labels": {"app": "y"}}, "spec": [1, "two", None]}
    text = yamlfast.dump(data)
    keys, plain = yamlfast._key_cache, yamlfast._plain_cache
    yamlfast.load_all(text)
    assert "metadata" in keys and "two" in plain
    gen.caches.clear()
    assert yamlfast._key_cache is keys and not keys and not plain
    assert not skeleton._skeletons and not skeleton._scalars
    assert yamlfast.dump(data) == text and yamlfast.load_all(text) == [data]
    assert "metadata" in keys


def test_memoized_function_is_cold_after_clear() -> None:
    """A memoize cache used through its module starts again after clear()."""
    parse_quantity("12Mi")
    assert parse_quantity.cache_info().currsize > 0
    gen.caches.clear()
    assert parse_quantity.cache_info().currsize == 0
    assert parse_quantity("12Mi") == 12 * 2**20


_TWO_CLUSTERS = textwrap.dedent("""\
    kind: Cluster
    name: a
    kubernetes_version: "1.34.2"
    allocation: dra
    node_pools:
      - {name: h100, gpu: h100-sxm5-80gb, gpus_per_node: 8, nodes: 2, driver_version: "580.95.05"}
    ---
    kind: Cluster
    name: b
    kubernetes_version: "1.34.2"
    allocation: dra
    node_pools:
      - {name: gpus, gpu: h100-sxm5-80gb, gpus_per_node: 8, nodes: 2, driver_version: "580.95.05",
         labels: {team: b}}
      - {name: other, gpu: h100-sxm5-80gb, gpus_per_node: 4, nodes: 2, driver_version: "580.95.05"}
    ---
    kind: GPUClass
    name: h100
    match: {product: h100-sxm5-80gb}
    ---
    kind: InferenceService
    name: svc
    model: meta-llama/Llama-3.2-3B-Instruct
    clusters: [a, b]
    gpu: {gpu_class: h100, count: 2}
    serving: {max_model_len: 4096}
    replicas: 20
    """)


def test_dra_memos_are_keyed_by_value(tmp_path: Path) -> None:
    """Pools of equal hardware share one inventory (each keeps its own pool); the greedy
    fill memo answers equal nodes from any plan, and a fresh plan gives the same findings."""
    (tmp_path / "fleet.yaml").write_text(_TWO_CLUSTERS)
    plan = load_plan(tmp_path)
    (a_pool,), (b_pool, b_other) = (c.pools for c in plan.clusters)
    matcher = Matcher()
    a_inv, b_inv = matcher.inventory(a_pool), matcher.inventory(b_pool)
    assert a_inv.pool is a_pool and b_inv.pool is b_pool
    assert a_inv.slots is b_inv.slots and a_inv.shapes is b_inv.shapes
    other = matcher.inventory(b_other)
    assert other.pool is b_other and len(other.slots) == 4
    assert matcher.inventory(a_pool) is a_inv

    gen.caches.clear()
    first = check_with_matcher(plan, Matcher())
    fills = gen.caches.stats()["gen.dra.allocator.fills"].misses
    again = check_with_matcher(load_plan(tmp_path), Matcher())
    assert again == first
    assert [f.rule for f in first].count("GEN205") == 2  # 8 of 20 replicas fit in a, 12 in b
    assert gen.caches.stats()["gen.dra.allocator.fills"].misses == fills
