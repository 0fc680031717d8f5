"""Apple Silicon builder: device plugin, llama.cpp Vulkan pods, selectorless Services to Macs."""

from __future__ import annotations

import os
import plistlib
import shutil
import subprocess
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from gen.apple.build import DRI_NAMESPACE, build
from gen.apple.decide import gguf_file
from gen.fleet.plan import ClusterPlan
from gen.models import InferenceService
from gen.pipeline import load_plan, render_outputs
from tests.helpers import APPLE_GGUF_MODEL, APPLE_VULKAN_SERVICE, write_tree

CLUSTER = """\
    kind: Cluster
    name: lab
    kubernetes_version: "1.34.2"
    allocation: device-plugin
    addons: [prometheus-operator]
    node_pools:
      - name: studio
        platform: apple-vm
        nodes: 2
        apple_vm: {chip: m2-ultra, host_memory_gb: 192, vm_memory_gb: 24}
        labels: {gen.dev/pool: studio}
        taints:
          - {key: gen.dev/apple, effect: NoSchedule}
    """
MODEL = APPLE_GGUF_MODEL + """\
    ---
    kind: GPUClass
    name: apple-venus
    driver: squat.ai
    """
VULKAN = APPLE_VULKAN_SERVICE
MACS = """\
    kind: InferenceService
    name: llama-mac
    model: meta-llama/Llama-3.1-8B-Instruct
    engine: vllm-mlx
    clusters: [lab]
    exposure: {port: 9000}
    auth: {api_key: {name: mac-key, key: token}}
    mac_hosts:
      - {name: studio-a, address: 10.0.0.5, chip: m2-ultra, memory_gb: 192}
      - {name: studio-b, address: "fd00::7", chip: m4-max, memory_gb: 128}
    """


def fleet(tmp_path: Path, **overrides: str) -> Path:
    """A profiles folder with the Apple example documents, some replaced."""
    files = {"cluster.yaml": CLUSTER, "model.yaml": MODEL, "vulkan.yaml": VULKAN,
             "macs.yaml": MACS, **{f"{k}.yaml": v for k, v in overrides.items()}}
    return write_tree(tmp_path / "profiles", {k: v for k, v in files.items() if v})


def cluster_plan(tmp_path: Path, **overrides: str) -> ClusterPlan:
    """The built plan of cluster 'lab'."""
    plan = load_plan(fleet(tmp_path, **overrides))
    return next(c for c in plan.clusters if c.name == "lab")


def rendered(tmp_path: Path, **overrides: str) -> dict[str, Any]:
    """Every rendered output: manifests parsed by path, other files as bytes."""
    plan = load_plan(fleet(tmp_path, **overrides))
    outputs, findings, _ = render_outputs(plan, templates_dir=None, out_label="out",
                                          validator="embedded")
    assert findings == []
    return {
        str(path): (yaml.safe_load(data) if path.suffix == ".yaml" else data)
        for path, data in outputs.items()
    }


