"""Pod Security Standards: check a pod template against "baseline" and "restricted".

The checks follow Kubernetes' Pod Security admission, whose code is the definition the
standards page refers to (``k8s.io/pod-security-admission/policy/check_*.go``), at the
version gen labels its namespaces with, ``latest`` (Kubernetes 1.35):

baseline
    ``windowsHostProcess`` (Windows host process), ``hostNamespaces`` (hostNetwork, hostPID,
    hostIPC), ``privileged``, ``capabilities_baseline`` (add only the runtime's default
    set), ``hostPathVolumes``, ``hostPorts``, ``appArmorProfile`` (not Unconfined),
    ``seLinuxOptions`` (container types only, no user or role), ``procMount`` (Default),
    ``seccompProfile_baseline`` (not Unconfined), ``sysctls`` (the namespaced safe set),
    ``hostProbesAndHostLifecycle`` (no ``host`` in probes and lifecycle handlers).
restricted
    everything in baseline, plus ``restrictedVolumes`` (configMap, csi, downwardAPI,
    emptyDir, ephemeral, image, persistentVolumeClaim, projected, secret),
    ``allowPrivilegeEscalation`` (explicitly false), ``runAsNonRoot``, ``runAsUser`` (not
    0), ``seccompProfile_restricted`` (RuntimeDefault or Localhost), and
    ``capabilities_restricted`` (drop ALL, add at most NET_BIND_SERVICE).

Pods in a user namespace (``hostUsers: false``) are exempt from the two non-root checks and
from baseline's procMount check; Windows pods (``os.name: windows``) from the privilege
escalation, seccomp and restricted capability checks, as admission does. Init and ephemeral
containers are checked like containers.

Pure: the functions take parsed manifests (dicts) and return :class:`Violation` data.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "ENFORCE_LABEL",
    "EXCEPTION_ANNOTATION",
    "LEVELS",
    "Level",
    "Violation",
    "check",
    "check_pod",
    "level_of",
    "pod_template",
]

Level = Literal["privileged", "baseline", "restricted"]
LEVELS: tuple[Level, ...] = ("privileged", "baseline", "restricted")
"""From least to most restrictive, as ``pod-security.kubernetes.io/enforce`` names them."""
ENFORCE_LABEL = "pod-security.kubernetes.io/enforce"
EXCEPTION_ANNOTATION = "gen.dev/pod-security-exception"
"""Why a Namespace gen renders enforces less than "restricted" (and, on a workload gen
renders there, why that workload needs it). Every such exception carries one."""

BASELINE_CAPABILITIES = frozenset({
    "AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
    "NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
})
SAFE_SYSCTLS = frozenset({
    "kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ip_local_reserved_ports",  # 1.27+
    "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout",  # 1.29+
    "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes",  # 1.29+
    "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",  # 1.32+
})
SELINUX_TYPES = frozenset({
    "", "container_t", "container_init_t", "container_kvm_t", "container_engine_t",  # 1.31+
})
RESTRICTED_VOLUMES = frozenset({
    "configMap", "csi", "downwardAPI", "emptyDir", "ephemeral", "image",  # image: 1.33+
    "persistentVolumeClaim", "projected", "secret",
})
_VOLUME_FIELDS = frozenset({"name"})
_SECCOMP_OK = ("RuntimeDefault", "Localhost")
_APPARMOR_OK = ("RuntimeDefault", "Localhost")
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")

_TEMPLATE_PATHS: Mapping[str, tuple[str, ...]] = {
    "Pod": ("spec",),
    "PodTemplate": ("template", "spec"),
    "Deployment": ("spec", "template", "spec"),
    "ReplicaSet": ("spec", "template", "spec"),
    "ReplicationController": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "DaemonSet": ("spec", "template", "spec"),
    "Job": ("spec", "template", "spec"),
    "CronJob": ("spec", "jobTemplate", "spec", "template", "spec"),
}
"""Where each workload kind keeps its pod spec (its metadata is the sibling ``metadata``)."""


@dataclass(frozen=True, order=True)
class Violation:
    """One field of a pod template that a Pod Security level forbids."""

    level: Level
    """The least restrictive level that forbids it: "baseline" or "restricted"."""
    check: str
    """Pod Security admission's check id, e.g. ``privileged`` or ``runAsNonRoot``."""
    path: str
    """Field path from the object's root, e.g. ``spec.template.spec.containers[0].image``."""
    container: str
    """The container's name; empty for a pod-level field."""
    message: str

    def __str__(self) -> str:
        """``path: message [check, level]``."""
        return f"{self.path}: {self.message} [{self.check}, {self.level}]"


