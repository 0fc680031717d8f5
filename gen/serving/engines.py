"""Inference engine facts: the container images gen pins, their CUDA runtime, their engine
version, and driver floors.

The lint rule "container CUDA runtime newer than the node driver" (the run-time error
``CUDA driver version is insufficient for CUDA runtime version``) calls
:func:`image_info`, :func:`min_driver_for_cuda` and :func:`driver_satisfies`; the vLLM rules
read the engine version of an image (:attr:`EngineImage.version`) to apply that release's facts
(:mod:`gen.serving.vllm_releases`).

Sources:

* Images: ``vllm/vllm-openai`` on Docker Hub. Since v0.20.0 the unsuffixed release tag is the
  CUDA 13.0 build and ``-cu129`` the CUDA 12.9 build (vLLM PR #39878 "Switch default CUDA to
  13.0"); v0.33.0 still builds CUDA 13.0 by default (vllm-project/vllm ``vllm/envs.py``
  ``VLLM_MAIN_CUDA_VERSION`` = "13.0" @ v0.33.0). The CUDA 12.9 variant gen pins is the newest
  ``-cu129`` tag seen published, v0.29.0-cu129 (pinned by digest in public Dockerfiles); no
  ``-cu129`` tag of 0.31–0.33 was confirmed. Pinned by tag only: no digest was verified here,
  so none is given.
* Driver floors: NVIDIA CUDA Toolkit release notes, table "CUDA Toolkit and Corresponding
  Driver Versions" (Linux x86_64), the GA row of each CUDA minor release. CUDA 13.3's row
  (610.43.02) is from a public project's record of the 13.3 GA (vmafx ADR-0738, 2026-05-28),
  not yet checked against NVIDIA's table.

Why the GA row of the image's ``major.minor``: the ``nvidia/cuda`` base images declare
``NVIDIA_REQUIRE_CUDA=cuda>=X.Y``, which the NVIDIA container toolkit checks against the CUDA
version the node driver supports; the first driver that supports CUDA X.Y is the GA row.
CUDA minor-version compatibility (12.x on ≥ 525.60.13, 13.x on ≥ 580) can run newer 12.x/13.x
runtimes on older drivers of the same major, with limits (no newer PTX JIT); gen does not
rely on it (see :func:`minor_version_floor`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gen.errors import CatalogLookupError, GenError

__all__ = [
    "CUDA_DRIVER_MINIMUMS",
    "EngineImage",
    "compatible_image",
    "default_image",
    "driver_satisfies",
    "engine_images",
    "image_info",
    "min_driver_for_cuda",
    "minor_version_floor",
    "parse_driver_version",
    "vllm_version_of",
]


@dataclass(frozen=True)
class EngineImage:
    """A container image of an inference engine and the CUDA runtime inside it.

    Attributes:
        engine: engine name (``vllm``).
        image: full reference, ``repository:tag``.
        tag: the tag alone.
        cuda_version: CUDA runtime the image ships (``13.0.2``; ``major.minor`` when only the
            tag convention tells it).
        min_driver: lowest NVIDIA Linux driver that runs it (see the module docstring).
        version: the engine release the image runs (``0.33.0``), "" when the tag does not
            say.
        note: where the CUDA version comes from, when it is inferred rather than pinned.
    """

    engine: str
    image: str
    tag: str
    cuda_version: str
    min_driver: str
    version: str = ""
    note: str = ""

    @property
    def repository(self) -> str:
        """The image reference without its tag."""
        return self.image.rsplit(":", 1)[0]


# CUDA major.minor → lowest Linux x86_64 driver (GA row of NVIDIA's release-notes table).
CUDA_DRIVER_MINIMUMS: dict[str, str] = {
    "11.0": "450.51.05",
    "11.1": "455.23",
    "11.2": "460.27.03",
    "11.3": "465.19.01",
    "11.4": "470.42.01",
    "11.5": "495.29.05",
    "11.6": "510.39.01",
    "11.7": "515.43.04",
    "11.8": "520.61.05",
    "12.0": "525.60.13",
    "12.1": "530.30.02",
    "12.2": "535.54.03",
    "12.3": "545.23.06",
    "12.4": "550.54.14",
    "12.5": "555.42.02",
    "12.6": "560.28.03",
    "12.8": "570.26",
    "12.9": "575.51.03",
    "13.0": "580.65.06",
    "13.1": "590.44.01",
    "13.2": "595.45.04",
    "13.3": "610.43.02",
}

# CUDA major → lowest driver of the minor-version-compatibility range (NVIDIA CUDA
# compatibility guide: 11.x ≥ 450.80.02, 12.x ≥ 525.60.13, 13.x ≥ 580).
_MINOR_VERSION_FLOORS: dict[str, str] = {"11": "450.80.02", "12": "525.60.13", "13": "580.65.06"}

_VLLM_REPOSITORY = "vllm/vllm-openai"


def _pinned(component: str, cuda: str) -> EngineImage:
    """An image of gen/data/pins.yaml (the one list of what gen pins)."""
    from gen.pins import pin
    from gen.serving.vllm_releases import VllmVersion

    tag = pin(component).version
    return EngineImage(
        engine="vllm", image=f"{_VLLM_REPOSITORY}:{tag}", tag=tag, cuda_version=cuda,
        min_driver=CUDA_DRIVER_MINIMUMS[cuda], version=str(VllmVersion.parse(tag)),
    )


# Pinned images, in order of preference: the engine's default first.
_IMAGES: tuple[EngineImage, ...] = (
    _pinned("vllm-openai", "13.0"),
    _pinned("vllm-openai-cu129", "12.9"),
)

_DRIVER_RE = re.compile(r"^\s*v?(\d+(?:\.\d+){0,3})\s*$")
_CUDA_RE = re.compile(r"^\s*(\d+)\.(\d+)(?:\.\d+)?\s*$")
_VLLM_TAG_RE = re.compile(
    r"^v(?P<major>\d+)\.(?P<minor>\d+)\.(?P<patch>\d+)(?:\.post\d+)?(?:rc\d+)?"
    r"(?P<suffixes>(?:-[a-z0-9]+)*)$"
)
_CU_SUFFIX_RE = re.compile(r"^cu(\d+)(\d)$")
_REGISTRY_PREFIXES = (
    "docker.io/library/",
    "docker.io/",
    "index.docker.io/",
    "registry-1.docker.io/",
)
# First vLLM release whose unsuffixed tag is the CUDA 13 build (PR #39878).
_VLLM_CUDA13_DEFAULT_FROM = (0, 20, 0)


def engine_images(engine: str) -> tuple[EngineImage, ...]:
    """The pinned images of ``engine``, the default first.

    Raises:
        CatalogLookupError: the engine is unknown.
    """
    found = tuple(i for i in _IMAGES if i.engine == engine.strip().lower())
    if not found:
        known = ", ".join(sorted({i.engine for i in _IMAGES}))
        raise CatalogLookupError(f"unknown engine {engine!r}; known: {known}")
    return found


def default_image(engine: str) -> EngineImage:
    """The image gen uses for ``engine`` unless a profile pins another one.

    Raises:
        CatalogLookupError: the engine is unknown.
    """
    return engine_images(engine)[0]


def compatible_image(engine: str, driver_version: str) -> EngineImage | None:
    """The most preferred pinned image of ``engine`` that a node with this driver can run."""
    for candidate in engine_images(engine):
        if driver_satisfies(driver_version, candidate.min_driver):
            return candidate
    return None


def _strip_registry(image: str) -> str:
    ref = image.strip()
    for prefix in _REGISTRY_PREFIXES:
        if ref.startswith(prefix):
            return ref[len(prefix):]
    return ref


def _vllm_tag(image: str) -> tuple[str, str, re.Match[str]] | None:
    ref = _strip_registry(image).split("@", 1)[0]
    repository, sep, tag = ref.rpartition(":")
    if not sep or "/" in tag or repository != _VLLM_REPOSITORY:
        return None
    match = _VLLM_TAG_RE.match(tag)
    return None if match is None else (repository, tag, match)


def vllm_version_of(image: str) -> str | None:
    """The vLLM release a ``vllm/vllm-openai`` release tag runs (``v0.28.0-cu129`` →
    ``0.28.0``, ``v0.29.0rc1`` → ``0.29.0rc1``), else None: another repository, a floating tag
    or a digest alone."""
    from gen.serving.vllm_releases import VllmVersion

    found = _vllm_tag(image)
    return None if found is None else str(VllmVersion.parse(found[1]))


def image_info(image: str) -> EngineImage | None:
    """What gen knows about a container image reference, or None.

    Pinned images are known exactly. Other ``vllm/vllm-openai`` release tags are read with
    vLLM's tag convention: a ``-cuXYZ`` suffix names the CUDA release; from v0.20.0 on the
    unsuffixed tag is the CUDA 13.0 build. A digest (``@sha256:…``) is ignored when a tag is
    present; a digest alone tells nothing, so it gives None.
    """
    ref = _strip_registry(image).split("@", 1)[0]
    for known in _IMAGES:
        if ref == known.image:
            return known
    found = _vllm_tag(image)
    if found is None:
        return None
    from gen.serving.vllm_releases import VllmVersion

    repository, tag, match = found
    cuda = _cuda_from_suffixes(match.group("suffixes"))
    version = VllmVersion.parse(tag)
    if cuda is None and version.release >= _VLLM_CUDA13_DEFAULT_FROM:
        cuda = "13.0"
    if cuda is None or cuda not in CUDA_DRIVER_MINIMUMS:
        return None
    return EngineImage(
        engine="vllm",
        image=f"{repository}:{tag}",
        tag=tag,
        cuda_version=cuda,
        min_driver=CUDA_DRIVER_MINIMUMS[cuda],
        version=str(version),
        note="CUDA read from vLLM's tag convention, not a pinned fact",
    )


def _cuda_from_suffixes(suffixes: str) -> str | None:
    for part in suffixes.split("-"):
        found = _CU_SUFFIX_RE.match(part)
        if found:
            return f"{found.group(1)}.{found.group(2)}"
    return None


def _major_minor(cuda: str) -> tuple[str, str]:
    match = _CUDA_RE.match(cuda)
    if match is None:
        raise CatalogLookupError(f"not a CUDA version: {cuda!r} (expected e.g. 12.9 or 12.9.1)")
    return match.group(1), match.group(2)


def min_driver_for_cuda(cuda: str) -> str:
    """The lowest NVIDIA Linux driver that runs a CUDA ``cuda`` runtime image.

    ``cuda`` is ``major.minor`` or ``major.minor.patch``; the patch does not change the answer
    (see the module docstring).

    Raises:
        CatalogLookupError: not a CUDA version, or one gen has no driver data for.
    """
    major, minor = _major_minor(cuda)
    key = f"{int(major)}.{int(minor)}"
    try:
        return CUDA_DRIVER_MINIMUMS[key]
    except KeyError:
        known = ", ".join(CUDA_DRIVER_MINIMUMS)
        raise CatalogLookupError(f"no driver data for CUDA {cuda}; known: {known}") from None


def minor_version_floor(cuda: str) -> str | None:
    """The lowest driver of CUDA's minor-version-compatibility range for ``cuda``'s major.

    Below it, a ``cuda`` runtime fails with "CUDA driver version is insufficient for CUDA
    runtime version" whatever the image does; between it and :func:`min_driver_for_cuda` it
    may run, with limits. None for an unknown major.
    """
    major, _ = _major_minor(cuda)
    return _MINOR_VERSION_FLOORS.get(str(int(major)))


def parse_driver_version(version: str) -> tuple[int, ...]:
    """An NVIDIA driver version as a tuple of integers (``580.65.06`` → ``(580, 65, 6)``).

    Raises:
        GenError: the text is not a dotted driver version.
    """
    match = _DRIVER_RE.match(version)
    if match is None:
        raise GenError(f"not an NVIDIA driver version: {version!r} (expected e.g. 580.65.06)")
    return tuple(int(part) for part in match.group(1).split("."))


def driver_satisfies(driver_version: str, minimum: str) -> bool:
    """True when ``driver_version`` is at least ``minimum`` (numeric, field by field).

    Missing trailing fields count as zero, so ``580`` < ``580.65.06``; leading zeros do not
    matter (``580.65.6`` == ``580.65.06``, as the DRA driver normalizes it).

    Raises:
        GenError: either text is not a dotted driver version.
    """
    have = parse_driver_version(driver_version)
    need = parse_driver_version(minimum)
    width = max(len(have), len(need))
    return have + (0,) * (width - len(have)) >= need + (0,) * (width - len(need))
