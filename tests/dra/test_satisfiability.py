from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gen.dra.capacity import check, check_with_matcher
from gen.dra.satisfiability import Matcher, analyze_service
from gen.errors import Finding, Severity
from gen.fleet.plan import Plan
from gen.pipeline import load_plan

D = textwrap.dedent
ROOT = Path(__file__).resolve().parents[2]

CLUSTER = """\
kind: Cluster
name: c1
kubernetes_version: "1.34.2"
allocation: dra
node_pools:
  - {{name: full, gpu: h100-sxm5-80gb, gpus_per_node: 8, nodes: {full_nodes},
     driver_version: "580.95.05"}}
  - {{name: mig, gpu: h100-sxm5-80gb, gpus_per_node: 8, nodes: 1, driver_version: "580.95.05",
     mig_layout: mixed}}
---
kind: MIGLayout
name: mixed
gpu: h100-sxm5-80gb
profiles: {{3g.40gb: 1, 2g.20gb: 1, 1g.10gb: 2}}
---
"""


def _plan(tmp_path: Path, docs: str, full_nodes: int = 1) -> Plan:
    """A plan of cluster c1 (one 8×H100 node, one MIG node) plus ``docs``."""
    text = CLUSTER.format(full_nodes=full_nodes) + docs
    (tmp_path / "fleet.yaml").write_text(text)
    return load_plan(tmp_path)


def _service(name: str, gpu: str, extra: str = "replicas: 1") -> str:
    return (
        f"kind: InferenceService\nname: {name}\nmodel: meta-llama/Llama-3.2-3B-Instruct\n"
        f"clusters: [c1]\ngpu: {gpu}\nserving: {{max_model_len: 4096}}\n{extra}\n"
    )


def _rules(findings: list[Finding], *rules: str) -> list[Finding]:
    return [f for f in findings if f.rule in rules]


def test_min_memory_80gi_misses_h100_with_reason(tmp_path: Path) -> None:
    """80Gi excludes an H100 (81559Mi); the finding names the selector and the values, is
    located at the class's min_memory line (the one to edit) and names the service that uses
    the class as a related location."""
    plan = _plan(tmp_path, "kind: GPUClass\nname: big\nmatch: {min_memory: 80Gi}\n---\n"
                 + _service("svc", "{gpu_class: big}"))
    findings = _rules(check(plan), "GEN204")
    assert len(findings) == 1
    finding = findings[0]
    assert finding.severity is Severity.ERROR
    assert "service 'svc'" in finding.message
    assert (
        "8 NVIDIA H100 80GB HBM3 devices rejected by class 'big' selector #0: "
        "memory 81559Mi < 80Gi" in finding.message
    )
    assert finding.key_path == "match.min_memory"
    assert finding.location is not None and finding.location.path.endswith("fleet.yaml")
    text = (tmp_path / "fleet.yaml").read_text().splitlines()
    assert "min_memory: 80Gi" in text[finding.location.line - 1]
    (used,) = finding.related
    assert used.note == "used by service 'svc' (gpu)"
    assert text[used.line - 1].startswith("gpu: ")


def test_min_memory_79gi_is_satisfiable(tmp_path: Path) -> None:
    """79Gi matches the H100s: no finding."""
    plan = _plan(tmp_path, "kind: GPUClass\nname: big\nmatch: {min_memory: 79Gi}\n---\n"
                 + _service("svc", "{gpu_class: big}"))
    assert _rules(check(plan), "GEN204", "GEN205", "GEN206") == []


def test_runtime_error_is_gen206_with_hint(tmp_path: Path) -> None:
    """A capacity read as an attribute errors at run time; the finding says where it lives."""
    plan = _plan(tmp_path, D("""\
        kind: GPUClass
        name: bad
        cel: ["device.attributes['gpu.nvidia.com'].memory.compareTo(quantity('1Gi')) >= 0"]
        ---
        """) + _service("svc", "{gpu_class: bad}"))
    findings = _rules(check(plan), "GEN206")
    assert findings
    message = findings[0].message
    assert message.startswith("class 'bad' selector #1: CEL runtime error: no such key: memory")
    assert "memory is a capacity: use device.capacity['gpu.nvidia.com'].memory" in message
    assert findings[0].key_path == "cel[0]"


