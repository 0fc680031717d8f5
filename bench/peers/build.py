"""From gen's render to each peer's project: the same objects, in each peer's own terms.

Every YAML file gen writes is one object. Objects are grouped by *shape*: the same keys in
the same order, the same nesting (a list of strings counts as one leaf, whatever its
length). Within a shape, a leaf whose value is the same in every object is a constant;
the others are variables. Each shape then becomes:

- a Helm template (``templates/<shape>.yaml``) ranging over ``.Values.<shape>``, constants
  written literally, strings through ``toJson``; each cluster's values file lists its
  objects of that shape;
- a Jinja template (``templates/<shape>.yaml.j2``) for the hand-written Jinja2 + PyYAML
  generator, with one data file per cluster;
- a Python function in a kadet component that builds the object's dict, with a Kapitan
  target per cluster whose inventory lists its objects.

Only the standard library and PyYAML: it runs in gen's virtualenv (to read gen's render)
and is imported by nothing a peer needs at run time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)

PLACEHOLDER = "GENBENCHVAR{}X"
_PLACEHOLDER_RE = re.compile(r"GENBENCHVAR(\d+)X")
# Text a constant may not hold: template delimiters (Go and Jinja) and reclass references.
_META = ("{{", "}}", "{%", "%}", "{#", "#}", "${")


@dataclass
class Shape:
    """One object shape: its skeleton (constants and placeholders) and its variables."""

    name: str
    skeleton: Any
    kinds: list[str] = field(default_factory=list)  # per variable: str, strlist or raw


@dataclass
class Export:
    """Gen's render as shapes plus, per cluster, its objects as variable values."""

    shapes: dict[str, Shape]
    clusters: dict[str, dict[str, Any]]  # name -> {"minor": int, "objects": {shape: [...]}}

    def object_count(self) -> int:
        """How many objects the export holds."""
        return sum(len(v) for c in self.clusters.values() for v in c["objects"].values())


def read_tree(out: Path) -> dict[str, Any]:
    """Every ``*.yaml`` file under ``out``, parsed: relative path -> data."""
    return {p.relative_to(out).as_posix(): yaml.load(p.read_text(), Loader=Loader)
            for p in sorted(out.rglob("*.yaml"))}


def cluster_of(path: str) -> str:
    """The cluster a file of gen's output belongs to (``c0001/...``, ``_bootstrap/c0001/...``)."""
    parts = path.split("/")
    return parts[1] if parts[0].startswith("_") else parts[0]


