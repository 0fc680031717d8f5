"""Fault injection for ``gen render``: SIGKILL at many points, full disk, read-only out/.

The contract (DESIGN.md, "Output contract"): a kill mid-render leaves out/ as the old tree
or the new one, never a mix, and the next render cleans up after it; a write that fails
leaves the old tree and says why in one line, without a traceback.

Kills are real: ``python -m gen render`` runs as a child process and gets SIGKILL

- before a chosen step of its write phase. A launcher (``_LAUNCHER``, written to a
  temporary folder) installs an audit hook (``sys.addaudithook``) that counts every step
  that changes the file system (mkdir, open for writing, link, rename, unlink, rmtree and
  the lookup of ``renameat2`` just before the exchange), from the first one that names a
  temporary folder beside out/, and kills its own process before the Nth. One counted run
  lists the steps, so each outcome is exact: up to the exchange out/ must be the old tree,
  after it the new one. Nothing in gen knows about this hook;
- after delays spread evenly over the measured duration of a render (no hook);
- a few milliseconds after the temporary folder appears beside out/ (polling).

``GEN_FAULT_ALL_STEPS=1`` kills before every step of the write phase (several minutes);
the default set keeps the module near 30 s on two cores. Renders use ``--validator none``:
validation runs before anything is written, so it only makes each trial slower.

Disk errors are simulated. The tests run as root, where permission bits stop nothing, and
a real full or read-only file system needs mount privileges (a loop device, a small tmpfs,
a read-only bind mount in a mount namespace) that CI containers do not grant. So the
functions gen.emit.output writes through (``Path.mkdir``, ``Path.write_bytes``, ``os.link``,
``shutil.copy2``, ``Path.symlink_to``, ``Path.rename`` and the ``renameat2`` exchange) are
replaced by ones that fail with the errno a full (ENOSPC) or read-only (EROFS) file
system, or a folder we may not write (EACCES), gives. Once one write fails, every later
write fails too, as on a full disk; renames fail only at the chosen step.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from click.testing import CliRunner, Result

from gen.cli import cli
from gen.emit import output
from gen.emit.output import write_tree
from gen.errors import OutputError
from tests.helpers import REPO, copy_fleet, snapshot_tree

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        sys.platform != "linux", reason="the atomic swap (renameat2) and these kills are Linux's"
    ),
]

_LAUNCHER = '''\
"""Run gen, SIGKILLed before its Nth write step (GEN_FAULT_KILL_AT; 0: never).

