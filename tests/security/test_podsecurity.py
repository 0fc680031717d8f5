"""Security posture of what gen renders: Pod Security, no literal secrets, pinned images.

Checked on the committed example render (out/) and on a render of the benchmark fleet
(bench/fleet.py, NVIDIA clusters on Argo CD and Flux): every workload meets Pod Security
"restricted", or its namespace enforces a lower level and both carry the reason; no file
holds anything that looks like a credential; every image and chart is pinned. The checks
of :mod:`gen.security.podsecurity` are unit-tested at the end.
"""

from __future__ import annotations

import importlib.util
import math
import plistlib
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from gen.security.podsecurity import (
    ENFORCE_LABEL,
    EXCEPTION_ANNOTATION,
    LEVELS,
    Violation,
    check,
    check_pod,
    level_of,
)
from tests.helpers import REPO, snapshot_tree, write_tree

Files = dict[str, bytes]

UNPINNABLE_IMAGES: dict[str, str] = {}
"""Images that cannot be pinned, with the reason. Empty: the one upstream that publishes
only ``latest`` (squat's generic device plugin) is pinned by digest."""


# --------------------------------------------------------------------------- sources


def _committed() -> Files:
    """out/ as committed: the machine-local stat table is never in Git (helpers)."""
    return snapshot_tree(REPO / "out")


def _bench(tmp_path: Path) -> Files:
    from gen.pipeline import load_plan, render_outputs

    spec = importlib.util.spec_from_file_location("bench_fleet", REPO / "bench" / "fleet.py")
    assert spec is not None and spec.loader is not None
    fleet = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fleet)
    profiles = fleet.write_fleet(tmp_path, 4)  # every Kubernetes version, both engines
    outputs, findings, _ = render_outputs(load_plan(profiles, base=tmp_path),
                                          templates_dir=None, out_label="out",
                                          validator="none")
    assert findings == []
    return {str(p): data for p, data in outputs.items()}


