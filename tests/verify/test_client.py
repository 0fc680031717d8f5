"""Tests for gen.verify.client: kubeconfig errors, network errors, HTTP answers, read-only.

Fast and offline: kubeconfig files in a temporary folder, a closed loopback port, and a small
HTTP server on loopback that answers as kube-apiserver does (``Status`` bodies, ``continue``
tokens, ``Warning`` headers) for the status codes the client must map. The real API server is
in tests/verify/test_live.py.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

from gen.errors import ClusterAccessError
from gen.verify.client import KubeClient, connect
from gen.verify.state import ServedKind

SECRET = "s3cr3t-t0ken-value"


def kubeconfig(path: Path, server: str, *, token: str = SECRET, extra: str = "") -> Path:
    path.write_text(f"""\
apiVersion: v1
kind: Config
current-context: one
clusters:
- name: c
  cluster: {{server: "{server}"}}
users:
- name: u
  user: {{token: "{token}"}}
contexts:
- name: one
  context: {{cluster: c, user: u}}
- name: two
  context: {{cluster: c, user: u}}
{extra}""", encoding="utf-8")
    return path


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _error(excinfo: pytest.ExceptionInfo[ClusterAccessError]) -> str:
    text = excinfo.value.format_message()
    assert SECRET not in text
    assert excinfo.value.findings[0].rule == "GEN800"
    return text


def test_missing_kubeconfig(tmp_path: Path) -> None:
    with pytest.raises(ClusterAccessError) as info:
        connect(tmp_path / "nope.yaml")
    assert "no kubeconfig" in _error(info) and "nope.yaml does not exist" in _error(info)


def test_kubeconfig_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """$KUBECONFIG with several files, merged as kubectl merges them."""
    first = kubeconfig(tmp_path / "a.yaml", "http://127.0.0.1:1")
    second = tmp_path / "b.yaml"
    second.write_text("apiVersion: v1\nkind: Config\ncontexts:\n- name: three\n"
                      "  context: {cluster: c, user: u}\n", encoding="utf-8")
    monkeypatch.setenv("KUBECONFIG", f"{first}:{second}")
    assert connect(context="three").context == "three"
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "missing.yaml"))
    with pytest.raises(ClusterAccessError) as info:
        connect()
    assert "$KUBECONFIG" in _error(info)


def test_invalid_yaml_is_located_without_its_text(tmp_path: Path) -> None:
    path = tmp_path / "kc.yaml"
    path.write_text(f'users:\n- user: {{token: "{SECRET}"\n', encoding="utf-8")
    with pytest.raises(ClusterAccessError) as info:
        connect(path)
    assert "is not valid YAML at line 3, column 1" in _error(info)


@pytest.mark.parametrize("text", ["- a list\n", "just text\n", f'clusters: 3\ntoken: "{SECRET}"\n'
                                  "current-context: x\ncontexts: [{name: x}]\n"])
def test_not_a_kubeconfig(tmp_path: Path, text: str) -> None:
    path = tmp_path / "kc.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ClusterAccessError) as info:
        connect(path)
    assert "kubeconfig" in _error(info)


def test_unknown_context(tmp_path: Path) -> None:
    path = kubeconfig(tmp_path / "kc.yaml", "http://127.0.0.1:1")
    with pytest.raises(ClusterAccessError) as info:
        connect(path, "prod")
    assert "no context 'prod' (it has 'one', 'two')" in _error(info)
    assert connect(path, "two").context == "two"
    assert connect(path).description == "context 'one' at http://127.0.0.1:1"


def test_closed_port(tmp_path: Path) -> None:
    client = connect(kubeconfig(tmp_path / "kc.yaml", f"https://127.0.0.1:{_closed_port()}"),
                     timeout=5)
    with pytest.raises(ClusterAccessError) as info:
        client.server_version()
    assert "cannot reach the API server of context 'one'" in _error(info)
    assert "Connection refused" in _error(info)


def test_a_server_that_never_answers(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        client = connect(kubeconfig(tmp_path / "kc.yaml", f"http://127.0.0.1:{port}"),
                         timeout=0.3)
        with pytest.raises(ClusterAccessError) as info:
            client.server_version()
    assert "did not answer within 0.3 s" in _error(info)


def test_user_information_in_the_server_url_is_never_shown(tmp_path: Path) -> None:
    client = connect(kubeconfig(tmp_path / "kc.yaml", f"http://admin:{SECRET}@127.0.0.1:1"))
    assert client.server == "http://127.0.0.1:1"
    assert SECRET not in client.description


# --------------------------------------------------------------- HTTP answers


class _Handler(BaseHTTPRequestHandler):
    routes: ClassVar[dict[tuple[str, str], Any]] = {}
    """(method, path) → (status, body, Warning headers), or a list of them answered in turn
    (the last one again and again)."""
    seen: ClassVar[list[tuple[str, str, dict[str, str]]]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        self.seen.append((self.command, self.path,
                          {k.lower(): v for k, v in self.headers.items()}))
        del body
        route = self.routes.get((self.command, self.path),
                                (404, {"kind": "Status", "code": 404}, []))
        if isinstance(route, list):
            route = route.pop(0) if len(route) > 1 else route[0]
        status, data, warnings = route
        raw = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for warning in warnings:
            self.send_header("Warning", warning)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    do_GET = do_PATCH = _answer

    def log_message(self, *_: Any) -> None:
        return


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[type[_Handler], KubeClient]]:
    _Handler.routes, _Handler.seen = {}, []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        yield _Handler, connect(kubeconfig(tmp_path / "kc.yaml", url), timeout=5)
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_version_discovery_and_paged_lists(server: tuple[type[_Handler], KubeClient]) -> None:
    handler, client = server
    handler.routes = {
        ("GET", "/version"): (200, {"gitVersion": "v1.36.3"}, []),
        ("GET", "/apis/resource.k8s.io/v1"): (200, {"resources": [
            {"name": "resourceslices", "kind": "ResourceSlice", "namespaced": False},
            {"name": "resourceclaims/status", "kind": "ResourceClaim", "namespaced": True}]},
            []),
        ("GET", "/api/v1/nodes?limit=500"): (200, {"items": [{"metadata": {"name": "a"}}],
                                                   "metadata": {"continue": "tok"}}, []),
        ("GET", "/api/v1/nodes?limit=500&continue=tok"): (
            200, {"items": [{"metadata": {"name": "b"}}], "metadata": {}}, []),
    }
    assert client.server_version() == "v1.36.3"
    assert client.served("resource.k8s.io/v1") == {
        "ResourceSlice": ServedKind("resourceslices", False)}
    assert client.served("resource.k8s.io/v1beta9") is None
    assert [n["metadata"]["name"] for n in client.list("v1", "nodes")] == ["a", "b"]
    assert all(h["authorization"] == f"Bearer {SECRET}" for _, _, h in handler.seen)
    assert all(h["user-agent"].startswith("gen/") for _, _, h in handler.seen)
    assert [r.method for r in client.requests] == ["GET"] * 5


def test_dry_run_apply_request(server: tuple[type[_Handler], KubeClient]) -> None:
    handler, client = server
    path = ("/apis/apps/v1/namespaces/inference/deployments/x?dryRun=All&fieldManager=gen"
            "&force=true&fieldValidation=Strict")
    handler.routes = {("PATCH", path): (200, {"kind": "Deployment"}, ['299 - "old API"'])}
    answer = client.dry_run_apply(
        {"apiVersion": "apps/v1", "kind": "Deployment",
         "metadata": {"name": "x", "namespace": "inference"}},
        ServedKind("deployments", True))
    assert answer.ok and answer.warnings == ('299 - "old API"',)
    method, seen, headers = handler.seen[-1]
    assert (method, seen) == ("PATCH", path)
    assert headers["content-type"] == "application/apply-patch+yaml"


def test_refusals_of_reads(server: tuple[type[_Handler], KubeClient]) -> None:
    """401: expired credentials; 403: the verb and resource, from the server's message."""
    handler, client = server
    forbidden = ('resourceslices.resource.k8s.io is forbidden: User "viewer" cannot list '
                 'resource "resourceslices" in API group "resource.k8s.io" at the cluster scope')
    handler.routes = {
        ("GET", "/version"): (401, {"kind": "Status", "message": "Unauthorized"}, []),
        ("GET", "/apis/resource.k8s.io/v1/resourceslices?limit=500"): (
            403, {"kind": "Status", "reason": "Forbidden", "message": forbidden}, []),
    }
    with pytest.raises(ClusterAccessError) as info:
        client.server_version()
    assert "refuses the credentials of context 'one'" in _error(info)
    assert "401 Unauthorized" in _error(info) and "log in again" in _error(info)
    with pytest.raises(ClusterAccessError) as info:
        client.list("resource.k8s.io/v1", "resourceslices")
    text = _error(info)
    assert "may not list resourceslices.resource.k8s.io (403 Forbidden)" in text
    assert 'User "viewer" cannot list resource "resourceslices"' in text


