"""The parse cache (:mod:`gen.emit.cache.parsed`): a cached load is exactly a fresh parse,
and an entry is used only for the bytes, path and env it was made from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gen.emit.cache.parsed import ParseCache, cache_folder
from gen.fleet import loader
from gen.fleet.loader import Document, load_documents, parse_text
from gen.pipeline import render
from tests.helpers import REPO, copy_fleet


def _typed(value: Any) -> Any:
    """``value`` with every scalar's type beside it: ``1``, ``True`` and ``1.0`` are equal
    in Python, and must not be taken for one another."""
    if isinstance(value, dict):
        return ("dict", [(k, type(k).__name__, _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(v) for v in value])
    return (type(value).__name__, repr(value))


def _same(a: list[Document], b: list[Document]) -> bool:
    return a == b and [_typed(d.data) for d in a] == [_typed(d.data) for d in b] and [
        [(k, type(x).__name__) for k in d.positions for x in k] for d in a] == [
        [(k, type(x).__name__) for k in d.positions for x in k] for d in b]


def _round_trip(tmp_path: Path, text: str, shown: str = "profiles/x.yaml") -> tuple[
        list[Document], list[Document] | None]:
    raw = text.encode("utf-8")
    fresh, problems = parse_text(text, shown)
    cache = ParseCache("env", tmp_path / "parsed")
    if not problems:
        cache.put(shown, raw, fresh)
    return fresh, cache.get(shown, raw)


def test_every_example_profile_round_trips(tmp_path: Path) -> None:
    """Each profile of the example fleet, cached, loads as it parses."""
    files = sorted((REPO / "profiles").rglob("*.yaml"))
    assert files
    for file in files:
        text = file.read_text("utf-8")
        fresh, cached = _round_trip(tmp_path, text, f"profiles/{file.name}")
        assert cached is not None and _same(fresh, cached), file


_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(["yes", "1.30", "0o17", "~", "null", "-0.0", "1e3", "0x1F", ".5"]),
)
_DATA = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4),
    st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=4)), max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(docs=st.lists(_DATA, min_size=1, max_size=3), marker=st.booleans(),
       style=st.sampled_from([None, "'", '"']))
def test_a_cached_load_equals_a_fresh_parse(tmp_path_factory: pytest.TempPathFactory,
                                             docs: list[Any], marker: bool,
                                             style: str | None) -> None:
    """Any documents (plain scalars YAML reads as numbers, booleans or null, quoted ones,
    nested mappings and lists, suppression markers): the cached documents, positions,
    scalar texts and markers are the fresh parse's, with the same types."""
    text = yaml.safe_dump_all(docs, default_style=style, sort_keys=False)
    if marker:
        text = "# gen: ignore[GEN303] reason here\n" + text + "x: 1  # gen: ignore[GEN1]\n"
    fresh, problems = parse_text(text, "profiles/x.yaml")
    cache = ParseCache("env", tmp_path_factory.mktemp("parsed"))
    raw = text.encode("utf-8")
    cache.put("profiles/x.yaml", raw, fresh)
    cached = cache.get("profiles/x.yaml", raw)
    if problems:
        return  # load_documents never hands it over (the load fails)
    assert cached is not None and _same(fresh, cached)


@pytest.mark.parametrize("text", [
    "a: &x [1]\nb: *x\n",                 # an alias: one list reached twice
    "when: 2024-01-01\n",                # a date
    "8: eight\n",                        # a key that is not a string
    "blob: !!binary aGVsbG8=\n",         # bytes
    "n: .nan\n",                         # a float JSON has no word for
])
def test_what_json_cannot_hold_exactly_is_never_cached(tmp_path: Path, text: str) -> None:
    fresh, cached = _round_trip(tmp_path, text)
    assert fresh and cached is None