@dataclass(frozen=True)
class _Pod:
    spec: Mapping[str, Any]
    meta: Mapping[str, Any]
    spec_path: str
    meta_path: str

    @property
    def context(self) -> Mapping[str, Any]:
        return _map(self.spec.get("securityContext"))

    @property
    def user_namespace(self) -> bool:
        return self.spec.get("hostUsers") is False

    @property
    def windows(self) -> bool:
        return _map(self.spec.get("os")).get("name") == "windows"

    def containers(self) -> Iterator[tuple[str, Mapping[str, Any]]]:
        """(path, container) of every container, init container and ephemeral container."""
        for key in _CONTAINER_LISTS:
            for i, container in enumerate(_list(self.spec.get(key))):
                if isinstance(container, Mapping):
                    yield f"{self.spec_path}.{key}[{i}]", container


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _name(container: Mapping[str, Any]) -> str:
    return str(container.get("name", ""))


def _ctx(container: Mapping[str, Any]) -> Mapping[str, Any]:
    return _map(container.get("securityContext"))


_CheckFn = Callable[[_Pod], Iterator[Violation]]
_BASELINE: list[_CheckFn] = []
_RESTRICTED: list[_CheckFn] = []


def _baseline(fn: _CheckFn) -> _CheckFn:
    _BASELINE.append(fn)
    return fn


def _restricted(fn: _CheckFn) -> _CheckFn:
    _RESTRICTED.append(fn)
    return fn


def _contexts(pod: _Pod) -> Iterator[tuple[str, str, Mapping[str, Any]]]:
    """(path, container name, securityContext) of the pod, then of every container."""
    yield f"{pod.spec_path}.securityContext", "", pod.context
    for path, container in pod.containers():
        yield f"{path}.securityContext", _name(container), _ctx(container)


# --------------------------------------------------------------------------- baseline


@_baseline
def _host_process(pod: _Pod) -> Iterator[Violation]:
    for path, name, ctx in _contexts(pod):
        if _map(ctx.get("windowsOptions")).get("hostProcess") is True:
            yield Violation("baseline", "windowsHostProcess", f"{path}.windowsOptions.hostProcess",
                            name, "Windows HostProcess containers are privileged")


@_baseline
def _host_namespaces(pod: _Pod) -> Iterator[Violation]:
    for field in ("hostNetwork", "hostPID", "hostIPC"):
        if pod.spec.get(field) is True:
            yield Violation("baseline", "hostNamespaces", f"{pod.spec_path}.{field}", "",
                            f"{field}=true shares a host namespace")


@_baseline
def _privileged(pod: _Pod) -> Iterator[Violation]:
    for path, container in pod.containers():
        if _ctx(container).get("privileged") is True:
            yield Violation("baseline", "privileged", f"{path}.securityContext.privileged",
                            _name(container), "privileged=true")


@_baseline
def _capabilities_baseline(pod: _Pod) -> Iterator[Violation]:
    for path, container in pod.containers():
        added = _list(_map(_ctx(container).get("capabilities")).get("add"))
        extra = sorted(str(c) for c in added if c not in BASELINE_CAPABILITIES)
        if extra:
            yield Violation("baseline", "capabilities_baseline",
                            f"{path}.securityContext.capabilities.add", _name(container),
                            f"adds capabilities beyond the default set: {', '.join(extra)}")


