"""objects (kubeconform): kubeconform judges the objects gen's embedded validator judges.

kubeconform v0.8.0 (yannh/kubeconform@v0.8.0, built by :func:`tools.judge.build.ensure`) runs
the way ``gen render --validator kubeconform`` runs it (:func:`gen.emit.kubeconform.
kubeconform_resources`): offline, with gen's schemas only (the strict JSON Schemas of the
cluster's Kubernetes version and the converted CRDs), on YAML written by gen's own writer
(:func:`gen.emit.yamlfast.dump`), which kubeconform reads with sigs.k8s.io/yaml as kubectl does.

Cases, each an object (or a cluster) with gen's verdict and kubeconform's:

- ``fleet/<cluster>``: every object of one cluster of the example fleet (``profiles/``), as
  ``gen render`` renders and validates it (:func:`gen.pipeline.render_outputs`), its files
  written to a scratch folder for kubeconform, at the cluster's Kubernetes version: the
  verdict counts the objects and names each that is not valid.
- ``mutant/validate:<n>``: the n-th mutant of ``tests/emit/test_validate_differential.py``
  (:func:`tests.emit.mutants.validate_mutants`, seeded): an example object with one to three
  fields dropped, retyped, added, set outside an enum or pattern, or its lists edited.
- ``yaml:<string>``: a ConfigMap holding one string that a YAML reader may take for another
  type (:data:`SCALARS`): what gen writes must read back as the string it validated.
- ``mutant/crd:<n>``: the n-th mutant of ``tests/emit/test_crd_differential.py``
  (:func:`tests.emit.mutants.crd_mutants`): every custom resource mutated at every node its
  CRD describes, judged at Kubernetes 1.34 as that test does.

What is compared is the check both make, JSON Schema validation: gen's ``GEN020`` findings
(the schema of the object's kind, a custom resource after the API server's null pruning and
defaulting) against kubeconform's status. gen's metadata syntax (``GEN022``) and CRD CEL
rules and list-map keys (``GEN024``) are beyond kubeconform and not compared. A verdict is
``valid``, ``no schema`` (no schema describes the apiVersion and kind: for kubeconform
``could not find schema`` or no ``kind``/``apiVersion`` string), or ``invalid at <paths>``:
the set of key paths of the errors, gen's from its findings, kubeconform's from the leaves of
its error tree (:func:`gen.emit.kubeconform.leaf_errors`). When kubeconform rejects an object
before any schema (``statusError`` for another reason: its ``metadata``, ``kind`` or
``apiVersion`` does not decode as strings, or the kind is too long a file name), the verdict is
``rejected``, and gen's too unless gen finds the object valid: no paths to compare.

One translation of kubeconform's words into the API server's: a ``null`` in a required field
of a custom resource that has no default is dropped before validation
(kubernetes/apiextensions-apiserver pkg/apiserver/schema/defaulting/prunenulls.go@v0.36.3), so
the API server and gen report the field missing at its parent; kubeconform reports ``got
null`` at the field. Such an error counts at the parent (:func:`_upstream_paths`).
"""

from __future__ import annotations

import collections
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tools.judge.report import Category

__all__ = ["JUDGE", "NAME", "SCALARS", "Case", "crd_cases", "fleet_cases", "judge", "run",
           "validate_cases", "yaml_cases"]

NAME = "objects (kubeconform)"
JUDGE = "kubeconform v0.8.0, offline, gen's schemas"
REPO = Path(__file__).resolve().parents[2]
VALIDATE_SEED = 12
"""The seed and rounds of ``tests/emit/test_validate_differential.py``'s mixed campaign."""
VALIDATE_PER_OBJECT = 6
CRD_MINOR = 34
"""The Kubernetes minor ``tests/emit/test_crd_differential.py`` judges custom resources at."""


@dataclass(frozen=True)
class Case:
    """One object to judge: its case id, the cluster's Kubernetes version and the object."""

    case: str
    kubernetes_version: str
    obj: Mapping[str, Any]


def validate_cases(seed: int = VALIDATE_SEED, per_object: int = VALIDATE_PER_OBJECT,
                   keep: int = 1) -> Iterator[Case]:
    """Every ``keep``-th mutant of the validate differential's seeded campaign."""
    from tests.emit.mutants import validate_mutants

    for n, (minor, _, mutant, _) in enumerate(validate_mutants(seed, per_object)):
        if n % keep == 0:
            yield Case(f"mutant/validate:{n}", f"1.{minor}.0", mutant)


def crd_cases(keep: int = 1) -> Iterator[Case]:
    """Every ``keep``-th mutant of the CRD differential, numbered over all its objects."""
    from tests.emit.mutants import crd_mutants, crd_objects

    n = 0
    for obj in crd_objects():
        for mutant in crd_mutants(obj):
            if n % keep == 0:
                yield Case(f"mutant/crd:{n}", f"1.{CRD_MINOR}.0", mutant)
            n += 1


