"""Apple Silicon lint rules (GEN6xx) fire on what would fail on Macs, located at the cause."""

from __future__ import annotations

from pathlib import Path

import pytest

from gen.apple.decide import fit_report, host_device, vm_device
from gen.errors import Finding, ProfileValidationError, Severity
from gen.fleet.plan import ServicePlan
from gen.models import NodePool
from gen.models.service import MacHost
from gen.pipeline import lint
from gen.rules import RULES
from gen.serving.model_catalog import LLMSpec
from tests.helpers import APPLE_GGUF_MODEL, APPLE_VULKAN_SERVICE, REPO, copy_fleet, write_tree

CLUSTER = """\
    kind: Cluster
    name: lab
    kubernetes_version: "1.34.2"
    allocation: device-plugin
    node_pools:
      - name: studio
        platform: apple-vm
        nodes: 2
        apple_vm: {chip: m2-ultra, host_memory_gb: 192, vm_memory_gb: 24}
        labels: {gen.dev/pool: studio}
      - {name: l4, gpu: l4, nodes: 1, driver_version: "580.95.05", labels: {pool: l4}}
    """
MODELS = """\
    kind: Model
    name: org/Llama-70B-8bit
    parameters: 70553706496
    layers: 80
    hidden_size: 8192
    attention_heads: 64
    kv_heads: 8
    head_dim: 128
    max_context: 131072
    weight_dtype: int8
    ---
    kind: GPUClass
    name: apple-venus
    driver: squat.ai
    ---
    kind: GPUClass
    name: l4
    match: {product: l4}
    ---
""" + APPLE_GGUF_MODEL
VULKAN = APPLE_VULKAN_SERVICE
MACS = """\
    kind: InferenceService
    name: llama-mac
    model: org/Llama-70B-8bit
    engine: vllm-mlx
    clusters: [lab]
    auth: {api_key: {name: mac-key, key: key}}
    mac_hosts:
      - {name: studio-a, address: 10.0.0.5, chip: m2-ultra, memory_gb: 192}
    """


def run(tmp_path: Path, **overrides: str) -> list[Finding]:
    """Lint a small Apple fleet with some documents replaced (an empty text drops one)."""
    files = {"cluster.yaml": CLUSTER, "models.yaml": MODELS, "vulkan.yaml": VULKAN,
             "macs.yaml": MACS, **{f"{k}.yaml": v for k, v in overrides.items()}}
    root = write_tree(tmp_path / "profiles", {k: v for k, v in files.items() if v})
    return lint(root, base=tmp_path)


def rules(findings: list[Finding]) -> set[str]:
    """The rule ids found."""
    return {f.rule for f in findings}


def only(findings: list[Finding], rule: str) -> Finding:
    """The single finding of ``rule``."""
    hits = [f for f in findings if f.rule == rule]
    assert len(hits) == 1, findings
    return hits[0]


def test_clean_fleet_has_no_findings(tmp_path: Path) -> None:
    """The small Apple fleet lints clean."""
    assert run(tmp_path) == []


def test_vllm_on_apple_pool_is_an_error_naming_both_paths(tmp_path: Path) -> None:
    """engine vllm pinned to an Apple VM pool fails and points to llama-server and mac_hosts."""
    service = VULKAN.replace("engine: llama-server", "engine: vllm").replace(
        "org/Llama-8B-GGUF/llama-8b-q8_0.gguf", "meta-llama/Llama-3.1-8B-Instruct")
    finding = only(run(tmp_path, vulkan=service), "GEN601")
    assert finding.severity is Severity.ERROR
    assert finding.location is not None and finding.location.path.endswith("vulkan.yaml")
    assert finding.location.line == 6  # node_pool
    assert "Vulkan" in finding.message
    assert "llama-server" in finding.hint and "mac_hosts" in finding.hint


def _spec(name: str, params: int, layers: int, hidden: int, heads: int) -> LLMSpec:
    return LLMSpec(id=name, parameters=params, layers=layers, hidden_size=hidden,
                   attention_heads=heads, kv_heads=8, head_dim=128, max_context=131072,
                   weight_dtype="int8")


