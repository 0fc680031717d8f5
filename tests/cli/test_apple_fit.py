"""Tests for the `gen apple-fit` command."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from gen.cli import cli
from tests.helpers import REPO


@pytest.fixture
def runner() -> CliRunner:
    """A click test runner."""
    return CliRunner()


def test_service_reproduces_lint_and_the_rendered_context(runner: CliRunner) -> None:
    """--service: the report lint used, with n_ctx equal to the rendered -c."""
    import yaml

    result = runner.invoke(cli, ["apple-fit", "--service", "llama-8b-vulkan", "--profiles",
                                 str(REPO / "profiles"), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.stdout)["reports"]
    assert report["where"] == "cluster mac-lab, pool m2-ultra-vm"
    assert report["settings"]["slots"] == 4
    deployment = yaml.safe_load(
        (REPO / "out/mac-lab/workloads/inference/deployment-llama-8b-vulkan.yaml").read_text())
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert int(args[args.index("-c") + 1]) == report["settings"]["n_ctx"]
    assert int(args[args.index("--parallel") + 1]) == report["settings"]["slots"]


def test_service_on_macs_text(runner: CliRunner) -> None:
    """A mac_hosts service: one report per Mac, each term a line."""
    result = runner.invoke(cli, ["apple-fit", "--service", "llama-70b-mac", "--profiles",
                                 str(REPO / "profiles")], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert result.output.count("host studio-0") == 2
    for term in ("budget", "weights", "kv", "compute", "runtime", "headroom"):
        assert f" {term} " in result.output


def test_direct_does_not_fit_exits_1(runner: CliRunner) -> None:
    """70B at 16 bits on a 64 GB Mac does not fit: exit 1 with the error."""
    result = runner.invoke(cli, ["apple-fit", "--model", "meta-llama/Llama-3.1-70B-Instruct",
                                 "--chip", "m2-max", "--memory-gb", "64", "--json"])
    assert result.exit_code == 1
    (report,) = json.loads(result.stdout)["reports"]
    assert report["fits"] is False and report["errors"]
    assert report["device"]["cap_bytes"] == 48 * 2**30


def test_direct_vm(runner: CliRunner) -> None:
    """--vm-memory-gb budgets krunkit's window (Vulkan), not the Mac's cap."""
    result = runner.invoke(cli, ["apple-fit", "--model", "meta-llama/Llama-3.1-8B-Instruct",
                                 "--chip", "m2-ultra", "--memory-gb", "192", "--vm-memory-gb",
                                 "24", "--max-model-len", "8192", "--json"])
    assert result.exit_code == 0, result.output
    (report,) = json.loads(result.stdout)["reports"]
    assert report["device"]["kind"] == "venus" and report["device"]["cap_bytes"] == 37 * 2**30


@pytest.mark.parametrize("argv", [
    ["apple-fit"],
    ["apple-fit", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--chip", "m2-ultra"],
    ["apple-fit", "--service", "x", "--chip", "m2-ultra"],
    ["apple-fit", "--model", "meta-llama/Llama-3.1-8B-Instruct", "--chip", "m2-ultra",
     "--memory-gb", "192", "--engine", "vllm-mlx", "--parallel", "2"],
])
def test_usage_errors_exit_2(runner: CliRunner, argv: list[str]) -> None:
    """Missing or contradictory options are usage errors."""
    assert runner.invoke(cli, argv).exit_code == 2


def test_unknown_service_exits_1(runner: CliRunner) -> None:
    """A service that is not an Apple service: a located message, exit 1, no traceback."""
    result = runner.invoke(cli, ["apple-fit", "--service", "qwen-7b", "--profiles",
                                 str(REPO / "profiles")])
    assert result.exit_code == 1
    assert "no Apple service 'qwen-7b'" in result.output
    assert "Traceback" not in result.output


def test_docs_example_is_what_the_command_prints(runner: CliRunner) -> None:
    """docs/apple-silicon.md shows `gen apple-fit --service llama-8b-vulkan` as it prints."""
    doc = (REPO / "docs/apple-silicon.md").read_text(encoding="utf-8")
    shown = doc.split("$ gen apple-fit --service llama-8b-vulkan\n", 1)[1].split("```", 1)[0]
    result = runner.invoke(cli, ["apple-fit", "--service", "llama-8b-vulkan", "--profiles",
                                 str(REPO / "profiles")], catch_exceptions=False)
    assert result.output == shown
