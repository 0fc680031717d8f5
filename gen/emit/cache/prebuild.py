"""A cluster's pre-build key: a second key in its record, computed from the resolved (not
yet built) cluster, under which a render takes the cluster's lint findings, and its files,
without building it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from gen.emit.cache._canonical import Uncacheable, canonical_json, json_default, sha256_text
from gen.emit.cache._plan import service_inputs
from gen.emit.cache._trees import NoDigest, builtin_digest, file_sha256, tree_digest
from gen.emit.cache.layout import FORMAT
from gen.errors import SourceLocation

if TYPE_CHECKING:
    from gen.fleet.plan import ClusterPlan, PoolPlan
    from gen.fleet.profiles import ProfileSet

__all__ = ["PREBUILD_FORMAT", "PrebuildKey", "loaded_profiles", "prebuild_key",
           "template_tree_digest"]

PREBUILD_FORMAT = 2
"""The pre-build key's layout version (part of the key; 2: a loaded profile by its place)."""

_NATIVE = (str, int, float, type(None))
"""What ``json`` writes itself (``bool`` is an ``int``)."""
_EXACT = frozenset({str, int, float, bool, type(None)})


class PrebuildKey(NamedTuple):
    """A pre-build key and the shown paths of the profile files whose bytes it hashed."""

    key: str
    files: frozenset[str]


Shared = dict[int, tuple[Any, Any, frozenset[str]]]
"""What :func:`prebuild_key` wrote of each object that does not depend on the cluster
(a catalog GPU, a model, a class, the fleet-wide GitOps view): its identity → (the object,
its JSON data, the profile files it names). One render's keys share it, so an object met
by every cluster is written once; the entry holds the object, so its identity cannot pass
to another while the entry lives."""


class _Projection:
    """A cluster plan as the pre-build key hashes it: JSON-ready data (:meth:`data`), with
    every source location's line and column, and the profile files those name
    (:attr:`files`), collected on the way."""

    def __init__(self, cluster: ClusterPlan, loaded: frozenset[int] = frozenset(),
                 read: Mapping[str, str] | None = None, shared: Shared | None = None,
                 ) -> None:
        import pydantic

        from gen.fleet.plan import ServicePlan
        from gen.fleet.profiles import Located

        self.files: set[str] = set()
        """The shown paths of the profile files a location or document names."""
        self._pools = {id(p): p.name for p in cluster.pools}
        self._loaded = loaded
        self._read = read or {}
        self._shared = shared
        self._bound = False
        """Whether what is being written depends on this cluster (a ServicePlan's pools by
        name): such a value is never kept in ``shared``."""
        self._model, self._service, self._located = pydantic.BaseModel, ServicePlan, Located

    def _pool_name(self, pool: PoolPlan) -> str:
        return self._pools[id(pool)]

    def data(self, value: Any) -> Any:
        """``value`` as plain JSON data: what ``json`` writes itself kept (tested in its
        order, the exact types first), lists and tuples and dicts by their items, a pydantic
        model as its JSON dump (plain data already: no location in it is collected, as none
        is written with its line), anything else as :meth:`_written` writes it."""
        kind = type(value)
        if kind in _EXACT:
            return value
        if kind is list or kind is tuple:
            return [self.data(item) for item in value]
        if kind is dict:
            return {key: self.data(item) for key, item in value.items()}
        if isinstance(value, _NATIVE):
            return value
        if isinstance(value, (list, tuple)):
            return [self.data(item) for item in value]
        if isinstance(value, dict):
            return {key: self.data(item) for key, item in value.items()}
        if self._shared is None:
            return self._whole(value)
        entry = self._shared.get(id(value))
        if entry is not None and entry[0] is value:  # the entry holds it: the id is its own
            self.files.update(entry[2])
            return entry[1]
        outer, bound = self.files, self._bound
        self.files, self._bound = set(), False
        try:
            written = self._whole(value)
        finally:
            inner, inner_bound = self.files, self._bound
            outer.update(inner)
            self.files, self._bound = outer, bound or inner_bound
        if not inner_bound:
            self._shared[id(value)] = (value, written, frozenset(inner))
        return written

    def _whole(self, value: Any) -> Any:
        if isinstance(value, self._model):
            return value.model_dump(mode="json")
        return self.data(self._written(value))

    def _written(self, value: Any) -> Any:
        if isinstance(value, self._service) and all(id(p) in self._pools for p in value.pools):
            # its pools are the cluster's own (hashed there): by name, not once more each
            self._bound = True
            return {"@type": "ServicePlan", **service_inputs(value, self._pool_name)}
        if isinstance(value, SourceLocation):
            self.files.add(value.path)
            return [value.path, value.line, value.column, value.note]
        if isinstance(value, self._located):
            self.files.add(value.document.path)
            if id(value) in self._loaded and value.document.path in self._read:
                # the loader's own, from bytes it read: those bytes decide it
                return {"loaded": [value.document.path, value.document.index]}
            return {"value": value.value, "from": [value.document.path, value.document.index]}
        return json_default(value)