def test_70b_at_8_bits_fits_ultra_host_not_krunkit_vm(tmp_path: Path) -> None:
    """A 70B model at 8 bits fits a 192 GB Ultra host but not a krunkit VM near 60 GB."""
    findings = run(tmp_path)
    plan_service = _service_plan(tmp_path)
    host = host_device(MacHost(name="a", address="10.0.0.1", chip="m2-ultra", memory_gb=192))
    assert host.kind == "metal" and host.memory_bytes == 144 * 2**30
    assert fit_report(plan_service, host, None).fits
    pool = NodePool.model_validate({
        "name": "vm", "platform": "apple-vm", "nodes": 1,
        "apple_vm": {"chip": "m2-ultra", "host_memory_gb": 192, "vm_memory_gb": 2},
    })
    vm = vm_device(pool)
    assert 58 * 2**30 < vm.memory_bytes < 60 * 2**30
    assert not fit_report(plan_service, vm, 4096).fits
    assert "GEN602" not in rules(findings)


def _service_plan(tmp_path: Path) -> ServicePlan:
    from gen.pipeline import load_plan

    root = tmp_path / "plan"
    write_tree(root, {"cluster.yaml": CLUSTER, "models.yaml": MODELS, "macs.yaml": MACS})
    plan = load_plan(root)
    return next(s for c in plan.clusters for s in c.services if s.service.name == "llama-mac")


def test_70b_on_krunkit_vm_is_gen602_with_vm_hint(tmp_path: Path) -> None:
    """A 70B model on a llama-server VM pool does not fit: the hint explains the RAM/VRAM split."""
    service = VULKAN.replace("org/Llama-8B-GGUF/llama-8b-q8_0.gguf", "org/Llama-70B-8bit")
    finding = only(run(tmp_path, vulkan=service), "GEN602")
    assert "Venus" in finding.message and "krunkit" in finding.message
    assert finding.key_path == "serving.max_model_len"
    assert "62 GiB" in finding.hint and "mac_hosts" in finding.hint


def test_model_too_big_for_small_mac(tmp_path: Path) -> None:
    """A 70B model at 8 bits does not fit a 64 GB Mac's Metal budget."""
    macs = MACS.replace("chip: m2-ultra, memory_gb: 192", "chip: m2-max, memory_gb: 64")
    finding = only(run(tmp_path, macs=macs), "GEN602")
    assert "studio-a" in finding.message
    assert "iogpu.wired_limit_mb" in finding.hint


@pytest.mark.parametrize("where", ["pool", "host"])
def test_unknown_chip(tmp_path: Path, where: str) -> None:
    """An Apple chip gen does not know is an error, with the nearest names."""
    if where == "pool":
        finding = only(run(tmp_path, cluster=CLUSTER.replace("m2-ultra", "m2-ultraa")), "GEN603")
        assert finding.key_path == "node_pools[0].apple_vm.chip"
    else:
        finding = only(run(tmp_path, macs=MACS.replace("m2-ultra", "m9-ultra")), "GEN603")
        assert finding.key_path == "mac_hosts[0].chip"
    assert finding.severity is Severity.ERROR
    assert "m2-ultra" in finding.message


def test_memory_apple_does_not_sell_is_a_warning(tmp_path: Path) -> None:
    """An M3 Ultra with 192 GB (sold with 96, 256 or 512) is a warning, not an error."""
    finding = only(run(tmp_path, macs=MACS.replace("m2-ultra", "m3-ultra")), "GEN604")
    assert finding.severity is Severity.WARNING
    assert "96 GB, 256 GB, 512 GB" in finding.message
    assert finding.key_path == "mac_hosts[0].memory_gb"


def test_vm_larger_than_krunkit_allows(tmp_path: Path) -> None:
    """A VM above krunkit's 60 GB RAM limit is an error at vm_memory_gb."""
    finding = only(run(tmp_path, cluster=CLUSTER.replace("vm_memory_gb: 24", "vm_memory_gb: 64")),
                   "GEN605")
    assert finding.key_path == "node_pools[0].apple_vm.vm_memory_gb"
    assert "60 GB" in finding.message


def test_malformed_device_resource(tmp_path: Path) -> None:
    """A device resource without a domain is an error at resource_name."""
    cluster = CLUSTER.replace("vm_memory_gb: 24}", "vm_memory_gb: 24, resource_name: dri}")
    finding = only(run(tmp_path, cluster=cluster), "GEN605")
    assert finding.key_path == "node_pools[0].apple_vm.resource_name"


