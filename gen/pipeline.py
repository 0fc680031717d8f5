"""The façade that wires the stages: load → resolve → build → check → render → validate → write.

Library users call :func:`lint` or :func:`render`; the CLI is a thin layer over these.

This module is also the capability registry. Each capability package (``gen.nvidia``,
``gen.dra``, ``gen.serving``, ``gen.apple``, ``gen.gitops``, ``gen.security``) exposes
its builders and checks; :func:`build_cluster` runs the builders in the order their
outputs depend on each other, and :func:`_checks` lists every capability's check, which
:func:`check_parts` splits by what each part reads (one cluster, or the fleet). The
capabilities never import each other: they meet here and in the Plan (``gen.fleet``).

:func:`render` loads and resolves once, then builds, lints, fingerprints, renders and
validates each cluster in a worker (:class:`_ClusterTask`), or takes it from its record in
``out/.gen-cache/`` when its pre-build key matches (:func:`gen.emit.cache.prebuild_key`),
while the parent runs the fleet-wide checks; suppressions are then applied once over every
finding. :func:`lint` and :func:`load_plan` build the whole fleet here, serially.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from gen.emit.cache import (
    CACHE_GITIGNORE,
    CACHE_GITIGNORE_BYTES,
    FLEET_RECORD,
    TRUST_FILE,
    FastPath,
    env_key,
    fast_path,
    fleet_record_of,
    kept_records,
    new_record,
    read_trusted,
    record_path,
    render_digest,
    stale_records,
    trust_bytes,
    vouched_outputs,
)
from gen.emit.output import (
    Changes,
    check_out_dir,
    compute_changes,
    unified_diff,
    write_tree,
)
from gen.errors import (
    Finding,
    LintError,
    ManifestValidationError,
    Severity,
    SourceLocation,
    StaleOutputError,
    TemplateError,
    WorkerError,
    sort_findings,
)
from gen.fleet.plan import ClusterPlan, Plan

if TYPE_CHECKING:
    from gen.emit.cache import CacheRecord
    from gen.emit.crd_schemas import CRDSet
    from gen.fleet.suppress import SuppressionReport

__all__ = [
    "CheckPart",
    "CheckScope",
    "Progress",
    "RenderResult",
    "Validator",
    "build_cluster",
    "build_manifests",
    "build_one",
    "check_parts",
    "check_report",
    "cluster_checks",
    "cluster_fingerprints",
    "default_jobs",
    "fast_render",
    "fleet_checks",
    "lint",
    "lint_report",
    "load_plan",
    "merged_findings",
    "render",
    "render_outputs",
    "resolve_fleet",
    "run_checks",
]

Validator = Literal["auto", "embedded", "kubeconform", "none"]


def build_cluster(plan: ClusterPlan) -> ClusterPlan:
    """The cluster plan with its manifests and files filled in, capability by capability.

    The order is the data flow: MIG decides the strategy the serving builder reads; the
    GitOps builder wraps everything built before it.
    """
    import dataclasses

    from gen.apple import build as apple
    from gen.dra import build as dra
    from gen.dra.admission import cel_refusals
    from gen.fleet.manifests import namespaces
    from gen.fleet.placement import with_refused_classes
    from gen.gitops import build as gitops
    from gen.nvidia import build as nvidia
    from gen.serving import build as serving

    # Pools each class's raw CEL rejects, as data placement reads (gen.dra.admission).
    plan = with_refused_classes(plan, cel_refusals(plan))
    plan = dataclasses.replace(plan, mig_strategy=nvidia.strategy(plan))
    plan = dataclasses.replace(plan, apple=apple.decide(plan))
    plan = dataclasses.replace(plan, claim_templates=dra.claim_templates(plan))
    specs = namespaces(plan)
    mig_specs, files = nvidia.build(plan)
    specs += mig_specs
    specs += dra.build(plan)
    specs += serving.build(plan)
    apple.extend_cluster(plan, specs, files)
    specs += gitops.build(plan, specs)
    files += gitops.files(plan)
    return dataclasses.replace(plan, manifests=tuple(specs), files=tuple(files))


def build_manifests(plan: Plan) -> Plan:
    """Fill in every cluster's manifests."""
    import dataclasses

    from gen.gitops.fleet import fleet_view

    view = fleet_view(plan.clusters)
    return dataclasses.replace(plan, clusters=tuple(
        build_cluster(dataclasses.replace(c, gitops_fleet=view)) for c in plan.clusters))


Check = Callable[[Plan], list[Finding]]
"""A capability's lint rules: the findings they raise on a Plan."""


def _checks() -> tuple[Check, ...]:
    from gen.apple.checks import check as apple_check
    from gen.dra.capacity import check as satisfiability_check
    from gen.dra.checks import check as dra_check
    from gen.gitops.checks import check as gitops_check
    from gen.nvidia.checks import check as mig_check
    from gen.security.checks import check as security_check
    from gen.serving.capacity import check as capacity_check
    from gen.serving.checks import check as serving_check

    return (mig_check, dra_check, serving_check, security_check, satisfiability_check,
            apple_check, gitops_check, capacity_check)


CheckScope = Literal["cluster", "once", "fleet"]
"""What a part of a check reads, and so where it runs (:func:`check_parts`):

- ``cluster``: one built cluster (a Plan holding it alone, with the fleet's profiles); run by
  the worker that builds that cluster, and reused from its record when its pre-build key
  matches (:func:`gen.emit.cache.prebuild_key`: what else of ``plan.profiles`` it reads
  must be in that key);
- ``once``: as ``cluster``, but each finding list is keyed by what it is about, and of the
  lists with the same key only the first cluster's (in plan order) counts;
- ``fleet``: the whole resolved fleet, before any build: run once by the parent, while the
  workers build (it may read nothing the builders decide)."""


