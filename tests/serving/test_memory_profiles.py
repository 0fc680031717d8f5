"""Tests for gen.serving.memory_profiles: vLLM's memory accounting by release range."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gen.errors import VersionError
from gen.serving.memory_profiles import (
    MEMORY_PROFILES,
    PINNED_VLLM_VERSION,
    format_version,
    memory_profile_for,
    model_runner_for,
    parse_vllm_version,
)
from gen.serving.model_catalog import model_catalog

LLAMA_8B = model_catalog().lookup("meta-llama/Llama-3.1-8B-Instruct")
QWEN3_8B = model_catalog().lookup("Qwen/Qwen3-8B")
GPT_OSS = model_catalog().lookup("openai/gpt-oss-20b")
QWEN3_235B_FP8 = model_catalog().lookup("Qwen/Qwen3-235B-A22B-Instruct-2507-FP8")


@pytest.mark.parametrize(("text", "version"), [
    ("0.27.1", (0, 27, 1)), ("0.10.1.1", (0, 10, 1)), ("0.10", (0, 10, 0)), ("v0.33.0", (0, 33, 0)),
])
def test_release_numbers_parse(text: str, version: tuple[int, int, int]) -> None:
    """The corpus's `vllm` field and image tags read as (major, minor, patch)."""
    assert parse_vllm_version(text) == version


@pytest.mark.parametrize("text", ["V1", "", "0", "0.x.1", "latest"])
def test_non_releases_are_refused(text: str) -> None:
    """A field that is not a release number is an error, not a guess."""
    with pytest.raises(VersionError, match="is not a vLLM version"):
        parse_vllm_version(text)


@given(st.tuples(st.integers(0, 2), st.integers(0, 60), st.integers(0, 9)))
def test_every_version_has_exactly_the_latest_row_at_or_below_it(
        version: tuple[int, int, int]) -> None:
    """The table is ordered; a version takes the last row that starts at or before it."""
    row = memory_profile_for(version)
    assert row.since <= version
    later = [r for r in MEMORY_PROFILES if row.since < r.since <= version]
    assert not later
    assert parse_vllm_version(format_version(version)) == version


def test_the_table_is_in_release_order_and_sourced() -> None:
    """Rows start at increasing releases and each names its source."""
    starts = [r.since for r in MEMORY_PROFILES]
    assert starts == sorted(starts) and len(set(starts)) == len(starts)
    assert all(r.source and r.label for r in MEMORY_PROFILES)
    assert memory_profile_for(PINNED_VLLM_VERSION).label == "0.33"


@pytest.mark.parametrize(("model", "version", "runner"), [
    (LLAMA_8B, (0, 21, 0), "v1"),        # V2 off by default
    (QWEN3_8B, (0, 22, 0), "v2"),        # 0.22: Qwen3 only
    (LLAMA_8B, (0, 22, 0), "v1"),
    (LLAMA_8B, (0, 23, 0), "v2"),        # 0.23: Llama added
    (QWEN3_235B_FP8, (0, 24, 0), "v1"),  # MoE, not listed
    (GPT_OSS, (0, 28, 0), "v1"),         # 0.25–0.28: dense models only (or listed MoE)
    (LLAMA_8B, (0, 27, 1), "v2"),
    (GPT_OSS, (0, 29, 0), "v2"),         # 0.29: every model
])
def test_the_runner_follows_the_release(model: object, version: tuple[int, int, int],
                                        runner: str) -> None:
    """VllmConfig.use_v2_model_runner's default, release by release."""
    assert model_runner_for(model, version) == runner  # type: ignore[arg-type]


def test_only_0_33_warms_the_v2_sampler_and_checks_sms() -> None:
    """Model Runner V2's fp32 warm-up pass and the 16-SM FlashInfer floor arrive in 0.33."""
    assert not memory_profile_for((0, 32, 0)).v2_warmup_sampler
    assert memory_profile_for((0, 33, 0)).v2_warmup_sampler
    assert memory_profile_for((0, 32, 0)).flashinfer_min_sms == 0
    assert memory_profile_for((0, 33, 0)).flashinfer_min_sms == 17


def test_free_memory_accounting_from_0_27() -> None:
    """0.27 counts non-KV memory from the drop in free memory, and charges more non-torch."""
    before, after = memory_profile_for((0, 26, 0)), memory_profile_for((0, 27, 0))
    assert "free-memory drop" in after.non_kv_rule and "free" not in before.non_kv_rule
    assert after.non_torch_bytes > before.non_torch_bytes
    assert not memory_profile_for((0, 28, 0)).v2_cudagraph_estimate
    assert memory_profile_for((0, 29, 0)).v2_cudagraph_estimate


def test_the_pinned_release_is_the_pinned_image() -> None:
    """PINNED_VLLM_VERSION is the release of the vllm-openai pin (gen/data/pins.yaml)."""
    from gen.pins import pin
    from gen.serving.vllm_releases import VllmVersion

    assert VllmVersion.parse(pin("vllm-openai").version).release == PINNED_VLLM_VERSION