def test_an_entry_is_used_only_for_its_bytes_path_and_env(tmp_path: Path) -> None:
    text = "kind: Cluster\nname: a\n"
    raw = text.encode()
    docs, _ = parse_text(text, "profiles/a.yaml")
    folder = tmp_path / "parsed"
    cache = ParseCache("env", folder)
    cache.put("profiles/a.yaml", raw, docs)
    assert cache.get("profiles/a.yaml", raw) == docs
    assert cache.get("profiles/a.yaml", raw.replace(b"a\n", b"b\n")) is None
    assert cache.get("profiles/b.yaml", raw) is None
    assert ParseCache("other env", folder).get("profiles/a.yaml", raw) is None
    (entry,) = folder.iterdir()
    ParseCache("other env", folder).put("profiles/a.yaml", raw, docs)  # replaces it
    assert [p.name for p in folder.iterdir()] == [entry.name]
    assert cache.get("profiles/a.yaml", raw) is None
    cache.put("profiles/a.yaml", raw, docs)
    ParseCache("env", folder, scope="/another/fleet").put("profiles/a.yaml", raw, docs)
    assert len(list(folder.iterdir())) == 2 and cache.get("profiles/a.yaml", raw) == docs
    for damaged in (b"{not json", b"[]", json.dumps({"format": 1}).encode()):
        entry.write_bytes(damaged)
        assert cache.get("profiles/a.yaml", raw) is None


def test_an_entry_that_lies_about_its_file_is_not_used(tmp_path: Path) -> None:
    """An entry names the path and the bytes' SHA-256 it was made from: moved to another
    file's name, it is a miss."""
    folder = tmp_path / "parsed"
    cache = ParseCache("env", folder)
    a, b = b"name: a\n", b"name: b\n"
    cache.put("profiles/a.yaml", a, parse_text(a.decode(), "profiles/a.yaml")[0])
    (entry,) = folder.iterdir()
    cache.put("profiles/b.yaml", b, parse_text(b.decode(), "profiles/b.yaml")[0])
    other = next(p for p in folder.iterdir() if p != entry)
    other.write_bytes(entry.read_bytes())
    assert cache.get("profiles/b.yaml", b) is None


def test_a_folder_that_cannot_be_written_keeps_no_cache(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cache = ParseCache("env", blocker / "parsed")
    docs, _ = parse_text("a: 1\n", "profiles/a.yaml")
    cache.put("profiles/a.yaml", b"a: 1\n", docs)
    assert cache.get("profiles/a.yaml", b"a: 1\n") is None


def test_without_use_only_the_digests_are_taken(tmp_path: Path) -> None:
    """``--no-cache``: the folder is neither read nor written, the digests still taken."""
    docs, _ = parse_text("a: 1\n", "profiles/a.yaml")
    ParseCache("env", tmp_path / "p").put("profiles/a.yaml", b"a: 1\n", docs)
    off = ParseCache("env", tmp_path / "p", use=False)
    assert off.get("profiles/a.yaml", b"a: 1\n") is None
    off.put("profiles/b.yaml", b"b: 1\n", parse_text("b: 1\n", "profiles/b.yaml")[0])
    assert len(list((tmp_path / "p").iterdir())) == 1
    assert set(off.read) == {"profiles/a.yaml"}


def test_the_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.setenv("GEN_CACHE_DIR", str(tmp_path / "g"))
    assert cache_folder() == tmp_path / "g" / "parsed-v1"
    monkeypatch.delenv("GEN_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache_folder() == tmp_path / "x" / "gen" / "parsed-v1"


def test_a_render_after_a_one_file_change_parses_that_file_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The second render parses only the file that changed; the load is the same as the
    uncached one (the render writes the same out/ as --no-cache)."""
    monkeypatch.setenv("GEN_CACHE_DIR", str(tmp_path / "cache"))
    root = copy_fleet(tmp_path / "fleet")
    render(root / "profiles", root / "out", base=root, validator="embedded")
    service = root / "profiles/services/qwen-7b-edge.yaml"
    service.write_text(service.read_text("utf-8").replace("replicas: 3", "replicas: 4"),
                       "utf-8")
    parsed: list[str] = []
    real = loader.parse_text

    def counted(text: str, path: str) -> Any:
        parsed.append(path)
        return real(text, path)

    monkeypatch.setattr(loader, "parse_text", counted)
    render(root / "profiles", root / "out", base=root, validator="embedded")
    assert parsed == ["profiles/services/qwen-7b-edge.yaml"]
    monkeypatch.undo()
    cache = ParseCache("env", tmp_path / "again")
    load_documents(root / "profiles", base=root, parsed=cache)  # parsed, and kept
    cached = load_documents(root / "profiles", base=root, parsed=cache)
    assert len(list((tmp_path / "again").iterdir())) == len(
        list((root / "profiles").rglob("*.yaml")))
    assert _same(load_documents(root / "profiles", base=root), cached)