@dataclass(frozen=True)
class CheckPart:
    """One part of a capability's lint rules (:func:`_checks` lists the whole checks, each
    the sum of its parts)."""

    check: str
    """The capability check it is part of."""
    scope: CheckScope
    run: Callable[[Plan], list[Finding]] | None = None
    """For ``cluster`` (on a one-cluster Plan) and ``fleet`` (on the resolved Plan)."""
    once: Callable[[ClusterPlan], Mapping[str, list[Finding]]] | None = None
    """For ``once``: the cluster's finding lists by what they are about."""


def check_parts() -> tuple[CheckPart, ...]:
    """Every check split by scope, in :func:`_checks` order."""
    from gen.apple import checks as apple
    from gen.dra import capacity as dra_capacity
    from gen.dra import checks as dra
    from gen.gitops import checks as gitops
    from gen.nvidia import checks as mig
    from gen.security import checks as security
    from gen.serving import capacity
    from gen.serving import checks as serving

    return (
        CheckPart("mig", "cluster", mig.check_clusters),
        CheckPart("mig", "fleet", mig.unused_layouts),
        CheckPart("dra", "cluster", dra.check_clusters),
        CheckPart("dra", "fleet", dra.check_fleet),
        CheckPart("serving", "cluster", serving.check),
        CheckPart("security", "fleet", security.check),
        CheckPart("satisfiability", "cluster", dra_capacity.check),
        CheckPart("apple", "cluster", apple.check_clusters),
        CheckPart("apple", "once", once=apple.mac_findings),
        CheckPart("gitops", "cluster", gitops.check_clusters),
        CheckPart("gitops", "fleet", gitops.fleet_modes),
        CheckPart("capacity", "cluster", capacity.check),
    )


ClusterFindings = tuple[list[Finding], dict[str, list[Finding]]]
"""One cluster's findings of the ``cluster`` parts, and of the ``once`` parts by key."""


def cluster_checks(plan: Plan, cluster: ClusterPlan) -> ClusterFindings:
    """The ``cluster`` and ``once`` parts of every check on one built ``cluster`` of
    ``plan`` (whose other clusters are not looked at)."""
    import dataclasses

    one = dataclasses.replace(plan, clusters=(cluster,), findings=())
    findings: list[Finding] = []
    once: dict[str, list[Finding]] = {}
    for part in check_parts():
        if part.scope == "cluster" and part.run is not None:
            findings.extend(part.run(one))
        elif part.scope == "once" and part.once is not None:
            for key, found in part.once(cluster).items():
                once[f"{part.check}:{key}"] = list(found)
    return findings, once


def fleet_checks(plan: Plan) -> list[Finding]:
    """The ``fleet`` parts of every check, on the resolved (built or not) fleet."""
    return [f for part in check_parts() if part.scope == "fleet" and part.run is not None
            for f in part.run(plan)]


def merged_findings(plan: Plan, clusters: Iterable[ClusterFindings],
                    fleet: Iterable[Finding]) -> list[Finding]:
    """Every finding of every check, from the parts: resolve's, each cluster's (in plan
    order; of the ``once`` lists with the same key, the first), the fleet's. The same
    findings as :func:`check_report` gathers from the whole checks, not in the same order."""
    findings: list[Finding] = list(plan.findings)
    once: dict[str, list[Finding]] = {}
    for found, keyed in clusters:
        findings.extend(found)
        for key, items in keyed.items():
            once.setdefault(key, items)
    findings.extend(fleet)
    for items in once.values():
        findings.extend(items)
    return findings


def _suppressed(plan: Plan, findings: Iterable[Finding], *, whole: bool) -> SuppressionReport:
    from gen.fleet.suppress import apply_suppressions
    from gen.rules import RULES

    return apply_suppressions(findings, plan.profiles.suppressions, RULES,
                              report_unused=whole, profiles=plan.profiles)


def check_report(plan: Plan) -> SuppressionReport:
    """All findings of all capabilities' rules (and those resolve recorded in the Plan),
    split by the fleet's suppressions (:mod:`gen.fleet.suppress`) into those that count
    and those silenced. Unused suppressions are reported only when the plan holds every
    cluster (a ``--cluster`` render checks part of the fleet)."""
    from gen.fleet.suppress import apply_suppressions
    from gen.rules import RULES

    findings: list[Finding] = list(plan.findings)
    for check in _checks():
        findings.extend(check(plan))
    whole = {c.name for c in plan.clusters} == set(plan.profiles.clusters)
    return apply_suppressions(findings, plan.profiles.suppressions, RULES,
                              report_unused=whole, profiles=plan.profiles)


def run_checks(plan: Plan) -> list[Finding]:
    """The findings that count: :func:`check_report` less the suppressed ones."""
    return list(check_report(plan).findings)


def load_plan(profiles_dir: Path, *, base: Path | None = None) -> Plan:
    """Load, validate and resolve the profiles; build every cluster's manifest list, and
    its provenance file (:mod:`gen.gitops.provenance`)."""
    import dataclasses

    plan, root = resolve_fleet(profiles_dir, base=base)
    return dataclasses.replace(plan, clusters=tuple(
        build_one(c, root) for c in plan.clusters))


def resolve_fleet(profiles_dir: Path, *, base: Path | None = None) -> tuple[Plan, Path]:
    """Load, validate and resolve the profiles, with the fleet view every cluster's build
    reads (:func:`gen.gitops.fleet.fleet_view`) recorded in each cluster, nothing built;
    and the folder the profile paths shown in the output are relative to
    (:func:`build_one` reads the profile files there)."""
    import dataclasses

    from gen.fleet.profiles import load_profiles
    from gen.fleet.resolve import build_plan
    from gen.gitops.fleet import fleet_view

    plan = build_plan(load_profiles(profiles_dir, base=base))
    view = fleet_view(plan.clusters)
    # The folder the profile paths shown in the output are relative to (gen.fleet.loader).
    root = base if base is not None else profiles_dir.resolve().parent
    return dataclasses.replace(plan, clusters=tuple(
        dataclasses.replace(c, gitops_fleet=view) for c in plan.clusters)), root


