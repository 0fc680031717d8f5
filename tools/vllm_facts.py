"""Read vLLM's per-release facts out of its release wheels into ``gen/data/vllm-releases.yaml``.

For every vLLM release from :data:`FIRST` to :data:`LAST` (patches included, as
``pip index versions vllm`` lists them) the tool downloads the x86-64 Linux wheel
(``pip download --no-deps``), unpacks its sources (everything but compiled libraries) into
``<cache>/<version>/`` and reads, with :mod:`ast` (no vLLM import, no regular expressions over
code):

* the ``vllm serve`` options: every option string registered from
  ``ServeSubcommand.subparser_init`` (``vllm/entrypoints/cli/serve.py``) down through
  ``make_arg_parser``, the frontend argument dataclasses and ``AsyncEngineArgs.add_cli_args``,
  with the forms vLLM's parser adds itself: ``--no-x`` for every boolean option
  (``argparse.BooleanOptionalAction``: a config field whose type has ``bool`` and is not
  ``bool | str | None``), and from the release whose ``FlexibleArgumentParser`` registers
  ``EnableDisableAction``, ``--disable-x`` for ``--enable-x`` and back;
* the ``--quantization``, ``--kv-cache-dtype`` and ``--dtype`` values (the ``Literal`` types of
  ``ModelConfig.quantization``, ``CacheConfig.cache_dtype`` and ``ModelConfig.dtype``);
* defaults: ``CacheConfig.gpu_memory_utilization`` and ``DEFAULT_BLOCK_SIZE``, and the
  ``vllm/envs.py`` defaults of :data:`ENV_VARS`;
* ``EngineArgs.get_batch_defaults`` as tiers (memory floor, device-name and
  compute-capability exclusions, per usage context) and the default CUDA-graph capture
  limit of ``VllmConfig._set_cudagraph_sizes``, each with the SHA-256 of the function's
  source: when upstream edits either function, ``--check`` says so and a human re-reads it
  (the tool refuses a shape it does not know rather than guessing).

A release's date is the PyPI upload time (UTC) of the first file of that release, from the
simple index (PEP 691 JSON, ``upload-time`` of PEP 700).

The data file keeps the first release in full and, for each later release, what changed:
``added``/``removed`` for sets, the changed keys for mappings, the whole value for the batch
and CUDA-graph rules (``gen.serving.vllm_releases`` expands it).

Usage (a maintainer's command; gen itself never downloads anything)::

    python tools/vllm_facts.py --cache ~/.cache/gen-vllm-src          # rewrite the data file
    python tools/vllm_facts.py --check                                 # exit 1 when it differs

The cache is shared safely: a release is unpacked into a temporary sibling, renamed into
place, and ``<cache>/<version>/.complete`` is written last; a directory with that marker is
used as it is. To move gen to a new vLLM: raise :data:`LAST`, run the tool, review the diff of
the data file (docs/vllm-versions.md).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.request
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "gen" / "data" / "vllm-releases.yaml"
DEFAULT_CACHE = Path("~/.cache/gen-vllm-src").expanduser()
COMPLETE = ".complete"
FIRST, LAST = "0.21.0", "0.33.0"
"""The releases gen knows: every stable release from FIRST to LAST, patches included."""
REPOSITORY = "vllm-project/vllm"
ENV_VARS = ("VLLM_USE_FLASHINFER_SAMPLER", "VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS",
            "VLLM_MAIN_CUDA_VERSION", "VLLM_USE_V2_MODEL_RUNNER", "VLLM_ENGINE_READY_TIMEOUT_S")
CHOICES = {"quantizations": ("vllm/config/model.py", "ModelConfig", "quantization"),
           "kv_cache_dtypes": ("vllm/config/cache.py", "CacheConfig", "cache_dtype"),
           "dtypes": ("vllm/config/model.py", "ModelConfig", "dtype")}
"""Value sets read from a config field's ``Literal`` type: (module, class, field)."""
MIN_SERVE_OPTIONS = 100
"""Fewer options than this means the reading went wrong (0.21.0 has 334)."""
_SHARED_LIBRARY = re.compile(r"\.so(\.\d+)*$")
_BUILTIN_TYPES = {"bool", "str", "int", "float", "dict", "list", "tuple", "set", "bytes"}
_TRANSPARENT = {"Optional", "Union", "Annotated", "SkipValidation", "ClassVar", "Final"}


class FactError(Exception):
    """The sources have a shape this tool does not know: a human must read and re-encode them."""


# ---------------------------------------------------------------- download and unpack


def _is_binary_member(name: str, head: bytes) -> bool:
    """A compiled library or executable in the wheel (not read, not unpacked)."""
    return head.startswith(b"\x7fELF") or _SHARED_LIBRARY.search(name) is not None


