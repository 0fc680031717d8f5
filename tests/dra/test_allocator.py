"""The counter-aware allocator, dynamic MIG capacity (GEN240/GEN241) and the acceptance fleet."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gen.dra.allocator import ORDERS, Order, pack, verify_packing
from gen.dra.capacity import cluster_models, demands_of
from gen.dra.satisfiability import Matcher, analyze_service
from gen.errors import Severity
from gen.fleet.plan import ClusterPlan
from gen.nvidia.gpus import gpu_catalog
from gen.nvidia.mig import check_layout
from gen.pipeline import lint, load_plan
from tests.helpers import REPO, write_tree

FIXTURE = REPO / "tests" / "fixtures" / "dynamic-mig"


def _fleet(tmp_path: Path, *, cluster: str | None = None, **files: str) -> Path:
    root = tmp_path / "profiles"
    shutil.copytree(FIXTURE, root)
    if cluster is not None:
        (root / "clusters" / "dyn.yaml").write_text(textwrap.dedent(cluster))
    write_tree(root, files)
    return root


ONE_GPU = """\
    kind: Cluster
    name: dyn
    kubernetes_version: "1.36.1"
    allocation: dra
    node_pools:
      - name: h100-dyn
        gpu: h100-sxm5-80gb
        gpus_per_node: 1
        nodes: 1
        driver_version: "580.95.05"
        mig: dynamic
        labels: {nvidia.com/gpu.deploy.mig-manager: "false"}
    storage:
      classes: [{name: nfs, access_modes: [ReadWriteOnce, ReadWriteMany], default: true}]
    """


def _service(name: str, gpu_class: str, replicas: int) -> str:
    return f"""\
        kind: InferenceService
        name: {name}
        namespace: inference
        model: meta-llama/Llama-3.2-1B-Instruct
        clusters: [dyn]
        gpu: {{gpu_class: {gpu_class}}}
        replicas: {replicas}
        serving: {{max_model_len: 4096}}
        """


def _one_gpu_mix(tmp_path: Path, small: int = 2) -> Path:
    """One H100 asked for one 3g, one 2g and ``small`` 1g slices (no other services)."""
    root = _fleet(tmp_path, cluster=ONE_GPU)
    for name in ("small", "medium", "large"):
        (root / "services" / f"{name}.yaml").unlink()
    write_tree(root, {
        "services/a.yaml": _service("a-large", "mig-3g-40gb", 1),
        "services/b.yaml": _service("b-medium", "mig-2g-20gb", 1),
        "services/c.yaml": _service("c-small", "mig-1g-10gb", small),
    })
    return root


def test_acceptance_fleet_lints_clean() -> None:
    """The 1.36 fleet with dynamic H100 and A100 pools has no finding at all."""
    assert lint(FIXTURE) == []


def test_acceptance_fleet_renders_dynamic_mig_gate(tmp_path: Path) -> None:
    """gen render writes the claims and the driver's values with DynamicMIG on."""
    from gen.pipeline import render

    result = render(FIXTURE, tmp_path / "out")
    texts = {str(p): b.decode() for p, b in result.outputs.items()}
    driver = [t for p, t in texts.items() if "dra-driver-nvidia-gpu" in p]
    assert driver and "DynamicMIG: true" in driver[0]
    claims = [p for p in texts if "resourceclaimtemplate-" in p]
    assert len(claims) == 3
    assert "mig-1g-10gb" in texts[next(p for p in claims if "small" in p)]


@pytest.mark.parametrize(("version", "gates", "needle"), [
    ("1.35.2", "", "off by default on 1.35"),
    ("1.32.4", "", "no partitionable devices"),
    ("1.36.1", "feature_gates: {DRAPartitionableDevices: false}\n", "declared off"),
])
def test_kubernetes_without_partitionable_devices(
    tmp_path: Path, version: str, gates: str, needle: str
) -> None:
    """1.35 without the gate, 1.32, and 1.36 with the gate off are located GEN112 errors."""
    text = (FIXTURE / "clusters" / "dyn.yaml").read_text()
    text = text.replace('"1.36.6"', f'"{version}"').replace("allocation: dra\n",
                                                          "allocation: dra\n" + gates)
    if version.startswith("1.32"):
        text = text.replace("allocation: dra\n", "allocation: dra\nruntime_config: "
                            "[resource.k8s.io/v1beta1]\nfeature_gates: "
                            "{DynamicResourceAllocation: true}\n")
    root = _fleet(tmp_path, cluster=text)
    found = [f for f in lint(root) if f.rule == "GEN112"]
    assert len(found) == 1 and needle in found[0].message
    assert found[0].severity is Severity.ERROR
    assert found[0].location is not None
    line = found[0].location.line
    source = (root / "clusters" / "dyn.yaml").read_text().splitlines()[line - 1]
    assert ("feature_gates" in source or "DRAPartitionableDevices" in source
            or "kubernetes_version" in source)


