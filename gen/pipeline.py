"""The façade that wires the stages: load → resolve → build → check → render → validate → write.

Library users call :func:`lint` or :func:`render`; the CLI is a thin layer over these.

This module is also the capability registry. Each capability package (``gen.nvidia``,
``gen.dra``, ``gen.serving``, ``gen.apple``, ``gen.gitops``, ``gen.security``) exposes
its builders and checks: :func:`decisions` and :func:`builders` list the builders' steps
in the order their outputs depend on each other (:func:`build_cluster` walks them), and
:func:`check_parts` lists every capability's check, split by what each part reads (one
cluster, or the fleet). The capabilities never import each other: they meet here and in the
Plan (``gen.fleet``).

:func:`render` loads and resolves once, then builds, lints, fingerprints, renders and
validates each cluster in a worker (:class:`gen._render_task.ClusterTask`), or takes it from
its record in ``out/.gen-cache/`` when its pre-build key matches
(:func:`gen.emit.cache.prebuild_key`), while the parent runs the fleet-wide checks;
suppressions are then applied once over every finding. :func:`lint` and :func:`load_plan`
build the whole fleet here, serially, and check it with the same parts.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from gen._render_task import (
    CacheUse,
    ClusterFindings,
    ClusterTask,
    Gathered,
    Progress,
    RenderOptions,
    Stages,
    collected,
    kept_findings,
    lint_findings,
    merged_findings,
    render_built,
    run_cluster_tasks,
)
from gen.caches import once
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
    read_trusted,
    render_digest,
    stale_records,
    stat_vouchers,
    trust_bytes,
    vouched_outputs,
)
from gen.emit.files import FileMap
from gen.emit.output import (
    Changes,
    check_out_dir,
    compute_changes,
    unified_diff,
    write_tree,
)
from gen.errors import (
    Finding,
    ManifestValidationError,
    Severity,
    SourceLocation,
    StaleOutputError,
    UnresolvedReferenceError,
    sort_findings,
)
from gen.fleet.plan import Built, ClusterPlan, Plan

if TYPE_CHECKING:
    from gen.emit.crd_schemas import CRDSet
    from gen.fleet.loader import ParsedFiles
    from gen.fleet.profiles import ProfileSet
    from gen.fleet.suppress import SuppressionReport

__all__ = [
    "BuildStep",
    "CheckPart",
    "CheckScope",
    "Decision",
    "ProfileReads",
    "Progress",
    "RenderResult",
    "Validator",
    "build_cluster",
    "build_manifests",
    "build_one",
    "builders",
    "check_parts",
    "check_report",
    "cluster_checks",
    "cluster_fingerprints",
    "decisions",
    "declared_reads",
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


@dataclass(frozen=True)
class Decision:
    """One decision recorded in a cluster plan before the builders run (:func:`decisions`)."""

    name: str
    decide: Callable[[ClusterPlan], ClusterPlan]
    """The cluster plan with the decision recorded."""


@dataclass(frozen=True)
class BuildStep:
    """One builder of a cluster (:func:`builders`)."""

    name: str
    build: Callable[[ClusterPlan], Built]
    """Its objects and files for the cluster plan, which holds (``manifests``, ``files``)
    what the steps before it built."""


def decisions() -> tuple[Decision, ...]:
    """What the builders read beside the profiles, in the order each reads the ones before:
    the pools each class's raw CEL refuses (placement reads them), the MIG strategy, the
    Apple Silicon decisions, the claim templates' names (the serving builder reads them),
    each service's Kueue LocalQueue and the Kueue chart's values (the builders of workloads
    and the GitOps builder read them)."""
    from gen.apple import build as apple
    from gen.dra import build as dra
    from gen.dra.admission import cel_refusals
    from gen.fleet.placement import with_refused_classes
    from gen.kueue import build as kueue
    from gen.nvidia import build as nvidia

    replace = dataclasses.replace
    return (
        Decision("cel refusals", lambda plan: with_refused_classes(plan, cel_refusals(plan))),
        Decision("mig strategy", lambda plan: replace(plan, mig_strategy=nvidia.strategy(plan))),
        Decision("apple", lambda plan: replace(plan, apple=apple.decide(plan))),
        Decision("claim templates",
                 lambda plan: replace(plan, claim_templates=dra.claim_templates(plan))),
        Decision("queues", kueue.decide),
    )


def builders() -> tuple[BuildStep, ...]:
    """Every builder, in data-flow order: GitOps last, since it wraps what the others built
    (it reads their objects from the plan's ``manifests``)."""
    from gen.apple import build as apple
    from gen.dra import build as dra
    from gen.fleet.manifests import namespaces
    from gen.gitops import build as gitops
    from gen.kueue import build as kueue
    from gen.nvidia import build as nvidia
    from gen.routing import build as routing
    from gen.serving import build as serving
    from gen.serving import disaggregation, multinode

    return (
        BuildStep("namespaces", lambda plan: Built(namespaces(plan))),
        BuildStep("mig", nvidia.build),
        BuildStep("dra", dra.build),
        BuildStep("kueue", kueue.build),
        BuildStep("serving", serving.build),
        BuildStep("routing", routing.build),
        BuildStep("multinode", multinode.build),
        BuildStep("disaggregation", disaggregation.build),
        BuildStep("apple", apple.build),
        BuildStep("gitops", gitops.build),
    )


def build_cluster(plan: ClusterPlan) -> ClusterPlan:
    """The cluster plan with its decisions recorded (:func:`decisions`) and its manifests
    and files filled in, builder by builder (:func:`builders`)."""
    for decision in decisions():
        plan = decision.decide(plan)
    plan = dataclasses.replace(plan, manifests=(), files=())
    for step in builders():
        specs, files = step.build(plan)
        plan = dataclasses.replace(plan, manifests=(*plan.manifests, *specs),
                                   files=(*plan.files, *files))
    return plan


def build_manifests(plan: Plan) -> Plan:
    """Fill in every cluster's manifests."""
    from gen.gitops.fleet import fleet_view

    view = fleet_view(plan.clusters)
    return dataclasses.replace(plan, clusters=tuple(
        build_cluster(dataclasses.replace(c, gitops_fleet=view)) for c in plan.clusters))


CheckScope = Literal["cluster", "once", "fleet"]
"""What a part of a check reads, and so where it runs (:func:`check_parts`):

- ``cluster``: one built cluster (a Plan holding it alone, with the fleet's profiles); run by
  the worker that builds that cluster, and reused from its record when its pre-build key
  matches (:func:`gen.emit.cache.prebuild_key`): what else of ``plan.profiles`` it reads,
  its ``reads`` must declare (the key holds that);
- ``once``: as ``cluster``, but each finding list is keyed by what it is about, and of the
  lists with the same key only the first cluster's (in plan order) counts;
- ``fleet``: the whole resolved fleet, before any build: run once by the parent, while the
  workers build (it may read nothing the builders decide)."""


@dataclass(frozen=True)
class ProfileReads:
    """What a ``cluster`` part reads of the fleet's profiles beyond its cluster's own: the
    profiles of one section of ``plan.profiles`` that the cluster names. Its pre-build key
    holds them (:func:`declared_reads`)."""

    key: str
    """Their name in the pre-build key."""
    section: str
    """The :class:`gen.fleet.profiles.ProfileSet` field they are in."""
    names: Callable[[ClusterPlan], Iterable[str]]
    """The names of those the (resolved) cluster reads."""

    def read(self, cluster: ClusterPlan, profiles: ProfileSet) -> list[Any]:
        """Those profiles, in name order (None for a name the fleet has no profile of)."""
        section: Mapping[str, Any] = getattr(profiles, self.section)
        return [section.get(name) for name in sorted(set(self.names(cluster)))]


@dataclass(frozen=True)
class CheckPart:
    """One part of a capability's lint rules; a capability's rules are the sum of its
    parts."""

    check: str
    """The capability check it is part of."""
    scope: CheckScope
    run: Callable[[Plan], list[Finding]] | None = None
    """For ``cluster`` (on a one-cluster Plan) and ``fleet`` (on the resolved Plan)."""
    once: Callable[[ClusterPlan], Mapping[str, list[Finding]]] | None = None
    """For ``once``: the cluster's finding lists by what they are about."""
    reads: ProfileReads | None = None
    """For ``cluster``: what it reads of ``plan.profiles`` beyond the cluster's own
    profiles (None: nothing)."""


def _layout_names(cluster: ClusterPlan) -> Iterable[str]:
    """The MIG layouts the cluster's pools name."""
    return (p.mig_layout.name for p in cluster.pools if p.mig_layout)


def check_parts() -> tuple[CheckPart, ...]:
    """Every capability's check, split by scope."""
    from gen.apple import checks as apple
    from gen.dra import capacity as dra_capacity
    from gen.dra import checks as dra
    from gen.gitops import checks as gitops
    from gen.kueue import checks as kueue
    from gen.nvidia import checks as mig
    from gen.routing import checks as routing
    from gen.security import checks as security
    from gen.serving import capacity
    from gen.serving import checks as serving
    from gen.serving import disaggregation_checks as disaggregation
    from gen.serving import multinode_checks as multinode

    return (
        CheckPart("mig", "cluster", mig.check_clusters,
                  reads=ProfileReads("layouts", "mig_layouts", _layout_names)),
        CheckPart("mig", "fleet", mig.unused_layouts),
        CheckPart("dra", "cluster", dra.check_clusters),
        CheckPart("dra", "fleet", dra.check_fleet),
        CheckPart("serving", "cluster", serving.check),
        CheckPart("routing", "cluster", routing.check),
        CheckPart("disaggregation", "fleet", disaggregation.check),
        CheckPart("security", "fleet", security.check),
        CheckPart("satisfiability", "cluster", dra_capacity.check),
        CheckPart("apple", "cluster", apple.check_clusters),
        CheckPart("apple", "once", once=apple.mac_findings),
        CheckPart("gitops", "cluster", gitops.check_clusters),
        CheckPart("gitops", "fleet", gitops.fleet_modes),
        CheckPart("capacity", "cluster", capacity.check),
        CheckPart("kueue", "cluster", kueue.check_clusters),
        CheckPart("multinode", "cluster", multinode.check),
    )


def declared_reads(cluster: ClusterPlan, profiles: ProfileSet) -> dict[str, Any]:
    """What the ``cluster`` parts declare they read of ``profiles`` beside ``cluster``
    (:attr:`CheckPart.reads`), by name: part of the cluster's pre-build key."""
    return {reads.key: reads.read(cluster, profiles) for reads in _declared()}


@once
def _declared() -> tuple[ProfileReads, ...]:
    """The :attr:`CheckPart.reads` of :func:`check_parts`, listed once: every pre-build key
    asks for them, and :func:`check_parts` imports every capability's checks."""
    return tuple(part.reads for part in check_parts() if part.reads is not None)


def cluster_checks(plan: Plan, cluster: ClusterPlan) -> ClusterFindings:
    """The ``cluster`` and ``once`` parts of every check on one built ``cluster`` of
    ``plan`` (whose other clusters are not looked at)."""
    return _local_checks(dataclasses.replace(plan, clusters=(cluster,), findings=()))


def _local_checks(plan: Plan) -> ClusterFindings:
    """The ``cluster`` and ``once`` parts of every check on the built clusters of ``plan``
    together (of the ``once`` lists with the same key, the first cluster's)."""
    findings: list[Finding] = []
    once: dict[str, list[Finding]] = {}
    for part in check_parts():
        if part.scope == "cluster" and part.run is not None:
            findings.extend(part.run(plan))
        elif part.scope == "once" and part.once is not None:
            for cluster in plan.clusters:
                for key, found in part.once(cluster).items():
                    once.setdefault(f"{part.check}:{key}", list(found))
    return findings, once


def fleet_checks(plan: Plan) -> list[Finding]:
    """The ``fleet`` parts of every check, on the resolved (built or not) fleet."""
    return [f for part in check_parts() if part.scope == "fleet" and part.run is not None
            for f in part.run(plan)]


def _warm_stages() -> None:
    """Import what the decisions, the builders and the checks import on first use."""
    decisions()
    builders()
    check_parts()


def build_one(cluster: ClusterPlan, root: Path) -> ClusterPlan:
    """One cluster of :func:`resolve_fleet` built (:func:`build_cluster`), with its
    provenance file."""
    from gen.gitops.provenance import with_provenance

    return with_provenance(build_cluster(cluster), root)


def _stages() -> Stages:
    """What a render's worker runs on each cluster, and its parent on the fleet."""
    return Stages(build=build_one, check=cluster_checks, reads=declared_reads,
                  fleet=fleet_checks, warm=_warm_stages)


def check_report(plan: Plan) -> SuppressionReport:
    """All findings of all capabilities' rules (and those resolve recorded in the Plan) on a
    built plan, from the parts a render runs (here each part once, on every cluster
    together), split by the fleet's suppressions (:mod:`gen.fleet.suppress`) into those
    that count and those silenced. Unused suppressions are reported only when the plan
    holds every cluster (a ``--cluster`` render checks part of the fleet)."""
    findings = merged_findings(plan, [_local_checks(plan)], fleet_checks(plan))
    whole = {c.name for c in plan.clusters} == set(plan.profiles.clusters)
    return kept_findings(plan, findings, whole=whole)


def run_checks(plan: Plan) -> list[Finding]:
    """The findings that count: :func:`check_report` less the suppressed ones."""
    return list(check_report(plan).findings)


def load_plan(profiles_dir: Path, *, base: Path | None = None) -> Plan:
    """Load, validate and resolve the profiles; build every cluster's manifest list, and
    its provenance file (:mod:`gen.gitops.provenance`)."""
    plan, root = resolve_fleet(profiles_dir, base=base)
    return dataclasses.replace(plan, clusters=tuple(
        build_one(c, root) for c in plan.clusters))


def resolve_fleet(profiles_dir: Path, *, base: Path | None = None,
                  parsed: ParsedFiles | None = None) -> tuple[Plan, Path]:
    """Load, validate and resolve the profiles, with the fleet view every cluster's build
    reads (:func:`gen.gitops.fleet.fleet_view`) recorded in each cluster, nothing built;
    and the folder the profile paths shown in the output are relative to
    (:func:`build_one` reads the profile files there). ``parsed``: files parsed before
    (:class:`gen.emit.cache.parsed.ParseCache`)."""
    from gen.fleet.profiles import load_profiles
    from gen.fleet.resolve import build_plan
    from gen.gitops.fleet import fleet_view

    plan = build_plan(load_profiles(profiles_dir, base=base, parsed=parsed))
    view = fleet_view(plan.clusters)
    # The folder the profile paths shown in the output are relative to (gen.fleet.loader).
    root = base if base is not None else profiles_dir.resolve().parent
    return dataclasses.replace(plan, clusters=tuple(
        dataclasses.replace(c, gitops_fleet=view) for c in plan.clusters)), root


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
    """Render and validate every cluster of a built plan; return the files, the schema
    findings and the object count. Nothing is checked, read from out/ or written.

    Clusters are independent: with ``jobs`` > 1 (default: :func:`default_jobs`) they are
    rendered in that many worker processes. The result does not depend on ``jobs``.
    Template errors of every cluster are raised together as one :class:`TemplateError`.
    Custom resources are validated against ``crds`` (default: the bundled CRDs).
    """
    options = RenderOptions(templates_dir, out_label, validator != "none", crds)
    return render_built(plan, options, default_jobs(plan) if jobs is None else jobs, progress)


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
    a lint error (``GEN023``). An unknown cluster in ``clusters`` is an
    :class:`UnresolvedReferenceError`, raised after the lint errors.
    """

    out_label = _label(out_dir, base)
    check_out_dir(out_dir, out_label, profiles_dir)
    make_records = not (check and no_cache)  # a --check --no-cache neither reads nor makes them
    # A --cluster render neither takes nor writes the fleet record; it keeps the one out/
    # has, which stays valid exactly while out/ still holds every file it lists.
    digest = None if not make_records or clusters else render_digest(
        profiles_dir, templates_dir, base, clusters, validator, crds_dir)
    if digest is not None and not no_cache:
        fast = _fast_result(vouched_outputs(out_dir, digest))
        if fast is not None:
            return fast
    # Everything the build and the render held (the resolved fleet, the tasks, each
    # cluster's result) is gone once _built returns: the write's peak does not stack on it.
    built = _built(profiles_dir, out_dir, out_label, templates_dir=templates_dir,
                   clusters=clusters, validator=validator, base=base, jobs=jobs,
                   progress=progress, no_cache=no_cache, crds_dir=crds_dir,
                   make_records=make_records)
    outputs, records, objects, warnings = (built.outputs, built.records, built.objects,
                                           built.warnings)
    skipped, verified = built.skipped, built.verified
    if check:
        changes = compute_changes(outputs, out_dir, verified=verified)
        _raise_stale(changes, outputs, out_dir, out_label, diff,
                     records if make_records else None)
        return RenderResult(outputs, changes, warnings, objects, skipped=skipped)
    records[CACHE_GITIGNORE] = CACHE_GITIGNORE_BYTES
    # Trusted from now on: the records checked here, and those of the clusters this
    # render left alone that the trust list already vouched for.
    records[TRUST_FILE] = trust_bytes(
        data for data in records.values()
        if data in built.checked or hashlib.sha256(data).hexdigest() in built.vouched)
    names, started = built.names, built.started
    del built  # its checked records and the trust list's: the write reads neither
    if digest is not None:
        records[FLEET_RECORD] = fleet_record_of(digest, names, objects, warnings, outputs,
                                                records)
    changes = write_tree(outputs, out_dir, cache=dict(sorted(records.items())),
                         verified=verified if not clusters else (), since=started)
    return RenderResult(outputs, changes, warnings, objects, skipped=skipped)


class _Built(NamedTuple):
    """What :func:`render` keeps of the build and render of the selected clusters, for the
    check or the write: nothing of the resolved fleet, the tasks or their results beside
    the files."""

    outputs: Mapping[PurePosixPath, bytes]
    """Every file out/ should hold beside the records, sorted by path (by their text:
    :class:`gen.emit.files.FileMap`)."""
    records: dict[str, bytes]
    """The records out/.gen-cache/ should hold, by path under out/."""
    checked: set[bytes]
    """The records rendered or verified by this render, under this env."""
    vouched: frozenset[str]
    """The records the trust list vouched for (:attr:`CacheUse.vouched`)."""
    warnings: tuple[Finding, ...]
    objects: int
    names: tuple[str, ...]
    """The selected clusters, in plan order."""
    skipped: tuple[str, ...]
    verified: list[str]
    """The files of ``outputs`` just read from out/ or vouched for there."""
    started: int
    """The clock (ns) before any file of out/ was vouched for (:func:`write_tree`'s
    ``since``)."""


def _built(
    profiles_dir: Path, out_dir: Path, out_label: str, *, templates_dir: Path | None,
    clusters: Sequence[str], validator: Validator, base: Path | None, jobs: int | None,
    progress: Progress | None, no_cache: bool, crds_dir: Path | None, make_records: bool,
) -> _Built:
    """The part of :func:`render` (its arguments) that loads, builds, lints, renders and
    validates the selected clusters (or takes them from out/), raising its errors in
    :func:`render`'s order; what the check or the write needs of it."""
    from gen.emit.cache.parsed import ParseCache
    from gen.emit.crd_schemas import load_crd_dir  # after the fast path: a costly import

    parsed = ParseCache(env_key(), use=not no_cache,  # with no_cache, only the digests
                        scope=str(profiles_dir.resolve()))
    whole, root = resolve_fleet(profiles_dir, base=base, parsed=parsed)
    crds, crd_findings = load_crd_dir(crds_dir, base)
    try:
        plan, unknown = whole.select(clusters), None
    except UnresolvedReferenceError as err:
        plan, unknown = dataclasses.replace(whole, clusters=()), err  # raised after the lint
    selected = frozenset(c.name for c in plan.clusters)
    options = RenderOptions(templates_dir, out_label, validator != "none", crds)
    started = time.time_ns()  # before any file of out/ is vouched for (write_tree's since)
    cache = CacheUse(
        out_dir, records=make_records, reuse=not no_cache,
        prebuild_extra=_prebuild_extra(templates_dir, crds) if make_records else None,
        vouched=read_trusted(out_dir) if not no_cache else frozenset(),
        stats=stat_vouchers(out_dir) if not no_cache else None,
        read=parsed.read)
    task = ClusterTask(whole, _stages(), root=root, selected=selected, options=options,
                       cache=cache)
    done, fleet = run_cluster_tasks(task, default_jobs(whole) if jobs is None else jobs,
                                    progress)
    lint_found = lint_findings(whole, done, fleet, crd_findings)
    if unknown is not None:
        raise unknown
    gathered = collected(plan, [done.pop(i) for i in sorted(done)
                                if whole.clusters[i].name in selected], out_dir)
    del done, task  # the other clusters' lint, and the task's plan and keys
    _raise_schema_errors(plan, gathered, validator, crds, out_label)
    outputs, records = gathered.outputs, gathered.records
    checked = set(records.values())  # rendered or verified here, under this env
    if clusters:
        outputs = _merge_unselected(outputs, out_dir, clusters)
        records = {**kept_records(out_dir, clusters), **records}
    warnings = tuple(sort_findings(f for f in lint_found if f.severity is not Severity.ERROR))
    skipped = tuple(c.name for c in plan.clusters if c.name in gathered.from_out)
    verified = [rel for files in gathered.from_out.values() for rel in _rels(files)]
    return _Built(outputs, records, checked, cache.vouched, warnings, gathered.objects,
                  tuple(c.name for c in plan.clusters), skipped, verified, started)


def _rels(files: Mapping[PurePosixPath, bytes]) -> list[str]:
    """The paths of ``files`` as text (without making a path of each when it has them)."""
    return files.rels() if isinstance(files, FileMap) else [str(p) for p in files]


def _raise_schema_errors(plan: Plan, gathered: Gathered, validator: Validator,
                         crds: CRDSet | None, out_label: str) -> None:
    """Raise :class:`ManifestValidationError` for the schema errors in the files of
    ``plan``'s clusters: the embedded validator's (found by their tasks) and, when the
    ``validator`` runs it, kubeconform's."""
    findings = list(gathered.findings)
    if validator in ("auto", "kubeconform"):
        findings.extend(_kubeconform(plan, gathered.per_cluster,
                                     required=validator == "kubeconform", crds=crds,
                                     out_label=out_label))
    bad = [f for f in findings if f.severity is Severity.ERROR]
    if bad:
        raise ManifestValidationError(
            f"{len(bad)} schema error(s) in rendered manifests; nothing was written",
            findings=bad,
        )


def _raise_stale(changes: Changes, outputs: Mapping[PurePosixPath, bytes], out_dir: Path,
                 out_label: str, diff: bool, records: Mapping[str, bytes] | None) -> None:
    """Raise :class:`StaleOutputError` when out/ differs from what a ``--check`` render
    would write (with the diff when asked for), or, when ``records`` is given, when its
    render-cache records do."""
    if not changes.empty:
        text = unified_diff(outputs, out_dir, changes) if diff else ""
        raise StaleOutputError(
            f"{out_label}/ is stale: {len(changes.added)} added, {len(changes.changed)} "
            f"changed, {len(changes.removed)} removed; run 'gen render'\n"
            + _annotated_summary(changes) + ("\n" + text if text else ""),
        )
    stale = stale_records(out_dir, records) if records is not None else []
    if stale:
        raise StaleOutputError(
            f"{out_label}/ is stale: its manifests are current, but "
            f"{len(stale)} render-cache record(s) are not; run 'gen render' and "
            "commit them\n" + "\n".join(f"  {out_label}/{r}" for r in stale))


def _prebuild_extra(templates_dir: Path | None, crds: CRDSet | None) -> dict[str, Any] | None:
    """What every cluster's pre-build key holds beside the cluster (:func:`gen.emit.cache.
    prebuild_key`): the template overrides (the key skips the render too) and the CRDs
    (they decide the verdict). None when the overrides cannot be hashed: no key then."""
    from gen.emit.cache import template_tree_digest

    overrides = template_tree_digest(templates_dir)
    if overrides is None:
        return None
    return {"templates": overrides, "crds": crds.digest() if crds is not None else ""}




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
    ``templates_dir`` and ``crds_dir`` as for :func:`render`: both count in a fingerprint
    (the fingerprints are taken through the loader a render uses)."""
    from gen.emit.cache import Fingerprinter
    from gen.emit.crd_schemas import load_crd_dir
    from gen.emit.render import make_environment

    plan = load_plan(profiles_dir, base=base)
    crds, _ = load_crd_dir(crds_dir, base)
    fingerprinter = Fingerprinter(make_environment(templates_dir),
                                  crds.digest() if crds is not None else "")
    env = env_key()
    rows = []
    for cluster in sorted(plan.clusters, key=lambda c: c.name):
        gitops = cluster.cluster.gitops
        rows.append({
            "name": cluster.name,
            "fingerprint": fingerprinter.fingerprint(cluster),
            "env": env,
            "engine": gitops.engine if gitops is not None else None,
            "wave": gitops.wave if gitops is not None else None,
        })
    return rows


def _annotated_summary(changes: Changes) -> str:
    """The change list, with immutable claim templates called out."""
    from gen.emit.render import manifest_kind

    def note(path: str) -> str:
        if manifest_kind(PurePosixPath(path)) == "resourceclaimtemplate":
            return "  (ResourceClaimTemplate: named by its content, never updated in place)"
        return ""

    return changes.summary(note)


def _merge_unselected(
    outputs: Mapping[PurePosixPath, bytes], out_dir: Path, clusters: Iterable[str]
) -> FileMap:
    """With --cluster, keep the files gen wrote for the other clusters exactly as they are."""
    from gen.emit.cache import combined
    from gen.emit.output import gen_files

    selected = set(clusters)
    rendered = set(_rels(outputs))
    kept: dict[str, bytes] = {}
    for rel, file in gen_files(out_dir).items():
        parts = rel.split("/")  # a path of out/ as listed: no empty or . part
        owner = parts[1] if parts[0].startswith("_") and len(parts) > 1 else parts[0]
        if owner not in selected and rel not in rendered:
            kept[rel] = file.read_bytes()
    return combined(str(out_dir), [outputs, FileMap(kept)])


def _label(out_dir: Path, base: Path | None) -> str:
    from gen.fleet.discovery import display_path

    return display_path(out_dir, base if base is not None else Path.cwd())
