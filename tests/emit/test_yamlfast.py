"""gen.emit.yamlfast against PyYAML: the same documents parsed, the same bytes written."""

from __future__ import annotations

import contextlib
import json
import math
import os
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gen import caches
from gen.emit import yamlfast
from gen.emit.render import tojson

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# Strings that stress the emitter's quoting choices: YAML 1.1 booleans and numbers,
# indicators, leading/trailing spaces, line breaks, non-ASCII.
TRICKY = st.sampled_from([
    "", " ", "yes", "No", "on", "OFF", "null", "~", "true", "1", "0o17", "0x1F", "1_000",
    "1e3", ".inf", "-.nan", "12:30", "2026-11-29", "a: b", "a #b", "#c", "- x", "? y",
    "@at", "`tick", "'q'", '"dq"', "multi\nline", "trail\n", "lead ", "\ttab", "é", "日本",
    "💥", "x\x85y", "a\u2028b", "*alias", "&anchor", "!tag", "%dir", "{a}", "[b]", "|", ">",
    "<<", "=", "0.90", "8000", "1.34.2",
])
TEXT = st.one_of(TRICKY, st.text(max_size=20))
KEYS = st.one_of(TRICKY.filter(bool), st.text(min_size=1, max_size=12))
SCALARS = st.one_of(
    TEXT, st.integers(), st.booleans(), st.none(),
    st.floats(allow_nan=False), st.just(math.inf),
)
JSONISH = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(KEYS, inner, max_size=4),
    ),
    max_leaves=25,
)
DOCS = st.one_of(st.dictionaries(KEYS, JSONISH, max_size=6), st.lists(JSONISH, max_size=6))
FUZZ = settings(
    max_examples=int(os.environ.get("GEN_FUZZ_EXAMPLES", "300")), deadline=None,
    derandomize="GEN_FUZZ_EXAMPLES" not in os.environ,
    suppress_health_check=[HealthCheck.too_slow],
)
"""Fixed examples in CI; ``GEN_FUZZ_EXAMPLES=N`` for a longer, random run."""


@pytest.mark.parametrize("value", [0.0, -0.0, 1, 1.0, True])
def test_equal_numbers_of_other_spellings_keep_their_own_text(value: object) -> None:
    for first in (0.0, -0.0, 1, 1.0, True):  # warm the cache with each spelling first
        yamlfast.dump({"k": first})
    assert yamlfast.dump({"k": value}) == yamlfast.dump_slow({"k": value})


@pytest.mark.slow  # 300-example differential fuzzing against PyYAML
@FUZZ
@given(DOCS)
def test_dump_writes_pyyaml_bytes(data: Any) -> None:
    assert yamlfast.dump(data) == yamlfast.dump_slow(data)


@pytest.mark.slow  # 300-example differential fuzzing against PyYAML
@FUZZ
@given(DOCS)
def test_load_reads_what_pyyaml_reads(data: Any) -> None:
    texts = [yamlfast.dump_slow(data), yaml.safe_dump(data)]
    with contextlib.suppress(ValueError):  # infinities: not JSON
        texts.append(tojson(data))
    for text in texts:
        assert yamlfast.load_all(text) == list(yaml.load_all(text, Loader=_Loader))


@pytest.mark.slow  # 300-example differential fuzzing against PyYAML
@FUZZ
@given(st.recursive(
    st.one_of(TEXT, st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False,
                                                                        allow_infinity=False)),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=25,
))
def test_tojson_is_a_yaml_flow_value_of_the_same_data(value: Any) -> None:
    """Every value a template writes with tojson reads back as itself, in any position."""
    assert yamlfast.load_all(f"k: {tojson(value)}\n") == [{"k": value}]
    assert yamlfast.load_all(f"- {tojson(value)}\n") == [[value]]


@pytest.mark.parametrize("text", ["x\x85y", "a\u2028b", "p\u2029q", "\ufeffbom", "c1\x9b"])
def test_tojson_escapes_what_yaml_would_fold_or_refuse(text: str) -> None:
    rendered = tojson({"v": text})
    assert all(ch not in rendered for ch in "\x85\u2028\u2029\ufeff\x9b")
    assert yaml.safe_load(rendered) == {"v": text}


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, {"a": [math.inf]}])
def test_tojson_refuses_what_kubernetes_cannot_hold(value: Any) -> None:
    with pytest.raises(ValueError, match="not JSON compliant"):
        tojson(value)


@pytest.mark.parametrize("text", [
    "a: &x [1, 2]\nb: *x\n",                       # anchors and aliases
    "base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n",  # merge keys
    "a: !!str 12\nb: !!int '7'\nc: !!binary aGk=\n",  # explicit tags
    "t: 2026-11-29 10:00:00\nd: 2026-11-29\n",      # timestamps
    "--- 1\n--- [a]\n---\n...\n--- {a: 1}\n",        # several documents, an empty one
    "",
])
def test_rare_yaml_takes_pyyamls_path(text: str) -> None:
    assert yamlfast.load_all(text) == list(yaml.load_all(text, Loader=_Loader))


def test_a_collection_as_key_is_pyyamls_error() -> None:
    with pytest.raises(yaml.constructor.ConstructorError, match="unhashable key"):
        yamlfast.load_all("? [complex, key]\n: v\n")


def test_duplicate_keys_are_an_error_not_a_silent_overwrite() -> None:
    with pytest.raises(yamlfast.DuplicateKeyError, match="'replicas'"):
        yamlfast.load_all("spec:\n  replicas: 1\n  replicas: 3\n")


def test_long_and_multiline_strings_take_pyyamls_path() -> None:
    data = {"script": "set -e\necho hi\n", "long": "x " * 2000, "list": ["a\nb"]}
    assert yamlfast.dump(data) == yamlfast.dump_slow(data)
    assert "script: |" in yamlfast.dump(data)


