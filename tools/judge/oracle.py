"""The fast oracle: DRA CEL, DRA allocation and Pod Security decided by Kubernetes' own code.

``tools/judge/oracle/`` is a small Go program on the published staging modules at v0.37.2
(:data:`tools.judge.pins.COMPONENTS` ``"oracle"``): the selector compiler and the structured
allocator of ``k8s.io/dynamic-resource-allocation`` and the checks of
``k8s.io/pod-security-admission``. It answers one JSON query per line; :class:`Oracle` starts
it once and asks it many questions. Three judge categories compare gen's verdicts with its
answers:

* :func:`cel_category` — every DRA selector gen has a verdict on: Kubernetes' own CEL tests
  transcribed in ``tests/dra/cel/corpus/``, the ``cel`` cases of ``tests/corpus/cases/``, and
  the selectors of the DeviceClasses and claim templates gen renders for the example and acme
  fleets, on the devices gen simulates for their pools. gen's side is :mod:`gen.dra.cel`.
* :func:`allocation_category` — every DRA cluster of the example and acme fleets, the
  dynamic-MIG fixtures and corpus cases, and generated fleets: gen's simulated ResourceSlices,
  the DeviceClasses and claim templates gen renders, and each service's replicas placed by the
  real allocator in the order gen's packing uses. gen's side is its lint verdict (GEN204/205/
  206/240/241) and its packing (:mod:`gen.dra.allocator`).
* :func:`podsecurity_category` — every pod template gen renders for those fleets and the
  corpus render cases, at the level its namespace enforces; gen's side is
  :mod:`gen.security.podsecurity`.

Each returns a :class:`tools.judge.report.Category`; :func:`run` runs all three with one
oracle process per emulated Kubernetes version. ``GEN_JUDGE_FLEETS`` sets how many generated
fleets the allocation category draws (default :data:`CI_FLEETS`; the documented long run is
``GEN_JUDGE_FLEETS=1000``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import selectors
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from copy import deepcopy
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import IO, Any, Self

import yaml

from tests.corpus.edits import apply_edit
from tools.judge.report import Category

__all__ = [
    "CI_FLEETS",
    "Oracle",
    "OracleError",
    "Oracles",
    "allocation_category",
    "cel_category",
    "device_json",
    "podsecurity_category",
    "run",
]

REPO = Path(__file__).resolve().parents[2]
CI_FLEETS = 200
"""Generated fleets the allocation category judges in CI (``GEN_JUDGE_FLEETS`` overrides)."""
NEWEST_MINOR = 37
"""The Kubernetes minor of the oracle's modules (v0.37.2)."""
OLDEST_EMULATED_MINOR = 34
"""The oldest version a 1.37 binary emulates: binary minus three (k8s.io/apiserver
pkg/util/compatibility/version.go@v0.37.2 kubeEffectiveVersionFloors)."""


# --------------------------------------------------------------------------- the client


class OracleError(RuntimeError):
    """The oracle process died, timed out, or answered something that is not an answer."""


class Oracle:
    """One oracle process: :meth:`ask` sends a query and waits for its answer.

    The process is started by the constructor (``binary`` defaults to
    :func:`tools.judge.build.ensure` ``("oracle")``, which builds it when missing) and ends
    with :meth:`close` or the ``with`` block. ``emulate`` (``"1.34"``) is the Kubernetes
    version its CEL environment emulates. A query that takes longer than ``timeout`` seconds
    kills the process and raises :class:`OracleError`, as does a process that exits.
    """

    def __init__(self, binary: Path | None = None, *, emulate: str | None = None,
                 timeout: float = 120.0) -> None:
        if binary is None:
            from tools.judge.build import ensure

            binary = ensure("oracle")
        self.binary = binary
        self.emulate = emulate
        self.timeout = timeout
        self.queries = 0
        # Where the process writes its complaints, read back when it dies; closed by close().
        self._stderr: IO[bytes] = tempfile.TemporaryFile()  # noqa: SIM115
        command = [str(binary), *(["-emulate", emulate] if emulate else [])]
        self._process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=self._stderr)
        assert self._process.stdout is not None
        self._stdout = self._process.stdout
        self._buffer = b""
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._stdout, selectors.EVENT_READ)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the process (it exits at the end of its input) and release its pipes."""
        process = self._process
        if process.stdin is not None:
            with contextlib.suppress(OSError):  # it died: nothing reads its input any more
                process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        self._selector.close()
        self._stdout.close()
        self._stderr.close()

    def _died(self, what: str) -> OracleError:
        code = self._process.poll()
        self._stderr.seek(0)
        tail = self._stderr.read()[-2000:].decode("utf-8", "replace").strip()
        return OracleError(f"the oracle ({self.binary}) {what} (exit status {code})"
                           + (f": {tail}" if tail else ""))

    def ask(self, query: Mapping[str, Any]) -> dict[str, Any]:
        """The answer's ``result`` for ``query``; raises :class:`OracleError` when the oracle
        reports an error, dies or times out."""
        answer = self.ask_raw(query)
        if "error" in answer:
            raise OracleError(f"the oracle refused a {query.get('kind')} query: "
                              f"{answer['error']}")
        result: dict[str, Any] = answer.get("result") or {}
        return result

    def ask_raw(self, query: Mapping[str, Any]) -> dict[str, Any]:
        """The whole answer line (``error`` or ``result``) for ``query``."""
        line = json.dumps(query, separators=(",", ":")).encode() + b"\n"
        stdin = self._process.stdin
        assert stdin is not None
        try:
            stdin.write(line)
            stdin.flush()
        except (BrokenPipeError, OSError) as err:
            raise self._died(f"stopped reading queries ({err})") from None
        self.queries += 1
        answer: dict[str, Any] = json.loads(self._read_line())
        return answer

    def _read_line(self) -> bytes:
        deadline = time.monotonic() + self.timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not self._selector.select(left):
                self._process.kill()
                self._process.wait()
                raise self._died(f"gave no answer within {self.timeout:.0f} s and was killed")
            chunk = os.read(self._stdout.fileno(), 1 << 20)
            if not chunk:
                self._process.wait()
                raise self._died("exited")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def version(self) -> dict[str, Any]:
        """The modules, CEL compatibility version and limits of this binary."""
        return self.ask({"kind": "version"})

    def cel(self, expression: str, devices: Sequence[Mapping[str, Any]] = (), *,
            stored: bool = False) -> dict[str, Any]:
        """Validate ``expression`` as a new (or ``stored``) selector and evaluate it on each
        device (:func:`device_json` form)."""
        return self.ask({"kind": "cel", "expression": expression, "devices": list(devices),
                         "stored": stored})

    def allocate(self, *, device_classes: Sequence[Mapping[str, Any]],
                 resource_slices: Sequence[Mapping[str, Any]],
                 nodes: Sequence[Mapping[str, Any]], pods: Sequence[Mapping[str, Any]],
                 features: Mapping[str, bool] | None = None) -> dict[str, Any]:
        """Place ``pods`` (``{name, namespace, claims: [{name, spec}], nodes, policy,
        nodeSelector, affinity, tolerations}``) one after another with the allocator."""
        return self.ask({"kind": "allocate", "features": dict(features or {}),
                         "deviceClasses": list(device_classes),
                         "resourceSlices": list(resource_slices), "nodes": list(nodes),
                         "pods": list(pods)})

    def podsecurity(self, obj: Mapping[str, Any], level: str,
                    version: str = "latest") -> dict[str, Any]:
        """Pod Security's checks on the pod template(s) of ``obj`` at ``level``@``version``."""
        return self.ask({"kind": "podsecurity", "object": obj, "level": level,
                         "version": version})


