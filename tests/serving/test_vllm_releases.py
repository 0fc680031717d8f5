"""gen.serving.vllm_releases: versions, the bundled per-release facts, and what they answer."""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from packaging.version import Version

from gen.errors import VersionError
from gen.serving.vllm_releases import (
    VllmVersion,
    flag_history,
    known_releases,
    normalize_flag,
    release_for,
)

DATA = Path(__file__).resolve().parents[2] / "gen" / "data" / "vllm-releases.yaml"
GIB = 1 << 30

_STAGES = st.sampled_from(["", "rc", "a", "b"])
_VERSIONS = st.builds(
    lambda major, minor, patch, stage, number, post, dev: (
        f"{major}.{minor}.{patch}" + (f"{stage}{number}" if stage else "")
        + (f".post{post}" if post is not None else "")
        + (f".dev{dev}" if dev is not None else "")),
    st.integers(0, 1), st.integers(20, 23), st.integers(0, 2), _STAGES, st.integers(0, 2),
    st.none() | st.integers(0, 2), st.none() | st.integers(0, 2))


@given(_VERSIONS, _VERSIONS)
def test_version_order_is_pep_440(a: str, b: str) -> None:
    """VllmVersion orders as pip does (packaging.version)."""
    left, right = VllmVersion.parse(a), VllmVersion.parse(b)
    assert (left < right) == (Version(a) < Version(b))
    assert (left == right) == (Version(a) == Version(b))


@given(_VERSIONS, st.sampled_from(["", "v"]), st.sampled_from(["", "-cu129", "-cu130", "+cpu"]))
def test_parse_reads_image_tags(text: str, prefix: str, suffix: str) -> None:
    """A leading v and a CUDA variant or local suffix do not change the version."""
    version = VllmVersion.parse(prefix + text + suffix)
    assert version == VllmVersion.parse(text)
    assert str(version) == text
    assert version.is_prerelease == Version(text).is_prerelease


@pytest.mark.parametrize("text", ["latest", "nightly", "v1", "0.x.1", "", "0.28.0 rc1"])
def test_parse_refuses_what_is_not_a_version(text: str) -> None:
    """A floating tag is not a version; the error says what was expected."""
    with pytest.raises(VersionError, match="is not a vLLM version"):
        VllmVersion.parse(text)


def test_the_bundled_data_names_a_source_and_a_date_for_every_release() -> None:
    """Each release has an upload day (ascending with the version) and a source per group."""
    raw = yaml.safe_load(DATA.read_text(encoding="utf-8"))
    assert raw["repository"] == "vllm-project/vllm"
    releases = known_releases()
    assert [str(r.version) for r in releases] == [e["version"] for e in raw["releases"]]
    assert [r.released for r in releases] == sorted(r.released for r in releases)
    for release in releases:
        assert isinstance(release.released, datetime.date)
        assert set(release.sources) == {"flags", "quantizations", "kv_cache_dtypes", "dtypes",
                                        "defaults", "batch_defaults", "cuda_graph_capture"}
        for group, paths in release.sources.items():
            assert paths and all(p.startswith("vllm/") and p.endswith(".py") for p in paths)
            assert re.fullmatch(rf"vllm-project/vllm vllm/\S+(, vllm/\S+)* @ v{release.version}",
                                release.source(group))


def test_every_release_from_0_21_to_0_33_is_known() -> None:
    """The 16 releases 0.21.0–0.33.0, patches included (pip index versions vllm)."""
    assert [str(r.version) for r in known_releases()] == [
        "0.21.0", "0.22.0", "0.22.1", "0.23.0", "0.24.0", "0.25.0", "0.25.1", "0.26.0",
        "0.27.0", "0.27.1", "0.28.0", "0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"]


@pytest.mark.parametrize(("flag", "added", "removed"), [
    ("--max-num-partial-prefills", "0.21.0", "0.27.0"),
    ("--max-long-partial-prefills", "0.21.0", "0.27.0"),
    ("--calculate-kv-scales", "0.21.0", "0.28.0"),
    ("--no-calculate-kv-scales", "0.21.0", "0.28.0"),
    ("--override-attention-dtype", "0.21.0", "0.28.0"),
    ("--max-num-scheduled-tokens", "0.26.0", None),
    ("--max-num-queued-reqs", "0.29.0", None),
    ("--max-num-queued-tokens", "0.29.0", None),
    ("--max-num-active-seqs", "0.31.0", None),
    ("--long-prefill-token-threshold-adaptive", "0.31.0", None),
    ("--log-level", "0.31.0", None),
    ("--enable-cumem-allocator", "0.22.0", None),
    ("--disable-prefix-caching", "0.33.0", None),
    ("--no-enable-prefix-caching", "0.21.0", None),
    ("--not-a-vllm-flag", None, None),
])
def test_flag_history_at_the_audited_boundaries(flag: str, added: str | None,
                                                removed: str | None) -> None:
    """The flag changes of the 2026-12 audit, at the release they happened."""
    history = flag_history(flag)
    assert (str(history.added) if history.added else None) == added
    assert (str(history.removed) if history.removed else None) == removed


