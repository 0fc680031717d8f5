"""The one module that touches the ``kubernetes`` client: a read-only :class:`ClusterAPI`.

The official Python client (kubernetes-client/python) reads the kubeconfig exactly as kubectl
does: ``--kubeconfig``, else ``$KUBECONFIG`` (several files merged), else ``~/.kube/config``;
contexts; client certificates, bearer tokens, exec credential plugins (``aws eks get-token``,
``gke-gcloud-auth-plugin``, ``kubelogin``) and their refresh. gen uses it for that and for
its HTTPS connection pool, and sends the few requests it needs itself, through
``ApiClient.param_serialize`` and ``ApiClient.call_api`` (kubernetes-client/python
``kubernetes/client/api_client.py``@v37.0.2), so that every request is one of two shapes:

* ``GET`` (``/version``, discovery, lists), and
* ``PATCH`` with ``dryRun=All`` (a server-side apply that persists nothing).

:meth:`KubeClient._request` refuses anything else before it reaches the network, and records
each request (method and path) in :attr:`KubeClient.requests`: ``gen verify`` never creates,
changes or deletes anything in the cluster.

The package is imported here only, inside :func:`connect` (``import kubernetes`` costs about
0.5 s and loads some 600 modules: only ``gen verify`` pays it).

Errors are :class:`gen.errors.ClusterAccessError` (GEN800) with a message that says what to
do. Messages never hold a credential: a kubeconfig that is not YAML is reported by line and
column without its text, the client library's own exceptions by their type and the server's
``Status`` message, and no request header is ever shown.
"""

from __future__ import annotations

import json
import logging
import os
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gen._version import __version__
from gen.errors import ClusterAccessError
from gen.rules import finding
from gen.verify.state import ApplyAnswer, ServedKind

__all__ = ["FIELD_MANAGER", "KubeClient", "connect"]

FIELD_MANAGER = "gen"
APPLY_QUERY = (("dryRun", "All"), ("fieldManager", FIELD_MANAGER), ("force", "true"),
               ("fieldValidation", "Strict"))
"""The query of every apply: dry-run, gen's field manager, conflicts forced, unknown fields
refused (as ``kubectl apply --server-side --dry-run=server --force-conflicts``)."""

DEFAULT_TIMEOUT = 30.0
RETRIES = 5
RETRY_SECONDS = 2.0


def _retry_after(header: str | None) -> float:
    """Seconds to wait for a 429's ``Retry-After`` (seconds), within (0, RETRY_SECONDS]."""
    try:
        return min(max(float(header or 1), 0.1), RETRY_SECONDS)
    except ValueError:
        return 1.0


@dataclass(frozen=True)
class Request:
    """One request gen sent: method and path (with the query)."""

    method: str
    path: str


def _error(message: str, hint: str = "") -> ClusterAccessError:
    """A :class:`ClusterAccessError` carrying one GEN800 finding (``error GEN800: ...``)."""
    return ClusterAccessError(findings=[finding("GEN800", message, hint=hint)])


class _Captured(logging.Handler):
    """Keeps the kubernetes client's log records (exec plugin failures are logged, not raised)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@contextmanager
def _capture_logs() -> Iterator[_Captured]:
    handler = _Captured()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


def _kubeconfig_files(kubeconfig: Path | None) -> list[Path]:
    if kubeconfig is not None:
        return [kubeconfig]
    env = os.environ.get("KUBECONFIG", "")
    if env:
        return [Path(p) for p in env.split(os.pathsep) if p]
    return [Path.home() / ".kube" / "config"]


def _check_files(files: list[Path], explicit: bool) -> None:
    """Each kubeconfig file exists and is a YAML mapping; errors name line and column only."""
    import yaml

    found = [f for f in files if f.is_file()]
    if not found:
        where = ", ".join(str(f) for f in files)
        how = "--kubeconfig" if explicit else "$KUBECONFIG or ~/.kube/config"
        raise _error(f"no kubeconfig: {where} does not exist ({how})",
                     "pass --kubeconfig PATH, or set KUBECONFIG")
    for file in found:
        try:
            data = yaml.safe_load(file.read_text(encoding="utf-8"))
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            raise _error(f"kubeconfig {file} is not valid YAML{at}",
                         "fix the file, or pass another one with --kubeconfig") from None
        except (OSError, UnicodeDecodeError) as err:
            raise _error(f"kubeconfig {file} cannot be read: {type(err).__name__}") from None
        if not isinstance(data, dict):
            raise _error(f"kubeconfig {file} is not a kubeconfig (a YAML mapping with "
                         "clusters, users and contexts)",
                         "pass another one with --kubeconfig")


def _safe_server(url: str) -> str:
    """The server URL without any user information (``https://user:pw@host`` → host only)."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def connect(kubeconfig: Path | None = None, context: str | None = None,
            timeout: float = DEFAULT_TIMEOUT) -> KubeClient:
    """A client for ``context`` (default: the kubeconfig's current context)."""
    files = _kubeconfig_files(kubeconfig)
    _check_files(files, kubeconfig is not None)
    with _capture_logs() as logs:
        import kubernetes.config
        from kubernetes.client import ApiClient

        path = os.pathsep.join(str(f) for f in files if f.is_file())
        try:
            contexts, active = kubernetes.config.list_kube_config_contexts(  # type: ignore[no-untyped-call]
                config_file=path)
            names = [c.get("name") for c in contexts or ()]
            chosen = context or (active or {}).get("name")
            if context is not None and context not in names:
                known = ", ".join(repr(n) for n in names) or "none"
                raise _error(f"the kubeconfig has no context {context!r} (it has {known})",
                             "pass one of them with --context (kubectl config get-contexts)")
            api = kubernetes.config.new_client_from_config(  # type: ignore[no-untyped-call]
                config_file=path, context=context, persist_config=False)
        except ClusterAccessError:
            raise
        except kubernetes.config.ConfigException as err:
            raise _error(f"the kubeconfig cannot be used: {err}",
                         "check it with kubectl config view") from None
        except (KeyError, TypeError, AttributeError, ValueError, IndexError) as err:
            # the loader indexes the parsed YAML without checking its shape
            raise _error(f"the kubeconfig cannot be used: {type(err).__name__} while "
                         "reading it", "check it with kubectl config view") from None
    if not isinstance(api, ApiClient):
        raise _error("the kubeconfig gave no API client")
    return KubeClient(api, str(chosen or ""), timeout, tuple(logs.messages))