def unpack_wheel(wheel: Path, target: Path) -> None:
    """Unpack a wheel's sources (everything but compiled libraries) into ``target`` atomically.

    The files go to a temporary sibling first, which is renamed to ``target``; ``.complete``
    is created last, so a reader that sees it sees the whole tree.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            if member.is_dir():
                continue
            with archive.open(member) as handle:
                head = handle.read(4)
                if _is_binary_member(member.filename, head):
                    continue
                path = staging / member.filename
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("wb") as out:
                    out.write(head)
                    shutil.copyfileobj(handle, out)
    staging.chmod(0o755)
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
    (target / COMPLETE).write_text(wheel.name + "\n", encoding="utf-8")


def download_wheel(version: str, into: Path) -> Path:
    """``pip download`` the x86-64 Linux wheel of one vLLM release; its path."""
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                    "--only-binary=:all:", "--platform", "manylinux_2_28_x86_64",
                    "--platform", "manylinux_2_24_x86_64",
                    "--python-version", "3.12", "--implementation", "cp",
                    f"vllm=={version}", "-d", str(into)], check=True)
    wheels = sorted(into.glob(f"vllm-{version}-*.whl"))
    if len(wheels) != 1:
        raise FactError(f"vllm {version}: expected one wheel in {into}, found {len(wheels)}")
    return wheels[0]


def source_tree(version: str, cache: Path) -> Path:
    """The unpacked sources of one release, downloading and unpacking them when missing."""
    target = cache / version
    if (target / COMPLETE).is_file():
        return target
    with tempfile.TemporaryDirectory(prefix="vllm-wheel-") as folder:
        unpack_wheel(download_wheel(version, Path(folder)), target)
    return target


def released_versions() -> list[str]:
    """The stable releases FIRST..LAST that ``pip index versions vllm`` lists, oldest first."""
    listing = subprocess.run([sys.executable, "-m", "pip", "index", "versions", "vllm"],
                             check=True, capture_output=True, text=True).stdout
    match = re.search(r"Available versions: (.*)", listing)
    if match is None:
        raise FactError("pip index versions vllm: no 'Available versions' line")
    versions = [Version(v.strip()) for v in match.group(1).split(",")]
    chosen = [v for v in versions
              if Version(FIRST) <= v <= Version(LAST) and not v.is_prerelease]
    return [str(v) for v in sorted(chosen)]


def upload_dates() -> dict[str, str]:
    """Each release's date: the UTC day of the first upload of any of its files (PyPI)."""
    request = urllib.request.Request("https://pypi.org/simple/vllm/", headers={
        "Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=120) as response:
        index = json.load(response)
    first: dict[str, str] = {}
    for entry in index["files"]:
        match = re.match(r"vllm-([0-9][^-]*?)(?:\.tar\.gz|-)", entry["filename"])
        if match and entry.get("upload-time"):
            version = match.group(1)
            first[version] = min(first.get(version, entry["upload-time"]), entry["upload-time"])
    return {version: stamp[:10] for version, stamp in first.items()}


# ---------------------------------------------------------------- the source tree, statically


@dataclass
class _Module:
    path: str
    tree: ast.Module
    text: str
    names: dict[str, ast.AST] = field(default_factory=dict)
    imports: dict[str, tuple[str, str | None]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Class:
    module: _Module
    node: ast.ClassDef


class _Sources:
    """The ``vllm`` package of one release, parsed lazily, with name resolution."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._modules: dict[str, _Module | None] = {}
        self.read: set[str] = set()

    def module(self, dotted: str) -> _Module | None:
        if dotted not in self._modules:
            self._modules[dotted] = self._parse(dotted)
        return self._modules[dotted]

    def _parse(self, dotted: str) -> _Module | None:
        base = self.root.joinpath(*dotted.split("."))
        path = base.with_suffix(".py") if base.with_suffix(".py").is_file() \
            else base / "__init__.py"
        if not path.is_file():
            return None
        text = path.read_text(encoding="utf-8")
        module = _Module(path.relative_to(self.root).as_posix(), ast.parse(text), text)
        package = dotted if path.name == "__init__.py" else dotted.rpartition(".")[0]
        for node in _top_level(module.tree.body):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
                module.names[node.name] = node
            elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                module.names[node.targets[0].id] = node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                    and node.value is not None:
                module.names[node.target.id] = node.value
            elif isinstance(node, ast.ImportFrom):
                source = _absolute(package, node.module or "", node.level)
                for alias in node.names:
                    module.imports[alias.asname or alias.name] = (source, alias.name)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    module.imports[alias.asname or alias.name.partition(".")[0]] = \
                        (alias.name if alias.asname else alias.name.partition(".")[0], None)
        return module

    def path(self, module: _Module) -> str:
        self.read.add(module.path)
        return module.path

    def lookup(self, module: _Module, name: str) -> tuple[_Module, ast.AST] | None:
        """The definition a name in ``module`` refers to (following ``from x import``)."""
        if name in module.names:
            return module, module.names[name]
        if name in module.imports:
            source, attr = module.imports[name]
            if attr is None:
                return None
            target = self.module(source)
            if target is not None:
                found = self.lookup(target, attr)
                if found is not None:
                    return found
            submodule = self.module(f"{source}.{attr}")
            if submodule is not None:
                return submodule, submodule.tree
        return None

    def klass(self, module: _Module, expr: ast.expr) -> _Class | None:
        found = self._resolve(module, expr)
        if found is not None and isinstance(found[1], ast.ClassDef):
            return _Class(found[0], found[1])
        return None

    def _resolve(self, module: _Module, expr: ast.expr) -> tuple[_Module, ast.AST] | None:
        if isinstance(expr, ast.Name):
            return self.lookup(module, expr.id)
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            owner = module.imports.get(expr.value.id)
            target = self.module(owner[0] if owner[1] is None else f"{owner[0]}.{owner[1]}") \
                if owner else None
            return self.lookup(target, expr.attr) if target is not None else None
        return None

    def bases(self, klass: _Class) -> Iterator[_Class]:
        """The class and its bases found in the sources, depth first."""
        yield klass
        for base in klass.node.bases:
            parent = self.klass(klass.module, base)
            if parent is not None:
                yield from self.bases(parent)

    def fields(self, klass: _Class) -> dict[str, tuple[_Module, ast.AnnAssign]]:
        """Dataclass fields (annotated class attributes, not ClassVar), bases first."""
        result: dict[str, tuple[_Module, ast.AnnAssign]] = {}
        for owner in reversed(list(self.bases(klass))):
            self.path(owner.module)
            for node in owner.node.body:
                if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                        and "ClassVar" not in ast.unparse(node.annotation):
                    result[node.target.id] = (owner.module, node)
        return result

    def method(self, klass: _Class, name: str) -> tuple[_Class, ast.FunctionDef] | None:
        for owner in self.bases(klass):
            for node in owner.node.body:
                if isinstance(node, ast.FunctionDef) and node.name == name:
                    return owner, node
        return None

    def type_atoms(self, module: _Module, expr: ast.expr | None, depth: int = 0) -> set[Any]:
        """The alternatives of a type annotation: builtin names, ``None``, ``literal``,
        ``other`` (a class or anything else)."""
        if expr is None or depth > 12:
            return {"other"}
        if isinstance(expr, ast.Constant):
            if expr.value is None:
                return {"None"}
            if isinstance(expr.value, str):
                return self.type_atoms(module, ast.parse(expr.value, mode="eval").body, depth + 1)
            return {"other"}
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.BitOr):
            return self.type_atoms(module, expr.left, depth + 1) | \
                self.type_atoms(module, expr.right, depth + 1)
        if isinstance(expr, ast.Subscript):
            head = _last_name(expr.value)
            items = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]
            if head == "Literal":
                return {"literal"}
            if head in {"Optional"}:
                return self.type_atoms(module, items[0], depth + 1) | {"None"}
            if head == "Union":
                return set().union(*(self.type_atoms(module, i, depth + 1) for i in items))
            if head in _TRANSPARENT:
                return self.type_atoms(module, items[0], depth + 1)
            return {head.lower() if head.lower() in _BUILTIN_TYPES else "other"}
        if isinstance(expr, ast.Name) and expr.id in _BUILTIN_TYPES:
            return {expr.id}
        found = self._resolve(module, expr)
        if found is not None and isinstance(found[1], ast.expr):
            return self.type_atoms(found[0], found[1], depth + 1)
        return {"other"}

    def literal_values(self, module: _Module, expr: ast.expr) -> tuple[list[str], str]:
        """The values of the ``Literal`` in an annotation and the module that spells them."""
        if isinstance(expr, ast.BinOp):
            for side in (expr.left, expr.right):
                try:
                    return self.literal_values(module, side)
                except FactError:
                    continue
        if isinstance(expr, ast.Subscript) and _last_name(expr.value) == "Literal":
            items = expr.slice.elts if isinstance(expr.slice, ast.Tuple) else [expr.slice]
            values = [str(i.value) for i in items if isinstance(i, ast.Constant)]
            for item in items:
                if not isinstance(item, ast.Constant):  # Literal[OtherLiteral, "x"]
                    values += self.literal_values(module, item)[0]
            return sorted(values), self.path(module)
        found = self._resolve(module, expr)
        if found is not None and isinstance(found[1], ast.expr):
            return self.literal_values(found[0], found[1])
        raise FactError(f"{module.path}: no Literal in {ast.unparse(expr)}")


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Module statements, looking into ``if``/``try`` blocks; of ``if TYPE_CHECKING:`` only
    the typed side (its ``else`` rebinds the names to runtime stand-ins such as ``Any``)."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _top_level(node.body)
            if _last_name(node.test) != "TYPE_CHECKING":
                yield from _top_level(node.orelse)
        elif isinstance(node, ast.Try):
            yield from _top_level(node.body)
        else:
            yield node


def _absolute(package: str, name: str, level: int) -> str:
    if level == 0:
        return name
    parts = package.split(".")
    base = ".".join(parts[: len(parts) - (level - 1)])
    return f"{base}.{name}" if name else base


def _last_name(expr: ast.expr) -> str:
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return expr.id if isinstance(expr, ast.Name) else ""


def _literal(expr: ast.expr) -> Any:
    try:
        return ast.literal_eval(expr)
    except ValueError as error:
        raise FactError(f"not a literal: {ast.unparse(expr)}") from error


# ---------------------------------------------------------------- `vllm serve` options


@dataclass
class _Kwargs:
    """``get_kwargs(SomeConfig)``: argparse kwargs per field, with the edits made to them."""

    klass: _Class
    edits: dict[str, dict[str, ast.expr]] = field(default_factory=dict)


@dataclass(frozen=True)
class _FieldKwargs:
    """``kwargs["field"]`` (or ``{**kwargs["field"], …}``): one field's argparse kwargs."""

    kwargs: _Kwargs
    name: str
    extra: tuple[tuple[str, ast.expr], ...] = ()


_PARSER = object()
"""The binding of a parser or argument group."""


class _ServeOptions:
    """Interprets the functions that build the ``vllm serve`` parser, collecting option strings.

    Only what registers options is followed: calls that pass a parser, an argument group or a
    ``get_kwargs`` result, ``add_argument`` calls, and loops over a ``get_kwargs`` result.
    """

    def __init__(self, sources: _Sources, inverse_prefixes: dict[str, str]) -> None:
        self.sources = sources
        self.inverse_prefixes = inverse_prefixes
        self.flags: set[str] = set()
        self._active: set[tuple[str, str, str]] = set()

    def run(self, module: _Module, function: ast.FunctionDef, env: dict[str, Any],
            owner: _Class | None = None, cls: _Class | None = None) -> None:
        key = (module.path, function.name, cls.node.name if cls else "")
        if key in self._active:
            return
        self._active.add(key)
        self.sources.path(module)
        self._block(module, function.body, env, owner, cls)
        self._active.discard(key)

    def _block(self, module: _Module, body: list[ast.stmt], env: dict[str, Any],
               owner: _Class | None, cls: _Class | None) -> None:
        for statement in body:
            if isinstance(statement, ast.For) and self._fields_loop(
                    module, statement, env, owner, cls):
                continue
            if isinstance(statement, ast.Assign):
                self._assign(module, statement, env, owner, cls)
            else:
                self._calls(module, statement, env, owner, cls)
            for name in ("body", "orelse", "finalbody"):
                nested = getattr(statement, name, None)
                if isinstance(nested, list) and nested and isinstance(nested[0], ast.stmt):
                    self._block(module, nested, env, owner, cls)
            for handler in getattr(statement, "handlers", []):
                self._block(module, handler.body, env, owner, cls)

    def _fields_loop(self, module: _Module, loop: ast.For, env: dict[str, Any],
                     owner: _Class | None, cls: _Class | None) -> bool:
        """``for key, value in kwargs.items():`` runs the body once per field."""
        call = loop.iter
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "items" and isinstance(call.func.value, ast.Name)
                and isinstance(env.get(call.func.value.id), _Kwargs)
                and isinstance(loop.target, ast.Tuple) and len(loop.target.elts) == 2):
            return False
        kwargs: _Kwargs = env[call.func.value.id]
        key, value = (t.id if isinstance(t, ast.Name) else "" for t in loop.target.elts)
        for name in self.sources.fields(kwargs.klass):
            inner = dict(env, **{key: name, value: _FieldKwargs(kwargs, name)})
            self._block(module, loop.body, inner, owner, cls)
        return True

    def _assign(self, module: _Module, statement: ast.Assign, env: dict[str, Any],
                owner: _Class | None, cls: _Class | None) -> None:
        target, value = statement.targets[0], statement.value
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Subscript) \
                and isinstance(target.value.value, ast.Name) \
                and isinstance(env.get(target.value.value.id), _Kwargs):
            edits = env[target.value.value.id].edits
            edits.setdefault(str(_literal(target.value.slice)), {})[
                str(_literal(target.slice))] = value
            return
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name) \
                and isinstance(env.get(target.value.id), _FieldKwargs):
            spread: _FieldKwargs = env[target.value.id]
            spread.kwargs.edits.setdefault(spread.name, {})[str(_literal(target.slice))] = value
            return
        bound = self._bind(module, value, env, cls)
        self._calls(module, statement, env, owner, cls)
        if isinstance(target, ast.Name) and bound is not None:
            env[target.id] = bound

    def _bind(self, module: _Module, value: ast.expr, env: dict[str, Any],
              cls: _Class | None) -> Any:
        """What an assigned value stands for, when it matters for options."""
        if isinstance(value, ast.Call) and _last_name(value.func) == "get_kwargs" \
                and value.args:
            arg = value.args[0]
            klass = cls if isinstance(arg, ast.Name) and arg.id == "cls" \
                else self.sources.klass(module, arg)
            return _Kwargs(klass) if klass is not None else None
        if isinstance(value, ast.Call) and _last_name(value.func) == "add_argument_group":
            return _PARSER
        if isinstance(value, ast.Call) and _last_name(value.func) == "add_parser":
            return _PARSER
        if isinstance(value, ast.Call) and _last_name(value.func) == "pop" \
                and isinstance(value.func, ast.Attribute) \
                and isinstance(value.func.value, ast.Name) \
                and isinstance(env.get(value.func.value.id), _FieldKwargs) and value.args \
                and _literal(value.args[0]) == "flags":
            field_kwargs: _FieldKwargs = env[value.func.value.id]
            edit = field_kwargs.kwargs.edits.get(field_kwargs.name, {}).get("flags")
            return [str(f) for f in _literal(edit)] if edit is not None else []
        found = self._field_kwargs(module, value, env, cls)
        if found is not None:
            return found
        if isinstance(value, ast.Call):
            for arg in value.args:
                if isinstance(arg, ast.Name) and (
                        isinstance(env.get(arg.id), _Kwargs) or env.get(arg.id) is _PARSER):
                    return env[arg.id]
        return None

    def _field_kwargs(self, module: _Module, value: ast.expr, env: dict[str, Any],
                      cls: _Class | None) -> _FieldKwargs | None:
        if isinstance(value, ast.Name) and isinstance(env.get(value.id), _FieldKwargs):
            found: _FieldKwargs = env[value.id]
            return found
        if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name) \
                and isinstance(env.get(value.value.id), _Kwargs):
            return _FieldKwargs(env[value.value.id], str(_literal(value.slice)))
        if isinstance(value, ast.Subscript) and isinstance(value.value, ast.Call):
            kwargs = self._bind(module, value.value, env, cls)  # get_kwargs(C)["field"]
            if isinstance(kwargs, _Kwargs):
                return _FieldKwargs(kwargs, str(_literal(value.slice)))
        if isinstance(value, ast.Dict):
            base: _FieldKwargs | None = None
            extra: list[tuple[str, ast.expr]] = []
            for key, item in zip(value.keys, value.values, strict=True):
                if key is None:
                    base = self._field_kwargs(module, item, env, cls) or base
                elif isinstance(key, ast.Constant):
                    extra.append((str(key.value), item))
            if base is not None:
                return _FieldKwargs(base.kwargs, base.name, base.extra + tuple(extra))
        return None

    def _calls(self, module: _Module, statement: ast.stmt, env: dict[str, Any],
               owner: _Class | None, cls: _Class | None) -> None:
        for node in ast.walk(statement):
            if not isinstance(node, ast.Call):
                continue
            if _last_name(node.func) == "add_argument":
                self._add_argument(module, node, env, cls)
                continue
            passes = [a for a in node.args if isinstance(a, ast.Name)
                      and (env.get(a.id) is _PARSER or isinstance(env.get(a.id), _Kwargs))]
            if passes:
                self._follow(module, node, env, owner, cls)

    def _follow(self, module: _Module, call: ast.Call, env: dict[str, Any],
                owner: _Class | None, cls: _Class | None) -> None:
        """Interpret the vLLM function or method a parser-passing call reaches."""
        func = call.func
        target: tuple[_Module, ast.FunctionDef, _Class | None, _Class | None] | None = None
        start: _Class | None
        bound: _Class | None
        if isinstance(func, ast.Name):
            found = self.sources.lookup(module, func.id)
            if found is not None and isinstance(found[1], ast.FunctionDef):
                target = (found[0], found[1], None, None)
        elif isinstance(func, ast.Attribute):
            holder = func.value
            if isinstance(holder, ast.Name) and holder.id == "cls" and cls is not None:
                start, bound = cls, cls
            elif isinstance(holder, ast.Call) and _last_name(holder.func) == "super" \
                    and owner is not None:
                parents = list(self.sources.bases(owner))[1:]
                start, bound = (parents[0] if parents else None), cls
            else:
                start = self.sources.klass(module, holder) if isinstance(
                    holder, (ast.Name, ast.Attribute)) else None
                bound = start
            method = self.sources.method(start, func.attr) if start is not None else None
            if method is not None:
                target = (method[0].module, method[1], method[0], bound)
        if target is None:
            return
        callee_module, function, callee_owner, callee_cls = target
        params = [a.arg for a in function.args.args]
        if params and params[0] in {"self", "cls"}:
            params = params[1:]
        inner: dict[str, Any] = {}
        for param, arg in zip(params, call.args, strict=False):
            if isinstance(arg, ast.Name) and arg.id in env:
                inner[param] = env[arg.id]
        self.run(callee_module, function, inner, callee_owner, callee_cls)

    def _add_argument(self, module: _Module, call: ast.Call, env: dict[str, Any],
                      cls: _Class | None) -> None:
        strings: list[str] = []
        for arg in call.args:
            if isinstance(arg, ast.Starred) and isinstance(arg.value, ast.Name):
                strings.extend(env.get(arg.value.id) or [])
            else:
                text = _string(arg, env)
                if text is None:
                    raise FactError(f"{module.path}:{call.lineno}: option name "
                                    f"{ast.unparse(arg)} is not a string the tool can read")
                strings.append(text)
        options = [s for s in strings if s.startswith("-")]
        if not options:
            return
        keywords: dict[str, ast.expr] = {}
        boolean: bool | None = None
        for keyword in call.keywords:
            if keyword.arg is not None:
                keywords[keyword.arg] = keyword.value
                continue
            spread = self._field_kwargs(module, keyword.value, env, cls)
            if spread is None:
                raise FactError(f"{module.path}:{call.lineno}: **{ast.unparse(keyword.value)} "
                                "is not a get_kwargs() entry the tool can read")
            edits = spread.kwargs.edits.get(spread.name, {})
            keywords = {**edits, **dict(spread.extra), **keywords}
            if "action" not in keywords:
                boolean = self._boolean_field(spread)
        if "action" in keywords:
            boolean = _last_name(keywords["action"]) == "BooleanOptionalAction"
        forms = set(options)
        if boolean:
            forms |= {"--no-" + o[2:] for o in options if o.startswith("--")}
            forms |= {inverse + o.removeprefix(prefix) for o in options
                      for prefix, inverse in self.inverse_prefixes.items()
                      if o.startswith(prefix)}
        self.flags |= forms

    def _boolean_field(self, spread: _FieldKwargs) -> bool:
        """vLLM's ``_compute_kwargs``: ``bool`` in the type, and not ``bool | str | None``."""
        fields = self.sources.fields(spread.kwargs.klass)
        if spread.name not in fields:
            raise FactError(f"{spread.kwargs.klass.node.name} has no field {spread.name}")
        module, node = fields[spread.name]
        atoms = self.sources.type_atoms(module, node.annotation)
        return "bool" in atoms and atoms != {"bool", "str", "None"}


