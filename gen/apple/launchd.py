"""launchd jobs for native macOS model servers (Apple GPU via Metal).

macOS has no kubelet, so a Mac serving a model runs it under launchd and the cluster reaches it
through a selectorless Service + EndpointSlice (kubernetes/k8s.io#6783;
EndpointSlice, not the deprecated Endpoints: kubernetes/enhancements
``keps/sig-network/4974-deprecate-endpoints``). This module builds the launchd property list
and the health URL for one such server; it never reads or writes files.

**The API key never enters the plist.** A plist is plain text, usually world-readable, and
``launchctl print`` shows its environment, so a key in ``EnvironmentVariables`` or
``ProgramArguments`` would leak. The plist names only the key *file* (mode 0600, owned by the
job's user), read when the job starts, per engine:

* ``llama-server`` reads it natively: ``--api-key-file <path>`` (one key per line; llama.cpp
  ``tools/server/README.md``). A ``/bin/sh -c`` guard first checks that the file holds a key
  (llama.cpp would otherwise serve with no authentication at all, see :data:`KEY_GUARD`)
  and then ``exec``\\ s llama-server unchanged.
* ``vllm-metal`` (``vllm serve``) reads the key from the ``VLLM_API_KEY`` environment variable
  (vllm-project/vllm ``vllm/envs.py``, ``vllm/entrypoints/openai/api_server.py``). A fixed
  ``/bin/sh -c`` wrapper reads the file into that variable and ``exec``\\ s vLLM, so the key
  is in neither the plist nor any process's argv.
* ``vllm-mlx`` has only ``--api-key <key>`` (waybarrios/vllm-mlx ``vllm_mlx/cli.py`` at
  v0.6.0: no file flag, no environment variable). The same wrapper reads the file and
  appends ``--api-key "$key"`` at ``exec`` time: the key stays out of the plist but is
  visible to local users in ``ps``. Prefer a single-tenant Mac for this engine.

The wrappers exit 78 (``EX_CONFIG``) when the key file is missing, empty or holds only blank
lines, so a server never
comes up unauthenticated by accident; ``exec`` makes the engine launchd's own process, so
launchd's SIGTERM reaches it directly.
"""

from __future__ import annotations

import difflib
import plistlib
import re
from dataclasses import dataclass
from typing import Literal, get_args

from gen.apple.chips import LLAMA_SERVER_ALL_LAYERS
from gen.errors import CatalogLookupError, ProfileValidationError
from gen.fleet.generated import GENERATED_COMMENT
from gen.pins import pin

__all__ = [
    "DEFAULT_LOG_DIRECTORY",
    "DEFAULT_PATH",
    "ENGINES",
    "KEY_GUARD",
    "LABEL_PREFIX",
    "VLLM_MLX_MIN_VERSION",
    "VLLM_MLX_VERSION",
    "Engine",
    "MacServer",
    "health_path",
    "health_url",
    "key_guard_argv",
    "launchd_label",
    "launchd_plist",
    "plist_filename",
    "program_arguments",
    "server_arguments",
]

Engine = Literal["vllm-metal", "vllm-mlx", "llama-server"]
ENGINES: tuple[Engine, ...] = get_args(Engine)

ProcessType = Literal["Interactive", "Standard"]

LABEL_PREFIX = "dev.gen."
DEFAULT_LOG_DIRECTORY = "/Library/Logs/gen"
DEFAULT_WORKING_ROOT = "/Library/Application Support/gen"
DEFAULT_PATH = "/opt/homebrew/bin:/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
"""PATH of the job: Homebrew on Apple Silicon first. Engines in a virtualenv need ``executable``."""

_COMMAND: dict[str, str] = {
    "llama-server": "llama-server",
    "vllm-metal": "vllm",  # vllm-metal is a vLLM platform plugin: plain `vllm serve`
    "vllm-mlx": "vllm-mlx",
}

# Health endpoints, all unauthenticated: llama-server GET /health (503 while loading, 200 when
# ready; llama.cpp server README); vLLM GET /health (not behind --api-key: vllm-project/vllm
# vllm/entrypoints/serve/middleware/authenticate.py@baaf6e9c,
# vllm/entrypoints/serve/instrumentator/health.py@98b137c6);
# vllm-mlx GET /health (vllm-mlx docs/guides/server.md).
_HEALTH_PATH: dict[str, str] = {
    "llama-server": "/health",
    "vllm-metal": "/health",
    "vllm-mlx": "/health",
}