def build_one(cluster: ClusterPlan, root: Path) -> ClusterPlan:
    """One cluster of :func:`resolve_fleet` built (:func:`build_cluster`), with its
    provenance file."""
    from gen.gitops.provenance import with_provenance

    return with_provenance(build_cluster(cluster), root)


def lint(profiles_dir: Path, *, base: Path | None = None,
         crds_dir: Path | None = None) -> list[Finding]:
    """Every check on the profiles (and on the CRDs of ``crds_dir``, when given), nothing
    written. Raises on unreadable or invalid input.

    Suppressed findings are left out (:func:`lint_report` has them)."""
    return list(lint_report(profiles_dir, base=base, crds_dir=crds_dir).findings)


def lint_report(profiles_dir: Path, *, base: Path | None = None,
                crds_dir: Path | None = None) -> SuppressionReport:
    """:func:`lint` with the suppressed findings too, each with what silenced it. The
    findings about the CRDs of ``crds_dir`` cannot be suppressed (they are input errors)."""
    import dataclasses

    from gen.emit.crd_schemas import load_crd_dir

    report = check_report(load_plan(profiles_dir, base=base))
    crd_findings = load_crd_dir(crds_dir, base)[1]
    return dataclasses.replace(
        report, findings=tuple(sort_findings([*report.findings, *crd_findings])),
        suppressed=tuple(sorted(report.suppressed, key=lambda fs: fs[0].sort_key())),
    )


@dataclass(frozen=True)
class RenderResult:
    """What a render produced and what it changed."""

    outputs: Mapping[PurePosixPath, bytes]
    changes: Changes
    findings: tuple[Finding, ...]
    objects: int
    diff: str = ""
    skipped: tuple[str, ...] = ()
    """Clusters not rendered because the render cache vouched for their files in out/
    (:mod:`gen.emit.cache`); their files in ``outputs`` are the bytes read from out/."""
    fast_path: bool = False
    """True when the fleet record vouched for the whole render: nothing was loaded, built,
    linted or rendered, ``outputs`` are the bytes read from out/, ``findings`` the recorded
    warnings, and ``skipped`` every cluster the render covers."""


PARALLEL_MIN_MANIFESTS = 600
"""Below this many manifests, starting worker processes costs more than it saves."""

MAX_DEFAULT_JOBS = 8
"""The default never starts more workers than this (each holds a cluster's objects, and a
container's CPU quota can be far below the CPUs it sees); ``--jobs`` can go higher."""

Progress = Callable[[str, int, int], None]
"""``progress(cluster, done, total)``: called as each cluster finishes rendering."""


@dataclass
class _ClusterOutput:
    files: dict[PurePosixPath, bytes]
    findings: list[Finding]
    template_findings: tuple[Finding, ...]
    objects: int


class _RenderCluster:
    """Render and validate cluster ``i`` of a plan: the task each worker runs.

    Picklable (for spawned workers); the Jinja environment and the compiled schemas are
    built lazily, once per process, or ahead of time by :meth:`prepare` in a parent that
    then forks its workers, which inherit both.
    """

    def __init__(self, plan: Plan, templates_dir: Path | None, out_label: str,
                 validate: bool, crds: CRDSet | None = None) -> None:
        self.plan = plan
        self.crds = crds
        self.templates_dir = templates_dir
        self.out_label = out_label
        self.validate = validate
        self._env: Any = None
        self._schema: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_env": None, "_schema": None}

    def _setup(self) -> None:
        from gen.emit.render import make_environment
        from gen.emit.validate import SchemaValidator

        if self._env is None:
            self._env = make_environment(self.templates_dir)
            self._schema = SchemaValidator(self.crds) if self.validate else None

    def prepare(self) -> None:
        """Build the environment and compile the validators the plan needs, here.

        The (apiVersion, kind) of a template's output is known only once it is rendered, so
        one manifest per (schema version, DRA API version, template) is rendered to learn
        it. A template that fails is skipped: its cluster's task reports the error, and a
        validator missed here is compiled by the worker that needs it.
        """
        from gen.emit.render import render_manifest
        from gen.emit.validate import schema_version_for, warm

        self._setup()
        if not self.validate:
            return
        probed: set[tuple[int, str | None, str]] = set()
        keys: set[tuple[int, str, str]] = set()
        for cluster in self.plan.clusters:
            minor = schema_version_for(cluster.minor)
            for spec in cluster.manifests:
                probe = (minor, cluster.dra_api_version, spec.template)
                if probe in probed:
                    continue
                probed.add(probe)
                try:
                    obj = render_manifest(self._env, cluster.name, spec)
                except TemplateError:
                    continue
                keys.add((cluster.minor, obj.api_version, obj.kind))
        warm(sorted(keys), self.crds)

    def __call__(self, index: int) -> _ClusterOutput:
        return self.render_built(self.plan.clusters[index])

    def render_built(self, cluster: ClusterPlan) -> _ClusterOutput:
        """Render and validate one built cluster."""
        from gen.emit.render import kustomizations, render_cluster

        self._setup()
        try:
            objects, files = render_cluster(self._env, cluster)
        except TemplateError as err:
            return _ClusterOutput({}, [], err.findings, 0)
        outputs: dict[PurePosixPath, bytes] = {}
        findings: list[Finding] = []
        for obj in objects:
            outputs[obj.path] = obj.text.encode("utf-8")
            if self._schema is not None:
                where = SourceLocation(f"{self.out_label}/{obj.path}")
                findings.extend(self._schema.validate(obj.data, cluster.minor, where, obj.origin))
        for path, text in kustomizations(cluster.name, objects).items():
            outputs[path] = text.encode("utf-8")
        for file in files:
            outputs[file.path] = file.content
        return _ClusterOutput(outputs, findings, (), len(objects))


