"""``gen verify``: its help, its errors (fast, no cluster), its output formats, lazy imports.

The runs against a real API server are in tests/verify/test_live.py; here the cluster is either
unreachable (a closed loopback port), or a fake (tests/verify/fake.py) handed in where the
command connects, so that the output formats are checked exactly.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gen.verify.state import ApplyAnswer
from tests.helpers import REPO, invoke
from tests.verify.test_client import SECRET, kubeconfig
from tests.verify.test_verify import _cluster_fake


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_help_says_it_is_read_only(runner: CliRunner) -> None:
    result = invoke(runner, "verify", "--help")
    assert result.exit_code == 0
    assert "Read-only: it never creates, changes or deletes anything in the cluster." in \
        result.output
    assert "only GET requests and server-side apply PATCHes with dryRun=All" in result.output
    for option in ("--cluster", "--kubeconfig", "--context", "--json", "--timeout",
                   "--profiles", "--out"):
        assert option in result.output


def test_cluster_is_required(runner: CliRunner) -> None:
    assert invoke(runner, "verify").exit_code == 2


def test_bad_kubeconfig_file(runner: CliRunner, tmp_path: Path,
                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    bad = tmp_path / "kc.yaml"
    bad.write_text(f'users: [{{user: {{token: "{SECRET}"\n', encoding="utf-8")
    result = invoke(runner, "verify", "--cluster", "prod-us-east", "--kubeconfig", bad)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error GEN800: kubeconfig {bad} is not valid YAML at line")
    assert SECRET not in result.output
    missing = invoke(runner, "verify", "--cluster", "prod-us-east", "--kubeconfig",
                     tmp_path / "none.yaml")
    assert missing.exit_code == 1 and "does not exist" in missing.stderr


def test_unknown_context(runner: CliRunner, tmp_path: Path,
                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    config = kubeconfig(tmp_path / "kc.yaml", "http://127.0.0.1:1")
    result = invoke(runner, "verify", "--cluster", "prod-us-east", "--kubeconfig", config,
                    "--context", "staging")
    assert result.exit_code == 1
    assert "error GEN800: the kubeconfig has no context 'staging' (it has 'one', 'two')" in \
        result.stderr


def test_unreachable_server_is_fast_and_clear(runner: CliRunner, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    config = kubeconfig(tmp_path / "kc.yaml", f"https://127.0.0.1:{_closed_port()}")
    result = invoke(runner, "verify", "--cluster", "prod-us-east", "--kubeconfig", config,
                    "--timeout", "5")
    assert result.exit_code == 1
    assert "error GEN800: cannot reach the API server of context 'one' at https://127.0.0.1:" \
        in result.stderr
    assert SECRET not in result.output
    as_json = invoke(runner, "verify", "--cluster", "prod-us-east", "--kubeconfig", config,
                     "--json")
    assert as_json.exit_code == 1
    report = json.loads(as_json.stdout)
    assert report["version"] == 1 and report["checked"] is None
    assert [f["rule"] for f in report["findings"]] == ["GEN800"]
    assert report["summary"] == {"error": 1, "warning": 0, "info": 0}


def test_unknown_cluster_is_an_error(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    result = invoke(runner, "verify", "--cluster", "nope", "--kubeconfig", "/nonexistent")
    assert result.exit_code == 1 and "unknown cluster(s): nope" in result.stderr


def _fake_connect(monkeypatch: pytest.MonkeyPatch, **kwargs: Any) -> None:
    from gen.pipeline import load_plan

    fake = _cluster_fake(load_plan(REPO / "profiles"), "prod-us-east", **kwargs)
    monkeypatch.setattr("gen.verify.client.connect", lambda *_, **__: fake)


def test_text_output(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    """Findings on stdout in lint's format, the summary on stderr; exit 1 on an error."""
    monkeypatch.chdir(REPO)

    def answer(obj: dict[str, object]) -> ApplyAnswer:
        if obj["kind"] == "Service":
            return ApplyAnswer(422, {"reason": "Invalid", "details": {"causes": [
                {"field": "spec.ports[0].port", "message": "Invalid value: 70000"}]}})
        return ApplyAnswer(200, obj)

    _fake_connect(monkeypatch, answer=answer)
    result = invoke(runner, "verify", "--cluster", "prod-us-east")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("profiles/services/llama-70b.yaml:3:1: error GEN801: "
                               "spec.ports[0].port: the API server refuses Service "
                               "inference/llama-70b (Invalid): Invalid value: 70000")
    assert lines[1] == "    rendered to at out/prod-us-east/workloads/inference/" \
        "service-llama-70b.yaml"
    assert result.stderr == (
        "prod-us-east, fake cluster: 51 object(s) dry-run (46 accepted, 5 refused, 0 not "
        "served, 0 not checked), 2 pool(s), 6 node(s); 5 error(s), 0 warning(s), 0 info(s).\n")


def test_json_output(runner: CliRunner, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)
    _fake_connect(monkeypatch)
    result = invoke(runner, "verify", "--cluster", "prod-us-east", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "version": 1, "cluster": "prod-us-east", "server": "fake cluster",
        "checked": {"objects": 51, "accepted": 51, "refused": 0, "not_served": 0,
                    "not_checked": 0, "nodes": 6, "pools": 2},
        "findings": [], "summary": {"error": 0, "warning": 0, "info": 0},
    }


def _modules_after(argv: list[str]) -> set[str]:
    probe = (
        "import atexit, json, sys\n"
        "atexit.register(lambda: sys.stderr.write('\\nMODULES=' + json.dumps(sorted(\n"
        "    {m.split('.')[0] for m in sys.modules}))))\n"
        f"sys.argv = {['gen', *argv]!r}\n"
        "from gen._entry import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
    )
    proc = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True,
                          text=True, check=False, timeout=60)
    return set(json.loads(proc.stderr.rsplit("MODULES=", 1)[1]))


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["verify", "--help"]])
def test_the_kubernetes_client_is_imported_only_to_verify(argv: list[str]) -> None:
    """``import kubernetes`` costs about half a second: only a verify that runs pays it."""
    assert "kubernetes" not in _modules_after(argv)


def test_a_verify_run_imports_it(tmp_path: Path) -> None:
    config = kubeconfig(tmp_path / "kc.yaml", f"https://127.0.0.1:{_closed_port()}")
    assert "kubernetes" in _modules_after(["verify", "--cluster", "prod-us-east",
                                           "--kubeconfig", str(config)])
