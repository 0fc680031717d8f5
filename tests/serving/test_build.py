"""vLLM manifests carry every production setting hand-written pods get wrong."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from gen.pipeline import load_plan, render_outputs

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module", name="objects")
def _objects() -> dict[str, dict[str, Any]]:
    import yaml

    plan = load_plan(ROOT / "profiles", base=ROOT)
    outputs, findings, _ = render_outputs(plan, templates_dir=None, out_label="out",
                                          validator="none")
    assert findings == []
    return {str(p): yaml.safe_load(data) for p, data in outputs.items()
            if p.suffix == ".yaml" and p.name != "kustomization.yaml"}


def _deployment(objects: dict[str, dict[str, Any]], name: str) -> dict[str, Any]:
    (dep,) = [o for o in objects.values()
              if o["kind"] == "Deployment" and o["metadata"]["name"] == name]
    return dep


def _arg(args: list[str], flag: str) -> str:
    return args[args.index(flag) + 1]


def test_engine_args_explicit(objects: dict[str, dict[str, Any]]) -> None:
    """`vllm serve` in exec form with every memory-relevant flag explicit."""
    container = _deployment(objects, "llama-70b")["spec"]["template"]["spec"]["containers"][0]
    assert container["command"] == ["vllm", "serve"]
    args = container["args"]
    assert args[0] == "meta-llama/Llama-3.1-70B-Instruct"
    assert _arg(args, "--tensor-parallel-size") == "4"
    assert _arg(args, "--max-model-len") == "32768"
    for flag in ("--gpu-memory-utilization", "--max-num-seqs", "--max-num-batched-tokens",
                 "--served-model-name", "--shutdown-timeout"):
        assert flag in args


def test_pinned_image(objects: dict[str, dict[str, Any]]) -> None:
    """Every container image has a version tag or digest, never latest."""
    for obj in objects.values():
        if obj["kind"] != "Deployment":
            continue
        for container in obj["spec"]["template"]["spec"]["containers"]:
            image = container["image"]
            assert "@sha256:" in image or (":" in image.rsplit("/", 1)[-1]
                                           and not image.endswith(":latest")), image


def test_shm_sized_for_parallelism(objects: dict[str, dict[str, Any]]) -> None:
    """/dev/shm is a memory emptyDir, larger for TP 4 than for one device."""
    def shm(name: str) -> str:
        spec = _deployment(objects, name)["spec"]["template"]["spec"]
        (vol,) = [v for v in spec["volumes"] if v["name"] == "shm"]
        assert vol["emptyDir"]["medium"] == "Memory"
        mounts = spec["containers"][0]["volumeMounts"]
        assert {"name": "shm", "mountPath": "/dev/shm"} in mounts
        return str(vol["emptyDir"]["sizeLimit"])
    assert shm("llama-70b") == "32Gi"
    assert shm("llama-8b") == "2Gi"


def test_probes_and_graceful_shutdown(objects: dict[str, dict[str, Any]]) -> None:
    """A startup probe covers loading a 140 GB checkpoint; grace covers preStop + drain."""
    spec = _deployment(objects, "llama-70b")["spec"]["template"]["spec"]
    container = spec["containers"][0]
    startup = container["startupProbe"]
    assert startup["httpGet"]["path"] == "/health"
    assert startup["periodSeconds"] * startup["failureThreshold"] >= 600
    assert container["livenessProbe"]["httpGet"]["path"] == "/health"
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    prestop = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    drain = int(_arg(container["args"], "--shutdown-timeout"))
    assert spec["terminationGracePeriodSeconds"] >= prestop + drain


def test_restricted_pod_security(objects: dict[str, dict[str, Any]]) -> None:
    """Every vLLM pod meets Pod Security 'restricted' with UID 2000 / GID 0."""
    for obj in objects.values():
        if obj["kind"] != "Deployment" or obj["metadata"]["labels"].get(
                "app.kubernetes.io/component") != "inference":
            continue
        pod = obj["spec"]["template"]["spec"]
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] == 2000
        assert pod["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault"
        assert pod["enableServiceLinks"] is False
        for container in pod["containers"]:
            ctx = container["securityContext"]
            assert ctx["allowPrivilegeEscalation"] is False
            assert ctx["capabilities"]["drop"] == ["ALL"]
            assert "privileged" not in ctx


def test_secrets_by_reference_only(objects: dict[str, dict[str, Any]]) -> None:
    """HF token and API key come from secretKeyRef; no env var holds a literal secret."""
    env = _deployment(objects, "llama-70b")["spec"]["template"]["spec"]["containers"][0]["env"]
    by_name = {e["name"]: e for e in env}
    assert by_name["HF_TOKEN"]["valueFrom"]["secretKeyRef"] == {"name": "hf-token",
                                                               "key": "token"}
    assert "value" not in by_name["VLLM_API_KEY"]


def test_gpu_through_claim_or_extended_resource(objects: dict[str, dict[str, Any]]) -> None:
    """DRA clusters reference the claim template; device-plugin clusters ask nvidia.com/gpu."""
    dra = _deployment(objects, "llama-70b")["spec"]["template"]["spec"]
    [claim] = dra["resourceClaims"]
    assert claim["name"] == "gpu"
    assert re.fullmatch(r"llama-70b-gpu-[0-9a-f]{8}", claim["resourceClaimTemplateName"])
    assert dra["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    edge = _deployment(objects, "qwen-7b")["spec"]["template"]["spec"]
    assert "resourceClaims" not in edge
    assert edge["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "1"


def test_node_selection_from_pool(objects: dict[str, dict[str, Any]]) -> None:
    """Pods select their pool's labels (MIG pools: the mig.config label) and tolerate taints."""
    spec = _deployment(objects, "llama-8b")["spec"]["template"]["spec"]
    assert spec["nodeSelector"] == {"gen.dev/pool": "h100-mig",
                                    "nvidia.com/mig.config": "h100-mixed"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in \
        spec["tolerations"]


def test_service_pdb_autoscaling_monitoring(objects: dict[str, dict[str, Any]]) -> None:
    """Named ports, a PDB, a KEDA ScaledObject on queue depth and a ServiceMonitor."""
    kinds = {(o["kind"], o["metadata"]["name"]) for o in objects.values()}
    for kind in ("Service", "PodDisruptionBudget", "ScaledObject", "ServiceMonitor",
                 "NetworkPolicy", "PersistentVolumeClaim"):
        assert any(k == kind and n.startswith("llama-70b") for k, n in kinds), kind
    (scaled,) = [o for o in objects.values() if o["kind"] == "ScaledObject"]
    # llama-70b is routed and its picker scraped: it scales on the picker's queue metrics
    # (tests/routing/test_build.py); unrouted, on vLLM's own.
    assert "llm_d_epp_average_queue_size" in scaled["spec"]["triggers"][0]["metadata"]["query"]
    assert "replicas" not in _deployment(objects, "llama-70b")["spec"]
    assert all(o["metadata"]["name"] != "vllm" for o in objects.values()
               if o["kind"] == "Service")


def test_no_literal_secret_in_output(objects: dict[str, dict[str, Any]]) -> None:
    """A scan of every rendered object finds nothing that looks like a credential."""
    from gen.redact import literal_secrets

    for path, obj in objects.items():
        assert list(literal_secrets(obj)) == [], path


def test_omitted_max_model_len_renders_the_largest_that_fits(tmp_path: Path) -> None:
    """No max_model_len: the Deployment passes the longest context every device holds, and
    quantization / enforce_eager reach `vllm serve` as the flags fit budgeted."""
    import yaml

    from gen.fleet.sizing import service_fit
    from tests.helpers import LINT_BASE

    service = LINT_BASE["service.yaml"].replace(
        "serving: {max_model_len: 32768}",
        "serving: {max_num_seqs: 32, quantization: fp8, enforce_eager: true}")
    files = {**LINT_BASE, "service.yaml": service}
    root = tmp_path / "profiles"
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    plan = load_plan(root, base=tmp_path)
    (svc,) = plan.clusters[0].services
    assert svc.model is not None
    length, reports = service_fit(svc)
    assert length == min(r.max_model_len_fit for _, r in reports) == svc.model.max_context
    assert all(r.fits and r.quantization == "fp8" and r.enforce_eager for _, r in reports)
    outputs, _, _ = render_outputs(plan, templates_dir=None, out_label="out", validator="none")
    (dep,) = [d for p, data in outputs.items() if p.name.startswith("deployment-")
              for d in [yaml.safe_load(data)]]
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert _arg(args, "--max-model-len") == str(length)
    assert _arg(args, "--quantization") == "fp8"
    assert "--enforce-eager" in args
    assert _arg(args, "--max-num-batched-tokens") == str(reports[0][1].max_num_batched_tokens)
