"""The fleet fast path (gen.emit.cache's fleet record, gen.pipeline.render).

A no-op render or ``--check`` whose input digest and files match the fleet record loads
nothing and returns what a full run returns (files, objects, warnings); any change to an
input or to out/ leaves the fast path, and the render is then exactly the uncached one.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gen.emit.cache import (
    FLEET_RECORD,
    FleetRecord,
    file_text,
    fleet_record_bytes,
    parse_fleet_record,
    record_path,
)
from gen.emit.cache.fleet import fleet_record_files
from gen.emit.render import BUILTIN_TEMPLATES
from gen.errors import Finding, GenError, Severity, SourceLocation
from gen.pipeline import RenderResult, render
from tests.helpers import copy_fleet, counting_reads, snapshot_tree, stat_tree

CLUSTERS = ("edge-l4", "mac-lab", "prod-us-east", "research-eu", "research-multinode",
            "shared-lab")
SERVICE = "profiles/services/qwen-7b-edge.yaml"


def _render(root: Path, **kwargs: Any) -> RenderResult:
    templates = root / "templates"
    kwargs.setdefault("validator", "embedded")
    return render(root / "profiles", root / "out", base=root,
                  templates_dir=templates if templates.is_dir() else None, **kwargs)


def _with_warning(root: Path) -> Path:
    """The example fleet has no lint warning: an image gen does not know gives GEN303."""
    path = root / SERVICE
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("serving:\n", "serving:\n  image: example.com/vllm:1\n", 1),
                    encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example fleet with one warning, rendered once (out/, its cache, the fleet record)."""
    root = _with_warning(copy_fleet(tmp_path_factory.mktemp("base") / "fleet"))
    _render(root)
    return root


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst)
    return dst