def _string(expr: ast.expr, env: dict[str, Any]) -> str | None:
    """A string-valued expression: a literal, an f-string, a bound name, ``.replace``."""
    if isinstance(expr, ast.Constant) and isinstance(expr.value, str):
        return expr.value
    if isinstance(expr, ast.Name) and isinstance(env.get(expr.id), str):
        text: str = env[expr.id]
        return text
    if isinstance(expr, ast.JoinedStr):
        parts = [_string(v.value if isinstance(v, ast.FormattedValue) else v, env)
                 for v in expr.values]
        return None if None in parts else "".join(p or "" for p in parts)
    if isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) \
            and expr.func.attr == "replace" and len(expr.args) == 2:
        base = _string(expr.func.value, env)
        old, new = (_string(a, env) for a in expr.args)
        return None if base is None or old is None or new is None else base.replace(old, new)
    return None


def _inverse_prefixes(sources: _Sources) -> dict[str, str]:
    """``--enable-``/``--disable-`` pairs, when FlexibleArgumentParser swaps in an action that
    adds them for every BooleanOptionalAction (vllm/utils/argparse_utils.py)."""
    module = sources.module("vllm.utils.argparse_utils")
    parser = module.names.get("FlexibleArgumentParser") if module else None
    if module is None or not isinstance(parser, ast.ClassDef):
        raise FactError("vllm/utils/argparse_utils.py: no FlexibleArgumentParser")
    for node in ast.walk(parser):
        if isinstance(node, ast.Call) and _last_name(node.func) == "register" \
                and len(node.args) == 3 and _last_name(node.args[1]) == "BooleanOptionalAction":
            action = sources.klass(module, node.args[2])
            for item in action.node.body if action else []:
                if isinstance(item, ast.Assign) and _last_name(item.targets[0]) \
                        == "_inverse_prefixes":
                    prefixes: dict[str, str] = _literal(item.value)
                    sources.path(module)
                    return prefixes
            raise FactError(f"{module.path}: {ast.unparse(node.args[2])} replaces "
                            "BooleanOptionalAction without _inverse_prefixes: re-read it")
    return {}


