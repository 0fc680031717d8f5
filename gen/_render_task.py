"""The worker task of :func:`gen.pipeline.render`, and how the parent gathers what the tasks
send back.

A :class:`ClusterTask` takes cluster ``i`` of the resolved plan from its record in
``out/.gen-cache/`` when its pre-build key matches, or builds, checks, fingerprints, renders
and validates it; what it sends back is a :class:`TaskOutput` whose :class:`TaskOutcome` says
which of those happened. :func:`run_cluster_tasks` runs the tasks in worker processes while
the parent runs the fleet-wide checks; :func:`lint_findings` and :func:`collected` turn the
outputs into the render's findings and files, raising in a fixed order: what building or
checking a cluster raised, then the lint errors, then what rendering raised, then every
template error together. :func:`render_built` renders a plan that is built already
(:func:`gen.pipeline.render_outputs`) with the same :class:`Renderer` and worker pool.

This module imports nothing of :mod:`gen.pipeline`: the façade hands in the stages a task
runs (:class:`Stages`), so that the two form no import circle.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

from gen.emit.files import FileMap, file_texts
from gen.errors import Finding, LintError, Severity, SourceLocation, TemplateError, WorkerError
from gen.fleet.plan import ClusterPlan, Plan

if TYPE_CHECKING:
    import jinja2

    from gen.emit.cache import Fingerprinter, LintRecord, StatVouchers
    from gen.emit.crd_schemas import CRDSet
    from gen.emit.validate import SchemaValidator
    from gen.fleet.profiles import ProfileSet
    from gen.fleet.suppress import SuppressionReport

__all__ = [
    "BuiltClusterTask",
    "CacheUse",
    "ClusterFindings",
    "ClusterTask",
    "Gathered",
    "Progress",
    "RenderOptions",
    "Rendered",
    "Renderer",
    "Stages",
    "TaskOutcome",
    "TaskOutput",
    "collected",
    "kept_findings",
    "lint_findings",
    "merged_findings",
    "render_built",
    "run_cluster_tasks",
]

ClusterFindings = tuple[list[Finding], dict[str, list[Finding]]]
"""One cluster's findings of the ``cluster`` check parts, and of the ``once`` parts by key."""

Files = Mapping[PurePosixPath, bytes]
"""Files by their path under out/."""

Progress = Callable[[str, int, int], None]
"""``progress(cluster, done, total)``: called as each cluster finishes rendering."""


@dataclass(frozen=True)
class RenderOptions:
    """How every cluster of a render is rendered and validated: made once by the façade,
    carried by every task."""

    templates_dir: Path | None
    """Templates that override the built-in ones by name."""
    out_label: str
    """out/ as the findings show it (``<out_label>/<path>``)."""
    validate: bool
    """Validate each object with the embedded validator."""
    crds: CRDSet | None = None
    """The CRDs custom resources are validated against (None: the bundled ones)."""


@dataclass(frozen=True)
class CacheUse:
    """How a render uses the records of ``out/.gen-cache/`` (:mod:`gen.emit.cache`)."""

    out_dir: Path
    records: bool
    """Make records: fingerprints, pre-build keys and the records themselves."""
    reuse: bool
    """Take a cluster from its record when its key or fingerprint matches."""
    prebuild_extra: Mapping[str, Any] | None
    """What every pre-build key holds beside the cluster and the checks' declared reads
    (None: no pre-build keys)."""
    vouched: frozenset[str] = frozenset()
    """The records this checkout's trust list vouches for (:func:`gen.emit.cache.read_trusted`)."""
    read: Mapping[str, str] | None = None
    """The SHA-256 of each profile file's bytes as the loader read them, by shown path
    (:attr:`gen.emit.cache.parsed.ParseCache.read`; None: not known): the pre-build keys
    then name the loader's profiles by their place (:func:`gen.emit.cache.prebuild_key`)."""
    stats: StatVouchers | None = None
    """out/'s stat table, read once by the parent: a cluster's recorded files whose stat it
    vouches for are not read (:class:`gen.emit.cache.StatVouchers`); None: all are hashed."""


