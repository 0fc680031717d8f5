"""The README and docs stay true: their examples are run, their lists are complete."""

from __future__ import annotations

import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from gen.cli import _COMMANDS, cli
from gen.pipeline import render

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _block_after(marker: str) -> str:
    index = README.index(marker)
    match = re.compile(r"```yaml\n(.*?)```", re.DOTALL).search(README, index)
    assert match is not None
    return match.group(1)


def test_readme_example_renders_as_shown(tmp_path: Path) -> None:
    """The README's example profile renders to exactly the manifest the README shows."""
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "fleet.yaml").write_text(_block_after("<!-- example-profile -->"))
    marker = re.search(r"<!-- example-output: (\S+) -->", README)
    assert marker is not None
    render(profiles, tmp_path / "out", base=tmp_path, validator="embedded")
    produced = (tmp_path / "out" / marker.group(1)).read_text()
    assert produced == _block_after(marker.group(0))


@pytest.mark.parametrize("name", sorted(_COMMANDS))
def test_every_command_is_documented_and_has_help(name: str) -> None:
    """Each command appears in the README's table and answers --help."""
    assert f"`gen {name}" in README
    result = CliRunner().invoke(cli, [name, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage:" in result.output


def _leaf_commands(group: click.Group, path: tuple[str, ...] = ()) -> dict[
        tuple[str, ...], click.Command]:
    """Every runnable command under ``group`` by its word path (``("cel", "eval")``)."""
    leaves: dict[tuple[str, ...], click.Command] = {}
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        assert command is not None
        if isinstance(command, click.Group):
            leaves.update(_leaf_commands(command, (*path, name)))
        else:
            leaves[(*path, name)] = command
    return leaves


def _table_rows() -> list[tuple[set[tuple[str, ...]], set[str]]]:
    """The README's command table: for each row, the command paths its first cell shows
    (``gen catalog gpus\\|models`` shows two) and the options it names."""
    section = README[README.index("## Commands"):]
    section = section[: section.index("\n## ", 1)]
    rows = []
    for line in section.splitlines():
        if not line.startswith("| `gen "):
            continue
        cell = line.split(" | ")[0]
        paths: set[tuple[str, ...]] = set()
        for usage in re.findall(r"`gen ([^`]+)`", cell):
            prefixes: list[tuple[str, ...]] = [()]
            group: click.Command = cli
            for word in usage.split():
                names = word.split("\\|")
                known = (group.get_command(click.Context(group), names[0])
                         if isinstance(group, click.Group) else None)
                if known is None:
                    break
                prefixes = [(*p, n) for p in prefixes for n in names]
                group = known
            paths.update(prefixes)
        rows.append((paths, set(re.findall(r"(?<![\w-])--?[a-z][a-z0-9-]*", cell))))
    return rows


@pytest.mark.parametrize("path", sorted(_leaf_commands(cli)), ids=" ".join)
def test_readme_command_table_shows_every_option(path: tuple[str, ...]) -> None:
    """The README's row for each command names every option the CLI has for it (by its long
    or its short name), and no option the CLI does not have: the table is checked against the
    commands themselves, so it cannot drift."""
    rows = [(paths, named) for paths, named in _table_rows() if path in paths]
    assert rows, f"no README command-table row shows `gen {' '.join(path)}`"
    shown = set().union(*(named for _, named in rows))
    options = [param.opts for param in _leaf_commands(cli)[path].params
               if isinstance(param, click.Option) and "--help" not in param.opts]
    missing = [opts[-1] for opts in options if not shown.intersection(opts)]
    assert not missing, f"gen {' '.join(path)}: the README's row lacks {missing}"
    known = {name for paths, _ in rows for other in paths
             for param in _leaf_commands(cli)[other].params for name in param.opts}
    assert shown <= known, f"gen {' '.join(path)}: the README names {sorted(shown - known)}"


def test_lint_rules_doc_lists_every_rule() -> None:
    """docs/lint-rules.md names every rule id gen can report (it is generated: test_rules)."""
    from gen.rules import RULES

    text = (ROOT / "docs" / "lint-rules.md").read_text(encoding="utf-8")
    for rule in RULES:
        assert f"| `{rule}` |" in text, rule


def test_readme_links_exist() -> None:
    """Every docs/ link in the README points at a file in the repository."""
    for link in re.findall(r"\((docs/[^)]+)\)", README):
        assert (ROOT / link).is_file(), link


def test_validation_doc_example_fails_as_shown(tmp_path: Path) -> None:
    """docs/validation.md: its CRD, in crds/, makes the render fail with the error it shows."""
    from gen.errors import ManifestValidationError
    from tests.helpers import copy_fleet, write_tree

    doc = (ROOT / "docs" / "validation.md").read_text(encoding="utf-8")
    crd = re.search(r"<!-- validation-crd -->\n```yaml\n(.*?)```", doc, re.DOTALL)
    shown = re.search(r"<!-- validation-error -->\n```\n(.*?)\n```", doc, re.DOTALL)
    assert crd is not None and shown is not None
    root = copy_fleet(tmp_path)
    write_tree(root, {"templates/core/namespace.yaml.j2": """
        apiVersion: example.com/v1
        kind: Widget
        metadata: {name: {{ name|tojson }}}
        spec: {replicas: 8}
    """})
    (root / "crds").mkdir()
    (root / "crds" / "widgets.yaml").write_text(crd.group(1))
    with pytest.raises(ManifestValidationError) as info:
        render(root / "profiles", root / "out", templates_dir=root / "templates",
               crds_dir=root / "crds", validator="embedded", base=root)
    assert shown.group(1) in [f.format() for f in info.value.findings]
    (root / "templates/core/namespace.yaml.j2").write_text(
        (root / "templates/core/namespace.yaml.j2").read_text().replace("8", "4"))
    render(root / "profiles", root / "out", templates_dir=root / "templates",
           crds_dir=root / "crds", validator="embedded", base=root)


def _doc_block(text: str, marker: str, lang: str) -> str:
    match = re.compile(rf"```{lang}\n(.*?)```", re.DOTALL).search(text, text.index(marker))
    assert match is not None
    return match.group(1)


def test_dynamic_mig_worked_example_is_true(tmp_path: Path) -> None:
    """docs/dynamic-mig.md shows the fixture fleet, its driver values, its packing picture
    and its plan exactly as gen produces them."""
    doc = (ROOT / "docs" / "dynamic-mig.md").read_text(encoding="utf-8")
    fleet = ROOT / "tests" / "fixtures" / "dynamic-mig"
    cluster = (fleet / "clusters" / "dyn.yaml").read_text(encoding="utf-8")
    assert _doc_block(doc, "<!-- dynamic-mig-cluster -->", "yaml") == cluster
    result = render(fleet, tmp_path / "out", base=tmp_path, validator="embedded")
    values = next(b.decode() for p, b in result.outputs.items()
                  if "dra-driver-nvidia-gpu" in str(p))
    assert "featureGates:\n          DynamicMIG: true" in values
    assert _doc_block(doc, "<!-- dynamic-mig-values -->", "yaml") == (
        "featureGates:\n  DynamicMIG: true\n")
    runner = CliRunner()
    explained = runner.invoke(cli, ["explain", "--slices", "--profiles", str(fleet)])
    assert explained.exit_code == 0, explained.output
    assert _doc_block(doc, "<!-- dynamic-mig-packing -->", "text") in explained.output
    planned = runner.invoke(cli, ["plan", "--profiles", str(fleet)])
    assert planned.exit_code == 0, planned.output
    assert _doc_block(doc, "<!-- dynamic-mig-plan -->", "text") in planned.output


def test_models_doc_import_example_is_what_gen_prints(tmp_path: Path) -> None:
    """docs/models.md shows exactly what `gen model import` prints for the published Qwen3 MoE
    config, and exactly the located error of its broken example."""
    import shutil

    text = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    marker = re.search(r"<!-- example-import: gen (.+?) -->\n```yaml\n(.*?)```", text, re.DOTALL)
    assert marker is not None
    args, expected = marker.group(1).split(), marker.group(2)
    fixture = ROOT / "tests" / "serving" / "data" / "qwen3-30b-a3b" / "config.json"
    (tmp_path / "models" / "qwen3-moe").mkdir(parents=True)
    shutil.copy(fixture, tmp_path / "models" / "qwen3-moe" / "config.json")
    broken = tmp_path / "models" / "broken"
    broken.mkdir()
    (broken / "config.json").write_text(fixture.read_text().replace(
        '"num_attention_heads": 32', '"num_attention_heads": 0'))
    runner = CliRunner()
    where = f"{tmp_path.as_posix()}/"
    absolute = [where + a if a.startswith("models/") else a for a in args]
    result = runner.invoke(cli, absolute, catch_exceptions=False)
    assert result.stdout == expected
    error = re.search(r"\$ gen model import (models/broken).*\n(.*)\n", text)
    assert error is not None
    failed = runner.invoke(cli, ["model", "import", where + error.group(1)])
    assert failed.exit_code == 1
    assert failed.stderr.strip().replace(where, "") == error.group(2)


def test_models_doc_profile_example_loads(tmp_path: Path) -> None:
    """docs/models.md's Model profile with `config:` loads and overrides what it says."""
    import shutil

    from gen.fleet.profiles import load_profiles
    from gen.serving.model_catalog import LLMSpec

    text = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    marker = re.search(r"<!-- example-model-profile: (\S+) -->\n```yaml\n(.*?)```", text,
                       re.DOTALL)
    assert marker is not None
    profile = tmp_path / marker.group(1)
    profile.parent.mkdir(parents=True)
    profile.write_text(marker.group(2), encoding="utf-8")
    (profile.parent / "qwen3-moe").mkdir()
    shutil.copy(ROOT / "tests" / "serving" / "data" / "qwen3-30b-a3b" / "config.json",
                profile.parent / "qwen3-moe" / "config.json")
    profiles = load_profiles(tmp_path / "profiles", base=tmp_path)
    (name, located), = profiles.models.items()
    spec = LLMSpec.from_profile(located.value, profiles.model_configs[name])
    assert (spec.id, spec.max_context, spec.experts, spec.license_gated) == (
        "acme/Qwen3-30B-A3B-support", 32768, 128, True)


def test_routing_doc_example_renders_and_lints_as_shown(tmp_path: Path) -> None:
    """docs/routing.md: its fleet renders the pool and route it shows, and with another
    gateway name lints to the error it shows."""
    from gen.pipeline import lint

    doc = (ROOT / "docs" / "routing.md").read_text(encoding="utf-8")
    profile = _doc_block(doc, "<!-- routing-profile -->", "yaml")
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "fleet.yaml").write_text(profile)
    render(profiles, tmp_path / "out", base=tmp_path, validator="embedded")
    folder = tmp_path / "out" / "prod" / "workloads" / "inference"
    assert (folder / "inferencepool-qwen-7b.yaml").read_text() == _doc_block(
        doc, "<!-- routing-pool -->", "yaml")
    assert (folder / "httproute-qwen-7b.yaml").read_text() == _doc_block(
        doc, "<!-- routing-route -->", "yaml")
    bad = tmp_path / "bad" / "profiles"
    bad.mkdir(parents=True)
    (bad / "fleet.yaml").write_text(profile.replace("gateway: inference-gateway",
                                                    "gateway: public"))
    shown = _doc_block(doc, "<!-- routing-lint -->", "text").strip()
    found = [f for f in lint(bad, base=bad.parent) if f.rule == "GEN401"]
    assert [f.format().splitlines()[0] for f in found] == [shown]


def test_disaggregation_doc_example_is_true() -> None:
    """docs/disaggregation.md shows the example profile, the decode pod's sidecar as gen
    renders it, and the start of `gen fit --service` for the service."""
    doc = (ROOT / "docs" / "disaggregation.md").read_text(encoding="utf-8")
    profile = (ROOT / "profiles" / "services" / "qwen-7b-pd.yaml").read_text(encoding="utf-8")
    assert _doc_block(doc, "<!-- disaggregation-profile -->", "yaml") == profile
    # out/ is the render of profiles/ (tests/test_golden.py keeps it so).
    decode = (ROOT / "out" / "prod-us-east" / "workloads" / "inference" /
              "deployment-qwen-7b-pd-decode.yaml").read_text(encoding="utf-8")
    assert _doc_block(doc, "<!-- disaggregation-sidecar -->", "yaml") in decode
    fitted = CliRunner().invoke(cli, ["fit", "--service", "qwen-7b-pd",
                                      "--profiles", str(ROOT / "profiles")])
    assert fitted.exit_code == 0, fitted.output
    assert _doc_block(doc, "<!-- disaggregation-fit -->", "text") in fitted.output
    assert "cluster prod-us-east, role decode, pool h100-full:" in fitted.output