def serve_options(sources: _Sources) -> set[str]:
    """Every option string ``vllm serve`` accepts."""
    module = sources.module("vllm.entrypoints.cli.serve")
    command = module.names.get("ServeSubcommand") if module else None
    if module is None or not isinstance(command, ast.ClassDef):
        raise FactError("vllm/entrypoints/cli/serve.py: no ServeSubcommand")
    interpreter = _ServeOptions(sources, _inverse_prefixes(sources))
    found = sources.method(_Class(module, command), "subparser_init")
    if found is None:
        raise FactError("ServeSubcommand has no subparser_init")
    interpreter.run(module, found[1], {}, found[0], found[0])
    if len(interpreter.flags) < MIN_SERVE_OPTIONS:
        raise FactError(f"only {len(interpreter.flags)} serve options found: re-read")
    return interpreter.flags


# ---------------------------------------------------------------- values and defaults


def _config_class(sources: _Sources, path: str, name: str) -> _Class:
    module = sources.module(path.removesuffix(".py").replace("/", "."))
    node = module.names.get(name) if module else None
    if module is None or not isinstance(node, ast.ClassDef):
        raise FactError(f"{path}: no class {name}")
    return _Class(module, node)


def choices(sources: _Sources) -> dict[str, tuple[list[str], str]]:
    """Each :data:`CHOICES` value set and the module whose ``Literal`` spells it."""
    found: dict[str, tuple[list[str], str]] = {}
    for group, (path, class_name, field_name) in CHOICES.items():
        fields = sources.fields(_config_class(sources, path, class_name))
        module, node = fields[field_name]
        found[group] = sources.literal_values(module, node.annotation)
    return found


