"""GEN307/GEN308: a service's settings against the vLLM release its image runs.

The release comes from the image's tag (or ``serving.image_of``: :mod:`gen.serving.image`),
its facts from :mod:`gen.serving.vllm_releases`. ``vllm serve`` refuses an option it does not
have ("unrecognized arguments") and a value outside an option's choices ("invalid choice"),
so the pod crash-loops; both are errors at the field that sets them, naming the release and,
where gen knows it, the release that removed or added the option. A release gen has no facts
for is a warning: its options go unchecked.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from gen.errors import Finding
from gen.rules import finding
from gen.serving.vllm_releases import (
    REPOSITORY,
    VllmRelease,
    VllmVersion,
    flag_history,
    known_releases,
    release_for,
)

if TYPE_CHECKING:
    from gen.fleet.plan import ServicePlan

__all__ = ["check_service"]

# Options whose value gen checks against the release's choices, and the set that holds them.
_CHOICES = {"--quantization": "quantizations", "--kv-cache-dtype": "kv_cache_dtypes",
            "--dtype": "dtypes"}
_SHORT_CHOICES = {"-q": "--quantization"}
_NUMBER = re.compile(r"^-\d")


def _values(release: VllmRelease, group: str) -> frozenset[str]:
    values: frozenset[str] = getattr(release, group)
    return values


def _value_history(group: str, value: str) -> tuple[VllmVersion | None, VllmVersion | None]:
    """(first known release with ``value`` in ``group``, the release after its last)."""
    releases = known_releases()
    having = [i for i, r in enumerate(releases) if value in _values(r, group)]
    if not having:
        return None, None
    after = having[-1] + 1
    return (releases[having[0]].version,
            releases[after].version if after < len(releases) else None)


def _why_missing(what: str, version: VllmVersion,
                 history: tuple[VllmVersion | None, VllmVersion | None]) -> str:
    added, removed = history
    if removed is not None and removed <= version:
        return f"vLLM {version} has no {what}: it was removed in {removed}"
    if added is not None and added > version:
        return f"{what} arrived in vLLM {added}; this image runs {version}"
    return f"vLLM {version} has no {what}"


def _option(release: VllmRelease, token: str) -> str | None:
    """The option ``token`` sets, None when vLLM refuses it; "" for a value token."""
    if not token.startswith("-") or token == "-" or _NUMBER.match(token):
        return ""
    resolved = release.resolve_flag(token)
    if resolved is not None:
        return resolved
    if token.startswith("--"):
        return None
    if token.startswith("-O") and "--optimization-level" in release.flags:
        # FlexibleArgumentParser.parse_args turns -O3, -O=3 and -O 3 into
        # --optimization-level (vllm/utils/argparse_utils.py @ v0.21.0 … v0.33.0).
        return "--optimization-level"
    short = token.split("=", 1)[0]
    if short in release.flags:
        return short
    # argparse reads a one-letter option's value attached to it: -qfp8.
    return token[:2] if token[:2] in release.flags else None


def _flag_findings(svc: ServicePlan, release: VllmRelease, version: VllmVersion,
                   source: str) -> list[Finding]:
    findings: list[Finding] = []
    args = svc.service.serving.extra_args
    for index, token in enumerate(args):
        option = _option(release, token)
        where = svc.located.at("serving", "extra_args", index)
        key = f"serving.extra_args[{index}]"
        if option is None:
            name = token.split("=", 1)[0]
            history = flag_history(name)
            why = _why_missing(f"option {name}", version, (history.added, history.removed))
            findings.append(finding(
                "GEN307", f"{why} (vllm serve exits with 'unrecognized arguments')", where,
                key_path=key,
                hint=f"drop it, or run a vLLM release that has it (facts: {source})",
            ))
            continue
        option = _SHORT_CHOICES.get(option, option)
        group = _CHOICES.get(option)
        if group is None:
            continue
        if "=" in token:
            value = token.split("=", 1)[1]
        elif not token.startswith("--") and len(token) > 2:
            value = token[2:]  # -qfp8
        elif index + 1 < len(args):
            value = args[index + 1]
        else:
            continue
        if value not in _values(release, group):
            why = _why_missing(f"{option} {value}", version, _value_history(group, value))
            findings.append(finding(
                "GEN307", f"{why} (vllm serve exits with 'invalid choice')", where, key_path=key,
                hint=f"choose one of vLLM {version}'s values (facts: {source})",
            ))
    return findings


def _quantization(svc: ServicePlan, release: VllmRelease, version: VllmVersion,
                  source: str) -> list[Finding]:
    method = svc.service.serving.quantization
    if method is None or method in release.quantizations:
        return []
    history = _value_history("quantizations", method)
    moved = (" (bitsandbytes left vLLM's core for the vllm-bnb-plugin package: "
             "vllm-project/vllm#43529)" if method == "bitsandbytes" else "")
    return [finding(
        "GEN307", f"{_why_missing(f'--quantization {method}', version, history)}{moved}",
        svc.located.at("serving", "quantization"), key_path="serving.quantization",
        hint=f"use a checkpoint quantized another way, or an image of a release that has it "
        f"(facts: {source})",
    )]


def check_service(svc: ServicePlan) -> list[Finding]:
    """GEN307 and GEN308 for one vLLM service (see the module docstring)."""
    from gen.serving.image import service_image

    image = service_image(svc.service)
    if image.version is None:
        return []  # GEN303 says gen cannot tell what the image is
    version = VllmVersion.parse(image.version)
    where, key = svc.located.at(*image.key), image.field
    known = known_releases()
    release = release_for(version)
    if release is None:
        return [finding(
            "GEN308", f"{image.reference} runs vLLM {version}, older than any release gen has "
            f"facts for ({known[0].version}–{known[-1].version}): its options, choices and "
            "defaults are unchecked", where, key_path=key,
            hint=f"use vLLM {known[0].version} or later",
        )]
    findings: list[Finding] = []
    newest = known[-1].version
    if version.release[:2] > newest.release[:2]:
        findings.append(finding(
            "GEN308", f"{image.reference} runs vLLM {version}, newer than the newest release "
            f"gen has facts for ({newest}): its options and defaults are checked as {newest}'s",
            where, key_path=key,
            hint="upgrade gen, or pin the release gen knows",
        ))
    source = f"{REPOSITORY} @ v{release.version}, see docs/vllm-versions.md"
    findings += _flag_findings(svc, release, version, source)
    findings += _quantization(svc, release, version, source)
    return findings