@dataclass
class _TaskOutput:
    """What the worker of one cluster sends back to a render: its per-cluster findings and,
    when it is rendered, its files, findings and record (never its built plan)."""

    lint: list[Finding]
    once: dict[str, list[Finding]]
    files: Mapping[PurePosixPath, bytes] = dataclasses.field(default_factory=dict)
    findings: list[Finding] = dataclasses.field(default_factory=list)
    """Schema validation findings."""
    template_findings: tuple[Finding, ...] = ()
    objects: int = 0
    record: bytes | None = None
    """The cluster's record as out/ should hold it (None: it gets none)."""
    reused: bool = False
    """Its files are the bytes just read from out/ (the render cache vouched for them)."""
    rendered: bool = False
    """Its files are in ``files`` (it was selected and its lint let it render)."""
    built: bool = True
    """False when the pre-build key matched: nothing was built, linted or rendered."""
    build_error: Exception | None = None
    """What building or checking it raised (the render raises it, first cluster first)."""
    render_error: Exception | None = None
    """What rendering it raised, beside a template error (raised after the lint errors)."""


_TASK_MODULES = (
    "gen.apple.build", "gen.dra.build", "gen.dra.admission", "gen.fleet.manifests",
    "gen.fleet.placement", "gen.gitops.build", "gen.nvidia.build", "gen.serving.build",
    "gen.gitops.provenance", "gen.fleet.suppress", "gen.emit.render", "gen.emit.validate",
    "gen.emit.crd_rules",
)
"""What :func:`build_cluster`, the checks and the render import on first use."""


class _ClusterTask:
    """Cluster ``i`` of a resolved plan, from its cached record or built, checked,
    fingerprinted, rendered and validated: the task each worker of :func:`render` runs.

    Picklable (spawned workers get it pickled once): the resolved plan and the options;
    the Jinja environment, the validators and the fingerprinter are made once per process.
    ``selected``: the clusters the render renders (the others are only linted).
    ``records``: the render makes records (fingerprints and pre-build keys);
    ``reuse``: it may take a cluster from its record.
    """

    def __init__(self, plan: Plan, root: Path, out_dir: Path, templates_dir: Path | None,
                 out_label: str, validate: bool, crds: CRDSet | None,
                 selected: frozenset[str], records: bool, reuse: bool,
                 prebuild_extra: Mapping[str, Any] | None,
                 vouched: frozenset[str] = frozenset()) -> None:
        self.plan = plan
        self.root = root
        self.out_dir = out_dir
        self.templates_dir = templates_dir
        self.out_label = out_label
        self.validate = validate
        self.crds = crds
        self.selected = selected
        self.records = records
        self.reuse = reuse
        self.prebuild_extra = prebuild_extra
        self.vouched = vouched
        """The records this checkout's trust list vouches for (gen.emit.cache.read_trusted)."""
        self._render: _RenderCluster | None = None
        self._fingerprinter: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_render": None, "_fingerprinter": None}

    def _renderer(self) -> _RenderCluster:
        if self._render is None:
            self._render = _RenderCluster(self.plan, self.templates_dir, self.out_label,
                                          self.validate, self.crds)
            self._render._setup()
        return self._render

    def prepare(self) -> None:
        """Before forking: import what every task uses and compile every template the
        render's loader can find, here, once, so that each worker inherits them instead of
        importing and compiling its own copy. The validators are compiled by the workers
        (which kinds a cluster needs is known only once it is built). Nothing here changes
        what a task computes: a worker that finds a template missing compiles it itself."""
        import importlib

        import jinja2

        import gen.emit.cache

        for module in _TASK_MODULES:
            importlib.import_module(module)
        check_parts()
        env = self._renderer()._env
        for name in env.list_templates(extensions=("j2",)):
            try:
                env.get_template(name)
            except jinja2.TemplateError:
                continue  # its task reports it, at the template's line
        gen.emit.cache.code_digest()

    def _fingerprint(self, cluster: ClusterPlan) -> str | None:
        from gen.emit.cache import Fingerprinter

        if self._fingerprinter is None:
            self._fingerprinter = Fingerprinter(
                self._renderer()._env, self.crds.digest() if self.crds is not None else "")
        fingerprint: str | None = self._fingerprinter.fingerprint(cluster)
        return fingerprint

    def _key(self, cluster: ClusterPlan) -> tuple[str, frozenset[str]] | None:
        from gen.emit.cache import prebuild_key

        if self.prebuild_extra is None:
            return None
        layouts = sorted({p.mig_layout.name for p in cluster.pools if p.mig_layout})
        extra = {**self.prebuild_extra, "layouts": [
            self.plan.profiles.mig_layouts.get(name) for name in layouts]}
        return prebuild_key(cluster, extra, self.root)

    def __call__(self, index: int) -> _TaskOutput:
        from gen.emit.cache import (
            read_lint_record,
            record_bytes,
            same_but_env,
            trusted,
            verified_files,
        )

        resolved = self.plan.clusters[index]
        name = resolved.name
        selected = name in self.selected
        keyed = self._key(resolved) if self.records else None
        found = read_lint_record(self.out_dir, name) if self.reuse else None
        # out/'s record, kept byte for byte if the new one differs only in its env.
        previous = found.data if found is not None else None
        if found is not None and not trusted(found.record, found.data, self.vouched):
            found = None  # written by another gen or other libraries: checked by rendering
        validated_ok = found is not None and (found.record.validated or not self.validate)
        if found is not None and keyed is not None and found.prebuild == keyed[0]:
            hit = _TaskOutput(list(found.findings), {k: list(v) for k, v in found.once.items()},
                              built=False)
            if not selected:
                return hit
            files = verified_files(self.out_dir, found.record) if validated_ok else None
            if files is not None:
                hit.files, hit.objects, hit.record = files, found.record.objects, found.data
                hit.reused = True
                return hit
        try:
            cluster = build_one(resolved, self.root)
            lint, once = cluster_checks(self.plan, cluster)
        except Exception as err:  # noqa: BLE001 - raised by the parent, in plan order
            return _TaskOutput([], {}, build_error=err)
        out = _TaskOutput(lint, once)
        if not selected:
            return out
        fingerprint = self._fingerprint(cluster) if self.records else None
        # The pre-build key vouches for the cluster only if it hashed every profile file
        # the provenance file reads (the origins of its objects and files).
        origins = {cluster.located.document.path, *(m.origin.path for m in cluster.manifests),
                   *(f.origin.path for f in cluster.files)} - {""}
        prebuild = keyed[0] if keyed is not None and origins <= keyed[1] else None

        def record(objects: int, files: Mapping[PurePosixPath, bytes]) -> bytes | None:
            if fingerprint is None:
                return None
            made = record_bytes(new_record(name, fingerprint, self.validate, objects, files),
                                prebuild, lint, once)
            return previous if previous is not None and same_but_env(previous, made) else made

        if (found is not None and fingerprint is not None and validated_ok
                and found.record.fingerprint == fingerprint):
            files = verified_files(self.out_dir, found.record)
            if files is not None:
                out.files, out.objects, out.reused = files, found.record.objects, True
                out.record = record(found.record.objects, files)
                return out
        if self._errors(lint, once):
            return out  # the render stops at the lint errors: no use rendering
        try:
            result = self._renderer().render_built(cluster)
        except Exception as err:  # noqa: BLE001 - raised by the parent after the lint errors
            out.render_error = err
            return out
        out.files, out.findings = result.files, result.findings
        out.template_findings, out.objects = result.template_findings, result.objects
        out.rendered = True
        if not result.template_findings:
            out.record = record(result.objects, result.files)
        return out

    def _errors(self, lint: list[Finding], once: dict[str, list[Finding]]) -> bool:
        """Whether this cluster's own findings hold an error no suppression silences."""
        findings = [*lint, *(f for found in once.values() for f in found)]
        if not any(f.severity is Severity.ERROR for f in findings):
            return False
        kept = _suppressed(self.plan, findings, whole=False).findings
        return any(f.severity is Severity.ERROR for f in kept)