@pytest.fixture(params=["committed out/", "bench fleet"], scope="module", name="files")
def _files(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Files:
    if request.param == "committed out/":
        return _committed()
    return _bench(tmp_path_factory.mktemp("bench"))


_PARSED: dict[int, tuple[Files, list[tuple[str, dict[str, Any]]]]] = {}
"""Parsed manifests by render; holding the render keeps its id from being reused."""


def _objects(files: Files) -> list[tuple[str, dict[str, Any]]]:
    """(path, object) of every manifest, parsed once per render."""
    if id(files) not in _PARSED:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        _PARSED[id(files)] = (files, [
            (path, obj) for path, data in files.items() if path.endswith(".yaml")
            for obj in yaml.load_all(data, Loader=loader) if isinstance(obj, dict)
        ])
    return _PARSED[id(files)][1]


def _cluster(path: str) -> str:
    return PurePosixPath(path).parts[0]


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return obj.get("metadata", {}).get("annotations") or {}


# --------------------------------------------------------------------------- Pod Security


def test_every_workload_meets_restricted_or_has_a_reasoned_exception(files: Files) -> None:
    """A workload below 'restricted' sits in a namespace that admits it, and both say why."""
    namespaces: dict[tuple[str, str], dict[str, Any]] = {
        (_cluster(p), o["metadata"]["name"]): o
        for p, o in _objects(files) if o["kind"] == "Namespace"
    }
    workloads = 0
    for path, obj in _objects(files):
        if obj["kind"] not in ("Deployment", "DaemonSet", "StatefulSet", "Job", "CronJob", "Pod"):
            continue
        workloads += 1
        ns = namespaces.get((_cluster(path), obj["metadata"]["namespace"]))
        assert ns is not None, f"{path}: gen renders no Namespace for it"
        enforce = ns["metadata"]["labels"][ENFORCE_LABEL]
        level = level_of(obj)
        assert LEVELS.index(level) >= LEVELS.index(enforce), (
            f"{path}: admission ({enforce}) would reject it:\n"
            + "\n".join(map(str, check(obj, enforce))))
        if level != "restricted":
            assert len(_annotations(ns).get(EXCEPTION_ANNOTATION, "")) > 20, path
            assert len(_annotations(obj).get(EXCEPTION_ANNOTATION, "")) > 20, path
    assert workloads


def test_every_namespace_enforces_a_level_and_explains_a_lower_one(files: Files) -> None:
    """Namespaces enforce 'restricted' unless they carry the exception's reason."""
    seen = 0
    for path, obj in _objects(files):
        meta = obj.get("metadata", {})
        if obj["kind"] == "Namespace":
            labels, annotations = meta["labels"], _annotations(obj)
        elif obj["kind"] == "Application":  # Argo CD creates the chart's namespace
            managed = obj["spec"]["syncPolicy"].get("managedNamespaceMetadata")
            if managed is None:
                continue
            labels, annotations = managed["labels"], managed.get("annotations", {})
        else:
            continue
        seen += 1
        assert labels[ENFORCE_LABEL] in LEVELS, path
        assert labels["pod-security.kubernetes.io/enforce-version"] == "latest", path
        if labels[ENFORCE_LABEL] != "restricted":
            assert len(annotations.get(EXCEPTION_ANNOTATION, "")) > 20, path
        else:
            assert EXCEPTION_ANNOTATION not in annotations, path
    assert seen


def test_checkov_waivers_have_reasons_and_are_documented() -> None:
    """Every checkov skip annotation gen renders names a check, a reason, and is in the docs."""
    doc = (REPO / "docs" / "security.md").read_text(encoding="utf-8")
    found = 0
    for path, obj in _objects(_committed()):
        for key, value in _annotations(obj).items():
            if not key.startswith("checkov.io/skip"):
                continue
            found += 1
            check_id, sep, reason = value.partition("=")
            assert sep and "=" not in reason and len(reason) > 10, (path, key)
            assert re.fullmatch(r"CKV2?_K8S_\d+", check_id), (path, key)
            assert f"`{check_id}`" in doc, check_id
            assert obj["kind"] == "DaemonSet", f"{path}: only the device plugin waives checks"
    assert found


# --------------------------------------------------------------------------- secrets

_SECRET_PATTERNS = (
    re.compile(r"\bhf_[A-Za-z0-9]{30,}"),
    re.compile(r"\bsk-[A-Za-z0-9_\-]{20,}"),
    re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"),
    re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"),
    re.compile(r"\bxox[abpr]-[A-Za-z0-9-]{10,}"),
    re.compile(r"eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\."),  # a JWT
)
_TOKEN = re.compile(r"[A-Za-z0-9+/=_\-]{32,}")
_DIGEST = re.compile(r"sha256:[a-f0-9]{64}")
_SECRET_NAME = re.compile(r"(TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIALS?)$", re.IGNORECASE)
_SECRET_FLAGS = ("--api-key", "--hf-token", "--token", "--password")


def _entropy(text: str) -> float:
    counts = Counter(text)
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def credentials_in(text: str) -> list[str]:
    """Substrings that look like a credential: known formats, or long high-entropy tokens."""
    text = _DIGEST.sub("", text)
    found = [m.group(0) for p in _SECRET_PATTERNS for m in p.finditer(text)]
    found += [t for t in _TOKEN.findall(text) if _entropy(t) > 4.5]
    return found


def _walk(data: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(data, Mapping):
        yield data
        for value in data.values():
            yield from _walk(value)
    elif isinstance(data, list):
        for value in data:
            yield from _walk(value)


def _literal_secret_settings(obj: Any) -> Iterator[str]:
    """Env vars named like a secret with a literal value; secret flags with a literal value."""
    for node in _walk(obj):
        for env in node.get("env") or []:
            if isinstance(env, Mapping) and _SECRET_NAME.search(str(env.get("name", ""))) \
                    and "value" in env:
                yield f"env {env['name']}"
        for key in ("args", "command"):
            argv = node.get(key)
            if isinstance(argv, list):
                for i, arg in enumerate(argv):
                    flag, _, inline = str(arg).partition("=")
                    if flag in _SECRET_FLAGS and (inline or i + 1 < len(argv)):
                        yield f"{key} {flag}"


def test_no_literal_secret_in_any_file(files: Files) -> None:
    """No file holds a credential: token formats, high-entropy strings, literal env values."""
    from gen.redact import literal_secrets

    for path, data in files.items():
        text = data.decode("utf-8")
        assert credentials_in(text) == [], path
        if path.endswith(".plist"):
            job = plistlib.loads(data)
            for name in job.get("EnvironmentVariables", {}):
                assert not _SECRET_NAME.search(name), (path, name)
            # the key is read from a file at start; a literal would be its own argument
            assert list(_literal_secret_settings({"args": job["ProgramArguments"]})) == [], path
    for path, obj in _objects(files):
        assert list(literal_secrets(obj)) == [], path
        assert list(_literal_secret_settings(obj)) == [], path


def test_secret_scan_catches_what_it_should() -> None:
    """The scan flags token formats and random strings, not names, paths or digests."""
    assert credentials_in("token: hf_" + "a1B2c3D4e5" * 4)
    assert credentials_in("key: " + "q8ZkPw2xLr7Tn4VbYc9Md3Hs6Jf1Ga5E")  # 32 random chars
    assert credentials_in("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert not credentials_in("image: vllm/vllm-openai@sha256:" + "ab12" * 16)
    assert not credentials_in("path: profiles/services/llama-8b-vulkan inference/servicemonitor")
    env = {"env": [{"name": "HF_TOKEN", "value": "x"}, {"name": "HF_HOME", "value": "/m"}]}
    assert list(_literal_secret_settings(env)) == ["env HF_TOKEN"]
    assert list(_literal_secret_settings({"args": ["--api-key", "abc"]})) == ["args --api-key"]
    assert list(_literal_secret_settings({"args": ["--api-key-file", "/k"]})) == []


# --------------------------------------------------------------------------- pinning


def pinned(image: str) -> bool:
    """A digest, or a tag that is neither empty nor ``latest``."""
    if re.search(r"@sha256:[a-f0-9]{64}$", image):
        return True
    last = image.rsplit("/", 1)[-1]
    return ":" in last and last.rsplit(":", 1)[1] not in ("", "latest")


def _images(obj: Mapping[str, Any]) -> Iterator[str]:
    """Container images of pod templates, and image references in Helm values."""
    for node in _walk(obj):
        for key in ("containers", "initContainers", "ephemeralContainers"):
            for container in node.get(key) or []:
                if isinstance(container, Mapping):
                    yield str(container.get("image", ""))
        image = node.get("image")
        if isinstance(image, Mapping) and "repository" in image:  # Helm values
            ref = f"{image['repository']}:{image.get('tag', '')}"
            yield f"{ref}@{image['digest']}" if image.get("digest") else ref


def _chart_versions(obj: Mapping[str, Any]) -> Iterator[str]:
    if obj["kind"] == "HelmRelease" and "chart" in obj["spec"]:
        yield str(obj["spec"]["chart"]["spec"].get("version", ""))
    elif obj["kind"] == "OCIRepository":  # a HelmRelease's chartRef: the chart's OCI tag
        yield str(obj["spec"]["ref"].get("tag", ""))
    elif obj["kind"] == "Application" and "chart" in obj["spec"]["source"]:
        yield str(obj["spec"]["source"].get("targetRevision", ""))


def test_every_image_and_chart_is_pinned(files: Files) -> None:
    """Images carry a version tag or digest (waivers aside); charts an exact version."""
    images = set()
    for path, obj in _objects(files):
        for image in _images(obj):
            images.add(image)
            assert pinned(image) or image in UNPINNABLE_IMAGES, f"{path}: {image}"
        for version in _chart_versions(obj):
            assert re.fullmatch(r"v?\d+\.\d+\.\d+", version), f"{path}: chart {version!r}"
    assert images
    assert set(UNPINNABLE_IMAGES) <= images | {""}, "stale waiver"
    for path, data in files.items():
        if not path.endswith(".yaml"):  # plists run host binaries; reports name no images
            assert not re.search(r"[\w./-]+:latest\b", data.decode("utf-8")), path


def test_pinned() -> None:
    """Tags other than latest and digests are pinned; bare names and latest are not."""
    assert pinned("vllm/vllm-openai:v0.21.0")
    assert pinned("registry:5000/team/img@sha256:" + "0" * 64)
    assert not pinned("registry:5000/team/img")
    assert not pinned("squat/generic-device-plugin:latest")
    assert not pinned("busybox")


# --------------------------------------------------------------------------- device plugin

APPLE_CLUSTER = """\
    kind: Cluster
    name: lab
    kubernetes_version: "1.34.2"
    allocation: device-plugin
    node_pools:
      - name: studio
        platform: apple-vm
        nodes: 1
        labels: {gen.dev/pool: studio}
        apple_vm: {chip: m2-ultra, host_memory_gb: 192, vm_memory_gb: 24%s}
    """


def test_device_plugin_image_can_be_overridden_per_pool(tmp_path: Path) -> None:
    """apple_vm.device_plugin_image replaces gen's pinned default for that pool's plugin."""
    from gen.pipeline import load_plan, render_outputs

    mirror = "registry.example.com/mirror/generic-device-plugin:2026-08-14"
    profiles = write_tree(tmp_path / "profiles", {
        "lab.yaml": APPLE_CLUSTER % f", device_plugin_image: {mirror}"})
    outputs, findings, _ = render_outputs(load_plan(profiles), templates_dir=None,
                                          out_label="out", validator="embedded")
    assert findings == []
    ds = yaml.safe_load(outputs[PurePosixPath(
        "lab/platform/gen-apple-dri/daemonset-dri-studio.yaml")])
    assert ds["spec"]["template"]["spec"]["containers"][0]["image"] == mirror
    assert level_of(ds) == "privileged"


def test_device_plugin_image_must_be_pinned(tmp_path: Path) -> None:
    """A floating device-plugin image in a profile is a schema error."""
    from gen.errors import ProfileValidationError
    from gen.pipeline import load_plan

    profiles = write_tree(tmp_path / "profiles", {
        "lab.yaml": APPLE_CLUSTER % ", device_plugin_image: squat/generic-device-plugin:latest"})
    with pytest.raises(ProfileValidationError) as raised:
        load_plan(profiles)
    assert "is not pinned" in raised.value.format_message()
    assert "device_plugin_image" in raised.value.format_message()


# ------------------------------------------------------------------ gen.security.podsecurity

RESTRICTED_POD: dict[str, Any] = {
    "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
    "containers": [{
        "name": "app", "image": "app:1",
        "securityContext": {"allowPrivilegeEscalation": False,
                            "capabilities": {"drop": ["ALL"]}},
    }],
    "volumes": [{"name": "cache", "emptyDir": {}}, {"name": "img", "image": {"reference": "x:1"}}],
}


def _pod(**changes: Any) -> dict[str, Any]:
    """RESTRICTED_POD with top-level keys replaced and container fields merged."""
    import copy

    pod = copy.deepcopy(RESTRICTED_POD)
    container = changes.pop("container", {})
    context = changes.pop("context", {})
    pod["containers"][0].update(container)
    pod["containers"][0]["securityContext"].update(context)
    pod.update(changes)
    return pod


def _ids(violations: list[Violation]) -> set[tuple[str, str]]:
    return {(v.level, v.check) for v in violations}


def test_restricted_pod_passes() -> None:
    """The minimal restricted pod (pod-level non-root and seccomp) has no violation."""
    assert check_pod(RESTRICTED_POD) == []


@pytest.mark.parametrize(("pod", "expected"), [
    (_pod(hostNetwork=True), ("baseline", "hostNamespaces")),
    (_pod(hostPID=True), ("baseline", "hostNamespaces")),
    (_pod(context={"privileged": True}), ("baseline", "privileged")),
    (_pod(context={"capabilities": {"drop": ["ALL"], "add": ["SYS_ADMIN"]}}),
     ("baseline", "capabilities_baseline")),
    (_pod(context={"capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}}),
     ("restricted", "capabilities_restricted")),
    (_pod(context={"capabilities": {"drop": ["NET_RAW"]}}),
     ("restricted", "capabilities_restricted")),
    (_pod(volumes=[{"name": "h", "hostPath": {"path": "/"}}]), ("baseline", "hostPathVolumes")),
    (_pod(volumes=[{"name": "n", "nfs": {"server": "s", "path": "/"}}]),
     ("restricted", "restrictedVolumes")),
    (_pod(container={"ports": [{"containerPort": 80, "hostPort": 80}]}),
     ("baseline", "hostPorts")),
    (_pod(context={"appArmorProfile": {"type": "Unconfined"}}), ("baseline", "appArmorProfile")),
    (_pod(context={"seLinuxOptions": {"type": "spc_t"}}), ("baseline", "seLinuxOptions")),
    (_pod(context={"seLinuxOptions": {"user": "system_u"}}), ("baseline", "seLinuxOptions")),
    (_pod(context={"procMount": "Unmasked"}), ("baseline", "procMount")),
    (_pod(context={"seccompProfile": {"type": "Unconfined"}}),
     ("baseline", "seccompProfile_baseline")),
    (_pod(securityContext={"runAsNonRoot": True, "sysctls": [{"name": "kernel.msgmax"}]}),
     ("baseline", "sysctls")),
    (_pod(container={"livenessProbe": {"httpGet": {"host": "10.0.0.1", "port": 80}}}),
     ("baseline", "hostProbesAndHostLifecycle")),
    (_pod(context={"allowPrivilegeEscalation": True}),
     ("restricted", "allowPrivilegeEscalation")),
    (_pod(securityContext={"seccompProfile": {"type": "RuntimeDefault"}}),
     ("restricted", "runAsNonRoot")),
    (_pod(context={"runAsUser": 0}), ("restricted", "runAsUser")),
    (_pod(securityContext={"runAsNonRoot": True}), ("restricted", "seccompProfile_restricted")),
    (_pod(container={"securityContext": {}}), ("restricted", "allowPrivilegeEscalation")),
])
def test_each_control_is_checked(pod: dict[str, Any], expected: tuple[str, str]) -> None:
    """Each Pod Security control reports its check id at the level that forbids it."""
    assert expected in _ids(check_pod(pod))
    baseline = check_pod(pod, level="baseline")
    assert (expected in _ids(baseline)) == (expected[0] == "baseline")
    assert check_pod(pod, level="privileged") == []


def test_init_and_ephemeral_containers_are_checked() -> None:
    """Violations in init and ephemeral containers carry their path and name."""
    bad = {"name": "debug", "image": "busybox:1", "securityContext": {"privileged": True}}
    pod = _pod(initContainers=[bad], ephemeralContainers=[{**bad, "name": "shell"}])
    paths = {(v.path, v.container) for v in check_pod(pod) if v.check == "privileged"}
    assert paths == {("spec.initContainers[0].securityContext.privileged", "debug"),
                     ("spec.ephemeralContainers[0].securityContext.privileged", "shell")}


def test_user_namespace_and_windows_relaxations() -> None:
    """hostUsers: false lifts non-root (and baseline procMount); Windows skips Linux-only ones."""
    root = _pod(securityContext={"seccompProfile": {"type": "RuntimeDefault"}, "runAsUser": 0})
    assert {"runAsNonRoot", "runAsUser"} <= {v.check for v in check_pod(root)}
    assert not {"runAsNonRoot", "runAsUser"} & {
        v.check for v in check_pod({**root, "hostUsers": False})}
    unmasked = _pod(hostUsers=False, context={"procMount": "Unmasked"})
    assert _ids(check_pod(unmasked)) == {("restricted", "procMount_restricted")}
    assert check_pod(unmasked, level="baseline") == []
    windows = _pod(os={"name": "windows"}, securityContext={"runAsNonRoot": True},
                   container={"securityContext": {}})
    assert check_pod(windows) == []


def test_workload_kinds_and_paths() -> None:
    """Deployments and CronJobs are checked through their pod template, with full paths."""
    template = {"metadata": {"annotations": {
        "container.apparmor.security.beta.kubernetes.io/app": "unconfined"}},
        "spec": _pod(hostIPC=True)}
    cron = {"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": template}}}}
    paths = {v.path for v in check(cron)}
    assert "spec.jobTemplate.spec.template.spec.hostIPC" in paths
    assert ("spec.jobTemplate.spec.template.metadata.annotations"
            "[container.apparmor.security.beta.kubernetes.io/app]") in paths
    deployment = {"kind": "Deployment", "spec": {"template": {"spec": RESTRICTED_POD}}}
    assert level_of(deployment) == "restricted"
    assert level_of({"kind": "Deployment", "spec": {"template": {"spec": _pod(
        securityContext={})}}}) == "baseline"
    assert check({"kind": "Service", "spec": {}}) == []
    assert str(check_pod(_pod(hostPID=True))[0]) == (
        "spec.hostPID: hostPID=true shares a host namespace [hostNamespaces, baseline]")
