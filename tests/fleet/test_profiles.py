"""gen.fleet.profiles and gen.models: pydantic errors located at file:line:col with key paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from gen.errors import Finding, ProfileValidationError
from gen.fleet.profiles import load_profiles
from tests.helpers import copy_fleet, write_tree

CLUSTER = """
kind: Cluster
name: c1
kubernetes_version: "1.34"
allocation: dra
node_pools:
  - name: pool-a
    gpu: h100-sxm5-80gb
    nodes: 1
    driver_version: "580.95.05"
"""


def _errors(tmp_path: Path, files: dict[str, str]) -> list[Finding]:
    write_tree(tmp_path, files)
    with pytest.raises(ProfileValidationError) as info:
        load_profiles(tmp_path / "profiles", base=tmp_path)
    return list(info.value.findings)


def test_example_fleet_validates(tmp_path: Path) -> None:
    """The example fleet loads into a ProfileSet with every kind present."""
    root = copy_fleet(tmp_path)
    profiles = load_profiles(root / "profiles", base=root)
    assert set(profiles.clusters) >= {"edge-l4", "prod-us-east", "research-eu"}
    assert "h100-mixed" in profiles.mig_layouts
    assert "llama-70b" in profiles.services
    assert profiles.services["llama-70b"].at("gpu", "count").line == 10


def test_unknown_key_located_with_key_path(tmp_path: Path) -> None:
    """An unknown key reads 'x.yaml:LINE:COL: error GEN002: node_pools[0].gpuz: unknown key
    'gpuz'; did you mean 'gpu'?', and the hint lists the keys allowed there."""
    bad = CLUSTER.replace("    nodes: 1\n", "    gpuz: 8\n    nodes: 1\n")
    (finding,) = _errors(tmp_path, {"profiles/x.yaml": bad})
    assert finding.format().splitlines()[0] == (
        "profiles/x.yaml:8:5: error GEN002: node_pools[0].gpuz: unknown key 'gpuz'; "
        "did you mean 'gpu'?"
    )
    assert "gpus_per_node" in finding.hint and "driver_version" in finding.hint


def test_wrong_types_each_reported(tmp_path: Path) -> None:
    """Wrong scalar types are reported at their own line, all in one run."""
    bad = CLUSTER.replace('"1.34"', "1.34").replace("nodes: 1", "nodes: many")
    findings = _errors(tmp_path, {"profiles/x.yaml": bad})
    got = {(f.key_path, f.location.line if f.location else 0) for f in findings}
    assert got == {("kubernetes_version", 3), ("node_pools[0].nodes", 8)}
    assert next(f.message for f in findings if f.key_path.endswith("nodes")) == (
        "expected an integer, not the text 'many'"
    )


@pytest.mark.parametrize("name", ["Bad_Name", "-lead", "trail-", "a" * 64, "dots.in.label"])
def test_dns1123_names(tmp_path: Path, name: str) -> None:
    """Cluster names must be DNS-1123 labels."""
    bad = CLUSTER.replace("name: c1", f"name: {name}")
    (finding,) = _errors(tmp_path, {"profiles/x.yaml": bad})
    assert finding.key_path == "name"
    assert finding.location is not None and finding.location.line == 2


def test_missing_required_keys_include_key_in_path(tmp_path: Path) -> None:
    """A missing key is reported with the missing key as the last key path segment."""
    bad = CLUSTER.replace("allocation: dra\n", "").replace("    nodes: 1\n", "")
    findings = _errors(tmp_path, {"profiles/x.yaml": bad})
    assert {f.key_path for f in findings} == {"allocation", "node_pools[0].nodes"}
    assert all(f.message == "Field required" for f in findings)
    pool = next(f for f in findings if f.key_path == "node_pools[0].nodes")
    assert pool.location is not None and (pool.location.line, pool.location.column) == (5, 5)


def test_invalid_item_reports_no_spurious_too_short(tmp_path: Path) -> None:
    """An invalid node pool yields its own error only, not a 'tuple too short' on node_pools."""
    bad = CLUSTER.replace("nodes: 1", "nodes: -1")
    findings = _errors(tmp_path, {"profiles/x.yaml": bad})
    assert [f.key_path for f in findings] == ["node_pools[0].nodes"]


def test_empty_node_pools_is_too_short(tmp_path: Path) -> None:
    """An empty node_pools list is still an error."""
    bad = CLUSTER.split("node_pools:")[0] + "node_pools: []\n"
    (finding,) = _errors(tmp_path, {"profiles/x.yaml": bad})
    assert finding.key_path == "node_pools"