def _field_default(node: ast.AnnAssign) -> Any:
    value = node.value
    if isinstance(value, ast.Call) and _last_name(value.func) == "Field":
        value = next((k.value for k in value.keywords if k.arg == "default"), None)
    if value is None:
        raise FactError(f"line {node.lineno}: no default")
    return _literal(value)


def cache_defaults(sources: _Sources) -> tuple[dict[str, Any], str]:
    """``gpu_memory_utilization`` and the block size vLLM starts from (CacheConfig)."""
    klass = _config_class(sources, "vllm/config/cache.py", "CacheConfig")
    values: dict[str, Any] = {}
    for node in klass.node.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.target.id == "gpu_memory_utilization":
                values["gpu_memory_utilization"] = _field_default(node)
            elif node.target.id == "DEFAULT_BLOCK_SIZE":
                values["block_size"] = _field_default(node)
    if len(values) != 2:
        raise FactError(f"{klass.module.path}: CacheConfig defaults not found: {values}")
    return values, sources.path(klass.module)


def env_defaults(sources: _Sources) -> tuple[dict[str, Any], str]:
    """The :data:`ENV_VARS` defaults of ``vllm/envs.py``, read twice: the declared default
    (``if TYPE_CHECKING:`` block) must agree with the fallback inside its getter lambda."""
    module = sources.module("vllm.envs")
    if module is None:
        raise FactError("vllm/envs.py missing")
    getters: dict[str, ast.expr] = {}
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value in ENV_VARS:
                    getters[str(key.value)] = value
    values: dict[str, Any] = {}
    for name in ENV_VARS:
        declared = module.names.get(name)
        if not isinstance(declared, ast.expr) or name not in getters:
            raise FactError(f"{module.path}: {name} is not declared with a getter")
        value = _literal(declared)
        raw = _getter_fallback(name, getters[name])
        if isinstance(value, bool) and isinstance(raw, str):
            raw = bool(int(raw))
        elif isinstance(value, int) and isinstance(raw, str):
            raw = int(raw)
        if raw != value:
            raise FactError(f"{module.path}: {name} is declared {value!r} but its getter "
                            f"falls back to {raw!r}: re-read it")
        values[name] = value
    return values, sources.path(module)


