"""docs/gitops.md and docs/ci.md stay true: their YAML parses, every gen command they run
exists with the options they pass, the files they apply exist, and the CI fan-out they
describe gives exactly a full render."""

from __future__ import annotations

import re
import shlex
import shutil
from pathlib import Path

import click
import pytest
import yaml

from gen.cli import cli
from gen.pipeline import load_plan, render
from tests.helpers import REPO, copy_fleet, snapshot_tree

DOCS = {name: (REPO / "docs" / name).read_text(encoding="utf-8")
        for name in ("ci.md", "gitops.md")}


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, re.DOTALL)


def _gen_commands(text: str) -> list[list[str]]:
    """Every `gen ...` invocation in the shell and YAML blocks, as argument lists."""
    commands = []
    for block in _blocks(text, "yaml") + _blocks(text, "sh"):
        block = "\n".join(line.split(" #")[0] for line in block.splitlines())
        for match in re.finditer(r"(?<![\w.-])gen ([a-z][^\n|;&)>]*)", block):
            line = re.sub(r"\$\{\{[^}]*\}\}", "X", match.group(1))
            line = re.sub(r"\"?\$\w+\"?", "X", line)
            words = shlex.split(line.split("#")[0])
            if words and not words[0].startswith(("render:", "(")):
                commands.append(words)
    return commands


@pytest.mark.parametrize("name", sorted(DOCS))
def test_yaml_blocks_parse(name: str) -> None:
    """Every YAML block is valid YAML (the CI examples load as the CI systems read them)."""
    blocks = _blocks(DOCS[name], "yaml")
    assert blocks
    for block in blocks:
        yaml.safe_load(block)


def test_ci_examples_have_the_shape_the_ci_systems_need() -> None:
    """The fan-out workflows: GitHub's matrix reads the clusters job's output; GitLab's
    render job runs in parallel and hands its files to the check job."""
    github = next(yaml.safe_load(b) for b in _blocks(DOCS["ci.md"], "yaml")
                  if "gen-fanout.yml" in b)
    jobs = github["jobs"]
    assert jobs["render"]["needs"] == "clusters" and jobs["check"]["needs"] == "render"
    assert "fromJSON(needs.clusters.outputs.names)" in jobs["render"]["strategy"]["matrix"][
        "cluster"]
    gitlab = next(yaml.safe_load(b) for b in _blocks(DOCS["ci.md"], "yaml")
                  if "stages: [render, check]" in b)
    assert gitlab["render"]["parallel"] >= 2
    assert gitlab["render"]["artifacts"]["paths"] == ["fanout/"]


def test_gen_commands_exist_with_their_options() -> None:
    """Each `gen SUB ...` docs/ci.md runs names a real command, and each --option is one it
    takes."""
    commands = _gen_commands(DOCS["ci.md"])
    assert commands
    ctx = click.Context(cli)
    for words in commands:
        command = cli.get_command(ctx, words[0])
        assert command is not None, words
        rest = words[1:]
        while isinstance(command, click.Group) and rest:
            command = command.get_command(ctx, rest[0])
            assert command is not None, words
            rest = rest[1:]
        options = {opt for param in command.params for opt in param.opts}
        for word in rest:
            if word.startswith("-"):
                assert word.split("=")[0] in options, (words, word)


def test_bootstrap_files_the_docs_apply_exist() -> None:
    """The root files docs/gitops.md tells people to apply are in the committed out/, and
    each bootstrap takes three commands."""
    applied = re.findall(r"kubectl apply -f (out/\S+\.yaml)", DOCS["gitops.md"])
    assert len(applied) == 2
    for path in applied:
        assert (REPO / path).is_file(), path
        assert path.startswith("out/_root/")
    for block in _blocks(DOCS["gitops.md"], "sh")[:2]:
        commands = [line for line in block.splitlines() if line and not line.startswith("#")]
        assert len(commands) == 3, block


OWNED = ("{c}", "_bootstrap/{c}", "_root/{c}", "_meta/{c}", "_reports/{c}",
         ".gen-cache/{c}.json")
"""What one fan-out job hands back, as docs/ci.md lists it."""


def test_the_owned_paths_are_the_ones_the_docs_list() -> None:
    """Both CI examples copy exactly :data:`OWNED`."""
    text = DOCS["ci.md"]
    github = [p.replace("${{ matrix.cluster }}", "{c}").rstrip("/")
              for p in re.findall(r"^\s+(out/.*matrix\.cluster.*)$", text, re.MULTILINE)]
    assert sorted(p.removeprefix("out/") for p in github) == sorted(OWNED)
    gitlab = re.search(r'for d in (.*?); do', text)
    assert gitlab is not None
    assert sorted(w.replace("$c", "{c}") for w in shlex.split(gitlab.group(1))) == sorted(OWNED)


def _fan_out(root: Path) -> Path:
    """Run the procedure of docs/ci.md: a render per cluster on its own copy of the
    committed out/, each handing back what it owns; merge over the committed out/ and
    render once more. Returns the merged tree."""
    clusters = [c.name for c in load_plan(root / "profiles", base=root).clusters]
    fanout = root / "fanout"
    for name in clusters:
        runner = root / f"runner-{name}"
        shutil.copytree(root / "profiles", runner / "profiles")
        shutil.copytree(root / "out", runner / "out")
        render(runner / "profiles", runner / "out", clusters=(name,), validator="embedded",
               base=runner)
        for pattern in OWNED:
            rel = pattern.format(c=name)
            source = runner / "out" / rel
            if source.is_dir():
                shutil.copytree(source, fanout / rel, dirs_exist_ok=True)
            elif source.is_file():
                (fanout / rel).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, fanout / rel)
    merged = root / "merged"
    shutil.copytree(root / "out", merged)
    shutil.copytree(fanout, merged, dirs_exist_ok=True)
    render(root / "profiles", merged, validator="embedded", base=root)
    return merged


def _tree(folder: Path) -> dict[str, bytes]:
    return {p: b for p, b in snapshot_tree(folder).items() if p != ".gen-cache/_fleet.json"}


def test_fan_out_equals_a_full_render(tmp_path: Path) -> None:
    """Fanned out over the example fleet, the merge equals the committed render; after a
    profile change that was not rendered, it differs (the check fails), exactly where a
    full render differs."""
    root = copy_fleet(tmp_path / "fleet")
    render(root / "profiles", root / "out", validator="embedded", base=root)
    assert _tree(_fan_out(root)) == _tree(root / "out")

    stale = copy_fleet(tmp_path / "stale")
    shutil.copytree(root / "out", stale / "out")
    service = stale / "profiles/services/llama-70b.yaml"
    service.write_text(service.read_text("utf-8").replace("max_replicas: 4", "max_replicas: 6"),
                       encoding="utf-8")
    merged = _tree(_fan_out(stale))
    full = stale / "full"
    render(stale / "profiles", full, validator="embedded", base=stale)
    assert merged != _tree(stale / "out")
    assert merged == _tree(full)
