"""The façade that wires the stages: load → resolve → build → check → render → validate → write.

Library users call :func:`lint` or :func:`render`; the CLI is a thin layer over these.

This module is also the capability registry. Each capability package (``gen.nvidia``,
``gen.dra``, ``gen.serving``, ``gen.apple``, ``gen.gitops``, ``gen.security``) exposes
its builders and checks; :func:`build_cluster` runs the builders in the order their
outputs depend on each other, and :data:`CHECKS` lists every capability's check. The
capabilities never import each other: they meet here and in the Plan (``gen.fleet``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from gen.emit.cache import (
    CACHE_GITIGNORE,
    CACHE_GITIGNORE_BYTES,
    FLEET_RECORD,
    CacheRecord,
    new_record,
    record_bytes,
    record_path,
)
from gen.emit.output import Changes, compute_changes, unified_diff, write_tree
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
    from gen.emit.crd_schemas import CRDSet
    from gen.fleet.suppress import SuppressionReport

__all__ = [
    "Progress",
    "RenderResult",
    "Validator",
    "build_cluster",
    "build_manifests",
    "check_report",
    "cluster_fingerprints",
    "default_jobs",
    "fast_render",
    "lint",
    "lint_report",
    "load_plan",
    "render",
    "render_outputs",
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
    from gen.dra.checks import check as dra_check
    from gen.dra.satisfiability import check as satisfiability_check
    from gen.gitops.checks import check as gitops_check
    from gen.nvidia.checks import check as mig_check
    from gen.security.checks import check as security_check
    from gen.serving.capacity import check as capacity_check
    from gen.serving.checks import check as serving_check

    return (mig_check, dra_check, serving_check, security_check, satisfiability_check,
            apple_check, gitops_check, capacity_check)


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

    from gen.fleet.profiles import load_profiles
    from gen.fleet.resolve import build_plan
    from gen.gitops.provenance import with_provenance

    profiles = load_profiles(profiles_dir, base=base)
    plan = build_manifests(build_plan(profiles))
    # The folder the profile paths shown in the output are relative to (gen.fleet.loader).
    root = base if base is not None else profiles_dir.resolve().parent
    return dataclasses.replace(plan, clusters=tuple(
        with_provenance(c, root) for c in plan.clusters))


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
        from gen.emit.render import kustomizations, render_cluster

        self._setup()
        cluster = self.plan.clusters[index]
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


def default_jobs(plan: Plan) -> int:
    """Worker processes for a render of ``plan``: one per CPU (at most
    :data:`MAX_DEFAULT_JOBS`) for large fleets, else 1."""
    from gen.emit.parallel import available_cpus

    manifests = sum(len(c.manifests) for c in plan.clusters)
    if manifests < PARALLEL_MIN_MANIFESTS:
        return 1
    return min(available_cpus(), len(plan.clusters), MAX_DEFAULT_JOBS)


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
    plan: Plan, outputs: dict[PurePosixPath, bytes], required: bool, crds: CRDSet | None = None,
) -> list[Finding]:
    """Run kubeconform on a scratch copy of the synced folders (never on out/ itself)."""
    import tempfile

    from gen.emit.kubeconform import find_kubeconform, run_kubeconform

    binary = find_kubeconform()
    if binary is None and not required:
        return []
    findings: list[Finding] = []
    with tempfile.TemporaryDirectory(prefix="gen-kubeconform-") as scratch:
        root = Path(scratch)
        for cluster in plan.clusters:
            files = []
            origin: dict[str, SourceLocation] = {}
            for path, data in outputs.items():
                if path.parts[0] != cluster.name or path.name == "kustomization.yaml":
                    continue
                target = root / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
                files.append(target)
                origin[str(target)] = SourceLocation(str(path))
            if files:
                findings.extend(run_kubeconform(
                    files, cluster.kubernetes_version, binary=binary, origin=origin, crds=crds,
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
    written. With ``check``, a stale out/ raises :class:`StaleOutputError`. ``jobs`` and
    ``progress`` are passed to :func:`render_outputs`.

    A cluster whose fingerprint equals the one recorded in ``out/.gen-cache/`` and whose
    recorded files out/ still holds byte for byte is not rendered again: its files are
    read from out/ (:mod:`gen.emit.cache`; ``RenderResult.skipped`` names them). A render
    that writes also writes the records. ``no_cache`` renders every cluster (the records
    are still written, from that render).

    Before any of that, the fleet record (:mod:`gen.emit.cache`): when the input digest of
    this render and every file of out/ match it, nothing is loaded, linted or rendered;
    the result holds out/'s files, the recorded warnings, every covered cluster in
    ``skipped`` and ``fast_path`` set. ``no_cache`` bypasses it.

    Custom resources are validated against the bundled upstream CRDs and those of
    ``crds_dir`` (:func:`gen.emit.crd_schemas.load_crd_dir`); a CRD file gen cannot use is
    a lint error (``GEN023``).
    """
    import dataclasses

    out_label = _label(out_dir, base)
    # A --cluster render neither takes nor writes the fleet record; it keeps the one out/
    # has, which stays valid exactly while out/ still holds every file it lists.
    digest = None if (check and no_cache) or clusters else _input_digest(
        profiles_dir, templates_dir, base, clusters, validator, crds_dir)
    if digest is not None and not no_cache:
        fast = _fast_path(out_dir, digest)
        if fast is not None:
            return fast
    from gen.emit.crd_schemas import load_crd_dir  # after the fast path: a costly import

    plan = load_plan(profiles_dir, base=base)
    crds, crd_findings = load_crd_dir(crds_dir, base)
    lint_findings = [*run_checks(plan), *crd_findings]
    errors = [f for f in lint_findings if f.severity is Severity.ERROR]
    if errors:
        raise LintError(f"{len(errors)} lint error(s); nothing was written", findings=errors)
    plan = plan.select(clusters)
    validate = validator != "none"
    fingerprints = (
        {} if check and no_cache else _fingerprints(plan, templates_dir, crds)
    )
    reused = {} if no_cache else _reusable(plan, out_dir, fingerprints, validate)
    # A skipped cluster's files are the bytes just read from out/: by its record, the bytes
    # a render of its unchanged inputs writes (gen.emit.cache).
    rendered = _render_clusters(
        dataclasses.replace(plan, clusters=tuple(
            c for c in plan.clusters if c.name not in reused)),
        templates_dir=templates_dir, out_label=out_label, validator=validator,
        jobs=jobs, progress=progress, crds=crds,
    )
    outputs: dict[PurePosixPath, bytes] = {}
    findings: list[Finding] = []
    records: dict[str, bytes] = {}
    fresh = iter(rendered)
    count = 0
    for cluster in plan.clusters:
        if cluster.name in reused:
            record, data, files = reused[cluster.name]
            outputs.update(files)
            records[record_path(cluster.name)] = data
            count += record.objects
            continue
        result = next(fresh)
        outputs.update(result.files)
        findings.extend(result.findings)
        count += result.objects
        fingerprint = fingerprints.get(cluster.name)
        if fingerprint is not None:
            records[record_path(cluster.name)] = record_bytes(
                new_record(cluster.name, fingerprint, validate, result.objects, result.files))
    outputs = dict(sorted(outputs.items(), key=lambda kv: str(kv[0])))
    if validator in ("auto", "kubeconform"):
        findings.extend(_kubeconform(plan, outputs, required=validator == "kubeconform",
                                     crds=crds))
    bad = [f for f in findings if f.severity is Severity.ERROR]
    if bad:
        raise ManifestValidationError(
            f"{len(bad)} schema error(s) in rendered manifests; nothing was written",
            findings=bad,
        )
    if clusters:
        outputs = _merge_unselected(outputs, out_dir, clusters)
        records = {**_other_records(out_dir, clusters), **records}
    warnings = tuple(sort_findings(f for f in lint_findings if f.severity is not Severity.ERROR))
    skipped = tuple(c.name for c in plan.clusters if c.name in reused)
    if check:
        verified = [p for _, _, files in reused.values() for p in files]
        changes = compute_changes(outputs, out_dir, verified=verified)
        text = unified_diff(outputs, out_dir, changes) if diff and not changes.empty else ""
        if not changes.empty:
            raise StaleOutputError(
                f"{out_label}/ is stale: {len(changes.added)} added, {len(changes.changed)} "
                f"changed, {len(changes.removed)} removed; run 'gen render'\n"
                + _annotated_summary(changes) + ("\n" + text if text else ""),
            )
        return RenderResult(outputs, changes, warnings, count, text, skipped)
    records[CACHE_GITIGNORE] = CACHE_GITIGNORE_BYTES
    if digest is not None:
        records[FLEET_RECORD] = _fleet_record(digest, plan, count, warnings, outputs, records)
    changes = write_tree(outputs, out_dir, cache=dict(sorted(records.items())))
    return RenderResult(outputs, changes, warnings, count, skipped=skipped)