def test_a_noop_render_and_check_take_the_fast_path(
    rendered: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    root = _copy(rendered, tmp_path / "fleet")
    full = _render(root, check=True, no_cache=True)
    assert not full.fast_path and full.skipped == ()
    assert [f.rule for f in full.findings] == ["GEN303"]
    before = stat_tree(root / "out")
    monkeypatch.setattr("gen.pipeline.load_plan", _no_loading)
    for check in (False, True):
        fast = _render(root, check=check)
        assert fast.fast_path
        assert fast.skipped == CLUSTERS
        assert fast.outputs == full.outputs
        assert list(fast.outputs) == list(full.outputs)
        assert fast.objects == full.objects
        assert fast.findings == full.findings
        assert fast.changes == full.changes
        assert fast.diff == ""
    assert stat_tree(root / "out") == before  # nothing written


def test_no_cache_bypasses_the_fast_path(rendered: Path, tmp_path: Path) -> None:
    root = _copy(rendered, tmp_path / "fleet")
    result = _render(root, no_cache=True)
    assert not result.fast_path and result.skipped == ()
    assert snapshot_tree(root / "out") == snapshot_tree(rendered / "out")


def _profile_comment(root: Path) -> None:
    with (root / SERVICE).open("a", encoding="utf-8") as handle:
        handle.write("# a comment: one more byte, the same profiles\n")


def _profile_value(root: Path) -> None:
    path = root / SERVICE
    path.write_text(path.read_text("utf-8").replace("replicas: 3", "replicas: 4"), "utf-8")


def _new_profile_file(root: Path) -> None:
    (root / "profiles/services/empty.yaml").write_text("# nothing yet\n", encoding="utf-8")


def _override(root: Path, extra: str = "{# same output #}\n") -> None:
    target = root / "templates/vllm/pdb.yaml.j2"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text((BUILTIN_TEMPLATES / "vllm/pdb.yaml.j2").read_text("utf-8") + extra,
                      encoding="utf-8")


def _override_edit(root: Path) -> None:
    _override(root, "{# an override #}\n")
    _render(root)  # recorded with this override ...
    _override(root, "# another override\n")  # ... then the override changes the output


def _out_edit(root: Path) -> None:
    path = root / "out/edge-l4/workloads/edge/service-qwen-7b.yaml"
    path.write_bytes(path.read_bytes() + b"# hand edit\n")


def _out_delete(root: Path) -> None:
    (root / "out/edge-l4/workloads/edge/service-qwen-7b.yaml").unlink()


def _out_extra_gen_file(root: Path) -> None:
    src = root / "out/edge-l4/workloads/edge/service-qwen-7b.yaml"
    shutil.copyfile(src, src.with_name("service-old.yaml"))


def _index_delete(root: Path) -> None:
    (root / "out/.gen-files").unlink()


def _record_delete(root: Path) -> None:
    (root / "out" / record_path("mac-lab")).unlink()


def _record_extra(root: Path) -> None:
    (root / "out/.gen-cache/by-hand.json").write_text("{}\n", encoding="utf-8")


def _fleet_record_damaged(root: Path) -> None:
    (root / "out" / FLEET_RECORD).write_text("{not json", encoding="utf-8")


def _symlinked_profile(root: Path) -> None:
    target = root / "elsewhere.yaml"
    shutil.copyfile(root / SERVICE, target)
    (root / SERVICE).unlink()
    (root / SERVICE).symlink_to(target)


CHANGES = {
    "profile comment": _profile_comment,
    "profile value": _profile_value,
    "new profile file": _new_profile_file,
    "template override added": _override,
    "template override edited": _override_edit,
    "hand edit in out/": _out_edit,
    "deletion in out/": _out_delete,
    "extra gen file in out/": _out_extra_gen_file,
    "index deleted": _index_delete,
    "cluster record deleted": _record_delete,
    "extra cache file": _record_extra,
    "fleet record damaged": _fleet_record_damaged,
    "profile is a symlink": _symlinked_profile,
}


def _outcome(root: Path, **kwargs: Any) -> tuple[str, bool, dict[str, bytes], Any]:
    try:
        result = _render(root, **kwargs)
    except GenError as err:
        return type(err).__name__, False, snapshot_tree(root / "out"), None
    return ("ok", result.fast_path, snapshot_tree(root / "out"),
            (result.objects, result.findings, result.changes))


@pytest.mark.parametrize("change", sorted(CHANGES))
def test_any_change_leaves_the_fast_path_and_renders_exactly_the_uncached_result(
    rendered: Path, tmp_path: Path, change: str,
) -> None:
    cached = _copy(rendered, tmp_path / "cached")
    uncached = _copy(rendered, tmp_path / "uncached")
    for root in (cached, uncached):
        CHANGES[change](root)
    status, fast, tree, result = _outcome(cached)
    uncached_status, _, uncached_tree, uncached_result = _outcome(uncached, no_cache=True)
    assert not fast
    assert status == "ok"
    assert (status, tree, result) == (uncached_status, uncached_tree, uncached_result)
    # the render recorded its inputs again: the next one is the fast path (a symlinked
    # input never is)
    assert _render(cached).fast_path is (change != "profile is a symlink")


def test_a_check_after_a_change_is_not_the_fast_path(rendered: Path, tmp_path: Path) -> None:
    root = _copy(rendered, tmp_path / "fleet")
    _out_edit(root)
    with pytest.raises(GenError, match="stale"):
        _render(root, check=True)


def test_a_file_the_loader_ignores_keeps_the_fast_path(rendered: Path, tmp_path: Path) -> None:
    """The digest reads the loader's own file list: a hidden folder or a non-YAML file
    changes nothing a render reads, so the fast path still holds."""
    root = _copy(rendered, tmp_path / "fleet")
    (root / "profiles/.drafts").mkdir()
    (root / "profiles/.drafts/wip.yaml").write_text("kind: nonsense\n", encoding="utf-8")
    (root / "profiles/NOTES.txt").write_text("notes\n", encoding="utf-8")
    assert _render(root).fast_path


def test_options_are_in_the_digest(rendered: Path, tmp_path: Path) -> None:
    root = _copy(rendered, tmp_path / "fleet")
    assert not _render(root, check=True, validator="none").fast_path
    # --cluster never takes the fast path, and keeps the fleet record out/ has: it stays
    # valid while out/ holds every file it lists
    assert not _render(root, check=True, clusters=("edge-l4",)).fast_path
    assert not _render(root, clusters=("edge-l4",)).fast_path
    assert snapshot_tree(root / "out") == snapshot_tree(rendered / "out")
    assert _render(root).fast_path
    _profile_value(root)  # qwen-7b on edge-l4
    _render(root, clusters=("edge-l4",))
    assert not _render(root).fast_path  # out/ changed: the record no longer vouches
    assert _render(root).fast_path


def test_kubeconform_is_never_skipped(rendered: Path, tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from gen.emit.cache import render_digest

    args = (rendered / "profiles", None, rendered, ())
    assert render_digest(*args, "kubeconform") is None
    monkeypatch.setattr("gen.emit.kubeconform.find_kubeconform", lambda: "/bin/kubeconform")
    assert render_digest(*args, "auto") is None
    monkeypatch.setattr("gen.emit.kubeconform.find_kubeconform", lambda: None)
    assert render_digest(*args, "auto") is not None


def test_the_cli_prints_the_same_on_the_fast_path(rendered: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from gen.cli import cli

    root = _copy(rendered, tmp_path / "fleet")
    monkeypatch.chdir(root)
    runner = CliRunner()
    for extra in ([], ["--check"]):
        args = ["render", "--validator", "embedded", *extra]
        full = runner.invoke(cli, [*args, "--no-cache"])
        fast = runner.invoke(cli, args)
        assert full.exit_code == fast.exit_code == 0
        assert "GEN303" in full.output
        assert fast.output == full.output
    # and those runs loaded nothing: with the loader gone they print the same
    monkeypatch.setattr("gen.pipeline.load_plan", _no_loading)
    for extra in ([], ["--check"]):
        args = ["render", "--validator", "embedded", *extra]
        assert runner.invoke(cli, args).output == runner.invoke(cli, args).output
        assert "GEN303" in runner.invoke(cli, args).output


def _no_loading(*args: object, **kwargs: object) -> None:
    raise AssertionError("the fast path loads nothing")


def test_findings_round_trip_every_field() -> None:
    finding = Finding(
        "GEN999", "a message ü \u2028", SourceLocation("profiles/a.yaml", 3, 7), "a.b[0]",
        Severity.INFO, "a hint",
        (SourceLocation("profiles/b.yaml", 1, 0), SourceLocation("profiles/c.yaml")),
        service="svc", cluster="c1",
    )
    bare = Finding("GEN998", "no location", severity=Severity.WARNING)
    for f in (finding, bare):
        assert Finding.from_record(json.loads(json.dumps(f.to_record()))) == f
    record = FleetRecord("d" * 64, CLUSTERS, 5, {"a/b.yaml": "0" * 64}, (finding, bare))
    data = fleet_record_bytes(record)
    assert parse_fleet_record(data) == record
    assert fleet_record_bytes(parse_fleet_record(data)) == data  # type: ignore[arg-type]
    assert parse_fleet_record(data.replace(b'"GEN998"', b"7")) is None


def test_the_files_of_the_record_just_made_are_what_its_bytes_parse_to() -> None:
    files = {"b/z.yaml": "1" * 64, "a/b.yaml": "0" * 64, "a/a.yaml": "2" * 64}
    data = fleet_record_bytes(FleetRecord("d" * 64, CLUSTERS, 3, files, ()))
    copy = bytes(bytearray(data))  # equal bytes, another object: parsed
    made = fleet_record_files(data)  # the object just made: not parsed back
    assert made == fleet_record_files(copy) == files
    assert list(made or ()) == list(fleet_record_files(copy) or ()) == sorted(files)
    assert fleet_record_files(data) == files  # taken once; parsed after that, same answer
    damaged = bytes(bytearray(data.replace(b'"a/a.yaml"', b'"a/b.yaml"')))
    assert fleet_record_files(damaged) is None  # a path listed twice


def test_the_fleet_record_is_the_same_in_another_folder(rendered: Path, tmp_path: Path) -> None:
    other = _with_warning(copy_fleet(tmp_path / "somewhere" / "else" / "fleet"))
    _render(other)
    data = (other / "out" / FLEET_RECORD).read_bytes()
    assert data == (rendered / "out" / FLEET_RECORD).read_bytes()
    assert str(tmp_path).encode() not in data
    record = parse_fleet_record(data)
    assert record is not None
    assert record.clusters == CLUSTERS
    assert [f.rule for f in record.findings] == ["GEN303"]
    assert ".gen-files" in record.files and record_path("edge-l4") in record.files
    assert FLEET_RECORD not in record.files


def test_gen_files_and_check_ignore_the_fleet_record(rendered: Path, tmp_path: Path) -> None:
    from gen.emit.output import gen_files, read_index

    root = _copy(rendered, tmp_path / "fleet")
    assert FLEET_RECORD not in read_index(root / "out")
    assert FLEET_RECORD not in gen_files(root / "out")
    (root / "out" / FLEET_RECORD).unlink()
    result = _render(root, check=True)  # a missing record costs a render, never a stale
    assert not result.fast_path and result.changes.empty


def test_a_stale_temporary_tree_beside_out_leaves_the_fast_path(
    rendered: Path, tmp_path: Path,
) -> None:
    """A render tidies what a killed run left beside out/: the fast path must not skip it."""
    root = _copy(rendered, tmp_path / "fleet")
    stale = root / ".gen-tmp-out-999999"
    stale.mkdir()
    result = _render(root)
    assert not result.fast_path and result.changes.empty
    assert not stale.exists()
    assert _render(root).fast_path


def test_a_json_file_under_profiles_is_an_input(rendered: Path, tmp_path: Path) -> None:
    """A Model profile's config.json is read by the loader: adding or changing any JSON file
    under profiles/ leaves the fast path, as a YAML change does."""
    root = _copy(rendered, tmp_path / "fleet")
    config = root / "profiles/models/qwen3/config.json"
    config.parent.mkdir(parents=True)
    config.write_text('{"num_hidden_layers": 48}\n', encoding="utf-8")
    assert not _render(root).fast_path
    assert _render(root).fast_path
    config.write_text('{"num_hidden_layers": 47}\n', encoding="utf-8")
    assert not _render(root).fast_path


PERMISSIVE_CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: servicemonitors.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, plural: servicemonitors}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"""


def test_the_crd_folder_is_an_input(rendered: Path, tmp_path: Path) -> None:
    """A CRD folder, and any change to its files, leaves the fast path; a change to a schema
    also leaves the cluster records (the CRDs decide verdicts); the same folder again is fast."""
    root = _copy(rendered, tmp_path / "fleet")
    (root / "crds").mkdir()
    (root / "crds" / "sm.yaml").write_text(PERMISSIVE_CRD)
    first = _render(root, crds_dir=root / "crds")
    assert not first.fast_path and first.skipped == ()
    assert _render(root, crds_dir=root / "crds").fast_path
    # Bytes that do not change the schema: not the fast path, but every cluster record holds.
    (root / "crds" / "sm.yaml").write_text(PERMISSIVE_CRD.replace("storage: true",
                                                                  "storage: false"))
    same = _render(root, crds_dir=root / "crds")
    assert not same.fast_path and same.skipped == CLUSTERS
    (root / "crds" / "sm.yaml").write_text(PERMISSIVE_CRD.replace(
        "{type: object,", "{type: object, properties: {spec: {type: object, "
        "x-kubernetes-preserve-unknown-fields: true}},"))
    changed = _render(root, crds_dir=root / "crds")
    assert not changed.fast_path and changed.skipped == ()
    assert not _render(root).fast_path  # without the folder: the bundled CRDs again


# ------------------------------------------------------------------------- the stat table


def test_the_stat_table_vouches_for_every_file_after_a_render(
        stat_rendered: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a render, the fast path reads no file of out/ it is not asked for; the files
    it returns are the bytes in out/, read when asked for."""
    from gen.emit.cache import STAT_TABLE, read_stat_table

    record = parse_fleet_record((stat_rendered / "out" / FLEET_RECORD).read_bytes())
    assert record is not None
    table = read_stat_table(stat_rendered / "out")
    assert table is not None and table.vouched() == set(record.files)
    reads = counting_reads(monkeypatch)
    result = _render(stat_rendered, check=True)
    assert result.fast_path and reads == []
    on_disk = {p: (stat_rendered / "out" / p).read_bytes() for p in result.outputs}
    assert dict(result.outputs) == on_disk and len(reads) == len(on_disk)
    (stat_rendered / "out" / STAT_TABLE).unlink()  # the way to hash every file
    reads.clear()
    assert _render(stat_rendered, check=True).fast_path
    assert len(reads) == len(record.files)


@pytest.mark.parametrize("edit", ["same size, mtime put back", "replaced by rename",
                                  "appended"])
def test_a_hand_edit_is_reported_though_the_stat_table_vouched(
        stat_rendered: Path, edit: str) -> None:
    """Whatever a hand edit keeps (its size, its mtime, restored with utime), it changes the
    file's ctime or inode, so the stat no longer vouches, the file is hashed, and --check
    fails naming it."""
    import os

    path = stat_rendered / "out" / "prod-us-east" / "kustomization.yaml"
    data = path.read_bytes()
    before = path.stat()
    if edit == "same size, mtime put back":
        path.write_bytes(data.replace(b"resources:", b"resources;", 1))
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert path.stat().st_size == before.st_size
    elif edit == "replaced by rename":
        tmp = path.with_name("x.tmp")
        tmp.write_bytes(data.replace(b"resources:", b"resources;", 1))
        os.utime(tmp, ns=(before.st_atime_ns, before.st_mtime_ns))
        tmp.replace(path)
    else:
        path.write_bytes(data + b"# by hand\n")
    with pytest.raises(GenError) as err:
        _render(stat_rendered, check=True)
    assert "prod-us-east/kustomization.yaml" in str(err.value.message)


def test_only_files_old_enough_and_still_gen_s_are_vouched_for(tmp_path: Path) -> None:
    """A file whose mtime is within the margin of the time after which only someone else
    can have changed it, that is no longer the inode gen put there, or that the fleet
    record does not list, is listed without its stat; a file on a filesystem with
    whole-second times leaves the table out entirely."""
    import os
    import time

    from gen.emit.cache import STAT_MARGIN_NS, STAT_TABLE, read_stat_table, write_stat_table

    out = tmp_path / "out"
    (out / ".gen-cache").mkdir(parents=True)
    path = out / "a.yaml"
    path.write_bytes(b"a\n")
    (out / "mine.txt").write_bytes(b"not gen's\n")
    inode, now = path.stat().st_ino, time.time_ns()
    fleet = fleet_record_bytes(FleetRecord("d", (), 0, {"a.yaml": "0" * 64}, ()))
    write_stat_table(out, fleet, {"a.yaml": (inode, now)})
    assert not (out / STAT_TABLE).exists()
    later = now + 2 * STAT_MARGIN_NS
    write_stat_table(out, fleet, {"a.yaml": (inode + 1, later)})
    assert not (out / STAT_TABLE).exists()
    write_stat_table(out, fleet, {})
    assert not (out / STAT_TABLE).exists()
    write_stat_table(out, b"{not a fleet record", {"a.yaml": (inode, later)})
    assert not (out / STAT_TABLE).exists()
    mine = (out / "mine.txt").stat().st_ino
    write_stat_table(out, fleet, {"a.yaml": (inode, later), "mine.txt": (mine, later)})
    table = read_stat_table(out)
    assert table is not None and table.vouched() == {"a.yaml"}
    assert sorted(table.folders[""].split("//")) == [
        ".gen-cache/d", file_text("a.yaml", path.stat()), "mine.txt/?"]
    assert table.folders[".gen-cache"] == "_fleet.json/c//_stat.json/c"
    whole = (int(time.time()) - 10) * 1_000_000_000
    os.utime(path, ns=(whole, whole))
    write_stat_table(out, fleet, {"a.yaml": (inode, later)})
    assert not (out / STAT_TABLE).exists()


def test_the_digest_finds_the_built_in_templates_where_the_renderer_does() -> None:
    from gen.emit.cache import builtin_templates

    assert builtin_templates() == BUILTIN_TEMPLATES


def test_library_versions_are_what_importlib_metadata_says(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The digest's library versions, read without importing importlib.metadata, are the
    installed ones; a dist-info earlier on sys.path wins, as it does for importlib; an
    egg-info is asked of importlib.metadata."""
    import sys
    from importlib import metadata

    from gen.emit.cache import env

    assert env.library_versions() == {
        name: metadata.version(name) for name in env.LIBRARIES}
    (tmp_path / "Jinja2-9.9.dist-info").mkdir()
    (tmp_path / "Jinja2-9.9.dist-info/METADATA").write_text(
        "Metadata-Version: 2.1\nName: Jinja2\nVersion: 9.9\n\nVersion: 1.0\n")
    (tmp_path / "PyYAML-0.1.egg-info").write_text("Name: PyYAML\nVersion: 0.1\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    found = env.library_versions()
    assert found == {name: metadata.version(name) for name in env.LIBRARIES}
    assert found["jinja2"] == "9.9" and found["PyYAML"] == "0.1"


@pytest.mark.parametrize("where", ["beside", "base given", "base elsewhere", "relative"])
def test_the_digest_shows_each_profile_path_as_the_loader_does(
        rendered: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    from gen.emit.cache import shown_path
    from gen.fleet.discovery import display_path, json_files, profile_files

    root = _copy(rendered, tmp_path / "fleet")
    (root / "profiles/deep/er").mkdir(parents=True)
    (root / "profiles/deep/er/x.yaml").write_text("# nothing\n", encoding="utf-8")
    profiles = root / "profiles"
    base = {"beside": None, "base given": root, "base elsewhere": tmp_path / "other",
            "relative": None}[where]
    if where == "relative":
        monkeypatch.chdir(root)
        profiles = Path("profiles")
    shown_base = base if base is not None else profiles.resolve().parent
    files = [*profile_files(profiles), *json_files(profiles)]
    assert len(files) > 5
    for file in files:
        assert shown_path(file, profiles, profiles.resolve(),
                          shown_base.resolve()) == display_path(file, shown_base)
