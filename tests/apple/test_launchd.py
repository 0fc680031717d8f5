"""Tests for gen.apple.launchd: launchd plists and argv for native macOS model servers."""

from __future__ import annotations

import dataclasses
import os
import plistlib
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gen.apple.launchd import (
    ENGINES,
    MacServer,
    health_path,
    health_url,
    launchd_plist,
    plist_filename,
    program_arguments,
    server_arguments,
)
from gen.errors import CatalogLookupError, ProfileValidationError

SECRET = "sk-test-9f8e7d6c5b4a"


def make(engine: str = "llama-server", **changes: Any) -> MacServer:
    """A valid server for ``engine``, with ``changes`` applied."""
    model = "/Users/ml/models/qwen3-8b-q8_0.gguf" if engine == "llama-server" else "Qwen/Qwen3-8B"
    fields: dict[str, Any] = {
        "service": "qwen",
        "engine": engine,
        "model": model,
        "port": 8000,
        "served_model_name": "qwen3-8b",
        "max_model_len": None if engine == "vllm-mlx" else 8192,
        "api_key_file": "/etc/gen/qwen.key",
    }
    fields.update(changes)
    return MacServer(**fields)


def parse(server: MacServer) -> dict[str, Any]:
    """The plist of ``server``, parsed back."""
    job = plistlib.loads(launchd_plist(server))
    assert isinstance(job, dict)
    return job


# --------------------------------------------------------------------------- argv per engine


def test_llama_server_argv() -> None:
    """llama-server: GGUF, host/port, alias, all layers, metrics, context, native key file."""
    assert server_arguments(make("llama-server")) == [
        "llama-server",
        "-m", "/Users/ml/models/qwen3-8b-q8_0.gguf",
        "--host", "0.0.0.0",
        "--port", "8000",
        "--alias", "qwen3-8b",
        "-ngl", "999",
        "--metrics",
        "-c", "8192",
        "--parallel", "1",
        "--api-key-file", "/etc/gen/qwen.key",
    ]  # fmt: skip


def test_llama_server_context_is_split_over_slots() -> None:
    """-c is parallel × max_model_len: llama-server gives each slot n_ctx / --parallel."""
    argv = server_arguments(make("llama-server", parallel=4))
    assert argv[argv.index("-c") + 1] == str(4 * 8192)
    assert argv[argv.index("--parallel") + 1] == "4"


@pytest.mark.parametrize(("engine", "parallel"), [("vllm-metal", 2), ("llama-server", 0)])
def test_parallel_only_for_llama_server(engine: str, parallel: int) -> None:
    """Only llama-server takes slots; a zero count is refused."""
    with pytest.raises(ProfileValidationError, match="parallel must be 1"):
        make(engine, parallel=parallel)


def test_llama_server_without_context_uses_model_default() -> None:
    """No max_model_len means no -c flag."""
    assert "-c" not in server_arguments(make("llama-server", max_model_len=None))


def test_vllm_metal_argv() -> None:
    """vllm-metal runs plain `vllm serve` with the served name and max model length."""
    assert server_arguments(make("vllm-metal")) == [
        "vllm", "serve", "Qwen/Qwen3-8B",
        "--host", "0.0.0.0",
        "--port", "8000",
        "--served-model-name", "qwen3-8b",
        "--max-model-len", "8192",
    ]  # fmt: skip


def test_vllm_mlx_argv() -> None:
    """vllm-mlx serves with continuous batching and metrics."""
    assert server_arguments(make("vllm-mlx", model="mlx-community/Qwen3-8B-4bit")) == [
        "vllm-mlx", "serve", "mlx-community/Qwen3-8B-4bit",
        "--host", "0.0.0.0",
        "--port", "8000",
        "--served-model-name", "qwen3-8b",
        "--continuous-batching",
        "--enable-metrics",
    ]  # fmt: skip


def test_executable_and_extra_args() -> None:
    """An explicit executable replaces the command name; extra args come last."""
    server = make(
        "vllm-metal",
        executable="/opt/vllm-metal/bin/vllm",
        extra_args=("--gpu-memory-utilization", "0.8"),
    )
    argv = server_arguments(server)
    assert argv[0] == "/opt/vllm-metal/bin/vllm"
    assert argv[-2:] == ["--gpu-memory-utilization", "0.8"]


def test_health_paths() -> None:
    """Every engine answers readiness on /health."""
    assert {engine: health_path(engine) for engine in ENGINES} == {
        "vllm-metal": "/health",
        "vllm-mlx": "/health",
        "llama-server": "/health",
    }
    assert health_url(make(), "10.0.0.7") == "http://10.0.0.7:8000/health"
    assert health_url(make(), "fd00::7") == "http://[fd00::7]:8000/health"