SCALARS = (
    "y", "Y", "n", "N", "yes", "No", "on", "OFF", "true", "False", "~", "null", "NULL", "",
    "1e3", "12E3", "-1e3", "+1", "-1", "08", "0777", "0o17", "0O17", "0x1F", "0X1F", "0b101",
    "0B101", "1_000", ".5", ".5e3", "1.0", "1.", "1:20", ".inf", "-.Inf", ".NaN", "inf", "NaN",
    "2001-01-01", "2001-01-01T00:00:00Z", "<<", "=", "!x", "&a", "*a", "@x", "%x", "- x",
    "a: b", "a #b", "#x", "[x]", "{x}", "x, y", "'", '"', "?x", " x", "x ", "\tx",
)
"""Strings that YAML readers may take for something else (go-yaml v2's booleans, Go's number
syntax, YAML 1.1's, indicators): gen must write each so that kubeconform, which reads YAML as
kubectl does (sigs.k8s.io/yaml, go-yaml v2), reads the same string back."""


def yaml_cases() -> Iterator[Case]:
    """A ConfigMap whose one data value is each of :data:`SCALARS` (a value the schema types
    ``string``: read as anything else, it is invalid)."""
    import json

    for text in SCALARS:
        yield Case(f"yaml:{json.dumps(text)}", f"1.{CRD_MINOR}.0", {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "scalar", "namespace": "default"}, "data": {"value": text}})


# ------------------------------------------------------------------------ the verdicts


def _gen_verdict(validator: Any, obj: Mapping[str, Any], kubernetes_version: str
                 ) -> tuple[str, frozenset[str]]:
    """gen's schema verdict on one object and the key paths of its GEN020 errors."""
    from gen.emit.validate import compiled, schema_version_for
    from gen.errors import SourceLocation

    minor = int(kubernetes_version.split(".")[1])
    api_version, kind = str(obj.get("apiVersion", "")), str(obj.get("kind", ""))
    if compiled(schema_version_for(minor), api_version, kind,
                validator.crds.lookup(api_version, kind)) is None:
        return "no schema", frozenset()
    found = [f for f in validator.validate(obj, minor, SourceLocation("object.yaml"))
             if f.rule == "GEN020"]
    return ("invalid" if found else "valid"), frozenset(f.key_path for f in found)


_NO_SCHEMA = ("could not find schema", "missing 'kind' key", "missing 'apiVersion' key")


def _upstream_verdict(resource: Mapping[str, Any], obj: Mapping[str, Any], custom: bool
                      ) -> tuple[str, frozenset[str] | None]:
    """kubeconform's verdict on one resource and its error paths (``None``: it validated
    nothing, so there are no paths to compare)."""
    status, msg = resource.get("status"), str(resource.get("msg") or "")
    if status == "statusValid":
        return "valid", frozenset()
    if status == "statusInvalid":
        return "invalid", _upstream_paths(msg, obj, custom)
    if status == "statusError":
        reason = msg.removeprefix("error while parsing: ")
        return ("no schema" if reason.startswith(_NO_SCHEMA) else "rejected"), None
    return f"status {status!r}", None


def _upstream_paths(msg: str, obj: Mapping[str, Any], custom: bool) -> frozenset[str]:
    """The key paths of kubeconform's errors; a custom resource's ``null`` in an object's
    field counts at the object (the module docstring says why)."""
    from gen.emit.kubeconform import key_path, leaf_errors

    paths = set()
    for pointer, text in leaf_errors(msg):
        parent, _, _ = pointer.rpartition("/")
        if custom and text.startswith("got null,") and pointer and \
                isinstance(_at(obj, parent), Mapping) and _at(obj, pointer) is None:
            pointer = parent
        paths.add(key_path(pointer))
    return frozenset(paths)


_MISSING = object()


def _at(obj: Any, pointer: str) -> Any:
    """The value at a JSON pointer, or a marker when there is none."""
    node = obj
    for raw in pointer.split("/")[1:]:
        part = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, Mapping) and part in node:
            node = node[part]
        elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
            node = node[int(part)]
        else:
            return _MISSING
    return node


def _words(verdict: str, paths: frozenset[str] | None) -> str:
    if verdict != "invalid" or paths is None:
        return verdict
    return "invalid at " + ", ".join(sorted(p or "(root)" for p in paths))


# ------------------------------------------------------------------------ judging


def judge(cases: Iterable[Case], binary: Path, category: Category) -> None:
    """Judge ``cases`` with gen's embedded validator and with kubeconform (one run per
    Kubernetes version, every object in its own file); add a verdict per case."""
    from gen.emit.crd_schemas import CRDSet
    from gen.emit.kubeconform import kubeconform_resources
    from gen.emit.validate import SchemaValidator
    from gen.emit.yamlfast import dump

    validator = SchemaValidator(CRDSet())
    by_version: dict[str, list[tuple[Case, Path]]] = collections.defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="gen-judge-kubeconform-") as scratch:
        for index, case in enumerate(cases):
            path = Path(scratch) / f"{index}.yaml"
            path.write_text(dump(dict(case.obj)), encoding="utf-8")
            by_version[case.kubernetes_version].append((case, path))
        for version, items in sorted(by_version.items()):
            resources = collections.defaultdict(list)
            for resource in kubeconform_resources([p for _, p in items], version,
                                                  binary=str(binary), verbose=True):
                resources[resource.get("filename")].append(resource)
            for case, path in items:
                _add(category, case, validator, resources.get(str(path), []))