def test_unknown_kind(tmp_path: Path) -> None:
    """An unknown kind is located at the document and lists the known kinds."""
    (finding,) = _errors(tmp_path, {"profiles/x.yaml": "# c\nkind: Clustr\nname: c1\n"})
    assert finding.location is not None and finding.location.line == 2
    assert "Cluster, GPUClass, InferenceService, MIGLayout, Model" in finding.hint


def test_missing_kind_and_non_mapping(tmp_path: Path) -> None:
    """A document without kind, or not a mapping at all, is a located GEN002 error."""
    findings = _errors(tmp_path, {"profiles/a.yaml": "name: c1\n", "profiles/b.yaml": "- x\n"})
    assert [(f.location.path if f.location else "", f.rule) for f in findings] == [
        ("profiles/a.yaml", "GEN002"), ("profiles/b.yaml", "GEN002"),
    ]
    assert "mapping with a 'kind' key" in findings[1].message


def test_errors_of_several_files_reported_together(tmp_path: Path) -> None:
    """Errors in different files and documents are all reported in one run, sorted by file."""
    findings = _errors(tmp_path, {
        "profiles/a.yaml": CLUSTER.replace("nodes: 1", "nodez: 1"),
        "profiles/b/c.yml": "kind: GPUClass\nname: ok\n---\nkind: GPUClass\nname: BAD\n",
    })
    assert [str(f.location) for f in findings] == [
        "profiles/a.yaml:6:5", "profiles/a.yaml:8:5", "profiles/b/c.yml:5:1",
    ]


def test_duplicate_names(tmp_path: Path) -> None:
    """Two profiles of one kind with the same name are an error at the second, naming the first."""
    (finding,) = _errors(tmp_path, {
        "profiles/a.yaml": "kind: GPUClass\nname: h100\n",
        "profiles/b.yaml": "# b\nkind: GPUClass\nname: h100\n",
    })
    assert str(finding.location) == "profiles/b.yaml:3:1"
    assert finding.key_path == "name"
    assert "profiles/a.yaml:1:1" in finding.message


def test_same_name_different_kinds_is_fine(tmp_path: Path) -> None:
    """Names are unique per kind, not across kinds."""
    write_tree(tmp_path, {
        "profiles/a.yaml": "kind: GPUClass\nname: c1\n",
        "profiles/b.yaml": CLUSTER,
    })
    profiles = load_profiles(tmp_path / "profiles", base=tmp_path)
    assert "c1" in profiles.clusters and "c1" in profiles.gpu_classes


def test_model_validator_message_located(tmp_path: Path) -> None:
    """A cross-field rule of one document is reported without pydantic's 'Value error, ' prefix."""
    bad = CLUSTER.replace('    driver_version: "580.95.05"\n', "")
    (finding,) = _errors(tmp_path, {"profiles/x.yaml": bad})
    assert finding.key_path == "node_pools[0]"
    assert finding.message == "'driver_version' is required for platform 'nvidia'"


def test_validation_error_message_format(tmp_path: Path) -> None:
    """ProfileValidationError.format_message lists every finding, then a count."""
    write_tree(tmp_path, {"profiles/x.yaml": CLUSTER.replace("name: c1", "name: C1")})
    with pytest.raises(ProfileValidationError, match=r"1 problem\(s\) in profiles") as info:
        load_profiles(tmp_path / "profiles", base=tmp_path)
    assert info.value.format_message().splitlines()[-1] == "1 problem(s) in profiles"
    assert info.value.format_message().startswith("profiles/x.yaml:2:1: error GEN002: name: ")


@pytest.mark.parametrize("value", ['"qwen-7b\\n"', '"qwen-7b\\r\\n"', "Qwen_7B"])
def test_a_name_that_is_not_a_dns_label_is_refused_in_words(tmp_path: Path, value: str) -> None:
    """A trailing line break no longer passes as a name (Python's $ matches before a final
    newline, and the file would be named 'deployment-qwen-7b\\n.yaml'); the message says
    what a name may hold instead of printing the regular expression."""
    from gen.errors import ProfileValidationError
    from gen.fleet.profiles import load_profiles

    write_tree(tmp_path / "profiles", {"svc.yaml": f"""\
        kind: InferenceService
        name: {value}
        model: Qwen/Qwen2.5-7B-Instruct
        clusters: [c1]
        """})
    with pytest.raises(ProfileValidationError) as err:
        load_profiles(tmp_path / "profiles", base=tmp_path)
    (finding,) = err.value.findings
    assert finding.key_path == "name" and finding.location is not None
    assert finding.location.line == 2
    assert "DNS-1123 label" in finding.message and "(?!" not in finding.message


def _one(tmp_path: Path, text: str) -> Finding:
    (finding,) = _errors(tmp_path, {"profiles/x.yaml": text})
    return finding


