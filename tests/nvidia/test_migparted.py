"""mig-parted configs: the strict model, the builder, YAML, strategy and resource names."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gen.errors import MigPartedConfigError
from gen.nvidia.gpus import gpu_catalog
from gen.nvidia.mig import check_layout
from gen.nvidia.migparted import (
    LayoutEntry,
    all_profile_config_name,
    build_mig_parted_config,
    choose_strategy,
    device_filter_for,
    parse_mig_parted_yaml,
    render_mig_parted_yaml,
)

CATALOG = gpu_catalog()
H100 = CATALOG.lookup("h100-sxm5-80gb")
A100 = CATALOG.lookup("a100-sxm4-40gb")


def _round_trip(config: dict[str, Any]) -> dict[str, Any]:
    model = parse_mig_parted_yaml(render_mig_parted_yaml(config))
    return model.model_dump(by_alias=True, exclude_none=True)


def test_defaults_are_added_first() -> None:
    """all-disabled and all-enabled come first, then configs in name order."""
    config = build_mig_parted_config(
        {
            "zeta": [LayoutEntry("all", True, {"7g.80gb": 1})],
            "alpha": [LayoutEntry("all", True, {"3g.40gb": 2})],
        }
    )
    assert list(config["mig-configs"]) == ["all-disabled", "all-enabled", "alpha", "zeta"]
    assert config["mig-configs"]["all-disabled"] == [{"devices": "all", "mig-enabled": False}]
    assert config["mig-configs"]["all-enabled"] == [
        {"devices": "all", "mig-enabled": True, "mig-devices": {}}
    ]


def test_given_defaults_are_kept() -> None:
    """A caller's own all-disabled entry is used instead of the default one."""
    config = build_mig_parted_config({"all-disabled": [LayoutEntry((0, 1), False)]})
    assert config["mig-configs"]["all-disabled"] == [{"devices": [0, 1], "mig-enabled": False}]


def test_round_trip_mixed_node() -> None:
    """A per-model, per-index config survives render → parse → dump unchanged."""
    config = build_mig_parted_config(
        {
            "balanced": [
                LayoutEntry(
                    "all", True, {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}, device_filter_for(H100)
                ),
                LayoutEntry(
                    "all", True, {"1g.5gb": 2, "2g.10gb": 1, "3g.20gb": 1}, device_filter_for(A100)
                ),
            ],
            "half": [LayoutEntry((0, 1), True, {"3g.40gb": 2}), LayoutEntry((2, 3), False)],
        }
    )
    assert _round_trip(config) == config


def test_yaml_quotes_profiles_and_filters() -> None:
    """Profile keys and device filters are double-quoted; output is stable."""
    config = build_mig_parted_config(
        {"x": [LayoutEntry("all", True, {"1g.10gb+me": 1}, device_filter_for(H100))]}
    )
    text = render_mig_parted_yaml(config)
    assert '"1g.10gb+me": 1' in text
    assert 'device-filter: "0x233010DE"' in text
    assert text.startswith("version: v1\nmig-configs:\n")
    assert render_mig_parted_yaml(config) == text


def test_overlapping_entries_rejected() -> None:
    """Two entries that can match one GPU are refused."""
    with pytest.raises(MigPartedConfigError, match="entries 0 and 1"):
        build_mig_parted_config(
            {"x": [LayoutEntry("all", True, {"7g.80gb": 1}), LayoutEntry((0,), False)]}
        )
    with pytest.raises(MigPartedConfigError, match="entries 0 and 1"):
        build_mig_parted_config(
            {"x": [LayoutEntry((0, 1), True, {"7g.80gb": 1}), LayoutEntry((1, 2), False)]}
        )


def test_disjoint_entries_accepted() -> None:
    """Different filters, or different indexes, make entries disjoint."""
    by_filter = build_mig_parted_config(
        {
            "x": [
                LayoutEntry("all", True, {"7g.80gb": 1}, device_filter_for(H100)),
                LayoutEntry("all", True, {"7g.40gb": 1}, device_filter_for(A100)),
            ]
        }
    )
    by_index = build_mig_parted_config(
        {"y": [LayoutEntry((0,), True, {"7g.80gb": 1}), LayoutEntry((1,), False)]}
    )
    assert len(by_filter["mig-configs"]["x"]) == 2
    assert len(by_index["mig-configs"]["y"]) == 2


def test_builder_checks_layouts_of_known_gpus() -> None:
    """An entry filtered to a catalog GPU must hold a valid layout for that GPU."""
    with pytest.raises(MigPartedConfigError, match="h100-sxm5-80gb: max-count"):
        build_mig_parted_config(
            {"x": [LayoutEntry("all", True, {"3g.40gb": 3}, device_filter_for(H100))]}
        )
    with pytest.raises(MigPartedConfigError, match="does not exist"):
        build_mig_parted_config(
            {"x": [LayoutEntry("all", True, {"1g.5gb": 1}, device_filter_for(H100))]}
        )


@pytest.mark.parametrize(
    "entry",
    [
        LayoutEntry("all", False, {"1g.10gb": 1}),
        LayoutEntry("all", True, {"1g.10gb": 0}),
        LayoutEntry("all", True, {"big": 1}),
        LayoutEntry("all", True, {"1g.10gb": 1}, ("0x2330",)),
        LayoutEntry((-1,), True, {"1g.10gb": 1}),
    ],
)
def test_builder_rejects_bad_entries(entry: LayoutEntry) -> None:
    """Entries mig-parted would reject never leave the builder."""
    with pytest.raises(MigPartedConfigError):
        build_mig_parted_config({"x": [entry]})


