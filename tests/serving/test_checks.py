"""Serving lint rules (GEN3xx) fire at the line to change."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import LINT_BASE, errors_of, lint_fleet


def test_model_that_does_not_fit(tmp_path: Path) -> None:
    """70B on two H100s at 128k tokens does not fit: GEN301 at max_model_len."""
    service = LINT_BASE["service.yaml"].replace("count: 4", "count: 2").replace(
        "tensor: 4", "tensor: 2").replace("32768", "131072")
    (finding,) = [
        f for f in lint_fleet(tmp_path, **{"service.yaml": service}) if f.rule == "GEN301"
    ]
    assert "does not fit" in finding.message
    assert finding.key_path == "serving.max_model_len"

def test_bad_tensor_parallel(tmp_path: Path) -> None:
    """TP 3 does not divide Llama 70B's 64 heads: GEN302 at parallelism."""
    service = LINT_BASE["service.yaml"].replace("tensor: 4", "tensor: 3")
    (finding,) = [
        f for f in lint_fleet(tmp_path, **{"service.yaml": service}) if f.rule == "GEN302"
    ]
    assert "divisible" in finding.message

def test_cuda_runtime_newer_than_driver(tmp_path: Path) -> None:
    """An old driver under a CUDA 13 image is GEN303 at the pool's driver_version."""
    cluster = LINT_BASE["cluster.yaml"].replace('"580.95.05"', '"550.54.15"', 1)
    (finding,) = [
        f for f in lint_fleet(tmp_path, **{"cluster.yaml": cluster}) if f.rule == "GEN303"
    ]
    assert "insufficient" in finding.message
    assert finding.key_path == "node_pools[0].driver_version"

def test_cuda_hint_names_the_image_that_fits_the_driver(tmp_path: Path) -> None:
    """GEN303's hint names the release gen knows to fit the pool's driver; for a mirrored
    image it says to mirror that tag and name it in serving.image_of."""
    from gen.serving.engines import compatible_image

    cluster = LINT_BASE["cluster.yaml"].replace('"580.95.05"', '"575.57.08"', 1)
    older = compatible_image("vllm", "575.57.08")
    assert older is not None
    (tmp_path / "plain").mkdir()
    (tmp_path / "mirror").mkdir()
    (plain,) = [f for f in lint_fleet(tmp_path / "plain", **{"cluster.yaml": cluster})
                if f.rule == "GEN303"]
    assert f"pin {older.image} " in (plain.hint or "")
    mirror = LINT_BASE["service.yaml"].replace(
        "serving: {max_model_len: 32768}",
        "serving: {max_model_len: 32768, image: registry.example.com/vllm:2026-11, "
        "image_of: vllm/vllm-openai:v0.33.0}")
    (mirrored,) = [f for f in lint_fleet(tmp_path / "mirror", **{"cluster.yaml": cluster,
                                                                "service.yaml": mirror})
                   if f.rule == "GEN303"]
    assert mirrored.key_path == "serving.image_of"
    assert f"mirror {older.image} " in (mirrored.hint or "")
    assert (mirrored.hint or "").endswith("and name it in serving.image_of")


def test_mig_class_without_layout_has_no_pool(tmp_path: Path) -> None:
    """A MIG class on a cluster whose layouts lack the profile is GEN304."""
    service = LINT_BASE["service.yaml"].replace(
        "gpu: {gpu_class: h100, count: 4}", "gpu: {gpu_class: mig-3g}"
    ).replace("parallelism: {tensor: 4}", "").replace(
        "meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-8B-Instruct"
    ).replace("32768", "8192")
    layout = LINT_BASE["layout.yaml"].replace("3g.40gb: 1, ", "")
    findings = lint_fleet(tmp_path, **{"service.yaml": service, "layout.yaml": layout})
    assert [f.rule for f in errors_of(findings)] == ["GEN304"]


