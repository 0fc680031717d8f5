"""gen.fleet.loader: YAML with source positions, safe limits and syntax errors as findings."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from gen.errors import Finding, ProfileSyntaxError, SourceLocation
from gen.fleet import loader
from gen.fleet.loader import format_key_path, load_documents, parse_text
from tests.helpers import write_tree


def _only_finding(tmp_path: Path) -> str:
    with pytest.raises(ProfileSyntaxError) as info:
        load_documents(tmp_path / "profiles", base=tmp_path)
    assert len(info.value.findings) == 1, info.value.format_message()
    return info.value.findings[0].format()


def test_positions_of_nested_keys_and_list_items() -> None:
    """Nested keys and list items map to their 1-based line and column."""
    text = "kind: Cluster\nnode_pools:\n  - name: a\n    nodes: 2\n  - name: b\n"
    (doc,), findings = parse_text(text, "p.yaml")
    assert findings == []
    pos = doc.positions
    assert pos[("kind",)] == SourceLocation("p.yaml", 1, 1)
    assert pos[("node_pools",)] == SourceLocation("p.yaml", 2, 1)
    assert pos[("node_pools", 0)] == SourceLocation("p.yaml", 3, 5)
    assert pos[("node_pools", 0, "nodes")] == SourceLocation("p.yaml", 4, 5)
    assert pos[("node_pools", 1, "name")] == SourceLocation("p.yaml", 5, 5)


def test_locate_skips_segments_absent_from_yaml() -> None:
    """Document.locate drops discriminator tags and returns the deepest existing path."""
    (doc,), _ = parse_text("kind: Cluster\nnode_pools:\n  - name: a\n", "p.yaml")
    where, path = doc.locate(("Cluster", "node_pools", 0, "nodes"))
    assert path == ("node_pools", 0)
    assert where == SourceLocation("p.yaml", 3, 5)


def test_format_key_path() -> None:
    """Key paths read like services[0].gpu.count."""
    assert format_key_path(("services", 0, "gpu", "count")) == "services[0].gpu.count"
    assert format_key_path(()) == ""


def test_multi_document_positions_are_per_document() -> None:
    """Each document of a multi-document file keeps its own index and absolute lines."""
    text = "kind: A\nname: a\n---\nkind: B\nname: b\n"
    docs, findings = parse_text(text, "m.yaml")
    assert findings == []
    assert [d.index for d in docs] == [0, 1]
    assert docs[1].positions[("name",)] == SourceLocation("m.yaml", 5, 1)
    assert docs[1].location == SourceLocation("m.yaml", 4, 1)


def test_recursive_folders_yml_and_stable_order(tmp_path: Path) -> None:
    """.yaml and .yml files are read recursively in path order; hidden folders are skipped."""
    write_tree(tmp_path, {
        "profiles/b/deep/x.yml": "name: x\n",
        "profiles/a.yaml": "name: a\n",
        "profiles/.hidden/h.yaml": "name: h\n",
        "profiles/notes.txt": "name: t\n",
    })
    docs = load_documents(tmp_path / "profiles", base=tmp_path)
    assert [(d.path, d.data["name"]) for d in docs] == [
        ("profiles/a.yaml", "a"), ("profiles/b/deep/x.yml", "x"),
    ]


def test_empty_files_and_empty_documents_are_skipped(tmp_path: Path) -> None:
    """An empty file or a comment-only document yields no documents and no error."""
    write_tree(tmp_path, {"profiles/empty.yaml": "", "profiles/c.yaml": "# only a comment\n---\n"})
    assert load_documents(tmp_path / "profiles", base=tmp_path) == []


def test_syntax_error_is_file_line_col(tmp_path: Path) -> None:
    """Broken YAML is reported as path:line:col with rule GEN001."""
    write_tree(tmp_path, {"profiles/bad.yaml": "kind: Cluster\nname: x\n  oops: 1\n"})
    text = _only_finding(tmp_path)
    assert text.startswith("profiles/bad.yaml:3:7: error GEN001: YAML syntax error")


def test_syntax_errors_of_several_files_reported_together(tmp_path: Path) -> None:
    """All files' syntax errors come back in one ProfileSyntaxError."""
    write_tree(tmp_path, {"profiles/a.yaml": "a: [1\n", "profiles/b.yaml": "b: {\n"})
    with pytest.raises(ProfileSyntaxError) as info:
        load_documents(tmp_path / "profiles", base=tmp_path)
    assert [f.location.path for f in info.value.findings if f.location] == [
        "profiles/a.yaml", "profiles/b.yaml",
    ]