def _getter_fallback(name: str, getter: ast.expr) -> Any:
    """The value an env getter returns when the variable is unset."""
    body = getter.body if isinstance(getter, ast.Lambda) else getter
    if isinstance(body, ast.BoolOp) and isinstance(body.op, ast.Or) \
            and isinstance(body.values[-1], ast.Constant):
        return body.values[-1].value
    if isinstance(body, ast.IfExp) and isinstance(body.test, ast.Compare) \
            and isinstance(body.test.ops[0], ast.In) and _literal(body.test.left) == name:
        return _literal(body.orelse)
    for node in ast.walk(body):
        if isinstance(node, ast.Call) and _last_name(node.func) in {"getenv", "get"} \
                and len(node.args) == 2 and isinstance(node.args[0], ast.Constant) \
                and node.args[0].value == name:
            return _literal(node.args[1])
    raise FactError(f"vllm/envs.py: cannot read the fallback of {name}")


def _source_sha(module: _Module, node: ast.AST) -> str:
    segment = ast.get_source_segment(module.text, node)
    if segment is None:
        raise FactError(f"{module.path}: no source for line {getattr(node, 'lineno', '?')}")
    return hashlib.sha256(segment.encode("utf-8")).hexdigest()


def _function(sources: _Sources, path: str, class_name: str,
              name: str) -> tuple[_Module, ast.FunctionDef]:
    klass = _config_class(sources, path, class_name)
    found = sources.method(klass, name)
    if found is None:
        raise FactError(f"{path}: {class_name}.{name} missing")
    return found[0].module, found[1]