def test_mig_class_matches_mig_devices(tmp_path: Path) -> None:
    """A 3g.40gb class matches the MIG node's 3g.40gb slices, one per GPU."""
    plan = _plan(tmp_path, D("""\
        kind: GPUClass
        name: mig-3g
        device_type: mig
        match: {mig_profile: 3g.40gb}
        ---
        """) + _service("svc", "{gpu_class: mig-3g}", "replicas: 8"))
    assert _rules(check(plan), "GEN204", "GEN205", "GEN206") == []
    cluster = plan.clusters[0]
    (analysis,) = analyze_service(Matcher(), cluster, cluster.services[0])
    by_pool = {p.pool.name: p for p in analysis.pools}
    assert by_pool["mig"].matching_per_node == 8
    assert by_pool["mig"].replicas_per_node == 8
    assert by_pool["full"].replicas_per_node == 0


def test_oversubscription_is_an_error_for_replicas(tmp_path: Path) -> None:
    """Three replicas of 4 GPUs on one 8-GPU node do not fit: GEN205 error."""
    plan = _plan(tmp_path, "kind: GPUClass\nname: h100\nmatch: {product: h100-sxm5-80gb}\n---\n"
                 + _service("svc", "{gpu_class: h100, count: 4}", "replicas: 3"))
    findings = _rules(check(plan), "GEN205")
    assert len(findings) == 1
    assert findings[0].severity is Severity.ERROR
    assert "holds 2 of the 3 replicas" in findings[0].message


def test_oversubscription_at_max_is_a_warning(tmp_path: Path) -> None:
    """The autoscaling minimum fits, the maximum does not: GEN205 warning at max_replicas."""
    plan = _plan(tmp_path, "kind: GPUClass\nname: h100\nmatch: {product: h100-sxm5-80gb}\n---\n"
                 + _service("a", "{gpu_class: h100, count: 2}",
                            "autoscaling: {min_replicas: 2, max_replicas: 3}")
                 + "---\n"
                 + _service("b", "{gpu_class: h100, count: 2}",
                            "autoscaling: {min_replicas: 1, max_replicas: 2}"))
    findings = _rules(check(plan), "GEN205")
    assert [f.severity for f in findings] == [Severity.WARNING]
    assert "service 'b'" in findings[0].message
    assert findings[0].key_path == "autoscaling.max_replicas"


def test_same_parent_uuid_on_mig(tmp_path: Path) -> None:
    """Two 1g.10gb slices of one GPU exist; three on one parent do not."""
    docs = D("""\
        kind: GPUClass
        name: mig-1g
        device_type: mig
        match: {mig_profile: 1g.10gb}
        ---
        """)
    same = "same: [gpu.nvidia.com/parentUUID]"
    plan = _plan(tmp_path, docs + _service("two", f"{{gpu_class: mig-1g, count: 2, {same}}}",
                                           "replicas: 8"))
    assert _rules(check(plan), "GEN204", "GEN205") == []
    plan = _plan(tmp_path, docs + _service("three", f"{{gpu_class: mig-1g, count: 3, {same}}}"))
    (finding,) = _rules(check(plan), "GEN204")
    assert "needs 3 devices sharing gpu.nvidia.com/parentUUID on one node" in finding.message


def test_same_pcie_root_groups_four_gpus(tmp_path: Path) -> None:
    """8 GPUs on one PCIe root do not exist (two roots of four); 4 do."""
    docs = "kind: GPUClass\nname: h100\nmatch: {product: h100-sxm5-80gb}\n---\n"
    same = "same: [resource.kubernetes.io/pcieRoot]"
    plan = _plan(tmp_path, docs + _service("svc", f"{{gpu_class: h100, count: 4, {same}}}",
                                           "replicas: 2"))
    assert _rules(check(plan), "GEN204", "GEN205") == []
    plan = _plan(tmp_path, docs + _service("svc", f"{{gpu_class: h100, count: 8, {same}}}"))
    assert len(_rules(check(plan), "GEN204")) == 1


def test_claim_larger_than_a_node(tmp_path: Path) -> None:
    """16 GPUs per replica cannot come from 8-GPU nodes."""
    plan = _plan(tmp_path, "kind: GPUClass\nname: h100\nmatch: {product: h100-sxm5-80gb}\n---\n"
                 + _service("svc", "{gpu_class: h100, count: 16}"))
    (finding,) = _rules(check(plan), "GEN204")
    assert "needs 16 devices on one node; a node has 8 matching" in finding.message


