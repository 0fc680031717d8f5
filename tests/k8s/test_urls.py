"""gen.k8s.urls: Go's net/url Parse and ParseRequestURI.

Expectations from golang/go src/net/url/url_test.go (TestParse, TestParseRequestURI,
TestParseErrors) and Kubernetes' CEL URL tests (kubernetes/kubernetes
staging/src/k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel/validation_test.go @ v1.36.0,
"URL parsing").
"""

from __future__ import annotations

import pytest

from gen.k8s.urls import URLError, go_quote, parse, parse_request_uri


def test_parts() -> None:
    u = parse("https://user:pass@kubernetes.io:80/docs/home?k1=a&k2=b&k2=c#anchor")
    assert (u.scheme, u.host, u.hostname(), u.port(), u.escaped_path()) == (
        b"https", b"kubernetes.io:80", "kubernetes.io", "80", "/docs/home"
    )
    assert u.query() == {"k1": ["a"], "k2": ["b", "c"]}
    assert parse("https://[::1]:80/").hostname() == "::1"
    assert parse("https://example.com/with space/").escaped_path() == "/with%20space/"
    assert parse("http://www.google.com/file%20one%26two").escaped_path() == "/file%20one%26two"
    assert parse("http://www.google.com/a%2fb").escaped_path() == "/a%2fb"  # RawPath kept


@pytest.mark.parametrize("text", [
    "http://www.google.com/?q=go+language", "mailto:webmaster@golang.org",
    "http://user:password@google.com", "http://[fe80::1%25en0]:8080/", "*",
    "HTTP://www.Google.com/", "http://www.google.com/a%2fb?q=c+d#f%20g",
])
def test_string_round_trip(text: str) -> None:
    expected = text.replace("HTTP", "http", 1)
    assert parse(text).string() == expected


@pytest.mark.parametrize(("text", "message"), [
    ("../relative-path", 'parse "../relative-path": invalid URI for request'),
    ("https://a:b:c/", 'parse "https://a:b:c/": invalid port ":c" after host'),
    ("", 'parse "": empty url'),
    (":x", 'parse ":x": missing protocol scheme'),
    ("http://[::1", 'parse "http://[::1": missing \']\' in host'),
    ("http://a b.com/", 'parse "http://a b.com/": invalid character " " in host name'),
    ("/%zz", 'parse "/%zz": invalid URL escape "%zz"'),
    ("http://x\n/", 'parse "http://x\\n/": net/url: invalid control character in URL'),
    ("http://us er@x/", 'parse "http://us er@x/": net/url: invalid userinfo'),
])
def test_request_uri_errors(text: str, message: str) -> None:
    with pytest.raises(URLError) as info:
        parse_request_uri(text)
    assert str(info.value) == message


def test_parse_accepts_relative_paths_and_fragments() -> None:
    assert parse("a/b#c").path == b"a/b"
    with pytest.raises(URLError, match="first path segment in URL cannot contain colon"):
        parse("1a:b/c")
    assert go_quote("é\x00") == '"é\\x00"'
