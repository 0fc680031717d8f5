"""The objects of ``out/<cluster>/`` and the profile location each one came from.

``gen verify`` applies what is committed (the files Argo CD or Flux would sync), not a fresh
render. To report a refusal at the profile line that produced an object, the cluster is also
rendered in memory (:func:`gen.emit.render.render_cluster`, nothing written): each rendered
object carries its origin (:attr:`gen.fleet.plan.ManifestSpec.origin`) and the path it is
written to, and a committed file at that path gets that origin. A file the render does not
produce (``out/`` is stale, or a file was added by hand) is located at itself.

Only the synced folder counts: ``out/<cluster>/`` without its ``kustomization.yaml`` files.
The bootstrap objects (``out/_bootstrap``, ``out/_root``) are applied to the GitOps
controller's cluster, which may be another one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from gen.errors import Finding, SourceLocation
from gen.fleet.plan import ClusterPlan
from gen.rules import finding

__all__ = ["OutObject", "origins", "read_out"]


@dataclass(frozen=True)
class OutObject:
    """One object of ``out/<cluster>/``."""

    path: PurePosixPath
    """Relative to ``out/`` (``prod/workloads/inference/deployment-x.yaml``)."""
    shown: str
    """The file as messages name it (``out/prod/...``)."""
    data: Mapping[str, Any]
    origin: SourceLocation
    """The profile location that produced it (the file itself when unknown)."""

    @property
    def api_version(self) -> str:
        """``apiVersion``."""
        return str(self.data.get("apiVersion", ""))

    @property
    def kind(self) -> str:
        """``kind``."""
        return str(self.data.get("kind", ""))

    @property
    def name(self) -> str:
        """``metadata.name``."""
        return str((self.data.get("metadata") or {}).get("name", ""))

    @property
    def namespace(self) -> str:
        """``metadata.namespace`` (empty for cluster-scoped objects)."""
        return str((self.data.get("metadata") or {}).get("namespace") or "")

    @property
    def title(self) -> str:
        """``Deployment inference/llama-70b`` for messages."""
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


def origins(cluster: ClusterPlan, templates_dir: Path | None
            ) -> dict[PurePosixPath, SourceLocation]:
    """Output path (relative to ``out/``) → the profile location that produces it."""
    from gen.emit.render import make_environment, render_cluster

    objects, _ = render_cluster(make_environment(templates_dir), cluster)
    return {obj.path: obj.origin for obj in objects}


def _shown(out_dir: Path, rel: PurePosixPath) -> str:
    return (PurePosixPath(out_dir.as_posix()) / rel).as_posix()


def read_out(cluster: ClusterPlan, out_dir: Path, templates_dir: Path | None
             ) -> tuple[list[OutObject], list[Finding]]:
    """The objects of ``out/<cluster>/``, sorted by path, and a finding for each file that is
    not one Kubernetes object (GEN801, at the file)."""
    folder = out_dir / cluster.name
    if not folder.is_dir():
        return [], [finding(
            "GEN801", f"{_shown(out_dir, PurePosixPath(cluster.name))}/ does not exist: "
            "nothing to verify", cluster.located.document.location,
            hint=f"run gen render --cluster {cluster.name} first", cluster=cluster.name)]
    where = origins(cluster, templates_dir)
    objects: list[OutObject] = []
    findings: list[Finding] = []
    for file in sorted(folder.rglob("*.yaml")):
        if file.name == "kustomization.yaml" or not file.is_file():
            continue
        rel = PurePosixPath(file.relative_to(out_dir).as_posix())
        shown = _shown(out_dir, rel)
        origin = where.get(rel, SourceLocation(shown))
        try:
            docs = [d for d in yaml.safe_load_all(file.read_text(encoding="utf-8"))
                    if d is not None]
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as err:
            mark = getattr(err, "problem_mark", None)
            detail = f" (line {mark.line + 1})" if mark is not None else ""
            findings.append(finding(
                "GEN801", f"{shown} cannot be read{detail}: {type(err).__name__}", origin,
                related=(SourceLocation(shown, note="the file"),),
                hint="run gen render to rewrite it", cluster=cluster.name))
            continue
        if len(docs) != 1 or not isinstance(docs[0], dict) or not docs[0].get("kind") \
                or not docs[0].get("apiVersion") or not (docs[0].get("metadata") or {}).get("name"):
            findings.append(finding(
                "GEN801", f"{shown} is not one Kubernetes object (apiVersion, kind, "
                "metadata.name)", origin, related=(SourceLocation(shown, note="the file"),),
                hint="run gen render to rewrite it", cluster=cluster.name))
            continue
        objects.append(OutObject(rel, shown, docs[0], origin))
    return objects, findings
