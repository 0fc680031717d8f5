"""Tests for the `gen fit` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gen.cli import cli
from gen.nvidia.gpus import gpu_catalog
from gen.serving.model_catalog import model_catalog


@pytest.fixture
def runner() -> CliRunner:
    """A click test runner."""
    return CliRunner()


def test_fits_exits_0_with_json(runner: CliRunner) -> None:
    """A model that fits prints {"fits": true, ...} and exits 0."""
    result = runner.invoke(cli, ["fit", "--model", "meta-llama/Llama-3.1-8B-Instruct",
                                 "--gpu", "NVIDIA H100 80GB HBM3", "--json"],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["fits"] is True
    assert data["errors"] == []
    assert data["per_gpu_bytes"]["weights"] > 0


def test_does_not_fit_exits_1_with_errors(runner: CliRunner) -> None:
    """A model that does not fit prints {"fits": false, "errors": [...]} and exits 1."""
    result = runner.invoke(cli, ["fit", "--model", "meta-llama/Llama-3.1-70B-Instruct",
                                 "--gpu", "h100-sxm5-80gb", "--json"])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["fits"] is False
    assert data["errors"]


def test_tp_and_mig_options(runner: CliRunner) -> None:
    """--gpus/--tp split the model; --mig sizes against the slice."""
    tp4 = runner.invoke(cli, ["fit", "--model", "meta-llama/Llama-3.1-70B-Instruct",
                              "--gpu", "0x2330", "--gpus", "4", "--tp", "4", "--json"])
    assert tp4.exit_code == 0, tp4.output
    assert json.loads(tp4.stdout)["parallelism"]["tensor_parallel"] == 4
    mig = runner.invoke(cli, ["fit", "--model", "meta-llama/Llama-3.1-8B-Instruct",
                              "--gpu", "h100-sxm5-80gb", "--mig", "3g.40gb",
                              "--max-model-len", "32768", "--kv-cache-dtype", "fp8",
                              "--gpu-memory-utilization", "0.85", "--json"])
    assert mig.exit_code == 0, mig.output
    data = json.loads(mig.stdout)
    assert data["device"]["is_mig"] is True
    assert data["settings"] == {
        "max_model_len": 32768, "gpu_memory_utilization": 0.85, "kv_cache_dtype": "fp8",
        "max_num_seqs": 256, "max_num_batched_tokens": 2048, "quantization": None,
        "enforce_eager": False, "vllm_version": "0.33.0",
    }


def test_text_output_shows_the_budget_table(runner: CliRunner) -> None:
    """Without --json the command prints the per-GPU budget table."""
    result = runner.invoke(cli, ["fit", "--model", "Qwen/Qwen3-8B", "--gpu", "l4"],
                           catch_exceptions=False)
    assert result.exit_code in (0, 1)
    for label in ("budget (0.90)", "− weights", "= KV cache available", "= headroom",
                  "largest max_model_len that fits"):
        assert label in result.stdout


def test_unknown_model_is_a_lookup_error(runner: CliRunner) -> None:
    """An unknown model exits 1 with the nearest names on stderr and no traceback."""
    result = runner.invoke(cli, ["fit", "--model", "meta-llama/Llama-3.1-8B",
                                 "--gpu", "h100-sxm5-80gb"])
    assert result.exit_code == 1
    assert "unknown model" in result.stderr
    assert "meta-llama/Llama-3.1-8B-Instruct" in result.stderr
    assert "Traceback" not in result.output


def test_unknown_mig_profile_is_a_lookup_error(runner: CliRunner) -> None:
    """A MIG profile the GPU lacks exits 1 and lists the GPU's profiles."""
    result = runner.invoke(cli, ["fit", "--model", "Qwen/Qwen3-8B", "--gpu", "h100-sxm5-80gb",
                                 "--mig", "3g.20gb"])
    assert result.exit_code == 1
    assert "3g.40gb" in result.stderr


@pytest.mark.parametrize("args", [["--tp", "0"], ["--gpu-memory-utilization", "1.5"],
                                  ["--kv-cache-dtype", "int4"]])