@dataclass(frozen=True)
class Stages:
    """The façade's stages a task runs on one cluster (:func:`gen.pipeline.build_one` and the
    check registry). Module-level functions: a spawned worker gets them pickled by name."""

    build: Callable[[ClusterPlan, Path], ClusterPlan]
    """One resolved cluster built, with its provenance file (``root``: the profiles' base)."""
    check: Callable[[Plan, ClusterPlan], ClusterFindings]
    """The ``cluster`` and ``once`` check parts on one built cluster of the plan."""
    reads: Callable[[ClusterPlan, ProfileSet], Mapping[str, Any]]
    """What those parts read of the profiles beside the cluster (its pre-build key holds it)."""
    fleet: Callable[[Plan], list[Finding]]
    """The ``fleet`` check parts, run by the parent while the workers build."""
    warm: Callable[[], object]
    """Imports what the other stages import on first use."""


class TaskOutcome(enum.Enum):
    """What became of one cluster's task."""

    FROM_RECORD = "from record"
    """Its pre-build key matched its record: nothing was built, checked or rendered. Its lint
    findings are the record's; when it is selected, its files are out/'s, as recorded."""
    REUSED = "reused"
    """Built and checked; its fingerprint matched its record, so its files are out/'s bytes,
    as recorded, not rendered again."""
    RENDERED = "rendered"
    """Built, checked, rendered and validated (with template errors, if any, in
    ``template_findings``: then it has no files and no record)."""
    CHECKED_ONLY = "checked only"
    """Built and checked, not rendered: it is not selected, or its lint has errors."""
    BUILD_FAILED = "build failed"
    """Building or checking it raised ``error`` (raised before any lint finding counts)."""
    RENDER_FAILED = "render failed"
    """Rendering it raised ``error``, beside a template error (raised after the lint errors)."""


@dataclass(frozen=True)
class TaskOutput:
    """What the task of one cluster sends back: its outcome, its own lint findings and, when
    it is selected, its files, schema findings and record (never its built plan)."""

    outcome: TaskOutcome
    lint: list[Finding] = field(default_factory=list)
    once: dict[str, list[Finding]] = field(default_factory=dict)
    files: Files = field(default_factory=FileMap)
    """By the paths' text (a :class:`~gen.emit.files.FileMap`: cheap to send and hold)."""
    findings: tuple[Finding, ...] = ()
    """Schema validation findings."""
    template_findings: tuple[Finding, ...] = ()
    objects: int = 0
    record: bytes | None = None
    """The cluster's record as out/ should hold it (None: it gets none)."""
    error: Exception | None = None
    """What building, checking or rendering raised (``BUILD_FAILED``, ``RENDER_FAILED``)."""

    @property
    def from_out(self) -> bool:
        """Whether its files are the bytes just read from out/, as its record has them (a
        cluster that is not selected has none)."""
        return self.outcome in (TaskOutcome.FROM_RECORD, TaskOutcome.REUSED)


@dataclass(frozen=True)
class Rendered:
    """One built cluster rendered and validated."""

    files: Files
    findings: tuple[Finding, ...]
    """Schema validation findings."""
    template_findings: tuple[Finding, ...]
    """Its template errors (then nothing else: no files, no objects)."""
    objects: int