@_baseline
def _host_path_volumes(pod: _Pod) -> Iterator[Violation]:
    for i, volume in enumerate(_list(pod.spec.get("volumes"))):
        if isinstance(volume, Mapping) and volume.get("hostPath") is not None:
            yield Violation("baseline", "hostPathVolumes",
                            f"{pod.spec_path}.volumes[{i}].hostPath", "",
                            f"volume {volume.get('name')!r} is a hostPath")


@_baseline
def _host_ports(pod: _Pod) -> Iterator[Violation]:
    for path, container in pod.containers():
        for j, port in enumerate(_list(container.get("ports"))):
            host_port = _map(port).get("hostPort")
            if host_port not in (None, 0):
                yield Violation("baseline", "hostPorts", f"{path}.ports[{j}].hostPort",
                                _name(container), f"hostPort {host_port}")


@_baseline
def _app_armor(pod: _Pod) -> Iterator[Violation]:
    for path, name, ctx in _contexts(pod):
        profile = ctx.get("appArmorProfile")
        if profile is not None and _map(profile).get("type") not in _APPARMOR_OK:
            yield Violation("baseline", "appArmorProfile", f"{path}.appArmorProfile.type", name,
                            f"AppArmor profile type {_map(profile).get('type')!r}")
    prefix = "container.apparmor.security.beta.kubernetes.io/"
    for key, value in sorted(_map(pod.meta.get("annotations")).items()):
        text = str(value)
        allowed = text in ("", "runtime/default") or text.startswith("localhost/")
        if str(key).startswith(prefix) and not allowed:
            yield Violation("baseline", "appArmorProfile", f"{pod.meta_path}.annotations[{key}]",
                            str(key)[len(prefix):], f"AppArmor profile {text!r}")


@_baseline
def _se_linux(pod: _Pod) -> Iterator[Violation]:
    for path, name, ctx in _contexts(pod):
        options = ctx.get("seLinuxOptions")
        if options is None:
            continue
        options = _map(options)
        if str(options.get("type", "")) not in SELINUX_TYPES:
            yield Violation("baseline", "seLinuxOptions", f"{path}.seLinuxOptions.type", name,
                            f"SELinux type {options.get('type')!r}")
        for field in ("user", "role"):
            if options.get(field):
                yield Violation("baseline", "seLinuxOptions",
                                f"{path}.seLinuxOptions.{field}", name,
                                f"SELinux {field} may not be set")


def _proc_mount(pod: _Pod, level: Level, check_id: str) -> Iterator[Violation]:
    for path, container in pod.containers():
        mount = _ctx(container).get("procMount")
        if mount not in (None, "Default"):
            yield Violation(level, check_id, f"{path}.securityContext.procMount",
                            _name(container), f"procMount {mount!r} unmasks /proc")


@_baseline
def _proc_mount_baseline(pod: _Pod) -> Iterator[Violation]:
    if not pod.user_namespace:  # 1.35+: any value in a user namespace
        yield from _proc_mount(pod, "baseline", "procMount")


@_baseline
def _seccomp_baseline(pod: _Pod) -> Iterator[Violation]:
    for path, name, ctx in _contexts(pod):
        if _map(ctx.get("seccompProfile")).get("type") == "Unconfined":
            yield Violation("baseline", "seccompProfile_baseline",
                            f"{path}.seccompProfile.type", name, "seccomp Unconfined")
    for key, value in sorted(_map(pod.meta.get("annotations")).items()):
        key = str(key)
        if (key == "seccomp.security.alpha.kubernetes.io/pod"
                or key.startswith("container.seccomp.security.alpha.kubernetes.io/")) \
                and str(value) == "unconfined":
            yield Violation("baseline", "seccompProfile_baseline",
                            f"{pod.meta_path}.annotations[{key}]", "", "seccomp unconfined")


