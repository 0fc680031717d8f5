"""The no-op ``gen render`` / ``--check`` answered before click (gen._noop): the same output,
exit code and files as the click command, and a miss or any other command line left to it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from gen._noop import answer
from gen.pipeline import fast_render, render
from tests.helpers import REPO, copy_fleet, stat_tree

SERVICE = "profiles/services/qwen-7b-edge.yaml"
PROBE = ("import atexit, json, sys\n"
         "atexit.register(lambda: sys.stderr.write('\\nMODULES=' + json.dumps(sorted(\n"
         "    {m.split('.')[0] for m in sys.modules}))))\n")


def _gen(root: Path, code: str, *args: str) -> tuple[int, str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run(
        [sys.executable, "-c", PROBE + f"sys.argv = ['gen', *{list(args)!r}]\n" + code],
        cwd=root, env=env, capture_output=True, text=True, check=False, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def _entry(root: Path, *args: str) -> tuple[int, str, str]:
    """``gen`` as the console script and ``python -m gen`` run it."""
    return _gen(root, "from gen._entry import main\nmain()\n", *args)


def _click(root: Path, *args: str) -> tuple[int, str, str]:
    """The click command itself, never the early answer."""
    return _gen(root, "from gen.cli import main\nmain()\n", *args)


def _split(result: tuple[int, str, str]) -> tuple[int, str, str, set[str]]:
    code, out, err = result
    err, _, modules = err.rpartition("\nMODULES=")
    return code, out, err, set(json.loads(modules))


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example fleet with one lint warning (so stderr has a line), rendered by the CLI
    with its defaults: out/ holds the fleet record a plain 'gen render' takes."""
    root = copy_fleet(tmp_path_factory.mktemp("noop") / "fleet")
    path = root / SERVICE
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("serving:\n", "serving:\n  image: example.com/vllm:1\n", 1),
                    encoding="utf-8")
    assert _entry(root, "render")[0] == 0
    return root


@pytest.mark.parametrize("args", [("render",), ("render", "--check")])
def test_the_early_answer_prints_what_click_prints_and_imports_no_click(
        fleet: Path, args: tuple[str, ...]) -> None:
    before = stat_tree(fleet / "out")
    early, click = _split(_entry(fleet, *args)), _split(_click(fleet, *args))
    assert early[:3] == click[:3]
    assert early[0] == 0 and "GEN303" in early[2]
    assert stat_tree(fleet / "out") == before  # nothing written
    if shutil.which("kubeconform") is None:  # else the fleet record is never used
        assert early[3].isdisjoint({"click", "yaml", "jinja2", "pydantic", "rich"}), early[3]
    assert "click" in click[3]


@pytest.mark.parametrize("args", [
    ("render", "--check", "--diff"), ("render", "-q"), ("render", "--out", "out"),
    ("render", "--no-cache"), ("render", "--check", "--check"), ("lint",), ("render", "x"),
])
def test_any_other_command_line_is_left_to_click(args: tuple[str, ...]) -> None:
    assert answer(list(args)) is False


def test_a_miss_is_left_to_click(fleet: Path, tmp_path: Path) -> None:
    """After a change, the answer is the click command's own: a stale out/, exit 1."""
    root = tmp_path / "fleet"
    shutil.copytree(fleet, root, symlinks=True)
    path = root / SERVICE
    path.write_text(path.read_text("utf-8").replace("replicas: 3", "replicas: 4"), "utf-8")
    early, click = _split(_entry(root, "render", "--check")), _split(
        _click(root, "render", "--check"))
    assert early[:3] == click[:3]
    assert early[0] == 1 and "stale" in early[2]
    assert "click" in early[3]


def test_fast_render_is_the_fast_path_of_render(fleet: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(fleet)
    profiles, out = Path("profiles"), Path("out")
    fast = fast_render(profiles, out)
    assert fast is not None and fast.fast_path
    for check in (False, True):
        assert render(profiles, out, check=check) == fast
    assert fast_render(profiles, out, validator="none") is None  # another digest