class Renderer:
    """Renders and validates built clusters with one Jinja environment and one schema
    validator, each made once per process when first needed (a pickled copy drops them)."""

    def __init__(self, options: RenderOptions) -> None:
        self.options = options
        self._env: jinja2.Environment | None = None
        self._schema: SchemaValidator | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_env": None, "_schema": None}

    def environment(self) -> jinja2.Environment:
        """The Jinja environment of the render (its template overrides first)."""
        from gen.emit.render import make_environment

        if self._env is None:
            self._env = make_environment(self.options.templates_dir)
        return self._env

    def _validator(self) -> SchemaValidator | None:
        from gen.emit.validate import SchemaValidator

        if self._schema is None and self.options.validate:
            self._schema = SchemaValidator(self.options.crds)
        return self._schema

    def compile_templates(self) -> None:
        """Compile every template the loader can find, here (a parent does it once before it
        forks its workers). A template that fails is skipped: the task of a cluster that
        uses it reports the error, at the template's line."""
        import jinja2

        env = self.environment()
        for name in env.list_templates(extensions=("j2",)):
            try:
                env.get_template(name)
            except jinja2.TemplateError:
                continue

    def warm_validators(self, plan: Plan) -> None:
        """Compile, here, the validators a render of the built ``plan`` needs (a parent does
        it once before it forks its workers).

        The (apiVersion, kind) of a template's output is known only once it is rendered, so
        one manifest per (schema version, DRA API version, template) is rendered to learn
        it. A template that fails is skipped: its cluster's task reports the error, and a
        validator missed here is compiled by the worker that needs it.
        """
        from gen.emit.render import render_manifest
        from gen.emit.validate import schema_version_for, warm

        if self._validator() is None:
            return
        env = self.environment()
        probed: set[tuple[int, str | None, str]] = set()
        keys: set[tuple[int, str, str]] = set()
        for cluster in plan.clusters:
            minor = schema_version_for(cluster.minor)
            for spec in cluster.manifests:
                probe = (minor, cluster.dra_api_version, spec.template)
                if probe in probed:
                    continue
                probed.add(probe)
                try:
                    obj = render_manifest(env, cluster.name, spec)
                except TemplateError:
                    continue
                keys.add((cluster.minor, obj.api_version, obj.kind))
        warm(sorted(keys), self.options.crds)

    def render(self, cluster: ClusterPlan) -> Rendered:
        """Render and validate one built cluster."""
        from gen.emit.render import kustomizations, render_cluster
        from gen.routing import rendered as routing_rendered

        try:
            objects, files = render_cluster(self.environment(), cluster)
        except TemplateError as err:
            return Rendered(FileMap(), (), err.findings, 0)
        schema = self._validator()
        # By the paths' text: the parent holds every cluster's files until the write.
        outputs: dict[str, bytes] = {}
        findings: list[Finding] = []
        for obj in objects:
            outputs[str(obj.path)] = obj.text.encode("utf-8")
            if schema is not None:
                where = SourceLocation(f"{self.options.out_label}/{obj.path}")
                findings.extend(schema.validate(obj.data, cluster.minor, where, obj.origin,
                                                obj.holes))
        findings.extend(routing_rendered.check([
            routing_rendered.Object(SourceLocation(f"{self.options.out_label}/{obj.path}"),
                                    obj.data, obj.origin, obj.template)
            for obj in objects]))
        for path, text in kustomizations(cluster.name, objects).items():
            outputs[str(path)] = text.encode("utf-8")
        for file in files:
            outputs[str(file.path)] = file.content
        return Rendered(FileMap(outputs), tuple(findings), (), len(objects))


_TASK_MODULES = (
    "gen.gitops.provenance", "gen.fleet.suppress", "gen.emit.render", "gen.emit.validate",
    "gen.emit.crd_rules", "gen.routing.rendered",
)
"""What a task imports on first use beside the stages (:attr:`Stages.warm`)."""


@dataclass(frozen=True)
class _Recording:
    """What the record of a rendered or reused cluster holds beside its files."""

    name: str
    fingerprint: str | None
    """None: the cluster gets no record."""
    prebuild: str | None
    validated: bool
    findings: ClusterFindings
    previous: bytes | None
    """out/'s record, kept byte for byte when the new one differs only in its env."""

    def data(self, objects: int, files: Files) -> bytes | None:
        """The record's bytes for these files."""
        from gen.emit.cache import new_record, record_bytes, same_but_env

        if self.fingerprint is None:
            return None
        lint, once = self.findings
        made = record_bytes(new_record(self.name, self.fingerprint, self.validated,
                                            objects, files), self.prebuild, lint, once)
        if self.previous is not None and same_but_env(self.previous, made):
            return self.previous
        return made


