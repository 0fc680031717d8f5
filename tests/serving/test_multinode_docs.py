"""docs/multi-node.md stays true: its fleet renders an LWS, and gen prints what it shows."""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from click.testing import CliRunner

from gen.cli import cli
from gen.pipeline import lint, render

DOC = Path(__file__).resolve().parents[2] / "docs" / "multi-node.md"


def _block(text: str, marker: str, lang: str) -> str:
    match = re.compile(rf"```{lang}\n(.*?)```", re.DOTALL).search(text, text.index(marker))
    assert match is not None
    return match.group(1)


def test_doc_fleet_renders_and_prints_as_shown(tmp_path: Path) -> None:
    """The page's profiles lint clean, render a 2-pod LWS, and explain/fit print its lines."""
    text = DOC.read_text(encoding="utf-8")
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (profiles / "fleet.yaml").write_text(_block(text, "<!-- multi-node-profiles -->", "yaml"))
    assert lint(profiles, base=tmp_path) == []
    render(profiles, tmp_path / "out", base=tmp_path, validator="embedded")
    lws = yaml.safe_load(next((tmp_path / "out").rglob("leaderworkerset-*.yaml")).read_text())
    assert lws["spec"]["leaderWorkerTemplate"]["size"] == 2
    leader = lws["spec"]["leaderWorkerTemplate"]["leaderTemplate"]["spec"]["containers"][0]
    rendered = " ".join(leader["args"])
    assert ("--distributed-executor-backend mp --nnodes 2 --master-addr $(LWS_LEADER_ADDRESS) "
            "--master-port 29500 --node-rank 0") in rendered
    runner = CliRunner()
    explained = runner.invoke(cli, ["explain", "llama-405b", "--profiles", str(profiles)])
    assert explained.exit_code == 0, explained.output
    assert _block(text, "<!-- multi-node-explain -->", "text") in explained.output
    fit = runner.invoke(cli, ["fit", "--service", "llama-405b", "--profiles", str(profiles)])
    assert fit.exit_code == 0, fit.output
    assert _block(text, "<!-- multi-node-fit -->", "text") in fit.output