@pytest.mark.parametrize("flag", [
    "--host", "--port", "--served-model-name", "--max-model-len", "--tensor-parallel-size",
    "--pipeline-parallel-size", "--gpu-memory-utilization", "--max-num-seqs",
    "--max-num-batched-tokens", "--kv-cache-dtype", "--quantization", "--enforce-eager",
    "--shutdown-timeout", "--api-key", "-tp", "-pp", "-q"])
def test_every_release_accepts_the_flags_gen_renders(flag: str) -> None:
    """None of the options gen renders was removed or renamed in 0.21–0.33."""
    assert all(flag in r.flags for r in known_releases())


def test_value_sets_change_where_the_audit_says() -> None:
    """bitsandbytes leaves --quantization in 0.28; 0.33 has 22 --kv-cache-dtype values."""
    assert "bitsandbytes" in release_for("0.27.1").quantizations  # type: ignore[union-attr]
    assert "bitsandbytes" not in release_for("0.28.0").quantizations  # type: ignore[union-attr]
    latest = release_for("0.33.0")
    assert latest is not None and len(latest.kv_cache_dtypes) == 22
    first = release_for("0.21.0")
    assert first is not None
    assert latest.kv_cache_dtypes - first.kv_cache_dtypes == {
        "nvfp4_ds_mla", "octave_k3v3", "octave_k3v3_compact", "octave_k3v4",
        "ultraquant_4bit", "int4_per_token_head", "nvfp4_4over6"}
    assert {"float16", "nvfp4"} <= first.kv_cache_dtypes
    assert first.dtypes == latest.dtypes == {"auto", "half", "float16", "bfloat16", "float",
                                             "float32"}


def test_defaults_gen_cares_about() -> None:
    """0.92 and 16 throughout; MRV2 from off to auto in 0.22; the rest unchanged."""
    for release in known_releases():
        assert release.gpu_memory_utilization == 0.92
        assert release.block_size == 16
        assert release.use_flashinfer_sampler and release.estimates_cuda_graphs
        assert release.main_cuda_version == "13.0"
        assert release.engine_ready_timeout_s == 600
        assert release.use_v2_model_runner is (False if str(release.version) == "0.21.0"
                                                else None)


# (total CUDA reports in GiB, CUDA device name, compute capability) per device
L4 = (22.05, "NVIDIA L4", (8, 9))
A100 = (79.15, "NVIDIA A100-SXM4-80GB", (8, 0))
A100_MIG = (39.38, "NVIDIA A100-SXM4-80GB MIG 3g.40gb", (8, 0))
H100 = (79.18, "NVIDIA H100 80GB HBM3", (9, 0))
H200 = (139.8, "NVIDIA H200", (9, 0))
B200 = (178.4, "NVIDIA B200", (10, 0))
GB10 = (119.7, "NVIDIA GB10", (12, 1))


@pytest.mark.parametrize(("version", "device", "expected"), [
    ("0.21.0", L4, (256, 2048)), ("0.21.0", A100, (256, 2048)), ("0.21.0", H100, (1024, 8192)),
    ("0.21.0", B200, (1024, 8192)), ("0.21.0", GB10, (1024, 8192)),
    ("0.27.1", B200, (1024, 8192)),
    ("0.28.0", B200, (1024, 16384)), ("0.28.0", H200, (1024, 8192)),
    ("0.32.0", GB10, (1024, 8192)),
    ("0.33.0", L4, (256, 2048)), ("0.33.0", A100, (256, 2048)), ("0.33.0", H100, (1024, 8192)),
    ("0.33.0", B200, (1024, 16384)), ("0.33.0", GB10, (256, 2048)),
    ("0.33.0", A100_MIG, (256, 2048)),
])
def test_batch_defaults_per_release(version: str, device: tuple[float, str, tuple[int, int]],
                                    expected: tuple[int, int]) -> None:
    """vllm serve's (max_num_seqs, max_num_batched_tokens): tiers of 70 and (from 0.28) 160
    GiB, A100 by name, GB10 (cc 12.1) kept small from 0.33."""
    memory, name, capability = device
    release = release_for(version)
    assert release is not None
    assert release.batch_defaults(memory_bytes=int(memory * GIB), name=name,
                                  compute_capability=capability) == expected


