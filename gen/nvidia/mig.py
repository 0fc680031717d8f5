"""MIG layout validation: is a set of GPU instances physically possible on one GPU, and where.

A layout is a mapping ``profile name -> count`` for ONE GPU. Nodes whose GPUs carry
different layouts (per GPU index) are checked one index at a time; nothing here assumes
that all GPUs of a node agree.

The rules, each reported under its own name in the error text:

``profile``     every name exists on that GPU (names are per GPU model);
``max-count``   no profile exceeds its per-GPU maximum;
``media``       at most one ``+me``/``+me.all`` instance per GPU (INFERRED from engine counts:
                the GPU has one OFA and ``+me`` takes it; not a documented rule);
``compute``     the compute slices of all instances fit the GPU's compute slices;
``placement``   a start from each profile's allowed starts, with no two instances sharing a
                placement unit (backtracking search, largest instances first, so the
                answer is deterministic);
``driver``      per-profile minimum drivers, and the 4g + 3g combination (R510).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gen.caches import memoize
from gen.errors import LayoutSyntaxError, MIGLayoutError
from gen.nvidia.gpus import GPU, MIGProfile

__all__ = [
    "LayoutCheck",
    "MIGDevice",
    "Placement",
    "check_layout",
    "is_profile_name",
    "mig_devices",
    "parse_layout_args",
]

# go-nvlib's grammar: [<C>c.]<G>g.<GB>gb, then "+attr[,attr]" or "-attr".
_ATTR = r"[A-Za-z](?:[A-Za-z0-9.]*[A-Za-z0-9])?"
_PROFILE_RE = re.compile(rf"^(?:\d+c\.)?\d+g\.\d+gb(?:\+{_ATTR}(?:,{_ATTR})*|-{_ATTR})?$")
_CI_PROFILE_RE = re.compile(r"^\d+c\.")
_DRIVER_RE = re.compile(r"^[Rr]?(\d+)(?:\.(\d+))?(?:\.(\d+))?$")

# The 4g + 3g combination ("(4 memory, 4 compute) and (4 memory, 3 compute)") needs R510.
_COMBO_4G_3G_MIN_DRIVER = "510"


def is_profile_name(name: str) -> bool:
    """True when ``name`` follows mig-parted's profile grammar (format only)."""
    return _PROFILE_RE.match(name) is not None


@dataclass(frozen=True)
class Placement:
    """Where one GPU instance sits: its first placement unit and how many it spans."""

    profile: str
    start: int
    size: int

    def to_json(self) -> dict[str, Any]:
        """``{"profile", "start", "size"}``."""
        return {"profile": self.profile, "start": self.start, "size": self.size}