class ClusterTask:
    """Cluster ``i`` of a resolved plan, from its cached record or built, checked,
    fingerprinted, rendered and validated: the task each worker of a render runs.

    Picklable (spawned workers get it pickled once): the resolved plan, the options and the
    stages; the Jinja environment, the validators and the fingerprinter are made once per
    process. ``selected``: the clusters the render renders (the others are only checked).
    """

    def __init__(self, plan: Plan, stages: Stages, *, root: Path, selected: frozenset[str],
                 options: RenderOptions, cache: CacheUse) -> None:
        self.plan = plan
        self.stages = stages
        self.root = root
        """The folder the profile paths shown in the output are relative to."""
        self.selected = selected
        self.options = options
        self.cache = cache
        self.renderer = Renderer(options)
        self._fingerprinter: Fingerprinter | None = None
        self._loaded: frozenset[int] | None = None
        self._shared: dict[int, Any] = {}  # gen.emit.cache.prebuild.Shared, this process's
        self._keys: dict[int, tuple[str, frozenset[str]] | None] = {}

    def __getstate__(self) -> dict[str, Any]:
        # identities are the process's own: a spawned worker takes them again
        return {**self.__dict__, "_fingerprinter": None, "_loaded": None, "_shared": {}}

    def prepare(self) -> None:
        """Before forking: import what every task uses and compile every template, here,
        once, so that each worker inherits them instead of making its own copy. The
        validators are compiled by the workers (which kinds a cluster needs is known only
        once it is built). Nothing here changes what a task computes."""
        import importlib

        from gen.emit.cache import code_digest

        for module in _TASK_MODULES:
            importlib.import_module(module)
        self.stages.warm()
        self.renderer.compile_templates()
        code_digest()

    def _fingerprint(self, cluster: ClusterPlan) -> str | None:
        from gen.emit.cache import Fingerprinter

        if self._fingerprinter is None:
            crds = self.options.crds
            self._fingerprinter = Fingerprinter(self.renderer.environment(),
                                                crds.digest() if crds is not None else "")
        return self._fingerprinter.fingerprint(cluster)

    def _key(self, cluster: ClusterPlan) -> tuple[str, frozenset[str]] | None:
        from gen.emit.cache.prebuild import loaded_profiles, prebuild_key

        extra = self.cache.prebuild_extra
        if extra is None:
            return None
        if self._loaded is None:
            self._loaded = loaded_profiles(self.plan.profiles)
        reads = self.stages.reads(cluster, self.plan.profiles)
        return prebuild_key(cluster, {**extra, **reads}, self.root, self._loaded,
                            self.cache.read, self._shared)

    def _record(self, name: str) -> tuple[LintRecord | None, bytes | None]:
        """out/'s record of the cluster when this render may use it, and its bytes as
        out/ holds them whether or not it may."""
        from gen.emit.cache import read_lint_record, trusted

        found = read_lint_record(self.cache.out_dir, name) if self.cache.reuse else None
        if found is None:
            return None, None
        if not trusted(found.record, found.data, self.cache.vouched):
            return None, found.data  # another gen or other libraries: checked by rendering
        return found, found.data

    def _verified(self, found: LintRecord) -> Files | None:
        """The files of ``found`` as out/ holds them, when they are what it recorded and it
        was validated if this render validates."""
        from gen.emit.cache import verified_files

        if self.options.validate and not found.record.validated:
            return None
        if self.cache.stats is not None:
            return self.cache.stats.files(self.cache.out_dir, found.record.files)
        return verified_files(self.cache.out_dir, found.record)

    def _keyed(self, index: int) -> tuple[str, frozenset[str]] | None:
        """Cluster ``index``'s pre-build key, computed once per process (the parent's, made
        while it looked for records, is inherited by the workers it forks)."""
        if index not in self._keys:
            self._keys[index] = self._key(self.plan.clusters[index])
        return self._keys[index]

    def from_record(self, index: int) -> TaskOutput | None:
        """Cluster ``index`` taken from its record, when its pre-build key matches and, if
        it is selected, its recorded files are in out/ (``FROM_RECORD``); None when it must
        be built. What the first step of :meth:`__call__` does, for the parent to run
        before it starts any worker (:func:`run_cluster_tasks`)."""
        return self._lookup(index)[0]

    def _lookup(self, index: int) -> tuple[TaskOutput | None, LintRecord | None, bytes | None]:
        """(the cluster from its record or None, out/'s record when this render may use
        it, that record's bytes as out/ holds them)."""
        resolved = self.plan.clusters[index]
        found, previous = self._record(resolved.name)
        keyed = self._keyed(index) if found is not None and found.prebuild else None
        if found is not None and keyed is not None and found.prebuild == keyed[0]:
            lint, once = list(found.findings), {k: list(v) for k, v in found.once.items()}
            if resolved.name not in self.selected:
                return TaskOutput(TaskOutcome.FROM_RECORD, lint, once), found, previous
            files = self._verified(found)
            if files is not None:
                return (TaskOutput(TaskOutcome.FROM_RECORD, lint, once, files,
                                   objects=found.record.objects, record=found.data),
                        found, previous)
        return None, found, previous

    def __call__(self, index: int) -> TaskOutput:
        resolved = self.plan.clusters[index]
        selected = resolved.name in self.selected
        taken, found, previous = self._lookup(index)
        if taken is not None:
            return taken
        keyed = self._keyed(index)
        try:
            cluster = self.stages.build(resolved, self.root)
            lint, once = self.stages.check(self.plan, cluster)
        except Exception as err:  # noqa: BLE001 - raised by the parent, in plan order
            return TaskOutput(TaskOutcome.BUILD_FAILED, error=err)
        if not selected:
            return TaskOutput(TaskOutcome.CHECKED_ONLY, lint, once)
        # The pre-build key vouches for the cluster only if it hashed every profile file
        # the provenance file reads (the origins of its objects and files).
        origins = {cluster.located.document.path, *(m.origin.path for m in cluster.manifests),
                   *(f.origin.path for f in cluster.files)} - {""}
        recording = _Recording(
            cluster.name, self._fingerprint(cluster) if self.cache.records else None,
            keyed[0] if keyed is not None and origins <= keyed[1] else None,
            self.options.validate, (lint, once), previous)
        return self._rendered(cluster, recording, found)

    def _rendered(self, cluster: ClusterPlan, recording: _Recording,
                  found: LintRecord | None) -> TaskOutput:
        """The output of a selected cluster, built and checked: its files from out/ when its
        record has its fingerprint, else rendered (unless its lint has errors)."""
        lint, once = recording.findings
        if (found is not None and recording.fingerprint is not None
                and found.record.fingerprint == recording.fingerprint):
            files = self._verified(found)
            if files is not None:
                objects = found.record.objects
                return TaskOutput(TaskOutcome.REUSED, lint, once, files, objects=objects,
                                  record=recording.data(objects, files))
        if self._errors(lint, once):
            return TaskOutput(TaskOutcome.CHECKED_ONLY, lint, once)  # the render stops there
        try:
            result = self.renderer.render(cluster)
        except Exception as err:  # noqa: BLE001 - raised by the parent after the lint errors
            return TaskOutput(TaskOutcome.RENDER_FAILED, lint, once, error=err)
        record = None if result.template_findings else recording.data(result.objects,
                                                                      result.files)
        return TaskOutput(TaskOutcome.RENDERED, lint, once, result.files, result.findings,
                          result.template_findings, result.objects, record)

    def _errors(self, lint: list[Finding], once: dict[str, list[Finding]]) -> bool:
        """Whether this cluster's own findings hold an error no suppression silences."""
        findings = [*lint, *(f for found in once.values() for f in found)]
        if not any(f.severity is Severity.ERROR for f in findings):
            return False
        kept = kept_findings(self.plan, findings, whole=False).findings
        return any(f.severity is Severity.ERROR for f in kept)


