"""MIG layout validation: rules, placements, hints, driver minimums and the inventory."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gen.errors import GenError, LayoutSyntaxError, MIGLayoutError
from gen.nvidia.gpus import GPU, gpu_catalog
from gen.nvidia.mig import (
    LayoutCheck,
    check_layout,
    mig_devices,
    parse_layout_args,
)

CATALOG = gpu_catalog()
MIG_GPUS = [g for g in CATALOG.all() if g.mig_capable]


def _gpu(gpu_id: str) -> GPU:
    return CATALOG.lookup(gpu_id)


@st.composite
def layouts(draw: st.DrawFn, gpus: list[GPU] = MIG_GPUS) -> tuple[GPU, dict[str, int]]:
    """A GPU and a random layout of its profiles (counts up to one over the maximum)."""
    gpu = draw(st.sampled_from(gpus))
    names = draw(
        st.lists(st.sampled_from(gpu.mig_profile_names), min_size=1, max_size=4, unique=True)
    )
    counts = {}
    for name in names:
        profile = gpu.mig_profile(name)
        assert profile is not None
        counts[name] = draw(st.integers(min_value=1, max_value=profile.max_count + 1))
    return gpu, counts


def _assert_placements_sound(check: LayoutCheck, counts: dict[str, int]) -> None:
    gpu = check.gpu
    used: set[int] = set()
    for placement in check.placements:
        profile = gpu.mig_profile(placement.profile)
        assert profile is not None
        assert placement.size == profile.size
        assert placement.start in profile.starts
        assert placement.start >= 0 and placement.start + placement.size <= gpu.mig_units
        cells = set(range(placement.start, placement.start + placement.size))
        assert not cells & used, "instances overlap"
        used |= cells
    assert Counter(p.profile for p in check.placements) == Counter(
        {k: v for k, v in counts.items() if v}
    )


def _brute_force_valid(gpu: GPU, counts: dict[str, int]) -> bool:
    """Oracle straight from the rules: try every start for every instance."""
    table = {p.name: p for p in gpu.mig_profiles}
    if any(n not in table for n in counts):
        return False
    if any(c > table[n].max_count for n, c in counts.items()):
        return False
    if sum(c for n, c in counts.items() if table[n].media) > 1:
        return False
    profiles = [table[n] for n, c in counts.items() for _ in range(c)]
    if sum(p.compute_slices for p in profiles) > gpu.mig_compute_slices:
        return False
    for starts in itertools.product(*(p.starts for p in profiles)):
        cells = [u for p, s in zip(profiles, starts, strict=True) for u in range(s, s + p.size)]
        if len(cells) == len(set(cells)) and max(cells, default=0) < gpu.mig_units:
            return True
    return False


@pytest.mark.slow  # a 300-example property run over every MIG GPU
@settings(max_examples=300, deadline=None)
@given(layouts())
def test_placements_are_sound(case: tuple[GPU, dict[str, int]]) -> None:
    """Valid layouts place every instance inside the grid, at allowed starts, without overlap."""
    gpu, counts = case
    check = check_layout(gpu, counts)
    if check.valid:
        assert not check.errors
        _assert_placements_sound(check, counts)
    else:
        assert check.errors
        assert check.placements == ()


@pytest.mark.slow  # a 200-example property run over every MIG GPU
@settings(max_examples=200, deadline=None)
@given(layouts())
def test_matches_brute_force(case: tuple[GPU, dict[str, int]]) -> None:
    """The verdict equals an exhaustive search over every start of every instance."""
    gpu, counts = case
    if sum(counts.values()) > 5:  # keep the oracle cheap
        counts = dict(list(counts.items())[:2])
    assert check_layout(gpu, counts).valid == _brute_force_valid(gpu, counts)


@pytest.mark.slow  # a 200-example property run over every MIG GPU
@settings(max_examples=200, deadline=None)
@given(layouts(), st.data())
def test_removing_an_instance_keeps_valid(
    case: tuple[GPU, dict[str, int]], data: st.DataObject
) -> None:
    """Dropping one instance from a valid layout leaves a valid layout."""
    gpu, counts = case
    if not check_layout(gpu, counts).valid:
        return
    name = data.draw(st.sampled_from(sorted(counts)))
    smaller = {**counts, name: counts[name] - 1}
    assert check_layout(gpu, smaller).valid


@pytest.mark.slow  # a 150-example property run over every MIG GPU
@settings(max_examples=150, deadline=None)
@given(layouts([g for g in MIG_GPUS if g.mig_units == 8]))
def test_s7_arithmetic_equivalence(case: tuple[GPU, dict[str, int]]) -> None:
    """On S7 GPUs, base profiles are valid iff ΣG ≤ 7, Σunits ≤ 8 and max counts hold."""
    gpu, counts = case
    table = {p.name: p for p in gpu.mig_profiles}
    if any("+" in n or "-" in n for n in counts):
        return
    compute = sum(table[n].compute_slices * c for n, c in counts.items())
    units = sum(table[n].size * c for n, c in counts.items())
    within = all(c <= table[n].max_count for n, c in counts.items())
    assert check_layout(gpu, counts).valid == (compute <= 7 and units <= 8 and within)


@pytest.mark.parametrize("gpu", MIG_GPUS, ids=lambda g: g.id)
def test_all_profile_maximum(gpu: GPU) -> None:
    """Every all-<profile> config (the max count) is valid; one more instance is not."""
    for profile in gpu.mig_profiles:
        full = check_layout(gpu, {profile.name: profile.max_count})
        assert full.valid, (profile.name, full.errors)
        _assert_placements_sound(full, {profile.name: profile.max_count})
        over = check_layout(gpu, {profile.name: profile.max_count + 1})
        assert not over.valid, profile.name


@pytest.mark.parametrize(
    ("gpu_id", "profile", "maximum"),
    [
        ("a100-sxm4-40gb", "1g.5gb", 7),
        ("a100-sxm4-40gb", "1g.10gb", 4),
        ("a100-sxm4-40gb", "3g.20gb", 2),
        ("h100-sxm5-80gb", "1g.10gb", 7),
        ("h100-sxm5-80gb", "1g.20gb", 4),
        ("h100-sxm5-80gb", "2g.20gb", 3),
        ("h100-nvl", "1g.24gb", 4),
        ("h200-sxm", "1g.35gb", 4),
        ("gb300", "1g.35gb", 7),
        ("gh200-144gb", "1g.36gb", 4),
        ("b200", "1g.45gb", 4),
        ("gb200", "3g.93gb", 2),
        ("b300", "2g.67gb", 3),
        ("a30", "1g.6gb", 4),
        ("a30", "2g.12gb", 2),
        ("rtx-pro-6000-server", "1g.24gb", 4),
        ("rtx-pro-6000-server", "2g.48gb", 2),
        ("rtx-pro-6000-server", "1g.24gb+gfx", 4),
        ("rtx-pro-6000-server", "1g.24gb+me.all", 1),
    ],
)
def test_reference_maxima(gpu_id: str, profile: str, maximum: int) -> None:
    """The all-<profile> counts of mig-parted's default config are the exact maxima."""
    gpu = _gpu(gpu_id)
    assert check_layout(gpu, {profile: maximum}).valid
    assert not check_layout(gpu, {profile: maximum + 1}).valid