def test_a_401_on_apply_stops_the_run(server: tuple[type[_Handler], KubeClient]) -> None:
    handler, client = server
    with pytest.raises(ClusterAccessError):
        handler.routes = {}
        client._request("GET", "/version")  # 404: data, not an error
        handler.routes = {("PATCH", "/api/v1/namespaces/x?dryRun=All&fieldManager=gen&force="
                                    "true&fieldValidation=Strict"): (401, {}, [])}
        client.dry_run_apply({"apiVersion": "v1", "kind": "Namespace",
                              "metadata": {"name": "x"}}, ServedKind("namespaces", False))


@pytest.mark.parametrize(("method", "query"), [
    ("POST", ()), ("PUT", ()), ("DELETE", ()), ("PATCH", ()),
    ("PATCH", (("dryRun", "None"),)),
])
def test_only_get_and_dry_run_patch_leave_the_client(
        server: tuple[type[_Handler], KubeClient], method: str,
        query: tuple[tuple[str, str], ...]) -> None:
    handler, client = server
    with pytest.raises(AssertionError, match="read-only"):
        client._request(method, "/api/v1/namespaces/x", query=query)
    assert handler.seen == [] and client.requests == []


def test_throttling_is_retried(server: tuple[type[_Handler], KubeClient]) -> None:
    """429 (storage initialising, API Priority and Fairness): retried after Retry-After."""
    handler, client = server
    throttled: tuple[int, dict[str, Any], list[str]] = (
        429, {"kind": "Status", "message": "storage is (re)initializing"}, [])
    handler.routes = {("GET", "/version"): [throttled, throttled,
                                            (200, {"gitVersion": "v1.36.3"}, [])]}
    assert client.server_version() == "v1.36.3"
    assert len(client.requests) == 3