class BuiltClusterTask:
    """Render and validate cluster ``i`` of a built plan: the task of :func:`render_built`."""

    def __init__(self, plan: Plan, options: RenderOptions) -> None:
        self.plan = plan
        self.renderer = Renderer(options)

    def prepare(self) -> None:
        """Before forking: the environment made and the validators the plan needs compiled,
        here, once; every forked worker inherits them (:meth:`Renderer.warm_validators`)."""
        self.renderer.environment()
        self.renderer.warm_validators(self.plan)

    def __call__(self, index: int) -> Rendered:
        return self.renderer.render(self.plan.clusters[index])


def kept_findings(plan: Plan, findings: Iterable[Finding], *, whole: bool) -> SuppressionReport:
    """``findings`` split by the fleet's suppressions (:mod:`gen.fleet.suppress`); unused
    suppressions are reported only when ``whole`` (the findings are the whole fleet's)."""
    from gen.fleet.suppress import apply_suppressions
    from gen.rules import RULES

    return apply_suppressions(findings, plan.profiles.suppressions, RULES,
                              report_unused=whole, profiles=plan.profiles)


def merged_findings(plan: Plan, clusters: Iterable[ClusterFindings],
                    fleet: Iterable[Finding]) -> list[Finding]:
    """Every finding of every check part: resolve's, each cluster's (in plan order; of the
    ``once`` lists with the same key, the first), the fleet's."""
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


