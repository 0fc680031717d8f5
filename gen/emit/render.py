"""Render the Plan's manifests through Jinja2 templates into canonical YAML files.

One environment per run: ``StrictUndefined``, no autoescape, ``keep_trailing_newline``.
Templates only loop and branch; every scalar goes through ``tojson`` (a test scans the
templates), so no value can change the YAML structure. Each rendered text is parsed back
(once per template shape, :mod:`gen.emit.skeleton`), must hold exactly one object with
``apiVersion``, ``kind`` and ``metadata.name``, and is written out again by one canonical
YAML dumper (:mod:`gen.emit.yamlfast`): sorted keys, block style, ``\\n`` endings. For a
plain template's shape that text is compiled once and filled with each object's values
(the same bytes, :meth:`gen.emit.yamlfast.ShapeText.fill`); anything else is dumped.

A user's ``templates/`` folder overrides a built-in template of the same relative name.
"""

from __future__ import annotations

import json
import re
import traceback
from collections.abc import Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import jinja2
import yaml

from gen.caches import BoundedCache
from gen.emit import skeleton, yamlfast
from gen.errors import Finding, SourceLocation, TemplateError
from gen.fleet.generated import YAML_HEADER
from gen.fleet.plan import STAGES, ClusterPlan, FileSpec, ManifestSpec
from gen.rules import finding

__all__ = [
    "BUILTIN_TEMPLATES",
    "RenderedObject",
    "dump_yaml",
    "kustomizations",
    "make_environment",
    "manifest_kind",
    "manifest_path",
    "render_cluster",
    "render_manifest",
]

def _builtin_templates() -> Path:
    """The built-in templates: ``gen/templates`` inside an installed wheel, else the
    source tree's top-level ``templates/`` (a checkout or an editable install)."""
    package = Path(__file__).resolve().parents[1]
    packaged = package / "templates"
    return packaged if packaged.is_dir() else package.parent / "templates"


BUILTIN_TEMPLATES = _builtin_templates()


def dump_yaml(data: Any) -> str:
    """The one canonical YAML form gen writes (see :mod:`gen.emit.yamlfast`)."""
    return yamlfast.dump(data)


class _Environment(jinja2.Environment):
    """Jinja's environment, with each template's globals a plain dict.

    Jinja merges a template's globals into the context of every render; it keeps them as a
    ChainMap over the environment's, so that later changes to the environment's globals
    show. gen never changes them after :func:`make_environment`, and a dict of the same
    names is the same context, merged several times faster."""

    def make_globals(self, d: MutableMapping[str, Any] | None) -> MutableMapping[str, Any]:
        return {**self.globals, **(d or {})}


def make_environment(templates_dir: Path | None = None) -> jinja2.Environment:
    """The Jinja2 environment of a run; ``templates_dir`` overrides built-ins by name."""
    loaders: list[jinja2.BaseLoader] = []
    if templates_dir is not None and templates_dir.is_dir():
        loaders.append(jinja2.FileSystemLoader(str(templates_dir)))
    loaders.append(jinja2.FileSystemLoader(str(BUILTIN_TEMPLATES)))
    env = _Environment(
        loader=jinja2.ChoiceLoader(loaders),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
        auto_reload=False,
        cache_size=-1,
    )
    env.filters["tojson"] = tojson
    return env


_YAML_UNSAFE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")
"""Characters JSON leaves raw that YAML reads as line breaks or rejects as non-printable."""