def _is_strlist(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def _signature(node: Any, leaves: list[Any]) -> Any:
    """The shape of ``node`` as a hashable; its leaves appended to ``leaves`` in order."""
    if isinstance(node, dict):
        return ("d", tuple((k, _signature(v, leaves)) for k, v in node.items()))
    if isinstance(node, list) and not _is_strlist(node):
        return ("l", tuple(_signature(v, leaves) for v in node))
    leaves.append(node)
    return "."


def _same(values: list[Any]) -> bool:
    first = values[0]
    return all(type(v) is type(first) and v == first for v in values[1:])


def _needs_variable(value: Any) -> bool:
    items = value if isinstance(value, list) else [value]
    return any(isinstance(x, str) and any(m in x for m in _META) for x in items)


def _fill(sig: Any, leaves: Iterator[Any]) -> Any:
    if isinstance(sig, tuple) and sig[0] == "d":
        return {k: _fill(s, leaves) for k, s in sig[1]}
    if isinstance(sig, tuple):
        return [_fill(s, leaves) for s in sig[1]]
    return next(leaves)


def export(objects: Mapping[str, Any], minors: Mapping[str, int]) -> Export:
    """Group gen's objects (path -> data) into shapes and per-cluster variable values."""
    groups: dict[Any, list[tuple[str, list[Any]]]] = {}
    for path, data in objects.items():
        leaves: list[Any] = []
        sig = (data.get("apiVersion"), data.get("kind"), _signature(data, leaves))
        groups.setdefault(sig, []).append((path, leaves))
    shapes: dict[str, Shape] = {}
    clusters: dict[str, dict[str, Any]] = {
        c: {"minor": m, "objects": {}} for c, m in sorted(minors.items())}
    for n, (sig, members) in enumerate(sorted(groups.items(), key=lambda g: g[1][0][0])):
        kind = re.sub(r"[^a-z0-9]", "", str(sig[1]).lower()) or "object"
        shape = Shape(f"s{n:03d}_{kind}", None)
        columns = list(zip(*(leaves for _, leaves in members), strict=True))
        variable: list[int] = []
        template_leaves: list[Any] = []
        for i, column in enumerate(columns):
            values = list(column)
            if _same(values) and not _needs_variable(values[0]):
                template_leaves.append(values[0])
                continue
            if all(isinstance(v, str) for v in values):
                shape.kinds.append("str")
            elif all(_is_strlist(v) for v in values):
                shape.kinds.append("strlist")
            else:
                shape.kinds.append("raw")
            template_leaves.append(PLACEHOLDER.format(len(variable)))
            variable.append(i)
        shape.skeleton = _fill(sig[2], iter(template_leaves))
        shapes[shape.name] = shape
        for path, leaves in members:
            record: dict[str, Any] = {"path": path}
            record.update({f"v{j}": leaves[i] for j, i in enumerate(variable)})
            # An object a group of clusters shares (``_root/_fleet/...``) goes with the first.
            owner = cluster_of(path)
            owner = owner if owner in clusters else min(clusters)
            clusters[owner]["objects"].setdefault(shape.name, []).append(record)
    return Export(shapes, clusters)


def _skeleton_text(shape: Shape) -> str:
    text: str = yaml.dump(shape.skeleton, Dumper=Dumper, sort_keys=False,
                          default_flow_style=False, width=1 << 20, allow_unicode=False)
    return text


def _substitute(shape: Shape, expr: dict[str, str]) -> str:
    """The skeleton's YAML with each placeholder replaced by ``expr[kind]`` for its variable."""
    def one(m: re.Match[str]) -> str:
        i = int(m.group(1))
        return expr[shape.kinds[i]].format(f"v{i}")
    return _PLACEHOLDER_RE.sub(one, _skeleton_text(shape))


# -- Helm ------------------------------------------------------------------------------------

HELM_EXPR = {"str": "{{{{ .{} | toJson }}}}", "strlist": "{{{{ .{} | toJson }}}}",
             "raw": "{{{{ .{} }}}}"}


def helm_values(exp: Export, cluster: str) -> dict[str, Any]:
    """One cluster's Helm values. Numbers and booleans go in as their YAML text: Helm's values
    are JSON, whose numbers Go reads as float64 (1e+06 for a million)."""
    values: dict[str, Any] = {}
    for name, records in exp.clusters[cluster]["objects"].items():
        kinds = exp.shapes[name].kinds
        values[name] = [
            {k: (json.dumps(v) if k != "path" and kinds[int(k[1:])] == "raw" else v)
             for k, v in r.items()}
            for r in records]
    return values


def write_helm(exp: Export, root: Path) -> Path:
    """A chart (``root/chart``) and one values file per cluster (``root/values/<c>.json``)."""
    chart = root / "chart"
    (chart / "templates").mkdir(parents=True, exist_ok=True)
    (chart / "Chart.yaml").write_text(
        "apiVersion: v2\nname: genbench\nversion: 0.1.0\n"
        "description: gen's bench fleet as a Helm chart (bench/peers/build.py)\n")
    for name, shape in exp.shapes.items():
        body = _substitute(shape, HELM_EXPR)
        (chart / "templates" / f"{name}.yaml").write_text(
            f"{{{{- range .Values.{name} }}}}\n---\n# file: {{{{ .path }}}}\n{body}"
            "{{- end }}\n")
    values = root / "values"
    values.mkdir(exist_ok=True)
    for cluster in exp.clusters:
        (values / f"{cluster}.json").write_text(json.dumps(helm_values(exp, cluster)))
    return chart


def read_helm(out: Path) -> dict[str, Any]:
    """Helm's output (``out/<cluster>/<template>``, documents marked ``# file: PATH``)."""
    objects: dict[str, Any] = {}
    for f in sorted(out.rglob("*.yaml")):
        for doc in f.read_text().split("\n---\n"):
            m = re.search(r"^# file: (\S+)$", doc, re.MULTILINE)
            if m:
                objects[m.group(1)] = yaml.load(doc, Loader=Loader)
    return objects


# -- Jinja2 + PyYAML -------------------------------------------------------------------------

JINJA_EXPR = {"str": "{{{{ o.{} | tojson }}}}", "strlist": "{{{{ o.{} | tojson }}}}",
              "raw": "{{{{ o.{} | tojson }}}}"}


def write_jinja(exp: Export, root: Path) -> Path:
    """Templates (``root/templates``) and one data file per cluster (``root/data/<c>.json``)."""
    (root / "templates").mkdir(parents=True, exist_ok=True)
    for name, shape in exp.shapes.items():
        (root / "templates" / f"{name}.yaml.j2").write_text(_substitute(shape, JINJA_EXPR))
    (root / "data").mkdir(exist_ok=True)
    for cluster, info in exp.clusters.items():
        (root / "data" / f"{cluster}.json").write_text(json.dumps(info))
    return root


# -- Kapitan (kadet + reclass) ---------------------------------------------------------------

def _py_expr(node: Any) -> str:
    if isinstance(node, dict):
        return "{" + ", ".join(f"{k!r}: {_py_expr(v)}" for k, v in node.items()) + "}"
    if isinstance(node, list):
        return "[" + ", ".join(_py_expr(v) for v in node) + "]"
    if isinstance(node, str):
        m = _PLACEHOLDER_RE.fullmatch(node)
        if m:
            return f"o['v{m.group(1)}']"
    return repr(node)


def _reclass_escape(node: Any) -> Any:
    if isinstance(node, str):
        return node.replace("${", "\\${")
    if isinstance(node, list):
        return [_reclass_escape(v) for v in node]
    if isinstance(node, dict):
        return {k: _reclass_escape(v) for k, v in node.items()}
    return node


def write_kapitan(exp: Export, root: Path) -> Path:
    """A Kapitan project: one target per cluster, one kadet component building every shape.

    Each object goes to ``compiled/<cluster>/<gen's path>``."""
    comp = root / "components" / "gen"
    comp.mkdir(parents=True, exist_ok=True)
    lines = ['"""gen\'s bench objects, one builder per shape (bench/peers/build.py)."""',
             "import kadet", "from kapitan.inputs.kadet import inventory", ""]
    for name, shape in exp.shapes.items():
        lines += [f"def {name}(o):", f"    return {_py_expr(shape.skeleton)}", ""]
    lines += ["BUILD = {" + ", ".join(f"{n!r}: {n}" for n in exp.shapes) + "}", "",
              "def main():",
              "    objects = inventory().parameters.objects.to_dict()",
              "    output = kadet.BaseObj()",
              "    for shape, records in objects.items():",
              "        build = BUILD[shape]",
              "        for o in records:",
              "            output.root[o['path'][:-5]] = build(o)",
              "    return output", ""]
    (comp / "__init__.py").write_text("\n".join(lines))
    targets = root / "inventory" / "targets"
    targets.mkdir(parents=True, exist_ok=True)
    (root / "inventory" / "classes").mkdir(exist_ok=True)
    (root / "inventory" / "classes" / "gen.yml").write_text(json.dumps({"parameters": {
        "kapitan": {"compile": [{"output_path": ".", "input_type": "kadet",
                                 "output_type": "yaml", "input_paths": ["components/gen"]}]}}}))
    for cluster, info in exp.clusters.items():
        (targets / f"{cluster}.yml").write_text(json.dumps({
            "classes": ["gen"],
            "parameters": {"kapitan": {"vars": {"target": cluster}},
                           "objects": _reclass_escape(info["objects"])}}))
    return root


def read_kapitan(compiled: Path) -> dict[str, Any]:
    """Kapitan's output, ``compiled/<cluster>/<gen's path>``, keyed by gen's path."""
    objects = {}
    for f in sorted(compiled.rglob("*.yaml")):
        rel = f.relative_to(compiled).as_posix().split("/", 1)[1]
        objects[rel] = yaml.load(f.read_text(), Loader=Loader)
    return objects


# -- the check -------------------------------------------------------------------------------

def compare(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> dict[str, Any]:
    """Object by object: the same paths, and each object's data equal (types included: the
    canonical JSON of both, keys sorted, must be the same text)."""
    missing = sorted(set(expected) - set(actual))
    extra = sorted(set(actual) - set(expected))
    differ = [p for p in sorted(set(expected) & set(actual))
              if json.dumps(expected[p], sort_keys=True) != json.dumps(actual[p], sort_keys=True)]
    return {"objects": len(expected), "equal": len(expected) - len(missing) - len(differ),
            "missing": missing[:5], "extra": extra[:5], "differ": differ[:5],
            "ok": not (missing or extra or differ)}


def write_all(exp: Export, root: Path) -> dict[str, Path]:
    """Every peer's project under ``root`` (``helm/``, ``jinja/``, ``kapitan/``)."""
    return {"helm": write_helm(exp, root / "helm"), "jinja": write_jinja(exp, root / "jinja"),
            "kapitan": write_kapitan(exp, root / "kapitan")}