R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


class _Task(Protocol[R_co]):
    """A task of :func:`gen.emit.parallel.run_tasks` that can prepare a parent to fork."""

    def prepare(self) -> None: ...

    def __call__(self, index: int) -> R_co: ...


def _run(task: _Task[R], plan: Plan, jobs: int, collect: Callable[[int, R], None],
         doing: str, meanwhile: Callable[[], None] | None = None,
         shown_as: Sequence[int] | None = None) -> None:
    """``task`` on every cluster of ``plan`` (or task ``k`` on cluster ``shown_as[k]``) in
    ``jobs`` worker processes (prepared here first when they are forked); a worker that
    dies is reported with the cluster it was ``doing``."""
    from gen.emit.parallel import forks, run_tasks

    total = len(plan.clusters) if shown_as is None else len(shown_as)
    if min(jobs, total) > 1 and forks():
        task.prepare()  # once here, inherited by every forked worker
    try:
        run_tasks(task, total, jobs, collect, meanwhile=meanwhile)
    except WorkerError as err:
        if err.task is None:
            raise
        index = err.task if shown_as is None else shown_as[err.task]
        raise WorkerError(
            f"{err.message} while {doing} cluster {plan.clusters[index].name!r}; "
            "nothing was written (out of memory? try --jobs 1)"
        ) from None


class _Pending:
    """The task of the clusters the parent could not take from their records: the ``k``-th
    pending one is cluster ``indices[k]``."""

    def __init__(self, task: ClusterTask, indices: Sequence[int]) -> None:
        self.task, self.indices = task, tuple(indices)

    def prepare(self) -> None:
        self.task.prepare()

    def __call__(self, index: int) -> TaskOutput:
        return self.task(self.indices[index])


def run_cluster_tasks(task: ClusterTask, jobs: int, progress: Progress | None,
                      ) -> tuple[dict[int, TaskOutput], list[Finding] | Exception]:
    """Every cluster's task, and meanwhile, here, the fleet-wide checks (their findings, or
    what they raised). ``progress`` counts the selected clusters.

    The clusters whose records vouch for them are taken here first (:meth:`ClusterTask.
    from_record`: reading a record and its files' stats costs less than starting a
    worker); the others run in at most ``jobs`` worker processes, none for a single one."""
    plan = task.plan
    shown = sum(1 for c in plan.clusters if c.name in task.selected)
    done: dict[int, TaskOutput] = {}
    ticks = 0
    fleet: list[Finding] | Exception = []

    def collect(index: int, result: TaskOutput) -> None:
        nonlocal ticks
        done[index] = result
        name = plan.clusters[index].name
        if progress is not None and name in task.selected:
            ticks += 1
            progress(name, ticks, shown)

    def meanwhile() -> None:
        nonlocal fleet
        try:
            fleet = task.stages.fleet(plan)
        except Exception as err:  # noqa: BLE001 - raised after the clusters' build errors
            fleet = err

    pending = list(range(len(plan.clusters)))
    if task.cache.reuse and task.cache.prebuild_extra is not None:
        pending = []
        for index in range(len(plan.clusters)):
            taken = task.from_record(index)
            if taken is None:
                pending.append(index)
            else:
                collect(index, taken)
    subset = _Pending(task, pending)
    _run(subset, plan, min(jobs, len(pending)), lambda k, r: collect(subset.indices[k], r),
         "building and rendering", meanwhile, shown_as=subset.indices)
    return done, fleet