@pytest.mark.parametrize(("old", "new", "key", "message", "hint"), [
    ('"1.34"', "1.30", "kubernetes_version",
     "expected a string, but YAML read '1.30' as the number 1.3", 'quote it: "1.30"'),
    ('"580.95.05"', "2024-01-01", "node_pools[0].driver_version",
     "expected a string, but YAML read '2024-01-01' as the date 2024-01-01",
     'quote it: "2024-01-01"'),
    ('"580.95.05"', "no", "node_pools[0].driver_version",
     "expected a string, but YAML read 'no' as the boolean false", 'quote it: "no"'),
    ("nodes: 1", "nodes: yes", "node_pools[0].nodes",
     "expected an integer, but YAML read 'yes' as the boolean true", "write a number, e.g. 1"),
    ("nodes: 1", "nodes: true", "node_pools[0].nodes",
     "expected an integer, but YAML read 'true' as the boolean true", "write a number, e.g. 1"),
    ("nodes: 1", 'nodes: "6"', "node_pools[0].nodes",
     "expected an integer, but this is the quoted string '6'", "remove the quotes"),
])
def test_wrong_types_say_what_yaml_read(tmp_path: Path, old: str, new: str, key: str,
                                        message: str, hint: str) -> None:
    """A wrong type says what YAML read and how to write it; YAML 1.1 booleans and quoted
    numbers are never integers."""
    finding = _one(tmp_path, CLUSTER.replace(old, new))
    assert (finding.key_path, finding.message, finding.hint) == (key, message, hint)


def test_integer_one_is_not_a_boolean(tmp_path: Path) -> None:
    """The other direction: 1 is not true."""
    text = CLUSTER.replace("    nodes: 1\n", "    nodes: 1\n    virtualized: 1\n")
    finding = _one(tmp_path, text)
    assert finding.key_path == "node_pools[0].virtualized"
    assert finding.message == "expected a boolean (true or false), but YAML read '1' as the " \
        "number 1"


def test_strict_inside_maps_and_lists(tmp_path: Path) -> None:
    """A MIG count that is a YAML boolean is refused at its own key."""
    finding = _one(tmp_path, "kind: MIGLayout\nname: m\ngpu: h100-sxm5-80gb\n"
                   "profiles:\n  3g.40gb: on\n")
    assert finding.key_path == "profiles.3g.40gb"
    assert finding.location is not None and finding.location.line == 5


def test_negative_mig_count_at_its_key(tmp_path: Path) -> None:
    """A negative MIG count points at its key path, not at 'kind:'."""
    finding = _one(tmp_path, "kind: MIGLayout\nname: m\ngpu: h100-sxm5-80gb\n"
                   "profiles:\n  1g.10gb: 2\n  3g.40gb: -1\n")
    assert finding.key_path == "profiles.3g.40gb"
    assert finding.location is not None and finding.location.line == 6


@pytest.mark.parametrize(("text", "message", "hint_part"), [
    ("kind: Clustr\nname: a\n", "unknown kind 'Clustr'; did you mean 'Cluster'?", "GPUClass"),
    ("name: a\n", "missing key 'kind'", "add 'kind:'"),
    (CLUSTER.replace("kind: Cluster", "kind: Cluster\nnode_pool: []"),
     "unknown key 'node_pool'; did you mean 'node_pools'?", "kubernetes_version"),
])
def test_kinds_and_keys_with_did_you_mean(tmp_path: Path, text: str, message: str,
                                          hint_part: str) -> None:
    """Unknown kind, missing kind and unknown keys in words, with did-you-mean."""
    finding = _one(tmp_path, text)
    assert finding.message == message
    assert hint_part in finding.hint
    assert "discriminator" not in finding.message and "tag" not in finding.message


def test_mapping_expected_without_class_names(tmp_path: Path) -> None:
    """'gpu: 3' says a mapping is expected and lists its keys, no pydantic class name."""
    text = ("kind: InferenceService\nname: s\nmodel: m\nclusters: [c1]\ngpu: 3\n")
    finding = _one(tmp_path, text)
    assert finding.message == "expected a mapping (key: value lines), but YAML read '3' as " \
        "the number 3"
    assert "gpu_class" in finding.hint
    assert "GPURequest" not in finding.message + finding.hint


def test_kubernetes_version_out_of_range_says_the_range(tmp_path: Path) -> None:
    """A version gen does not support names the supported range."""
    finding = _one(tmp_path, CLUSTER.replace('"1.34"', '"1.24"'))
    assert "1.25 to 1.39" in finding.message


