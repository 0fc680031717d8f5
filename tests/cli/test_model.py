"""Tests for `gen model import`: a Model profile from Hugging Face files, offline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gen.cli import cli
from gen.models.model import ModelProfile
from gen.serving.model_catalog import LLMSpec, model_catalog

FIXTURE = Path(__file__).resolve().parents[1] / "serving" / "data" / "qwen3-30b-a3b" / "config.json"


@pytest.fixture
def runner() -> CliRunner:
    """A click test runner."""
    return CliRunner()


def test_import_prints_a_profile_that_reads_back_as_the_catalog_entry(runner: CliRunner) -> None:
    """The printed YAML is a valid Model profile equal to the catalog's Qwen3-30B-A3B."""
    result = runner.invoke(cli, ["model", "import", str(FIXTURE), "--name", "Qwen/Qwen3-30B-A3B"],
                           catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    modeline, written = result.stdout.splitlines()[:2]
    assert modeline.startswith("# yaml-language-server: $schema=")
    assert written.startswith("# Written by `gen model import`")
    profile = ModelProfile.model_validate(yaml.safe_load(result.stdout))
    assert LLMSpec.from_profile(profile) == model_catalog().lookup("Qwen/Qwen3-30B-A3B")


def test_import_of_a_cache_entry_names_the_model(runner: CliRunner, tmp_path: Path) -> None:
    """A models--ORG--NAME folder gives the name; --license-gated is carried."""
    snapshot = tmp_path / "models--Qwen--Qwen3-30B-A3B" / "snapshots" / "abc"
    snapshot.mkdir(parents=True)
    shutil.copy(FIXTURE, snapshot / "config.json")
    result = runner.invoke(cli, ["model", "import", str(tmp_path / "models--Qwen--Qwen3-30B-A3B"),
                                 "--license-gated"], catch_exceptions=False)
    data = yaml.safe_load(result.stdout)
    assert (data["kind"], data["name"], data["license_gated"]) == (
        "Model", "Qwen/Qwen3-30B-A3B", True)


def test_import_error_is_located_and_exits_1(runner: CliRunner, tmp_path: Path) -> None:
    """A bad field is reported as file:line:col, key path and message on stderr; exit 1."""
    path = tmp_path / "config.json"
    config = json.loads(FIXTURE.read_text())
    config["num_hidden_layers"] = -1
    path.write_text(json.dumps(config, indent=2))
    result = runner.invoke(cli, ["model", "import", str(path)])
    assert result.exit_code == 1
    assert result.stdout == ""
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1)
                if "num_hidden_layers" in text)
    assert f"config.json:{line}:3: error GEN002: num_hidden_layers: must be an integer" \
        in result.stderr
    assert "Traceback" not in result.stderr


def test_import_of_nothing_exits_1(runner: CliRunner, tmp_path: Path) -> None:
    """A path that does not exist is an error, not a crash."""
    result = runner.invoke(cli, ["model", "import", str(tmp_path / "missing")])
    assert result.exit_code == 1
    assert "no such file or folder" in result.stderr


def test_parameters_option_counts_an_unknown_architecture(runner: CliRunner,
                                                          tmp_path: Path) -> None:
    """--parameters gives the count gen cannot derive; without it the error says so."""
    config = json.loads(FIXTURE.read_text())
    config["architectures"] = ["NovelMoeForCausalLM"]
    (tmp_path / "config.json").write_text(json.dumps(config, indent=2))
    refused = runner.invoke(cli, ["model", "import", str(tmp_path)])
    assert refused.exit_code == 1
    assert "config.json:2:3: error GEN002: architectures: cannot count" in refused.stderr
    result = runner.invoke(cli, ["model", "import", str(tmp_path), "--name", "acme/novel",
                                 "--parameters", "30500000000"], catch_exceptions=False)
    data = yaml.safe_load(result.stdout)
    assert (data["parameters"], data["architecture"]) == (30_500_000_000, "NovelMoeForCausalLM")