def test_llama_server_without_apple_pool(tmp_path: Path) -> None:
    """llama-server pinned to an NVIDIA pool has no Apple VM node to run on."""
    service = VULKAN.replace("node_pool: studio", "node_pool: l4")
    finding = only(run(tmp_path, vulkan=service), "GEN606")
    assert finding.key_path == "node_pool"


def test_pod_memory_above_vm(tmp_path: Path) -> None:
    """A pod asking more memory than the VM node has cannot be scheduled."""
    finding = only(run(tmp_path, vulkan=VULKAN.replace("memory: 8Gi", "memory: 64Gi")),
                   "GEN607")
    assert finding.key_path == "resources.memory"


def test_more_than_one_venus_gpu(tmp_path: Path) -> None:
    """A VM node has one Venus GPU: gpu.count 2 is an error."""
    service = VULKAN.replace("gpu_class: apple-venus}", "gpu_class: apple-venus, count: 2}")
    assert only(run(tmp_path, vulkan=service), "GEN607").key_path == "gpu.count"


def test_vllm_mlx_with_max_model_len(tmp_path: Path) -> None:
    """vllm-mlx has no max-model-len flag: setting it is an error, and nothing is written."""
    macs = MACS.rstrip() + "\n    serving: {max_model_len: 8192}\n"
    finding = only(run(tmp_path, macs=macs), "GEN608")
    assert "vllm-mlx" in finding.message
    assert finding.key_path == "serving.max_model_len"


def test_fp8_kv_cache_on_apple_engine_warns(tmp_path: Path) -> None:
    """An fp8 KV cache is not given to Apple engines: the setting is flagged as ignored."""
    service = VULKAN.replace("{max_model_len: 16384}",
                             "{max_model_len: 16384, kv_cache_dtype: fp8}")
    finding = only(run(tmp_path, vulkan=service), "GEN608")
    assert finding.severity is Severity.WARNING


def test_autoscaling_on_apple_engine_warns(tmp_path: Path) -> None:
    """Autoscaling is not rendered for Apple engines: the setting is flagged as ignored."""
    service = VULKAN + "    autoscaling: {max_replicas: 3}\n"
    finding = only(run(tmp_path, vulkan=service), "GEN608")
    assert finding.severity is Severity.WARNING
    assert finding.key_path == "autoscaling"


def test_pool_without_labels_warns(tmp_path: Path) -> None:
    """An Apple VM pool without labels cannot be targeted: a warning."""
    cluster = CLUSTER.replace("        labels: {gen.dev/pool: studio}\n", "")
    finding = only(run(tmp_path, cluster=cluster), "GEN609")
    assert finding.severity is Severity.WARNING


def test_endpointslice_in_argocd_cluster_warns(tmp_path: Path) -> None:
    """Argo CD excludes EndpointSlice by default: a mac_hosts service there warns."""
    cluster = CLUSTER.replace(
        "allocation: device-plugin\n",
        "allocation: device-plugin\n    gitops: {engine: argocd, repo_url: 'https://x.example/r.git'}\n",
    )
    finding = only(run(tmp_path, cluster=cluster), "GEN610")
    assert finding.severity is Severity.WARNING
    assert "resource.exclusions" in finding.hint


def test_no_finding_says_bare_mps(tmp_path: Path) -> None:
    """Messages and hints never say a bare 'mps' (Apple is apple-metal; NVIDIA is nvidia-mps)."""
    service = VULKAN.replace("engine: llama-server", "engine: vllm")
    for finding in run(tmp_path, vulkan=service, macs=MACS.replace("m2-ultra", "m3-ultra")):
        for text in (finding.message, finding.hint):
            assert " mps" not in text.lower() and "mps " not in text.lower()


def test_rule_ids_are_documented() -> None:
    """Every GEN6xx rule has a description in RULES."""
    assert {f"GEN6{n:02d}" for n in range(1, 12)} <= set(RULES)


def test_example_fleet_lints_without_errors(tmp_path: Path) -> None:
    """The repository's example fleet (mac-lab, llama-8b-vulkan, llama-70b-mac) has no errors."""
    assert (REPO / "profiles/clusters/mac-lab.yaml").is_file()
    root = copy_fleet(tmp_path / "fleet")
    findings = lint(root / "profiles", base=root)
    assert [f for f in findings if f.severity is Severity.ERROR] == []
    assert rules(findings) <= {"GEN610"}