def test_bad_option_values_are_usage_errors(runner: CliRunner, args: list[str]) -> None:
    """Out-of-range option values exit 2 (usage)."""
    result = runner.invoke(cli, ["fit", "--model", "Qwen/Qwen3-8B", "--gpu", "l4", *args])
    assert result.exit_code == 2


@pytest.mark.slow  # the whole catalog: every model on every GPU and MIG profile
def test_every_model_on_every_device_gets_a_decision(runner: CliRunner) -> None:
    """Every catalog model on every catalog GPU and MIG profile yields a decision, no crash."""
    models = [m.id for m in model_catalog().all()]
    devices: list[list[str]] = []
    for gpu in gpu_catalog().all():
        devices.append(["--gpu", gpu.id])
        devices.extend(["--gpu", gpu.id, "--mig", name] for name in gpu.mig_profile_names)
    assert len(models) >= 20 and len(devices) > 30
    for model in models:
        for device in devices:
            result = runner.invoke(cli, ["fit", "--model", model, *device, "--json"])
            assert result.exit_code in (0, 1), (model, device, result.output)
            data = json.loads(result.stdout)
            assert data["fits"] is (result.exit_code == 0)
            assert data["fits"] or data["errors"]


def test_gpt_oss_120b_at_full_context_does_not_fit_one_h100(runner: CliRunner) -> None:
    """The issue's acceptance command: it does not fit, and the text names the terms."""
    result = runner.invoke(cli, ["fit", "--model", "openai/gpt-oss-120b", "--gpu",
                                 "h100-sxm5-80gb", "--max-model-len", "131072"])
    assert result.exit_code == 1
    assert "does NOT fit" in result.stdout
    for label in ("CUDA-visible total", "− weights", "− activation peak", "− CUDA graphs",
                  "mxfp4 MoE padding", "sampler"):
        assert label in result.stdout
    # vLLM 0.33 (gen's pin) samples with FlashInfer: the pool, not the overhead, falls short.
    assert "larger than the available KV cache memory" in result.stdout


