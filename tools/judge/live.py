"""The control-plane categories: a real kube-apiserver, controller-manager and scheduler decide
on gen's output for whole fleets.

For each cluster of a fleet (:class:`Fleet`), the plane is emptied (:func:`reset`), the Nodes and
ResourceSlices of the cluster's pools are made (:mod:`tools.judge.fixtures`), and every object gen
renders for the cluster is applied, server-side, dry-run first and then for real. Then the
controllers turn Deployments into Pods and claims, and the scheduler places them. Verdicts:

* **objects** — gen: the object passes gen's embedded validation (schema of the cluster's
  Kubernetes version, CRD schemas and rules, names); upstream: the API server's dry-run apply
  (strict field validation, admission, CEL compilation of DeviceClass selectors).
* **dynamic MIG** — gen: the ResourceSlices it simulates for a pool are what the NVIDIA driver
  would publish, so valid; upstream: the API server accepts them (counter sets, device limits).
* **Pod Security** — gen: the workload passes the Pod Security level of its namespace (it warns,
  GEN502, when a workload opts out); upstream: the PodSecurity admission of the pods the
  ReplicaSet controller creates (a ``FailedCreate`` that names PodSecurity refuses).
* **quotas** — gen: the claims of a namespace's services fit the ResourceQuota gen renders
  unless GEN219 says they exceed it (judged per quota, and per workload outside such quotas);
  upstream: ResourceQuota admission of the ResourceClaims the resourceclaim controller creates.
* **allocation** — gen: every replica of the service gets its devices unless lint reports a
  capacity finding for it (GEN204/205/240/241/304/330) or refuses a class or claim template it
  needs; upstream: the scheduler binds every pod, or leaves one ``PodScheduled=False``.
* **pool selection** — gen: each InferencePool selects exactly the pods of its service's serving
  workloads, each with a container port among its ``targetPorts``; upstream: the API server's
  label selection over every pod the controllers created in the namespace (the endpoint
  picker's included), compared with the pods the ReplicaSet controller made for the service.

All clusters of a fleet are judged at the apiserver's version (v1.36); the cluster's own
Kubernetes minor decides gen's side. The harness's limits are listed in ``docs/conformance.md``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gen.emit.render import RenderedObject, make_environment, render_cluster
from gen.emit.validate import SchemaValidator
from gen.errors import Finding, GenError, Severity, SourceLocation
from gen.fleet.plan import ClusterPlan
from gen.pipeline import check_report, load_plan
from tools.judge.cluster import ControlPlane, wait_for
from tools.judge.fixtures import bootstrap_namespaces, bundled_crds, install_cluster, volume_for
from tools.judge.lws import group_workloads, merged_groups
from tools.judge.pins import KUBERNETES
from tools.judge.report import Category

__all__ = ["CAPACITY_RULES", "Fleet", "LiveCategories", "judge_fleet", "prepare", "reset"]

CAPACITY_RULES = frozenset({"GEN204", "GEN205", "GEN240", "GEN241", "GEN304", "GEN330",
                            "GEN421", "GEN422", "GEN427"})
"""gen's findings that say a service's replicas will not all get their devices (or a node)."""

OBJECT_RULES = frozenset({"GEN201", "GEN203", "GEN216"})
"""gen's lint findings that say the API server will refuse an object made from the profile at
the finding's location: a DRA version not served, a selector that does not compile, more
selectors than the API allows."""

GEN_LOCK = threading.Lock()
"""gen's library is made for one thread a process (its caches are not locked): when several
control planes judge side by side, gen's side of each verdict is computed under this lock."""

SYSTEM_NAMESPACES = frozenset({"default", "kube-system", "kube-public", "kube-node-lease"})

WAIT_SECONDS = 90.0
"""How long the controllers and the scheduler get to settle one cluster's workloads."""

SETTLE_SECONDS = 2.0
"""How long an answer (every pod placed or refused) must hold before it counts: the scheduler
retries unschedulable pods on events, so a pod can still move after it was refused once."""