def loaded_profiles(profiles: ProfileSet) -> frozenset[int]:
    """The identities of the profiles :func:`gen.fleet.profiles.validate_documents` made
    (each one validated from its document alone), for :func:`prebuild_key`; taken in the
    process that computes the keys, while ``profiles`` holds them."""
    return frozenset(id(located) for section in (
        profiles.clusters, profiles.mig_layouts, profiles.gpu_classes, profiles.services,
        profiles.models) for located in section.values())


def prebuild_key(cluster: ClusterPlan, extra: Mapping[str, Any], root: Path,
                 loaded: frozenset[int] = frozenset(),
                 read: Mapping[str, str] | None = None,
                 shared: Shared | None = None) -> PrebuildKey | None:
    """The pre-build key of a resolved (not yet built) cluster; None when an input cannot
    be hashed. A SHA-256 over the canonical JSON of:

    - the record format (gen's version, code and libraries are the record's env);
    - the built-in templates and gen's data files (catalogs read by builders and checks);
    - ``extra``: the caller's other inputs (override templates, CRDs, what the checks read
      beside the cluster);
    - the cluster plan itself, every value the resolver put there, with every source
      location **with its line and column** (findings carry them, unlike the bytes a
      fingerprint vouches for); a profile the loader made (``loaded``:
      :func:`loaded_profiles`) from bytes whose SHA-256 ``read`` names (shown path →
      digest, :attr:`gen.emit.cache.parsed.ParseCache.read`) as its file and document
      index only, not its value: the loader validates it from that document alone,
      which those bytes and gen's code (the record's env) decide, positions included.
      So the shared profiles (classes, models, layouts) are not written out once per
      cluster; one the resolver made itself (another value with the same document) is
      written whole. ``shared`` (:data:`Shared`) keeps what was written of the objects
      that do not depend on the cluster, for the next key of the same render: the same
      text, written once;
    - the SHA-256 of the bytes of every profile file any of those locations or documents
      names, read from ``root`` (the folder the shown paths are relative to), as the
      provenance file reads them. A profile is hashed as its whole file, so an edit anywhere
      in it (a comment that moves the lines below) changes the key of every cluster that
      draws on it. A file ``read`` names must still hold the bytes the loader read
      (else there is no key: it changed during the render).
    """
    builtin = builtin_digest()
    if builtin is None:
        return None
    projection = _Projection(cluster, loaded, read, shared)
    try:
        text = json.dumps(projection.data({"cluster": cluster, "extra": extra}),
                          sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                          allow_nan=False)
    except (Uncacheable, ValueError, RecursionError):
        return None
    files: dict[str, str] = {}
    for shown in sorted(p for p in projection.files if p):
        try:
            files[shown] = file_sha256(root / shown)
        except NoDigest:
            return None
        if read is not None and read.get(shown, files[shown]) != files[shown]:
            return None  # edited since the loader read it
    parts = {
        "format": PREBUILD_FORMAT,
        "gen": {"format": FORMAT},
        "builtin": builtin,
        "plan": sha256_text(text),
        "files": files,
    }
    return PrebuildKey(sha256_text(canonical_json(parts)), frozenset(files))


def template_tree_digest(folder: Path | None) -> list[tuple[str, str]] | None:
    """(relative path, SHA-256) of every file of a template override folder (empty for none);
    None when it holds a link or an unreadable entry (:func:`prebuild_key` then has no key)."""
    if folder is None or not folder.is_dir():
        return []
    if folder.is_symlink():
        return None
    try:
        return tree_digest(folder)
    except NoDigest:
        return None