def fast_render(
    profiles_dir: Path, out_dir: Path, *, templates_dir: Path | None = None,
    validator: Validator = "auto", base: Path | None = None, crds_dir: Path | None = None,
) -> RenderResult | None:
    """The fleet fast path of :func:`render` alone: what ``render`` with these arguments
    (no ``clusters``, no ``no_cache``; ``check`` or not) returns when the fleet record
    vouches for it, without loading anything; None when it does not (``render`` would then
    take the normal path). The CLI answers a no-op ``gen render`` with it before
    importing click (:mod:`gen._noop`)."""
    digest = _input_digest(profiles_dir, templates_dir, base, (), validator, crds_dir)
    return None if digest is None else _fast_path(out_dir, digest)


def _input_digest(
    profiles_dir: Path, templates_dir: Path | None, base: Path | None,
    clusters: Sequence[str], validator: Validator, crds_dir: Path | None = None,
) -> str | None:
    """The fleet input digest (:func:`gen.emit.cache.input_digest`) of this render; None
    when kubeconform would run (it is never skipped) or an input cannot be vouched for."""
    from gen.emit.cache import input_digest
    from gen.emit.kubeconform import find_kubeconform

    if validator == "kubeconform" or (validator == "auto" and find_kubeconform() is not None):
        return None
    # ``base`` reaches the output only through the profile paths shown, hashed as shown;
    # it is not hashed itself, so a fleet rendered with and without it, or moved, keeps
    # the same record. The out/ label reaches only the messages of a failed render (a
    # template or schema error), which a recorded render, being a success, cannot have.
    options = {"validator": validator, "clusters": list(clusters)}
    return input_digest(profiles_dir, templates_dir, base, options, crds_dir=crds_dir)


