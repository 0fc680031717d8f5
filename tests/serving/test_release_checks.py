"""Tests for gen.serving.release_checks: settings against the vLLM release of the image."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from gen.errors import Finding, Severity
from tests.helpers import LINT_BASE, lint_fleet

# The lint base's service, its serving block in block style so that keys can be added.
SERVICE = LINT_BASE["service.yaml"].replace("serving: {max_model_len: 32768}\n",
                                            "serving:\n  max_model_len: 32768\n")


def _release_findings(tmp_path: Path, serving: str) -> list[Finding]:
    text = SERVICE + textwrap.indent(serving, "  ") + "\n"
    findings = lint_fleet(tmp_path, **{"service.yaml": text})
    return [f for f in findings if f.rule in ("GEN307", "GEN308")]


@pytest.mark.parametrize(("serving", "says"), [
    ("image: vllm/vllm-openai:v0.28.0\nextra_args: [--calculate-kv-scales]",
     "vLLM 0.28.0 has no option --calculate-kv-scales: it was removed in 0.28.0"),
    ("image: vllm/vllm-openai:v0.28.0-cu129\nextra_args: [--max-num-partial-prefills=2]",
     "it was removed in 0.27.0"),
    ("image: vllm/vllm-openai:v0.30.0\nextra_args: [--long-prefill-token-threshold-adaptive]",
     "arrived in vLLM 0.31.0; this image runs 0.30.0"),
    ("extra_args: [--kv-cache-dtype, fp4]", "vLLM 0.33.0 has no --kv-cache-dtype fp4"),
    ("image: vllm/vllm-openai:v0.29.0\nextra_args: [-q, bitsandbytes]",
     "--quantization bitsandbytes: it was removed in 0.28.0"),
])
def test_an_option_the_release_lacks_is_an_error_naming_it(
        tmp_path: Path, serving: str, says: str) -> None:
    """Removed, not yet added, or not a choice: an error at the argument, with the release."""
    [finding] = _release_findings(tmp_path, serving)
    assert finding.rule == "GEN307" and finding.severity is Severity.ERROR
    assert says in finding.message
    assert finding.key_path.startswith("serving.extra_args[")


@pytest.mark.parametrize("serving", [
    "image: vllm/vllm-openai:v0.27.1\nextra_args: [--calculate-kv-scales]",
    "image: vllm/vllm-openai:v0.27.0\nquantization: bitsandbytes\nextra_args: [-qbitsandbytes]",
    "extra_args: [-O3, -O, '2', -tp=4, --max_num_seqs=8, --enable-prefix-cach,\n"
    "             --no-enable-log-requests]",
    "extra_args: [--compilation-config.mode=3, --max-num-active-seqs, '16']",
])
def test_what_the_release_accepts_passes(tmp_path: Path, serving: str) -> None:
    """Underscores, -O levels, short aliases, prefixes, JSON keys, negatives: as vLLM parses."""
    assert _release_findings(tmp_path, serving) == []


def test_bitsandbytes_left_core_in_0_28(tmp_path: Path) -> None:
    """serving.quantization: bitsandbytes on a 0.28 image is an error at that line."""
    [finding] = _release_findings(
        tmp_path, "image: vllm/vllm-openai:v0.28.0\nquantization: bitsandbytes")
    assert finding.key_path == "serving.quantization"
    assert "removed in 0.28.0" in finding.message and "vllm-bnb-plugin" in finding.message


def test_a_mirror_is_checked_as_its_upstream_tag(tmp_path: Path) -> None:
    """serving.image_of decides the release; the finding is about the mirror's argument."""
    [finding] = _release_findings(
        tmp_path, "image: registry.example.com/ai/vllm:prod\n"
        "image_of: vllm/vllm-openai:v0.28.0\nextra_args: [--calculate-kv-scales]")
    assert "0.28.0" in finding.message


@pytest.mark.parametrize(("tag", "says"), [
    ("v0.19.1", "older than any release gen has facts for (0.21.0–0.33.0)"),
    ("v0.40.0", "newer than the newest release gen has facts for (0.33.0)"),
])
def test_a_release_gen_does_not_know_is_a_warning(tmp_path: Path, tag: str, says: str) -> None:
    """Too old: unchecked; a newer minor: checked as the newest gen knows."""
    [finding] = _release_findings(tmp_path, f"image: vllm/vllm-openai:{tag}")
    assert finding.rule == "GEN308" and finding.severity is Severity.WARNING
    assert says in finding.message and finding.key_path == "serving.image"


def test_a_patch_gen_has_not_read_is_checked_quietly(tmp_path: Path) -> None:
    """0.33.1 is checked with 0.33.0's facts, without a warning."""
    assert _release_findings(tmp_path, "image: vllm/vllm-openai:v0.33.1") == []