Steps are counted from the first one that names a temporary folder beside out/ (".gen-").
GEN_FAULT_LOG, when set, receives the steps, one a line: monotonic seconds, event, args.
"""
import os, runpy, signal, sys, time

KILL_AT = int(os.environ["GEN_FAULT_KILL_AT"])
LOG = os.environ.get("GEN_FAULT_LOG")
WRITES = {"os.mkdir", "os.link", "os.symlink", "os.rename", "os.replace", "os.remove",
          "os.rmdir", "os.truncate", "shutil.rmtree", "shutil.copyfile", "ctypes.dlsym"}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND
steps = []


def is_write(event, args):
    if event == "open":
        path, mode, flags = args
        if isinstance(path, int):
            return False
        if mode is not None:
            return bool(set(mode) & set("wax+"))
        return bool(flags & WRITE_FLAGS)
    return event in WRITES


def hook(event, args):
    if not is_write(event, args) or (not steps and ".gen-" not in repr(args)):
        return
    steps.append(f"{time.monotonic():.6f} {event} {args!r}")
    if len(steps) == KILL_AT:
        os.kill(os.getpid(), signal.SIGKILL)
        os._exit(70)  # not reached: a SIGKILL to oneself lands before kill() returns


def save():
    text = "".join(step + "\\n" for step in steps)
    with open(LOG, "w", encoding="utf-8") as handle:
        handle.write(text)


sys.addaudithook(hook)
sys.argv = ["gen", *sys.argv[1:]]
try:
    runpy.run_module("gen", run_name="__main__", alter_sys=True)
finally:
    if LOG:
        save()
'''

_RENDER_ARGS = ("render", "-q", "--validator", "none")
_LEFTOVER = re.compile(r"\.gen-(tmp|old)-out-\d+")
_RUN_TIMEOUT_S = 120
_TIMED_BUDGET_S = 8.0
"""Each timed test stops starting trials after this long (a loaded CI runner is slower)."""
INDEX_WRITE = "/.gen-files'"
"""How the launcher logs the step that writes out/.gen-files (``open ('.../.gen-files', ...``)."""


# -- the fleet: an old render in out/, profiles edited so the next render differs a lot --

_EDITS = {
    "services/qwen-7b-edge.yaml": (("name: qwen-7b\n", "name: qwen-7b-b\n"),
                                   ("replicas: 3\n", "replicas: 5\n")),
    "services/llama-8b-mig.yaml": (("replicas: 2\n", "replicas: 4\n"),),
}


def _edit_profiles(profiles: Path) -> None:
    """Rename a service (files added and removed), scale one, move every GitOps revision."""
    for rel, edits in _EDITS.items():
        path = profiles / rel
        text = path.read_text(encoding="utf-8")
        for old, new in edits:
            assert old in text, f"the example fleet changed: {rel} has no {old!r}"
            text = text.replace(old, new)
        path.write_text(text, encoding="utf-8")
    moved = 0
    for path in sorted((profiles / "clusters").glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        if "revision: main\n" in text:
            path.write_text(text.replace("revision: main\n", "revision: release\n"),
                            encoding="utf-8")
            moved += 1
    assert moved, "the example fleet changed: no cluster with 'revision: main'"


def _render(root: Path, out: Path | None = None) -> Result:
    """``gen render`` in this process (the fast way to render after a trial)."""
    target = out if out is not None else root / "out"
    return CliRunner().invoke(
        cli, [*_RENDER_ARGS, "--profiles", str(root / "profiles"), "--out", str(target)]
    )


def _spawn(root: Path, launcher: Path | None = None, kill_at: int = 0,
           log: Path | None = None) -> subprocess.Popen[bytes]:
    """``python -m gen render`` in ``root``; through the launcher when one is given."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    if launcher is None:
        command = [sys.executable, "-m", "gen", *_RENDER_ARGS]
    else:
        command = [sys.executable, str(launcher), *_RENDER_ARGS]
        env["GEN_FAULT_KILL_AT"] = str(kill_at)
        if log is not None:
            env["GEN_FAULT_LOG"] = str(log)
    return subprocess.Popen(command, cwd=root, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _leftovers(root: Path) -> list[str]:
    return sorted(p.name for p in root.iterdir() if p.name.startswith(".gen-"))


@dataclass
class Scenario:
    """A fleet whose out/ holds the old render while its profiles already give the new one."""

    base: Path
    old_tree: Path
    old: dict[str, bytes]
    new: dict[str, bytes]
    launcher: Path
    steps: tuple[str, ...]
    exchange: int
    """1-based step just before the trees are swapped (the renameat2 lookup)."""
    duration: float
    """Seconds one ``python -m gen render`` takes here."""
    swap_after: float
    """Seconds from the first write step to the swap."""
    write_time: float
    """Seconds from the first write step to the last."""

    def reset(self, root: Path) -> None:
        """Put the old tree back in ``root/out`` and drop what a trial left beside it."""
        for name in _leftovers(root):
            shutil.rmtree(root / name)
        if (root / "out").exists():
            shutil.rmtree(root / "out")
        shutil.copytree(self.old_tree, root / "out")

    def check(self, root: Path, expect: str | None = None) -> str:
        """out/ is the old or the new tree; the next render completes and cleans up."""
        out = root / "out"
        got = snapshot_tree(out) if out.is_dir() else {}
        if got == self.old:
            outcome = "old"
        elif got == self.new:
            outcome = "new"
        else:  # pragma: no cover - the failure this module exists to catch
            keys = sorted(set(got) | set(self.old) | set(self.new))
            as_old = [k for k in keys if got.get(k) == self.old.get(k) != self.new.get(k)]
            as_new = [k for k in keys if got.get(k) == self.new.get(k) != self.old.get(k)]
            neither = [k for k in keys if got.get(k) not in (self.old.get(k), self.new.get(k))]
            pytest.fail(f"out/ mixes trees: old {as_old[:5]}, new {as_new[:5]}, "
                        f"neither {neither[:5]}")
        if expect is not None:
            assert outcome == expect
        assert all(_LEFTOVER.fullmatch(name) for name in _leftovers(root)), _leftovers(root)
        result = _render(root)
        assert result.exit_code == 0, result.output
        assert snapshot_tree(out) == self.new
        assert _leftovers(root) == []
        return outcome


@pytest.fixture(scope="module")
def scenario(tmp_path_factory: pytest.TempPathFactory) -> Scenario:
    """Render the example fleet, keep a hand-written file in out/, then edit the profiles."""
    work = tmp_path_factory.mktemp("faults")
    base = copy_fleet(work / "base")
    result = _render(base)
    assert result.exit_code == 0, result.output
    (base / "out" / "NOTES.md").write_text("hand written: gen must keep this\n")
    old_tree = work / "old-out"
    shutil.copytree(base / "out", old_tree)
    old = snapshot_tree(old_tree)
    _edit_profiles(base / "profiles")
    launcher = work / "kill_at.py"
    launcher.write_text(_LAUNCHER, encoding="utf-8")
    probe = work / "probe"
    shutil.copytree(base, probe)
    log = work / "steps.log"
    start = time.monotonic()
    proc = _spawn(probe, launcher, kill_at=0, log=log)
    _, err = proc.communicate(timeout=_RUN_TIMEOUT_S)
    duration = time.monotonic() - start
    assert proc.returncode == 0, err.decode()
    new = snapshot_tree(probe / "out")
    steps = tuple(log.read_text(encoding="utf-8").splitlines())
    swaps = [i for i, step in enumerate(steps, 1) if "renameat2" in step]
    assert len(swaps) == 1, "one render must swap its tree in once, with renameat2"
    exchange = swaps[0]
    assert INDEX_WRITE in steps[exchange - 2], "the step before the swap writes the index"
    added = set(new) - set(old)
    removed = set(old) - set(new)
    changed = {k for k in set(old) & set(new) if old[k] != new[k]}
    assert min(len(added), len(removed), len(changed)) >= 5, (added, removed, changed)
    assert old["NOTES.md"] == new["NOTES.md"]
    times = [float(step.split(" ", 1)[0]) for step in steps]
    return Scenario(base, old_tree, old, new, launcher, steps, exchange, duration,
                    swap_after=times[exchange - 1] - times[0], write_time=times[-1] - times[0])


@pytest.fixture
def fleet(tmp_path: Path, scenario: Scenario) -> Path:
    """A private copy of the scenario's fleet (new profiles, old out/)."""
    root = tmp_path / "repo"
    shutil.copytree(scenario.base, root)
    return root


def _report(kind: str, outcomes: list[str]) -> None:
    print(f"{kind}: {len(outcomes)} trials, {outcomes.count('old')} old, "
          f"{outcomes.count('new')} new")


# -- real SIGKILL ---------------------------------------------------------------------------


def test_sigkill_before_each_write_step(fleet: Path, scenario: Scenario) -> None:
    """Killed before any step of the write phase, out/ is exactly old (up to the swap) or new."""
    total, swap = len(scenario.steps), scenario.exchange
    if os.environ.get("GEN_FAULT_ALL_STEPS"):
        points = list(range(1, total + 2))
    else:  # the first step, mid-build, the index write, either side of the swap, clean-up
        points = sorted({1, swap // 2, swap - 1, swap, swap + 1, (swap + total) // 2, total + 1})
    outcomes = []
    for n in points:
        scenario.reset(fleet)
        proc = _spawn(fleet, scenario.launcher, kill_at=n)
        _, err = proc.communicate(timeout=_RUN_TIMEOUT_S)
        expected_rc = 0 if n > total else -signal.SIGKILL
        assert proc.returncode == expected_rc, (n, err.decode())
        outcomes.append(scenario.check(fleet, expect="old" if n <= swap else "new"))
    _report("kill before step N", outcomes)
    assert "old" in outcomes and "new" in outcomes


def test_sigkill_during_recovery(fleet: Path, scenario: Scenario) -> None:
    """A run killed while it deletes a previous run's leftovers leaves the new tree intact."""
    scenario.reset(fleet)
    first = _spawn(fleet, scenario.launcher, kill_at=scenario.exchange + 1)
    first.communicate(timeout=_RUN_TIMEOUT_S)
    assert first.returncode == -signal.SIGKILL
    assert len(_leftovers(fleet)) == 1  # the whole old tree, swapped out, not yet deleted
    second = _spawn(fleet, scenario.launcher, kill_at=len(scenario.old) // 2)
    second.communicate(timeout=_RUN_TIMEOUT_S)
    assert second.returncode == -signal.SIGKILL
    assert scenario.check(fleet, expect="new") == "new"


def test_sigkill_at_spread_times(fleet: Path, scenario: Scenario) -> None:
    """Killed after delays spread over a render's duration, out/ is the old or the new tree."""
    count = 6
    outcomes: list[str] = []
    start = time.monotonic()
    for i in range(count):
        if len(outcomes) >= 2 and time.monotonic() - start > _TIMED_BUDGET_S:
            break
        scenario.reset(fleet)
        proc = _spawn(fleet)
        time.sleep(scenario.duration * 1.25 * i / (count - 1))
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=_RUN_TIMEOUT_S)
        outcomes.append(scenario.check(fleet))
    _report("kill after a delay", outcomes)
    assert outcomes[0] == "old"  # killed before the interpreter could write anything


def test_sigkill_while_writing(fleet: Path, scenario: Scenario) -> None:
    """Killed within milliseconds of its temporary tree appearing, out/ is old or new."""
    outcomes: list[str] = []
    seen = 0
    start = time.monotonic()
    for share in (0.0, 0.5, 1.5, 3.0):  # of the time from the first write to the swap
        if len(outcomes) >= 2 and time.monotonic() - start > _TIMED_BUDGET_S:
            break
        delay = share * scenario.swap_after
        scenario.reset(fleet)
        proc = _spawn(fleet)
        deadline = time.monotonic() + _RUN_TIMEOUT_S
        while proc.poll() is None and time.monotonic() < deadline:
            if any(p.name.startswith(".gen-tmp-") for p in fleet.iterdir()):
                seen += 1
                time.sleep(delay)
                break
            time.sleep(0.0002)  # leave the second core to the render
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=_RUN_TIMEOUT_S)
        outcomes.append(scenario.check(fleet))
    _report(f"kill while writing ({seen} caught mid-write)", outcomes)


# -- full disk, read-only out/, permission denied --------------------------------------------


class _Disk:
    """Makes writes under ``root`` fail from step ``fail_at`` on, like a full or read-only disk.

    Space-taking writes fail from that step on; a rename or the exchange only at that step.
    With ``fail_at=None`` it only records the steps.
    """

    _TAKES_SPACE = frozenset({"mkdir", "write_bytes", "link", "copy2", "symlink_to"})

    def __init__(self, root: Path, fail_at: int | None = None, code: int = errno.ENOSPC) -> None:
        self.root = root.absolute()
        self.fail_at = fail_at
        self.code = code
        self.steps: list[tuple[str, str]] = []

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        for owner, name in ((Path, "mkdir"), (Path, "write_bytes"), (Path, "rename"),
                            (Path, "symlink_to"), (os, "link"), (shutil, "copy2"),
                            (output, "_exchange")):
            monkeypatch.setattr(owner, name, self._wrap(name, getattr(owner, name)))

    def _wrap(self, op: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def fake(*args: Any, **kwargs: Any) -> Any:
            target = args[1] if op in ("link", "copy2", "_exchange") else args[0]
            path = Path(target).absolute()
            if path.is_relative_to(self.root):
                self.steps.append((op, path.relative_to(self.root).as_posix()))
                n = len(self.steps)
                if self.fail_at is not None and (
                    n == self.fail_at or (n > self.fail_at and op in self._TAKES_SPACE)
                ):
                    raise OSError(self.code, os.strerror(self.code), str(path))
            return real(*args, **kwargs)

        return fake


def _step_named(steps: list[tuple[str, str]], where: str) -> int:
    """The 1-based step for ``first``/``middle``/``index``/``exchange`` in a recorded render."""
    if where == "first":
        return next(i for i, (_, p) in enumerate(steps, 1) if p.startswith(".gen-tmp-"))
    if where == "middle":
        return len(steps) // 2
    if where == "index":
        return next(i for i, (_, p) in enumerate(steps, 1) if p.endswith("/.gen-files"))
    return next(i for i, (op, _) in enumerate(steps, 1) if op == "_exchange")


@pytest.fixture(scope="module")
def disk_steps(
    scenario: Scenario, tmp_path_factory: pytest.TempPathFactory
) -> list[tuple[str, str]]:
    """The write steps of one in-process render of the scenario (nothing fails)."""
    root = tmp_path_factory.mktemp("disk") / "repo"
    shutil.copytree(scenario.base, root)
    disk = _Disk(root)
    with pytest.MonkeyPatch.context() as mp:
        disk.install(mp)
        result = _render(root)
    assert result.exit_code == 0, result.output
    assert snapshot_tree(root / "out") == scenario.new
    return disk.steps


@pytest.mark.parametrize(("where", "code"), [
    pytest.param(where, code, id=f"{where}-{errno.errorcode[code]}")
    for where, code in (
        ("first", errno.ENOSPC), ("middle", errno.ENOSPC), ("index", errno.ENOSPC),
        ("exchange", errno.ENOSPC), ("first", errno.EROFS), ("exchange", errno.EROFS),
        ("middle", errno.EACCES), ("exchange", errno.EACCES),
    )
])
def test_write_error_leaves_old_tree(
    fleet: Path, scenario: Scenario, disk_steps: list[tuple[str, str]],
    monkeypatch: pytest.MonkeyPatch, where: str, code: int,
) -> None:
    """A full disk, a read-only or an unwritable out/: one clear line, exit 1, old tree kept."""
    _Disk(fleet, _step_named(disk_steps, where), code).install(monkeypatch)
    result = _render(fleet)
    monkeypatch.undo()
    out = fleet / "out"
    assert result.exit_code == 1
    assert isinstance(result.exception, SystemExit)
    assert "Traceback" not in result.output and result.stdout == ""
    message = result.stderr.strip()
    assert len(message.splitlines()) == 1, message
    assert message.startswith((f"cannot write {out}/", f"cannot write {out}:"))
    assert f": {os.strerror(code)}; {out}/ was left as it was" in message
    assert ".gen-tmp" not in message
    assert snapshot_tree(out) == scenario.old
    assert _leftovers(fleet) == []
    assert _render(fleet).exit_code == 0  # the disk has room again: the render goes through
    assert snapshot_tree(out) == scenario.new


def test_disk_full_on_first_render_leaves_nothing(
    fleet: Path, disk_steps: list[tuple[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first render into a full disk leaves no out/ and no temporary folder."""
    shutil.rmtree(fleet / "out")
    _Disk(fleet, len(disk_steps) // 3).install(monkeypatch)
    result = _render(fleet)
    monkeypatch.undo()
    assert result.exit_code == 1
    assert "No space left on device" in result.stderr and "Traceback" not in result.output
    assert not (fleet / "out").exists()
    assert _leftovers(fleet) == []


def _no_exchange(a: Path, b: Path) -> bool:
    """A platform without renameat2(RENAME_EXCHANGE)."""
    del a, b
    return False


def test_fallback_rename_failure_puts_old_tree_back(
    fleet: Path, scenario: Scenario, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without renameat2, a failed second rename puts the old tree back and says so."""
    disk = _Disk(fleet, code=errno.EROFS)
    disk.install(monkeypatch)
    monkeypatch.setattr(output, "_exchange", _no_exchange)
    result = _render(fleet)  # records the steps of the fallback swap
    assert result.exit_code == 0, result.output
    renames = [i for i, (op, _) in enumerate(disk.steps, 1) if op == "rename"]
    assert len(renames) == 2
    scenario.reset(fleet)
    disk.steps.clear()
    disk.fail_at = renames[1]
    result = _render(fleet)
    monkeypatch.undo()
    assert result.exit_code == 1
    assert "Read-only file system" in result.stderr and "Traceback" not in result.output
    assert snapshot_tree(fleet / "out") == scenario.old
    assert _leftovers(fleet) == []


# -- out/ that is not a folder, or cannot be one ----------------------------------------------


def test_out_is_a_file_is_a_located_input_error(fleet: Path) -> None:
    """``--out`` naming a file is refused before anything runs, as the other input errors
    are (exit 1, located at the path, rule GEN000), and the file is kept."""
    target = fleet / "out.txt"
    target.write_text("mine\n")
    result = _render(fleet, target)
    assert result.exit_code == 1
    assert result.stderr.startswith(f"{target}: error GEN000: --out ")
    assert "is a file, not a folder" in result.stderr and "Traceback" not in result.output
    assert target.read_text() == "mine\n"
    assert _leftovers(fleet) == []


def test_write_tree_refuses_a_file_in_place_of_out(tmp_path: Path) -> None:
    """The library refuses to replace a file where out/ should be, and leaves no leftovers."""
    target = tmp_path / "out"
    target.write_text("mine\n")
    with pytest.raises(OutputError, match=r"out/: .*out is a file, not a folder"):
        write_tree({PurePosixPath("a.yaml"): b"a: 1\n"}, target)
    assert target.read_text() == "mine\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_parent_of_out_is_a_file(fleet: Path, scenario: Scenario) -> None:
    """out/ under a file: exit 1, a message naming that file, no traceback."""
    (fleet / "notes.txt").write_text("mine\n")
    result = _render(fleet, fleet / "notes.txt" / "out")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[0] == (
        f"{fleet}/notes.txt/out: error GEN000: --out '{fleet}/notes.txt/out' cannot be used: "
        f"{fleet}/notes.txt is not a directory"
    )
    assert (fleet / "notes.txt").read_text() == "mine\n"
    assert snapshot_tree(fleet / "out") == scenario.old


def test_missing_parents_of_out_are_created(fleet: Path, scenario: Scenario) -> None:
    """Like ``mkdir -p``: out/ in folders that do not exist yet is written, nothing left over."""
    out = fleet / "build" / "gitops" / "out"
    result = _render(fleet, out)
    assert result.exit_code == 0, result.output
    assert snapshot_tree(out) == {k: v for k, v in scenario.new.items() if k != "NOTES.md"}
    assert _leftovers(out.parent) == []


def test_symlinked_out_is_written_through(fleet: Path, scenario: Scenario) -> None:
    """out/ as a link to a folder: the folder gets the new tree, the link stays a link."""
    real = fleet / "manifests"
    (fleet / "out").rename(real)
    (fleet / "out").symlink_to("manifests")
    result = _render(fleet)
    assert result.exit_code == 0, result.output
    assert (fleet / "out").is_symlink() and (fleet / "out").readlink() == Path("manifests")
    assert snapshot_tree(real) == scenario.new
    assert _leftovers(fleet) == []


def test_leftover_that_is_not_a_folder_is_removed(fleet: Path, scenario: Scenario) -> None:
    """A stale temporary name that is a file or a link is cleaned up like a stale tree."""
    (fleet / ".gen-tmp-out-1").write_text("half\n")
    (fleet / ".gen-tmp-out-2").symlink_to("profiles")
    assert _render(fleet).exit_code == 0
    assert _leftovers(fleet) == []
    assert (fleet / "profiles").is_dir()
    assert snapshot_tree(fleet / "out") == scenario.new


def test_second_writer_waits_for_the_first(tmp_path: Path) -> None:
    """Two writers of one out/ take turns: the second waits while the first holds the lock."""
    import fcntl

    out = tmp_path / "out"
    write_tree({PurePosixPath("a.yaml"): b"# Generated by gen\na: 1\n"}, out)
    holder = os.open(tmp_path, os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)  # what a first, still running write_tree holds
    second = threading.Thread(
        target=write_tree, args=({PurePosixPath("a.yaml"): b"# Generated by gen\na: 2\n"}, out)
    )
    try:
        second.start()
        second.join(0.3)
        assert second.is_alive()
        assert (out / "a.yaml").read_bytes().endswith(b"a: 1\n")
    finally:
        os.close(holder)
    second.join(30)
    assert not second.is_alive()
    assert (out / "a.yaml").read_bytes().endswith(b"a: 2\n")
