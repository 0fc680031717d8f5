"""The pre-build key names a profile the loader made by its place, from the digest of the
bytes the loader read (:func:`gen.emit.cache.prebuild_key`)."""

from __future__ import annotations

from pathlib import Path

from gen.emit.cache.parsed import ParseCache
from gen.emit.cache.prebuild import _Projection, loaded_profiles, prebuild_key
from gen.fleet.plan import Plan
from gen.fleet.profile_set import Located
from gen.pipeline import resolve_fleet
from tests.helpers import copy_fleet


def _resolved(tmp_path: Path) -> tuple[Path, ParseCache, Plan]:
    root = copy_fleet(tmp_path / "fleet")
    parsed = ParseCache("env", tmp_path / "parsed", use=False)
    plan, _ = resolve_fleet(root / "profiles", base=root, parsed=parsed)
    return root, parsed, plan


def test_a_loaded_profile_is_written_by_its_place_and_another_whole(tmp_path: Path) -> None:
    """The loader's own profile, from bytes whose digest is known, is its file and index;
    the same document with another value (made by the resolver) is written whole, and so
    is the loader's own without a digest."""
    _, parsed, plan = _resolved(tmp_path)
    cluster = plan.clusters[0]
    loaded = loaded_profiles(plan.profiles)
    own = cluster.located
    assert id(own) in loaded and own.document.path in parsed.read
    projection = _Projection(cluster, loaded, parsed.read)
    assert projection.data(own) == {"loaded": [own.document.path, own.document.index]}
    remade = Located(own.value, own.document)
    assert "value" in projection.data(remade)
    assert "value" in _Projection(cluster, loaded, {}).data(own)


def test_a_file_edited_after_the_load_has_no_key(tmp_path: Path) -> None:
    """The key hashes the files as they are now; one that no longer holds the bytes the
    loader read (an edit during the render) gives no key, so nothing is taken on it."""
    root, parsed, plan = _resolved(tmp_path)
    cluster = plan.clusters[0]
    loaded = loaded_profiles(plan.profiles)
    key = prebuild_key(cluster, {}, root, loaded, parsed.read)
    assert key is not None and cluster.located.document.path in key.files
    edited = dict(parsed.read, **{cluster.located.document.path: "0" * 64})
    assert prebuild_key(cluster, {}, root, loaded, edited) is None


def test_the_key_follows_a_loaded_profile_s_bytes(tmp_path: Path) -> None:
    """A loaded profile is in the key by its file's bytes: another value there (the loader
    read other bytes) is another key."""
    root, parsed, plan = _resolved(tmp_path)
    cluster = plan.clusters[0]
    loaded = loaded_profiles(plan.profiles)
    before = prebuild_key(cluster, {}, root, loaded, parsed.read)
    path = root / cluster.located.document.path
    path.write_text(path.read_text("utf-8") + "# more\n", "utf-8")
    again = ParseCache("env", tmp_path / "parsed", use=False)
    plan2, _ = resolve_fleet(root / "profiles", base=root, parsed=again)
    after = prebuild_key(plan2.clusters[0], {}, root, loaded_profiles(plan2.profiles),
                         again.read)
    assert before is not None and after is not None and before.key != after.key


def test_keys_are_the_same_with_the_shared_writes(tmp_path: Path) -> None:
    """Writing each object that does not depend on the cluster once per render gives the
    same key, and the same files, as writing it again for every cluster: taken in both
    orders, so that what one cluster kept is used by the others."""
    from gen.emit.cache.prebuild import Shared

    root, parsed, plan = _resolved(tmp_path)
    loaded = loaded_profiles(plan.profiles)
    alone = [prebuild_key(c, {}, root, loaded, parsed.read) for c in plan.clusters]
    for order in (plan.clusters, tuple(reversed(plan.clusters))):
        shared: Shared = {}
        keys = {c.name: prebuild_key(c, {}, root, loaded, parsed.read, shared)
                for c in order}
        assert [keys[c.name] for c in plan.clusters] == alone
        assert shared  # something was met twice
    assert all(key is not None for key in alone)
