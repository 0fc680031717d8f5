"""gen.emit.files: FileMap, a Mapping[PurePosixPath, bytes] held by the paths' text, behaves as
the dict of paths it stands for (the old form of a render's files), and makes no path for
the code that walks its texts."""

from __future__ import annotations

import pickle
from pathlib import PurePosixPath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gen.emit.files import FileMap, file_texts

PART = st.text(alphabet="abcz_-.0", min_size=1, max_size=5).filter(lambda p: p not in (".", ".."))
PATHS = st.lists(PART, min_size=1, max_size=4).map(lambda parts: PurePosixPath(*parts))
FILES = st.dictionaries(PATHS, st.binary(max_size=8), max_size=12)


def _files() -> dict[PurePosixPath, bytes]:
    return {PurePosixPath("c1/workloads/a.yaml"): b"a",
            PurePosixPath("c1/kustomization.yaml"): b"k",
            PurePosixPath("_bootstrap/c1/x.yaml"): b"x"}


@given(FILES)
def test_same_as_the_dict_of_paths(files: dict[PurePosixPath, bytes]) -> None:
    made = FileMap.of(files)
    assert made == files
    assert files == made
    assert dict(made) == files
    assert list(made) == list(files)  # the order given
    assert list(made.items()) == list(files.items())
    assert len(made) == len(files)
    for path, data in files.items():
        assert path in made
        assert made[path] == data
        assert made.get(path) == data
        assert made.holds(str(path))
        assert made.bytes_at(str(path)) == data
    assert made.rels() == [str(p) for p in files]
    assert list(made.text_items()) == [(str(p), d) for p, d in files.items()]
    assert list(file_texts(made)) == list(file_texts(files))


@given(FILES, FILES)
def test_equality_is_the_mappings(a: dict[PurePosixPath, bytes],
                                  b: dict[PurePosixPath, bytes]) -> None:
    assert (FileMap.of(a) == FileMap.of(b)) == (a == b)
    assert (FileMap.of(a) == b) == (a == b)
    assert (FileMap.of(a) != b) == (a != b)


def test_order_does_not_count_in_equality() -> None:
    files = _files()
    reversed_ = dict(reversed(list(files.items())))
    assert FileMap.of(files) == FileMap.of(reversed_)


def test_a_path_it_does_not_hold() -> None:
    made = FileMap.of(_files())
    missing = PurePosixPath("c2/a.yaml")
    assert missing not in made
    assert made.get(missing) is None
    with pytest.raises(KeyError):
        made[missing]
    text = "c1/workloads/a.yaml"  # the text of a path it holds is not a key: a path is
    assert text not in made  # type: ignore[comparison-overlap]
    with pytest.raises(KeyError):
        made[text]  # type: ignore[index]
    with pytest.raises(KeyError):
        made.bytes_at("c2/a.yaml")


def test_a_path_is_found_however_it_was_spelled() -> None:
    made = FileMap.of(_files())
    assert PurePosixPath("c1//workloads/./a.yaml") in made
    assert made[PurePosixPath("c1", "workloads", "a.yaml")] == b"a"


def test_takes_the_texts_as_they_are() -> None:
    texts = {"c1/a.yaml": b"1"}
    made = FileMap(texts)
    assert made == {PurePosixPath("c1/a.yaml"): b"1"}
    assert FileMap() == {}
    assert not FileMap()


def test_pickles_as_the_texts() -> None:
    made = FileMap.of(_files())
    back = pickle.loads(pickle.dumps(made))
    assert type(back) is FileMap
    assert back == made
    assert back.rels() == made.rels()
    assert b"PurePosixPath" not in pickle.dumps(made)  # no path goes over a worker's pipe


def test_unhashable_as_a_dict() -> None:
    with pytest.raises(TypeError):
        hash(FileMap())


def test_repr_names_the_texts() -> None:
    assert repr(FileMap({"a.yaml": b"x"})) == "FileMap({'a.yaml': b'x'})"


def test_iterating_keeps_no_path() -> None:
    made = FileMap.of(_files())
    first, second = list(made), list(made)
    assert first == second
    assert all(a is not b for a, b in zip(first, second, strict=True))
    assert all(type(rel) is str for rel in made.rels())