def test_new_flags_reach_the_report(runner: CliRunner) -> None:
    """--max-num-seqs, --max-num-batched-tokens, --quantization, --enforce-eager and vLLM's
    KV-cache dtypes are taken as given."""
    result = runner.invoke(cli, ["fit", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu",
                                 "h100-sxm5-80gb", "--max-num-seqs", "32",
                                 "--max-num-batched-tokens", "4096", "--quantization", "fp8",
                                 "--enforce-eager", "--kv-cache-dtype", "fp8_e5m2", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["settings"]["max_num_seqs"] == 32
    assert data["settings"]["max_num_batched_tokens"] == 4096
    assert data["settings"]["quantization"] == "fp8"
    assert data["settings"]["enforce_eager"] is True
    assert data["settings"]["kv_cache_dtype"] == "fp8_e5m2"
    assert data["per_gpu_bytes"]["cuda_graphs"] == 0


def test_service_needs_no_model_flags(runner: CliRunner) -> None:
    """--service and --model are exclusive; neither is a usage error."""
    assert runner.invoke(cli, ["fit"]).exit_code == 2
    both = runner.invoke(cli, ["fit", "--service", "llama-70b", "--model", "x"])
    assert both.exit_code == 2


def test_unknown_service_is_a_located_error(runner: CliRunner) -> None:
    """An unknown --service exits 1 naming the known ones."""
    from tests.serving.test_build import ROOT

    result = runner.invoke(cli, ["fit", "--service", "nope", "--profiles",
                                 str(ROOT / "profiles")])
    assert result.exit_code == 1
    assert "unknown service 'nope'" in result.stderr
    assert "llama-70b" in result.stderr


def test_fit_service_is_lints_decision_for_every_profile(runner: CliRunner) -> None:
    """For each in-cluster vLLM service of profiles/: `gen fit --service` gives the verdict and
    numbers lint uses, and the rendered Deployment (a group's leader) passes the settings fit
    assumed."""
    import yaml

    from gen.fleet.roles import units
    from gen.fleet.sizing import service_fit
    from gen.pipeline import lint, load_plan, render_outputs
    from tests.serving.test_build import ROOT

    plan = load_plan(ROOT / "profiles", base=ROOT)
    gen301 = {f.message.split(" does not fit")[0] for f in lint(ROOT / "profiles", base=ROOT)
              if f.rule == "GEN301"}
    outputs, _, _ = render_outputs(plan, templates_dir=None, out_label="out", validator="none")
    deployments = {}
    for path, data in outputs.items():
        if path.suffix != ".yaml":
            continue
        for doc in yaml.safe_load_all(data):
            if isinstance(doc, dict) and doc.get("kind") == "Deployment":
                deployments[doc["metadata"]["name"]] = doc["spec"]["template"]
            elif isinstance(doc, dict) and doc.get("kind") == "LeaderWorkerSet":
                # A replica that spans nodes: the leader serves the settings fit assumed.
                template = doc["spec"]["leaderWorkerTemplate"]["leaderTemplate"]
                deployments[doc["metadata"]["name"]] = template
    checked = 0
    for cluster in plan.clusters:
        for svc in cluster.services:
            if svc.service.engine != "vllm" or svc.service.gpu is None or svc.model is None:
                continue
            result = runner.invoke(cli, ["fit", "--service", svc.service.name,
                                         "--cluster", cluster.name,
                                         "--profiles", str(ROOT / "profiles"), "--json"])
            data = json.loads(result.stdout)
            # A disaggregated service: one entry per role, each its role's Deployment.
            for unit in units(cluster, svc):
                (entry,) = [e for e in data["clusters"] if e.get("role") == unit.role]
                name = unit.plan.service.name
                length, reports = service_fit(unit.plan)
                assert entry["max_model_len"] == length
                assert [d["fits"] for d in entry["devices"]] == [r.fits for _, r in reports]
                assert [d["per_gpu_bytes"] for d in entry["devices"]] == [
                    r.to_json()["per_gpu_bytes"] for _, r in reports]
                assert (svc.service.model in gen301) is not data["fits"]
                args = deployments[name]["spec"]["containers"][0]["args"]
                flag = {a: args[i + 1] for i, a in enumerate(args[:-1]) if a.startswith("--")}
                settings = entry["devices"][0]["settings"]
                assert int(flag["--max-model-len"]) == settings["max_model_len"] == length
                assert int(flag["--max-num-seqs"]) == settings["max_num_seqs"]
                assert int(flag["--max-num-batched-tokens"]) == settings["max_num_batched_tokens"]
                assert float(flag["--gpu-memory-utilization"]) == \
                    settings["gpu_memory_utilization"]
                assert flag["--kv-cache-dtype"] == settings["kv_cache_dtype"]
                assert int(flag["--tensor-parallel-size"]) == \
                    entry["devices"][0]["parallelism"]["tensor_parallel"]
            checked += 1
    assert checked >= 3


def test_docs_fit_examples_print_what_the_page_shows(runner: CliRunner) -> None:
    """Every `$ gen fit …` line of docs/fit.md prints the line that follows it first."""
    import re
    import shlex
    from pathlib import Path

    text = (Path(__file__).resolve().parents[2] / "docs" / "fit.md").read_text("utf-8")
    examples = re.findall(r"^\$ gen (fit .*)\n(.*)$", text, flags=re.MULTILINE)
    assert len(examples) >= 2
    for command, first_line in examples:
        result = runner.invoke(cli, shlex.split(command))
        assert result.stdout.splitlines()[0] == first_line, command


def test_a_non_vllm_service_is_pointed_elsewhere(runner: CliRunner) -> None:
    """A llama-server service has no vLLM budget: exit 1 pointing at `gen explain`."""
    from tests.serving.test_build import ROOT

    result = runner.invoke(cli, ["fit", "--service", "llama-8b-vulkan", "--profiles",
                                 str(ROOT / "profiles")])
    assert result.exit_code == 1
    assert "not an in-cluster vLLM service" in result.stderr


def test_a_service_without_devices_does_not_fit(runner: CliRunner, tmp_path: Path) -> None:
    """A vLLM service whose class no pool offers has no budget: GEN304's case, exit 1."""
    from tests.helpers import LINT_BASE

    service = LINT_BASE["service.yaml"].replace(
        "gpu: {gpu_class: h100, count: 4}", "gpu: {gpu_class: mig-3g}").replace(
        "parallelism: {tensor: 4}", "").replace(
        "meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-8B-Instruct")
    layout = LINT_BASE["layout.yaml"].replace("3g.40gb: 1, ", "")
    root = tmp_path / "profiles"
    root.mkdir()
    for name, text in {**LINT_BASE, "service.yaml": service, "layout.yaml": layout}.items():
        (root / name).write_text(text)
    result = runner.invoke(cli, ["fit", "--service", "llama-70b", "--profiles", str(root)])
    assert result.exit_code == 1
    assert "(GEN304)" in result.stdout


@pytest.mark.parametrize(("gpu", "version", "seqs", "tokens"), [
    # vllm-project/vllm vllm/engine/arg_utils.py get_batch_defaults @ v0.33.0 and @ v0.21.0
    ("l4", "0.33.0", 256, 2048),
    ("a100-sxm4-80gb", "0.33.0", 256, 2048),
    ("h100-sxm5-80gb", "0.33.0", 1024, 8192),
    ("b200", "0.33.0", 1024, 16384),
    ("l4", "0.21.0", 256, 2048),
    ("a100-sxm4-80gb", "0.21.0", 256, 2048),
    ("h100-sxm5-80gb", "0.21.0", 1024, 8192),
    ("b200", "v0.21.0-cu129", 1024, 8192),
])
def test_defaults_are_those_of_the_release(runner: CliRunner, gpu: str, version: str,
                                           seqs: int, tokens: int) -> None:
    """Without --max-num-seqs/--max-num-batched-tokens, the release's own defaults for the
    device: the ≥ 160 GiB tier (B200) exists from vLLM 0.28 on."""
    result = runner.invoke(cli, ["fit", "--model", "meta-llama/Llama-3.1-8B-Instruct",
                                 "--gpu", gpu, "--max-model-len", "8192",
                                 "--vllm-version", version, "--json"], catch_exceptions=False)
    settings = json.loads(result.stdout)["settings"]
    assert (settings["max_num_seqs"], settings["max_num_batched_tokens"]) == (seqs, tokens)
    assert settings["vllm_version"] == version.lstrip("v").split("-")[0]


def test_the_pinned_release_is_the_default(runner: CliRunner) -> None:
    """No --vllm-version: the release of the image gen pins (gen/data/pins.yaml)."""
    from gen.pins import pin
    from gen.serving.vllm_releases import VllmVersion

    result = runner.invoke(cli, ["fit", "--model", "meta-llama/Llama-3.1-8B-Instruct",
                                 "--gpu", "l4", "--max-model-len", "8192", "--json"])
    pinned = str(VllmVersion.parse(pin("vllm-openai").version))
    assert json.loads(result.stdout)["settings"]["vllm_version"] == pinned


def test_a_version_that_is_not_one_is_an_input_error(runner: CliRunner) -> None:
    """--vllm-version latest: exit 1 naming the option, no traceback."""
    result = runner.invoke(cli, ["fit", "--model", "meta-llama/Llama-3.1-8B-Instruct",
                                 "--gpu", "l4", "--vllm-version", "latest"])
    assert result.exit_code == 1
    assert "--vllm-version: 'latest' is not a vLLM version" in result.output
    assert "Traceback" not in result.output


def test_model_question_says_what_it_assumed(runner: CliRunner) -> None:
    """`gen fit --model` lists the settings it was not given, with what a service that leaves
    them out runs with; the options given are not listed; --json carries the same list."""
    args = ["fit", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "h100-sxm5-80gb",
            "--max-model-len", "32768"]
    text = runner.invoke(cli, args, catch_exceptions=False).stdout
    assumed = text.split("\n  assumed (", 1)[1]
    assert "max_num_seqs=1024" in assumed
    assert "service: serving.max_num_seqs, default 64" in assumed
    assert "max_model_len=" not in assumed
    data = json.loads(runner.invoke(cli, [*args, "--json"], catch_exceptions=False).stdout)
    settings = [a["setting"] for a in data["assumed"]]
    assert "max-num-seqs" in settings
    assert "max-model-len" not in settings
    every = runner.invoke(cli, [*args[:5], "--json"], catch_exceptions=False).stdout
    assert "max-model-len" in [a["setting"] for a in json.loads(every)["assumed"]]