def _add(category: Category, case: Case, validator: Any,
         resources: list[dict[str, Any]]) -> None:
    gen, gen_paths = _gen_verdict(validator, case.obj, case.kubernetes_version)
    if len(resources) != 1:
        category.add(case.case, _words(gen, gen_paths),
                     f"{len(resources)} resources reported for one object")
        return
    (resource,) = resources
    custom = validator.crds.lookup(str(case.obj.get("apiVersion", "")),
                                   str(case.obj.get("kind", ""))) is not None
    upstream, upstream_paths = _upstream_verdict(resource, case.obj, custom)
    if upstream == "rejected" and gen != "valid":
        gen = "rejected"  # kubeconform stopped before any schema: a rejection is a rejection
    shown = gen_paths if upstream_paths is not None else None
    category.add(case.case, _words(gen, shown), _words(upstream, upstream_paths),
                 str(resource.get("msg") or ""))


def fleet_cases(binary: Path, category: Category, profiles: Path = REPO / "profiles") -> None:
    """One case per cluster of the fleet in ``profiles``, rendered as ``gen render`` renders
    it (the ``templates/`` and ``crds/`` beside the profiles, as the command finds them):
    gen's verdict is its render's own GEN020 findings; kubeconform's is its report on the
    cluster's files written to a scratch folder (its own folder, its ``_root/`` and
    ``_bootstrap/`` objects, kustomization.yaml left out as ``gen render`` leaves it out)."""
    from gen._noop import crds_for, templates_for
    from gen.emit.crd_schemas import load_crd_dir
    from gen.emit.kubeconform import kubeconform_resources
    from gen.pipeline import load_plan, render_outputs

    base = profiles.resolve().parent
    templates = templates_for(profiles, None)
    crds, _ = load_crd_dir(crds_for(profiles, None), base)
    plan = load_plan(profiles, base=base)
    for cluster in plan.clusters:
        outputs, findings, objects = render_outputs(
            plan.select([cluster.name]), templates_dir=templates, out_label="out",
            validator="embedded", jobs=1, crds=crds)
        bad_gen = sorted({f"{_relative(f.location.path if f.location else '?')}: invalid"
                          for f in findings if f.rule == "GEN020"})
        with tempfile.TemporaryDirectory(prefix="gen-judge-fleet-") as scratch:
            out = Path(scratch)
            files = []
            for path, data in outputs.items():
                if path.suffix == ".yaml" and path.name != "kustomization.yaml":
                    (out / path).parent.mkdir(parents=True, exist_ok=True)
                    (out / path).write_bytes(data)
                    files.append(out / path)
            resources = kubeconform_resources(files, cluster.kubernetes_version,
                                              binary=str(binary), crds=crds, verbose=True)
        bad_up = sorted({f"{Path(str(r.get('filename'))).relative_to(out)}: invalid"
                         for r in resources if r.get("status") != "statusValid"})
        category.add(f"fleet/{cluster.name}", _fleet_words(objects, bad_gen),
                     _fleet_words(len(resources), bad_up),
                     "; ".join(str(r.get("msg")) for r in resources
                               if r.get("status") != "statusValid")[:2000])


def _relative(shown: str) -> str:
    """A path of the render's findings (``out/<cluster>/...``) relative to out/."""
    return shown.removeprefix("out/")


def _fleet_words(objects: int, bad: list[str]) -> str:
    return f"{objects} objects, " + ("all valid" if not bad else "not valid: " + "; ".join(bad))


def run(binary: Path | None = None, *, seed: int = VALIDATE_SEED,
        per_object: int = VALIDATE_PER_OBJECT, validate_keep: int = 1, crd_keep: int = 1,
        fleet: bool = True) -> Category:
    """The category: the example fleet's clusters, the YAML scalars, the validate
    differential's mutants (``seed``, ``per_object``, every ``validate_keep``-th), then the
    CRD differential's (every ``crd_keep``-th). ``binary`` defaults to the pinned build
    (:func:`tools.judge.build.ensure`, which raises :class:`~tools.judge.build.BuildError`
    when Go cannot build it)."""
    if binary is None:
        from tools.judge.build import ensure

        binary = ensure("kubeconform")
    category = Category(NAME, JUDGE)
    if fleet:
        fleet_cases(binary, category)
    judge(yaml_cases(), binary, category)
    judge(validate_cases(seed, per_object, validate_keep), binary, category)
    judge(crd_cases(crd_keep), binary, category)
    return category