@_baseline
def _sysctls(pod: _Pod) -> Iterator[Violation]:
    for i, sysctl in enumerate(_list(pod.context.get("sysctls"))):
        name = str(_map(sysctl).get("name", ""))
        if name not in SAFE_SYSCTLS:
            yield Violation("baseline", "sysctls",
                            f"{pod.spec_path}.securityContext.sysctls[{i}].name", "",
                            f"sysctl {name!r} is not in the safe set")


@_baseline
def _host_probes(pod: _Pod) -> Iterator[Violation]:
    for path, container in pod.containers():
        handlers = [(p, _map(container.get(p)))
                    for p in ("livenessProbe", "readinessProbe", "startupProbe")]
        handlers += [(f"lifecycle.{h}", _map(_map(container.get("lifecycle")).get(h)))
                     for h in ("postStart", "preStop")]
        for where, handler in handlers:
            for kind in ("httpGet", "tcpSocket"):
                host = _map(handler.get(kind)).get("host")
                if host:
                    yield Violation("baseline", "hostProbesAndHostLifecycle",
                                    f"{path}.{where}.{kind}.host", _name(container),
                                    f"{where} targets host {host!r}")


# --------------------------------------------------------------------------- restricted


@_restricted
def _restricted_volumes(pod: _Pod) -> Iterator[Violation]:
    for i, volume in enumerate(_list(pod.spec.get("volumes"))):
        kinds = set(_map(volume)) - _VOLUME_FIELDS
        if kinds & RESTRICTED_VOLUMES or "hostPath" in kinds:
            continue  # allowed, or reported by baseline's hostPathVolumes
        kind = ", ".join(sorted(kinds)) or "unknown"
        yield Violation("restricted", "restrictedVolumes", f"{pod.spec_path}.volumes[{i}]", "",
                        f"volume {_map(volume).get('name')!r} has restricted type {kind}")


@_restricted
def _allow_privilege_escalation(pod: _Pod) -> Iterator[Violation]:
    if pod.windows:
        return
    for path, container in pod.containers():
        if _ctx(container).get("allowPrivilegeEscalation") is not False:
            yield Violation("restricted", "allowPrivilegeEscalation",
                            f"{path}.securityContext.allowPrivilegeEscalation",
                            _name(container), "allowPrivilegeEscalation must be false")


@_restricted
def _run_as_non_root(pod: _Pod) -> Iterator[Violation]:
    if pod.user_namespace:
        return
    pod_value = pod.context.get("runAsNonRoot")
    if pod_value is False:
        yield Violation("restricted", "runAsNonRoot",
                        f"{pod.spec_path}.securityContext.runAsNonRoot", "",
                        "runAsNonRoot=false")
    for path, container in pod.containers():
        value = _ctx(container).get("runAsNonRoot")
        if value is False or (value is None and pod_value is not True):
            yield Violation("restricted", "runAsNonRoot",
                            f"{path}.securityContext.runAsNonRoot", _name(container),
                            "pod or container must set runAsNonRoot=true")


@_restricted
def _run_as_user(pod: _Pod) -> Iterator[Violation]:
    if pod.user_namespace:
        return
    for path, name, ctx in _contexts(pod):
        if ctx.get("runAsUser") == 0:
            yield Violation("restricted", "runAsUser", f"{path}.runAsUser", name,
                            "runAsUser=0 runs as root")


