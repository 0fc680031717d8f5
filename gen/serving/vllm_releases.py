"""vLLM's facts by release: the ``vllm serve`` options, value sets, defaults and batch tiers.

The facts are read from each release's wheel by ``tools/vllm_facts.py`` into
``gen/data/vllm-releases.yaml`` (first release in full, later ones as changes); this module
expands that file once and answers from it. Every fact of a :class:`VllmRelease` holds for
that release and is cited by :meth:`VllmRelease.source` (``vllm-project/vllm <path> @ v<X>``).

Picking the release for an image (:func:`release_for`):

* the exact release when gen knows it (``v0.28.0-cu129`` is 0.28.0: a CUDA variant or a
  ``+local`` suffix does not change vLLM's Python);
* else the newest known release at or below the version asked for, marked
  ``inferred_for=<that version>``: a patch or post release gen has not read (``0.27.2``,
  ``0.27.1.post1``), a pre-release (``0.29.0rc1`` → 0.28.0: the pre-release may already have
  some of 0.29's changes, so an answer for it errs on the older side), or a version newer than
  the newest gen knows (``0.40.0`` → the newest, inferred);
* ``None`` for a version older than the oldest gen knows (0.21.0): gen knows nothing of it,
  and callers must say so rather than apply newer facts.

Flags: vLLM's ``FlexibleArgumentParser`` turns ``_`` into ``-`` in an option's name (up to
its first ``.``, which starts a JSON key), and argparse accepts an unambiguous prefix of a
long option (``allow_abbrev`` is left on). :meth:`VllmRelease.resolve_flag` does the same.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, NamedTuple

from gen._data import load_data
from gen.caches import once
from gen.errors import VersionError

__all__ = [
    "BatchTier",
    "FlagHistory",
    "VllmRelease",
    "VllmVersion",
    "expand",
    "flag_history",
    "known_releases",
    "normalize_flag",
    "release_for",
]

REPOSITORY = "vllm-project/vllm"
GIB = 1 << 30
_SETS = ("flags", "quantizations", "kv_cache_dtypes", "dtypes")
_MAPPINGS = ("defaults", "sources")
_WHOLE = ("batch_defaults", "cuda_graph_capture")
_VERSION = re.compile(
    r"v?(?P<major>\d+)\.(?P<minor>\d+)(?:\.(?P<patch>\d+))?(?P<extra>(?:\.\d+)*)"
    r"(?:\.?(?P<stage>rc|a|b)(?P<stage_number>\d+))?"
    r"(?:\.post(?P<post>\d+))?(?:\.dev(?P<dev>\d+))?"
    r"(?:[-+][0-9A-Za-z.\-_]*)?")
_STAGE_RANK = {"a": 1, "b": 2, "rc": 3}


@dataclass(frozen=True, order=True)
class VllmVersion:
    """A vLLM version as PEP 440 orders it (as pip does):
    ``0.28.0.dev1 < 0.28.0rc1.dev2 < 0.28.0rc1 < 0.28.0 < 0.28.0.post1.dev1 < 0.28.0.post1``.

    Attributes:
        release: ``(major, minor, patch)``.
        stage: ``(rank, number)``: alpha, beta and release candidate rank 1–3, the final
            release ``(4, 0)``; a development build of the final release, ``(0, 0)``.
        post: the ``.postN`` number, -1 when none.
        dev: ``(0, N)`` for ``.devN``, ``(1, 0)`` when none (a dev build comes first).
        text: the version as written in a release name (``0.28.0rc1``; no ``v``, no suffix).
    """

    release: tuple[int, int, int]
    stage: tuple[int, int] = (4, 0)
    post: int = -1
    dev: tuple[int, int] = (1, 0)
    text: str = field(default="", compare=False)

    @classmethod
    def parse(cls, text: str) -> VllmVersion:
        """A version from a release name or an image tag (``0.33.0``, ``v0.28.0-cu129``).

        Raises:
            VersionError: ``text`` is not ``[v]MAJOR.MINOR[.PATCH]`` with optional PEP 440
                pre, post and dev parts and a ``-variant`` or ``+local`` suffix.
        """
        match = _VERSION.fullmatch(text.strip())
        if match is None:
            raise VersionError(f"{text!r} is not a vLLM version (expected e.g. 0.33.0 or "
                               "v0.28.0-cu129)")
        release = (int(match["major"]), int(match["minor"]), int(match["patch"] or 0))
        post = int(match["post"]) if match["post"] is not None else -1
        dev = (0, int(match["dev"])) if match["dev"] is not None else (1, 0)
        if match["stage"]:
            stage = (_STAGE_RANK[match["stage"]], int(match["stage_number"]))
        elif post < 0 and match["dev"] is not None:
            stage = (0, 0)
        else:
            stage = (4, 0)
        # A fourth release number (0.10.1.1) is kept in the text, not in the order.
        written = ".".join(map(str, release)) + (match["extra"] or "")
        if match["stage"]:
            written += f"{match['stage']}{match['stage_number']}"
        if post >= 0:
            written += f".post{post}"
        if match["dev"] is not None:
            written += f".dev{match['dev']}"
        return cls(release, stage, post, dev, written)

    @property
    def is_prerelease(self) -> bool:
        """A development build, alpha, beta or release candidate."""
        return self.stage < (4, 0) or self.dev < (1, 0)

    def __str__(self) -> str:
        return self.text or ".".join(map(str, self.release))


@dataclass(frozen=True)
class BatchTier:
    """One device tier of vLLM's ``get_batch_defaults``: the first tier a device matches wins.

    Attributes:
        min_memory_gib: the device's total memory (what CUDA reports, in GiB) must be at
            least this; 0 when the tier has no floor.
        name_excludes: lower-case substrings the device name must not contain (``a100``).
        capability_excludes: compute capabilities that do not match (GB10 is ``(12, 1)``).
        api_server: ``(max_num_seqs, max_num_batched_tokens)`` for ``vllm serve``.
        offline: the same for the offline ``LLM`` class.
    """

    min_memory_gib: int
    name_excludes: tuple[str, ...]
    capability_excludes: tuple[tuple[int, int], ...]
    api_server: tuple[int, int]
    offline: tuple[int, int]

    def matches(self, memory_bytes: int, name: str,
                compute_capability: tuple[int, int] | None) -> bool:
        """Whether a device with this memory, name and capability falls in the tier."""
        return (memory_bytes >= self.min_memory_gib * GIB
                and not any(part in name.lower() for part in self.name_excludes)
                and compute_capability not in self.capability_excludes)


class FlagHistory(NamedTuple):
    """When a ``vllm serve`` option came and went, among the releases gen knows.

    ``added`` is the first known release that has it (the oldest known release means "then
    or earlier"), None when no known release has it; ``removed`` is the release after the
    last one that has it, None when the newest known release still has it.
    """

    added: VllmVersion | None
    removed: VllmVersion | None


@dataclass(frozen=True)
class VllmRelease:
    """What gen knows of one vLLM release.

    Attributes:
        version: the release.
        released: its PyPI upload day (UTC).
        flags: every option string ``vllm serve`` accepts, short aliases and the ``--no-x``
            (and from 0.33, ``--disable-x``/``--enable-x``) forms of boolean options included.
        quantizations: the ``--quantization`` methods (``QuantizationMethods``).
        kv_cache_dtypes: the ``--kv-cache-dtype`` values (``CacheDType``).
        dtypes: the ``--dtype`` values (``ModelDType``).
        gpu_memory_utilization: ``CacheConfig.gpu_memory_utilization``'s default.
        block_size: ``CacheConfig.DEFAULT_BLOCK_SIZE`` (an attention backend may prefer
            another one when ``--block-size`` is not given).
        env_defaults: the defaults of the ``VLLM_*`` variables gen cares about.
        batch_tiers: ``get_batch_defaults``'s GPU tiers, in the order vLLM tests them.
        cuda_graph_limit: the default largest CUDA-graph capture size before vLLM takes
            ``min(max_num_seqs × (1 + speculative tokens) × 2, limit, max_num_batched_tokens)``.
        cuda_graph_limit_by_family: a different limit per compute-capability family
            (``100``, data-centre Blackwell: 1024 from 0.28.0).
        sources: the file(s) in the wheel each group was read from.
        inferred_for: the version asked for when this release was chosen for it without
            being it (see the module docstring); None for an exact match.
    """

    version: VllmVersion
    released: datetime.date
    flags: frozenset[str]
    quantizations: frozenset[str]
    kv_cache_dtypes: frozenset[str]
    dtypes: frozenset[str]
    gpu_memory_utilization: float
    block_size: int
    env_defaults: Mapping[str, bool | int | str | None]
    batch_tiers: tuple[BatchTier, ...]
    cuda_graph_limit: int
    cuda_graph_limit_by_family: Mapping[int, int]
    sources: Mapping[str, tuple[str, ...]]
    inferred_for: VllmVersion | None = None

    @property
    def use_flashinfer_sampler(self) -> bool:
        """``VLLM_USE_FLASHINFER_SAMPLER``'s default."""
        return bool(self.env_defaults["VLLM_USE_FLASHINFER_SAMPLER"])

    @property
    def estimates_cuda_graphs(self) -> bool:
        """``VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS``'s default."""
        return bool(self.env_defaults["VLLM_MEMORY_PROFILER_ESTIMATE_CUDAGRAPHS"])

    @property
    def main_cuda_version(self) -> str:
        """``VLLM_MAIN_CUDA_VERSION``'s default: the CUDA of the unsuffixed image tags."""
        return str(self.env_defaults["VLLM_MAIN_CUDA_VERSION"])

    @property
    def use_v2_model_runner(self) -> bool | None:
        """``VLLM_USE_V2_MODEL_RUNNER``'s default; None: vLLM decides per model."""
        value = self.env_defaults["VLLM_USE_V2_MODEL_RUNNER"]
        return None if value is None else bool(value)

    @property
    def engine_ready_timeout_s(self) -> int:
        """``VLLM_ENGINE_READY_TIMEOUT_S``'s default."""
        return int(self.env_defaults["VLLM_ENGINE_READY_TIMEOUT_S"] or 0)

    def source(self, group: str) -> str:
        """Where a group of facts was read: ``vllm-project/vllm <path>[, <path>] @ v<X>``."""
        return f"{REPOSITORY} {', '.join(self.sources[group])} @ v{self.version}"

    def resolve_flag(self, flag: str) -> str | None:
        """The option ``vllm serve`` reads for ``flag`` (underscores, ``=value``, ``.key``
        and unambiguous prefixes as vLLM's parser takes them); None when it rejects it."""
        name = normalize_flag(flag)
        if name in self.flags:
            return name
        if not name.startswith("--"):
            return None
        candidates = [f for f in self.flags if f.startswith(name)]
        return candidates[0] if len(candidates) == 1 else None

    def batch_defaults(self, *, memory_bytes: int, name: str,
                       compute_capability: tuple[int, int] | None = None,
                       offline: bool = False) -> tuple[int, int]:
        """vLLM's ``(max_num_seqs, max_num_batched_tokens)`` for a device, for ``vllm serve``
        (or with ``offline``, the ``LLM`` class).

        ``memory_bytes`` is the total vLLM reads (``torch.cuda.get_device_properties``: for
        a MIG device, the slice's), ``name`` the CUDA device name (a MIG device keeps its
        GPU's name, e.g. ``NVIDIA A100-SXM4-80GB MIG 3g.40gb``), ``compute_capability`` the
        device's (a MIG device has its GPU's); leave it None when it is unknown, which
        matches no capability exclusion. The TPU and CPU branches of vLLM are not kept.
        """
        for tier in self.batch_tiers:
            if tier.matches(memory_bytes, name, compute_capability):
                return tier.offline if offline else tier.api_server
        raise AssertionError(f"vLLM {self.version}: no batch tier without a condition")

    def cuda_graph_capture_limit(self, compute_capability: tuple[int, int] | None) -> int:
        """The default largest CUDA-graph capture size's cap on a device of this capability.

        A family ``100`` is every ``10.x`` device, as vLLM's ``is_device_capability_family``
        compares ``major`` only.
        """
        if compute_capability is not None:
            for family, limit in self.cuda_graph_limit_by_family.items():
                if family // 10 == compute_capability[0]:
                    return limit
        return self.cuda_graph_limit


def normalize_flag(flag: str) -> str:
    """An option as vLLM's parser names it: ``--max_num_seqs=8`` → ``--max-num-seqs``,
    ``--compilation-config.mode`` → ``--compilation-config``; short options unchanged."""
    name = flag.split("=", 1)[0]
    if not name.startswith("--"):
        return name
    return "--" + name[2:].split(".", 1)[0].replace("_", "-")


def known_releases() -> tuple[VllmRelease, ...]:
    """Every release gen knows, oldest first."""
    return _releases()


def release_for(version: str | VllmVersion) -> VllmRelease | None:
    """The release whose facts apply to ``version`` (see the module docstring).

    Raises:
        VersionError: ``version`` is a string that is not a vLLM version.
    """
    wanted = version if isinstance(version, VllmVersion) else VllmVersion.parse(version)
    releases = _releases()
    below = [r for r in releases if r.version <= wanted]
    if not below:
        return None
    chosen = below[-1]
    return chosen if chosen.version == wanted else replace(chosen, inferred_for=wanted)


def flag_history(flag: str) -> FlagHistory:
    """When ``flag`` (normalised, see :func:`normalize_flag`) was added and removed."""
    name = normalize_flag(flag)
    releases = _releases()
    having = [i for i, r in enumerate(releases) if name in r.flags]
    if not having:
        return FlagHistory(None, None)
    last = having[-1]
    removed = releases[last + 1].version if last + 1 < len(releases) else None
    return FlagHistory(releases[having[0]].version, removed)


def expand(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The data file's releases (first in full, then changes) → each release in full."""
    full: list[dict[str, Any]] = []
    current: dict[str, Any] = {}
    for index, entry in enumerate(entries):
        if index == 0:
            current = {g: entry[g] for g in _SETS + _MAPPINGS + _WHOLE}
        else:
            current = dict(current)
            for group in _SETS:
                change = entry.get(group, {})
                current[group] = sorted((set(current[group]) - set(change.get("removed", [])))
                                        | set(change.get("added", [])))
            for group in _MAPPINGS:
                current[group] = {**current[group], **entry.get(group, {})}
            for group in _WHOLE:
                current[group] = entry.get(group, current[group])
        full.append({"version": entry["version"], "released": entry["released"], **current})
    return full


def _tier(data: Mapping[str, Any]) -> BatchTier:
    def pair(context: Mapping[str, int]) -> tuple[int, int]:
        return int(context["max_num_seqs"]), int(context["max_num_batched_tokens"])

    return BatchTier(
        min_memory_gib=int(data.get("min_memory_gib", 0)),
        name_excludes=tuple(data.get("name_excludes", ())),
        capability_excludes=tuple((int(c[0]), int(c[1]))
                                  for c in data.get("capability_excludes", ())),
        api_server=pair(data["api_server"]), offline=pair(data["offline"]))


def _release(facts: Mapping[str, Any]) -> VllmRelease:
    defaults = facts["defaults"]
    graphs = facts["cuda_graph_capture"]
    return VllmRelease(
        version=VllmVersion.parse(str(facts["version"])),
        released=datetime.date.fromisoformat(str(facts["released"])),
        flags=frozenset(facts["flags"]),
        quantizations=frozenset(facts["quantizations"]),
        kv_cache_dtypes=frozenset(facts["kv_cache_dtypes"]),
        dtypes=frozenset(facts["dtypes"]),
        gpu_memory_utilization=float(defaults["gpu_memory_utilization"]),
        block_size=int(defaults["block_size"]),
        env_defaults=MappingProxyType({k: v for k, v in defaults.items()
                                       if k.startswith("VLLM_")}),
        batch_tiers=tuple(_tier(t) for t in facts["batch_defaults"]["tiers"]),
        cuda_graph_limit=int(graphs["limit"]),
        cuda_graph_limit_by_family=MappingProxyType(
            {int(k): int(v) for k, v in graphs["limit_by_capability_family"].items()}),
        sources=MappingProxyType({k: tuple(v) for k, v in facts["sources"].items()}))


@once
def _releases() -> tuple[VllmRelease, ...]:
    data = load_data("vllm-releases.yaml")
    releases = tuple(_release(f) for f in expand(data["releases"]))
    return tuple(sorted(releases, key=lambda r: r.version))
