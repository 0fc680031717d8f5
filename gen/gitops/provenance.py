"""Provenance: ``out/_meta/<cluster>/provenance.json``, what a cluster's output was made from.

In the spirit of Argo CD's source hydrator, which writes a ``hydrator.metadata`` file beside
the manifests it renders (argo-cd ``docs/user-guide/source-hydrator.md``), but outside every
synced path, so neither Argo CD nor Flux ever applies it. It records gen's version, the
command that renders the cluster, and each profile file the cluster's objects came from
with its **Git blob id** (``git hash-object``: the SHA-1 Git gives the file's bytes).

Why blob ids and not a commit: ``out/`` is committed together with the profiles it comes
from, so the commit that holds a render does not exist yet when gen renders, and a file
naming a commit would change between the render and ``gen render --check`` on that
commit. A blob id is the same in the working tree, in the index and in every commit that
holds those bytes, so the file is byte-identical across renders of the same inputs, on
any machine, in Git or not; ``git log --find-object=<blob> -- <path>`` names the commit
that introduced each version.

The file is part of the cluster's plan (``ClusterPlan.files``), so the render cache's
fingerprint covers its bytes: a profile edit that changes only comments still re-renders it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path, PurePosixPath

from gen._version import __version__
from gen.fleet.generated import JSON_KEY, json_header
from gen.fleet.plan import META_DIR, ClusterPlan, FileSpec

__all__ = ["PROVENANCE_FILE", "git_blob_id", "provenance", "with_provenance"]

PROVENANCE_FILE = "provenance.json"


def git_blob_id(data: bytes) -> str:
    """The id Git gives a file with these bytes (``git hash-object``, SHA-1 repositories)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _inputs(plan: ClusterPlan) -> list[str]:
    """The profile files the cluster's objects and files came from, sorted."""
    paths = {plan.located.document.path}
    paths.update(spec.origin.path for spec in plan.manifests)
    paths.update(file.origin.path for file in plan.files)
    return sorted(p for p in paths if p)


def provenance(plan: ClusterPlan, root: Path) -> FileSpec:
    """The provenance file of one cluster; ``root`` is the folder the profile paths shown in
    gen's output are relative to. A file that cannot be read is recorded without an id."""
    profiles: dict[str, str | None] = {}
    for shown in _inputs(plan):
        try:
            profiles[shown] = git_blob_id((root / shown).read_bytes())
        except OSError:
            profiles[shown] = None
    origin = plan.located.document.location
    data = {
        JSON_KEY: json_header(origin.path),
        "cluster": plan.name,
        "gen": __version__,
        "command": f"gen render --cluster {plan.name}",
        "profiles": profiles,
    }
    text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    return FileSpec(PurePosixPath(META_DIR, plan.name, PROVENANCE_FILE),
                    text.encode("utf-8"), origin)


def with_provenance(plan: ClusterPlan, root: Path) -> ClusterPlan:
    """The cluster plan with its provenance file added to its files."""
    return dataclasses.replace(plan, files=(*plan.files, provenance(plan, root)))
