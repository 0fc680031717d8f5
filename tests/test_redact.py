"""Credentials never reach gen's output: one function redacts them everywhere."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gen.emit.sarif import to_sarif
from gen.errors import Finding, GenError, SourceLocation
from gen.fleet.suppress import Suppression
from gen.redact import literal_secrets, redact

_HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
_GITHUB = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"


@pytest.mark.parametrize("secret", [
    _HF, _GITHUB, "github_pat_" + "A1b2" * 12, "glpat-abcdefghij0123456789",
    "sk-abcdefghijklmnopqrstuvwxyz", "AKIAABCDEFGHIJKLMNOP",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----",
])
def test_token_shapes_are_redacted(secret: str) -> None:
    """Every token shape gen knows is replaced, with the words around it kept."""
    text = redact(f"value {secret!r} is not valid")
    assert secret not in text and "<redacted>" in text and text.startswith("value '")


@pytest.mark.parametrize(("url", "shown"), [
    ("https://deploy:s3cret@github.com/o/r.git", "https://<redacted>@github.com/o/r.git"),
    ("https://x-token@github.com/o/r.git", "https://<redacted>@github.com/o/r.git"),
    ("ssh://git:pw@host/o/r.git", "ssh://<redacted>@host/o/r.git"),
    ("ssh://git@host/o/r.git", "ssh://git@host/o/r.git"),
    ("git@github.com:o/r.git", "git@github.com:o/r.git"),
    ("http://prometheus.monitoring.svc:9090", "http://prometheus.monitoring.svc:9090"),
])
def test_url_credentials_are_redacted(url: str, shown: str) -> None:
    """A URL's password, and any user of an http(s) URL, is redacted; ssh's user stays."""
    assert redact(url) == shown


@given(st.text(alphabet=st.characters(codec="ascii", exclude_characters="@"), max_size=80))
def test_text_without_a_secret_is_unchanged(text: str) -> None:
    """Text with no credential shape comes back as it was."""
    if not any(prefix in text for prefix in ("hf_", "sk-", "gh", "glpat-", "AKIA", "-----")):
        assert redact(text) == text


@given(st.text(alphabet=st.sampled_from(
    list("hfskgpousrtbihubpatlAKIBEGN_-:/@ .0123456789aZ\n")), max_size=80))
def test_the_literal_pre_check_never_hides_a_shape(text: str) -> None:
    """The cheap literal search redact() starts with finds something in every text one of
    the shapes matches (the alphabet is the shapes' own letters, so matches are common)."""
    from gen.redact import _ANY, _MAY_HOLD

    if _ANY.search(text) is not None:
        assert _MAY_HOLD.search(text) is not None


@pytest.mark.parametrize("secret", [
    _HF, _GITHUB, "github_pat_" + "A1b2" * 12, "glpat-abcdefghij0123456789",
    "sk-abcdefghijklmnopqrstuvwxyz", "AKIAABCDEFGHIJKLMNOP",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEow", "https://tok@h", "ssh://a:b@h",
])
def test_the_pre_check_finds_every_known_shape(secret: str) -> None:
    """Each known shape holds one of the literals the pre-check looks for."""
    from gen.redact import _MAY_HOLD

    assert _MAY_HOLD.search(f"x {secret} y") is not None


def test_literal_secrets_skip_url_credentials() -> None:
    """A URL's user information is its field's to refuse (with where the credential goes);
    tokens are found anywhere, keys included."""
    data = {"repo_url": "https://a:b@host/x", "labels": {_HF: "x"}, "args": [f"--t={_GITHUB}"]}
    assert sorted(literal_secrets(data)) == [
        (("args", 0), "a GitHub token"), (("labels", _HF), "a Hugging Face token")]


def test_a_finding_is_redacted_in_every_form() -> None:
    """Message, key path, hint and related notes: text, JSON and SARIF hold no token."""
    finding = Finding(
        "GEN002", f"{_HF!r} is not valid", SourceLocation("p.yaml", 3, 5), f"labels.{_HF}",
        hint=f"remove {_GITHUB}", related=(SourceLocation("q.yaml", 1, note=f"see {_HF}"),))
    sarif = json.dumps(to_sarif([finding], tool_version="0"))
    for text in (finding.format(), json.dumps(finding.to_json()), sarif):
        assert _HF not in text and _GITHUB not in text
        assert "<redacted>" in text


def test_errors_and_suppression_reasons_are_redacted() -> None:
    """An error's own message and a suppression's reason (printed, in JSON and SARIF)."""
    assert _HF not in GenError(f"cannot read {_HF}").format_message()
    suppression = Suppression("GEN303", f"token {_HF} rotated", SourceLocation("p.yaml", 1),
                              "inline")
    assert suppression.reason == "token <redacted> rotated"


_PIECES = st.sampled_from(["", "x", _HF, _GITHUB, "AKIAABCDEFGHIJKLMNOP", "https://a:b@h",
                           "sk-", "-----BEGIN ", "hf_", "\n", '"', "é", "\u2028"])
_TEXTS = st.lists(_PIECES, max_size=3).map("".join)
_DATA = st.recursive(
    st.one_of(_TEXTS, st.integers(), st.none(), st.booleans(), st.dates()),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.one_of(_TEXTS, st.integers(), st.dates()),
                                            inner, max_size=3)),
    max_leaves=10)


@given(_DATA)
def test_the_whole_document_pre_check_loses_no_literal_secret(data: object) -> None:
    """literal_secrets first searches the document as one JSON text: it finds exactly what
    walking every string finds, dates and keys of every type included."""
    from gen.redact import SECRET_SHAPES, _strings

    walked = []
    for path, text in _strings(data):
        for what, pattern in SECRET_SHAPES:
            if "URL" not in what and pattern.search(text):
                walked.append((path, what))
                break
    assert list(literal_secrets(data)) == walked
