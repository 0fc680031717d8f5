"""A real Kubernetes control plane on loopback, with no kubelet: etcd, kube-apiserver,
kube-controller-manager and kube-scheduler, each its own process of the one binary
``tools/judge/controlplane`` builds from ``k8s.io/kubernetes`` (:mod:`tools.judge.pins`).

:func:`running` starts it in a folder (certificates, kubeconfig, logs, etcd data) and stops every
process it started when the block ends, whatever happens inside; :func:`start` and
:meth:`ControlPlane.stop` are the same in two halves (an ``atexit`` hook stops a plane a caller
forgot). :class:`ControlPlane` talks HTTPS to the API server with the admin certificate, using
only the standard library: discovery, server-side apply (dry-run or real), get, list, delete,
status updates and polling.

The flags follow the upstream test servers (kubernetes/kubernetes
``cmd/kube-apiserver/app/testing/testserver.go``; kubernetes-sigs/kwok
``pkg/kwokctl/components/kube_apiserver.go``): one CA, the endpoint reconciler off, the
node-lifecycle controller off (hand-made Nodes send no heartbeats), the scheduler's DRA filter
timeout off (a loaded 2-core machine must not turn a satisfiable claim into a timeout;
``DynamicResourcesArgs.filterTimeout``, k8s.io/kube-scheduler ``config/v1/types_pluginargs.go``
@v0.36.3). Admission keeps its defaults, so PodSecurity, ResourceQuota and ServiceAccount decide
as in a real cluster.
"""

from __future__ import annotations

import atexit
import contextlib
import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from tools.judge.pki import PKI, make_pki

__all__ = ["APIError", "ControlPlane", "Response", "running", "start", "wait_for"]

T = TypeVar("T")

CONTROLLERS = (
    "serviceaccount-controller", "serviceaccount-token-controller", "namespace-controller",
    "garbage-collector-controller", "deployment-controller", "replicaset-controller",
    "statefulset-controller", "daemonset-controller", "job-controller",
    "resourceclaim-controller", "resourcequota-controller", "disruption-controller",
    "endpointslice-controller", "clusterrole-aggregation-controller",
    "persistentvolumeclaim-protection-controller", "persistentvolume-protection-controller",
)
"""What kube-controller-manager runs (names from kubernetes/kubernetes
``cmd/kube-controller-manager/names/controller_names.go``@v1.36.3): the controllers that turn
gen's workloads into Pods and ResourceClaims, and nothing that needs a kubelet or a cloud. The
volume binder is left out: the harness binds each model-cache claim to a volume itself
(:func:`tools.judge.live`), as a provisioner would."""

RUNTIME_CONFIG = "resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true"
"""Serve the DRA beta versions too: gen renders ``v1beta2`` for clusters on Kubernetes 1.33."""

_SCHEDULER_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {{kubeconfig: {kubeconfig}, qps: 1000, burst: 1000}}
leaderElection: {{leaderElect: false}}
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: DynamicResources
    args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: DynamicResourcesArgs
      filterTimeout: 0s
"""


class APIError(RuntimeError):
    """The API server refused a request the harness itself needed (not a verdict)."""

    def __init__(self, response: Response, what: str) -> None:
        super().__init__(f"{what}: HTTP {response.status}: {response.message}")
        self.response = response


@dataclass(frozen=True)
class Response:
    """An API server answer: status code, decoded body, ``Warning`` headers."""

    status: int
    body: dict[str, Any]
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    @property
    def message(self) -> str:
        """The ``Status`` message of a refusal (empty on success)."""
        return str(self.body.get("message", "")) if not self.ok else ""


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for(what: str, check: Callable[[], T | None], timeout: float,
          alive: Callable[[], str | None] = lambda: None) -> T:
    """Poll ``check`` until it returns something other than None; fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    delay = 0.05
    while True:
        result = check()
        if result is not None:
            return result
        dead = alive()
        if dead:
            raise RuntimeError(f"{what}: {dead}")
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what}: not within {timeout:.0f} s")
        time.sleep(delay)
        delay = min(delay * 1.5, 0.5)


@dataclass
class _Process:
    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def dead(self) -> str | None:
        code = self.popen.poll()
        if code is None:
            return None
        tail = self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
        return f"{self.name} exited with {code}:\n" + "\n".join(tail)


