"""Kubernetes' URL library (k8s.io/apiserver ``pkg/cel/library/urls.go``@v0.36.0): ``url``,
``isURL`` and the ``URL`` getters."""

from __future__ import annotations

from collections.abc import Callable

from cel_expr_python import cel

from gen.caches import memoize
from gen.dra.cel._libraries._base import BOOL, STR, Declarations, LibraryError, Overload, carried
from gen.k8s.urls import URL, URLError, parse_request_uri
from gen.k8s.urls import parse as parse_url

__all__ = ["DECLARATIONS"]

URL_KEY = "kubernetes.URL"
_URL = cel.Type.AbstractType(URL_KEY)


def _url(text: object) -> dict[str, str]:
    """``url(string)``: checked with ``ParseRequestURI``, parsed with ``Parse``; the carrier
    holds ``URL.String()``, which is what Kubernetes' ``URL.Equal`` compares."""
    if not isinstance(text, str):
        raise LibraryError("no such overload")
    try:
        parse_request_uri(text)
        parsed = parse_url(text)
    except URLError as err:
        raise LibraryError(f"URL parse error during conversion from string: {err}") from None
    return {URL_KEY: parsed.string()}


@memoize(maxsize=1024)
def _parsed_url(text: str) -> URL:
    return parse_url(text)


def _url_part(read: Callable[[URL], object]) -> Callable[[object], object]:
    def part(value: object) -> object:
        text = carried(value, URL_KEY)
        if text is None:
            raise LibraryError("no such overload")
        return read(_parsed_url(text))

    return part


def _is_url(text: object) -> bool:
    if not isinstance(text, str):
        raise LibraryError("no such overload")
    try:
        parse_request_uri(text)
    except URLError:
        return False
    return True


DECLARATIONS: Declarations = {
    "url": [Overload("string_to_url", _URL, [STR], False, _url)],
    "isURL": [Overload("is_url_string", BOOL, [STR], False, _is_url)],
    "getScheme": [Overload("url_get_scheme", STR, [_URL], True,
                           _url_part(lambda u: u.scheme.decode()))],
    "getHost": [Overload("url_get_host", STR, [_URL], True,
                         _url_part(lambda u: u.host.decode("utf-8", "replace")))],
    "getHostname": [Overload("url_get_hostname", STR, [_URL], True, _url_part(URL.hostname))],
    "getPort": [Overload("url_get_port", STR, [_URL], True, _url_part(URL.port))],
    "getEscapedPath": [Overload("url_get_escaped_path", STR, [_URL], True,
                                _url_part(URL.escaped_path))],
    "getQuery": [Overload("url_get_query", cel.Type.Map(STR, cel.Type.List(STR)), [_URL], True,
                          _url_part(URL.query))],
}
"""The URL library's functions."""
