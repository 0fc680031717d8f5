"""A cluster's fingerprint: a SHA-256 over the canonical JSON of everything its rendered
bytes depend on (the parts are listed in :meth:`Fingerprinter.parts`)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from gen.emit.cache._canonical import Uncacheable, canonical_json, sha256_text
from gen.emit.cache._plan import pool_inputs, service_inputs
from gen.emit.cache.layout import FORMAT

if TYPE_CHECKING:
    import jinja2

    from gen.fleet.plan import ClusterPlan, PoolPlan

__all__ = ["FIELDS_HASHED", "FIELDS_SHOWN_BY_SPECS", "Fingerprinter"]

FIELDS_HASHED = frozenset({
    "located", "minor", "pools", "services", "dra_api_version", "manifests", "files",
    "mig_strategy", "apple",
})
"""The :class:`gen.fleet.plan.ClusterPlan` fields :meth:`Fingerprinter.parts` hashes."""

FIELDS_SHOWN_BY_SPECS = frozenset({
    "gpu_classes", "claim_templates", "gitops_fleet", "local_queues", "workload_priorities",
    "kueue_values",
})
"""The fields it does not hash, since a builder's output shows all of them that counts: a
class reaches a cluster through its services, a claim template's name and the GitOps fleet
decisions, a service's Kueue queue and priority and the Kueue chart's values through the
specs that name them. A new field is one or the other
(``tests/emit/test_render_cache.py`` fails until it is listed)."""

_REFERENCE_TAG = re.compile(r"\{%[-+]?\s*(?:include|import|extends|from)\b")
"""A tag that can name another template; a source without one references none."""

_MISSING = "\0missing"
"""The source of a template the loader does not find (the render reports it)."""


def _pool_name(pool: PoolPlan) -> str:
    return pool.name


class Fingerprinter:
    """Computes cluster fingerprints for one run: one Jinja environment (the render's own
    loader), template digests computed once per template."""

    def __init__(self, env: jinja2.Environment, crds: str = "") -> None:
        self._env = env
        self._crds = crds
        self._closure: dict[str, tuple[str, ...]] = {}
        self._source: dict[str, str] = {}

    def _template_source(self, name: str) -> str:
        import jinja2

        if name not in self._source:
            loader = self._env.loader
            if loader is None:
                raise Uncacheable("the environment has no loader")
            try:
                source, _, _ = loader.get_source(self._env, name)
            except jinja2.TemplateNotFound:
                source = _MISSING  # the render reports it; a later file invalidates
            self._source[name] = source
        return self._source[name]

    def _references(self, name: str) -> tuple[str, ...] | None:
        """The templates ``name`` includes, imports or extends; None for a dynamic one."""
        import jinja2
        import jinja2.meta

        source = self._template_source(name)
        if source == _MISSING:
            return ()
        if (self._env.block_start_string == "{%" and self._env.line_statement_prefix is None
                and not _REFERENCE_TAG.search(source)):
            return ()  # no tag that could name a template: nothing to parse
        try:
            refs = list(jinja2.meta.find_referenced_templates(self._env.parse(source)))
        except jinja2.TemplateSyntaxError:
            return ()  # the render reports it
        if any(r is None for r in refs):
            return None
        return tuple(sorted({r for r in refs if r is not None}))

    def _templates(self, name: str) -> tuple[str, ...]:
        """``name`` and every template it reaches; all templates if one is chosen at run
        time (a name the source does not spell out)."""
        if name not in self._closure:
            seen: set[str] = set()
            todo = [name]
            while todo:
                current = todo.pop()
                if current in seen:
                    continue
                seen.add(current)
                refs = self._references(current)
                if refs is None:
                    seen.update(self._env.list_templates())
                    break
                todo.extend(refs)
            self._closure[name] = tuple(sorted(seen))
        return self._closure[name]

    def parts(self, cluster: ClusterPlan) -> dict[str, Any]:
        """The parts the fingerprint hashes, as canonical-JSON-ready data:

        - ``gen``: the record format only (gen's version, code and libraries are the
          record's env, beside the fingerprint);
        - ``cluster``: the name (it is in every path), the Kubernetes minor and the schema
          minor it validates against, and the DRA API version;
        - ``manifests`` and ``files``: every spec the builders made, which alone decide
          the bytes;
        - ``templates``: the source of every template the cluster renders and of every one
          those include, import or extend, through the render's own loader;
        - ``inputs``: what the specs were built from, so that no builder can read an input
          the specs do not show (not the fleet-wide map of GPU classes: a class reaches a
          cluster through its services);
        - ``crds``, when the fleet brings CRDs: their digest (they decide verdicts).

        Source locations enter as their file only; paths are the fleet-relative ones the
        loader shows, so nothing depends on the working directory or the machine."""
        from gen.emit.validate import schema_version_for

        names: set[str] = set()
        for spec in cluster.manifests:
            names.update(self._templates(spec.template))
        return {
            "gen": {"format": FORMAT},
            "cluster": {
                "name": cluster.name,
                "minor": cluster.minor,
                "schema_minor": schema_version_for(cluster.minor),
                "dra_api_version": cluster.dra_api_version,
            },
            "manifests": cluster.manifests,
            "files": cluster.files,
            "templates": {n: sha256_text(self._template_source(n)) for n in sorted(names)},
            "inputs": {
                "cluster": cluster.located,
                "pools": [pool_inputs(p) for p in cluster.pools],
                "services": [list(service_inputs(s, _pool_name).values())
                             for s in cluster.services],
                "mig_strategy": cluster.mig_strategy,
                "apple": cluster.apple,
            },
            **({"crds": self._crds} if self._crds else {}),
        }

    def fingerprint(self, cluster: ClusterPlan) -> str | None:
        """The cluster's fingerprint (hex SHA-256); None when some input cannot be hashed
        canonically, and the cluster is then always rendered."""
        try:
            return sha256_text(canonical_json(self.parts(cluster)))
        except Uncacheable:
            return None