# $0 is a name for error messages, $1 the key file, the rest the engine's argv.
#
# KEY_GUARD refuses to start (exit 78, EX_CONFIG) unless the key file is readable and holds a
# line with a non-blank character. llama.cpp keeps every non-empty line of --api-key-file as a
# key and, with no key loaded, checks nothing: ggml-org/llama.cpp common/arg.cpp (the
# --api-key-file handler reads the file with std::getline and keeps a line only
# `if (!key.empty())`) and tools/server/server-http.cpp @00dd0816 (middleware_validate_api_key:
# "If API key is not set, skip validation", `if (api_keys.empty()) return true`; the same test
# sat in tools/server/server.cpp before the HTTP layer moved out). An empty file, or one of
# blank lines, would therefore serve without authentication. A line of spaces would be
# loaded as a key; the guard refuses it too (no real key is blank). Pure POSIX sh (no grep, no
# cat): the same guard runs under launchd on macOS (/bin/sh) and in the llama.cpp images.
KEY_GUARD = (
    '[ -f "$1" ] && [ -r "$1" ] || { echo "$0: API key file $1 is missing or unreadable; '
    'refusing to start without authentication" >&2; exit 78; }; '
    'ok=; while IFS= read -r line || [ -n "$line" ]; do '
    'case $line in *[![:space:]]*) ok=1; break;; esac; done < "$1"; '
    '[ -n "$ok" ] || { echo "$0: API key file $1 holds no key (empty or blank lines only); '
    'refusing to start without authentication" >&2; exit 78; }; '
)
"""The shell prologue every Apple key wrapper runs first (see :func:`key_guard_argv`)."""

_FILE_KEY_SCRIPT = KEY_GUARD + 'shift; exec "$@"'
_VLLM_ENV_KEY_SCRIPT = (
    KEY_GUARD + 'VLLM_API_KEY="$(cat -- "$1")" || exit 78; export VLLM_API_KEY; shift; exec "$@"'
)
_ARGV_KEY_SCRIPT = (
    KEY_GUARD + 'key="$(cat -- "$1")" || exit 78; shift; exec "$@" --api-key "$key"'
)


def key_guard_argv(name: str, key_file: str, argv: list[str]) -> list[str]:
    """``argv`` behind :data:`KEY_GUARD`: ``/bin/sh -c <guard> <name> <key_file> <argv...>``.

    For an engine that reads the key file itself (llama-server ``--api-key-file``): the shell
    only checks that the file holds a key, then ``exec``\\ s the engine unchanged.
    """
    return ["/bin/sh", "-c", _FILE_KEY_SCRIPT, name, key_file, *argv]


VLLM_MLX_VERSION = pin("vllm-mlx").version
"""The vllm-mlx release gen's install steps pin (PyPI ``vllm-mlx``, pin ``vllm-mlx``). The flags
gen passes — ``serve <model> --host --port --served-model-name --continuous-batching
--enable-metrics --api-key`` — and ``GET /health`` are in waybarrios/vllm-mlx
``vllm_mlx/cli.py`` and ``vllm_mlx/server.py`` at tags v0.2.9, v0.4.1 and v0.6.0 (the PyPI
wheel); ``--enable-metrics`` first appears in v0.2.9 (absent at v0.2.8), so older releases
refuse gen's command line."""
VLLM_MLX_MIN_VERSION = "0.2.9"
"""The oldest vllm-mlx that accepts every flag gen passes."""

_SERVICE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SECRET_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
_KEY_FLAGS = frozenset({"--api-key", "--api-key-file"})


def _absolute(path: str, what: str) -> None:
    if not path.startswith("/") or any(c in path for c in "\0\n\r"):
        raise ProfileValidationError(f"{what} must be an absolute path, got {path!r}")


