"""``gen verify`` against a real API server: the control plane of tools/judge/cluster.py.

kube-apiserver, kube-controller-manager and kube-scheduler from k8s.io/kubernetes v1.37.2 on
loopback (the ``control_plane`` fixture, tests/conftest.py). The plane is given what the
example fleet's ``prod-us-east`` declares: its Nodes and the ResourceSlices the NVIDIA DRA
driver would publish (:func:`tools.judge.fixtures.install_cluster`, from gen's simulation), the
CRDs gen emits, and the namespaces a previous sync and the GPU Operator would have made. The
profiles are the example fleet's, copied, with ``kubernetes_version`` set to the plane's
version (1.36: the Kubernetes version is part of the drift, GEN810) and rendered.

Then: no finding; drift made on the server (a Node gone, another GPU product, MIG devices
missing, another driver) found at the right profile lines; a hand-broken object of a copy of
``out/`` refused by the server at its profile line; a kind the server does not serve; objects
in a namespace the same apply creates; a read-only proof (no object of the cluster changes:
same uid and resourceVersion before and after, and the client sent only GETs and dry-run
PATCHes); RBAC and credential refusals as clear errors.

The plane is shared by the session: the module empties it first and last
(:func:`tools.judge.live.reset`).
"""

from __future__ import annotations

import copy
import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml
from click.testing import CliRunner

from gen.errors import ClusterAccessError, Finding
from gen.fleet.plan import ClusterPlan
from gen.pipeline import load_plan, render
from gen.verify import verify
from gen.verify.client import connect
from tests.helpers import copy_fleet, invoke
from tests.verify.fake import profile_line

if TYPE_CHECKING:
    from tools.judge.cluster import ControlPlane

CLUSTER = "prod-us-east"
NAMESPACES = ("inference", "gpu-operator")
"""Made before verifying: ``inference`` as a first sync would have, ``gpu-operator`` as the
GPU Operator's chart does (out/ puts the MIG ConfigMap there but does not create it)."""


@dataclass(frozen=True)
class Live:
    plane: ControlPlane
    root: Path
    """The fleet copy: profiles/, out/."""
    cluster: ClusterPlan

    @property
    def profile(self) -> Path:
        return self.root / "profiles" / "clusters" / f"{CLUSTER}.yaml"

    def verify(self, out: Path | None = None) -> tuple[list[Finding], Any]:
        client = connect(self.plane.kubeconfig, timeout=30)
        plan = load_plan(self.root / "profiles", base=self.root)
        result = verify(plan, CLUSTER, client, out_dir=out or self.root / "out")
        return list(result.findings), client


def _namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