def test_omitted_max_model_len_fails_only_below_the_useful_minimum(tmp_path: Path) -> None:
    """With max_model_len omitted, 70B on two H100s serves the largest context that fits
    (no GEN301); FP8 on one H100 fits under 4,096 tokens: GEN301 at `model`, saying so."""
    service = LINT_BASE["service.yaml"].replace("serving: {max_model_len: 32768}",
                                                "serving: {max_num_seqs: 64}")
    near = service.replace("count: 4", "count: 2").replace("tensor: 4", "tensor: 2")
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    assert not [f for f in lint_fleet(tmp_path / "a", **{"service.yaml": near})
                if f.rule == "GEN301"]
    far = service.replace("count: 4", "count: 1").replace("tensor: 4", "tensor: 1").replace(
        "max_num_seqs: 64", "max_num_seqs: 64, quantization: fp8")
    (finding,) = [f for f in lint_fleet(tmp_path / "b", **{"service.yaml": far})
                  if f.rule == "GEN301"]
    assert "useful minimum of 4096" in finding.message
    assert finding.key_path == "model"
    assert finding.location is not None and finding.location.line == 3  # `model:` line


def test_weights_that_exceed_the_device_are_reported_at_the_gpu_request(tmp_path: Path) -> None:
    """70B in bf16 on one H100: no context length fixes it, so GEN301 is at `gpu`'s count,
    says what the weights alone need, and names the model as related."""
    service = LINT_BASE["service.yaml"].replace("count: 4", "count: 1").replace(
        "tensor: 4", "tensor: 1")
    (finding,) = [f for f in lint_fleet(tmp_path, **{"service.yaml": service})
                  if f.rule == "GEN301"]
    assert finding.key_path == "gpu.count"
    assert "at any context length: the weights alone need 131.4 GiB per GPU" in finding.message
    assert [r.note for r in finding.related] == ["the model"]


def test_quantization_the_checkpoint_lacks(tmp_path: Path) -> None:
    """serving.quantization: awq on a bf16 checkpoint is GEN305 at that key; fp8 (online)
    is not."""
    bad = LINT_BASE["service.yaml"].replace("serving: {max_model_len: 32768}",
                                            "serving: {max_model_len: 32768, quantization: awq}")
    (tmp_path / "bad").mkdir()
    (tmp_path / "good").mkdir()
    findings = lint_fleet(tmp_path / "bad", **{"service.yaml": bad})
    (finding,) = [f for f in findings if f.rule == "GEN305"]
    assert "only fp8 and bitsandbytes quantize a 16-bit checkpoint in flight" in finding.message
    assert finding.key_path == "serving.quantization"
    assert finding.location is not None and finding.location.line == 7
    assert not [f for f in findings if f.rule == "GEN301"]  # not reported as a misfit
    good = bad.replace("quantization: awq", "quantization: fp8")
    assert not [f for f in lint_fleet(tmp_path / "good", **{"service.yaml": good})
                if f.rule in ("GEN301", "GEN305")]


def test_batched_tokens_below_max_num_seqs(tmp_path: Path) -> None:
    """max_num_batched_tokens 256 with 512 sequences is GEN306; 512 with 512 is not."""
    base = LINT_BASE["service.yaml"].replace(
        "serving: {max_model_len: 32768}",
        "serving: {max_model_len: 32768, max_num_seqs: 512, max_num_batched_tokens: 256}")
    (tmp_path / "bad").mkdir()
    (tmp_path / "good").mkdir()
    (finding,) = [f for f in lint_fleet(tmp_path / "bad", **{"service.yaml": base})
                  if f.rule == "GEN306"]
    assert finding.key_path == "serving.max_num_batched_tokens"
    near = base.replace("max_num_batched_tokens: 256", "max_num_batched_tokens: 512")
    assert not [f for f in lint_fleet(tmp_path / "good", **{"service.yaml": near})
                if f.rule == "GEN306"]


def test_bitsandbytes_in_flight_is_keyed_by_the_release(tmp_path: Path) -> None:
    """bitsandbytes on a bf16 checkpoint: accepted where the release has the method (0.27.1,
    in-flight NF4), GEN307 and not GEN305 where it left vLLM's core (0.28.0)."""
    findings = {}
    for tag in ("v0.27.1", "v0.28.0"):
        service = LINT_BASE["service.yaml"].replace(
            "serving: {max_model_len: 32768}",
            f"serving: {{max_model_len: 32768, image: 'vllm/vllm-openai:{tag}', "
            "quantization: bitsandbytes}")
        (tmp_path / tag).mkdir()
        findings[tag] = {f.rule for f in lint_fleet(tmp_path / tag, **{"service.yaml": service})
                         if f.rule in ("GEN305", "GEN307")}
    assert findings == {"v0.27.1": set(), "v0.28.0": {"GEN307"}}