def _fast_path(out_dir: Path, digest: str) -> RenderResult | None:
    """The whole render from out/ when the fleet record vouches for it: the same input
    digest, every recorded file (the index and the other records too) in out/ with the
    bytes recorded, and nothing a render would remove or replace. None otherwise."""
    from gen.emit.output import fast_outputs

    # outputs: the files proved unchanged, read when asked for (a stat can vouch for one)
    found = fast_outputs(out_dir, digest)
    if found is None:
        return None
    record, outputs = found
    changes = Changes((), (), (), len(outputs))
    return RenderResult(outputs, changes, record.findings, record.objects,
                        skipped=record.clusters, fast_path=True)


def _fleet_record(
    digest: str, plan: Plan, objects: int, warnings: tuple[Finding, ...],
    outputs: dict[PurePosixPath, bytes], records: dict[str, bytes],
) -> bytes:
    """The fleet record of a render about to be written: what out/ will then hold."""
    import hashlib

    from gen.emit.cache import FleetRecord, fleet_record_bytes
    from gen.emit.output import INDEX_NAME, index_bytes

    files = {str(p): hashlib.sha256(data).hexdigest() for p, data in outputs.items()}
    files[INDEX_NAME] = hashlib.sha256(index_bytes([str(p) for p in outputs])).hexdigest()
    files.update({rel: hashlib.sha256(data).hexdigest() for rel, data in records.items()
                  if rel != FLEET_RECORD})
    return fleet_record_bytes(FleetRecord(
        digest, tuple(c.name for c in plan.clusters), objects, files, warnings))


def cluster_fingerprints(
    profiles_dir: Path, *, templates_dir: Path | None = None, base: Path | None = None,
    crds_dir: Path | None = None,
) -> list[dict[str, Any]]:
    """Every cluster of the fleet, in name order: its name, the render cache's fingerprint
    of its inputs (None when they cannot be fingerprinted), its GitOps engine and wave.
    ``templates_dir`` and ``crds_dir`` as for :func:`render`: both count in a fingerprint."""
    from gen.emit.crd_schemas import load_crd_dir

    plan = load_plan(profiles_dir, base=base)
    crds, _ = load_crd_dir(crds_dir, base)
    fingerprints = _fingerprints(plan, templates_dir, crds)
    rows = []
    for cluster in sorted(plan.clusters, key=lambda c: c.name):
        gitops = cluster.cluster.gitops
        rows.append({
            "name": cluster.name,
            "fingerprint": fingerprints[cluster.name],
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
    """The clusters the cache vouches for: cluster → (its record, the record's bytes, its
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


def _other_records(out_dir: Path, clusters: Iterable[str]) -> dict[str, bytes]:
    """With --cluster: the records of the clusters not rendered, and the fleet record,
    kept as they are."""
    from gen.emit.cache import CACHE_DIR, clusters_of, record_path

    folder = out_dir / CACHE_DIR
    try:
        names = sorted(entry.name for entry in folder.iterdir() if entry.is_file())
    except OSError:
        return {}
    kept: dict[str, bytes] = {}
    selected = set(clusters)
    try:
        if not (out_dir / FLEET_RECORD).is_symlink():
            kept[FLEET_RECORD] = (out_dir / FLEET_RECORD).read_bytes()
    except OSError:
        pass
    for name in clusters_of(f"{CACHE_DIR}/{n}" for n in names):
        if name in selected:
            continue
        try:
            kept[record_path(name)] = (folder / f"{name}.json").read_bytes()
        except OSError:
            continue
    return kept


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