def test_dead_first_choice_with_working_alternative_warns(tmp_path: Path) -> None:
    """An unsatisfiable first choice is a warning when an alternative can be allocated."""
    plan = _plan(tmp_path, D("""\
        kind: GPUClass
        name: big
        match: {min_memory: 80Gi}
        ---
        kind: GPUClass
        name: h100
        match: {product: h100-sxm5-80gb}
        ---
        """) + _service("svc", "{gpu_class: big, alternatives: [{gpu_class: h100}]}"))
    (finding,) = _rules(check(plan), "GEN204")
    assert finding.severity is Severity.WARNING
    assert finding.message.startswith("first choice of service 'svc'")


def test_all_mode_needs_one_device(tmp_path: Path) -> None:
    """allocationMode All is satisfiable when a node has at least one matching device."""
    plan = _plan(tmp_path, "kind: GPUClass\nname: h100\nmatch: {product: h100-sxm5-80gb}\n---\n"
                 + _service("svc", "{gpu_class: h100, allocation_mode: All}"))
    assert _rules(check(plan), "GEN204", "GEN205") == []


@pytest.mark.parametrize("nodes", [1, 1000])
def test_selectors_run_once_per_shape(tmp_path: Path, nodes: int) -> None:
    """1000 nodes cost the same CEL evaluations as one: 1 shape + 4 MIG shapes, 1 selector."""
    plan = _plan(tmp_path, "kind: GPUClass\nname: h100\nmatch: {product: h100-sxm5-80gb}\n---\n"
                 + _service("svc", "{gpu_class: h100}"), full_nodes=nodes)
    matcher = Matcher()
    check_with_matcher(plan, matcher)
    assert matcher.evaluations == 5


def test_example_fleet_is_clean() -> None:
    """The example fleet in profiles/ has no satisfiability or capacity finding."""
    assert check(load_plan(ROOT / "profiles")) == []


def test_autoscaling_growth_warning_names_the_autoscaled_service(tmp_path: Path) -> None:
    """An autoscaled service growing to max_replicas leaves a fixed service short: the
    warning is at the autoscaled service's max_replicas, never at the fixed one."""
    grower = _service("a-grows", "{gpu_class: big, count: 8}",
                      "autoscaling: {min_replicas: 1, max_replicas: 2}")
    fixed = _service("b-fixed", "{gpu_class: big, count: 8}", "replicas: 1")
    plan = _plan(tmp_path, "kind: GPUClass\nname: big\nmatch: {min_memory: 79Gi}\n---\n"
                 + grower + "---\n" + fixed, full_nodes=2)
    (warning,) = _rules(check(plan), "GEN205")
    assert warning.severity is Severity.WARNING
    assert warning.service == "a-grows" and warning.key_path == "autoscaling.max_replicas"
    assert "'b-fixed' (no autoscaling)" in warning.message
    assert warning.related[0].note == "service 'b-fixed' is left short"


def test_fixed_services_that_fit_get_no_growth_warning(tmp_path: Path) -> None:
    """The near miss: room for both at max_replicas."""
    grower = _service("a-grows", "{gpu_class: big, count: 8}",
                      "autoscaling: {min_replicas: 1, max_replicas: 2}")
    fixed = _service("b-fixed", "{gpu_class: big, count: 8}", "replicas: 1")
    plan = _plan(tmp_path, "kind: GPUClass\nname: big\nmatch: {min_memory: 79Gi}\n---\n"
                 + grower + "---\n" + fixed, full_nodes=3)
    assert _rules(check(plan), "GEN205") == []


def test_a_shortfall_names_the_services_that_take_the_devices(tmp_path: Path) -> None:
    """GEN205 names each service placed before it on the same pools, with what it takes."""
    plan = _plan(tmp_path, D("""\
        kind: GPUClass
        name: h100
        match: {product: h100-sxm5-80gb}
        ---
        kind: InferenceService
        name: a-big
        model: meta-llama/Llama-3.1-70B-Instruct
        clusters: [c1]
        gpu: {gpu_class: h100, count: 4}
        parallelism: {tensor: 4}
        replicas: 2
        serving: {max_model_len: 8192}
        ---
        kind: InferenceService
        name: b-small
        model: meta-llama/Llama-3.1-8B-Instruct
        clusters: [c1]
        gpu: {gpu_class: h100}
        replicas: 1
        serving: {max_model_len: 8192}
        """))
    [finding] = _rules(check(plan), "GEN205")
    assert finding.service == "b-small" and finding.key_path == "replicas"
    assert "service 'a-big' takes 8 device(s) of pool 'full'" in finding.message
    taken = "service 'a-big' takes 8 device(s) of pool 'full'"
    assert [r.note for r in finding.related] == [taken]
    assert finding.related[0].line == 26  # a-big's replicas line (the cluster is lines 1-15)