@dataclass
class ControlPlane:
    """A running control plane and an admin client for it."""

    folder: Path
    pki: PKI
    server: str
    kubeconfig: Path
    processes: list[_Process] = field(default_factory=list)
    applied: list[Mapping[str, Any]] = field(default_factory=list)
    """What a judge applied since the plane was last emptied (:func:`tools.judge.live.reset`
    reads it to release finalizers and empty namespaces)."""
    _discovery: dict[tuple[str, str], tuple[str, bool]] = field(default_factory=dict)
    _context: ssl.SSLContext | None = None

    # ------------------------------------------------------------------ HTTP

    def _ssl(self) -> ssl.SSLContext:
        if self._context is None:
            context = ssl.create_default_context(cafile=str(self.pki.ca_cert))
            context.load_cert_chain(str(self.pki.admin_cert), str(self.pki.admin_key))
            self._context = context
        return self._context

    def request(self, method: str, path: str, body: Any = None, *,
                content_type: str = "application/json",
                query: Mapping[str, str] | None = None, timeout: float = 60) -> Response:
        """One HTTPS request to the API server as the admin user."""
        url = urllib.parse.urlsplit(self.server)
        if query:
            path += "?" + urllib.parse.urlencode(query)
        connection = http.client.HTTPSConnection(url.hostname or "127.0.0.1", url.port,
                                                 context=self._ssl(), timeout=timeout)
        try:
            data = None if body is None else json.dumps(body).encode()
            headers = {"Accept": "application/json"}
            if data is not None:
                headers["Content-Type"] = content_type
            connection.request(method, path, body=data, headers=headers)
            reply = connection.getresponse()
            raw = reply.read()
            warnings = tuple(reply.headers.get_all("Warning") or ())
        finally:
            connection.close()
        try:
            decoded = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            decoded = {"message": raw.decode("utf-8", "replace")}
        return Response(reply.status, decoded if isinstance(decoded, dict) else {}, warnings)

    # ------------------------------------------------------------- resources

    def _discover(self, api_version: str) -> None:
        path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        response = self.request("GET", path)
        if not response.ok:
            return
        for resource in response.body.get("resources", ()):
            if "/" in resource["name"]:
                continue
            self._discovery[(api_version, resource["kind"])] = (resource["name"],
                                                                 bool(resource["namespaced"]))

    def resource(self, api_version: str, kind: str) -> tuple[str, bool] | None:
        """(plural, namespaced) of a kind the server serves, or None."""
        key = (api_version, kind)
        if key not in self._discovery:
            self._discover(api_version)
        return self._discovery.get(key)

    def path(self, api_version: str, kind: str, name: str = "", namespace: str = "") -> str:
        """The REST path of a kind (its collection, or one object)."""
        found = self.resource(api_version, kind)
        if found is None:
            raise KeyError(f"the API server does not serve {kind} in {api_version}")
        plural, namespaced = found
        root = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        if namespaced:
            root += f"/namespaces/{namespace or 'default'}"
        return f"{root}/{plural}" + (f"/{name}" if name else "")

    def object_path(self, obj: Mapping[str, Any]) -> str:
        meta = obj.get("metadata") or {}
        return self.path(str(obj["apiVersion"]), str(obj["kind"]), str(meta.get("name", "")),
                         str(meta.get("namespace", "")))

    def apply(self, obj: Mapping[str, Any], *, dry_run: bool = False,
              manager: str = "gen-judge") -> Response:
        """Server-side apply (strict field validation), as ``kubectl apply --server-side``."""
        query = {"fieldManager": manager, "force": "true", "fieldValidation": "Strict"}
        if dry_run:
            query["dryRun"] = "All"
        return self.request("PATCH", self.object_path(obj), obj,
                            content_type="application/apply-patch+yaml", query=query)

    def create(self, obj: Mapping[str, Any]) -> Response:
        meta = obj.get("metadata") or {}
        collection = self.path(str(obj["apiVersion"]), str(obj["kind"]),
                               namespace=str(meta.get("namespace", "")))
        return self.request("POST", collection, obj)

    def get(self, api_version: str, kind: str, name: str, namespace: str = "") -> Response:
        return self.request("GET", self.path(api_version, kind, name, namespace))

    def list(self, api_version: str, kind: str, namespace: str = "",
             selector: str = "") -> list[dict[str, Any]]:
        found = self.resource(api_version, kind)
        if found is None:
            return []
        plural, namespaced = found
        root = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        if namespaced and namespace:
            root += f"/namespaces/{namespace}"
        response = self.request("GET", f"{root}/{plural}",
                                query={"labelSelector": selector} if selector else None)
        if not response.ok:
            raise APIError(response, f"list {kind}")
        # List items carry no apiVersion and kind; put them back, so items can be addressed.
        return [{"apiVersion": api_version, "kind": kind, **item}
                for item in response.body.get("items", ())]

    def delete(self, obj: Mapping[str, Any]) -> Response:
        return self.request("DELETE", self.object_path(obj),
                            {"propagationPolicy": "Background", "gracePeriodSeconds": 0})

    def must(self, response: Response, what: str) -> Response:
        if not response.ok:
            raise APIError(response, what)
        return response

    def forget_discovery(self) -> None:
        """Re-read discovery on next use (after CRDs were installed)."""
        self._discovery.clear()

    # ------------------------------------------------------------------ life

    def stop(self) -> None:
        """Stop every process this plane started (scheduler first, etcd last)."""
        for process in reversed(self.processes):
            if process.popen.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.popen.pid, signal.SIGTERM)
        for process in reversed(self.processes):
            try:
                process.popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.popen.pid, signal.SIGKILL)
                process.popen.wait(timeout=10)
        self.processes.clear()

    def alive(self) -> str | None:
        """Why a component died, or None while all run."""
        for process in self.processes:
            dead = process.dead()
            if dead:
                return dead
        return None


