from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gen.cli import cli

H100_YAML = """\
name: gpu-0
attributes:
  type: {string: gpu}
  productName: {string: NVIDIA H100 80GB HBM3}
  driverVersion: {version: 580.65.6}
  resource.kubernetes.io/pcieRoot: {string: pci0000:15}
capacity:
  memory: {value: 81559Mi}
"""
MEM = "device.capacity['gpu.nvidia.com'].memory"


@pytest.fixture
def runner() -> CliRunner:
    """A click test runner."""
    return CliRunner()


@pytest.fixture
def device_file(tmp_path: Path) -> Path:
    """An H100 ResourceSlice device entry in YAML."""
    path = tmp_path / "h100.yaml"
    path.write_text(H100_YAML)
    return path


def _json(output: str) -> dict[str, object]:
    data = json.loads(output)
    assert isinstance(data, dict)
    return data


def test_compile_only_json(runner: CliRunner) -> None:
    """Without --device the expression is only compiled; exit 0."""
    result = runner.invoke(cli, ["cel", "eval", "device.driver == 'x'", "--json"])
    assert result.exit_code == 0
    assert _json(result.stdout) == {"compiled": True, "result": None, "error": None}


def test_compile_only_text(runner: CliRunner) -> None:
    """Text mode prints 'compiled'."""
    result = runner.invoke(cli, ["cel", "eval", "device.driver == 'x'"], catch_exceptions=False)
    assert (result.exit_code, result.stdout) == (0, "compiled\n")


def test_compile_error_json(runner: CliRunner) -> None:
    """A compile error exits 1 with compiled=false and the message."""
    result = runner.invoke(cli, ["cel", "eval", "device.driver ==", "--json"])
    assert result.exit_code == 1
    data = _json(result.stdout)
    assert data["compiled"] is False and data["result"] is None
    assert str(data["error"]).startswith("compilation failed:")


def test_compile_error_text(runner: CliRunner) -> None:
    """In text mode a compile error goes to stderr."""
    result = runner.invoke(cli, ["cel", "eval", "1 + 1"])
    assert result.exit_code == 1
    assert "must evaluate to bool" in result.stderr


def test_eval_false_on_h100(runner: CliRunner, device_file: Path) -> None:
    """81559Mi >= 80Gi is false: exit 0, result false."""
    expr = f"{MEM}.compareTo(quantity('80Gi')) >= 0"
    result = runner.invoke(cli, ["cel", "eval", expr, "--device", str(device_file), "--json"])
    assert result.exit_code == 0
    assert _json(result.stdout) == {"compiled": True, "result": False, "error": None}


def test_eval_true_text_and_hint(runner: CliRunner, device_file: Path) -> None:
    """Text mode prints true/false; a false result carries a hint on stderr."""
    ok = runner.invoke(
        cli, ["cel", "eval", f"{MEM}.isGreaterThan(quantity('79Gi'))", "--device", str(device_file)]
    )
    assert (ok.exit_code, ok.stdout) == (0, "true\n")
    miss = runner.invoke(
        cli,
        ["cel", "eval", f"{MEM}.compareTo(quantity('80Gi')) >= 0", "--device", str(device_file)],
    )
    assert (miss.exit_code, miss.stdout) == (0, "false\n")
    assert "memory = 81559Mi" in miss.stderr


def test_eval_runtime_error(runner: CliRunner, device_file: Path) -> None:
    """A run-time error exits 1 with result null and Kubernetes' message."""
    expr = "device.attributes['gpu.nvidia.com'].memory.compareTo(quantity('80Gi')) >= 0"
    result = runner.invoke(cli, ["cel", "eval", expr, "--device", str(device_file), "--json"])
    assert result.exit_code == 1
    assert _json(result.stdout) == {
        "compiled": True,
        "result": None,
        "error": "CEL runtime error: no such key: memory",
    }


def test_driver_option_qualifies_names(runner: CliRunner, tmp_path: Path) -> None:
    """--driver decides the domain of unqualified names, from a JSON file."""
    path = tmp_path / "dev.json"
    path.write_text(json.dumps({"name": "d0", "attributes": {"model": {"string": "x"}}}))
    expr = "device.driver == 'example.com' && device.attributes['example.com'].model == 'x'"
    args = ["cel", "eval", expr, "--device", str(path), "--driver", "example.com", "--json"]
    result = runner.invoke(cli, args)
    assert (result.exit_code, _json(result.stdout)["result"]) == (0, True)


def test_bad_device_file(runner: CliRunner, tmp_path: Path) -> None:
    """A malformed device file is a GenError: message on stderr, exit 1."""
    path = tmp_path / "bad.yaml"
    path.write_text("name: d0\ncapacity:\n  memory: {value: 80GB}\n")
    result = runner.invoke(cli, ["cel", "eval", "true", "--device", str(path)])
    assert result.exit_code == 1
    assert "capacity 'memory'" in result.stderr
    path.write_text("- [unclosed")
    result = runner.invoke(cli, ["cel", "eval", "true", "--device", str(path)])
    assert result.exit_code == 1
    assert "cannot read the device" in result.stderr


def test_missing_device_file_is_usage_error(runner: CliRunner, tmp_path: Path) -> None:
    """A --device path that does not exist is a usage error (exit 2)."""
    result = runner.invoke(cli, ["cel", "eval", "true", "--device", str(tmp_path / "no.yaml")])
    assert result.exit_code == 2