class KubeClient:
    """A :class:`gen.verify.state.ClusterAPI` over one kubeconfig context (read-only)."""

    def __init__(self, api: Any, context: str, timeout: float,
                 load_messages: tuple[str, ...] = ()) -> None:
        self._api = api
        # Named in the API server's audit log as gen's requests.
        api.user_agent = f"gen/{__version__} (verify)"
        self._timeout = timeout
        self._load_messages = load_messages
        self.context = context
        self.server = _safe_server(str(api.configuration.host))
        self.requests: list[Request] = []

    @property
    def description(self) -> str:
        """``context 'x' at https://host:port``."""
        return f"context {self.context!r} at {self.server}" if self.context else self.server

    # ------------------------------------------------------------------ requests

    def _request(self, method: str, path: str, *, query: tuple[tuple[str, str], ...] = (),
                 body: Mapping[str, Any] | None = None,
                 content_type: str = "application/json") -> tuple[int, dict[str, Any],
                                                                  tuple[str, ...]]:
        """One request: (status, decoded body, Warning headers). Only GET and dry-run PATCH.

        A 429 (API Priority and Fairness throttling, a custom resource's storage still
        initialising) is retried after its ``Retry-After`` (at most :data:`RETRY_SECONDS`
        each, :data:`RETRIES` times), as client-go does."""
        if not (method == "GET" or (method == "PATCH" and ("dryRun", "All") in query)):
            raise AssertionError(f"gen verify is read-only: refusing {method} {path}")
        shown = path + ("?" + urllib.parse.urlencode(query) if query else "")
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        for attempt in range(RETRIES + 1):
            self.requests.append(Request(method, shown))
            response = self._send(method, path, query, headers, body)
            if response.status != 429 or attempt == RETRIES:
                break
            time.sleep(_retry_after(response.response.headers.get("Retry-After")))
        raw = response.data or b""
        try:
            decoded = json.loads(raw) if raw else {}
        except (ValueError, UnicodeDecodeError):
            decoded = {"message": raw[:500].decode("utf-8", "replace")}
        warnings = tuple(response.response.headers.getlist("Warning"))
        return int(response.status), decoded if isinstance(decoded, dict) else {}, warnings

    def _send(self, method: str, path: str, query: tuple[tuple[str, str], ...],
              headers: dict[str, str], body: Mapping[str, Any] | None) -> Any:
        import urllib3

        try:
            serialized = self._api.param_serialize(
                method=method, resource_path=path, query_params=list(query) or None,
                header_params=dict(headers), body=dict(body) if body is not None else None,
                auth_settings=["BearerToken"])
            response = self._api.call_api(*serialized,
                                          _request_timeout=(self._timeout, self._timeout))
            response.read()
        except urllib3.exceptions.HTTPError as err:
            raise self._network_error(err) from None
        except OSError as err:
            raise self._network_error(err) from None
        return response

    def _network_error(self, err: BaseException) -> ClusterAccessError:
        import urllib3

        reason: BaseException = err
        if isinstance(err, urllib3.exceptions.MaxRetryError) and err.reason is not None:
            reason = err.reason
        if isinstance(reason, urllib3.exceptions.NewConnectionError):
            # (a subclass of urllib3's ConnectTimeoutError, but no timeout: refused, no route)
            cause = reason.__cause__ or reason.__context__
            why = cause.strerror if isinstance(cause, OSError) and cause.strerror else \
                type(reason).__name__
            return _error(f"cannot reach the API server of {self.description}: {why}",
                          "is the cluster up, and the kubeconfig's server address right?")
        if isinstance(reason, urllib3.exceptions.TimeoutError | TimeoutError):
            return _error(f"the API server of {self.description} did not answer within "
                          f"{self._timeout:g} s", "check the network, or raise --timeout")
        if isinstance(reason, urllib3.exceptions.SSLError):
            return _error(f"TLS with the API server of {self.description} failed: "
                          f"{type(reason).__name__}",
                          "the kubeconfig's certificate-authority does not match the "
                          "server's certificate, or the server is not the one it names")
        return _error(f"cannot reach the API server of {self.description}: "
                      f"{type(reason).__name__}",
                      "is the cluster up, and the kubeconfig's server address right?")

    def _refused(self, status: int, body: Mapping[str, Any], verb: str, what: str
                 ) -> ClusterAccessError:
        message = str(body.get("message") or "")
        if status == 401:
            note = ""
            if self._load_messages:
                note = "; its credential plugin reported: " + " / ".join(self._load_messages)
            return _error(f"the API server refuses the credentials of {self.description} "
                          f"(401 Unauthorized): they are expired or invalid{note}",
                          "log in again (refresh the token or the client certificate)")
        if status == 403:
            return _error(f"the user of {self.description} may not {verb} {what} "
                          f"(403 Forbidden): {message}",
                          "gen verify needs get and list on nodes, namespaces and "
                          "resourceslices, and patch and create (dry-run) on the kinds of "
                          "out/: docs/verification.md has the ClusterRole")
        return _error(f"{verb} {what} failed on {self.description} (HTTP {status}): "
                      f"{message or 'no message'}")

    def _get(self, path: str, verb: str, what: str) -> dict[str, Any]:
        status, body, _ = self._request("GET", path)
        if not 200 <= status < 300:
            raise self._refused(status, body, verb, what)
        return body

    # ------------------------------------------------------------- ClusterAPI

    def server_version(self) -> str:
        """``gitVersion`` of ``GET /version``."""
        return str(self._get("/version", "get", "the server version").get("gitVersion", ""))

    def served(self, api_version: str) -> Mapping[str, ServedKind] | None:
        """Discovery of one group-version; None when the server does not serve it."""
        path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        status, body, _ = self._request("GET", path)
        if status == 404:
            return None
        if not 200 <= status < 300:
            raise self._refused(status, body, "get", f"the discovery of {api_version}")
        kinds: dict[str, ServedKind] = {}
        for resource in body.get("resources") or ():
            name = str(resource.get("name", ""))
            if "/" in name or not resource.get("kind"):
                continue  # a subresource
            kinds[str(resource["kind"])] = ServedKind(name, bool(resource.get("namespaced")))
        return kinds

    def list(self, api_version: str, plural: str) -> list[dict[str, Any]]:
        """Every object of a cluster-wide list, page by page."""
        root = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        group = api_version.rpartition("/")[0]
        what = f"{plural}.{group}" if group else plural
        items: list[dict[str, Any]] = []
        token = ""
        while True:
            query = (("limit", "500"),) + ((("continue", token),) if token else ())
            status, body, _ = self._request("GET", f"{root}/{plural}", query=query)
            if not 200 <= status < 300:
                raise self._refused(status, body, "list", what)
            items.extend(i for i in body.get("items") or () if isinstance(i, dict))
            token = str((body.get("metadata") or {}).get("continue") or "")
            if not token:
                return items

    def dry_run_apply(self, obj: Mapping[str, Any], kind: ServedKind) -> ApplyAnswer:
        """Server-side apply with ``dryRun=All``; 401 raises, every other answer is data."""
        api_version = str(obj.get("apiVersion", ""))
        meta = obj.get("metadata") or {}
        root = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        if kind.namespaced:
            root += "/namespaces/" + urllib.parse.quote(str(meta.get("namespace") or "default"),
                                                        safe="")
        path = f"{root}/{kind.plural}/" + urllib.parse.quote(str(meta.get("name", "")), safe="")
        status, body, warnings = self._request(
            "PATCH", path, query=APPLY_QUERY, body=obj,
            content_type="application/apply-patch+yaml")
        if status == 401:
            raise self._refused(status, body, "patch", kind.plural)
        return ApplyAnswer(status, body, warnings)
