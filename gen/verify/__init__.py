"""``gen verify``: the rendered ``out/<cluster>/`` and the cluster profile against a live cluster.

Two questions, asked read-only (only ``GET`` and dry-run ``PATCH``; nothing is created,
changed or deleted):

1. **Would the API server take every object?** Each object of ``out/<cluster>/`` is applied
   server-side with ``dryRun=All`` (:mod:`gen.verify.apply`); a refusal is a finding at the
   profile line that produced the object (:mod:`gen.verify.objects`), with the server's
   message and field path.
2. **Is the hardware what the profile says?** The cluster's Nodes and the ResourceSlices the
   NVIDIA DRA driver publishes (or, on device-plugin clusters, the Nodes' capacity and GPU
   Feature Discovery labels) against each node pool: node count, GPU model, GPUs per node,
   MIG mode and devices, driver version, dynamic-MIG counters (:mod:`gen.verify.drift`); each
   difference a finding at the pool's line.

The library takes a :class:`gen.verify.state.ClusterAPI`, so that it runs against a fake as
well as a real cluster; :func:`gen.verify.client.connect` makes the real one from a kubeconfig
(the only code that imports the ``kubernetes`` package). Example::

    from pathlib import Path
    from gen.pipeline import load_plan
    from gen.verify import verify
    from gen.verify.client import connect

    plan = load_plan(Path("profiles"))
    result = verify(plan, "prod-us-east", connect(context="prod"), out_dir=Path("out"))
    for finding in result.findings:
        print(finding.format())
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gen.errors import Finding, Severity, sort_findings

if TYPE_CHECKING:
    from gen.fleet.plan import Plan
    from gen.verify.state import ClusterAPI, ClusterState

__all__ = ["RESOURCE_SLICE_VERSIONS", "Verification", "read_cluster_state", "verify"]

RESOURCE_SLICE_VERSIONS = ("resource.k8s.io/v1", "resource.k8s.io/v1beta2",
                           "resource.k8s.io/v1beta1")
"""Where ResourceSlices are listed from: the newest version the server serves."""


@dataclass(frozen=True)
class Verification:
    """What ``gen verify`` found about one cluster."""

    cluster: str
    server: str
    """Which cluster was asked (context and URL; never a credential)."""
    findings: tuple[Finding, ...]
    objects: int
    """Objects of ``out/<cluster>/`` sent to the dry-run."""
    accepted: int
    refused: int
    not_served: int
    not_checked: int
    nodes: int
    """Nodes of the cluster."""
    pools: int

    @property
    def ok(self) -> bool:
        """No finding of severity error."""
        return not any(f.severity is Severity.ERROR for f in self.findings)

    def counts(self) -> dict[str, int]:
        """The numbers of the JSON report's ``checked``."""
        return {"objects": self.objects, "accepted": self.accepted, "refused": self.refused,
                "not_served": self.not_served, "not_checked": self.not_checked,
                "nodes": self.nodes, "pools": self.pools}


def read_cluster_state(api: ClusterAPI) -> ClusterState:
    """The version, Nodes and ResourceSlices of the cluster (slices: None if not served)."""
    from gen.verify.state import read_state

    version = api.server_version()
    nodes = api.list("v1", "nodes")
    slices = None
    for api_version in RESOURCE_SLICE_VERSIONS:
        kinds = api.served(api_version)
        if kinds is not None and "ResourceSlice" in kinds:
            slices = api.list(api_version, kinds["ResourceSlice"].plural)
            break
    return read_state(version, nodes, slices)


def verify(plan: Plan, cluster: str, api: ClusterAPI, *, out_dir: Path = Path("out"),
           templates_dir: Path | None = None) -> Verification:
    """Dry-run ``out_dir/<cluster>/`` against ``api`` and compare its hardware with the
    profile. ``plan`` is the built fleet (:func:`gen.pipeline.load_plan`); ``templates_dir``
    the fleet's template overrides (the provenance render needs them). Raises
    :class:`gen.errors.UnresolvedReferenceError` for an unknown cluster and
    :class:`gen.errors.ClusterAccessError` when the cluster cannot be asked."""
    from gen.verify.apply import dry_run
    from gen.verify.drift import drift
    from gen.verify.objects import read_out

    target = plan.select([cluster]).clusters[0]
    objects, findings = read_out(target, out_dir, templates_dir)
    state = read_cluster_state(api)
    namespaces = [str((n.get("metadata") or {}).get("name", "")) for n in api.list("v1",
                                                                                    "namespaces")]
    report = dry_run(target, api, objects, namespaces)
    findings += report.findings
    findings += drift(target, state)
    return Verification(
        cluster=target.name, server=api.description, findings=tuple(sort_findings(findings)),
        objects=len(objects), accepted=report.accepted, refused=report.refused,
        not_served=report.not_served, not_checked=report.not_checked,
        nodes=len(state.nodes), pools=len(target.pools),
    )