@dataclass(frozen=True)
class LayoutCheck:
    """The verdict on one GPU's layout: placements when valid, the failed rules when not."""

    gpu: GPU
    valid: bool
    placements: tuple[Placement, ...]
    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    driver_errors: tuple[str, ...] = ()
    """The errors (also in ``errors``) that a newer node driver would fix, not the layout."""

    def to_json(self) -> dict[str, Any]:
        """The documented JSON form (``gen mig check --json``)."""
        return {
            "gpu": self.gpu.id,
            "valid": self.valid,
            "placements": [p.to_json() for p in self.placements],
            "errors": list(self.errors),
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class MIGDevice:
    """One MIG device of a node's inventory (what a DRA driver would announce)."""

    profile: str
    parent_index: int
    start: int
    size: int
    compute_slices: int
    memory_mib: int
    memory_measured: bool
    sms: int | None
    copy_engines: int | None
    decoders: int | None
    encoders: int | None
    jpegs: int | None
    ofas: int | None
    gi_profile_id: int | None
    memory_slices: tuple[int, ...]


def parse_layout_args(args: Sequence[str]) -> dict[str, int]:
    """``["1g.10gb=2", "3g.40gb=1"]`` → ``{"1g.10gb": 2, "3g.40gb": 1}``; zero counts kept."""
    counts: dict[str, int] = {}
    for arg in args:
        name, sep, count_text = arg.partition("=")
        name, count_text = name.strip(), count_text.strip()
        if not sep or not name or not count_text:
            raise LayoutSyntaxError(f"{arg!r}: expected PROFILE=COUNT, e.g. 1g.10gb=2")
        if not is_profile_name(name):
            raise LayoutSyntaxError(
                f"{arg!r}: {name!r} is not a MIG profile name (<G>g.<GB>gb[+attr|-attr])"
            )
        if not count_text.isdigit():
            raise LayoutSyntaxError(f"{arg!r}: count must be a whole number ≥ 0")
        if name in counts:
            raise LayoutSyntaxError(f"{arg!r}: profile {name!r} given twice")
        counts[name] = int(count_text)
    return counts


def check_layout(
    gpu: GPU, counts: Mapping[str, int], driver_version: str | None = None
) -> LayoutCheck:
    """Check one GPU's layout against every rule; cached per (GPU, counts, driver)."""
    items = tuple(sorted(counts.items()))
    return _check_cached(gpu, items, driver_version)


def mig_devices(gpu: GPU, check: LayoutCheck, parent_index: int) -> tuple[MIGDevice, ...]:
    """The MIG devices a valid layout creates on GPU ``parent_index``, in placement order."""
    if not check.valid:
        raise MIGLayoutError(f"invalid MIG layout on {gpu.id}: " + "; ".join(check.errors))
    if check.gpu.id != gpu.id:
        raise MIGLayoutError(f"layout was checked for {check.gpu.id}, not {gpu.id}")
    devices = []
    for placement in check.placements:
        profile = gpu.mig_profile(placement.profile)
        assert profile is not None  # a valid check only places known profiles
        devices.append(
            MIGDevice(
                profile=profile.name,
                parent_index=parent_index,
                start=placement.start,
                size=placement.size,
                compute_slices=profile.compute_slices,
                memory_mib=profile.memory_mib,
                memory_measured=profile.memory_measured,
                sms=profile.sms,
                copy_engines=profile.copy_engines,
                decoders=profile.decoders,
                encoders=profile.encoders,
                jpegs=profile.jpegs,
                ofas=profile.ofas,
                gi_profile_id=profile.gi_profile_id,
                memory_slices=tuple(range(placement.start, placement.start + placement.size)),
            )
        )
    return tuple(devices)


# --- the engine ------------------------------------------------------------------------


@memoize(maxsize=4096)
def _check_cached(
    gpu: GPU, items: tuple[tuple[str, int], ...], driver_version: str | None
) -> LayoutCheck:
    errors: list[str] = []
    warnings: list[str] = []
    driver_errors: list[str] = []

    def verdict(placements: tuple[Placement, ...] = ()) -> LayoutCheck:
        return LayoutCheck(gpu, not errors, placements, tuple(errors), tuple(warnings),
                           tuple(driver_errors))

    if not gpu.mig_capable:
        errors.append(f"profile: {gpu.name} ({gpu.id}) is not MIG-capable")
        return verdict()
    negative = [name for name, n in items if n < 0]
    if negative:
        errors.append("max-count: counts must be ≥ 0: " + ", ".join(negative))
        return verdict()
    wanted = [(name, n) for name, n in items if n > 0]
    if not wanted:
        warnings.append("empty layout: MIG enabled with no instances (like 'all-enabled')")
        return verdict()

    profiles = _resolve_profiles(gpu, [name for name, _ in wanted], errors)
    if errors:
        return verdict()
    layout = {profiles[name]: n for name, n in wanted}
    _check_driver(gpu, layout, driver_version, driver_errors, warnings)
    errors.extend(driver_errors)
    _warn_unverified_combinations(layout, warnings)

    structural = _structural_errors(gpu, layout)
    if structural:
        errors.extend(structural)
        hint = _nearby_layouts(gpu, layout)
        if hint:
            errors.append(hint)
        return verdict()
    placements = _place(gpu, layout)
    assert placements is not None  # _structural_errors ran the same search
    return verdict(placements)


def _resolve_profiles(gpu: GPU, names: list[str], errors: list[str]) -> dict[str, MIGProfile]:
    found: dict[str, MIGProfile] = {}
    known = gpu.mig_profile_names
    for name in names:
        profile = gpu.mig_profile(name)
        if profile is not None:
            found[name] = profile
            continue
        message = f"profile: {name!r} does not exist on {gpu.name} ({gpu.id})"
        if _CI_PROFILE_RE.match(name):
            message += "; compute-instance profiles are not checked, use the GPU-instance profile"
        near = difflib.get_close_matches(name, known, n=3, cutoff=0.6)
        if near:
            message += "; did you mean " + ", ".join(near) + "?"
        message += "; known: " + ", ".join(known)
        errors.append(message)
    return found


def _structural_errors(gpu: GPU, layout: Mapping[MIGProfile, int]) -> list[str]:
    """Count, media, compute and placement rules (no names, no driver)."""
    errors = []
    for profile, n in layout.items():
        if n > profile.max_count:
            errors.append(
                f"max-count: {profile.name} ×{n} exceeds its maximum of "
                f"{profile.max_count} per GPU on {gpu.id}"
            )
    media = sum(n for p, n in layout.items() if p.has_media_extension)
    if media > 1:
        errors.append(
            f"media: {media} +me/+me.all instances, at most 1 per GPU (inferred from the MIG "
            "User Guide engine counts: the GPU has one OFA and each +me instance takes it)"
        )
    compute = sum(p.compute_slices * n for p, n in layout.items())
    if compute > gpu.mig_compute_slices:
        errors.append(
            f"compute: the layout needs {compute} compute slices, {gpu.id} has "
            f"{gpu.mig_compute_slices}"
        )
    if not errors and _place(gpu, layout) is None:
        used = sum(p.size * n for p, n in layout.items())
        errors.append(
            f"placement: no non-overlapping placement on the {gpu.mig_units}-unit grid of "
            f"{gpu.id} (the instances span {used} units; allowed starts: "
            + "; ".join(f"{p.name} {list(p.starts)}" for p in layout)
            + ")"
        )
    return errors


def _nearby_layouts(gpu: GPU, layout: Mapping[MIGProfile, int]) -> str:
    """For each profile, the largest count that makes the layout valid, the rest unchanged."""
    options = []
    for profile, n in layout.items():
        for fewer in range(min(n - 1, profile.max_count), -1, -1):
            trial = {p: (fewer if p is profile else c) for p, c in layout.items()}
            trial = {p: c for p, c in trial.items() if c > 0}
            if not trial or not _structural_errors(gpu, trial):
                if fewer == 0:
                    options.append(f"drop {profile.name}")
                else:
                    options.append(f"{profile.name}={fewer} (instead of {n})")
                break
    if not options:
        return ""
    return "hint: valid with the rest unchanged: " + "; or ".join(options)


def _place(gpu: GPU, layout: Mapping[MIGProfile, int]) -> tuple[Placement, ...] | None:
    """Backtracking placement; the first solution in a fixed search order, or None."""
    order = {p.name: i for i, p in enumerate(gpu.mig_profiles)}
    instances = sorted(
        (p for p, n in layout.items() for _ in range(n)),
        key=lambda p: (-p.size, len(p.starts), order[p.name]),
    )
    units = gpu.mig_units
    starts: list[int] = []
    dead: set[tuple[int, int, int]] = set()

    def search(i: int, occupied: int) -> bool:
        if i == len(instances):
            return True
        profile = instances[i]
        # Identical instances take increasing starts: no permutation is tried twice.
        floor = starts[-1] + 1 if i and instances[i - 1] is profile else 0
        if (i, occupied, floor) in dead:
            return False
        block = (1 << profile.size) - 1
        for start in profile.starts:
            if start < floor or start + profile.size > units:
                continue
            mask = block << start
            if occupied & mask:
                continue
            starts.append(start)
            if search(i + 1, occupied | mask):
                return True
            starts.pop()
        dead.add((i, occupied, floor))
        return False

    if not search(0, 0):
        return None
    placed = [Placement(p.name, s, p.size) for p, s in zip(instances, starts, strict=True)]
    return tuple(sorted(placed, key=lambda pl: (pl.start, pl.profile)))


def _parse_driver(text: str) -> tuple[int, ...] | None:
    match = _DRIVER_RE.match(text.strip())
    if match is None:
        return None
    return tuple(int(g) for g in match.groups() if g is not None)


def _check_driver(
    gpu: GPU,
    layout: Mapping[MIGProfile, int],
    driver_version: str | None,
    errors: list[str],
    warnings: list[str],
) -> None:
    needs = [(p.name, p.min_driver) for p in layout if p.min_driver]
    slices = {p.compute_slices for p in layout}
    if gpu.mig_compute_slices == 7 and {3, 4} <= slices:
        needs.append(("the 4g + 3g combination", _COMBO_4G_3G_MIN_DRIVER))
    if not needs:
        return
    if driver_version is None:
        warnings.append(
            "driver: minimums not checked (no driver version given): "
            + ", ".join(f"{what} needs R{minimum}+" for what, minimum in needs)
        )
        return
    have = _parse_driver(driver_version)
    if have is None:
        errors.append(f"driver: cannot read driver version {driver_version!r} (e.g. 570.124.06)")
        return
    for what, minimum in needs:
        want = _parse_driver(minimum)
        if want is not None and have < want:
            errors.append(
                f"driver: {what} needs driver R{minimum} or later; {driver_version} is older"
            )


def _warn_unverified_combinations(layout: Mapping[MIGProfile, int], warnings: list[str]) -> None:
    me_all = [p for p in layout if p.media == "me.all"]
    if me_all and sum(layout.values()) > 1:
        others = [p.name for p in layout if p.media != "me.all" and not p.name.endswith("-me")]
        if others:
            warnings.append(
                f"media: {me_all[0].name} takes all media engines; it probably cannot coexist "
                f"with {', '.join(others)} (inferred, unverified on hardware)"
            )
    variants = sorted(p.name for p in layout if "+" in p.name or "-" in p.name)
    if variants and len(layout) > 1:
        warnings.append(
            "combinations of +me/+me.all/+gfx/-me profiles with others are unverified on "
            "hardware: " + ", ".join(variants)
        )