def default_jobs(plan: Plan) -> int:
    """Worker processes for a render of ``plan``: one per CPU (at most
    :data:`MAX_DEFAULT_JOBS`) for large fleets, else 1. A plan not built yet (a render
    builds in its workers) is sized by :func:`_estimated_manifests`."""
    from gen.emit.parallel import available_cpus

    manifests = sum(len(c.manifests) for c in plan.clusters) or _estimated_manifests(plan)
    if manifests < PARALLEL_MIN_MANIFESTS:
        return 1
    return min(available_cpus(), len(plan.clusters), MAX_DEFAULT_JOBS)


def _estimated_manifests(plan: Plan) -> int:
    """About how many manifests building ``plan`` makes: a handful per service (Deployment,
    Service, claim template, PVC, policies...) and per cluster (namespaces, GitOps
    objects, device classes); only :func:`default_jobs` reads it."""
    return sum(10 + 6 * len(c.services) for c in plan.clusters)


def render_outputs(
    plan: Plan,
    *,
    templates_dir: Path | None,
    out_label: str,
    validator: Validator = "embedded",
    jobs: int | None = None,
    progress: Progress | None = None,
    crds: CRDSet | None = None,
) -> tuple[dict[PurePosixPath, bytes], list[Finding], int]:
    """Render and validate every cluster of the plan; return the files and findings.

    Clusters are independent: with ``jobs`` > 1 (default: :func:`default_jobs`) they are
    rendered in that many worker processes. The result does not depend on ``jobs``.
    Template errors of every cluster are raised together as one :class:`TemplateError`.
    Custom resources are validated against ``crds`` (default: the bundled CRDs).
    """
    results = _render_clusters(plan, templates_dir=templates_dir, out_label=out_label,
                               validator=validator, jobs=jobs, progress=progress, crds=crds)
    outputs: dict[PurePosixPath, bytes] = {}
    findings: list[Finding] = []
    for result in results:
        outputs.update(result.files)
        findings.extend(result.findings)
    count = sum(r.objects for r in results)
    return dict(sorted(outputs.items(), key=lambda kv: str(kv[0]))), findings, count


def _render_clusters(
    plan: Plan,
    *,
    templates_dir: Path | None,
    out_label: str,
    validator: Validator,
    jobs: int | None,
    progress: Progress | None,
    crds: CRDSet | None = None,
) -> list[_ClusterOutput]:
    """Each cluster's files and findings, in plan order (see :func:`render_outputs`)."""
    from gen.emit.parallel import forks, run_tasks

    task = _RenderCluster(plan, templates_dir, out_label,
                          validate=validator in ("auto", "embedded", "kubeconform"), crds=crds)
    results: dict[int, _ClusterOutput] = {}
    total = len(plan.clusters)
    jobs = default_jobs(plan) if jobs is None else jobs
    if min(jobs, total) > 1 and forks():
        # Compile the schemas once, before forking: every worker inherits them. Spawned
        # workers compile their own (jsonschema-rs validators do not pickle).
        task.prepare()

    def collect(index: int, result: _ClusterOutput) -> None:
        results[index] = result
        if progress is not None:
            progress(plan.clusters[index].name, len(results), total)

    try:
        run_tasks(task, total, jobs, collect)
    except WorkerError as err:
        if err.task is None:
            raise
        raise WorkerError(
            f"{err.message} while rendering cluster {plan.clusters[err.task].name!r}; "
            "nothing was written (out of memory? try --jobs 1)"
        ) from None
    template_findings = [f for i in sorted(results) for f in results[i].template_findings]
    if template_findings:
        raise TemplateError(
            f"rendering failed: {len(template_findings)} template error(s)",
            findings=template_findings,
        )
    return [results[i] for i in sorted(results)]