@dataclass(frozen=True)
class MacServer:
    """One model server on a native macOS host.

    Attributes:
        service: DNS-1123 label; the launchd label is ``dev.gen.<service>``.
        engine: ``vllm-metal``, ``vllm-mlx`` or ``llama-server`` (Metal build).
        model: Hugging Face repo id or local directory (vLLM engines); absolute ``.gguf``
            path (llama-server).
        port: TCP port the server listens on.
        served_model_name: the model name clients send.
        max_model_len: context length; ``None`` for the engine's default. vllm-mlx has no
            equivalent flag, so it must be ``None`` there.
        api_key_file: absolute path on the Mac of the file holding the API key.
        extra_args: more engine flags, appended last; never ``--api-key``.
        parallel: llama-server's slots (``--parallel``); ``-c`` is ``parallel ×
            max_model_len``, because llama-server splits it over the slots. Only llama-server
            takes more than 1.
        host: listen address; the cluster must reach it.
        executable: absolute path of the engine binary (e.g. inside a virtualenv); default:
            the engine's command found on ``DEFAULT_PATH``.
        working_directory: default ``/Library/Application Support/gen/<service>``.
        log_directory: where ``<service>.out.log`` / ``<service>.err.log`` go.
        environment: extra environment variables; names that look like secrets are refused.
        process_type: launchd ``ProcessType``. ``Interactive`` by default: launchd throttles
            CPU and I/O of a job with no type or ``Standard`` ("light resource limits") and
            applies no limits to ``Interactive`` (launchd.plist(5)).
        user_name: launchd ``UserName`` (LaunchDaemons only); ``None`` leaves it out.
    """

    service: str
    engine: Engine
    model: str
    port: int
    served_model_name: str
    max_model_len: int | None
    api_key_file: str
    extra_args: tuple[str, ...] = ()
    parallel: int = 1
    host: str = "0.0.0.0"
    executable: str | None = None
    working_directory: str | None = None
    log_directory: str = DEFAULT_LOG_DIRECTORY
    environment: tuple[tuple[str, str], ...] = ()
    process_type: ProcessType = "Interactive"
    user_name: str | None = None

    def __post_init__(self) -> None:
        """Reject what launchd or the engine would choke on, and any literal secret."""
        _check_engine(self.engine)
        if len(self.service) > 63 or not _SERVICE.fullmatch(self.service):
            raise ProfileValidationError(
                f"service {self.service!r} must be a DNS-1123 label (lowercase, digits, '-')"
            )
        if isinstance(self.port, bool) or not 1 <= self.port <= 65535:
            raise ProfileValidationError(f"port must be 1-65535, got {self.port!r}")
        if not self.model.strip() or not self.served_model_name.strip():
            raise ProfileValidationError("model and served_model_name must not be empty")
        if self.engine == "llama-server" and not (
            self.model.startswith("/") and self.model.endswith(".gguf")
        ):
            raise ProfileValidationError(
                f"llama-server needs an absolute path to a .gguf file, got {self.model!r}"
            )
        if self.max_model_len is not None and (
            isinstance(self.max_model_len, bool) or self.max_model_len <= 0
        ):
            raise ProfileValidationError(f"max_model_len must be positive: {self.max_model_len}")
        if isinstance(self.parallel, bool) or self.parallel < 1 or (
            self.parallel > 1 and self.engine != "llama-server"
        ):
            raise ProfileValidationError(
                f"parallel must be 1, or more for llama-server only: {self.parallel!r}"
            )
        if self.engine == "vllm-mlx" and self.max_model_len is not None:
            raise ProfileValidationError(
                "vllm-mlx has no max-model-len flag (--max-kv-size truncates context); "
                "leave max_model_len unset"
            )
        _absolute(self.api_key_file, "api_key_file")
        _absolute(self.log_directory, "log_directory")
        for path, what in ((self.executable, "executable"), (self.working_directory, "wd")):
            if path is not None:
                _absolute(path, what)
        _check_no_literal_secret(self.extra_args, self.environment)


def _check_no_literal_secret(
    extra_args: tuple[str, ...], environment: tuple[tuple[str, str], ...]
) -> None:
    for arg in extra_args:
        flag = arg.split("=", 1)[0]
        if flag in _KEY_FLAGS:
            raise ProfileValidationError(f"extra_args must not set {flag}; use api_key_file")
    names = [name for name, _ in environment]
    if len(set(names)) != len(names):
        raise ProfileValidationError("environment names must be unique")
    for name in names:
        if not _ENV_NAME.fullmatch(name):
            raise ProfileValidationError(f"invalid environment variable name {name!r}")
        if _SECRET_ENV.search(name):
            raise ProfileValidationError(
                f"environment variable {name} looks like a secret; a plist is readable "
                "by anyone on the host: keep secrets in files"
            )


def _check_engine(engine: str) -> None:
    if engine not in _COMMAND:
        near = difflib.get_close_matches(engine, ENGINES, n=2, cutoff=0.4)
        hint = f"did you mean {', '.join(near)}?" if near else f"known: {', '.join(ENGINES)}"
        raise CatalogLookupError(f"unknown macOS engine {engine!r}; {hint}")


def health_path(engine: str) -> str:
    """The HTTP path that answers 200 once the engine serves (``/health`` for all three).

    Raises:
        CatalogLookupError: an engine gen does not know.
    """
    _check_engine(engine)
    return _HEALTH_PATH[engine]