def render_built(plan: Plan, options: RenderOptions, jobs: int, progress: Progress | None,
                 ) -> tuple[dict[PurePosixPath, bytes], list[Finding], int]:
    """Every cluster of a built plan rendered and validated, in ``jobs`` worker processes:
    the files (sorted), the schema findings and the object count. Raises every cluster's
    template errors together, as one :class:`TemplateError`."""
    task = BuiltClusterTask(plan, options)
    results: dict[int, Rendered] = {}

    def collect(index: int, result: Rendered) -> None:
        results[index] = result
        if progress is not None:
            progress(plan.clusters[index].name, len(results), len(plan.clusters))

    _run(task, plan, jobs, collect, "rendering")
    ordered = [results[i] for i in sorted(results)]
    _raise_template_errors(f for r in ordered for f in r.template_findings)
    texts: dict[str, bytes] = {}
    findings: list[Finding] = []
    for result in ordered:
        texts.update(file_texts(result.files))
        findings.extend(result.findings)
    outputs = {PurePosixPath(rel): texts[rel] for rel in sorted(texts)}
    return outputs, findings, sum(r.objects for r in ordered)


def _raise_template_errors(findings: Iterable[Finding]) -> None:
    """Raise every template error of a render together, as one :class:`TemplateError`."""
    errors = list(findings)
    if errors:
        raise TemplateError(f"rendering failed: {len(errors)} template error(s)",
                            findings=errors)


def lint_findings(whole: Plan, done: Mapping[int, TaskOutput],
                  fleet: list[Finding] | Exception, crd_findings: Iterable[Finding],
                  ) -> list[Finding]:
    """The lint findings that count of a render whose tasks are ``done``: resolve's, the
    clusters' and the fleet's, suppressed once over all of them, and the CRD folder's.
    Raises, in this order, what a cluster's build or check raised (the first cluster's),
    what the fleet checks raised, :class:`LintError` for the errors among them."""
    for i in sorted(done):
        error = done[i].error
        if done[i].outcome is TaskOutcome.BUILD_FAILED and error is not None:
            raise error
    if isinstance(fleet, Exception):
        raise fleet
    merged = merged_findings(whole, ((done[i].lint, done[i].once) for i in sorted(done)),
                             fleet)
    found = [*kept_findings(whole, merged, whole=True).findings, *crd_findings]
    errors = [f for f in found if f.severity is Severity.ERROR]
    if errors:
        raise LintError(f"{len(errors)} lint error(s); nothing was written", findings=errors)
    return found


class Gathered(NamedTuple):
    """What the selected clusters' tasks of a render produced, together."""

    outputs: Mapping[PurePosixPath, bytes]
    """Every file, sorted by path (:func:`gen.emit.cache.combined`: those of out/ read
    only when asked for)."""
    findings: list[Finding]
    """Schema validation findings."""
    records: dict[str, bytes]
    """The records out/.gen-cache/ should hold, by path under out/."""
    from_out: dict[str, Files]
    """The clusters whose files are the bytes just read from out/, with those files."""
    objects: int
    per_cluster: list[Files]
    """Each cluster's files, in plan order."""


def collected(plan: Plan, results: Sequence[TaskOutput], out_dir: Path) -> Gathered:
    """The selected clusters' tasks (``results``, in ``plan`` order) together. Raises what
    a cluster's render raised (the first cluster's), then every template error together as
    one :class:`TemplateError`."""
    from gen.emit.cache import combined, record_path

    for result in results:
        error = result.error
        if result.outcome is TaskOutcome.RENDER_FAILED and error is not None:
            raise error
    _raise_template_errors(f for r in results for f in r.template_findings)
    findings: list[Finding] = []
    records: dict[str, bytes] = {}
    from_out: dict[str, Files] = {}
    for cluster, result in zip(plan.clusters, results, strict=True):
        # Files from out/ are, by their record, the bytes a render of its unchanged inputs
        # writes (gen.emit.cache).
        findings.extend(result.findings)
        if result.from_out:
            from_out[cluster.name] = result.files
        if result.record is not None:
            records[record_path(cluster.name)] = result.record
    outputs = combined(str(out_dir), [r.files for r in results])
    return Gathered(outputs, findings, records, from_out,
                    sum(r.objects for r in results), [r.files for r in results])