_CONTEXTS = {"OPENAI_API_SERVER": "api_server", "LLM_CLASS": "offline"}


def batch_defaults(sources: _Sources) -> tuple[dict[str, Any], str]:
    """``EngineArgs.get_batch_defaults`` as GPU tiers, first match wins (TPU/CPU left out)."""
    module, function = _function(sources, "vllm/engine/arg_utils.py", "EngineArgs",
                                 "get_batch_defaults")
    probes: dict[str, list[int]] = {}
    chain: ast.If | None = None
    for node in function.body:
        if isinstance(node, ast.Try):
            for probe in node.body:
                if isinstance(probe, ast.Assign) and isinstance(probe.value, ast.Call) \
                        and _last_name(probe.value.func) == "is_device_capability":
                    probes[_last_name(probe.targets[0])] = list(_literal(probe.value.args[0]))
        if isinstance(node, ast.If) and "device_memory" in ast.unparse(node.test):
            chain = node
    if chain is None:
        raise FactError(f"{module.path}: get_batch_defaults has no device-memory tiers")
    tiers: list[dict[str, Any]] = []
    branch: list[ast.stmt] | None = [chain]
    while branch:
        test: ast.expr | None = None
        if len(branch) == 1 and isinstance(branch[0], ast.If):
            test, body, branch = branch[0].test, branch[0].body, branch[0].orelse
        else:
            body, branch = branch, None
        tier = _tier_conditions(test, probes, module)
        for statement in body:
            if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Dict):
                target = _last_name(statement.targets[0]).removeprefix("default_")
                for key, value in zip(statement.value.keys, statement.value.values,
                                      strict=True):
                    context = _CONTEXTS[_last_name(key)] if key is not None else ""
                    tier.setdefault(context, {})[target] = _literal(value)
        if not {"api_server", "offline"} <= tier.keys():
            raise FactError(f"{module.path}: a batch tier without both usage contexts")
        tiers.append(tier)
    return {"sha256": _source_sha(module, function), "tiers": tiers}, sources.path(module)


def _tier_conditions(test: ast.expr | None, probes: dict[str, list[int]],
                     module: _Module) -> dict[str, Any]:
    tier: dict[str, Any] = {}
    terms = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) \
        else [test] if test is not None else []
    for term in terms:
        text = ast.unparse(term)
        if isinstance(term, ast.Compare) and _last_name(term.left) == "device_memory" \
                and isinstance(term.ops[0], ast.GtE) \
                and isinstance(term.comparators[0], ast.BinOp) \
                and _last_name(term.comparators[0].right) == "GiB_bytes":
            tier["min_memory_gib"] = _literal(term.comparators[0].left)
        elif isinstance(term, ast.Compare) and isinstance(term.ops[0], ast.NotIn) \
                and _last_name(term.comparators[0]) == "device_name":
            tier.setdefault("name_excludes", []).append(_literal(term.left))
        elif isinstance(term, ast.UnaryOp) and isinstance(term.op, ast.Not) \
                and _last_name(term.operand) in probes:
            tier.setdefault("capability_excludes", []).append(probes[_last_name(term.operand)])
        else:
            raise FactError(f"{module.path}: batch tier condition {text!r} is new: re-encode")
    return tier