def _kubeconform(
    plan: Plan, outputs: Sequence[Mapping[PurePosixPath, bytes]], required: bool,
    crds: CRDSet | None = None, out_label: str = "out",
) -> list[Finding]:
    """Run kubeconform on a scratch copy of each cluster's manifests (never on out/ itself):
    ``outputs`` holds each cluster's files, in ``plan`` order, its ``_root/`` and
    ``_bootstrap/`` objects among them (the embedded validator judges them at the cluster's
    version too); kustomization.yaml files and files that are not YAML are left out. The
    findings are located at ``<out_label>/<path>``, as the embedded validator's are."""
    import tempfile

    from gen.emit.kubeconform import find_kubeconform, run_kubeconform

    binary = find_kubeconform()
    if binary is None and not required:
        return []
    findings: list[Finding] = []
    with tempfile.TemporaryDirectory(prefix="gen-kubeconform-") as scratch:
        root = Path(scratch)
        for cluster, cluster_outputs in zip(plan.clusters, outputs, strict=True):
            files = []
            where: dict[str, SourceLocation] = {}
            for path, data in cluster_outputs.items():
                if path.suffix not in (".yaml", ".yml") or path.name == "kustomization.yaml":
                    continue
                target = root / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                files.append(target)
                where[str(target)] = SourceLocation(f"{out_label}/{path}")
            if files:
                findings.extend(run_kubeconform(
                    files, cluster.kubernetes_version, binary=binary, where=where, crds=crds,
                ))
    return findings


def render(
    profiles_dir: Path,
    out_dir: Path,
    *,
    templates_dir: Path | None = None,
    clusters: Sequence[str] = (),
    validator: Validator = "auto",
    check: bool = False,
    diff: bool = False,
    base: Path | None = None,
    jobs: int | None = None,
    progress: Progress | None = None,
    no_cache: bool = False,
    crds_dir: Path | None = None,
) -> RenderResult:
    """Render the fleet into ``out_dir`` (or, with ``check``, compare and write nothing).

    Lint errors, template errors and schema errors stop the render before anything is
    written, in that order of precedence. With ``check``, a stale out/ raises
    :class:`StaleOutputError`. Each cluster is built, linted, rendered and validated in
    one of ``jobs`` worker processes (default: :func:`default_jobs`); ``progress`` is
    called as each selected cluster is done. The result does not depend on ``jobs``.

    A cluster whose fingerprint equals the one recorded in ``out/.gen-cache/`` and whose
    recorded files out/ still holds byte for byte is not rendered again: its files are
    read from out/ (:mod:`gen.emit.cache`; ``RenderResult.skipped`` names them). One whose
    pre-build key (:func:`gen.emit.cache.prebuild_key`) equals its record's is not even
    built or linted: the record's findings count as the cluster's. A render that writes
    also writes the records. ``no_cache`` renders every cluster (the records are still
    written, from that render).

    Before any of that, the fleet record (:mod:`gen.emit.cache`): when the input digest of
    this render and every file of out/ match it, nothing is loaded, linted or rendered;
    the result holds out/'s files, the recorded warnings, every covered cluster in
    ``skipped`` and ``fast_path`` set. ``no_cache`` bypasses it.

    Custom resources are validated against the bundled upstream CRDs and those of
    ``crds_dir`` (:func:`gen.emit.crd_schemas.load_crd_dir`); a CRD file gen cannot use is
    a lint error (``GEN023``).
    """

    out_label = _label(out_dir, base)
    check_out_dir(out_dir, out_label, profiles_dir)
    # A --cluster render neither takes nor writes the fleet record; it keeps the one out/
    # has, which stays valid exactly while out/ still holds every file it lists.
    digest = None if (check and no_cache) or clusters else render_digest(
        profiles_dir, templates_dir, base, clusters, validator, crds_dir)
    if digest is not None and not no_cache:
        fast = _fast_result(vouched_outputs(out_dir, digest))
        if fast is not None:
            return fast
    from gen.emit.crd_schemas import load_crd_dir  # after the fast path: a costly import

    whole, root = resolve_fleet(profiles_dir, base=base)
    crds, crd_findings = load_crd_dir(crds_dir, base)
    known = {c.name for c in whole.clusters}
    selected = frozenset(c for c in clusters if c in known) if clusters else frozenset(known)
    if clusters and not set(clusters) <= known:
        selected = frozenset()  # plan.select raises, once the lint has had its say
    validate = validator != "none"
    make_records = not (check and no_cache)
    vouched = read_trusted(out_dir) if not no_cache else frozenset()
    task = _ClusterTask(
        whole, root, out_dir, templates_dir, out_label, validate, crds, selected,
        records=make_records, reuse=not no_cache,
        prebuild_extra=_prebuild_extra(templates_dir, crds) if make_records else None,
        vouched=vouched,
    )
    done, fleet = _run_cluster_tasks(task, jobs, progress)
    lint_findings = _lint_findings(whole, done, fleet, crd_findings)
    plan = whole.select(clusters)
    results = [done[i] for i in sorted(done) if whole.clusters[i].name in selected]
    outputs, findings, records, reused, count = _collected(plan, results)
    outputs = dict(sorted(outputs.items(), key=lambda kv: str(kv[0])))
    if validator in ("auto", "kubeconform"):
        findings.extend(_kubeconform(plan, [r.files for r in results],
                                     required=validator == "kubeconform", crds=crds,
                                     out_label=out_label))
    bad = [f for f in findings if f.severity is Severity.ERROR]
    if bad:
        raise ManifestValidationError(
            f"{len(bad)} schema error(s) in rendered manifests; nothing was written",
            findings=bad,
        )
    checked = set(records.values())  # rendered or verified here, under this env
    if clusters:
        outputs = _merge_unselected(outputs, out_dir, clusters)
        records = {**kept_records(out_dir, clusters), **records}
    warnings = tuple(sort_findings(f for f in lint_findings if f.severity is not Severity.ERROR))
    skipped = tuple(c.name for c in plan.clusters if c.name in reused)
    if check:
        verified = [p for files in reused.values() for p in files]
        changes = compute_changes(outputs, out_dir, verified=verified)
        text = unified_diff(outputs, out_dir, changes) if diff and not changes.empty else ""
        if not changes.empty:
            raise StaleOutputError(
                f"{out_label}/ is stale: {len(changes.added)} added, {len(changes.changed)} "
                f"changed, {len(changes.removed)} removed; run 'gen render'\n"
                + _annotated_summary(changes) + ("\n" + text if text else ""),
            )
        if make_records:
            stale = stale_records(out_dir, records)
            if stale:
                raise StaleOutputError(
                    f"{out_label}/ is stale: its manifests are current, but "
                    f"{len(stale)} render-cache record(s) are not; run 'gen render' and "
                    "commit them\n" + "\n".join(f"  {out_label}/{r}" for r in stale))
        return RenderResult(outputs, changes, warnings, count, text, skipped)
    records[CACHE_GITIGNORE] = CACHE_GITIGNORE_BYTES
    # Trusted from now on: the records checked here, and those of the clusters this
    # render left alone that the trust list already vouched for.
    records[TRUST_FILE] = trust_bytes(
        data for data in records.values()
        if data in checked or hashlib.sha256(data).hexdigest() in vouched)
    if digest is not None:
        records[FLEET_RECORD] = fleet_record_of(digest, (c.name for c in plan.clusters), count,
                                                warnings, outputs, records)
    changes = write_tree(outputs, out_dir, cache=dict(sorted(records.items())))
    return RenderResult(outputs, changes, warnings, count, skipped=skipped)