def test_non_utf8_bytes_reported_with_position(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 are an error naming the byte, its line and column."""
    write_tree(tmp_path, {"profiles/latin1.yaml": b"kind: Cluster\nname: caf\xe9\n"})
    text = _only_finding(tmp_path)
    assert text.startswith("profiles/latin1.yaml:2:10: error GEN001: not UTF-8: byte 0xe9")


def test_utf8_bom_is_accepted(tmp_path: Path) -> None:
    """A UTF-8 byte-order mark does not break loading."""
    write_tree(tmp_path, {"profiles/bom.yaml": b"\xef\xbb\xbfname: a\n"})
    (doc,) = load_documents(tmp_path / "profiles", base=tmp_path)
    assert doc.data == {"name": "a"}


def test_nul_bytes_refused(tmp_path: Path) -> None:
    """A file with NUL bytes is refused with a GEN001 finding."""
    write_tree(tmp_path, {"profiles/nul.yaml": b"name: a\x00b\n"})
    assert "file contains NUL bytes" in _only_finding(tmp_path)


def test_duplicate_keys_are_errors(tmp_path: Path) -> None:
    """A key given twice in one mapping is reported at the second one, naming the first line."""
    write_tree(tmp_path, {"profiles/d.yaml": """
        kind: Cluster
        gitops:
          engine: flux
          engine: argocd
    """})
    text = _only_finding(tmp_path)
    assert text.startswith("profiles/d.yaml:4:3: error GEN001: gitops.engine: duplicate key")
    assert "first at line 3" in text


def test_alias_bomb_refused_fast(tmp_path: Path) -> None:
    """A billion-laughs alias bomb is refused with a node-count finding, without expanding it."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 10):
        ref = f"*a{i - 1}"
        lines.append(f"a{i}: &a{i} [{', '.join([ref] * 9)}]")
    write_tree(tmp_path, {"profiles/bomb.yaml": "\n".join(lines) + "\n"})
    start = time.perf_counter()
    text = _only_finding(tmp_path)
    assert time.perf_counter() - start < 10  # 9**10 nodes would take hours and gigabytes
    assert "expands to more than" in text


def test_deep_nesting_refused(tmp_path: Path) -> None:
    """Nesting deeper than MAX_DEPTH is refused, even far past Python's recursion limit."""
    write_tree(tmp_path, {
        "profiles/deep.yaml": "a: " + "[" * 100 + "]" * 100 + "\n",
        "profiles/deeper.yaml": "a: " + "[" * 5000 + "]" * 5000 + "\n",
    })
    with pytest.raises(ProfileSyntaxError) as info:
        load_documents(tmp_path / "profiles", base=tmp_path)
    messages = [f.format() for f in info.value.findings]
    assert len(messages) == 2
    assert all("error GEN001" in m for m in messages)
    assert "nesting deeper than 64 levels" in messages[0]


def test_file_size_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file larger than MAX_FILE_BYTES is refused before parsing."""
    monkeypatch.setattr(loader, "MAX_FILE_BYTES", 64)
    write_tree(tmp_path, {"profiles/big.yaml": "name: " + "x" * 100 + "\n"})
    text = _only_finding(tmp_path)
    assert text.startswith("profiles/big.yaml: error GEN001: file is 107 bytes; the limit is 64")


def test_missing_profiles_folder(tmp_path: Path) -> None:
    """A profiles folder that does not exist is a ProfileSyntaxError, not an OSError."""
    with pytest.raises(ProfileSyntaxError, match="does not exist"):
        load_documents(tmp_path / "nope")


def test_unsafe_tags_are_refused(tmp_path: Path) -> None:
    """Python object tags are not constructed (safe loading only)."""
    write_tree(tmp_path, {"profiles/evil.yaml": "a: !!python/object/apply:os.system ['true']\n"})
    text = _only_finding(tmp_path)
    assert text.startswith("profiles/evil.yaml:1:4: error GEN001:")


def _syntax(tmp_path: Path) -> list[Finding]:
    with pytest.raises(ProfileSyntaxError) as info:
        load_documents(tmp_path / "profiles", base=tmp_path)
    return list(info.value.findings)


def test_unclosed_quote_reported_where_it_opens(tmp_path: Path) -> None:
    """An unclosed quote: the line and column of the opening quote, not the end of file."""
    write_tree(tmp_path, {"profiles/a.yaml": 'kind: Cluster\nname: "prod\nnodes: 1\n\n\n'})
    (finding,) = _syntax(tmp_path)
    assert finding.location == SourceLocation("profiles/a.yaml", 2, 7)
    assert "never closed" in finding.message


@pytest.mark.parametrize(("key", "what"), [
    ("8", "a number"), ("yes", "a boolean"), ("~", "null (nothing)"), ("1.5", "a number"),
    ("2024-01-01", "a date"),
])
def test_keys_yaml_does_not_read_as_names(tmp_path: Path, key: str, what: str) -> None:
    """'8:', 'yes:', '~:' are named in the error, with how to quote them, at the key."""
    write_tree(tmp_path, {"profiles/a.yaml": f"kind: MIGLayout\nprofiles:\n  {key}: 1\n"})
    (finding,) = _syntax(tmp_path)
    assert finding.rule == "GEN002"
    assert finding.message == f"key {key!r} is read by YAML as {what}, not as a name"
    assert finding.hint == f"quote it: '{key}':"
    assert finding.location == SourceLocation("profiles/a.yaml", 3, 3)
    assert finding.key_path == "profiles"


def test_quoted_keys_are_names(tmp_path: Path) -> None:
    """The near miss: quoted, the same keys are strings."""
    write_tree(tmp_path, {"profiles/a.yaml": "kind: X\nprofiles: {'8': 1, 'yes': 2, '~': 3}\n"})
    (doc,) = load_documents(tmp_path / "profiles", base=tmp_path)
    assert set(doc.data["profiles"]) == {"8", "yes", "~"}


def test_scalar_text_kept_for_messages(tmp_path: Path) -> None:
    """What the user wrote for scalars YAML did not read as strings is kept by key path."""
    write_tree(tmp_path, {"profiles/a.yaml": "v: 1.30\nn: yes\ns: text\nq: '1.30'\n"})
    (doc,) = load_documents(tmp_path / "profiles", base=tmp_path)
    assert doc.scalars == {("v",): "1.30", ("n",): "yes"}


def test_symlinks_inside_the_repository_are_followed(tmp_path: Path) -> None:
    """A linked file and a linked folder inside the fleet repository are read."""
    write_tree(tmp_path, {"common/svc.yaml": "kind: A\n", "common/more/b.yaml": "kind: B\n",
                          "profiles/own.yaml": "kind: C\n"})
    (tmp_path / "profiles/svc.yaml").symlink_to("../common/svc.yaml")
    (tmp_path / "profiles/more").symlink_to("../common/more")
    (tmp_path / "profiles/loop").symlink_to(".")
    docs = load_documents(tmp_path / "profiles", base=tmp_path)
    assert sorted(d.data["kind"] for d in docs) == ["A", "B", "C"]


def test_broken_symlink_is_a_located_error(tmp_path: Path) -> None:
    """A dangling link does not silently drop the service it stood for."""
    write_tree(tmp_path, {"profiles/own.yaml": "kind: C\n"})
    (tmp_path / "profiles/svc.yaml").symlink_to("../gone.yaml")
    (finding,) = _syntax(tmp_path)
    assert finding.location == SourceLocation("profiles/svc.yaml")
    assert "broken symbolic link" in finding.message and "'../gone.yaml'" in finding.message


def test_symlink_out_of_the_repository_is_refused(tmp_path: Path) -> None:
    """A link that leads outside the fleet repository is a located error."""
    outside = tmp_path / "elsewhere"
    write_tree(outside, {"x.yaml": "kind: C\n"})
    repo = tmp_path / "repo"
    write_tree(repo, {"profiles/own.yaml": "kind: C\n"})
    (repo / "profiles/x.yaml").symlink_to(outside / "x.yaml")
    with pytest.raises(ProfileSyntaxError) as info:
        load_documents(repo / "profiles", base=repo)
    (finding,) = info.value.findings
    assert finding.location == SourceLocation("profiles/x.yaml")
    assert "outside the fleet repository" in finding.message


@pytest.mark.parametrize("make", ["absent", "file"])
def test_profiles_folder_missing_or_a_file(tmp_path: Path, make: str) -> None:
    """No profiles folder, or a file in its place: one located GEN001 with a hint."""
    root = tmp_path / "profiles"
    if make == "file":
        root.write_text("")
    with pytest.raises(ProfileSyntaxError) as info:
        load_documents(root)
    (finding,) = info.value.findings
    assert finding.rule == "GEN001" and finding.location == SourceLocation(root.as_posix())
    assert finding.hint


_SCALARS = [
    "yes", "No", "on", "true", "FALSE", "~", "null", "Null", "", "0", "007", "0x1F", "0o17",
    "0b101", "1_000", "-12", "+3", "1e3", "1.5", ".inf", "-.Inf", ".nan", "2024-02-30",
    "2024-01-31", "12:30:45", "text", "a b", "'yes'", '"0x1F"', "'~'", "!!str 12",
    "!!int x", "!!int 12", "!!bool maybe", "!!bool yes", "!!float x", "!!float 1",
    "!!null ''", "!!timestamp x", "=", "<<", "*a", "&a 5", "[1, yes]", "{a: no}",
]


def _documents(text: str) -> str:
    """Everything parse_text returns, written so that 1, 1.0 and True differ."""
    documents, findings = parse_text(text, "p.yaml")
    return repr([(d.data, d.positions, d.scalars, d.end_line, d.markers)
                 for d in documents]) + repr(findings)


def test_remembered_scalars_load_exactly_as_fresh_ones() -> None:
    """The loader remembers each scalar's tag and value across documents and files; any
    text, parsed with those caches warm or with them off, gives the same documents,
    positions, scalar texts and findings (errors included)."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    scalar = st.sampled_from(_SCALARS)
    key = st.sampled_from(["kind", "name", "yes", "1", "'on'", "a", "<<", "~"])
    line = st.tuples(key, scalar).map(lambda kv: f"{kv[0]}: {kv[1]}")
    item = scalar.map(lambda s: f"  - {s}")
    doc = st.lists(st.one_of(line, st.tuples(key, st.lists(item, min_size=1, max_size=3))
                             .map(lambda kv: f"{kv[0]}:\n" + "\n".join(kv[1]))),
                   min_size=1, max_size=6).map("\n".join)
    texts = st.lists(doc, min_size=1, max_size=3).map("\n---\n".join)

    @settings(max_examples=300, deadline=None)
    @given(texts)
    def run(text: str) -> None:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(loader, "_CACHED_ENTRIES", 0)  # nothing remembered
            patch.setattr(loader, "_RESOLVED", {})
            patch.setattr(loader, "_CONSTRUCTED", {})
            fresh = _documents(text)
        _documents(text)  # remembers what it can
        assert _documents(text) == fresh

    run()


def test_the_scalar_caches_are_bounded() -> None:
    long = "x" * (loader._CACHED_TEXT + 1)
    parse_text(f"a: {long}\n", "p.yaml")
    assert all(len(k[0]) <= loader._CACHED_TEXT for k in loader._RESOLVED)
    assert all(len(k[1]) <= loader._CACHED_TEXT for k in loader._CONSTRUCTED)