@_restricted
def _seccomp_restricted(pod: _Pod) -> Iterator[Violation]:
    if pod.windows:
        return
    pod_type = _map(pod.context.get("seccompProfile")).get("type")
    if pod_type is not None and pod_type not in _SECCOMP_OK and pod_type != "Unconfined":
        yield Violation("restricted", "seccompProfile_restricted",
                        f"{pod.spec_path}.securityContext.seccompProfile.type", "",
                        f"seccomp profile type {pod_type!r}")
    pod_ok = pod_type in _SECCOMP_OK
    for path, container in pod.containers():
        kind = _map(_ctx(container).get("seccompProfile")).get("type")
        if kind is None and not pod_ok:
            yield Violation("restricted", "seccompProfile_restricted",
                            f"{path}.securityContext.seccompProfile.type", _name(container),
                            "pod or container must set seccompProfile RuntimeDefault or "
                            "Localhost")
        elif kind is not None and kind not in _SECCOMP_OK and kind != "Unconfined":
            yield Violation("restricted", "seccompProfile_restricted",
                            f"{path}.securityContext.seccompProfile.type", _name(container),
                            f"seccomp profile type {kind!r}")


@_restricted
def _capabilities_restricted(pod: _Pod) -> Iterator[Violation]:
    if pod.windows:
        return
    for path, container in pod.containers():
        caps = _map(_ctx(container).get("capabilities"))
        if "ALL" not in _list(caps.get("drop")):
            yield Violation("restricted", "capabilities_restricted",
                            f"{path}.securityContext.capabilities.drop", _name(container),
                            "must drop ALL capabilities")
        added = sorted(str(c) for c in _list(caps.get("add"))
                       if c != "NET_BIND_SERVICE" and c in BASELINE_CAPABILITIES)
        if added:  # beyond the default set: reported by capabilities_baseline
            yield Violation("restricted", "capabilities_restricted",
                            f"{path}.securityContext.capabilities.add", _name(container),
                            f"may add only NET_BIND_SERVICE, not {', '.join(added)}")


@_restricted
def _proc_mount_restricted(pod: _Pod) -> Iterator[Violation]:
    if pod.user_namespace:  # otherwise baseline's procMount already reported it
        yield from _proc_mount(pod, "restricted", "procMount_restricted")


# --------------------------------------------------------------------------- entry points


def check_pod(
    spec: Mapping[str, Any],
    metadata: Mapping[str, Any] | None = None,
    level: Level = "restricted",
    path: str = "spec",
    metadata_path: str = "metadata",
) -> list[Violation]:
    """Every field of a pod ``spec`` (and its ``metadata``) that ``level`` forbids.

    ``path`` and ``metadata_path`` are where the spec and metadata lie in the object, and
    prefix the violations' field paths. The privileged level forbids nothing.
    """
    pod = _Pod(_map(spec), _map(metadata), path, metadata_path)
    checks = {"privileged": [], "baseline": _BASELINE,
              "restricted": _BASELINE + _RESTRICTED}[level]
    return sorted(v for fn in checks for v in fn(pod))


def pod_template(obj: Mapping[str, Any]) -> tuple[str, Mapping[str, Any], Mapping[str, Any]] | None:
    """(spec path, pod metadata, pod spec) of a workload object; None for other kinds."""
    keys = _TEMPLATE_PATHS.get(str(obj.get("kind", "")))
    if keys is None:
        return None
    node: Any = obj
    parent: Any = obj
    for key in keys:
        parent, node = node, _map(node).get(key)
    return ".".join(keys), _map(_map(parent).get("metadata")), _map(node)


def check(obj: Mapping[str, Any], level: Level = "restricted") -> list[Violation]:
    """What ``level`` forbids in a workload's pod template ([] for kinds without pods)."""
    found = pod_template(obj)
    if found is None:
        return []
    path, meta, spec = found
    meta_path = path.rsplit(".", 1)[0] + ".metadata" if "." in path else "metadata"
    return check_pod(spec, meta, level, path, meta_path)


def level_of(obj: Mapping[str, Any]) -> Level:
    """The most restrictive Pod Security level the workload meets."""
    violations = check(obj, "restricted")
    if not violations:
        return "restricted"
    if all(v.level == "restricted" for v in violations):
        return "baseline"
    return "privileged"