@dataclass(frozen=True)
class Fleet:
    """A fleet to judge: a profiles folder and the base its paths are relative to."""

    name: str
    profiles: Path
    base: Path


class LiveCategories:
    """The six control-plane categories, filled fleet by fleet."""

    def __init__(self) -> None:
        k8s = KUBERNETES
        self.objects = Category("objects", f"kube-apiserver {k8s} server-side apply (dry-run)")
        self.dynamic_mig = Category("dynamic MIG",
                                    f"kube-apiserver {k8s} ResourceSlice validation")
        self.pod_security = Category("Pod Security",
                                     f"PodSecurity admission (kube-apiserver {k8s})")
        self.quotas = Category("quotas", f"ResourceQuota admission (kube-apiserver {k8s})")
        self.allocation = Category("allocation", f"kube-scheduler {k8s} with DRA, no kubelet")
        self.pool_selection = Category(
            "pool selection", f"kube-apiserver {k8s} label selection of the pods the "
            "ReplicaSet controller creates")

    def all(self) -> tuple[Category, ...]:
        return (self.objects, self.dynamic_mig, self.pod_security, self.quotas, self.allocation,
                self.pool_selection)


# --------------------------------------------------------------------------- the plane


def prepare(plane: ControlPlane) -> None:
    """Install the CRDs gen validates custom resources against; wait until they are served."""
    crds = bundled_crds()
    names = []
    for crd in crds:
        plane.must(plane.apply(crd), f"CRD {crd['metadata']['name']}")
        names.append(crd["metadata"]["name"])

    def established() -> bool | None:
        for name in names:
            got = plane.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", name).body
            status = got.get("status", {})
            conditions = {c["type"]: c["status"] for c in status.get("conditions") or ()}
            if conditions.get("Established") != "True":
                return None
        return True

    wait_for("CRDs established", established, 60)
    plane.forget_discovery()

    def served() -> bool | None:
        # Established is not yet "storage ready": a list can still answer 429 for a moment.
        for crd in crds:
            spec = crd["spec"]
            version = next(v["name"] for v in spec["versions"] if v.get("served", True))
            found = plane.resource(f"{spec['group']}/{version}", spec["names"]["kind"])
            if found is None:
                plane.forget_discovery()
                return None
            path = f"/apis/{spec['group']}/{version}/{found[0]}"
            if plane.request("GET", path, query={"limit": "1"}).status != 200:
                return None
        return True

    wait_for("custom resources served", served, 60)


def _drop_finalizers(plane: ControlPlane) -> None:
    """Release the finalizers no controller of the harness will ever remove (an Argo CD
    Application's ``resources-finalizer``, pvc-protection of a claim a bound pod uses)."""
    for obj in plane.applied:
        if obj["kind"] == "PersistentVolumeClaim" or obj["metadata"].get("finalizers"):
            plane.request("PATCH", plane.object_path(obj), {"metadata": {"finalizers": None}},
                          content_type="application/merge-patch+json")


