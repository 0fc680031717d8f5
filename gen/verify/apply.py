"""Server-side dry-run apply of every object of ``out/<cluster>/`` against the live API server.

Each object is sent as ``kubectl apply --server-side --dry-run=server --force-conflicts`` sends
it: ``PATCH`` with ``Content-Type: application/apply-patch+yaml`` and ``dryRun=All``,
``fieldManager=gen``, ``force=true``, ``fieldValidation=Strict`` (an unknown field is a
refusal, not a warning). With ``dryRun=All`` the request runs every stage (defaulting,
admission webhooks and policies, validation, quota) and persists nothing (kubernetes/kubernetes
``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go``@v1.36.3; the API concepts page,
"Dry-run").

Outcomes, each a finding at the profile line that produced the object (:mod:`gen.verify.objects`):

* **refused** (GEN801, error): the server's ``Status``; one finding per entry of
  ``details.causes`` (its ``field`` is the key path), else its ``message``. A 403 is a refusal
  like the others: admission (PodSecurity, ResourceQuota) and RBAC both answer 403, and either
  way the sync with these credentials would fail.
* **kind not served** (GEN802, error): discovery has no such kind in that group-version. For a
  custom resource: the cluster has no CRD for it (the add-on is not installed); for a
  built-in group: the API version is not enabled.
* **not checked** (GEN803, info): the object's namespace does not exist yet and a Namespace of
  this ``out/`` creates it. A dry-run persists nothing, so the Namespace's own dry-run does not
  make it exist, and the server refuses such an object with 404 NotFound for the namespace
  (the NamespaceLifecycle admission plugin) before validating anything else. The object is
  sent anyway: only a refusal for exactly that namespace (``details.kind == "namespaces"``,
  ``details.name == <namespace>``) counts as not checked; any other answer counts as usual.
  The same holds for a custom resource whose CRD this ``out/`` itself creates.
* **warned** (GEN804, warning): the server accepted the object with ``Warning`` headers
  (deprecated API versions, for instance).

Namespaces are applied first, then cluster-scoped objects, then the rest, in path order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gen.errors import Finding, SourceLocation
from gen.fleet.plan import ClusterPlan
from gen.rules import finding
from gen.verify.objects import OutObject
from gen.verify.state import ApplyAnswer, ClusterAPI, ServedKind

__all__ = ["ApplyReport", "dry_run"]

MAX_CAUSES = 10
"""At most this many causes of one refusal become findings (the rest are counted)."""


@dataclass
class ApplyReport:
    """What the dry-run found, and how many objects each outcome had."""

    findings: list[Finding] = field(default_factory=list)
    accepted: int = 0
    refused: int = 0
    not_served: int = 0
    not_checked: int = 0


def _is_custom(api_version: str) -> bool:
    group = api_version.rpartition("/")[0]
    return "." in group and not (group.endswith(".k8s.io") or group == "k8s.io")


def _order(obj: OutObject) -> tuple[int, str]:
    if obj.api_version == "v1" and obj.kind == "Namespace":
        return (0, str(obj.path))
    return (1 if not obj.namespace else 2, str(obj.path))


def _crd_kinds(objects: Sequence[OutObject]) -> set[tuple[str, str]]:
    """(group, kind) of every CRD this out/ creates."""
    kinds = set()
    for obj in objects:
        if obj.api_version == "apiextensions.k8s.io/v1" and obj.kind == "CustomResourceDefinition":
            spec = obj.data.get("spec") or {}
            names = spec.get("names") or {}
            kinds.add((str(spec.get("group", "")), str(names.get("kind", ""))))
    return kinds


class _Context:
    def __init__(self, cluster: ClusterPlan, api: ClusterAPI, objects: Sequence[OutObject],
                 existing: set[str]) -> None:
        self.cluster = cluster
        self.api = api
        self.existing = existing
        self.created = {o.name for o in objects if o.api_version == "v1" and o.kind == "Namespace"}
        self.crds = _crd_kinds(objects)
        self.discovery: dict[str, Mapping[str, ServedKind] | None] = {}
        self.report = ApplyReport()

    def served(self, api_version: str) -> Mapping[str, ServedKind] | None:
        if api_version not in self.discovery:
            self.discovery[api_version] = self.api.served(api_version)
        return self.discovery[api_version]

    def finding(self, obj: OutObject, rule: str, message: str, hint: str,
                key_path: str = "") -> Finding:
        return finding(rule, message, obj.origin, key_path=key_path, hint=hint,
                       related=(SourceLocation(obj.shown, note="rendered to"),),
                       cluster=self.cluster.name)


def _not_served(ctx: _Context, obj: OutObject) -> Finding:
    group = obj.api_version.rpartition("/")[0]
    if (group, obj.kind) in ctx.crds:
        ctx.report.not_checked += 1
        return ctx.finding(
            obj, "GEN803", f"{obj.title} not checked: its CRD is created by this apply "
            "(a dry-run does not create it)",
            "apply the CRD first, then run gen verify again")
    ctx.report.not_served += 1
    if _is_custom(obj.api_version):
        return ctx.finding(
            obj, "GEN802", f"the cluster has no CRD for {obj.kind} ({obj.api_version}): "
            f"{obj.title} would fail the sync; install the add-on that defines it",
            "install the add-on (its CRDs) in the cluster, or remove it from the cluster "
            "profile's addons so that gen does not render its objects")
    return ctx.finding(
        obj, "GEN802", f"the cluster does not serve {obj.api_version} {obj.kind}: "
        f"{obj.title} would fail the sync",
        "enable the API version on the cluster (--runtime-config, feature gates), or set the "
        "cluster profile's kubernetes_version and runtime_config to what the cluster runs")


def _missing_namespace(answer: ApplyAnswer, namespace: str) -> bool:
    details = answer.body.get("details")
    return (answer.status == 404 and isinstance(details, Mapping)
            and details.get("kind") == "namespaces" and details.get("name") == namespace)


def _causes(answer: ApplyAnswer) -> list[tuple[str, str]]:
    """(field, message) of each cause of a refusal, or of the refusal as a whole."""
    body = answer.body
    message = str(body.get("message") or f"HTTP {answer.status}")
    details = body.get("details")
    causes = details.get("causes") if isinstance(details, Mapping) else None
    out: list[tuple[str, str]] = []
    for cause in causes if isinstance(causes, list) else ():
        if isinstance(cause, Mapping) and cause.get("message"):
            out.append((str(cause.get("field") or ""), str(cause["message"])))
    return out or [("", message)]


def _refused(ctx: _Context, obj: OutObject, answer: ApplyAnswer) -> list[Finding]:
    ctx.report.refused += 1
    reason = str(answer.body.get("reason") or f"HTTP {answer.status}")
    causes = _causes(answer)
    findings = []
    for key_path, message in causes[:MAX_CAUSES]:
        findings.append(ctx.finding(
            obj, "GEN801", f"the API server refuses {obj.title} ({reason}): {message}",
            "change the profile so that gen renders an object the cluster accepts; "
            "the key path is the object's field", key_path))
    if len(causes) > MAX_CAUSES:
        findings.append(ctx.finding(
            obj, "GEN801", f"the API server refuses {obj.title}: "
            f"{len(causes) - MAX_CAUSES} more cause(s)", "see the causes above"))
    return findings


def _apply_one(ctx: _Context, obj: OutObject) -> list[Finding]:
    kinds = ctx.served(obj.api_version)
    served = None if kinds is None else kinds.get(obj.kind)
    if served is None:
        return [_not_served(ctx, obj)]
    answer = ctx.api.dry_run_apply(obj.data, served)
    if answer.ok:
        ctx.report.accepted += 1
        return [ctx.finding(
            obj, "GEN804", f"the API server accepts {obj.title} with a warning: {warning}",
            "act on the warning before the cluster's next upgrade")
            for warning in answer.warnings]
    ns = obj.namespace
    if ns and ns not in ctx.existing and ns in ctx.created and _missing_namespace(answer, ns):
        ctx.report.not_checked += 1
        return [ctx.finding(
            obj, "GEN803", f"{obj.title} not checked: its namespace {ns!r} is created by "
            "this apply (a dry-run does not create it)",
            f"once the namespace exists (kubectl create namespace {ns}), gen verify checks "
            "the objects in it")]
    return _refused(ctx, obj, answer)


def dry_run(cluster: ClusterPlan, api: ClusterAPI, objects: Sequence[OutObject],
            namespaces: Sequence[str]) -> ApplyReport:
    """Dry-run apply every object; ``namespaces`` are the names of the cluster's namespaces."""
    ctx = _Context(cluster, api, objects, set(namespaces))
    for obj in sorted(objects, key=_order):
        ctx.report.findings.extend(_apply_one(ctx, obj))
    return ctx.report