# --------------------------------------------------------------------------- GEN611


def test_llama_server_without_gguf_file(tmp_path: Path) -> None:
    """A model id that names no .gguf file and no gguf_file: GEN611 at the model line; no
    Deployment is rendered from a guessed file name."""
    models = MODELS.replace("name: org/Llama-8B-GGUF/llama-8b-q8_0.gguf",
                            "name: org/Llama-8B-GGUF")
    vulkan = VULKAN.replace("model: org/Llama-8B-GGUF/llama-8b-q8_0.gguf",
                            "model: org/Llama-8B-GGUF")
    finding = only(run(tmp_path, models=models, vulkan=vulkan), "GEN611")
    assert finding.severity is Severity.ERROR
    assert finding.key_path == "model"
    assert finding.location is not None and finding.location.path.endswith("vulkan.yaml")
    assert finding.location.line == 3  # model
    assert "gguf_file" in finding.hint


def test_llama_server_with_gguf_file_is_clean(tmp_path: Path) -> None:
    """Near miss: the same model id with gguf_file set (and no gpu request) lints clean."""
    models = MODELS.replace("name: org/Llama-8B-GGUF/llama-8b-q8_0.gguf",
                            "name: org/Llama-8B-GGUF")
    vulkan = VULKAN.replace(
        "model: org/Llama-8B-GGUF/llama-8b-q8_0.gguf",
        "model: org/Llama-8B-GGUF\n    gguf_file: llama-8b-q8_0.gguf",
    ).replace("    gpu: {gpu_class: apple-venus}\n", "")
    assert run(tmp_path, models=models, vulkan=vulkan) == []


def test_mac_llama_server_without_gguf_file(tmp_path: Path) -> None:
    """GEN611 on a native Mac llama-server too, once per service."""
    macs = MACS.replace("engine: vllm-mlx", "engine: llama-server")
    finding = only(run(tmp_path, macs=macs), "GEN611")
    assert finding.location is not None and finding.location.path.endswith("macs.yaml")


@pytest.mark.parametrize("value", ["/abs/x.gguf", "../x.gguf", "model.bin", "a//b.gguf"])
def test_gguf_file_must_be_a_relative_gguf_path(tmp_path: Path, value: str) -> None:
    """gguf_file outside the model volume or not a .gguf file is a schema error."""
    vulkan = VULKAN.rstrip() + f"\n    gguf_file: {value!r}\n"
    with pytest.raises(ProfileValidationError) as err:
        run(tmp_path, vulkan=vulkan)
    (finding,) = err.value.findings
    assert finding.rule == "GEN002" and finding.key_path == "gguf_file"


def test_gguf_file_only_for_llama_server(tmp_path: Path) -> None:
    """gguf_file on a vLLM engine is a schema error."""
    macs = MACS.rstrip() + "\n    gguf_file: x.gguf\n"
    with pytest.raises(ProfileValidationError) as err:
        run(tmp_path, macs=macs)
    assert "llama-server" in err.value.findings[0].message


# --------------------------------------------------------------------------- slots


def test_too_many_llama_server_slots(tmp_path: Path) -> None:
    """8 slots of 16384 tokens on a 24 GB VM's window: GEN602 at serving.max_num_seqs, and
    the hint says how many slots fit."""
    vulkan = VULKAN.replace("serving: {max_model_len: 16384}",
                            "serving: {max_model_len: 65536, max_num_seqs: 8}")
    finding = only(run(tmp_path, vulkan=vulkan), "GEN602")
    assert finding.key_path == "serving.max_num_seqs"
    assert finding.location is not None and finding.location.line == 8  # serving
    assert "8 slot(s) × 65536 tokens" in finding.message
    assert "serving.max_num_seqs: 3" in finding.hint


def test_slots_that_fit_are_clean(tmp_path: Path) -> None:
    """Near miss: 3 slots of 65536 tokens fit the same window."""
    vulkan = VULKAN.replace("serving: {max_model_len: 16384}",
                            "serving: {max_model_len: 65536, max_num_seqs: 3}")
    assert run(tmp_path, vulkan=vulkan) == []