def test_unknown_engine() -> None:
    """An unknown engine raises CatalogLookupError with the nearest name."""
    with pytest.raises(CatalogLookupError, match=r"unknown macOS engine 'llama-srv'.*llama-server"):
        health_path("llama-srv")
    with pytest.raises(CatalogLookupError, match="unknown macOS engine 'mps'"):
        make(engine="mps")


# --------------------------------------------------------------------------- plist


@pytest.mark.parametrize("engine", ENGINES)
def test_plist_round_trips(engine: str) -> None:
    """The plist parses back with plistlib and holds every key launchd needs."""
    server = make(engine)
    job = parse(server)
    assert job["Label"] == "dev.gen.qwen"
    assert plist_filename(server) == "dev.gen.qwen.plist"
    assert job["ProgramArguments"] == program_arguments(server)
    assert job["RunAtLoad"] is True
    assert job["KeepAlive"] is True
    assert job["ProcessType"] == "Interactive"
    assert job["StandardOutPath"] == "/Library/Logs/gen/qwen.out.log"
    assert job["StandardErrorPath"] == "/Library/Logs/gen/qwen.err.log"
    assert job["WorkingDirectory"] == "/Library/Application Support/gen/qwen"
    assert job["EnvironmentVariables"]["PATH"].startswith("/opt/homebrew/bin:")
    assert "UserName" not in job


def test_plist_is_deterministic_xml() -> None:
    """Equal servers give byte-identical XML plists."""
    first, second = launchd_plist(make("vllm-metal")), launchd_plist(make("vllm-metal"))
    assert first == second
    assert first.startswith(b'<?xml version="1.0" encoding="UTF-8"?>')


def test_plist_options() -> None:
    """Standard process type, user, directories and extra environment are honoured."""
    job = parse(
        make(
            "vllm-metal",
            process_type="Standard",
            user_name="_llm",
            working_directory="/opt/llm",
            log_directory="/var/log/llm",
            environment=(("VLLM_METAL_MEMORY_FRACTION", "0.8"),),
        )
    )
    assert job["ProcessType"] == "Standard"
    assert job["UserName"] == "_llm"
    assert job["WorkingDirectory"] == "/opt/llm"
    assert job["StandardOutPath"] == "/var/log/llm/qwen.out.log"
    env = job["EnvironmentVariables"]
    assert env["VLLM_METAL_MEMORY_FRACTION"] == "0.8"
    assert env["HF_HOME"] == "/opt/llm/huggingface"
    assert env["VLLM_NO_USAGE_STATS"] == "1"


def test_llama_server_runs_behind_the_key_guard() -> None:
    """llama-server reads its key file itself; a guard shell checks the file, then execs it."""
    server = make(executable="/opt/homebrew/bin/llama-server")
    argv = program_arguments(server)
    assert argv[:2] == ["/bin/sh", "-c"]
    assert argv[2].endswith('shift; exec "$@"')
    assert argv[3:5] == ["gen-qwen", "/etc/gen/qwen.key"]
    assert argv[5:] == server_arguments(server)


@pytest.mark.parametrize("engine", ENGINES)
def test_no_secret_in_plist(engine: str, tmp_path: Path) -> None:
    """The plist names the key file but never holds the key itself."""
    key_file = tmp_path / "api.key"
    key_file.write_text(SECRET + "\n")
    data = launchd_plist(make(engine, api_key_file=str(key_file)))
    assert SECRET.encode() not in data
    assert str(key_file).encode() in data


def test_literal_key_in_extra_args_is_refused() -> None:
    """--api-key or --api-key-file in extra_args is refused."""
    for arg in (("--api-key", SECRET), (f"--api-key={SECRET}",), ("--api-key-file", "/x")):
        with pytest.raises(ProfileValidationError, match="must not set --api-key"):
            make("vllm-metal", extra_args=arg)


@pytest.mark.parametrize("name", ["VLLM_API_KEY", "HF_TOKEN", "db_password", "MY_SECRET"])
def test_secret_looking_environment_is_refused(name: str) -> None:
    """Environment variables that look like secrets never reach a plist."""
    with pytest.raises(ProfileValidationError, match="looks like a secret"):
        make("vllm-metal", environment=((name, SECRET),))


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"service": "Qwen_3"}, "DNS-1123 label"),
        ({"port": 0}, "port must be 1-65535"),
        ({"api_key_file": "keys/qwen"}, "api_key_file must be an absolute path"),
        ({"model": "Qwen/Qwen3-8B"}, r"absolute path to a \.gguf"),
        ({"max_model_len": 0}, "max_model_len must be positive"),
        ({"environment": (("A", "1"), ("A", "2"))}, "must be unique"),
    ],
)
def test_invalid_servers_are_refused(changes: dict[str, Any], message: str) -> None:
    """Invalid fields raise ProfileValidationError with a clear message."""
    with pytest.raises(ProfileValidationError, match=message):
        make("llama-server", **changes)