def test_near_miss_1_35_with_the_gate(tmp_path: Path) -> None:
    """1.35 with DRAPartitionableDevices declared on is fine."""
    text = (FIXTURE / "clusters" / "dyn.yaml").read_text().replace('"1.36.1"', '"1.35.2"')
    text = text.replace("allocation: dra\n",
                        "allocation: dra\nfeature_gates: {DRAPartitionableDevices: true}\n")
    assert [f.rule for f in lint(_fleet(tmp_path, cluster=text))] == []


def test_more_demand_than_the_pool_holds_is_a_located_error(tmp_path: Path) -> None:
    """Three 3g slices on one GPU: two fit, the third is GEN240 at the service's replicas."""
    root = _fleet(tmp_path, cluster=ONE_GPU)
    for name in ("small", "medium"):
        (root / "services" / f"{name}.yaml").unlink()
    write_tree(root, {"services/large.yaml": _service("large", "mig-3g-40gb", 3)})
    found = [f for f in lint(root) if f.rule == "GEN240"]
    assert len(found) == 1 and found[0].severity is Severity.ERROR
    assert "hold 2 of the 3 replicas" in found[0].message
    assert found[0].location is not None and found[0].location.path.endswith("large.yaml")
    assert found[0].key_path == "replicas"


def test_near_miss_two_3g_slices_fit(tmp_path: Path) -> None:
    """Two 3g slices fill one H100 exactly: no capacity finding."""
    root = _fleet(tmp_path, cluster=ONE_GPU)
    for name in ("small", "medium"):
        (root / "services" / f"{name}.yaml").unlink()
    write_tree(root, {"services/large.yaml": _service("large", "mig-3g-40gb", 2)})
    assert [f for f in lint(root) if f.rule.startswith("GEN24")] == []


def test_fragmentation_is_reported_with_the_order(tmp_path: Path) -> None:
    """3g + 2g + 2×1g fits one H100 only if the 1g slices come first (GEN241)."""
    found = [f for f in lint(_one_gpu_mix(tmp_path)) if f.rule == "GEN241"]
    assert len(found) == 1 and found[0].severity is Severity.WARNING
    message = found[0].message
    assert "'smallest first'" in message and "not in 'service order'" in message
    assert "left Pending" in message and "headroom" in message


def test_near_miss_one_1g_slice_fits_every_order(tmp_path: Path) -> None:
    """3g + 2g + 1g packs in every arrival order: no fragmentation finding."""
    assert [f for f in lint(_one_gpu_mix(tmp_path, small=1)) if f.rule.startswith("GEN24")] == []


def _cluster(root: Path) -> ClusterPlan:
    return load_plan(root).clusters[0]


def test_every_order_is_tried_and_verified(tmp_path: Path) -> None:
    """Each order's packing obeys the allocator rules; the 1g-first order uses every slice."""
    cluster = _cluster(_one_gpu_mix(tmp_path))
    matcher = Matcher()
    analyzed = [(s, analyze_service(matcher, cluster, s)) for s in cluster.services]
    models = cluster_models(cluster, analyzed, matcher.model)
    demands = demands_of(analyzed, models, at_max=False)
    fits = {}
    for order in ORDERS:
        packing = pack(models, demands, order)
        assert verify_packing(packing, demands) == []
        fits[order] = not packing.unplaced
    assert fits[Order.SMALLEST] and not fits[Order.LARGEST]
    packing = pack(models, demands, Order.SMALLEST)
    names = sorted(models["h100-dyn"].slot_name(s) for p in packing.placements for s in p.slots)
    assert names == ["gpu-0-mig-1g10gb-19-0", "gpu-0-mig-1g10gb-19-1",
                     "gpu-0-mig-2g20gb-14-2", "gpu-0-mig-3g40gb-9-4"]