def health_url(server: MacServer, address: str) -> str:
    """``http://<address>:<port>/health`` for a server reachable at ``address``."""
    host = f"[{address}]" if ":" in address else address
    return f"http://{host}:{server.port}{health_path(server.engine)}"


def launchd_label(service: str) -> str:
    """``dev.gen.<service>``."""
    return f"{LABEL_PREFIX}{service}"


def plist_filename(server: MacServer) -> str:
    """The file name launchd expects: ``<Label>.plist``."""
    return f"{launchd_label(server.service)}.plist"


def server_arguments(server: MacServer) -> list[str]:
    """The engine's exec argv, program first; it holds no secret.

    * llama-server: ``-m``, ``--host``, ``--port``, ``--alias``, ``-ngl 999`` (all layers on
      the Metal GPU), ``--metrics``, ``-c`` (``parallel × max_model_len``), ``--parallel``,
      ``--api-key-file``.
    * vllm-metal: ``vllm serve <model> --host --port --served-model-name [--max-model-len]``;
      the key arrives as ``VLLM_API_KEY`` (see the module docstring).
    * vllm-mlx: ``vllm-mlx serve <model> --host --port --served-model-name
      --continuous-batching --enable-metrics``; the wrapper appends ``--api-key``.
    """
    program = server.executable or _COMMAND[server.engine]
    net = ["--host", server.host, "--port", str(server.port)]
    if server.engine == "llama-server":
        argv = [program, "-m", server.model, *net, "--alias", server.served_model_name]
        argv += ["-ngl", LLAMA_SERVER_ALL_LAYERS, "--metrics"]
        if server.max_model_len is not None:
            argv += ["-c", str(server.max_model_len * server.parallel)]
        argv += ["--parallel", str(server.parallel)]
        argv += ["--api-key-file", server.api_key_file]
    elif server.engine == "vllm-metal":
        argv = [program, "serve", server.model, *net]
        argv += ["--served-model-name", server.served_model_name]
        if server.max_model_len is not None:
            argv += ["--max-model-len", str(server.max_model_len)]
    else:
        argv = [program, "serve", server.model, *net]
        argv += ["--served-model-name", server.served_model_name]
        argv += ["--continuous-batching", "--enable-metrics"]
    return argv + list(server.extra_args)


def program_arguments(server: MacServer) -> list[str]:
    """launchd ``ProgramArguments``: the engine argv, wrapped where the key needs reading.

    Every engine runs behind the key guard shell (``/bin/sh``), which finds a bare command
    name on the job's ``PATH``; launchd itself is given absolute paths only.
    """
    argv = server_arguments(server)
    if server.engine == "llama-server":
        return key_guard_argv(f"gen-{server.service}", server.api_key_file, argv)
    script = _VLLM_ENV_KEY_SCRIPT if server.engine == "vllm-metal" else _ARGV_KEY_SCRIPT
    return ["/bin/sh", "-c", script, f"gen-{server.service}", server.api_key_file, *argv]


def _environment(server: MacServer, working_directory: str) -> dict[str, str]:
    env = {"PATH": DEFAULT_PATH}
    if server.engine != "llama-server":
        env["HF_HOME"] = f"{working_directory}/huggingface"
    if server.engine == "vllm-metal":
        env["VLLM_NO_USAGE_STATS"] = "1"  # vllm-project/vllm vllm/envs.py
        env["DO_NOT_TRACK"] = "1"
    env.update(server.environment)
    return env


def launchd_plist(server: MacServer) -> bytes:
    """The job's property list, XML, keys sorted: the same bytes for the same server."""
    working_directory = server.working_directory or f"{DEFAULT_WORKING_ROOT}/{server.service}"
    job: dict[str, object] = {
        "Label": launchd_label(server.service),
        "ProgramArguments": program_arguments(server),
        "EnvironmentVariables": _environment(server, working_directory),
        "WorkingDirectory": working_directory,
        "StandardOutPath": f"{server.log_directory}/{server.service}.out.log",
        "StandardErrorPath": f"{server.log_directory}/{server.service}.err.log",
        "RunAtLoad": True,
        "KeepAlive": True,
        "ProcessType": server.process_type,
    }
    if server.user_name is not None:
        job["UserName"] = server.user_name
    text = plistlib.dumps(job, fmt=plistlib.FMT_XML, sort_keys=True)
    head, doctype, rest = text.partition(b"<!DOCTYPE")
    line_end = rest.index(b"\n") + 1
    # gen's comment after the DOCTYPE: launchd and plutil ignore XML comments.
    return head + doctype + rest[:line_end] + GENERATED_COMMENT.encode() + b"\n" + rest[line_end:]
