"""Tests for gen.serving.engines: pinned engine images, their CUDA runtime and driver floors."""

from __future__ import annotations

import pytest

from gen.errors import CatalogLookupError, GenError
from gen.serving.engines import (
    CUDA_DRIVER_MINIMUMS,
    compatible_image,
    default_image,
    driver_satisfies,
    engine_images,
    image_info,
    min_driver_for_cuda,
    minor_version_floor,
    parse_driver_version,
)


def test_default_vllm_image_is_pinned_by_tag() -> None:
    """The default vLLM image is vllm/vllm-openai pinned to a release tag, never latest."""
    image = default_image("vllm")
    assert image.image == f"vllm/vllm-openai:{image.tag}"
    assert image.tag.startswith("v0.") and "latest" not in image.tag
    assert "@" not in image.image
    assert image.repository == "vllm/vllm-openai"


def test_default_image_min_driver_matches_its_cuda() -> None:
    """Each pinned image's minimum driver is the table's entry for its CUDA release."""
    for image in engine_images("vllm"):
        assert image.min_driver == min_driver_for_cuda(image.cuda_version)


def test_cuda_12_8_needs_a_570_driver() -> None:
    """CUDA 12.8 needs driver ≥ 570.26, 12.9 ≥ 575.51.03, 13.0 ≥ 580.65.06 (NVIDIA table)."""
    assert min_driver_for_cuda("12.8") == "570.26"
    assert min_driver_for_cuda("12.8.1") == "570.26"
    assert min_driver_for_cuda("12.9.1") == "575.51.03"
    assert min_driver_for_cuda("13.0.2") == "580.65.06"


def test_driver_table_is_monotonic() -> None:
    """Newer CUDA releases never need an older driver."""
    versions = sorted(CUDA_DRIVER_MINIMUMS, key=lambda v: tuple(int(p) for p in v.split(".")))
    drivers = [parse_driver_version(CUDA_DRIVER_MINIMUMS[v]) for v in versions]
    assert drivers == sorted(drivers)


def test_unknown_cuda_version_raises() -> None:
    """A CUDA version without driver data, or not a version at all, raises CatalogLookupError."""
    with pytest.raises(CatalogLookupError, match=r"no driver data for CUDA 14\.0"):
        min_driver_for_cuda("14.0")
    with pytest.raises(CatalogLookupError, match="not a CUDA version"):
        min_driver_for_cuda("twelve")


def test_unknown_engine_raises() -> None:
    """An unknown engine name raises CatalogLookupError listing the known engines."""
    with pytest.raises(CatalogLookupError, match="unknown engine 'tgi'; known: vllm"):
        default_image("tgi")


@pytest.mark.parametrize(
    ("driver", "minimum", "ok"),
    [
        ("580.65.06", "580.65.06", True),
        ("580.65.6", "580.65.06", True),
        ("580.95.05", "580.65.06", True),
        ("575.57.08", "580.65.06", False),
        ("580", "580.65.06", False),
        ("595.58.03", "570.26", True),
        ("570.26", "570.124.06", False),
        ("v590.44.01", "590.44.01", True),
    ],
)
def test_driver_satisfies(driver: str, minimum: str, ok: bool) -> None:
    """Driver versions compare numerically, field by field."""
    assert driver_satisfies(driver, minimum) is ok


def test_driver_satisfies_rejects_garbage() -> None:
    """A non-numeric driver version raises GenError with the text."""
    with pytest.raises(GenError, match="not an NVIDIA driver version: 'latest'"):
        driver_satisfies("latest", "570.26")


def test_image_info_knows_pinned_images() -> None:
    """image_info() returns the pinned facts, with or without the docker.io prefix."""
    image = default_image("vllm")
    assert image_info(image.image) == image
    assert image_info(f"docker.io/{image.image}") == image
    assert image_info(f"{image.image}@sha256:{'0' * 64}") == image


@pytest.mark.parametrize(
    ("ref", "cuda"),
    [
        ("vllm/vllm-openai:v0.20.2-cu129", "12.9"),
        ("vllm/vllm-openai:v0.19.1-cu130", "13.0"),
        ("vllm/vllm-openai:v0.26.0", "13.0"),
        ("vllm/vllm-openai:v0.26.0-ubuntu2404", "13.0"),
        ("vllm/vllm-openai:v0.22.0-cu129-ubuntu2404", "12.9"),
    ],
)
def test_image_info_reads_the_vllm_tag_convention(ref: str, cuda: str) -> None:
    """Unpinned vLLM release tags get their CUDA from the -cuXYZ suffix or the ≥0.20 default."""
    info = image_info(ref)
    assert info is not None
    assert info.cuda_version == cuda
    assert info.min_driver == CUDA_DRIVER_MINIMUMS[cuda]
    assert info.note


@pytest.mark.parametrize(
    "ref",
    [
        "vllm/vllm-openai:latest",
        "vllm/vllm-openai:v0.9.2",
        "vllm/vllm-openai",
        "lmcache/vllm-openai:latest",
        "ghcr.io/llm-d/llm-d-cuda:v0.9.0",
    ],
)
def test_image_info_unknown_is_none(ref: str) -> None:
    """Floating tags, old bare tags and other images give None rather than a guess."""
    assert image_info(ref) is None


def test_compatible_image_falls_back_to_cuda_12() -> None:
    """A 575 driver cannot run the CUDA 13 default but can run the -cu129 build."""
    assert compatible_image("vllm", "580.95.05") == default_image("vllm")
    fallback = compatible_image("vllm", "575.57.08")
    assert fallback is not None and fallback.cuda_version.startswith("12.9")
    assert compatible_image("vllm", "535.104.05") is None


def test_minor_version_floor() -> None:
    """The minor-version-compatibility floor is per CUDA major."""
    assert minor_version_floor("12.9.1") == "525.60.13"
    assert minor_version_floor("13.0") == "580.65.06"
    assert minor_version_floor("10.2") is None
