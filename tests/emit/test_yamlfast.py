"""gen.emit.yamlfast against PyYAML: the same documents parsed, the same bytes written."""

from __future__ import annotations

import contextlib
import math
import os
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

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
