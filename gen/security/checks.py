"""Security rules: no literal secret in a profile; Pod Security exceptions are visible."""

from __future__ import annotations

from gen.errors import Finding
from gen.fleet.plan import Plan
from gen.fleet.profiles import secret_findings
from gen.rules import finding


def check(plan: Plan) -> list[Finding]:
    """GEN501, GEN502."""
    findings: list[Finding] = []
    profiles = plan.profiles
    groups = (profiles.clusters, profiles.gpu_classes, profiles.services,
              profiles.mig_layouts, profiles.models)
    for group in groups:
        for located in group.values():
            findings += secret_findings(located.document)
    for located in profiles.services.values():
        reason = located.value.pod_security.privileged_reason
        if reason:
            findings.append(finding(
                "GEN502", f"opts out of Pod Security 'restricted': {reason}",
                located.at("pod_security", "privileged_reason"),
                key_path="pod_security.privileged_reason",
            ))
    return findings
