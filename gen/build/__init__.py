"""Builders: turn each ClusterPlan into the manifests and files to render.

One module per capability (DRA, MIG, vLLM, GitOps, Apple Silicon); each is a function
from a ClusterPlan to ManifestSpecs (and report files). This module runs them in order.
"""

from __future__ import annotations

import dataclasses

from gen.build import apple, dra, gitops, mig, vllm
from gen.build._common import labels, manifest
from gen.plan import ClusterPlan, Plan

__all__ = ["build_manifests"]


def _namespaces(plan: ClusterPlan) -> list[str]:
    names = {svc.service.namespace for svc in plan.services}
    names |= {q.namespace for q in plan.cluster.quotas}
    return sorted(names)


def build_cluster(plan: ClusterPlan) -> ClusterPlan:
    """The cluster plan with its manifests and files filled in."""
    plan = dataclasses.replace(plan, mig_strategy=mig.strategy(plan))
    origin = plan.located.document.location
    specs = [
        manifest(
            "core/namespace.yaml.j2", origin, name=ns, stage="gpu",
            labels={
                **labels(ns, "namespace"),
                "pod-security.kubernetes.io/enforce": "restricted",
                "pod-security.kubernetes.io/enforce-version": "latest",
            },
        )
        for ns in _namespaces(plan)
    ]
    mig_specs, files = mig.build(plan)
    specs += mig_specs
    specs += dra.build(plan)
    specs += vllm.build(plan)
    apple.extend_cluster(plan, specs, files)
    specs += gitops.build(plan, specs)
    return dataclasses.replace(plan, manifests=tuple(specs), files=tuple(files))


def build_manifests(plan: Plan) -> Plan:
    """Fill in every cluster's manifests."""
    return dataclasses.replace(plan, clusters=tuple(build_cluster(c) for c in plan.clusters))