@pytest.mark.parametrize(
    ("gpu_id", "counts"),
    [
        ("h100-sxm5-80gb", {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}),
        ("a100-sxm4-40gb", {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}),
        ("a30", {"1g.6gb": 2, "2g.12gb": 1}),
        ("h200-sxm", {"1g.18gb": 2, "2g.35gb": 1, "3g.71gb": 1}),
        ("b300", {"1g.34gb": 2, "2g.67gb": 1, "3g.135gb": 1}),
        ("rtx-pro-6000-server", {"1g.24gb": 2, "2g.48gb": 1}),
    ],
)
def test_balanced_layouts_valid(gpu_id: str, counts: dict[str, int]) -> None:
    """The all-balanced layouts of mig-parted's default config are valid."""
    check = check_layout(_gpu(gpu_id), counts, driver_version="580.65.06")
    assert check.valid, check.errors
    _assert_placements_sound(check, counts)


def test_largest_first_placement_is_deterministic() -> None:
    """The 3g instance goes to unit 4 and the smaller ones fill the front, every time."""
    gpu = _gpu("h100-sxm5-80gb")
    check = check_layout(gpu, {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1})
    got = [(p.profile, p.start) for p in check.placements]
    assert got == [("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3), ("3g.40gb", 4)]
    again = check_layout(gpu, {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2})
    assert again.placements == check.placements


def test_placement_failure_explains_and_suggests() -> None:
    """A layout that fits by count but not by grid names the rule and a nearby valid layout."""
    check = check_layout(_gpu("h100-sxm5-80gb"), {"3g.40gb": 2, "1g.10gb": 1})
    assert not check.valid
    assert any(e.startswith("placement:") for e in check.errors)
    assert any("drop 1g.10gb" in e for e in check.errors)


def test_max_count_suggests_largest_valid_count() -> None:
    """Too many instances: the error gives the largest valid count."""
    check = check_layout(_gpu("h100-sxm5-80gb"), {"1g.10gb": 9})
    assert any(e.startswith("max-count:") for e in check.errors)
    assert any("1g.10gb=7 (instead of 9)" in e for e in check.errors)


def test_unknown_profile_names_the_gpu_and_its_profiles() -> None:
    """A profile from another GPU is rejected with this GPU's names."""
    check = check_layout(_gpu("h100-sxm5-80gb"), {"1g.5gb": 1})
    assert not check.valid
    (error,) = check.errors
    assert error.startswith("profile:") and "h100-sxm5-80gb" in error and "1g.10gb" in error


def test_non_mig_gpu_is_rejected() -> None:
    """A layout on a GPU without MIG is invalid."""
    check = check_layout(_gpu("l4"), {"1g.6gb": 1})
    assert not check.valid
    assert "not MIG-capable" in check.errors[0]


def test_one_media_instance_per_gpu() -> None:
    """On an A30, 1g.6gb+me and 2g.12gb+me are mutually exclusive (inferred rule, said so)."""
    gpu = _gpu("a30")
    assert check_layout(gpu, {"1g.6gb+me": 1, "2g.12gb": 1}).valid
    check = check_layout(gpu, {"1g.6gb+me": 1, "2g.12gb+me": 1})
    assert not check.valid
    assert any(e.startswith("media:") and "inferred" in e for e in check.errors)


def test_me_all_warns_about_unverified_neighbours() -> None:
    """+me.all next to engine-carrying instances passes with an 'unverified' warning."""
    check = check_layout(_gpu("rtx-pro-6000-server"), {"1g.24gb+me.all": 1, "1g.24gb": 1})
    assert check.valid
    assert any("unverified" in w for w in check.warnings)
    assert not check_layout(
        _gpu("rtx-pro-6000-server"), {"1g.24gb+me.all": 1, "2g.48gb+me.all": 1}
    ).valid


def test_driver_minimum_per_profile() -> None:
    """A100-40GB 1g.10gb needs R525: older drivers fail, newer pass."""
    gpu = _gpu("a100-sxm4-40gb")
    old = check_layout(gpu, {"1g.10gb": 1}, driver_version="515.105.01")
    assert not old.valid
    assert any(e.startswith("driver:") and "R525" in e for e in old.errors)
    assert check_layout(gpu, {"1g.10gb": 1}, driver_version="525.60.13").valid
    assert check_layout(gpu, {"1g.5gb+me": 1}, driver_version="470.57.02").valid
    assert not check_layout(gpu, {"1g.5gb+me": 1}, driver_version="460.91.03").valid


def test_driver_errors_are_told_apart_as_data() -> None:
    """A too-old driver is recorded in driver_errors (GEN102's input); a layout error is not."""
    gpu = _gpu("a100-sxm4-40gb")
    old = check_layout(gpu, {"1g.10gb": 1}, driver_version="515.105.01")
    assert old.driver_errors and set(old.driver_errors) <= set(old.errors)
    too_many = check_layout(gpu, {"1g.10gb": 8}, driver_version="525.60.13")
    assert too_many.errors and not too_many.driver_errors
    both = check_layout(gpu, {"1g.10gb": 8}, driver_version="515.105.01")
    assert both.driver_errors and len(both.errors) > len(both.driver_errors)


def test_driver_minimum_for_4g_with_3g() -> None:
    """The 4g + 3g combination needs R510."""
    gpu = _gpu("a100-sxm4-40gb")
    counts = {"4g.20gb": 1, "3g.20gb": 1}
    assert not check_layout(gpu, counts, driver_version="470.82.01").valid
    assert check_layout(gpu, counts, driver_version="510.47.03").valid
    assert check_layout(gpu, {"3g.20gb": 2}, driver_version="470.82.01").valid


def test_driver_unknown_warns_and_bad_driver_errors() -> None:
    """No driver version: minimums become a warning; an unreadable one is an error."""
    gpu = _gpu("a100-sxm4-40gb")
    unchecked = check_layout(gpu, {"1g.10gb": 1})
    assert unchecked.valid
    assert any("R525" in w for w in unchecked.warnings)
    assert not check_layout(gpu, {"1g.10gb": 1}, driver_version="latest").valid


def test_twelve_unit_grid() -> None:
    """On the RTX PRO 6000, 1g instances sit at units 0, 3, 6, 9 and 2g at 0 and 6."""
    gpu = _gpu("rtx-pro-6000-server")
    quarter = check_layout(gpu, {"1g.24gb": 4})
    assert [p.start for p in quarter.placements] == [0, 3, 6, 9]
    half = check_layout(gpu, {"2g.48gb": 1, "1g.24gb": 2})
    assert [(p.profile, p.start, p.size) for p in half.placements] == [
        ("2g.48gb", 0, 6),
        ("1g.24gb", 6, 3),
        ("1g.24gb", 9, 3),
    ]


def test_empty_and_zero_counts() -> None:
    """Zero counts are ignored; an empty layout is valid with a warning."""
    gpu = _gpu("h100-sxm5-80gb")
    assert check_layout(gpu, {"1g.10gb": 0, "7g.80gb": 1}).placements[0].profile == "7g.80gb"
    empty = check_layout(gpu, {})
    assert empty.valid and empty.placements == () and empty.warnings


def test_results_are_cached() -> None:
    """The same question returns the same (cached) answer object."""
    gpu = _gpu("b200")
    assert check_layout(gpu, {"1g.23gb": 3}) is check_layout(gpu, {"1g.23gb": 3})


def test_to_json_shape() -> None:
    """to_json has the documented keys."""
    data = check_layout(_gpu("h100-sxm5-80gb"), {"7g.80gb": 1}).to_json()
    assert data == {
        "gpu": "h100-sxm5-80gb",
        "valid": True,
        "placements": [{"profile": "7g.80gb", "start": 0, "size": 8}],
        "errors": [],
        "warnings": [],
    }


def test_per_gpu_index_layouts() -> None:
    """Each GPU index of a node is checked and inventoried on its own."""
    gpu = _gpu("h100-sxm5-80gb")
    per_index = {0: {"7g.80gb": 1}, 1: {"3g.40gb": 2}, 2: {"1g.10gb": 7}}
    devices = [
        d
        for index, counts in per_index.items()
        for d in mig_devices(gpu, check_layout(gpu, counts), index)
    ]
    assert Counter(d.parent_index for d in devices) == {0: 1, 1: 2, 2: 7}
    second = [d for d in devices if d.parent_index == 1]
    assert [d.memory_slices for d in second] == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert second[0].memory_mib == 40320 and second[0].sms == 60


def test_mig_devices_refuses_invalid_layouts() -> None:
    """mig_devices() raises on an invalid check, or one made for another GPU."""
    gpu = _gpu("h100-sxm5-80gb")
    with pytest.raises(MIGLayoutError):
        mig_devices(gpu, check_layout(gpu, {"1g.10gb": 8}), 0)
    with pytest.raises(MIGLayoutError):
        mig_devices(_gpu("h200-sxm"), check_layout(gpu, {"1g.10gb": 1}), 0)


def test_parse_layout_args() -> None:
    """PROFILE=COUNT arguments become a mapping."""
    assert parse_layout_args(["1g.10gb=2", "3g.40gb=1", "1g.24gb+me.all=1", "1g.24gb-me=0"]) == {
        "1g.10gb": 2,
        "3g.40gb": 1,
        "1g.24gb+me.all": 1,
        "1g.24gb-me": 0,
    }


@pytest.mark.parametrize(
    "arg",
    [
        "1g.10gb",
        "1g.10gb=",
        "=2",
        "1g.10gb=-1",
        "1g.10gb=two",
        "10gb=1",
        "1g.10gb+=1",
        "1g.10gb+me-x=1",
        "1g.10gb=1.5",
    ],
)
def test_parse_layout_args_rejects(arg: str) -> None:
    """Malformed arguments raise a usage-level GenError."""
    with pytest.raises(LayoutSyntaxError) as info:
        parse_layout_args([arg])
    assert isinstance(info.value, GenError)
    assert info.value.exit_code == 2


def test_parse_layout_args_rejects_duplicates() -> None:
    """The same profile twice is ambiguous."""
    with pytest.raises(LayoutSyntaxError, match="twice"):
        parse_layout_args(["1g.10gb=1", "1g.10gb=2"])


@pytest.mark.parametrize("layout", [
    {"1g.12gb": 7}, {"1g.12gb+me": 1}, {"1g.24gb": 4}, {"2g.24gb": 3}, {"3g.48gb": 2},
    {"4g.48gb": 1}, {"7g.96gb": 1}, {"1g.12gb": 2, "2g.24gb": 1, "3g.48gb": 1},
])
def test_default_config_layouts_for_pg506_96gb(layout: dict[str, int]) -> None:
    """The 96GB layouts of the GPU Operator's default mig-parted config (NVIDIA/mig-parted
    deployments/systemd/config-default.yaml@v0.15.0, whose all-balanced entry filters on
    0x20B610DE) are valid on PG506-96GB."""
    gpu = gpu_catalog().lookup("0x20B610DE")
    assert check_layout(gpu, layout).valid