def _escape_unsafe(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def tojson(value: Any) -> str:
    """A value as JSON, which is also a YAML flow scalar or collection of the same value.

    Keys sorted; non-ASCII kept as it is except the characters YAML would read as line
    breaks (NEL, U+2028, U+2029) or refuse (C1 controls, BOM, non-characters,
    surrogates), which are written as ``\\uXXXX`` escapes inside their strings. Floats
    always have a ``.`` (YAML 1.1 reads ``1e-05`` as a string). NaN and infinities raise
    ``ValueError``: neither JSON nor Kubernetes has them.

    Strings, integers, booleans and None (nearly every value a template writes) take a
    short path with exactly ``json.dumps``' text: the encoder's own string function, and
    ``int.__repr__`` as the encoder writes integers.
    """
    kind = type(value)
    if kind is str:
        text = _str_json.get(value)
        if text is None:
            text = _STR_JSON.put(value, _json_str(value))
        # The value is what a parse of the text gives unless YAML-unsafe characters were
        # escaped (the skeleton then decides from the text, :func:`skeleton.record`).
        exact = "\\u" not in text
    elif kind is int:
        text, exact = int.__repr__(value), True
    elif kind is bool:
        text, exact = ("true" if value else "false"), True
    elif value is None:
        text, exact = "null", True
    else:
        text, exact = _tojson_any(value), False
    placeholder = skeleton.record(text, value if exact else skeleton.FROM_TEXT)
    return text if placeholder is None else placeholder


_encode_basestring = json.encoder.encode_basestring  # json.dumps' str form, ensure_ascii off
_c_make_encoder = getattr(json.encoder, "c_make_encoder", None)  # None without CPython's _json
_STR_JSON: BoundedCache[str, str] = BoundedCache("gen.emit.render.str_json", 100_000)
"""A string → its ``tojson`` text."""
_str_json = _STR_JSON.data


def _json_str(value: str) -> str:
    return _yaml_safe(_encode_basestring(value))


def _yaml_safe(text: str) -> str:
    """JSON text with the characters YAML would fold or refuse escaped (``_YAML_UNSAFE``)."""
    return _YAML_UNSAFE.sub(_escape_unsafe, text) if _YAML_UNSAFE.search(text) else text


def _tojson_any(value: Any) -> str:
    """:func:`tojson`'s text for any other value (collections, floats, …)."""
    if _c_make_encoder is not None:
        # json.dumps' own C encoder with its arguments, built here: dumps would first build
        # a JSONEncoder in Python for every call (fresh markers: the circular-value check).
        text = "".join(_c_make_encoder(
            {}, _json_default, _encode_basestring, None, ": ", ", ", True, False, False,
        )(value, 0))
    else:
        text = json.dumps(
            value, sort_keys=True, ensure_ascii=False, allow_nan=False, default=_json_default
        )
    if _EXPONENT.search(text) and _has_float(value):
        text = _encode(value)
    return _yaml_safe(text)


_EXPONENT = re.compile(r"[0-9]e[-+]")


def _has_float(value: Any) -> bool:
    if type(value) is float:
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(_has_float(v) for v in value)
    return False


def _key_text(key: Any) -> str:
    """A mapping key as JSON writes it: always a string."""
    return key if isinstance(key, str) else json.dumps(key)


def _encode(value: Any) -> str:
    """JSON with YAML 1.1 float spelling; the rare path of :func:`tojson`."""
    if type(value) is float:
        text = json.dumps(value, allow_nan=False)
        mantissa, e, exponent = text.partition("e")
        return f"{mantissa}.0e{exponent}" if e and "." not in mantissa else text
    if isinstance(value, dict):
        items = sorted(value.items())
        return "{" + ", ".join(f"{_encode(_key_text(k))}: {_encode(v)}" for k, v in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_encode(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False, allow_nan=False, default=_json_default)


def _json_default(value: Any) -> Any:
    """``tojson`` of an undefined name raises Jinja's UndefinedError, which names it."""
    if isinstance(value, jinja2.Undefined):
        value._fail_with_undefined_error()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


@dataclass(frozen=True)
class RenderedObject:
    """One rendered Kubernetes object and where it goes."""

    path: PurePosixPath
    data: Mapping[str, Any]
    text: str
    origin: SourceLocation
    template: str
    holes: skeleton.Holes | None = None
    """Where the values of its template's shape sit in ``data`` (None: not known)."""

    @property
    def kind(self) -> str:
        """The object's kind."""
        return str(self.data["kind"])

    @property
    def api_version(self) -> str:
        """The object's apiVersion."""
        return str(self.data["apiVersion"])


def _template_location(err: BaseException, env: jinja2.Environment, name: str) -> SourceLocation:
    if isinstance(err, jinja2.TemplateSyntaxError):
        return SourceLocation(err.filename or err.name or name, err.lineno or 0)
    try:
        filename = env.get_template(name).filename
    except jinja2.TemplateError:
        filename = None
    line = 0
    for frame in traceback.extract_tb(err.__traceback__):
        if filename and frame.filename == filename:
            line = frame.lineno or 0
    return SourceLocation(filename or name, line)


def _display_template(path: str) -> str:
    builtin = str(BUILTIN_TEMPLATES)
    if path.startswith(builtin):
        return "<built-in>/templates" + path[len(builtin):]
    return path


def manifest_path(
    cluster: str, data: Mapping[str, Any], folder: str = "", stage: str = "workloads"
) -> PurePosixPath:
    """Where an object is written.

    Synced objects: ``<cluster>/<stage>/<namespace or _cluster>/<kind>-<name>.yaml``.
    Objects with a ``folder`` (bootstrap): ``<folder>/<cluster>/<namespace>/<kind>-<name>.yaml``.
    """
    meta = data["metadata"]
    namespace = meta.get("namespace") or "_cluster"
    name = f"{str(data['kind']).lower()}-{meta['name']}.yaml"
    first, second = (folder, cluster) if folder else (cluster, stage)
    if (
        type(first) is str and type(second) is str and type(namespace) is str
        and first and second and first[0] != "/" and second[0] != "/"
        and namespace[0] != "/" and name[0] != "/"
    ):
        # One parse of the joined text: the same path the joins below give, as no part is
        # empty or absolute (an absolute part would restart the path there).
        return PurePosixPath(f"{first}/{second}/{namespace}/{name}")
    return PurePosixPath(first, second) / namespace / name


def manifest_kind(path: PurePosixPath) -> str | None:
    """The lowercased kind of the object :func:`manifest_path` wrote at ``path`` (its file
    name is ``<kind>-<name>.yaml``, and a kind has no ``-``); None for any other file."""
    kind, dash, _ = path.name.partition("-")
    return kind if dash and path.suffix == ".yaml" else None


def _check_object(docs: Sequence[Any]) -> str | None:
    if len(docs) != 1:
        return f"a template must render exactly one object, got {len(docs)}"
    obj = docs[0]
    if not isinstance(obj, dict):
        return "the rendered document is not a mapping"
    for key in ("apiVersion", "kind"):
        if not isinstance(obj.get(key), str) or not obj[key]:
            return f"the rendered object has no {key}"
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not isinstance(meta.get("name"), str) or not meta["name"]:
        return "the rendered object has no metadata.name"
    return None


def render_manifest(
    env: jinja2.Environment, cluster: str, spec: ManifestSpec
) -> RenderedObject:
    """Render one manifest; raise :class:`TemplateError` at the template's file:line."""
    try:
        template = env.get_template(spec.template)
        filled = skeleton.render_filled(env, template, spec.context, yamlfast.load_all)
        docs, body, holes = (None, None, None) if filled is None else filled
        text = template.render(**spec.context) if docs is None else ""
    except jinja2.TemplateNotFound as err:
        raise TemplateError(findings=[finding(
            "GEN010", f"template {err.name!r} not found", spec.origin,
        )]) from None
    except (jinja2.TemplateError, TypeError, ValueError, AttributeError, KeyError) as err:
        where = _template_location(err, env, spec.template)
        where = SourceLocation(_display_template(where.path), where.line)
        raise TemplateError(findings=[finding(
            "GEN010", f"{type(err).__name__}: {err}", where,
            hint=f"rendering for the profile at {spec.origin}",
        )]) from None
    try:
        if docs is None:
            docs = yamlfast.load_all(text)
        docs = [d for d in docs if d is not None]
    except (yaml.YAMLError, yamlfast.DuplicateKeyError) as err:
        mark = getattr(err, "problem_mark", None)
        where = SourceLocation(
            _display_template(template.filename or spec.template),
            0,
        )
        detail = f" (rendered line {mark.line + 1})" if mark is not None else ""
        raise TemplateError(findings=[finding(
            "GEN011", f"template output is not valid YAML{detail}: {err}", where,
            hint=f"rendering for the profile at {spec.origin}",
        )]) from None
    problem = _check_object(docs)
    if problem is not None:
        raise TemplateError(findings=[finding(
            "GEN011", problem,
            SourceLocation(_display_template(template.filename or spec.template)),
            hint=f"rendering for the profile at {spec.origin}",
        )])
    data = docs[0]
    header = YAML_HEADER.format(origin=spec.origin.path)
    if spec.note:
        header += "".join(f"# {line}\n" if line else "#\n" for line in spec.note.splitlines())
    return RenderedObject(
        path=manifest_path(spec.owner or cluster, data, spec.folder, spec.stage),
        data=data,
        text=header + (dump_yaml(data) if body is None else body),
        origin=spec.origin,
        template=spec.template,
        holes=holes,
    )


def kustomizations(
    cluster: str, objects: Iterable[RenderedObject]
) -> dict[PurePosixPath, str]:
    """``kustomization.yaml`` per stage folder, and one at the top listing the stages."""
    by_stage: dict[str, list[str]] = {}
    base = PurePosixPath(cluster)
    for obj in objects:
        # The path as text (str() of a path is cached): <cluster>/<stage>/<resource>.
        head, _, rest = str(obj.path).partition("/")
        if head != cluster:
            continue
        stage, sep, resource = rest.partition("/")
        if not sep:  # not a file inside a stage folder: the path's own answer
            stage = obj.path.parts[1]
            resource = str(obj.path.relative_to(base / stage))
        by_stage.setdefault(stage, []).append(resource)
    out: dict[PurePosixPath, str] = {}
    header = YAML_HEADER.format(origin="profiles/")
    for stage, resources in by_stage.items():
        data = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": sorted(resources),
        }
        out[base / stage / "kustomization.yaml"] = header + dump_yaml(data)
    top = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [s for s in STAGES if s in by_stage],
    }
    out[base / "kustomization.yaml"] = header + dump_yaml(top)
    return out


def render_cluster(
    env: jinja2.Environment, plan: ClusterPlan
) -> tuple[list[RenderedObject], list[FileSpec]]:
    """Render every manifest of one cluster; paths must be unique."""
    objects: list[RenderedObject] = []
    seen: dict[str, RenderedObject] = {}
    errors: list[Finding] = []
    for spec in plan.manifests:
        try:
            obj = render_manifest(env, plan.name, spec)
        except TemplateError as err:
            errors.extend(err.findings)
            continue
        where = str(obj.path)
        if where in seen:
            errors.append(finding(
                "GEN012",
                f"two objects render to {where}: {obj.kind} {obj.data['metadata']['name']!r}",
                spec.origin, related=(seen[where].origin,),
                hint="object names must be unique per kind and namespace",
            ))
            continue
        seen[where] = obj
        objects.append(obj)
    if errors:
        raise TemplateError(f"rendering cluster {plan.name!r} failed", findings=errors)
    objects.sort(key=lambda o: str(o.path))
    return objects, list(plan.files)