def cuda_graph_capture(sources: _Sources) -> tuple[dict[str, Any], str]:
    """The default largest CUDA-graph capture size (``VllmConfig._set_cudagraph_sizes``):
    ``min(max_num_seqs × (1 + speculative tokens) × 2, limit, max_num_batched_tokens)``."""
    module, function = _function(sources, "vllm/config/vllm.py", "VllmConfig",
                                 "_set_cudagraph_sizes")
    for node in ast.walk(function):
        if isinstance(node, ast.If) and ast.unparse(node.test) == \
                "max_cudagraph_capture_size is None":
            limits: dict[str, ast.expr] = {}
            for statement in node.body:
                if isinstance(statement, ast.Assign):
                    limits[_last_name(statement.targets[0])] = statement.value
            cap = limits.get("max_cudagraph_capture_size")
            if not (isinstance(cap, ast.Call) and _last_name(cap.func) == "min"):
                break
            limit = cap.args[-1]
            limit = limits.get(_last_name(limit), limit)
            rule: dict[str, Any] = {"sha256": _source_sha(module, function)}
            if isinstance(limit, ast.IfExp) and isinstance(limit.test, ast.Call) \
                    and _last_name(limit.test.func) == "is_device_capability_family":
                rule["limit"] = _literal(limit.orelse)
                rule["limit_by_capability_family"] = {
                    int(_literal(limit.test.args[0])): _literal(limit.body)}
            else:
                rule["limit"] = _literal(limit)
                rule["limit_by_capability_family"] = {}
            return rule, sources.path(module)
    raise FactError(f"{module.path}: _set_cudagraph_sizes has a new shape: re-encode")


# ---------------------------------------------------------------- the data file

SETS = ("flags", "quantizations", "kv_cache_dtypes", "dtypes")
MAPPINGS = ("defaults", "sources")
WHOLE = ("batch_defaults", "cuda_graph_capture")
_HEADER = """\
# vLLM's per-release facts, read from the release wheels by tools/vllm_facts.py: do not edit.
#
# Loaded by gen.serving.vllm_releases. The first release is given in full; each later one
# only with what changed from the one before it: `added`/`removed` for the sets (flags and
# value sets), the changed keys for `defaults` and `sources`, the whole rule when
# `batch_defaults` or `cuda_graph_capture` changed. `sources` names the file of each group
# in the wheel (vllm-project/vllm <path> @ v<version>). `released` is the PyPI upload day
# (UTC) of the release's first file. `sha256` is that of the function the rule was read
# from; tools/vllm_facts.py --check fails when upstream edits it.
"""


def release_facts(version: str, root: Path) -> dict[str, Any]:
    """Everything gen keeps of one release, in full, from its unpacked sources."""
    metadata = next(root.glob("vllm-*.dist-info/METADATA")).read_text(encoding="utf-8")
    if f"\nVersion: {version}\n" not in metadata:
        raise FactError(f"{root}: the wheel's METADATA is not vllm {version}")
    sources = _Sources(root)
    facts: dict[str, Any] = {"sources": {}}
    facts["flags"] = sorted(serve_options(sources))
    facts["sources"]["flags"] = sorted(sources.read)
    for group, (values, path) in choices(sources).items():
        facts[group] = values
        facts["sources"][group] = [path]
    cache, cache_path = cache_defaults(sources)
    env, env_path = env_defaults(sources)
    facts["defaults"] = {**cache, **env}
    facts["sources"]["defaults"] = sorted({cache_path, env_path})
    for group, reader in (("batch_defaults", batch_defaults),
                          ("cuda_graph_capture", cuda_graph_capture)):
        facts[group], path = reader(sources)
        facts["sources"][group] = [path]
    return facts


def encode(releases: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """(version, date, full facts) oldest first → the first in full, then the changes."""
    encoded: list[dict[str, Any]] = []
    before: dict[str, Any] | None = None
    for version, released, facts in releases:
        entry: dict[str, Any] = {"version": version, "released": released}
        for group in SETS + MAPPINGS + WHOLE:
            now = facts[group]
            if before is None:
                entry[group] = now
            elif group in SETS:
                change = {"added": sorted(set(now) - set(before[group])),
                          "removed": sorted(set(before[group]) - set(now))}
                change = {k: v for k, v in change.items() if v}
                if change:
                    entry[group] = change
            elif group in MAPPINGS:
                changed = {k: v for k, v in now.items() if before[group].get(k) != v}
                if set(before[group]) - set(now):
                    raise FactError(f"{version}: {group} lost a key")
                if changed:
                    entry[group] = changed
            elif now != before[group]:
                entry[group] = now
        encoded.append(entry)
        before = facts
    return encoded


def render(releases: list[dict[str, Any]]) -> str:
    """The data file's text (stable: fixed key order, sorted sets)."""
    body = yaml.safe_dump({"repository": REPOSITORY, "releases": releases},
                          sort_keys=False, default_flow_style=False, width=100)
    return _HEADER + body


def main(argv: list[str] | None = None) -> int:
    """Rewrite (or with --check, compare) gen/data/vllm-releases.yaml; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE,
                        help="where unpacked releases are kept (default: %(default)s)")
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 when the data file differs")
    args = parser.parse_args(argv)
    try:
        versions = released_versions()
        dates = upload_dates()
        facts = [(v, dates[v], release_facts(v, source_tree(v, args.cache)))
                 for v in versions]
    except FactError as error:
        print(f"vllm_facts: {error}", file=sys.stderr)
        return 1
    text = render(encode(facts))
    current = DATA.read_text(encoding="utf-8") if DATA.is_file() else ""
    if args.check:
        if text != current:
            print(f"{DATA.relative_to(ROOT)}: differs from what the wheels say "
                  f"(run tools/vllm_facts.py and review the diff)")
            return 1
        return 0
    DATA.write_text(text, encoding="utf-8")
    print(f"{DATA.relative_to(ROOT)}: {len(facts)} releases, {len(text)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