def test_device_plugin_daemonset_in_platform_stage(tmp_path: Path) -> None:
    """Each Apple VM pool gets a privileged generic-device-plugin DaemonSet in stage platform."""
    out = rendered(tmp_path)
    ds = out[f"lab/platform/{DRI_NAMESPACE}/daemonset-dri-studio.yaml"]
    spec = ds["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"gen.dev/pool": "studio"}
    assert spec["tolerations"] == [
        {"key": "gen.dev/apple", "effect": "NoSchedule", "operator": "Exists"}
    ]
    container = spec["containers"][0]
    assert container["securityContext"] == {"privileged": True, "readOnlyRootFilesystem": True}
    assert "@sha256:" in container["image"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/health", "port": "http"}
    assert container["args"][:2] == ["--domain", "squat.ai"]
    assert '"name": "dri"' in container["args"][3]
    assert {v["hostPath"]["path"] for v in spec["volumes"]} == {
        "/dev", "/var/lib/kubelet/device-plugins"
    }


def test_plugin_namespace_is_privileged_and_explained(tmp_path: Path) -> None:
    """The plugin's namespace enforces 'privileged' and its file says why."""
    plan = load_plan(fleet(tmp_path))
    outputs, _, _ = render_outputs(plan, templates_dir=None, out_label="out",
                                   validator="none")
    text = outputs[PurePosixPath(f"lab/platform/_cluster/namespace-{DRI_NAMESPACE}.yaml")]
    data = yaml.safe_load(text)
    assert data["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "privileged"
    assert b"hostPath /dev" in text


def test_pool_resource_name_and_sharing_reach_plugin_and_pod(tmp_path: Path) -> None:
    """A custom resource name and sharing count go to the plugin args and the pod request."""
    cluster = CLUSTER.replace(
        "vm_memory_gb: 24}", "vm_memory_gb: 24, resource_name: example.com/venus, sharing: 4}"
    )
    out = rendered(tmp_path, cluster=cluster)
    args = out[f"lab/platform/{DRI_NAMESPACE}/daemonset-dri-studio.yaml"][
        "spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[:2] == ["--domain", "example.com"]
    assert '"count": 4' in args[3] and '"name": "venus"' in args[3]
    pod = out["lab/workloads/inference/deployment-llama-vk.yaml"]["spec"]["template"]["spec"]
    assert pod["containers"][0]["resources"]["limits"]["example.com/venus"] == "1"


def test_llama_server_deployment(tmp_path: Path) -> None:
    """llama-server runs Vulkan with every layer offloaded, metrics, key file and /health."""
    out = rendered(tmp_path)
    pod = out["lab/workloads/inference/deployment-llama-vk.yaml"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    args = container["args"]
    assert args[args.index("-m") + 1] == "/models/llama-8b-q8_0.gguf"
    assert args[args.index("-ngl") + 1] == "999"
    assert args[args.index("-c") + 1] == "16384"
    assert args[args.index("--parallel") + 1] == "1"
    assert "--metrics" in args
    assert args[args.index("--api-key-file") + 1] == "/var/run/secrets/gen/api-key"
    assert container["resources"]["requests"]["squat.ai/dri"] == "1"
    assert container["startupProbe"]["httpGet"]["path"] == "/health"
    assert container["startupProbe"]["failureThreshold"] * 10 >= 300
    assert pod["nodeSelector"] == {"gen.dev/pool": "studio"}
    secret = next(v for v in pod["volumes"] if v["name"] == "api-key")["secret"]
    assert secret["secretName"] == "vk-key"
    assert secret["items"] == [{"key": "key", "path": "api-key"}]


def _run_container(container: dict[str, Any], key: str | None,
                   tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run the container's command + args as the kubelet would, with a fake llama-server on
    PATH and the Secret's key (None: no file) where the volume mounts it."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "llama-server"
    fake.write_text('#!/bin/sh\necho started; printf "arg=%s\\n" "$@"\n')
    fake.chmod(0o755)
    key_path = "/var/run/secrets/gen/api-key"
    local_key = tmp_path / "api-key"
    if key is not None:
        local_key.write_text(key)
    argv = [*container["command"], *container["args"]]
    argv = [str(local_key) if a == key_path else a for a in argv]
    env = {"PATH": f"{bin_dir}:{os.defpath}"}
    return subprocess.run(argv, capture_output=True, text=True, env=env, check=False)


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
@pytest.mark.parametrize(("key", "starts"), [
    (None, False), ("", False), ("\n\n", False), (" \t\n", False),
    ("sk-real-key\n", True), ("\nsk-real-key", True),
])
def test_llama_server_pod_refuses_to_start_with_an_empty_secret(
    key: str | None, starts: bool, tmp_path: Path
) -> None:
    """An empty Secret value (or blank lines) would make llama-server serve without
    authentication: the pod's command exits 78 before llama-server starts; a real key starts
    it with the rendered args."""
    out = rendered(tmp_path)
    container = out["lab/workloads/inference/deployment-llama-vk.yaml"][
        "spec"]["template"]["spec"]["containers"][0]
    assert container["command"][:2] == ["/bin/sh", "-c"]
    assert container["command"][-1] == "llama-server"
    result = _run_container(container, key, tmp_path)
    if starts:
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines()[0] == "started"
        assert "arg=--api-key-file" in result.stdout.splitlines()
    else:
        assert result.returncode == 78
        assert "started" not in result.stdout
        assert "refusing to start without authentication" in result.stderr


def test_llama_server_pod_is_restricted(tmp_path: Path) -> None:
    """The model server meets Pod Security 'restricted': non-root, no privilege, no hostPath."""
    out = rendered(tmp_path)
    pod = out["lab/workloads/inference/deployment-llama-vk.yaml"]["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    sc = pod["containers"][0]["securityContext"]
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert "privileged" not in sc
    assert all("hostPath" not in v for v in pod["volumes"])


def test_llama_server_companions(tmp_path: Path) -> None:
    """The llama-server service also gets a Service, model PVC, PDB and NetworkPolicy."""
    out = rendered(tmp_path)
    svc = out["lab/workloads/inference/service-llama-vk.yaml"]
    assert svc["spec"]["selector"]["app.kubernetes.io/name"] == "llama-vk"
    assert svc["spec"]["ports"][0]["targetPort"] == "http"
    assert "lab/workloads/inference/persistentvolumeclaim-llama-vk-models.yaml" in out
    assert "lab/workloads/inference/poddisruptionbudget-llama-vk.yaml" in out
    assert "lab/workloads/inference/networkpolicy-llama-vk.yaml" in out
    monitor = out["lab/workloads/inference/servicemonitor-llama-vk.yaml"]
    auth = monitor["spec"]["endpoints"][0]["authorization"]
    assert auth["credentials"] == {"name": "vk-key", "key": "key"}


def test_mac_hosts_selectorless_service_and_endpointslices(tmp_path: Path) -> None:
    """Mac hosts get a selectorless Service and one EndpointSlice per address family."""
    out = rendered(tmp_path)
    svc = out["lab/workloads/inference/service-llama-mac.yaml"]
    assert "selector" not in svc["spec"]
    assert svc["spec"]["ports"][0]["port"] == 9000
    v4 = out["lab/workloads/inference/endpointslice-llama-mac-ipv4.yaml"]
    v6 = out["lab/workloads/inference/endpointslice-llama-mac-ipv6.yaml"]
    assert v4["apiVersion"] == "discovery.k8s.io/v1"
    assert v4["metadata"]["labels"]["kubernetes.io/service-name"] == "llama-mac"
    assert (v4["addressType"], v6["addressType"]) == ("IPv4", "IPv6")
    assert [e["addresses"] for e in v4["endpoints"]] == [["10.0.0.5"]]
    assert [e["addresses"] for e in v6["endpoints"]] == [["fd00::7"]]
    assert v4["ports"] == [{"name": "http", "port": 9000, "protocol": "TCP",
                            "appProtocol": "http"}]
    assert not any(p.rsplit("/", 1)[-1].startswith("endpoints-") for p in out)


def test_mac_service_file_notes_pod_network_and_key(tmp_path: Path) -> None:
    """The Service's file says traffic leaves the pod network and the API key is required."""
    plan = load_plan(fleet(tmp_path))
    outputs, _, _ = render_outputs(plan, templates_dir=None, out_label="out",
                                   validator="none")
    text = outputs[PurePosixPath("lab/workloads/inference/service-llama-mac.yaml")].decode()
    assert "leaves the pod network" in text
    assert "API key" in text and "mac-key" in text


def test_mac_hosts_launchd_plists_and_readme(tmp_path: Path) -> None:
    """Each Mac gets a launchd plist under _hosts/, without the key; the service a README."""
    out = rendered(tmp_path)
    for host in ("studio-a", "studio-b"):
        raw = out[f"_hosts/llama-mac/{host}/dev.gen.llama-mac.plist"]
        job = plistlib.loads(raw)
        assert job["Label"] == "dev.gen.llama-mac"
        assert "/Library/Application Support/gen/llama-mac/api-key" in job["ProgramArguments"]
        assert "--port" in job["ProgramArguments"]
        assert job["ProgramArguments"][job["ProgramArguments"].index("--port") + 1] == "9000"
    readme = out["_hosts/llama-mac/README.md"].decode()
    assert "launchctl bootstrap system" in readme
    assert "/Library/Application Support/gen/llama-mac/api-key" in readme


def test_hosts_files_are_outside_synced_paths(tmp_path: Path) -> None:
    """Plists and READMEs are FileSpecs under _hosts/, never under a cluster folder (the
    other files of the plan are gen's own metadata, under _meta/)."""
    plan = cluster_plan(tmp_path)
    assert plan.files
    assert all(f.path.parts[0] in ("_hosts", "_meta") for f in plan.files)
    assert any(f.path.parts[0] == "_hosts" for f in plan.files)


def test_mac_llama_server_reads_gguf_from_service_folder(tmp_path: Path) -> None:
    """A Metal llama-server job loads the GGUF from the service folder with a fitted context."""
    macs = MACS.replace("engine: vllm-mlx", "engine: llama-server").replace(
        "meta-llama/Llama-3.1-8B-Instruct", "org/Llama-8B-GGUF/llama-8b-q8_0.gguf")
    out = rendered(tmp_path, macs=macs)
    argv = plistlib.loads(out["_hosts/llama-mac/studio-a/dev.gen.llama-mac.plist"])[
        "ProgramArguments"]
    assert argv[argv.index("-m") + 1] == (
        "/Library/Application Support/gen/llama-mac/models/llama-8b-q8_0.gguf")
    engine = argv[argv.index("llama-server"):]
    assert engine[engine.index("-c") + 1] == "131072"
    assert engine[engine.index("--parallel") + 1] == "1"
    assert "--api-key-file" in engine


def test_no_apple_pool_renders_no_plugin(tmp_path: Path) -> None:
    """A cluster without Apple VM pools gets no device-plugin namespace or DaemonSet."""
    cluster = """\
        kind: Cluster
        name: lab
        kubernetes_version: "1.34.2"
        allocation: device-plugin
        node_pools:
          - {name: l4, gpu: l4, nodes: 1, driver_version: "580.95.05"}
        """
    plan = cluster_plan(tmp_path, cluster=cluster, vulkan="")
    specs, _ = build(plan)
    assert all(s.context.get("namespace") != DRI_NAMESPACE for s in specs)
    assert all(s.context.get("name") != DRI_NAMESPACE for s in specs)


def test_builder_skips_what_lint_reports(tmp_path: Path) -> None:
    """A VM larger than krunkit allows builds no llama-server Deployment and raises nothing."""
    cluster = CLUSTER.replace("vm_memory_gb: 24", "vm_memory_gb: 64")
    specs, _ = build(cluster_plan(tmp_path, cluster=cluster))
    assert not any(s.template == "apple/deployment.yaml.j2" for s in specs)


@pytest.mark.parametrize(("model", "file", "expected"), [
    ("org/Repo-GGUF/file-Q8_0.gguf", None, "file-Q8_0.gguf"),
    ("org/Repo-GGUF/file-Q8_0.gguf", "Q4_K_M/file-Q4_K_M.gguf", "Q4_K_M/file-Q4_K_M.gguf"),
    ("meta-llama/Llama-3.1-8B-Instruct", "llama-8b-q8_0.gguf", "llama-8b-q8_0.gguf"),
    ("meta-llama/Llama-3.1-8B-Instruct", None, None),
    ("local-model", None, None),
])
def test_gguf_file(model: str, file: str | None, expected: str | None) -> None:
    """gguf_file wins; else a model id ending in .gguf names its file; else none (GEN611)."""
    service = InferenceService.model_validate({
        "kind": "InferenceService", "name": "x", "model": model, "engine": "llama-server",
        "clusters": ["lab"], "gguf_file": file,
    })
    assert gguf_file(service) == expected


def test_gguf_file_reaches_the_pod_and_gpu_may_be_omitted(tmp_path: Path) -> None:
    """A service with gguf_file and no gpu request: -m names the file, one device per pod."""
    vulkan = VULKAN.replace("model: org/Llama-8B-GGUF/llama-8b-q8_0.gguf",
                            "model: org/Llama-8B-GGUF/llama-8b-q8_0.gguf\n    gguf_file: "
                            "sub/llama-8b-q8_0.gguf").replace(
                                "    gpu: {gpu_class: apple-venus}\n", "")
    out = rendered(tmp_path, vulkan=vulkan, model=APPLE_GGUF_MODEL)
    container = out["lab/workloads/inference/deployment-llama-vk.yaml"][
        "spec"]["template"]["spec"]["containers"][0]
    assert container["args"][container["args"].index("-m") + 1] == (
        "/models/sub/llama-8b-q8_0.gguf")
    assert container["resources"]["limits"]["squat.ai/dri"] == "1"


def test_max_num_seqs_reaches_llama_server_as_parallel(tmp_path: Path) -> None:
    """serving.max_num_seqs 3 with 16384 tokens: --parallel 3 and -c 49152 (3 full slots)."""
    vulkan = VULKAN.replace("serving: {max_model_len: 16384}",
                            "serving: {max_model_len: 16384, max_num_seqs: 3}")
    out = rendered(tmp_path, vulkan=vulkan)
    args = out["lab/workloads/inference/deployment-llama-vk.yaml"][
        "spec"]["template"]["spec"]["containers"][0]["args"]
    assert args[args.index("--parallel") + 1] == "3"
    assert args[args.index("-c") + 1] == str(3 * 16384)