class Oracles:
    """One :class:`Oracle` per emulated Kubernetes minor, started when first asked for."""

    def __init__(self, binary: Path | None = None, *, timeout: float = 120.0) -> None:
        if binary is None:
            from tools.judge.build import ensure

            binary = ensure("oracle")
        self.binary = binary
        self.timeout = timeout
        self._running: dict[int, Oracle] = {}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def at(self, minor: int | None = None) -> Oracle:
        """The oracle for a ``1.minor`` cluster: the newest binary emulating that version,
        clamped to what it can emulate (1.34–1.37); None is 1.37."""
        wanted = NEWEST_MINOR if minor is None else min(max(minor, OLDEST_EMULATED_MINOR),
                                                        NEWEST_MINOR)
        if wanted not in self._running:
            emulate = None if wanted == NEWEST_MINOR else f"1.{wanted}"
            self._running[wanted] = Oracle(self.binary, emulate=emulate, timeout=self.timeout)
        return self._running[wanted]

    @property
    def queries(self) -> int:
        """Queries answered by every process so far."""
        return sum(o.queries for o in self._running.values())

    def close(self) -> None:
        """End every process."""
        for oracle in self._running.values():
            oracle.close()
        self._running.clear()


# --------------------------------------------------------------------------- conversions


def device_json(device: Any) -> dict[str, Any]:
    """A :class:`gen.dra.devices.Device` as the oracle reads a device: driver, attributes
    (``{string|int|bool|version: v}``) and capacity (``{value: quantity}``), by the names gen
    keys them with (qualified; Kubernetes splits them at ``/`` as gen does)."""
    from gen.k8s.quantity import QuantityFormat, format_quantity
    from gen.k8s.semver import Version

    attributes: dict[str, dict[str, Any]] = {}
    for name, value in device.attributes.items():
        if isinstance(value, bool):
            attributes[name] = {"bool": value}
        elif isinstance(value, int):
            attributes[name] = {"int": value}
        elif isinstance(value, Version):
            attributes[name] = {"version": str(value)}
        else:
            attributes[name] = {"string": value}
    capacity = {name: {"value": format_quantity(Decimal(amount), QuantityFormat.BINARY_SI)}
                for name, amount in device.capacity.items()}
    return {"driver": device.driver, "attributes": attributes, "capacity": capacity}


def _entry_json(entry: Mapping[str, Any], driver: str) -> dict[str, Any]:
    """A ResourceSlice ``spec.devices[]`` entry as the oracle's CEL device (its raw fields)."""
    body = entry.get("basic") if isinstance(entry.get("basic"), Mapping) else entry
    assert isinstance(body, Mapping)
    return {"driver": driver, "attributes": dict(body.get("attributes") or {}),
            "capacity": dict(body.get("capacity") or {})}


# --------------------------------------------------------------------------- fleets


@dataclass
class RenderedFleet:
    """A fleet gen loaded, linted and rendered in memory (nothing written)."""

    label: str
    plan: Any
    """The :class:`gen.fleet.plan.Plan`, manifests built."""
    lint: list[Any]
    """``gen lint``'s findings (:func:`gen.pipeline.run_checks`)."""
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Cluster name → the objects of ``out/<cluster>/``, in file order."""


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def render_fleet(label: str, profiles: Path, base: Path | None = None,
                 templates: Path | None = None) -> RenderedFleet:
    """Load, lint and render the fleet of ``profiles`` as ``gen render`` would, in memory
    (no validator: the objects category judges validity; ``templates``: template overrides).
    Raises :class:`gen.errors.GenError` for a fleet gen refuses to load or render."""
    from gen.pipeline import load_plan, render_outputs, run_checks

    plan = load_plan(profiles, base=base)
    lint = run_checks(plan)
    outputs, _, _ = render_outputs(plan, templates_dir=templates, out_label="out",
                                   validator="none", jobs=1)
    fleet = RenderedFleet(label, plan, lint)
    for path, data in outputs.items():
        if path.suffix != ".yaml" or path.name == "kustomization.yaml" or len(path.parts) < 2:
            continue
        for doc in yaml.load_all(data, Loader=_LOADER):
            if isinstance(doc, dict) and "kind" in doc:
                fleet.objects.setdefault(path.parts[0], []).append(doc)
    return fleet


EXAMPLE = REPO / "profiles"
ACME = REPO / "tests" / "corpus" / "fleets" / "acme" / "profiles"
CORPUS = REPO / "tests" / "corpus" / "cases"


def corpus_cases(file: Path, modes: Iterable[str]) -> list[dict[str, Any]]:
    """The cases of one corpus file whose mode is one of ``modes`` (default mode: lint)."""
    wanted = set(modes)
    raw = yaml.safe_load(file.read_text(encoding="utf-8")) or []
    return [c for c in raw if c.get("mode", "lint") in wanted]


def corpus_fleet(file: Path, case: Mapping[str, Any], base: Path = EXAMPLE) -> RenderedFleet:
    """The fleet of one corpus case: ``base`` copied, the case's setup and edits applied,
    rendered (:func:`render_fleet`)."""
    with tempfile.TemporaryDirectory(prefix="gen-judge-") as scratch:
        root = Path(scratch)
        shutil.copytree(base, root / "profiles", symlinks=True)
        for edit in [*case.get("setup", ()), *case.get("edits", ())]:
            apply_edit(root, edit)
        label = f"{file.relative_to(REPO).as_posix()}:{case['name']}"
        templates = root / "templates"
        return render_fleet(label, root / "profiles", base=root,
                            templates=templates if templates.is_dir() else None)


def generated_fleets(count: int) -> list[Any]:
    """``count`` fleets drawn by :func:`tests.strategies.fleets`, seeded and derandomized
    (the same fleets on every run; Hypothesis' generation phase only, no database)."""
    from hypothesis import HealthCheck, Phase, given, settings

    from tests.strategies import fleets

    drawn: list[Any] = []

    @settings(max_examples=count, derandomize=True, database=None, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck),
              print_blob=False)
    @given(fleets())
    def collect(fleet: Any) -> None:
        drawn.append(fleet)

    collect()
    return drawn


def render_generated(index: int, fleet: Any, suffix: str = "") -> RenderedFleet:
    """A drawn fleet (:class:`tests.strategies.Fleet`) written to a scratch folder and
    rendered."""
    with tempfile.TemporaryDirectory(prefix="gen-judge-") as scratch:
        root = Path(scratch)
        for rel, data in fleet.files().items():
            path = root / "profiles" / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return render_fleet(f"generated#{index}{suffix}", root / "profiles", base=root)


