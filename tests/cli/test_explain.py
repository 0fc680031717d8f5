from __future__ import annotations

import textwrap
from pathlib import Path

import click
import pytest
import yaml
from click.testing import CliRunner

from gen.cli import cli

ROOT = Path(__file__).resolve().parents[2]
PROFILES = str(ROOT / "profiles")

UNSAT = """\
kind: Cluster
name: c1
kubernetes_version: "1.34.2"
allocation: dra
node_pools:
  - {name: full, gpu: h100-sxm5-80gb, gpus_per_node: 8, nodes: 2, driver_version: "580.95.05"}
---
kind: GPUClass
name: big
match: {min_memory: 80Gi}
---
kind: InferenceService
name: svc
model: meta-llama/Llama-3.2-3B-Instruct
clusters: [c1]
gpu: {gpu_class: big}
serving: {max_model_len: 4096}
"""


@pytest.fixture
def runner() -> CliRunner:
    """A click runner."""
    return CliRunner()


def test_explain_full_gpu_service(runner: CliRunner) -> None:
    """A satisfiable service: matches per pool, nodes that host it, fit, exit 0."""
    result = runner.invoke(cli, ["explain", "llama-70b", "--profiles", PROFILES],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "cluster prod-us-east (resource.k8s.io/v1)" in out
    assert "match     8 × NVIDIA H100 80GB HBM3 per node (32 in pool)" in out
    assert "4 of 4 node(s) can host a replica (2 per node)" in out
    assert "no match  8 × NVIDIA H100 80GB HBM3 MIG 3g.40gb per node" in out
    assert "type 'mig' != 'gpu'" in out
    assert "verdict: satisfiable" in out
    assert "fit: meta-llama/Llama-3.1-70B-Instruct on NVIDIA H100 80GB HBM3" in out


def test_explain_mig_service_with_runbook(runner: CliRunner) -> None:
    """A MIG service matches the 3g.40gb slices; --runbook appends the cluster's runbook."""
    result = runner.invoke(cli, ["explain", "llama-8b", "--runbook", "--profiles", PROFILES],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "match     8 × NVIDIA H100 80GB HBM3 MIG 3g.40gb per node (16 in pool)" in result.stdout
    assert "# MIG runbook for cluster prod-us-east" in result.stdout
    assert "nvidia.com/mig.config=h100-mixed" in result.stdout


def test_explain_runbook_without_service(runner: CliRunner) -> None:
    """'gen explain --runbook --cluster NAME' (the GEN103 hint) prints only the runbook."""
    result = runner.invoke(
        cli, ["explain", "--runbook", "--cluster", "prod-us-east", "--profiles", PROFILES],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("# MIG runbook for cluster prod-us-east")


def test_explain_unsatisfiable_exits_1(runner: CliRunner, tmp_path: Path) -> None:
    """An unsatisfiable claim is explained selector by selector and exits 1."""
    (tmp_path / "fleet.yaml").write_text(textwrap.dedent(UNSAT))
    result = runner.invoke(cli, ["explain", "svc", "--profiles", str(tmp_path)])
    assert result.exit_code == 1
    assert "class 'big' selector #0: memory 81559Mi < 80Gi" in result.stdout
    assert "verdict: UNSATISFIABLE" in result.stdout
    assert "error GEN204" in result.stdout


def test_explain_slices_are_resourceslices(runner: CliRunner, tmp_path: Path) -> None:
    """--slices prints one node's ResourceSlice per pool as YAML."""
    (tmp_path / "fleet.yaml").write_text(textwrap.dedent(UNSAT))
    result = runner.invoke(cli, ["explain", "--slices", "--profiles", str(tmp_path)],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.output
    docs = [d for d in yaml.safe_load_all(result.stdout) if d]
    assert docs[0]["kind"] == "ResourceSlice"
    assert len(docs[0]["spec"]["devices"]) == 8


def test_explain_unknown_service_lists_known(runner: CliRunner) -> None:
    """An unknown service exits 1 and names the known services."""
    result = runner.invoke(cli, ["explain", "nope", "--profiles", PROFILES])
    assert result.exit_code == 1
    assert "unknown service 'nope'; known:" in result.stderr
    assert "llama-70b" in result.stderr


def test_explain_cluster_the_service_does_not_run_in(runner: CliRunner) -> None:
    """--cluster naming a cluster outside the service's clusters exits 1."""
    result = runner.invoke(
        cli, ["explain", "llama-70b", "--cluster", "research-eu", "--profiles", PROFILES]
    )
    assert result.exit_code == 1
    assert "does not run in research-eu" in result.stderr


def test_explain_needs_a_service_or_flag(runner: CliRunner) -> None:
    """No SERVICE and no --runbook/--slices is a usage error (exit 2)."""
    result = runner.invoke(cli, ["explain", "--profiles", PROFILES])
    assert result.exit_code == 2


def test_explain_json_matches_the_text(runner: CliRunner, tmp_path: Path) -> None:
    """--json prints the versioned explanation, with the same exit code as the text."""
    import json

    (tmp_path / "fleet.yaml").write_text(textwrap.dedent(UNSAT))
    result = runner.invoke(cli, ["explain", "svc", "--json", "--profiles", str(tmp_path)])
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    assert data["schema_version"] == 1 and data["ok"] is False
    (svc,) = data["clusters"][0]["services"]
    assert svc["claims"][0]["satisfiable"] is False
    assert [f["rule"] for f in svc["findings"]] == ["GEN204"]
    ok = runner.invoke(cli, ["explain", "llama-70b", "--json", "--profiles", PROFILES],
                       catch_exceptions=False)
    assert ok.exit_code == 0 and json.loads(ok.stdout)["ok"] is True


def test_profiles_option_is_one_declaration() -> None:
    """render, lint and explain take the same --profiles option."""
    from gen.cli._explain import explain_command
    from gen.cli._lint import lint_command
    from gen.cli._render import render_command

    def option(command: object) -> dict[str, object]:
        assert isinstance(command, click.Command)
        (param,) = [p for p in command.params if p.name == "profiles_dir"]
        info = param.to_info_dict()
        info.pop("type")
        return {**info, "help": getattr(param, "help", None)}

    assert option(explain_command) == option(lint_command) == option(render_command)


def test_slices_svg_draws_each_dynamic_gpu(tmp_path: Path) -> None:
    """--slices --svg DIR writes one packing diagram per used dynamic MIG GPU."""
    import xml.etree.ElementTree as ET

    fleet = Path(__file__).resolve().parents[1] / "fixtures" / "dynamic-mig"
    out = tmp_path / "svg"
    result = CliRunner().invoke(cli, ["explain", "--slices", "--svg", str(out),
                                      "--profiles", str(fleet)])
    assert result.exit_code == 0, result.output
    assert "h100-dyn node 0 gpu-0: 0-3 3g.40gb (large), 4-7 3g.40gb (large)" in result.output
    files = sorted(p.name for p in out.iterdir())
    assert files == ["dyn-h100-dyn-0-gpu-0.svg", "dyn-h100-dyn-0-gpu-1.svg"]
    root = ET.fromstring((out / files[0]).read_text())
    assert root.tag.endswith("svg") and "3g.40gb" in (out / files[0]).read_text()
    usage = CliRunner().invoke(cli, ["explain", "--runbook", "--svg", str(out),
                                     "--profiles", str(fleet)])
    assert usage.exit_code == 2