def test_cluster_listed_twice(tmp_path: Path) -> None:
    """A service listing a cluster twice is refused at lint time (render used to fail)."""
    text = ("kind: InferenceService\nname: s\nmodel: m\nclusters: [c1, c2, c1]\n"
            "gpu: {gpu_class: x}\n")
    finding = _one(tmp_path, text)
    assert finding.key_path == "clusters"
    assert finding.message.startswith("cluster 'c1' is listed more than once")
# --------------------------------------------------------------------------- Model config:

QWEN3_MOE_CONFIG = (Path(__file__).resolve().parents[1] / "serving" / "data" / "qwen3-30b-a3b"
                    / "config.json").read_text(encoding="utf-8")


def _model_fleet(tmp_path: Path, model_doc: str, config: str = QWEN3_MOE_CONFIG) -> Path:
    """LINT_BASE with a Model profile under profiles/models/ and its config.json beside it."""
    from tests.helpers import LINT_BASE

    files = {f"profiles/{name}": text for name, text in LINT_BASE.items()}
    files["profiles/models/moe.yaml"] = model_doc
    files["profiles/models/qwen3/config.json"] = config
    return write_tree(tmp_path, files)


def test_model_profile_reads_its_config_json(tmp_path: Path) -> None:
    """config: names a config.json relative to the profile; given fields override it."""
    from dataclasses import replace

    from gen.fleet.resolve import build_plan
    from gen.serving.model_catalog import model_catalog

    _model_fleet(tmp_path, """
        kind: Model
        name: acme/Qwen3-MoE-Finetune
        config: qwen3/config.json
        max_context: 16384
        license_gated: true
        """)
    service = tmp_path / "profiles" / "service.yaml"
    service.write_text(service.read_text().replace("meta-llama/Llama-3.1-70B-Instruct",
                                                   "acme/Qwen3-MoE-Finetune"))
    profiles = load_profiles(tmp_path / "profiles", base=tmp_path)
    assert profiles.model_configs["acme/Qwen3-MoE-Finetune"]["experts"] == 128
    plan = build_plan(profiles)
    (service_plan,) = plan.clusters[0].services
    spec = service_plan.model
    expected = replace(model_catalog().lookup("Qwen/Qwen3-30B-A3B"),
                       id="acme/Qwen3-MoE-Finetune", max_context=16384, license_gated=True)
    assert spec == expected


def test_a_bad_config_json_is_located_in_that_file(tmp_path: Path) -> None:
    """A broken field of the referenced config.json is reported at its own file and line."""
    broken = QWEN3_MOE_CONFIG.replace('"num_hidden_layers": 48', '"num_hidden_layers": "x"')
    _model_fleet(tmp_path, "kind: Model\nname: acme/m\nconfig: qwen3/config.json\n", broken)
    with pytest.raises(ProfileValidationError) as info:
        load_profiles(tmp_path / "profiles", base=tmp_path)
    (finding,) = info.value.findings
    line = next(i for i, t in enumerate(broken.splitlines(), 1) if "num_hidden_layers" in t)
    assert str(finding.location) == f"profiles/models/qwen3/config.json:{line}:3"
    assert finding.key_path == "num_hidden_layers"


@pytest.mark.parametrize("config", ["../../../etc/config.json", "/etc/config.json"])
def test_a_config_outside_the_profiles_folder_is_refused(tmp_path: Path, config: str) -> None:
    """config: cannot leave the profiles folder (the fleet record digests what is inside)."""
    _model_fleet(tmp_path, f"kind: Model\nname: acme/m\nconfig: {config}\n")
    with pytest.raises(ProfileValidationError) as info:
        load_profiles(tmp_path / "profiles", base=tmp_path)
    (finding,) = info.value.findings
    assert str(finding.location) == "profiles/models/moe.yaml:3:1"
    assert "outside the profiles folder" in finding.message


def test_a_missing_config_file_is_located(tmp_path: Path) -> None:
    """A config that names no file is an error at that file's path."""
    _model_fleet(tmp_path, "kind: Model\nname: acme/m\nconfig: qwen3/missing.json\n")
    with pytest.raises(ProfileValidationError) as info:
        load_profiles(tmp_path / "profiles", base=tmp_path)
    assert info.value.format_message().startswith(
        "profiles/models/qwen3/missing.json: error GEN002: no such file or folder")


def test_without_config_the_numbers_are_required(tmp_path: Path) -> None:
    """A Model profile with neither numbers nor config says which numbers it lacks."""
    (finding,) = _errors(tmp_path, {"profiles/m.yaml": "kind: Model\nname: acme/m\n"})
    assert "give parameters, layers, hidden_size" in finding.message
    assert "or a config" in finding.message