def overloaded(fleet: Any) -> Any | None:
    """A copy of a drawn fleet whose services want about twice the replicas they were sized
    for (``2n + 1``; autoscaling ``2·min + 1`` to ``2·max + 2``): the strategy draws fleets
    that fit, and capacity verdicts (GEN205) need fleets that do not. None when the fleet
    has no service."""
    if not fleet.services:
        return None
    copy = deepcopy(fleet)
    for service in copy.services:
        scaling = service.get("autoscaling")
        if scaling is not None:
            scaling["min_replicas"] = 2 * scaling["min_replicas"] + 1
            scaling["max_replicas"] = 2 * scaling["max_replicas"] + 2
        else:
            service["replicas"] = 2 * service.get("replicas", 1) + 1
    return copy


# --------------------------------------------------------------------------- CEL

CEL_CORPUS = REPO / "tests" / "dra" / "cel" / "corpus"
NO_DEVICE = {"driver": ""}


@dataclass(frozen=True)
class CelCase:
    """One selector to judge: the expression, the devices it runs on (gen's and the
    oracle's form of the same devices) and the cluster minor (None: 1.37)."""

    case: str
    expression: str
    gen_devices: tuple[Any, ...] = ()
    devices: tuple[Mapping[str, Any], ...] = ()
    minor: int | None = None
    source: str = ""
    """Where the case comes from, for the report."""


def _gen_device(raw: Mapping[str, Any]) -> Any:
    """gen's Device of an oracle device (driver, typed attributes, capacity quantities)."""
    from gen.dra.devices import AttrValue, Device
    from gen.k8s.quantity import parse_quantity
    from gen.k8s.semver import parse_version

    attributes: dict[str, AttrValue] = {}
    for name, typed in (raw.get("attributes") or {}).items():
        ((kind, value),) = typed.items()
        attributes[name] = parse_version(value) if kind == "version" else value
    capacity = {name: parse_quantity(str(q["value"]))
                for name, q in (raw.get("capacity") or {}).items()}
    return Device(raw.get("driver", ""), "device-0", attributes, capacity,
                  bool(raw.get("allowMultipleAllocations", False)))


def _wrapped(expression: str, expect: Mapping[str, Any]) -> str:
    """A library case as a bool selector, as tests/dra/cel/test_conformance_*.py run it:
    ``(e) == (value)`` for a value, ``(e) == (e)`` for a run-time error, ``e`` itself for a
    compile error."""
    if "value" in expect:
        return f"({expression}) == ({expect['value']})"
    if "runtime_error" in expect:
        return f"({expression}) == ({expression})"
    return expression


def _quantity_selector(case: Mapping[str, Any]) -> str:
    """tests/dra/cel/test_conformance.py's selector for a quantity library case."""
    if "compile_error" in case:
        return str(case["input"])
    if "runtime_error" in case:
        return f"{case['input']} == {case['input']}"
    value = case["value"]
    if isinstance(value, bool):
        return str(case["input"]) if value else f"!({case['input']})"
    if isinstance(value, float):
        return f"({case['input']}) == {value!r}"
    return f"({case['input']}) == {value}"


def _corpus_selector(file: str, data: Mapping[str, Any], case: Mapping[str, Any]
                     ) -> tuple[str, Mapping[str, Any]] | None:
    """(selector, oracle device) of one case of a CEL corpus file, as its conformance test
    runs it; None for entries that are not selector cases."""
    if file in ("dra.yaml", "behaviour.yaml"):
        device = {"driver": case.get("driver", ""),
                  "attributes": dict(case.get("attributes") or {}),
                  "capacity": {k: {"value": str(v)}
                               for k, v in (case.get("capacity") or {}).items()}}
        if "allow_multiple_allocations" in case:
            device["allowMultipleAllocations"] = bool(case["allow_multiple_allocations"])
        return str(case["expression"]), device
    if file == "cost.yaml":
        e = case["expression"]
        return f"({e}) == ({e})", NO_DEVICE
    if file in ("format.yaml", "net.yaml"):
        return _wrapped(str(case["expression"]), case["expect"]), NO_DEVICE
    if file == "semver.yaml":
        return _wrapped(str(case["expression"]), case["expect"]), {"driver": "gpu.nvidia.com"}
    if file == "quantity.yaml":
        if case.get("kind") != "cel":
            return None
        return _quantity_selector(case), {"driver": "gpu.nvidia.com"}
    if file == "validation.yaml":
        fields = data["self"][case["section"]]
        expression = re.sub(r"\bself\.(\w+)", lambda m: f"({fields[m[1]]})",
                            str(case["expression"]))
        return expression, NO_DEVICE
    raise ValueError(f"unknown CEL corpus file {file}")