def test_builder_rejects_bad_config_names() -> None:
    """Config names must be usable as the nvidia.com/mig.config label value."""
    with pytest.raises(MigPartedConfigError, match="label value"):
        build_mig_parted_config({"has space": [LayoutEntry("all", False)]})


@pytest.mark.parametrize(
    "text",
    [
        "version: v2\nmig-configs: {a: [{devices: all, mig-enabled: false}]}\n",
        "mig-configs: {a: [{devices: all, mig-enabled: false}]}\n",
        "version: v1\nmig-configs: {}\n",
        "version: v1\nmig-configs: {a: []}\n",
        "version: v1\nextra: 1\nmig-configs: {a: [{devices: all, mig-enabled: false}]}\n",
        "version: v1\nmig-configs: {a: [{devices: some, mig-enabled: false}]}\n",
        "version: v1\nmig-configs: {a: [{devices: all}]}\n",
        "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true}]}\n",
        "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: 'yes', mig-devices: {}}]}\n",
        "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: false, typo: 1}]}\n",
        (
            "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true,"
            " mig-devices: {'1g.10gb': -1}}]}\n"
        ),
        (
            "version: v1\nmig-configs: {a: [{devices: all, mig-enabled: true,"
            " mig-devices: {'1g.10gb': 1}, device-filter: '2330'}]}\n"
        ),
        "version: v1\nmig-configs: [\n",
    ],
)
def test_strict_model_rejects(text: str) -> None:
    """The model rejects what mig-parted's parser rejects (and malformed YAML)."""
    with pytest.raises(MigPartedConfigError):
        parse_mig_parted_yaml(text)


def test_strict_model_accepts_reference_forms() -> None:
    """Filter strings, filter lists, subsystem filters and empty mig-devices are accepted."""
    model = parse_mig_parted_yaml(
        "version: v1\n"
        "mig-configs:\n"
        "  all-enabled: [{devices: all, mig-enabled: true, mig-devices: {}}]\n"
        "  a:\n"
        '    - device-filter: ["0x233010DE", "0x233110de"]\n'
        "      devices: [0, 1]\n"
        "      mig-enabled: true\n"
        '      mig-devices: {"1g.10gb": 7}\n'
        '    - device-filter: "0x20B010DE:0x145010DE"\n'
        "      devices: all\n"
        "      mig-enabled: true\n"
        '      mig-devices: {"1g.5gb": 7, "2g.10gb": 0}\n'
    )
    entries = model.mig_configs["a"]
    assert entries[0].filters() == ("0x233010DE", "0x233110de")
    assert entries[1].devices == "all"


@settings(max_examples=100, deadline=None)
@given(st.data())
def test_round_trip_property(data: st.DataObject) -> None:
    """Any valid built config round-trips through YAML and the strict model."""
    gpus = [g for g in CATALOG.all() if g.mig_capable]
    chosen = data.draw(
        st.lists(
            st.sampled_from(gpus), min_size=1, max_size=3, unique_by=lambda g: g.pci_device_ids
        )
    )
    entries = []
    for gpu in chosen:
        profile = data.draw(st.sampled_from(gpu.mig_profiles))
        count = data.draw(st.integers(1, profile.max_count))
        assert check_layout(gpu, {profile.name: count}).valid
        entries.append(LayoutEntry("all", True, {profile.name: count}, device_filter_for(gpu)))
    name = data.draw(st.from_regex(r"[a-z][a-z0-9-]{0,20}[a-z0-9]", fullmatch=True))
    config = build_mig_parted_config({name: entries})
    assert _round_trip(config) == config


def test_device_filter_form() -> None:
    """Device filters are 0xDDDD10DE with uppercase hex, one per PCI id."""
    assert device_filter_for(H100) == ("0x233010DE",)
    assert device_filter_for(CATALOG.lookup("a100-pcie-40gb")) == ("0x20B110DE", "0x20F110DE")
    assert device_filter_for(CATALOG.lookup("gb300")) == ("0x31C210DE",)


def test_all_profile_config_name() -> None:
    """Config names follow the all-<profile> convention with + written as ."""
    assert all_profile_config_name("1g.10gb+me") == "all-1g.10gb.me"
    assert all_profile_config_name("1g.24gb+me.all") == "all-1g.24gb.me.all"
    assert all_profile_config_name("1g.24gb-me") == "all-1g.24gb-me"


def test_choose_strategy() -> None:
    """single only when every MIG node is uniform; anything else is mixed."""
    uniform = [{"1g.10gb": 7}, {"1g.10gb": 7}]
    assert choose_strategy([uniform, [None, None]]) == "single"
    assert choose_strategy([uniform, [{"3g.40gb": 2}, {"3g.40gb": 2}]]) == "single"
    assert choose_strategy([]) == "single"
    assert choose_strategy([[{"1g.10gb": 2, "3g.40gb": 1}]]) == "mixed"
    assert choose_strategy([[{"1g.10gb": 7}, {"3g.40gb": 2}]]) == "mixed"
    assert choose_strategy([[{"1g.10gb": 7}, None]]) == "mixed"
    assert choose_strategy([[{"1g.10gb": 7}, {}]]) == "mixed"
    assert choose_strategy([[{"1g.10gb": 7, "3g.40gb": 0}]]) == "single"