def _lint_findings(whole: Plan, done: Mapping[int, _TaskOutput],
                   fleet: list[Finding] | Exception, crd_findings: Iterable[Finding],
                   ) -> list[Finding]:
    """The lint findings that count of a render whose tasks are ``done``: resolve's, the
    clusters' and the fleet's, suppressed once over all of them, and the CRD folder's.
    Raises, in this order, what a cluster's build or check raised (the first cluster's),
    what the fleet checks raised, :class:`LintError` for the errors among them."""
    for i in sorted(done):
        error = done[i].build_error
        if error is not None:
            raise error
    if isinstance(fleet, Exception):
        raise fleet
    merged = merged_findings(whole, ((done[i].lint, done[i].once) for i in sorted(done)),
                             fleet)
    lint_findings = [*_suppressed(whole, merged, whole=True).findings, *crd_findings]
    errors = [f for f in lint_findings if f.severity is Severity.ERROR]
    if errors:
        raise LintError(f"{len(errors)} lint error(s); nothing was written", findings=errors)
    return lint_findings


def _collected(plan: Plan, results: Sequence[_TaskOutput]) -> tuple[
        dict[PurePosixPath, bytes], list[Finding], dict[str, bytes],
        dict[str, Mapping[PurePosixPath, bytes]], int]:
    """The files (sorted), schema findings, records, reused clusters' files and object
    count of the selected clusters' tasks (``results``, in ``plan`` order). Raises what a
    cluster's render raised (the first cluster's), then every template error together as
    one :class:`TemplateError`."""
    for result in results:
        if result.render_error is not None:
            raise result.render_error
    template_findings = [f for r in results for f in r.template_findings]
    if template_findings:
        raise TemplateError(
            f"rendering failed: {len(template_findings)} template error(s)",
            findings=template_findings,
        )
    outputs: dict[PurePosixPath, bytes] = {}
    findings: list[Finding] = []
    records: dict[str, bytes] = {}
    reused: dict[str, Mapping[PurePosixPath, bytes]] = {}
    count = 0
    for cluster, result in zip(plan.clusters, results, strict=True):
        # A reused cluster's files are the bytes just read from out/: by its record, the
        # bytes a render of its unchanged inputs writes (gen.emit.cache).
        outputs.update(result.files)
        findings.extend(result.findings)
        count += result.objects
        if result.reused:
            reused[cluster.name] = result.files
        if result.record is not None:
            records[record_path(cluster.name)] = result.record
    return (dict(sorted(outputs.items(), key=lambda kv: str(kv[0]))), findings, records,
            reused, count)


def _prebuild_extra(templates_dir: Path | None, crds: CRDSet | None) -> dict[str, Any] | None:
    """What every cluster's pre-build key holds beside the cluster (:func:`gen.emit.cache.
    prebuild_key`): the template overrides (the key skips the render too) and the CRDs
    (they decide the verdict). None when the overrides cannot be hashed: no key then."""
    from gen.emit.cache import template_tree_digest

    overrides = template_tree_digest(templates_dir)
    if overrides is None:
        return None
    return {"templates": overrides, "crds": crds.digest() if crds is not None else ""}


def _run_cluster_tasks(
    task: _ClusterTask, jobs: int | None, progress: Progress | None,
) -> tuple[dict[int, _TaskOutput], list[Finding] | Exception]:
    """Every cluster's task, in ``jobs`` worker processes (default: :func:`default_jobs`),
    and meanwhile, here, the fleet-wide checks (their findings, or what they raised)."""
    from gen.emit.parallel import forks, run_tasks

    plan = task.plan
    total = len(plan.clusters)
    shown = sum(1 for c in plan.clusters if c.name in task.selected)
    done: dict[int, _TaskOutput] = {}
    ticks = 0
    fleet: list[Finding] | Exception = []

    def collect(index: int, result: _TaskOutput) -> None:
        nonlocal ticks
        done[index] = result
        name = plan.clusters[index].name
        if progress is not None and name in task.selected:
            ticks += 1
            progress(name, ticks, shown)

    def meanwhile() -> None:
        nonlocal fleet
        try:
            fleet = fleet_checks(plan)
        except Exception as err:  # noqa: BLE001 - raised after the clusters' build errors
            fleet = err

    jobs = default_jobs(plan) if jobs is None else jobs
    if min(jobs, total) > 1 and forks():
        task.prepare()  # once here, inherited by every forked worker
    try:
        run_tasks(task, total, jobs, collect, meanwhile=meanwhile)
    except WorkerError as err:
        if err.task is None:
            raise
        raise WorkerError(
            f"{err.message} while building and rendering cluster "
            f"{plan.clusters[err.task].name!r}; nothing was written "
            "(out of memory? try --jobs 1)"
        ) from None
    return done, fleet