def corpus_cel_cases() -> list[CelCase]:
    """Every selector case of tests/dra/cel/corpus/*.yaml (Kubernetes' own CEL tests,
    transcribed), judged as a 1.37 API server and scheduler run it."""
    out: list[CelCase] = []
    seen: dict[str, int] = {}
    for path in sorted(CEL_CORPUS.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for case in data["cases"]:
            found = _corpus_selector(path.name, data, case)
            if found is None:
                continue
            expression, device = found
            source = case["source"]
            test = str(source["test"])
            if case.get("kind") == "cel":
                test += f":{case['input']}"
            name = f"cel:{path.name}:{test}"
            seen[name] = seen.get(name, 0) + 1
            if seen[name] > 1:
                name += f"#{seen[name]}"
            out.append(CelCase(name, expression, (_gen_device(device),), (device,), None,
                               f"{source['repo']} {source['path']}@{source['ref']}"))
    return out


def corpus_case_cel_cases() -> list[CelCase]:
    """The ``mode: cel`` cases of tests/corpus/cases/*.yaml: an expression and, maybe, a
    ResourceSlice device entry of driver gpu.nvidia.com (tests/corpus/test_corpus.py)."""
    from gen.dra.devices import device_from_resourceslice_entry

    out = []
    for path in sorted(CORPUS.glob("*.yaml")):
        for case in corpus_cases(path, ["cel"]):
            entry = case["cel"].get("device")
            gen_devices = () if entry is None else (
                device_from_resourceslice_entry(entry, "gpu.nvidia.com"),)
            devices = () if entry is None else (_entry_json(entry, "gpu.nvidia.com"),)
            out.append(CelCase(f"cel:{path.relative_to(REPO).as_posix()}:{case['name']}",
                               str(case["cel"]["expression"]), gen_devices, devices, None,
                               "tests/corpus"))
    return out


def _selectors_of(obj: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """(field path, expression) of every CEL selector of a DeviceClass or
    ResourceClaimTemplate (v1, v1beta2 or the v1beta1 request shape)."""
    kind = obj.get("kind")
    if kind == "DeviceClass":
        for i, sel in enumerate(obj.get("spec", {}).get("selectors") or ()):
            if "cel" in sel:
                yield f"spec.selectors[{i}]", str(sel["cel"]["expression"])
        return
    if kind != "ResourceClaimTemplate":
        return
    requests = obj.get("spec", {}).get("spec", {}).get("devices", {}).get("requests") or ()
    for i, request in enumerate(requests):
        parts: list[tuple[str, Mapping[str, Any]]] = []
        if "exactly" in request:
            parts.append((f"requests[{i}].exactly", request["exactly"]))
        elif "firstAvailable" not in request:
            parts.append((f"requests[{i}]", request))  # v1beta1
        parts += [(f"requests[{i}].firstAvailable[{j}]", sub)
                  for j, sub in enumerate(request.get("firstAvailable") or ())]
        for where, part in parts:
            for k, sel in enumerate(part.get("selectors") or ()):
                if "cel" in sel:
                    yield f"spec.spec.devices.{where}.selectors[{k}]", str(sel["cel"]["expression"])


def _cluster_devices(cluster: Any) -> tuple[list[Any], list[dict[str, Any]]]:
    """gen's and the oracle's form of every device node 0 of each NVIDIA pool of the
    cluster publishes (:func:`gen.dra.simulate.resource_slices`)."""
    from gen.dra.devices import device_from_resourceslice_entry
    from gen.dra.simulate import resource_slices

    gen_devices, devices = [], []
    for pool in cluster.pools:
        if pool.gpu is None or pool.pool.platform != "nvidia" or pool.pool.nodes < 1:
            continue
        for slice_ in resource_slices(pool, 0, cluster.minor):
            driver = slice_["spec"]["driver"]
            for entry in slice_["spec"].get("devices") or ():
                gen_devices.append(device_from_resourceslice_entry(entry, driver))
                devices.append(_entry_json(entry, driver))
    return gen_devices, devices


def fleet_cel_cases(fleet: RenderedFleet) -> list[CelCase]:
    """The selectors of every DeviceClass and claim template gen renders for the fleet's DRA
    clusters, on the devices gen simulates for the cluster's pools, at the cluster's
    version."""
    out = []
    for cluster in fleet.plan.clusters:
        if cluster.dra_api_version is None:
            continue
        gen_devices, devices = _cluster_devices(cluster)
        for obj in fleet.objects.get(cluster.name, ()):
            for where, expression in _selectors_of(obj):
                name = (f"cel:{fleet.label}/{cluster.name}/{obj['kind']}/"
                        f"{obj['metadata']['name']}:{where}")
                out.append(CelCase(name, expression, tuple(gen_devices), tuple(devices),
                                   cluster.minor, fleet.label))
    return out


def gen_cel_verdict(case: CelCase) -> tuple[str, str]:
    """(verdict, gen's words) of :mod:`gen.dra.cel` on a case: ``refused: compile error``,
    ``refused: cost limit``, ``refused: too long`` or ``accepted: true false error ...``
    (one result per device). A case of no cluster is compiled as the oracle's own minor
    compiles it: gen's newest environment is a newer release's (1.38's ``includes``)."""
    from gen.dra.cel import compile_selector
    from gen.errors import CELCompileError, CELRuntimeError

    try:
        selector = compile_selector(case.expression,
                                    NEWEST_MINOR if case.minor is None else case.minor)
    except CELCompileError as err:
        return _refusal(err.message), err.message
    results, words = [], []
    for device in case.gen_devices:
        try:
            results.append(str(selector.evaluate(device)).lower())
        except CELRuntimeError as err:
            results.append("error")
            words.append(err.message)
    return " ".join(["accepted:", *results]).strip(), "; ".join(dict.fromkeys(words))


def _refusal(message: str) -> str:
    if message.startswith("too complex, exceeds cost limit"):
        return "refused: cost limit"
    if message.startswith("Too long"):
        return "refused: too long"
    return "refused: compile error"


def oracle_cel_verdict(answer: Mapping[str, Any]) -> tuple[str, str]:
    """(verdict, the oracle's words) of a ``cel`` answer, in :func:`gen_cel_verdict`'s
    terms."""
    if answer.get("tooLong"):
        return "refused: too long", str(answer.get("validation", ""))
    if answer.get("costLimit"):
        return "refused: cost limit", str(answer.get("validation", ""))
    if not answer.get("accepted"):
        return "refused: compile error", str((answer.get("error") or {}).get("detail", ""))
    results = answer.get("results") or []
    verdict = " ".join(["accepted:", *("error" if r.get("error") else str(r["matched"]).lower()
                                       for r in results)]).strip()
    words = "; ".join(dict.fromkeys(str(r["error"]) for r in results if r.get("error")))
    return verdict, words


def judge_cel(category: Category, oracles: Oracles, cases: Iterable[CelCase]) -> None:
    """Add one verdict per case to ``category``."""
    for case in cases:
        gen, gen_words = gen_cel_verdict(case)
        answer = oracles.at(case.minor).cel(case.expression, case.devices)
        upstream, words = oracle_cel_verdict(answer)
        detail = "" if gen == upstream else f"upstream: {words or '-'} | gen: {gen_words or '-'}"
        category.add(case.case, gen, upstream, detail)


def cel_cases(*, fleets: Sequence[RenderedFleet] | None = None) -> list[CelCase]:
    """Every CEL case: the CEL corpora, the corpus's cel cases, and the selectors of the
    example and acme fleets (or of ``fleets``)."""
    if fleets is None:
        fleets = [render_fleet("profiles", EXAMPLE), render_fleet("acme", ACME, base=ACME.parent)]
    cases = corpus_cel_cases() + corpus_case_cel_cases()
    for fleet in fleets:
        cases += fleet_cel_cases(fleet)
    return cases


def cel_category(oracles: Oracles | None = None, *,
                 cases: Sequence[CelCase] | None = None) -> Category:
    """"CEL": gen's compile verdict (accepted, compile error, cost limit, too long) and its
    result on each device, against the API server's validation and the scheduler's
    evaluation (k8s.io/dynamic-resource-allocation cel@v0.37.2)."""
    category = Category("CEL", "k8s.io/dynamic-resource-allocation/cel@v0.37.2 (the API "
                        "server's selector validation, the scheduler's DeviceMatches)")
    owned = oracles is None
    oracles = oracles or Oracles()
    try:
        judge_cel(category, oracles, cel_cases() if cases is None else cases)
    finally:
        if owned:
            oracles.close()
    return category


# --------------------------------------------------------------------------- allocation

ALLOCATOR_GATES = (
    "DRAAdminAccess", "DRAPrioritizedList", "DRAPartitionableDevices", "DRADeviceTaints",
    "DRAConsumableCapacity", "DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus",
)
"""The DRA gates the allocator reads (AllocatorFeatures, k8s.io/kubernetes
pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go@v1.37.2); the ones it
added in 1.37 (fractional capacity ranges, list-type and derived attributes, optional node
operations, compatibility groups) are alpha or off by default there and left off."""

CHART_DEVICE_CLASSES = {
    name: {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
           "spec": {"selectors": [{"cel": {"expression": (
               "device.driver == 'gpu.nvidia.com' && "
               f"device.attributes['gpu.nvidia.com'].type == '{kind}'")}}]}}
    for name, kind in (("gpu.nvidia.com", "gpu"), ("mig.nvidia.com", "mig"))
}
"""The DeviceClasses the NVIDIA DRA driver's chart installs, which gen does not render
(gen.dra.build.CHART_CLASSES; kubernetes-sigs/dra-driver-nvidia-gpu
deployments/helm/nvidia-dra-driver-gpu/templates/deviceclass-*.yaml@v25.12.0)."""


def allocator_features(cluster: Any) -> dict[str, bool]:
    """The allocator features a ``1.minor`` scheduler with the cluster's declared gates runs
    with (AllocatorFeatures, dynamicresources.go@v1.37.2; each gate's state at that minor from
    gen's gate table, which tools/k8s_gates.py reads from kube_features.go at the minor's
    tag), v0.37.2's code standing in for that minor's."""
    from gen.k8s.gates import gate_table

    gates = dict(cluster.located.value.feature_gates)
    table = gate_table()
    on = {gate: table.enabled(gate, cluster.minor, gates) for gate in ALLOCATOR_GATES}
    return {
        "adminAccess": on["DRAAdminAccess"],
        "prioritizedList": on["DRAPrioritizedList"],
        "partitionableDevices": on["DRAPartitionableDevices"],
        "deviceTaints": on["DRADeviceTaints"],
        "consumableCapacity": on["DRAConsumableCapacity"],
        "deviceBindingAndStatus": on["DRADeviceBindingConditions"]
        and on["DRAResourceClaimDeviceStatus"],
    }


def _v1_claim_spec(template: Mapping[str, Any]) -> dict[str, Any]:
    """A ResourceClaimTemplate's claim spec in resource.k8s.io/v1's shape (v1beta1 and
    v1alpha3 requests put the exact request's fields beside ``name``; v1beta2 is v1's)."""
    spec: dict[str, Any] = json.loads(json.dumps(template["spec"]["spec"]))
    if template.get("apiVersion") not in ("resource.k8s.io/v1beta1", "resource.k8s.io/v1alpha3"):
        return spec
    requests = []
    for request in spec.get("devices", {}).get("requests") or ():
        if "firstAvailable" in request:
            requests.append({"name": request["name"], "firstAvailable": request["firstAvailable"]})
        else:
            exact = {k: v for k, v in request.items() if k != "name"}
            requests.append({"name": request["name"], "exactly": exact})
    spec.setdefault("devices", {})["requests"] = requests
    return spec


@dataclass
class ClusterModel:
    """A DRA cluster as the oracle sees it: nodes, slices, classes, and per service the pod
    it runs (claims and scheduling fields from the rendered workload)."""

    fleet: str
    cluster: Any
    nodes: list[dict[str, Any]]
    slices: list[dict[str, Any]]
    classes: list[dict[str, Any]]
    pods: dict[str, dict[str, Any]]
    """Service name → a pod template: namespace, claims, nodeSelector, affinity,
    tolerations."""
    pool_nodes: dict[str, list[str]]
    """Pool name → its node names, in order."""
    features: dict[str, bool]


def _service_pods(objects: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Service name → the pod its workload creates, with each claim's spec resolved from its
    ResourceClaimTemplate."""
    templates = {(o["metadata"].get("namespace"), o["metadata"]["name"]): o
                 for o in objects if o["kind"] == "ResourceClaimTemplate"}
    out = {}
    for obj in objects:
        if obj["kind"] not in ("Deployment", "StatefulSet"):
            continue
        pod = obj["spec"]["template"]["spec"]
        claims = []
        namespace = obj["metadata"].get("namespace")
        for claim in pod.get("resourceClaims") or ():
            template = templates.get((namespace, claim.get("resourceClaimTemplateName")))
            if template is not None:
                claims.append({"name": claim["name"], "spec": _v1_claim_spec(template)})
        if not claims:
            continue
        service = obj["metadata"].get("labels", {}).get("app.kubernetes.io/name",
                                                         obj["metadata"]["name"])
        out[service] = {
            "namespace": namespace, "claims": claims,
            **{k: pod[k] for k in ("nodeSelector", "affinity", "tolerations") if k in pod},
        }
    return out


def cluster_model(fleet: RenderedFleet, cluster: Any) -> ClusterModel:
    """The oracle's view of one DRA cluster of a rendered fleet."""
    from gen.dra.simulate import node_name, resource_slices

    nodes, slices, pool_nodes = [], [], {}
    for pool in cluster.pools:
        if pool.gpu is None or pool.pool.platform != "nvidia":
            continue
        names = [node_name(pool, i) for i in range(pool.pool.nodes)]
        pool_nodes[pool.name] = names
        taints = [{"key": t.key, "value": t.value, "effect": t.effect} for t in pool.pool.taints]
        for i, name in enumerate(names):
            nodes.append({"name": name,
                          "labels": {"kubernetes.io/hostname": name, **pool.node_labels},
                          "taints": taints})
            slices += resource_slices(pool, i, cluster.minor)
    objects = fleet.objects.get(cluster.name, [])
    classes = [o for o in objects if o["kind"] == "DeviceClass"]
    pods = _service_pods(objects)
    rendered = {c["metadata"]["name"] for c in classes}
    wanted = {r.get("exactly", r).get("deviceClassName") for p in pods.values()
              for c in p["claims"] for r in c["spec"].get("devices", {}).get("requests", ())}
    wanted |= {s.get("deviceClassName") for p in pods.values() for c in p["claims"]
               for r in c["spec"].get("devices", {}).get("requests", ())
               for s in r.get("firstAvailable") or ()}
    classes += [CHART_DEVICE_CLASSES[n] for n in sorted(wanted - rendered)
                if n in CHART_DEVICE_CLASSES]
    return ClusterModel(fleet.label, cluster, nodes, slices, classes, pods, pool_nodes,
                        allocator_features(cluster))


def _pods_in_order(model: ClusterModel, sequence: Sequence[tuple[Any, int]],
                   policy: str) -> list[dict[str, Any]]:
    """The oracle's pods for (service plan, replica) in ``sequence``: each tries the nodes
    of the service's pools in gen's pool order, then every other node (the scheduling
    filters and the allocator decide)."""
    pods = []
    every = [n["name"] for n in model.nodes]
    for svc, replica in sequence:
        name = svc.service.name
        template = model.pods[name]
        own = [n for p in svc.pools for n in model.pool_nodes.get(p.name, ())]
        candidates = own + [n for n in every if n not in own]
        pods.append({"name": f"{name}-{replica}", **template, "nodes": candidates,
                     "policy": policy})
    return pods


def _ask_allocation(oracles: Oracles, model: ClusterModel,
                    pods: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    answer = oracles.at().allocate(device_classes=model.classes, resource_slices=model.slices,
                                   nodes=model.nodes, pods=pods, features=model.features)
    result: list[dict[str, Any]] = answer.get("pods") or []
    return result


def _analyzed(cluster: Any) -> tuple[list[tuple[Any, Any]], Any]:
    """(service, its choice analyses) of the services gen's packing places, and the
    matcher, as gen.dra.capacity.cluster_packing builds them."""
    from gen.dra.satisfiability import Matcher, analyze_service
    from gen.fleet.roles import workloads

    matcher = Matcher()
    analyzed = [(svc, analyze_service(matcher, cluster, svc)) for svc in workloads(cluster)
                if svc.service.gpu is not None and svc.gpu_class is not None]
    return analyzed, matcher


def _min_replicas(svc: Any) -> int:
    service = svc.service
    return int(service.autoscaling.min_replicas if service.autoscaling else service.replicas)


_HOLDS = re.compile(r"(\d+) of (?:the|its) (\d+) replicas")


def gen_placed(fleet: RenderedFleet, cluster: Any, svc: Any, at_max: bool) -> str:
    """gen lint's verdict on how many replicas of a service the cluster holds at once:
    ``P/W``, from its findings (GEN203/204/206 errors: none; GEN205/GEN240: the count they
    give, errors at the minimum, warnings at the maximum)."""
    name = svc.service.name
    wanted = svc.service.max_replicas if at_max else _min_replicas(svc)
    severity = "warning" if at_max else "error"
    placed = wanted
    for f in fleet.lint:
        if f.cluster not in ("", cluster.name):
            continue
        if not at_max and f.rule in ("GEN203", "GEN204", "GEN206") and f.service == name \
                and f.severity == "error":
            return f"0/{wanted}"
        if f.rule not in ("GEN205", "GEN240") or f.severity != severity:
            continue
        about_it = f.service == name and (not at_max or "max_replicas" in f.message
                                          or f.rule == "GEN240")
        blamed = at_max and f"service {name!r} (no autoscaling)" in f.message
        match = _HOLDS.search(f.message)
        if (about_it or blamed) and match is not None and int(match[2]) == wanted:
            placed = min(placed, int(match[1]))
    return f"{placed}/{wanted}"


def _placed_count(pods: Sequence[Mapping[str, Any]], service: str) -> tuple[int, str]:
    """Pods of ``service`` the allocator placed, and its fatal errors (a pod whose attempt
    fails with an error stays Pending: not placed)."""
    mine = [p for p in pods if p["name"].rsplit("-", 1)[0] == service]
    errors = [p["error"] for p in mine if p.get("error")]
    return sum(1 for p in mine if p.get("node")), "; ".join(dict.fromkeys(errors))


ALLOCATION_RULES = frozenset({"GEN204", "GEN205", "GEN206", "GEN240", "GEN241"})
"""gen's verdicts on allocation: a cluster whose lint has errors of other rules is one gen
refuses to render for another reason (a gate, an API version, a selector that does not
compile, a class no pool offers), and is not judged here."""


def refused_for_other_reasons(fleet: RenderedFleet, cluster: Any) -> list[str]:
    """The rules outside :data:`ALLOCATION_RULES` of the errors gen lint reports for the
    cluster (or for no cluster in particular)."""
    return sorted({f.rule for f in fleet.lint if f.severity == "error"
                   and f.rule not in ALLOCATION_RULES and f.cluster in ("", cluster.name)})


def _order(demands: Sequence[Any], order: Any) -> list[tuple[Any, int]]:
    from gen.dra.allocator import arrival

    return [(d.service, r) for d, r in arrival(demands, order)]


def _counters_text(counters: Mapping[str, int]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(counters.items()) if v)


def _gen_placement(packing: Any, placement: Any) -> str:
    """``node: dev1 dev2; counters`` of one of gen's placements."""
    model = packing.models[placement.pool]
    node = f"{placement.pool}-{placement.node}"
    devices = sorted(model.slot_name(s) for s in placement.slots)
    counters: dict[str, int] = {}
    for slot in placement.slots:
        for counter, amount in model.counters.consumes[slot]:
            key = f"{node}/{model.counters.names[counter]}"
            counters[key] = counters.get(key, 0) + amount
    return f"{node}: {' '.join(devices)}; {_counters_text(counters)}".rstrip("; ")


def _oracle_placement(pod: Mapping[str, Any]) -> str:
    from gen.k8s.quantity import parse_quantity

    if not pod.get("node"):
        return "not placed"
    devices = sorted(d["device"] for c in pod.get("claims", ()) for d in c["devices"])
    counters: dict[str, int] = {}
    for claim in pod.get("claims", ()):
        for key, text in (claim.get("counters") or {}).items():
            counters[key] = counters.get(key, 0) + int(parse_quantity(text))
    return f"{pod['node']}: {' '.join(devices)}; {_counters_text(counters)}".rstrip("; ")


def judge_cluster_allocation(category: Category, oracles: Oracles, fleet: RenderedFleet,
                             cluster: Any) -> None:
    """The allocation verdicts of one DRA cluster: per service the replicas held at once
    (gen lint vs the allocator, at the minimum and at autoscaling max), and per replica of
    gen's packing its node, devices and counters (gen.dra.allocator.pack vs the
    allocator, placing in the same order on the same nodes)."""
    from gen.dra.allocator import ORDERS, pack
    from gen.dra.capacity import cluster_models, demands_of, has_dynamic_pools

    if refused_for_other_reasons(fleet, cluster):
        return
    model = cluster_model(fleet, cluster)
    analyzed, matcher = _analyzed(cluster)
    analyzed = [(s, a) for s, a in analyzed if s.service.name in model.pods]
    if not analyzed:
        return
    where = f"alloc:{fleet.label}/{cluster.name}"
    dynamic = has_dynamic_pools(cluster)
    models = cluster_models(cluster, analyzed, matcher.model)
    scenarios = [False]
    if any(s.service.max_replicas != _min_replicas(s) for s, _ in analyzed):
        scenarios.append(True)
    for at_max in list(scenarios):
        if at_max and len(scenarios) == 1:
            break
        label = "max" if at_max else "min"
        demands = demands_of(analyzed, models, at_max)
        wanted = {d.service.service.name: d.replicas for d in demands}
        # gen's lint places pods first fit over nodes (docs/architecture.md, "DRA
        # capacity"), in service order (GEN205) or, with dynamic pools, in five arrival
        # orders (GEN240/241): the oracle does the same.
        orders = ORDERS if dynamic else ORDERS[:1]
        answers = {order: _ask_allocation(oracles, model, _pods_in_order(
            model, _order(demands, order), "first")) for order in orders}
        short = {o: sum(wanted[s] - _placed_count(a, s)[0] for s in wanted)
                 for o, a in answers.items()}
        best = min(orders, key=lambda o: short[o])
        if dynamic:
            fits = [o for o in orders if not short[o]]
            upstream = ("fits in every order" if len(fits) == len(orders)
                        else "fits in some orders" if fits else "fits in no order")
            rules = {f.rule for f in fleet.lint if f.cluster == cluster.name
                     and f.severity == ("warning" if at_max else "error")
                     and f.rule == "GEN240"}
            rules |= {f.rule for f in fleet.lint if f.cluster == cluster.name
                      and f.rule == "GEN241" and (("autoscaling" in f.message) == at_max)}
            # A service gen refuses outright (no device its claim can take) fits in no order.
            refused = not at_max and any(gen_placed(fleet, cluster, svc, at_max).startswith("0/")
                                         for svc, _ in analyzed if wanted.get(svc.service.name))
            gen = ("fits in no order" if "GEN240" in rules or refused
                   else "fits in some orders" if "GEN241" in rules else "fits in every order")
            category.add(f"{where}/{label}/orders", gen, upstream,
                         f"short per order: {short}" if gen != upstream else "")
        short_at_min = False
        for svc, _ in analyzed:
            name = svc.service.name
            placed, errors = _placed_count(answers[best], name)
            upstream = f"{placed}/{wanted[name]}"
            gen = gen_placed(fleet, cluster, svc, at_max)
            short_at_min |= gen != f"{wanted[name]}/{wanted[name]}"
            category.add(f"{where}/{label}/{name}", gen, upstream,
                         errors or (f"best order: {best}" if gen != upstream else ""))
        if at_max:
            continue
        if short_at_min:
            # gen judges autoscaling max only when the minimum fits
            # gen.dra.capacity): no verdict of gen's to compare.
            scenarios = scenarios[:1]
        for order in orders:
            packing = pack(models, demands, order)
            placements = {(p.service, p.replica): p for p in packing.placements}
            pods = answers[order]
            for (svc, replica), pod in zip(_order(demands, order), pods, strict=True):
                name = svc.service.name
                mine = placements.get((name, replica))
                gen = "not placed" if mine is None else _gen_placement(packing, mine)
                upstream = _oracle_placement(pod)
                category.add(f"{where}/packing/{order}/{name}#{replica}", gen, upstream,
                             str(pod.get("error") or pod.get("unschedulable") or "")
                             if gen != upstream else "")


def allocation_fleets(generated: int | None = None) -> Iterator[RenderedFleet]:
    """The fleets the allocation category judges: the example and acme fleets, the
    dynamic-MIG fixture fleet, the lint cases of the DRA, dynamic-MIG and MIG corpus files,
    and ``generated`` fleets drawn by tests/strategies.py (default: ``GEN_JUDGE_FLEETS``, or
    :data:`CI_FLEETS`), each also :func:`overloaded`. A fleet gen refuses to load is no
    case."""
    from gen.errors import GenError

    yield render_fleet("profiles", EXAMPLE)
    yield render_fleet("acme", ACME, base=ACME.parent)
    fixture = REPO / "tests" / "fixtures" / "dynamic-mig"
    yield render_fleet("tests/fixtures/dynamic-mig", fixture, base=fixture.parent)
    for name in ("dra.yaml", "dynamic-mig.yaml", "mig.yaml"):
        for case in corpus_cases(CORPUS / name, ["lint"]):
            try:
                yield corpus_fleet(CORPUS / name, case)
            except (GenError, ValueError, OSError):
                continue
    count = generated if generated is not None else int(
        os.environ.get("GEN_JUDGE_FLEETS", CI_FLEETS))
    for i, drawn in enumerate(generated_fleets(count) if count else ()):
        for variant, suffix in ((drawn, ""), (overloaded(drawn), "+overloaded")):
            if variant is None:
                continue
            try:
                yield render_generated(i, variant, suffix)
            except GenError:
                continue


def judge_allocation(category: Category, oracles: Oracles,
                     fleets: Iterable[RenderedFleet]) -> None:
    """Add the verdicts of every DRA cluster of ``fleets``."""
    for fleet in fleets:
        for cluster in fleet.plan.clusters:
            if cluster.dra_api_version is not None:
                judge_cluster_allocation(category, oracles, fleet, cluster)


def allocation_category(oracles: Oracles | None = None, *,
                        fleets: Iterable[RenderedFleet] | None = None) -> Category:
    """"allocation (structured allocator)": per DRA cluster, the replicas each service holds
    at once and each replica's devices and counters, gen against the scheduler's allocator
    (k8s.io/dynamic-resource-allocation/structured@v0.37.2) on gen's simulated slices."""
    category = Category("allocation (structured allocator)",
                        "k8s.io/dynamic-resource-allocation/structured@v0.37.2 (NewAllocator, "
                        "Allocate per node, as kube-scheduler's DynamicResources plugin)")
    owned = oracles is None
    oracles = oracles or Oracles()
    try:
        judge_allocation(category, oracles, allocation_fleets() if fleets is None else fleets)
    finally:
        if owned:
            oracles.close()
    return category


# --------------------------------------------------------------------------- Pod Security

ENFORCE = "pod-security.kubernetes.io/enforce"
ENFORCE_VERSION = "pod-security.kubernetes.io/enforce-version"
POD_KINDS = frozenset({"Pod", "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job",
                       "CronJob", "ReplicationController", "PodTemplate", "LeaderWorkerSet"})


def _levels(objects: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, str]]:
    """Namespace → (enforced level, version) of the Namespaces gen renders."""
    out = {}
    for obj in objects:
        if obj["kind"] == "Namespace":
            labels = obj["metadata"].get("labels") or {}
            if ENFORCE in labels:
                out[obj["metadata"]["name"]] = (labels[ENFORCE],
                                                labels.get(ENFORCE_VERSION, "latest"))
    return out


def gen_podsecurity_verdict(obj: Mapping[str, Any], level: str,
                            overrides: Mapping[str, str]) -> tuple[str, str]:
    """gen.security.podsecurity's verdict on a workload at ``level``: ``allowed`` or
    ``forbidden: <check ids>``. At restricted a baseline check that admission replaces by a
    restricted one (``overrides``, from the oracle: restrictedVolumes for hostPathVolumes,
    ...) is named by the check that replaces it, as admission reports it."""
    from gen.security.podsecurity import check

    violations = check(obj, level)  # type: ignore[arg-type]
    if not violations:
        return "allowed", ""
    names = sorted({overrides.get(v.check, v.check) for v in violations})
    return "forbidden: " + ", ".join(names), "; ".join(str(v) for v in violations[:6])


def oracle_podsecurity_verdict(answer: Mapping[str, Any]) -> tuple[str, str]:
    """The oracle's verdict in :func:`gen_podsecurity_verdict`'s terms (every pod template
    of the object together)."""
    found = [f for t in answer["templates"] for f in t.get("forbidden") or ()]
    if not found:
        return "allowed", ""
    names = sorted({f["check"] for f in found})
    words = "; ".join(f"{f['check']}: {f['reason']} ({f.get('detail', '')})" for f in found)
    return "forbidden: " + ", ".join(names), words


def judge_podsecurity(category: Category, oracles: Oracles,
                      fleets: Iterable[RenderedFleet]) -> None:
    """Every workload of every cluster of ``fleets`` in a namespace gen labels with a Pod
    Security level: at that level (the claim), and at baseline and restricted too."""
    for fleet in fleets:
        for cluster, objects in sorted(fleet.objects.items()):
            levels = _levels(objects)
            for obj in objects:
                if obj["kind"] not in POD_KINDS:
                    continue
                namespace = obj["metadata"].get("namespace", "")
                if namespace not in levels:
                    continue  # gen claims no level for it
                claimed, version = levels[namespace]
                where = (f"psa:{fleet.label}/{cluster}/{obj['kind']}/{namespace}/"
                         f"{obj['metadata']['name']}")
                for level in dict.fromkeys([claimed, "baseline", "restricted"]):
                    if level == "privileged":
                        continue  # the privileged level forbids nothing
                    answer = oracles.at().podsecurity(obj, level, version)
                    upstream, words = oracle_podsecurity_verdict(answer)
                    gen, gen_words = gen_podsecurity_verdict(obj, level,
                                                             answer.get("overrides") or {})
                    suffix = f"@{level}" + (" (claimed)" if level == claimed else "")
                    detail = "" if gen == upstream else f"upstream: {words} | gen: {gen_words}"
                    category.add(where + suffix, gen, upstream, detail)


def _patched(target: dict[str, Any], patch: Mapping[str, Any]) -> None:
    """Apply ``patch`` to ``target`` in place: mappings merge, lists are appended to the
    target's list, None removes the key, anything else replaces."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, Mapping):
            inner = target.get(key)
            if not isinstance(inner, dict):
                inner = target[key] = {}
            _patched(inner, value)
        elif isinstance(value, list):
            target[key] = [*(target.get(key) or []), *value]
        else:
            target[key] = value


def _sc(**fields: Any) -> dict[str, Any]:
    return {"securityContext": fields}


POD_MUTATIONS: dict[str, dict[str, dict[str, Any]]] = {
    "privileged": {"container": _sc(privileged=True)},
    "host-network": {"pod": {"hostNetwork": True}},
    "host-pid": {"pod": {"hostPID": True}},
    "host-ipc": {"pod": {"hostIPC": True}},
    "host-path": {"pod": {"volumes": [{"name": "host", "hostPath": {"path": "/var/run"}}]}},
    "nfs-volume": {"pod": {"volumes": [
        {"name": "nfs", "nfs": {"server": "nfs.example.com", "path": "/models"}}]}},
    "host-port": {"container": {"ports": [{"containerPort": 9000, "hostPort": 9000}]}},
    "add-sys-admin": {"container": _sc(capabilities={"add": ["SYS_ADMIN"]})},
    "add-chown": {"container": _sc(capabilities={"add": ["CHOWN"]})},
    "add-net-bind-service": {"container": _sc(capabilities={"add": ["NET_BIND_SERVICE"]})},
    "no-drop-all": {"container": _sc(capabilities={"drop": None})},
    "privilege-escalation": {"container": _sc(allowPrivilegeEscalation=True)},
    "run-as-root-allowed": {"pod": _sc(runAsNonRoot=False), "container": _sc(runAsNonRoot=None)},
    "run-as-user-0": {"container": _sc(runAsUser=0)},
    "seccomp-unconfined": {"pod": _sc(seccompProfile={"type": "Unconfined"})},
    "seccomp-none": {"pod": _sc(seccompProfile=None), "container": _sc(seccompProfile=None)},
    "proc-mount-unmasked": {"container": _sc(procMount="Unmasked")},
    "sysctl-unsafe": {"pod": _sc(sysctls=[{"name": "kernel.msgmax", "value": "65536"}])},
    "sysctl-safe": {"pod": _sc(sysctls=[{"name": "net.ipv4.tcp_keepalive_time",
                                         "value": "60"}])},
    "apparmor-unconfined": {"container": _sc(appArmorProfile={"type": "Unconfined"})},
    "apparmor-annotation-unconfined": {"metadata": {"annotations": {
        "container.apparmor.security.beta.kubernetes.io/{container}": "unconfined"}}},
    "selinux-type-spc": {"container": _sc(seLinuxOptions={"type": "spc_t"})},
    "selinux-user": {"container": _sc(seLinuxOptions={"user": "system_u"})},
    "windows-host-process": {"container": _sc(windowsOptions={"hostProcess": True})},
    "probe-host": {"container": {"livenessProbe": {"httpGet": {"host": "10.0.0.1"}}}},
    "user-namespace-root": {"pod": {"hostUsers": False, **_sc(runAsNonRoot=None)},
                            "container": _sc(runAsUser=0, procMount="Unmasked",
                                             runAsNonRoot=None)},
    "windows-escalation": {"pod": {"os": {"name": "windows"}},
                           "container": _sc(allowPrivilegeEscalation=None)},
    "init-privileged": {"pod": {"initContainers": [{
        "name": "init", "image": "busybox:1.36", "securityContext": {"privileged": True}}]}},
}
"""Single-field changes of a rendered pod template (``pod``: its spec, ``container``: its
first container, ``metadata``), one or more per Pod Security check, and near misses that
stay allowed: gen's checker and admission's must agree on each."""


def _mutated(template: dict[str, Any], patch: Mapping[str, Mapping[str, Any]]) -> None:
    spec = template["spec"]
    container = spec["containers"][0]
    _patched(spec, patch.get("pod", {}))
    _patched(container, patch.get("container", {}))
    metadata = json.loads(json.dumps(patch.get("metadata", {})).replace(
        "{container}", container["name"]))
    _patched(template.setdefault("metadata", {}), metadata)


def mutant_workloads(fleet: RenderedFleet) -> list[tuple[str, dict[str, Any]]]:
    """(name, Deployment) for each of :data:`POD_MUTATIONS`, applied to the first
    Deployment gen renders in a namespace it labels restricted."""
    for objects in fleet.objects.values():
        levels = _levels(objects)
        for obj in objects:
            namespace = obj["metadata"].get("namespace", "")
            if obj["kind"] == "Deployment" and levels.get(namespace, ("",))[0] == "restricted":
                out = []
                for name, patch in POD_MUTATIONS.items():
                    copy: dict[str, Any] = json.loads(json.dumps(obj))
                    _mutated(copy["spec"]["template"], patch)
                    out.append((name, copy))
                return out
    return []


def judge_podsecurity_mutants(category: Category, oracles: Oracles,
                              fleet: RenderedFleet) -> None:
    """:func:`mutant_workloads` of ``fleet`` at baseline and restricted."""
    for name, obj in mutant_workloads(fleet):
        for level in ("baseline", "restricted"):
            answer = oracles.at().podsecurity(obj, level)
            upstream, words = oracle_podsecurity_verdict(answer)
            gen, gen_words = gen_podsecurity_verdict(obj, level, answer.get("overrides") or {})
            detail = "" if gen == upstream else f"upstream: {words} | gen: {gen_words}"
            category.add(f"psa:mutant/{name}@{level}", gen, upstream, detail)


def podsecurity_fleets() -> Iterator[RenderedFleet]:
    """The example and acme fleets, every case of the security corpus, and every render
    case of the corpus (a fleet gen refuses to render is no case)."""
    from gen.errors import GenError

    yield render_fleet("profiles", EXAMPLE)
    yield render_fleet("acme", ACME, base=ACME.parent)
    for path in sorted(CORPUS.glob("*.yaml")):
        modes = ["lint", "render"] if path.name == "security.yaml" else ["render"]
        for case in corpus_cases(path, modes):
            try:
                yield corpus_fleet(path, case)
            except (GenError, ValueError, OSError):
                continue


def podsecurity_category(oracles: Oracles | None = None, *,
                         fleets: Iterable[RenderedFleet] | None = None) -> Category:
    """"Pod Security (policy library)": allowed or forbidden, and by which checks, for every
    pod template gen renders, gen.security.podsecurity against
    k8s.io/pod-security-admission/policy@v0.37.2."""
    category = Category("Pod Security (policy library)",
                        "k8s.io/pod-security-admission/policy@v0.37.2 (EvaluatePod with "
                        "DefaultChecks, as PodSecurity admission)")
    owned = oracles is None
    oracles = oracles or Oracles()
    try:
        chosen = list(podsecurity_fleets() if fleets is None else fleets)
        judge_podsecurity(category, oracles, chosen)
        if chosen:
            judge_podsecurity_mutants(category, oracles, chosen[0])
    finally:
        if owned:
            oracles.close()
    return category


def run() -> list[Category]:
    """The three categories of the fast oracle, with one oracle process per emulated
    version for all of them."""
    with Oracles() as oracles:
        return [cel_category(oracles), allocation_category(oracles),
                podsecurity_category(oracles)]