_EMPTIED = (("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "ReplicaSet"),
            ("v1", "Pod"), ("resource.k8s.io/v1", "ResourceClaim"),
            ("resource.k8s.io/v1", "ResourceClaimTemplate"), ("v1", "PersistentVolumeClaim"),
            ("v1", "ResourceQuota"), ("v1", "Event"))
"""What :func:`reset` deletes itself, at once, owners before what they own (a ReplicaSet left
standing would make its pods again): the namespace controller would otherwise wait on
pods no kubelet stops and re-check only after a back-off; and in a namespace kept for the next
cluster, an old event about a pod of the same name would read as the next cluster's verdict."""


def reset(plane: ControlPlane, keep: Iterable[str] = ()) -> None:
    """Remove what a cluster left: its workloads, claims, Nodes, slices, DeviceClasses and
    volumes. Namespaces in ``keep`` (the next cluster renders them too) are emptied and kept;
    the others are deleted. Waits until no pod or claim is left and the namespaces are gone."""
    _drop_finalizers(plane)
    kept = set(keep)
    namespaces = [n["metadata"]["name"] for n in plane.list("v1", "Namespace")
                  if n["metadata"]["name"] not in SYSTEM_NAMESPACES]
    doomed = [name for name in namespaces if name not in kept]
    applied = list(plane.applied)
    for name in namespaces:
        kinds = [*_EMPTIED, *sorted({(str(o["apiVersion"]), str(o["kind"])) for o in applied
                                     if o["metadata"].get("namespace") == name})]
        for api_version, kind in kinds:
            if plane.resource(api_version, kind) is not None:
                plane.request("DELETE", plane.path(api_version, kind, namespace=name),
                              query={"gracePeriodSeconds": "0"})
        if name in doomed:
            plane.delete({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    for api_version, kind in (("v1", "Node"), ("resource.k8s.io/v1", "ResourceSlice"),
                              ("resource.k8s.io/v1", "DeviceClass"), ("v1", "PersistentVolume")):
        plane.request("DELETE", plane.path(api_version, kind))  # the whole collection
    for obj in applied:  # cluster-scoped objects gen rendered
        if not obj["metadata"].get("namespace") and obj["kind"] not in ("Namespace",
                                                                      "CustomResourceDefinition"):
            plane.delete(obj)

    def gone() -> bool | None:
        left = [n for n in plane.list("v1", "Namespace") if n["metadata"]["name"] in doomed]
        for name in namespaces:
            plane.request("DELETE", f"/api/v1/namespaces/{name}/pods",
                          query={"gracePeriodSeconds": "0"})
        if left or any(plane.list(api_version, kind) for api_version, kind in (
                ("apps/v1", "ReplicaSet"), ("v1", "Pod"), ("resource.k8s.io/v1", "ResourceClaim"))):
            return None
        return True

    try:
        wait_for("namespaces deleted", gone, 120)
    except TimeoutError as exc:
        stuck = [f"{n['metadata']['name']}: {c.get('message', '')}"
                 for n in plane.list("v1", "Namespace") if n["metadata"]["name"] in doomed
                 for c in n.get("status", {}).get("conditions") or () if c.get("status") == "True"]
        raise TimeoutError(f"{exc}; " + "; ".join(stuck)) from None
    plane.applied.clear()


# ----------------------------------------------------------------------- applying


_ORDER = {"Namespace": 0, "CustomResourceDefinition": 0, "ServiceAccount": 1, "DeviceClass": 1,
          "ResourceQuota": 1, "PriorityClass": 1, "ConfigMap": 2, "Secret": 2,
          "ResourceClaimTemplate": 2, "PersistentVolumeClaim": 2}


DRA_KINDS = frozenset({"DeviceClass", "ResourceClaimTemplate", "ResourceClaim"})

WORKLOAD_KINDS = frozenset({"Deployment", "StatefulSet", "DaemonSet", "Job", "LeaderWorkerSet"})


def _bind(plane: ControlPlane, claim: Mapping[str, Any]) -> None:
    """Stand in for the storage provisioner: a PersistentVolume for the claim, both bound."""
    volume = volume_for(claim)
    plane.must(plane.apply(volume), "the volume of a claim")
    name = volume["metadata"]["name"]
    # As the volume binder does (kubernetes/kubernetes pkg/controller/volume/persistentvolume
    # pv_controller.go@v1.36.3): the scheduler counts a claim as bound only with the annotation.
    plane.must(plane.request("PATCH", plane.object_path(claim), {
        "metadata": {"annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
        "spec": {"volumeName": name}},
        content_type="application/merge-patch+json"), "bind a claim")
    plane.must(plane.request("PATCH", plane.object_path(claim) + "/status", {"status": {
        "phase": "Bound", "accessModes": volume["spec"]["accessModes"],
        "capacity": volume["spec"]["capacity"]}},
        content_type="application/merge-patch+json"), "claim status")
    plane.must(plane.request("PATCH", plane.object_path(volume) + "/status",
                             {"status": {"phase": "Bound"}},
                             content_type="application/merge-patch+json"), "volume status")


def _wait_quotas(plane: ControlPlane, applied: Sequence[Mapping[str, Any]]) -> None:
    """Wait until the resourcequota controller has counted each applied ResourceQuota
    (``status.hard`` equals the spec, ``status.used`` all zero): admission charges claims
    against the status, and a quota the controller has not counted yet, or counted while it
    still saw the previous cluster's claims, would decide instead."""
    quotas = [o for o in applied if o["kind"] == "ResourceQuota"]

    def counted() -> bool | None:
        for quota in quotas:
            meta = quota["metadata"]
            status = plane.get("v1", "ResourceQuota", meta["name"], meta["namespace"]).body.get(
                "status") or {}
            used = status.get("used")
            # Nothing is charged yet (no workload is applied): a count above zero is the
            # controller still seeing the claims the last cluster left.
            if status.get("hard") != quota["spec"]["hard"] or used is None or any(
                    str(value) != "0" for value in used.values()):
                return None
        return True

    if quotas:
        try:
            wait_for("quotas counted", counted, 60)
        except TimeoutError as exc:
            seen = {q["metadata"]["name"]: plane.get("v1", "ResourceQuota", q["metadata"]["name"],
                                                     q["metadata"]["namespace"]).body.get("status")
                    for q in quotas}
            raise TimeoutError(f"{exc}: {seen}") from None


def _as_keda_scales(obj: Mapping[str, Any], objects: Sequence[Mapping[str, Any]]
                    ) -> Mapping[str, Any]:
    """The workload as KEDA would run it while idle: a Deployment that a ScaledObject scales
    runs ``minReplicaCount`` replicas ("Minimum number of replicas KEDA will scale the resource
    down to", default 0; kedacore/keda-docs ``content/docs/2.20/reference/scaledobject-spec.md``),
    since no KEDA runs in the harness. gen's capacity rules count the same minimum."""
    if obj["kind"] != "Deployment":
        return obj
    meta = obj["metadata"]
    for other in objects:
        if other["kind"] != "ScaledObject" or other["metadata"].get("namespace") != \
                meta.get("namespace"):
            continue
        spec = other.get("spec", {})
        if spec.get("scaleTargetRef", {}).get("name") == meta["name"]:
            replicas = int(spec.get("minReplicaCount", 0))
            return {**obj, "spec": {**obj["spec"], "replicas": replicas}}
    return obj


def _apply_order(objects: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(objects, key=lambda o: (4 if o["kind"] in WORKLOAD_KINDS else
                                          _ORDER.get(str(o["kind"]), 3), str(o["kind"]),
                                          str(o["metadata"].get("namespace", "")),
                                          str(o["metadata"]["name"])))


def _case(fleet: Fleet, cluster: ClusterPlan, *parts: str) -> str:
    return "/".join((fleet.name, cluster.name, *parts))


def _object_id(obj: Mapping[str, Any]) -> str:
    meta = obj["metadata"]
    namespace = meta.get("namespace", "")
    return f"{obj['kind']}/{namespace + '/' if namespace else ''}{meta['name']}"


def _apply_cluster(plane: ControlPlane, fleet: Fleet, cluster: ClusterPlan,
                   objects: Sequence[Mapping[str, Any]], gen_ok: Mapping[str, bool],
                   categories: LiveCategories) -> list[Mapping[str, Any]]:
    """Dry-run then apply every object; record the objects verdicts; return what was applied."""
    applied: list[Mapping[str, Any]] = []
    for namespace in bootstrap_namespaces(cluster, objects):
        plane.must(plane.apply(namespace), f"namespace {namespace['metadata']['name']}")
    counted = False
    for obj in _apply_order(objects):
        if obj["kind"] in WORKLOAD_KINDS and not counted:  # workloads come last
            _wait_quotas(plane, applied)
            counted = True
        oid = _object_id(obj)
        if plane.resource(str(obj["apiVersion"]), str(obj["kind"])) is None:
            categories.objects.add(_case(fleet, cluster, oid), "valid" if gen_ok[oid] else
                                   "invalid", "not served",
                                   f"the API server serves no {obj['apiVersion']} {obj['kind']}")
            continue
        dry = plane.apply(obj, dry_run=True)
        upstream = "valid" if dry.ok else "invalid"
        categories.objects.add(_case(fleet, cluster, oid), "valid" if gen_ok[oid] else "invalid",
                               upstream, dry.message)
        if dry.ok:
            obj = _as_keda_scales(obj, objects)
            real = plane.apply(obj)
            if real.ok:
                applied.append(obj)
                plane.applied.append(obj)
                if obj["kind"] == "PersistentVolumeClaim":
                    _bind(plane, obj)
                if obj["kind"] == "LeaderWorkerSet":  # what its controller would make
                    for group in group_workloads(obj, objects):
                        made = plane.apply(group)
                        plane.must(made, f"group StatefulSet {group['metadata']['name']}")
                        applied.append(group)
                        plane.applied.append(group)
    return applied


# ------------------------------------------------------------------------ verdicts


def _events(plane: ControlPlane, namespace: str) -> list[dict[str, Any]]:
    return plane.list("v1", "Event", namespace)


def _workloads(applied: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return [o for o in applied if o["kind"] in ("Deployment", "StatefulSet")]  # with pods


@dataclass
class _Outcome:
    """What happened to one workload."""

    state: str = "pending"
    """scheduled | unschedulable | refused:podsecurity | refused:quota | pending"""
    detail: str = ""


def _selector(workload: Mapping[str, Any]) -> str:
    labels = workload["spec"]["selector"].get("matchLabels", {})
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _outcome(plane: ControlPlane, workload: Mapping[str, Any]) -> _Outcome:
    namespace = str(workload["metadata"]["namespace"])
    name = str(workload["metadata"]["name"])
    want = int(workload["spec"].get("replicas", 1))
    pods = plane.list("v1", "Pod", namespace, _selector(workload))
    refusals = [e for e in _events(plane, namespace)
                if e.get("reason") in ("FailedCreate", "FailedResourceClaimCreation")
                and str(e.get("involvedObject", {}).get("name", "")).startswith(name)]
    for event in refusals:
        message = str(event.get("message", ""))
        if "PodSecurity" in message:
            return _Outcome("refused:podsecurity", message)
        if "exceeded quota" in message:
            return _Outcome("refused:quota", message)
    for pod in pods:
        for condition in pod.get("status", {}).get("conditions", ()):
            if condition.get("type") == "PodScheduled" and condition.get("status") == "False" \
                    and condition.get("reason") in ("Unschedulable", "SchedulerError"):
                return _Outcome("unschedulable", str(condition.get("message", "")))
    if len(pods) >= want and all(p.get("spec", {}).get("nodeName") for p in pods):
        return _Outcome("scheduled", f"{len(pods)} pod(s) bound")
    if refusals:
        return _Outcome("refused:other", str(refusals[-1].get("message", "")))
    return _Outcome("pending", f"{sum(bool(p.get('spec', {}).get('nodeName')) for p in pods)}"
                               f"/{want} pod(s) bound")


def _settle(plane: ControlPlane, workloads: Sequence[Mapping[str, Any]]
            ) -> dict[str, _Outcome]:
    """Each workload's outcome once none is pending and the answers held for a while."""
    deadline = time.monotonic() + WAIT_SECONDS
    stable_since = None
    last: dict[str, _Outcome] = {}
    while True:
        now = {_object_id(w): _outcome(plane, w) for w in workloads}
        if any(o.state == "pending" for o in now.values()):
            stable_since = None
        elif {k: o.state for k, o in now.items()} != {k: o.state for k, o in last.items()}:
            stable_since = time.monotonic()
        elif stable_since is not None and time.monotonic() - stable_since >= SETTLE_SECONDS:
            return now
        last = now
        if time.monotonic() > deadline:
            return now
        time.sleep(0.5)


def _service_of(workload: Mapping[str, Any]) -> str:
    labels = workload["metadata"].get("labels", {})
    return str(labels.get("app.kubernetes.io/name") or labels.get("app.kubernetes.io/instance")
               or workload["metadata"]["name"])


def _dependencies(workload: Mapping[str, Any], objects: Sequence[RenderedObject]) -> list[str]:
    """The ids of the claim templates and DeviceClasses a workload's pods need."""
    pod = workload["spec"]["template"]["spec"]
    namespace = workload["metadata"]["namespace"]
    templates = {str(c.get("resourceClaimTemplateName")) for c in pod.get("resourceClaims") or ()}
    found = []
    for obj in objects:
        meta = obj.data["metadata"]
        if obj.kind == "ResourceClaimTemplate" and meta["name"] in templates \
                and meta.get("namespace") == namespace:
            found.append(_object_id(obj.data))
            for request in obj.data["spec"]["spec"].get("devices", {}).get("requests", ()):
                choices = [request.get("exactly") or request, *request.get("firstAvailable", ())]
                for choice in choices:
                    if choice.get("deviceClassName"):
                        found.append(f"DeviceClass/{choice['deviceClassName']}")
    return found


def _gen_exceeded_quotas(findings: Sequence[Finding], cluster: ClusterPlan
                         ) -> set[tuple[str, str]]:
    """(namespace, class) of each quota gen says its services' claims exceed (GEN219, found at
    the quota's ``quotas[i].devices``)."""
    exceeded = set()
    quotas = cluster.cluster.quotas
    for finding in findings:
        if finding.rule == "GEN219" and finding.cluster == cluster.name:
            index = int(finding.key_path.split("[", 1)[1].split("]", 1)[0])
            exceeded.add((quotas[index].namespace, quotas[index].gpu_class))
    return exceeded


def _workload_classes(workloads: Sequence[Mapping[str, Any]],
                      objects: Sequence[RenderedObject]) -> set[tuple[str, str]]:
    """(namespace, DeviceClass) of every claim the workloads' pods make."""
    return {(str(w["metadata"]["namespace"]), d.split("/", 1)[1])
            for w in workloads for d in _dependencies(w, objects)
            if d.startswith("DeviceClass/")}


def _gen_predictions(findings: Sequence[Finding], cluster: ClusterPlan
                     ) -> tuple[set[str], set[str]]:
    """(services gen says cannot all be placed, services gen says opt out of Pod Security)."""
    short = set()
    opt_out = set()
    for finding in findings:
        if finding.cluster and finding.cluster != cluster.name:
            continue
        if finding.rule in CAPACITY_RULES and finding.severity is Severity.ERROR:
            # A role's finding names its workload (<service>-prefill): the other role may
            # well be placed.
            short.add(finding.service)
        if finding.rule == "GEN502":
            opt_out.add(finding.service)
    return short, opt_out


def _gen_verdicts(objects: Sequence[RenderedObject], cluster: ClusterPlan,
                  findings: Sequence[Finding]) -> dict[str, bool]:
    """Object id → gen says the API server takes it (embedded validation, DRA lint)."""
    validator = SchemaValidator()
    refused_sources = {f.location.path for f in findings
                       if f.rule in OBJECT_RULES and f.severity is Severity.ERROR
                       and f.location is not None and f.cluster in ("", cluster.name)}
    gen_ok: dict[str, bool] = {}
    for obj in objects:
        where = SourceLocation(str(obj.path))
        errors = [f for f in validator.validate(obj.data, cluster.minor, where)
                  if f.severity is Severity.ERROR]
        refused = obj.origin.path in refused_sources and obj.kind in DRA_KINDS
        gen_ok[_object_id(obj.data)] = not errors and not refused
    return gen_ok


def judge_cluster(plane: ControlPlane, fleet: Fleet, cluster: ClusterPlan,
                  findings: Sequence[Finding], categories: LiveCategories) -> None:
    """Judge one cluster of a fleet on an emptied plane."""
    with GEN_LOCK:
        objects, _ = render_cluster(make_environment(), cluster)
        gen_ok = _gen_verdicts(objects, cluster, findings)
    reset(plane, keep=(str(o.data["metadata"]["name"]) for o in objects
                       if o.kind == "Namespace"))
    with GEN_LOCK:  # the fixtures are gen's own simulation of the drivers
        refused_slices = install_cluster(plane, cluster)
    for name, message in refused_slices:
        categories.dynamic_mig.add(_case(fleet, cluster, f"ResourceSlice/{name}"), "valid",
                                   "invalid", message)
    for pool in cluster.pools:
        refused = any(name.startswith(f"{pool.name}-") for name, _ in refused_slices)
        if pool.pool.mig == "dynamic" and not refused:
            categories.dynamic_mig.add(_case(fleet, cluster, f"pool/{pool.name}"), "valid",
                                       "valid")
    applied = _apply_cluster(plane, fleet, cluster, [o.data for o in objects], gen_ok, categories)
    workloads = _workloads(applied)
    if not workloads:
        return
    short, opt_out = _gen_predictions(findings, cluster)
    # GEN241: the demand fits the dynamic MIG pools in some arrival orders only. Which pod
    # is left Pending then depends on the scheduler's pod order, which no harness fixes, so
    # such a cluster's pods get no per-pod allocation verdict here; the oracle judges the
    # claim itself, over the arrival orders (tools/judge/oracle.py).
    by_order = any(f.rule == "GEN241" and f.cluster in ("", cluster.name) for f in findings)
    exceeded = _gen_exceeded_quotas(findings, cluster)
    refused_quota: set[tuple[str, str]] = set()
    outcomes = _settle(plane, workloads)
    outcomes, workloads = merged_groups(outcomes, workloads, _object_id)
    for workload in workloads:
        oid = _object_id(workload)
        outcome = outcomes[oid]
        service = _service_of(workload)
        case = _case(fleet, cluster, oid)
        security_gen = "refused" if service in opt_out else "admitted"
        security_up = "refused" if outcome.state == "refused:podsecurity" else "admitted"
        categories.pod_security.add(case, security_gen, security_up, outcome.detail)
        if outcome.state == "refused:podsecurity":
            continue
        classes = {d.split("/", 1)[1] for d in _dependencies(workload, objects)
                   if d.startswith("DeviceClass/")}
        namespace = str(workload["metadata"]["namespace"])
        if outcome.state == "refused:quota":
            refused_quota.update((namespace, c) for c in classes)
        if not any((namespace, c) in exceeded for c in classes):  # else judged as a whole
            quota_up = "refused" if outcome.state == "refused:quota" else "admitted"
            categories.quotas.add(case, "admitted", quota_up, outcome.detail)
        if outcome.state.startswith("refused") or by_order:
            continue
        broken = [d for d in _dependencies(workload, objects) if not gen_ok.get(d, True)]
        role = workload["spec"]["template"]["metadata"].get("labels", {}).get("llm-d.ai/role")
        named_short = service in short or (role is not None and f"{service}-{role}" in short)
        gen_alloc = "unschedulable" if named_short or broken else "scheduled"
        up_alloc = "scheduled" if outcome.state == "scheduled" else "unschedulable"
        categories.allocation.add(case, gen_alloc, up_alloc, outcome.detail)
    _judge_pools(plane, fleet, cluster, applied, categories)
    used = _workload_classes(workloads, objects)
    # Only ResourceQuotas are judged: a Kueue cluster's quotas are ClusterQueues, which the
    # objects category judges (schemas and CEL rules); no Kueue controller admits here.
    rendered = cluster.cluster.quotas if cluster.cluster.quota_engine == "resourcequota" else ()
    for quota in rendered:
        key = (quota.namespace, quota.gpu_class)
        if key in used:
            categories.quotas.add(
                _case(fleet, cluster, f"quota/{quota.namespace}/{quota.gpu_class}"),
                "exceeded" if key in exceeded else "within",
                "exceeded" if key in refused_quota else "within")


def _owned_pods(plane: ControlPlane, workload: Mapping[str, Any]) -> set[str]:
    """The pods the controllers created for a Deployment (through its ReplicaSets)."""
    namespace, name = str(workload["metadata"]["namespace"]), str(workload["metadata"]["name"])
    sets = {str(r["metadata"]["name"]) for r in plane.list("apps/v1", "ReplicaSet", namespace)
            if any(o.get("kind") == "Deployment" and o.get("name") == name
                   for o in r["metadata"].get("ownerReferences") or ())}
    return {str(p["metadata"]["name"]) for p in plane.list("v1", "Pod", namespace)
            if any(o.get("kind") == "ReplicaSet" and o.get("name") in sets
                   for o in p["metadata"].get("ownerReferences") or ())}


def _judge_pools(plane: ControlPlane, fleet: Fleet, cluster: ClusterPlan,
                 applied: Sequence[Mapping[str, Any]], categories: LiveCategories) -> None:
    """pool selection — gen: each InferencePool selects exactly the pods of its service's
    serving workloads (:mod:`gen.fleet.endpoints`: the service's vLLM Deployment), each with a
    container port among its targetPorts; upstream: the API server's selection of the pool's
    ``matchLabels`` over every pod the controllers created in the namespace, compared with the
    pods the ReplicaSet controller created for those workloads."""
    from gen.fleet.endpoints import workload_selector

    services = {s.service.name: s.service for s in cluster.services}
    for pool in (o for o in applied if o["kind"] == "InferencePool"):
        namespace, name = str(pool["metadata"]["namespace"]), str(pool["metadata"]["name"])
        service = services.get(name)
        own = [w for w in applied if w["kind"] == "Deployment"
               and str(w["metadata"]["namespace"]) == namespace and service is not None
               and all(w["spec"]["template"]["metadata"]["labels"].get(k) == v
                       for k, v in workload_selector(service).items())]
        expected: set[str] = set()
        for workload in own:
            expected |= _owned_pods(plane, workload)
        selector = pool["spec"]["selector"]["matchLabels"]
        labels = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
        pods = plane.list("v1", "Pod", namespace, labels)
        selected = {str(p["metadata"]["name"]) for p in pods}
        targets = {int(t["number"]) for t in pool["spec"]["targetPorts"]}
        # A pod's ports: its containers' and its native sidecars' (restartable init
        # containers: the routing sidecar of a decode pod listens on the routed port).
        portless = sorted(str(p["metadata"]["name"]) for p in pods if not targets & {
            int(port["containerPort"])
            for c in (*p["spec"]["containers"],
                      *(i for i in p["spec"].get("initContainers") or ()
                        if i.get("restartPolicy") == "Always"))
            for port in c.get("ports") or ()})
        if selected == expected and expected and not portless:
            upstream, detail = "exact", f"{len(selected)} pod(s), all on {sorted(targets)}"
        else:
            upstream = "differs"
            detail = (f"selected {sorted(selected)}, the service's {sorted(expected)}, "
                      f"without a target port {portless}")
        categories.pool_selection.add(_case(fleet, cluster, f"InferencePool/{namespace}/{name}"),
                                      "exact", upstream, detail)


def judge_fleet(plane: ControlPlane, fleet: Fleet, categories: LiveCategories,
                clusters: Sequence[str] = ()) -> str | None:
    """Judge every NVIDIA cluster of a fleet (or those named); returns why it was not judged
    (its profiles do not load), or None."""
    try:
        with GEN_LOCK:
            plan = load_plan(fleet.profiles, base=fleet.base)
            findings = list(check_report(plan).findings)
    except GenError as exc:
        return f"{fleet.name}: not judged, gen refuses the profiles: {exc}"
    for cluster in plan.clusters:
        if clusters and cluster.name not in clusters:
            continue
        if not any(p.pool.platform == "nvidia" for p in cluster.pools):
            continue
        judge_cluster(plane, fleet, cluster, findings, categories)
    return None
