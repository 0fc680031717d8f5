"""The stat table in a render that builds (:class:`gen.emit.cache.StatVouchers`): the
unchanged clusters' files are vouched for by their stat, not read, and every way of
changing a file or a folder behind gen's back is still found."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from gen.emit.cache import FLEET_RECORD, parse_record, record_path, stat_vouchers
from gen.pipeline import RenderResult, render
from tests.helpers import counting_reads, snapshot_tree

SERVICE = "profiles/services/qwen-7b-edge.yaml"
"""A service of edge-l4 alone: a change to it changes that cluster's files only."""
CHANGED = "edge-l4"
UNCHANGED = "prod-us-east"
FILE = f"{UNCHANGED}/kustomization.yaml"


def _render(root: Path, **kwargs: Any) -> RenderResult:
    return render(root / "profiles", root / "out", base=root, validator="embedded", **kwargs)


def _change_one_cluster(root: Path) -> None:
    path = root / SERVICE
    text = path.read_text("utf-8")
    assert "replicas: 3" in text
    path.write_text(text.replace("replicas: 3", "replicas: 4"), "utf-8")


def _uncached(root: Path, tmp_path: Path) -> dict[str, bytes]:
    """out/ as a render without the cache makes it from the same profiles."""
    fresh = tmp_path / "fresh"
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir()
    shutil.copytree(root / "profiles", fresh / "profiles")
    _render(fresh, no_cache=True)
    return snapshot_tree(fresh / "out")


def test_a_one_cluster_change_reads_no_file_of_the_other_clusters(
        stat_rendered: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a one-cluster change, no file of an unchanged cluster is read or hashed; the
    render still writes exactly what a render without the cache writes."""
    _change_one_cluster(stat_rendered)
    reads = counting_reads(monkeypatch)
    result = _render(stat_rendered)
    out = stat_rendered / "out"
    read_clusters = {Path(p).relative_to(out).parts[0] for p in reads}
    assert UNCHANGED in result.skipped and CHANGED not in result.skipped
    assert read_clusters <= {".gen-cache"}
    monkeypatch.undo()
    assert snapshot_tree(stat_rendered / "out") == _uncached(stat_rendered, tmp_path)


def _same_size_mtime_restored(path: Path) -> None:
    data, before = path.read_bytes(), path.stat()
    path.write_bytes(data.replace(b"resources:", b"resources;", 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size


def _renamed_over(path: Path) -> None:
    data, before = path.read_bytes(), path.stat()
    tmp = path.with_name("x.tmp")
    tmp.write_bytes(data.replace(b"resources:", b"resources;", 1))
    os.utime(tmp, ns=(before.st_atime_ns, before.st_mtime_ns))
    tmp.replace(path)


def _appended(path: Path) -> None:
    with path.open("ab") as handle:
        handle.write(b"# by hand\n")


def _deleted(path: Path) -> None:
    path.unlink()


EDITS = {
    "same size, mtime put back": _same_size_mtime_restored,
    "replaced by rename": _renamed_over,
    "appended": _appended,
    "deleted": _deleted,
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edited_or_deleted_file_is_not_vouched_for(stat_rendered: Path, edit: str) -> None:
    """Whatever an edit keeps (size, mtime), it changes the ctime, the inode, the size or
    the listing: the stat no longer vouches for the file, it is hashed, and the cluster's
    recorded files are not taken from out/."""
    out = stat_rendered / "out"
    found = parse_record((out / record_path(UNCHANGED)).read_bytes())
    assert found is not None and FILE in found.files
    vouchers = stat_vouchers(out)
    assert vouchers is not None and vouchers.files(out, found.files) is not None
    EDITS[edit](out / FILE)
    assert vouchers.files(out, found.files) is None


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_a_render_after_an_edit_writes_what_an_uncached_one_does(
        stat_rendered: Path, tmp_path: Path, edit: str) -> None:
    """An edited or deleted file of an unchanged cluster, in a render that builds (another
    cluster changed too), is put back: out/ is what a render without the cache writes."""
    EDITS[edit](stat_rendered / "out" / FILE)
    _change_one_cluster(stat_rendered)
    result = _render(stat_rendered)
    assert UNCHANGED not in result.skipped
    assert snapshot_tree(stat_rendered / "out") == _uncached(stat_rendered, tmp_path)


def test_an_extra_file_leaves_the_others_of_its_folder_vouched_for(
        stat_rendered: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file added to a cluster's folder changes that folder's listing: its files are
    each checked by their own stat (none read, as none changed), and the added file, with
    gen's header, is pruned as any render prunes it."""
    out = stat_rendered / "out"
    header = (out / FILE).read_bytes().split(b"\n", 1)[0]
    (out / UNCHANGED / "extra.yaml").write_bytes(header + b"\nkind: Extra\n")
    found = parse_record((out / record_path(UNCHANGED)).read_bytes())
    vouchers = stat_vouchers(out)
    assert found is not None and vouchers is not None
    reads = counting_reads(monkeypatch)
    files = vouchers.files(out, found.files)
    assert files is not None and reads == []
    monkeypatch.undo()
    _change_one_cluster(stat_rendered)
    _render(stat_rendered)
    assert not (out / UNCHANGED / "extra.yaml").exists()
    assert snapshot_tree(out) == _uncached(stat_rendered, tmp_path)


def test_a_table_of_another_fleet_record_vouches_for_nothing(stat_rendered: Path) -> None:
    """The table is bound to the fleet record by its SHA-256: with another record in
    out/, there are no vouchers and every file is hashed."""
    out = stat_rendered / "out"
    (out / FLEET_RECORD).write_bytes((out / FLEET_RECORD).read_bytes() + b" ")
    assert stat_vouchers(out) is None