def fast_render(
    profiles_dir: Path, out_dir: Path, *, templates_dir: Path | None = None,
    validator: Validator = "auto", base: Path | None = None, crds_dir: Path | None = None,
) -> RenderResult | None:
    """The fleet fast path of :func:`render` alone: what ``render`` with these arguments
    (no ``clusters``, no ``no_cache``; ``check`` or not) returns when the fleet record
    vouches for it, without loading anything; None when it does not (``render`` would then
    take the normal path). The CLI answers a no-op ``gen render`` with it before
    importing click (:mod:`gen._noop`)."""
    return _fast_result(fast_path(profiles_dir, out_dir, templates_dir=templates_dir,
                                  validator=validator, base=base, crds_dir=crds_dir))


def _fast_result(found: FastPath | None) -> RenderResult | None:
    """The result of a render the fleet record vouches for (:mod:`gen.emit.cache.fast`):
    out/'s files, nothing changed, the recorded warnings, every covered cluster skipped."""
    if found is None:
        return None
    record, outputs = found
    return RenderResult(outputs, Changes((), (), (), len(outputs)), record.findings,
                        record.objects, skipped=record.clusters, fast_path=True)


def cluster_fingerprints(
    profiles_dir: Path, *, templates_dir: Path | None = None, base: Path | None = None,
    crds_dir: Path | None = None,
) -> list[dict[str, Any]]:
    """Every cluster of the fleet, in name order: its name, the render cache's fingerprint
    of its inputs (None when they cannot be fingerprinted), the env of this gen (its
    version, code and libraries: a record is reused only with both), its GitOps engine
    and wave.
    ``templates_dir`` and ``crds_dir`` as for :func:`render`: both count in a fingerprint."""
    from gen.emit.crd_schemas import load_crd_dir

    plan = load_plan(profiles_dir, base=base)
    crds, _ = load_crd_dir(crds_dir, base)
    fingerprints = _fingerprints(plan, templates_dir, crds)
    env = env_key()
    rows = []
    for cluster in sorted(plan.clusters, key=lambda c: c.name):
        gitops = cluster.cluster.gitops
        rows.append({
            "name": cluster.name,
            "fingerprint": fingerprints[cluster.name],
            "env": env,
            "engine": gitops.engine if gitops is not None else None,
            "wave": gitops.wave if gitops is not None else None,
        })
    return rows


def _fingerprints(plan: Plan, templates_dir: Path | None,
                  crds: CRDSet | None = None) -> dict[str, str | None]:
    """Every cluster's fingerprint (None: it cannot be cached), through the loader the
    render uses; the user CRDs (``crds``) decide verdicts, so they count."""
    from gen.emit.cache import Fingerprinter
    from gen.emit.render import make_environment

    fingerprinter = Fingerprinter(make_environment(templates_dir),
                                  crds.digest() if crds is not None else "")
    return {c.name: fingerprinter.fingerprint(c) for c in plan.clusters}


def _reusable(
    plan: Plan, out_dir: Path, fingerprints: dict[str, str | None], validate: bool,
) -> dict[str, tuple[CacheRecord, bytes, dict[PurePosixPath, bytes]]]:
    """(For bench/run.py's phase timings; a render looks up each cluster in its worker.)
    The clusters the cache vouches for: cluster → (its record, the record's bytes, its
    files as read from out/). Each needs a record with the fingerprint it has now, validated if this
    render validates, and every recorded file in out/ with the bytes recorded."""
    from gen.emit.cache import read_record, verified_files

    reused: dict[str, tuple[CacheRecord, bytes, dict[PurePosixPath, bytes]]] = {}
    for cluster in plan.clusters:
        fingerprint = fingerprints.get(cluster.name)
        if fingerprint is None:
            continue
        found = read_record(out_dir, cluster.name)
        if found is None:
            continue
        record, data = found
        if record.fingerprint != fingerprint or (validate and not record.validated):
            continue
        files = verified_files(out_dir, record)
        if files is not None:
            reused[cluster.name] = (record, data, files)
    return reused


def _annotated_summary(changes: Changes) -> str:
    """The change list, with immutable claim templates called out."""
    from gen.emit.render import manifest_kind

    def note(path: str) -> str:
        if manifest_kind(PurePosixPath(path)) == "resourceclaimtemplate":
            return "  (ResourceClaimTemplate: named by its content, never updated in place)"
        return ""

    return changes.summary(note)


def _merge_unselected(
    outputs: dict[PurePosixPath, bytes], out_dir: Path, clusters: Iterable[str]
) -> dict[PurePosixPath, bytes]:
    """With --cluster, keep the files gen wrote for the other clusters exactly as they are."""
    from gen.emit.output import gen_files

    selected = set(clusters)
    merged = dict(outputs)
    for rel, file in gen_files(out_dir).items():
        path = PurePosixPath(rel)
        nested = path.parts[0].startswith("_") and len(path.parts) > 1
        owner = path.parts[1] if nested else path.parts[0]
        if owner not in selected and path not in merged:
            merged[path] = file.read_bytes()
    return dict(sorted(merged.items(), key=lambda kv: str(kv[0])))


def _label(out_dir: Path, base: Path | None) -> str:
    from gen.fleet.discovery import display_path

    return display_path(out_dir, base if base is not None else Path.cwd())