_PROFILES = ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb")


@pytest.fixture(scope="module")
def two_gpu_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One node with two dynamic H100s and a class per profile."""
    root = tmp_path_factory.mktemp("prop") / "profiles"
    classes = "\n---\n".join(
        f"kind: GPUClass\nname: p-{p.replace('.', '-')}\ndevice_type: mig\n"
        f"match: {{mig_profile: {p}}}" for p in _PROFILES
    )
    write_tree(root, {
        "cluster.yaml": ONE_GPU.replace("gpus_per_node: 1", "gpus_per_node: 2"),
        "classes.yaml": classes,
    })
    return root


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                   HealthCheck.function_scoped_fixture])
@given(counts=st.lists(st.integers(0, 4), min_size=len(_PROFILES), max_size=len(_PROFILES)),
       order=st.sampled_from(ORDERS))
def test_property_packings_obey_the_allocator_and_the_placement_grid(
    two_gpu_root: Path, counts: list[int], order: Order
) -> None:
    """Counters are never over-consumed and every packing is one the allocator rules allow;
    the slices placed on each GPU form a layout the static placement checker accepts."""
    services = {
        f"services/s{i}.yaml": _service(f"s{i}", f"p-{p.replace('.', '-')}", n)
        for i, (p, n) in enumerate(zip(_PROFILES, counts, strict=True)) if n
    }
    root = two_gpu_root.parent / f"case-{abs(hash((tuple(counts), order)))}"
    if root.exists():
        shutil.rmtree(root)
    shutil.copytree(two_gpu_root, root)
    write_tree(root, services)
    cluster = _cluster(root)
    matcher = Matcher()
    analyzed = [(s, analyze_service(matcher, cluster, s)) for s in cluster.services]
    if not analyzed:
        return
    models = cluster_models(cluster, analyzed, matcher.model)
    demands = demands_of(analyzed, models, at_max=False)
    packing = pack(models, demands, order)
    assert verify_packing(packing, demands) == []
    model = models["h100-dyn"]
    gpu = gpu_catalog().lookup("h100-sxm5-80gb")
    for index in range(2):
        layout: dict[str, int] = {}
        for p in packing.placements:
            for slot in p.slots:
                name = model.slot_name(slot)
                if name.startswith(f"gpu-{index}-mig-"):
                    profile = str(model.device(slot).attributes["gpu.nvidia.com/profile"])
                    layout[profile] = layout.get(profile, 0) + 1
        if layout:
            assert check_layout(gpu, layout).valid, layout
    placed = len(packing.placements) + len(packing.unplaced)
    assert placed == sum(counts)


def test_class_by_memory_takes_the_smallest_slice(tmp_path: Path) -> None:
    """A MIG class by memory (19Gi) is placed on a dynamic pool and gets 1g.20gb, the first
    device in the driver's order with that much memory."""
    root = _fleet(tmp_path, cluster=ONE_GPU)
    for name in ("small", "medium", "large"):
        (root / "services" / f"{name}.yaml").unlink()
    write_tree(root, {
        "gpu-classes/mig-19g.yaml": """\
            kind: GPUClass
            name: mig-19g
            device_type: mig
            match: {min_memory: 19Gi}
            """,
        "services/m.yaml": _service("m", "mig-19g", 2),
    })
    assert lint(root) == []
    cluster = _cluster(root)
    matcher = Matcher()
    analyzed = [(s, analyze_service(matcher, cluster, s)) for s in cluster.services]
    models = cluster_models(cluster, analyzed, matcher.model)
    packing = pack(models, demands_of(analyzed, models, at_max=False), ORDERS[0])
    names = [models["h100-dyn"].slot_name(s) for p in packing.placements for s in p.slots]
    assert names == ["gpu-0-mig-1g20gb-15-0", "gpu-0-mig-1g20gb-15-2"]


def test_explain_carries_the_fragmentation_finding(tmp_path: Path) -> None:
    """gen explain of the service the finding is about shows GEN241 instead of 'fits'."""
    from gen.cli._explain import explain_text

    text, ok = explain_text(load_plan(_one_gpu_mix(tmp_path)), "a-large", (), False, False)
    assert ok and "GEN241" in text and "every replica fits" not in text
