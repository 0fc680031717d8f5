"""gen.routing.picker: the endpoint picker's config, flags and RBAC at llm-d-router v0.10.0."""

from __future__ import annotations

import copy
import typing

import pytest

from gen.models.service import PickerProfile
from gen.routing.picker import (
    CONFIG_API_VERSION,
    PROFILE_WEIGHTS,
    config,
    config_problems,
    pd_config,
    picker_args,
    rbac_rules,
)

PROFILES: tuple[PickerProfile, ...] = typing.get_args(PickerProfile)


def test_every_profile_has_a_config_the_release_loads() -> None:
    assert set(PROFILE_WEIGHTS) == set(PROFILES)
    for profile in PROFILES:
        doc = config(profile)
        assert doc["apiVersion"] == CONFIG_API_VERSION == "llm-d.ai/v1alpha1"
        assert config_problems(doc) == []


def test_profiles_weigh_differently() -> None:
    assert len({tuple(sorted(PROFILE_WEIGHTS[p])) for p in PROFILES}) == len(PROFILES)
    assert "prefix-cache-scorer" not in dict(PROFILE_WEIGHTS["load-aware"])


@pytest.mark.parametrize(("change", "problem"), [
    (lambda d: d.update(apiVersion="llm-d.ai/v1"), "apiVersion/kind"),
    (lambda d: d.update(profiles=[]), "config.profiles: unknown field"),
    (lambda d: d["plugins"][0].update(weight=2), "plugins[0].weight: unknown field"),
    (lambda d: d["plugins"].append({"type": "queue-scorer"}), "duplicate plugin name"),
    (lambda d: d["plugins"][0].update(type="queue-depth-scorer"), "not a plugin type"),
    (lambda d: d["schedulingProfiles"][0]["plugins"].append({"pluginRef": "nope"}),
     "names no plugin"),
    (lambda d: d["schedulingProfiles"].append({"name": "default", "plugins": []}),
     "missing or duplicate"),
])
def test_a_config_the_loader_refuses_is_reported(change: typing.Any, problem: str) -> None:
    doc = copy.deepcopy(config("default"))
    change(doc)
    found = config_problems(doc)
    assert any(problem in p for p in found), found


def test_a_named_plugin_is_referred_to_by_its_name() -> None:
    doc = copy.deepcopy(config("default"))
    doc["plugins"][0]["name"] = "queue"
    assert any("names no plugin" in p for p in config_problems(doc))
    doc["schedulingProfiles"][0]["plugins"][0]["pluginRef"] = "queue"
    assert config_problems(doc) == []


def test_leader_election_only_with_more_than_one_replica() -> None:
    one, two = picker_args("p", "ns", 1), picker_args("p", "ns", 2)
    assert "--ha-enable-leader-election" not in one
    assert "--ha-enable-leader-election" in two
    assert one[:6] == ["--pool-name", "p", "--pool-namespace", "ns",
                       "--pool-group", "inference.networking.k8s.io"]
    assert {r["resources"][0] for r in rbac_rules(1)} == {
        "pods", "inferencepools", "inferenceobjectives"}
    assert {"leases", "events"} <= {r["resources"][0] for r in rbac_rules(2)}
    for rule in rbac_rules(2):
        assert "*" not in rule["verbs"] and "*" not in rule["resources"]


def test_the_pd_config_loads_and_filters_by_role() -> None:
    doc = pd_config()
    assert config_problems(doc) == []
    assert [p["name"] for p in doc["schedulingProfiles"]] == ["prefill", "decode"]
    assert [p["plugins"][0]["pluginRef"] for p in doc["schedulingProfiles"]] == [
        "prefill-filter", "decode-filter"]