def _kubeconfig(path: Path, server: str, pki: PKI, cert: Path, key: Path) -> None:
    text = json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "gen-judge",
        "clusters": [{"name": "gen-judge",
                      "cluster": {"server": server, "certificate-authority": str(pki.ca_cert)}}],
        "users": [{"name": "admin",
                   "user": {"client-certificate": str(cert), "client-key": str(key)}}],
        "contexts": [{"name": "gen-judge", "context": {"cluster": "gen-judge", "user": "admin"}}],
    }, indent=2)
    path.write_text(text, encoding="utf-8")


def write_kubeconfig(plane: ControlPlane, path: Path, cert: Path, key: Path) -> Path:
    """A kubeconfig for another user of ``plane``
    (:func:`tools.judge.pki.client_certificate` makes the certificate)."""
    _kubeconfig(path, plane.server, plane.pki, cert, key)
    return path


def _spawn(plane: ControlPlane, binary: Path, name: str, args: list[str]) -> _Process:
    log = plane.folder / f"{name}.log"
    handle = log.open("wb")
    popen = subprocess.Popen([str(binary), name, *args], stdout=handle, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, cwd=plane.folder, start_new_session=True)
    handle.close()
    process = _Process(name, popen, log)
    plane.processes.append(process)
    return process


def _healthy(plane: ControlPlane, path: str) -> bool | None:
    try:
        return True if plane.request("GET", path, timeout=5).status == 200 else None
    except (OSError, http.client.HTTPException):
        return None


def start(folder: Path, binary: Path, *, timeout: float = 180) -> ControlPlane:
    """Start a control plane in ``folder``; the caller must :meth:`ControlPlane.stop` it."""
    folder.mkdir(parents=True, exist_ok=True)
    pki = make_pki(folder / "pki")
    port = _free_port()
    server = f"https://127.0.0.1:{port}"
    kubeconfig = folder / "admin.kubeconfig"
    _kubeconfig(kubeconfig, server, pki, pki.admin_cert, pki.admin_key)
    plane = ControlPlane(folder, pki, server, kubeconfig)
    atexit.register(plane.stop)
    try:
        etcd_port, peer_port = _free_port(), _free_port()
        etcd = _spawn(plane, binary, "etcd", [
            f"--data-dir={folder / 'etcd'}",
            f"--listen-client-url=http://127.0.0.1:{etcd_port}",
            f"--listen-peer-url=http://127.0.0.1:{peer_port}"])
        wait_for("etcd ready", lambda: True if "etcd ready" in etcd.log.read_text(
            encoding="utf-8", errors="replace") else None, timeout, etcd.dead)
        _spawn(plane, binary, "kube-apiserver", [
            f"--etcd-servers=http://127.0.0.1:{etcd_port}",
            "--bind-address=127.0.0.1", f"--secure-port={port}", "--advertise-address=127.0.0.1",
            f"--tls-cert-file={pki.server_cert}", f"--tls-private-key-file={pki.server_key}",
            f"--client-ca-file={pki.ca_cert}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki.service_account_key}",
            f"--service-account-signing-key-file={pki.service_account_key}",
            "--service-cluster-ip-range=10.0.0.0/24", "--endpoint-reconciler-type=none",
            "--allow-privileged=true", "--authorization-mode=RBAC",
            f"--runtime-config={RUNTIME_CONFIG}",
            "--max-requests-inflight=0", "--max-mutating-requests-inflight=0",
            "--enable-priority-and-fairness=false", "--v=0"])
        wait_for("kube-apiserver /readyz", lambda: _healthy(plane, "/readyz"), timeout, plane.alive)
        _spawn(plane, binary, "kube-controller-manager", [
            f"--kubeconfig={kubeconfig}", "--leader-elect=false", "--secure-port=0",
            f"--controllers={','.join(CONTROLLERS)}",
            f"--service-account-private-key-file={pki.service_account_key}",
            f"--root-ca-file={pki.ca_cert}", "--use-service-account-credentials=false",
            "--kube-api-qps=1000", "--kube-api-burst=1000",
            "--concurrent-deployment-syncs=10", "--concurrent-replicaset-syncs=10",
            # Recount quotas every second (default 5 min): the harness recreates namespaces'
            # quotas between clusters, and a count made before the last claims were gone
            # would otherwise stand.
            "--resource-quota-sync-period=1s", "--v=0"])
        scheduler_config = folder / "scheduler.yaml"
        scheduler_config.write_text(_SCHEDULER_CONFIG.format(kubeconfig=kubeconfig),
                                    encoding="utf-8")
        _spawn(plane, binary, "kube-scheduler", [
            f"--config={scheduler_config}", "--secure-port=0", "--v=0"])
        wait_for("the default ServiceAccount", lambda: True if plane.request(
            "GET", "/api/v1/namespaces/default/serviceaccounts/default").ok else None,
            timeout, plane.alive)
    except BaseException:
        plane.stop()
        raise
    return plane


@contextlib.contextmanager
def running(folder: Path, binary: Path, *, timeout: float = 180) -> Iterator[ControlPlane]:
    """A control plane for the duration of the block; everything it started is stopped after."""
    plane = start(folder, binary, timeout=timeout)
    try:
        yield plane
    finally:
        plane.stop()