def test_vllm_mlx_refuses_max_model_len() -> None:
    """vllm-mlx has no max-model-len flag, so setting one is an error, not silently dropped."""
    with pytest.raises(ProfileValidationError, match="vllm-mlx has no max-model-len"):
        make("vllm-mlx", max_model_len=8192)


def test_server_is_frozen() -> None:
    """MacServer is immutable."""
    with pytest.raises(dataclasses.FrozenInstanceError):
        make().port = 1  # type: ignore[misc]  # assigning to a frozen field is the point


# --------------------------------------------------------------------------- the key wrapper


def run_wrapper(
    server: MacServer, tmp_path: Path, shell: str = "sh"
) -> subprocess.CompletedProcess[str]:
    """Run the plist's ProgramArguments with the engine replaced by a probe script (a fake
    llama-server or vllm that prints its environment key and argv), under ``shell``."""
    probe = tmp_path / "probe"
    probe.write_text('#!/bin/sh\nprintf "env=%s\\n" "$VLLM_API_KEY"; printf "arg=%s\\n" "$@"\n')
    probe.chmod(0o755)
    argv = program_arguments(dataclasses.replace(server, executable=str(probe)))
    assert argv[0] == "/bin/sh"
    argv[0] = shutil.which(shell) or shell
    env = {"PATH": os.defpath}
    return subprocess.run(argv, capture_output=True, text=True, env=env, check=False)


needs_sh = pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")


@needs_sh
def test_vllm_metal_wrapper_exports_key_from_file(tmp_path: Path) -> None:
    """The vllm-metal wrapper puts the file's key in VLLM_API_KEY, not on the command line."""
    key_file = tmp_path / "api.key"
    key_file.write_text(SECRET + "\n")
    result = run_wrapper(make("vllm-metal", api_key_file=str(key_file)), tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"env={SECRET}"
    assert f"arg={SECRET}" not in lines
    assert lines[1:4] == ["arg=serve", "arg=Qwen/Qwen3-8B", "arg=--host"]


@needs_sh
def test_vllm_mlx_wrapper_appends_key(tmp_path: Path) -> None:
    """The vllm-mlx wrapper appends --api-key with the file's key at exec time."""
    key_file = tmp_path / "api.key"
    key_file.write_text(SECRET + "\n")
    result = run_wrapper(make("vllm-mlx", api_key_file=str(key_file)), tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == ["arg=--api-key", f"arg={SECRET}"]


# Key files llama.cpp would load no key from (it keeps only non-empty lines), or only blanks.
NO_KEY = [None, "", "\n", "\n\n\n", "   \n\t\n", "\r\n"]


@needs_sh
@pytest.mark.parametrize("shell", ["sh", "dash", "bash"])
@pytest.mark.parametrize("content", NO_KEY)
def test_llama_server_guard_refuses_to_start_without_key(
    shell: str, content: str | None, tmp_path: Path
) -> None:
    """An empty, blank-only or missing key file: exit 78 and llama-server never runs."""
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell}")
    key_file = tmp_path / "api.key"
    if content is not None:
        key_file.write_text(content)
    result = run_wrapper(make("llama-server", api_key_file=str(key_file)), tmp_path,
                         shell=shell)
    assert result.returncode == 78
    assert "arg=" not in result.stdout
    assert "refusing to start without authentication" in result.stderr


@needs_sh
@pytest.mark.parametrize("content", [SECRET, SECRET + "\n", "\n\n" + SECRET + "\n\n",
                                     "other-key\n" + SECRET])
def test_llama_server_guard_starts_with_a_key(content: str, tmp_path: Path) -> None:
    """A file with a key (blank lines around it, no final newline) starts llama-server with
    its argv unchanged: the key stays in the file, never on the command line."""
    key_file = tmp_path / "api.key"
    key_file.write_text(content)
    server = make("llama-server", api_key_file=str(key_file))
    result = run_wrapper(server, tmp_path)
    assert result.returncode == 0, result.stderr
    args = [line.removeprefix("arg=") for line in result.stdout.splitlines()[1:]]
    assert args == server_arguments(server)[1:]
    assert SECRET not in result.stdout


@needs_sh
@pytest.mark.parametrize("engine", ["vllm-metal", "vllm-mlx"])
@pytest.mark.parametrize("content", NO_KEY)
def test_wrapper_refuses_to_start_without_key(
    engine: str, content: str | None, tmp_path: Path
) -> None:
    """A missing or empty key file stops the job with EX_CONFIG (78), never unauthenticated."""
    key_file = tmp_path / "api.key"
    if content is not None:
        key_file.write_text(content)
    result = run_wrapper(make(engine, api_key_file=str(key_file)), tmp_path)
    assert result.returncode == 78
    assert "arg=serve" not in result.stdout