@pytest.fixture(scope="module")
def live(control_plane: ControlPlane, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[Live]:
    from tools.judge.fixtures import install_cluster
    from tools.judge.live import reset

    plane = control_plane
    reset(plane)
    version = str(plane.must(plane.request("GET", "/version"), "version").body["gitVersion"])
    root = copy_fleet(tmp_path_factory.mktemp("verify-fleet"))
    profile = root / "profiles" / "clusters" / f"{CLUSTER}.yaml"
    text = profile.read_text(encoding="utf-8")
    profile.write_text(text.replace('kubernetes_version: "1.37.2"',
                                    f'kubernetes_version: "{version.lstrip("v")}"'),
                       encoding="utf-8")
    render(root / "profiles", root / "out", base=root, validator="embedded")
    plan = load_plan(root / "profiles", base=root)
    cluster = next(c for c in plan.clusters if c.name == CLUSTER)
    assert install_cluster(plane, cluster) == []
    for name in NAMESPACES:
        plane.must(plane.apply(_namespace(name)), f"namespace {name}")
    try:
        yield Live(plane, root, cluster)
    finally:
        reset(plane)


def _kinds_to_watch(live: Live) -> list[tuple[str, str, str]]:
    """(api version, kind, namespace) of everything gen verify could touch."""
    kinds = {("v1", "Namespace", ""), ("v1", "Node", ""),
             ("resource.k8s.io/v1", "ResourceSlice", ""),
             ("resource.k8s.io/v1", "DeviceClass", "")}
    for file in (live.root / "out" / CLUSTER).rglob("*.yaml"):
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
        if data.get("kind") != "Kustomization":
            kinds.add((data["apiVersion"], data["kind"],
                       data["metadata"].get("namespace", "")))
    return sorted(kinds)


def _list(plane: ControlPlane, api_version: str, kind: str, namespace: str
          ) -> list[dict[str, Any]]:
    """``plane.list``, waiting out a custom resource's storage that is still initialising
    (429 right after its CRD is established)."""
    from tools.judge.cluster import APIError

    deadline = time.monotonic() + 30
    while True:
        try:
            return plane.list(api_version, kind, namespace)
        except APIError as err:
            if err.response.status != 429 or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _snapshot(live: Live) -> dict[str, tuple[str, str]]:
    """Every object of the watched kinds: id → (uid, resourceVersion)."""
    out = {}
    for api_version, kind, namespace in _kinds_to_watch(live):
        for obj in _list(live.plane, api_version, kind, namespace):
            meta = obj["metadata"]
            out[f"{kind}/{meta.get('namespace', '')}/{meta['name']}"] = (
                meta["uid"], meta["resourceVersion"])
    return out


def test_a_cluster_that_matches_has_no_finding_and_nothing_changes(live: Live) -> None:
    """The example cluster on a real API server: no finding, exit 0; nothing written."""
    before = _snapshot(live)
    findings, client = live.verify()
    assert findings == [], [f.format() for f in findings]
    after = _snapshot(live)
    assert after == before
    # The client's own record: reads and dry-run applies, nothing else.
    methods = {r.method for r in client.requests}
    assert methods == {"GET", "PATCH"}
    patches = [r.path for r in client.requests if r.method == "PATCH"]
    assert patches and all("dryRun=All" in p for p in patches)
    assert len(patches) == sum(1 for f in (live.root / "out" / CLUSTER).rglob("*.yaml")
                               if f.name != "kustomization.yaml")


def test_the_cli_against_the_real_server(live: Live, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(live.root)
    result = invoke(CliRunner(), "verify", "--cluster", CLUSTER, "--kubeconfig",
                    live.plane.kubeconfig)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert "51 object(s) dry-run (51 accepted, 0 refused" in result.stderr
    assert "2 pool(s), 7 node(s); 0 error(s)" in result.stderr
    result = invoke(CliRunner(), "verify", "--cluster", CLUSTER, "--kubeconfig",
                    live.plane.kubeconfig, "--json")
    report = json.loads(result.stdout)
    assert report["version"] == 1 and report["findings"] == []
    assert report["checked"]["accepted"] == report["checked"]["objects"] == 51


def _slices_of(plane: ControlPlane, node: str) -> list[dict[str, Any]]:
    return [s for s in plane.list("resource.k8s.io/v1", "ResourceSlice")
            if s["spec"].get("nodeName") == node]


def _replace_slice(plane: ControlPlane, published: dict[str, Any], edit: Any) -> None:
    body = copy.deepcopy(published)
    edit(body)
    plane.must(plane.request("PUT", plane.object_path(body), body), "update a ResourceSlice")


def test_drift_on_the_server_is_found_at_the_profile_lines(live: Live) -> None:
    """A Node gone, another product, MIG devices missing, another driver: four findings."""
    plane = live.plane
    gone = next(n for n in plane.list("v1", "Node") if n["metadata"]["name"] == "h100-full-3")
    saved = [copy.deepcopy(s) for node in ("h100-full-1", "h100-full-3", "h100-mig-0",
                                           "h100-mig-1") for s in _slices_of(plane, node)]

    def product(body: dict[str, Any]) -> None:
        for device in body["spec"]["devices"]:
            device["attributes"]["productName"] = {"string": "NVIDIA H100 NVL"}

    def no_3g(body: dict[str, Any]) -> None:
        body["spec"]["devices"] = [d for d in body["spec"]["devices"]
                                   if "-mig-3g40gb-" not in d["name"]]

    def driver(body: dict[str, Any]) -> None:
        for device in body["spec"]["devices"]:
            device["attributes"]["driverVersion"] = {"version": "570.124.6"}

    try:
        plane.must(plane.delete(gone), "delete a Node")
        for published in _slices_of(plane, "h100-full-3"):
            plane.must(plane.delete(published), "delete a ResourceSlice")
        for published in _slices_of(plane, "h100-full-1"):
            _replace_slice(plane, published, product)
        for published in _slices_of(plane, "h100-mig-1"):
            _replace_slice(plane, published, no_3g)
        for published in _slices_of(plane, "h100-mig-0"):
            _replace_slice(plane, published, driver)
        findings, _ = live.verify()
    finally:
        _restore(live, gone["metadata"]["name"], saved)
    by_rule = {f.rule: f for f in findings}
    assert sorted(by_rule) == ["GEN811", "GEN812", "GEN814", "GEN815"], \
        [f.format() for f in findings]
    lines = {rule: f.location.line for rule, f in by_rule.items() if f.location}
    assert lines == {
        "GEN811": profile_line(live.profile, "nodes: 4", after="name: h100-full"),
        "GEN812": profile_line(live.profile, "gpu: h100-sxm5-80gb", after="name: h100-full"),
        "GEN814": profile_line(live.profile, "mig_layout: h100-mixed"),
        "GEN815": profile_line(live.profile, "driver_version:", after="name: h100-mig"),
    }
    assert all(f.location and f.location.path == f"profiles/clusters/{CLUSTER}.yaml"
               for f in findings)
    assert "3 node(s) labelled gen.dev/pool=h100-full" in by_rule["GEN811"].message
    assert "h100-full-1 publish GPUs 'NVIDIA H100 NVL'" in by_rule["GEN812"].message
    assert "h100-mig-1 publish MIG 3g.40gb ×0" in by_rule["GEN814"].message
    assert "h100-mig-0 run NVIDIA driver 570.124.6" in by_rule["GEN815"].message
    assert live.verify()[0] == []  # restored


def _restore(live: Live, node: str, saved: list[dict[str, Any]]) -> None:
    """Put back the Node and the slices the drift test changed."""
    from tools.judge.fixtures import create_node, nodes

    plane = live.plane
    if node not in {n["metadata"]["name"] for n in plane.list("v1", "Node")}:
        create_node(plane, next(n for _, n in nodes(live.cluster)
                                if n["metadata"]["name"] == node))
    for published in saved:
        name = published["metadata"]["name"]
        body = {**published, "metadata": {"name": name}}
        current = plane.get("resource.k8s.io/v1", "ResourceSlice", name)
        if current.ok:
            body["metadata"]["resourceVersion"] = current.body["metadata"]["resourceVersion"]
            plane.must(plane.request("PUT", plane.object_path(body), body), "restore a slice")
        else:
            plane.must(plane.create(body), "recreate a slice")


def _out_copy(live: Live, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    shutil.copytree(live.root / "out", out)
    return out


def test_a_hand_broken_object_is_refused_at_its_profile(live: Live, tmp_path: Path) -> None:
    """A Service with a port the API server refuses, and an unknown field (strict)."""
    out = _out_copy(live, tmp_path)
    service = out / CLUSTER / "workloads/inference/service-llama-70b.yaml"
    data = yaml.safe_load(service.read_text(encoding="utf-8"))
    data["spec"]["ports"][0]["port"] = 70000
    service.write_text(yaml.safe_dump(data), encoding="utf-8")
    policy = out / CLUSTER / "workloads/inference/networkpolicy-llama-8b.yaml"
    data = yaml.safe_load(policy.read_text(encoding="utf-8"))
    data["spec"]["podSelectr"] = {}
    policy.write_text(yaml.safe_dump(data), encoding="utf-8")
    findings, _ = live.verify(out)
    assert sorted(f.rule for f in findings) == ["GEN801", "GEN801"], \
        [f.format() for f in findings]
    port = next(f for f in findings if "Service" in f.message)
    assert port.location is not None
    assert port.location.path == "profiles/services/llama-70b.yaml"
    assert port.location.line == profile_line(live.root / port.location.path,
                                              "kind: InferenceService")
    assert port.key_path == "spec.ports[0].port"
    assert "Invalid value: 70000" in port.message
    assert port.related[0].path.endswith("workloads/inference/service-llama-70b.yaml")
    strict = next(f for f in findings if "NetworkPolicy" in f.message)
    assert strict.location is not None
    assert strict.location.path == "profiles/services/llama-8b-mig.yaml"
    # Server-side apply checks the patch against the type's schema before anything else.
    assert ".spec.podSelectr: field not declared in schema" in strict.message


def test_a_kind_the_cluster_does_not_serve(live: Live, tmp_path: Path) -> None:
    """A custom resource whose CRD is not installed: GEN802, at the file (gen did not render
    it, so no profile produced it)."""
    out = _out_copy(live, tmp_path)
    rule = out / CLUSTER / "workloads/inference/prometheusrule-extra.yaml"
    rule.write_text(yaml.safe_dump({
        "apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
        "metadata": {"name": "extra", "namespace": "inference"}, "spec": {"groups": []}}),
        encoding="utf-8")
    findings, _ = live.verify(out)
    assert [f.rule for f in findings] == ["GEN802"]
    assert "the cluster has no CRD for PrometheusRule (monitoring.coreos.com/v1)" in \
        findings[0].message
    assert findings[0].location is not None
    assert findings[0].location.path.endswith("prometheusrule-extra.yaml")


def test_objects_in_a_namespace_the_apply_creates(live: Live, tmp_path: Path) -> None:
    """A namespace that does not exist yet, created by the same out/: the server answers
    "namespace not found" for its objects, which are reported as not checked (info)."""
    out = _out_copy(live, tmp_path)
    count = 0
    for file in (out / CLUSTER).rglob("*.yaml"):
        text = file.read_text(encoding="utf-8")
        data = yaml.safe_load(text)
        if data.get("kind") == "Namespace" and data["metadata"]["name"] == "inference":
            data["metadata"]["name"] = "fresh"
        elif data.get("metadata", {}).get("namespace") == "inference":
            data["metadata"]["namespace"] = "fresh"
            count += 1
        else:
            continue
        file.write_text(yaml.safe_dump(data), encoding="utf-8")
    findings, _ = live.verify(out)
    assert {f.rule for f in findings} == {"GEN803"} and len(findings) == count > 10
    assert all("its namespace 'fresh' is created by this apply" in f.message for f in findings)
    assert not any(n["metadata"]["name"] == "fresh" for n in live.plane.list("v1", "Namespace"))


def _grant(plane: ControlPlane, user: str, resources: dict[str, list[str]]) -> None:
    rules = [{"apiGroups": [group], "resources": names, "verbs": ["get", "list"]}
             for group, names in resources.items()]
    plane.must(plane.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                            "metadata": {"name": f"gen-verify-test-{user}"}, "rules": rules}),
               "ClusterRole")
    _bind(plane, user, f"gen-verify-test-{user}")


def _bind(plane: ControlPlane, user: str, role: str) -> None:
    plane.must(plane.apply({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": f"gen-verify-test-{user}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                    "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}),
        "ClusterRoleBinding")


def _user_kubeconfig(live: Live, tmp_path: Path, user: str) -> Path:
    from tools.judge.cluster import write_kubeconfig
    from tools.judge.pki import client_certificate

    cert, key = client_certificate(live.plane.pki, user)
    return write_kubeconfig(live.plane, tmp_path / f"{user}.kubeconfig", cert, key)


def test_a_user_who_may_not_list_resourceslices(live: Live, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """RBAC: nodes and namespaces yes, ResourceSlices no: GEN800 naming the verb and resource,
    exit 1, no traceback, no credential."""
    _grant(live.plane, "viewer", {"": ["nodes", "namespaces"]})
    config = _user_kubeconfig(live, tmp_path, "viewer")
    monkeypatch.chdir(live.root)
    deadline = time.monotonic() + 20
    while True:  # the RBAC authorizer sees a new binding through its informer
        result = invoke(CliRunner(), "verify", "--cluster", CLUSTER, "--kubeconfig", config)
        if "may not list nodes" not in result.stderr or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert result.exit_code == 1
    assert "error GEN800: the user of context 'gen-judge'" in result.stderr
    assert "may not list resourceslices.resource.k8s.io (403 Forbidden)" in result.stderr
    assert 'User "viewer" cannot list resource "resourceslices"' in result.stderr
    key = (tmp_path / "viewer.kubeconfig").read_text(encoding="utf-8")
    assert "BEGIN" not in result.output and key not in result.output


def test_a_user_with_no_grant_and_a_token_the_server_does_not_know(
        live: Live, tmp_path: Path) -> None:
    config = _user_kubeconfig(live, tmp_path, "nobody")
    with pytest.raises(ClusterAccessError) as info:
        live_verify_with(live, config)
    assert "may not list nodes (403 Forbidden)" in info.value.format_message()
    token = tmp_path / "token.kubeconfig"
    data = json.loads(config.read_text(encoding="utf-8"))
    data["users"][0]["user"] = {"token": "not-a-token-the-server-knows"}
    token.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ClusterAccessError) as info:
        live_verify_with(live, token)
    text = info.value.format_message()
    assert "refuses the credentials of context 'gen-judge'" in text and "401" in text
    assert "not-a-token-the-server-knows" not in text


def live_verify_with(live: Live, kubeconfig: Path) -> None:
    plan = load_plan(live.root / "profiles", base=live.root)
    verify(plan, CLUSTER, connect(kubeconfig, timeout=30), out_dir=live.root / "out")


def _doc_block(text: str, marker: str) -> str:
    import re

    match = re.compile(r"```\w*\n(.*?)```", re.DOTALL).search(text, text.index(marker))
    assert match is not None, marker
    return match.group(1)


def test_the_worked_example_of_docs_verification_md(live: Live, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/verification.md shows what gen verify prints for the example fleet as committed
    (profiles/ says Kubernetes 1.37.2, out/ is its render) against this 1.37 plane with one
    node of h100-full gone: the server address is shown as a user's would be."""
    from tests.helpers import REPO

    doc = (REPO / "docs" / "verification.md").read_text(encoding="utf-8")
    command = _doc_block(doc, "<!-- verify-command -->").strip()
    assert command == "gen verify --cluster prod-us-east --context staging"
    root = copy_fleet(tmp_path / "fleet")
    shutil.copytree(REPO / "out", root / "out")
    plane = live.plane
    gone = next(n for n in plane.list("v1", "Node") if n["metadata"]["name"] == "h100-full-3")
    saved = [copy.deepcopy(s) for s in _slices_of(plane, "h100-full-3")]
    monkeypatch.chdir(root)
    config = json.loads(plane.kubeconfig.read_text(encoding="utf-8"))
    config["contexts"][0]["name"] = config["current-context"] = "staging"
    (root / "kubeconfig").write_text(json.dumps(config), encoding="utf-8")
    monkeypatch.setenv("KUBECONFIG", str(root / "kubeconfig"))
    try:
        plane.must(plane.delete(gone), "delete a Node")
        for published in saved:
            plane.must(plane.delete(published), "delete a ResourceSlice")
        text = invoke(CliRunner(), *command.split()[1:])
        as_json = invoke(CliRunner(), *command.split()[1:], "--json")
    finally:
        _restore(live, "h100-full-3", saved)
    shown = "https://staging.example.com:6443"
    output = (text.stdout + text.stderr).replace(plane.server, shown)
    assert text.exit_code == 1
    assert output == _doc_block(doc, "<!-- verify-output -->"), output
    report = json.loads(as_json.stdout.replace(plane.server, shown))
    assert report == json.loads(_doc_block(doc, "<!-- verify-json -->")), \
        json.dumps(report, indent=2)
    # The refusal it shows: the Service's port changed by hand in out/.
    service = root / "out" / CLUSTER / "workloads/inference/service-llama-70b.yaml"
    data = yaml.safe_load(service.read_text(encoding="utf-8"))
    data["spec"]["ports"][0]["port"] = 70000
    service.write_text(yaml.safe_dump(data), encoding="utf-8")
    refused = invoke(CliRunner(), *command.split()[1:])
    assert refused.exit_code == 1
    assert _doc_block(doc, "<!-- verify-refusal -->") in refused.stdout, refused.stdout


def test_the_documented_role_is_enough(live: Live, tmp_path: Path) -> None:
    """docs/verification.md's ClusterRole: a user bound to it verifies with no finding."""
    from tests.helpers import REPO

    doc = (REPO / "docs" / "verification.md").read_text(encoding="utf-8")
    role = yaml.safe_load(_doc_block(doc, "<!-- verify-rbac -->"))
    role["metadata"]["name"] = "gen-verify-test-verifier"
    live.plane.must(live.plane.apply(role), "the documented ClusterRole")
    _bind(live.plane, "verifier", role["metadata"]["name"])
    config = _user_kubeconfig(live, tmp_path, "verifier")
    deadline = time.monotonic() + 20
    while True:  # the RBAC authorizer sees a new binding through its informer
        try:
            plan = load_plan(live.root / "profiles", base=live.root)
            result = verify(plan, CLUSTER, connect(config, timeout=30),
                            out_dir=live.root / "out")
        except ClusterAccessError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
            continue
        break
    assert list(result.findings) == [], "\n".join(f.format() for f in result.findings)
    assert result.accepted == result.objects == 51