def test_offline_batch_defaults_and_the_boundary() -> None:
    """The LLM class has its own column; the floors are inclusive, in GiB."""
    release = release_for("0.33.0")
    assert release is not None
    assert release.batch_defaults(memory_bytes=70 * GIB, name="x", offline=True) == (1024, 16384)
    assert release.batch_defaults(memory_bytes=70 * GIB - 1, name="x") == (256, 2048)
    assert release.batch_defaults(memory_bytes=160 * GIB, name="NVIDIA A100") == (1024, 16384)


@pytest.mark.parametrize(("version", "capability", "limit"), [
    ("0.27.1", (10, 0), 512), ("0.28.0", (10, 0), 1024), ("0.33.0", (10, 3), 1024),
    ("0.33.0", (9, 0), 512), ("0.33.0", (12, 0), 512), ("0.33.0", None, 512)])
def test_cuda_graph_capture_limit(version: str, capability: tuple[int, int] | None,
                                  limit: int) -> None:
    """Data-centre Blackwell (10.x) captures up to 1024 tokens from 0.28, others 512."""
    release = release_for(version)
    assert release is not None and release.cuda_graph_capture_limit(capability) == limit


@pytest.mark.parametrize(("asked", "chosen", "inferred"), [
    ("0.33.0", "0.33.0", False), ("v0.28.0-cu129", "0.28.0", False),
    ("0.27.2", "0.27.1", True), ("0.27.1.post1", "0.27.1", True),
    ("0.29.0rc1", "0.28.0", True), ("v0.40.0", "0.33.0", True), ("1.0.0", "0.33.0", True),
    ("0.21.0", "0.21.0", False)])
def test_release_for_picks_the_newest_at_or_below(asked: str, chosen: str,
                                                  inferred: bool) -> None:
    """An unknown version gets the newest known release not after it, marked inferred."""
    release = release_for(asked)
    assert release is not None and str(release.version) == chosen
    assert (release.inferred_for is not None) is inferred
    if inferred:
        assert release.inferred_for == VllmVersion.parse(asked)


@pytest.mark.parametrize("asked", ["0.20.2", "0.21.0rc1", "0.9.2"])
def test_release_for_knows_nothing_before_0_21(asked: str) -> None:
    """Older than the oldest known release: no answer, rather than newer facts."""
    assert release_for(asked) is None


@pytest.mark.parametrize(("flag", "name"), [
    ("--max_num_seqs", "--max-num-seqs"), ("--max-num-seqs=8", "--max-num-seqs"),
    ("--compilation_config.mode=3", "--compilation-config"), ("-tp", "-tp")])
def test_normalize_flag_as_vllms_parser(flag: str, name: str) -> None:
    """Underscores become dashes up to the first dot; a value after = is not the name."""
    assert normalize_flag(flag) == name


def test_resolve_flag_takes_unambiguous_prefixes() -> None:
    """argparse's allow_abbrev: a unique prefix is the option; an ambiguous one is refused."""
    release = release_for("0.33.0")
    assert release is not None
    assert release.resolve_flag("--max_num_seqs=4") == "--max-num-seqs"
    assert release.resolve_flag("--gpu-memory-util") == "--gpu-memory-utilization"
    assert release.resolve_flag("--max-num") is None
    assert release.resolve_flag("--calculate-kv-scales") is None
    assert release_for("0.27.1").resolve_flag("--calculate-kv-scales")  # type: ignore[union-attr]


def test_the_docs_example_runs_as_shown() -> None:
    """docs/vllm-versions.md: its example session prints what the doc shows."""
    import doctest

    doc = (Path(__file__).resolve().parents[2] / "docs" / "vllm-versions.md").read_text(
        encoding="utf-8")
    block = re.search(r"<!-- vllm-versions-example -->\n```pycon\n(.*?)```", doc, re.DOTALL)
    assert block is not None
    test = doctest.DocTestParser().get_doctest(block.group(1), {}, "vllm-versions.md",
                                               "docs/vllm-versions.md", 0)
    assert len(test.examples) >= 10
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