class _Hole:
    """A hole in a shape: a value not known when the shape's text is compiled."""

    def __init__(self, index: int) -> None:
        self.index = index


def _hole(node: Any) -> int | None:
    return node.index if type(node) is _Hole else None


@st.composite
def _shapes(draw: st.DrawFn) -> tuple[Any, list[Any]]:
    """A mapping with holes anywhere a value or item goes, and a value for each hole."""
    count = [0]

    def hole(_: Any) -> _Hole:
        count[0] += 1
        return _Hole(count[0] - 1)

    leaf = st.one_of(SCALARS, st.builds(hole, st.none()))
    tree = st.recursive(leaf, lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(KEYS, inner, max_size=3)), max_leaves=15)
    doc = draw(st.dictionaries(KEYS, tree, min_size=1, max_size=4))
    return doc, [draw(JSONISH) for _ in range(count[0])]


def _put(node: Any, values: list[Any]) -> Any:
    if type(node) is _Hole:
        return values[node.index]
    if type(node) is dict:
        return {k: _put(v, values) for k, v in node.items()}
    if type(node) is list:
        return [_put(v, values) for v in node]
    return node


def _fast(data: Any) -> bool:
    """Whether ``dump`` writes ``data`` itself (not through PyYAML)."""
    try:
        yamlfast._emit(data, "", [])
    except (yamlfast._Fallback, TypeError):
        return False
    return True


@pytest.mark.slow  # 100-example differential run
@settings(FUZZ, max_examples=int(os.environ.get("GEN_FUZZ_EXAMPLES", "100")))
@given(_shapes())
def test_a_shapes_text_filled_is_dump_of_the_filled_data(shape: tuple[Any, list[Any]]) -> None:
    """Byte for byte, for any value in any value or item position (a collection, an empty
    one, None, a string that needs quotes or takes PyYAML's path, nested ``- - `` items)."""
    doc, values = shape
    compiled = yamlfast.compile_shape(doc, _hole)
    fixed = _put(doc, [None] * len(values))
    if compiled is None:  # only where a fixed part is PyYAML's to write
        assert not _fast(fixed)
        return
    data = _put(doc, values)
    text = compiled.fill(values)
    assert (text is not None) == _fast(data)  # steps aside exactly where dump does
    if text is not None:
        assert text == yamlfast.dump(data)
    # With each value named by its JSON text, a collection's block is written once and
    # reused: the second fill comes from the cache and must be the same bytes.
    keys = [json.dumps(v, sort_keys=True) for v in values]
    assert compiled.fill(values, keys) == text
    assert compiled.fill(values, keys) == text


@pytest.mark.parametrize(("doc", "values"), [
    ({"a": [[_Hole(0), 1], {"x": _Hole(1)}, [[_Hole(2)]]]}, [{"k": [1]}, [], ["a", {"b": 2}]]),
    ({"a": [{"b": _Hole(0), "c": 1}]}, [{"n": {"m": None}}]),
    ({"a": _Hole(0), "b": [_Hole(1)]}, [{}, [[], {}]]),
    ({"a": _Hole(0)}, ["multi\nline"]),           # PyYAML's literal block: dump's job
])
def test_shape_text_in_nested_items(doc: Any, values: list[Any]) -> None:
    compiled = yamlfast.compile_shape(doc, _hole)
    assert compiled is not None
    text = compiled.fill(values)
    assert (text if text is not None else yamlfast.dump(_put(doc, values))) == \
        yamlfast.dump_slow(_put(doc, values))


@pytest.mark.parametrize("doc", [
    {_Hole(0): 1},                  # a key that is a hole: the order of keys would move
    {"a": "multi\nline"},           # a fixed part PyYAML writes
    {},
    [_Hole(0)],
])
def test_shapes_that_cannot_be_proven_are_refused(doc: Any) -> None:
    assert yamlfast.compile_shape(doc, _hole) is None


# The short paths for the values a render writes most (plain strings, integers), each
# checked against the full path on the alphabet it accepts and the words it must not take.
_PLAIN_TEXT = st.text(
    alphabet="abcxyzABCXYZ019_./-eEnNoOyY", min_size=1, max_size=12,
).filter(lambda s: s[0].isalpha())
_WORDS = st.sampled_from([
    *sorted(yamlfast._RESOLVES), "y", "n", "Y", "N", "yES", "nULL", "oN", "e5", "E1", "inf",
    "nan", "NaN", "a.", "a-",
    "a/", "a--b", "x_1.2", "v0.21.0", "Infinity", "NULL_", "nulls", "trueish",
])


@settings(max_examples=400, deadline=None, derandomize=True)
@given(st.one_of(_PLAIN_TEXT, _WORDS), st.booleans())
def test_plain_strings_are_written_as_pyyaml_writes_them(text: str, as_item: bool) -> None:
    caches.clear()
    data: Any = [text] if as_item else {"k": text, text: 1}
    assert yamlfast.dump(data) == yamlfast.dump_slow(data)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(st.integers(min_value=-(2**70), max_value=2**70))
def test_integers_are_written_as_pyyaml_writes_them(value: int) -> None:
    caches.clear()
    data = {"k": value, "l": [value]}
    assert yamlfast.dump(data) == yamlfast.dump_slow(data)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.one_of(TEXT, st.integers(), st.booleans(), st.none()))
def test_tojson_of_a_scalar_is_json_dumps_text(value: Any) -> None:
    import re

    expected = json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
    expected = re.sub("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]",
                      lambda m: f"\\u{ord(m.group()):04x}", expected)
    assert tojson(value) == expected
    assert tojson(value) == expected  # and again, from the cache
