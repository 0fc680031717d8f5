"""Go's ``net/url`` parser, rule for rule, as Kubernetes' CEL URL library calls it.

Kubernetes' ``url()`` (kubernetes/apiserver ``pkg/cel/library/urls.go`` @ v0.36.0) checks a
string with ``url.ParseRequestURI`` and then parses it with ``url.Parse``; the accessors return
``Scheme``, ``Host``, ``Hostname()``, ``Port()``, ``EscapedPath()`` and ``Query()``. This
module follows golang/go ``src/net/url/url.go`` (``parse``, ``getScheme``, ``parseAuthority``,
``parseHost``, ``unescape``, ``escape``, ``shouldEscape``, ``setPath``, ``String``,
``parseQuery``). Go strings are bytes: the parser works on the UTF-8 bytes of the text.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["URL", "URLError", "go_quote", "parse", "parse_request_uri"]

_PATH, _PATH_SEGMENT, _HOST, _ZONE, _USER_PASSWORD, _QUERY, _FRAGMENT = range(1, 8)
_HEX = b"0123456789abcdefABCDEF"


class URLError(ValueError):
    """A parse error, worded as Go's ``*url.Error``: ``parse "x": reason``."""


def go_quote(text: str) -> str:
    """Go's ``strconv.Quote`` (``%q``): printable characters kept, the rest escaped."""
    out = ['"']
    named = {"\a": r"\a", "\b": r"\b", "\f": r"\f", "\n": r"\n", "\r": r"\r", "\t": r"\t",
             "\v": r"\v", '"': r"\"", "\\": r"\\"}
    for ch in text:
        if ch in named:
            out.append(named[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        elif not ch.isprintable() and ord(ch) > 0x7F:
            out.append(f"\\u{ord(ch):04x}" if ord(ch) <= 0xFFFF else f"\\U{ord(ch):08x}")
        else:
            out.append(ch)
    return "".join(out) + '"'


def _unhex(c: int) -> int:
    return int(chr(c), 16)


def _should_escape(c: int, mode: int) -> bool:
    ch = chr(c)
    if ch.isascii() and ch.isalnum():
        return False
    if mode in (_HOST, _ZONE) and ch in "!$&'()*+,;=:[]<>\"":
        return False
    if ch in "-_.~":
        return False
    if ch in "$&+,/:;=?@":
        if mode == _PATH:
            return ch == "?"
        if mode == _PATH_SEGMENT:
            return ch in "/;,?"
        if mode == _USER_PASSWORD:
            return ch in "@/?:"
        if mode == _QUERY:
            return True
        if mode == _FRAGMENT:
            return False
    return not (mode == _FRAGMENT and ch in "!()*")


def _escape_error(s: bytes) -> str:
    return "invalid URL escape " + go_quote(s.decode("utf-8", "replace"))


def _unescape(s: bytes, mode: int) -> bytes:
    """Go's ``unescape``; raises :class:`ValueError` with Go's message."""
    n = 0
    has_plus = False
    i = 0
    while i < len(s):
        c = s[i]
        if c == 0x25:  # %
            n += 1
            if i + 2 >= len(s) or s[i + 1] not in _HEX or s[i + 2] not in _HEX:
                raise ValueError(_escape_error(s[i : i + 3]))
            if mode == _HOST and _unhex(s[i + 1]) < 8 and s[i : i + 3] != b"%25":
                raise ValueError(_escape_error(s[i : i + 3]))
            if mode == _ZONE:
                v = _unhex(s[i + 1]) << 4 | _unhex(s[i + 2])
                if s[i : i + 3] != b"%25" and v != 0x20 and _should_escape(v, _HOST):
                    raise ValueError(_escape_error(s[i : i + 3]))
            i += 3
        elif c == 0x2B:  # +
            has_plus = mode == _QUERY
            i += 1
        else:
            if mode in (_HOST, _ZONE) and c < 0x80 and _should_escape(c, mode):
                raise ValueError(
                    "invalid character " + go_quote(chr(c)) + " in host name"
                )
            i += 1
    if n == 0 and not has_plus:
        return s
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i]
        if c == 0x25:
            out.append(_unhex(s[i + 1]) << 4 | _unhex(s[i + 2]))
            i += 3
            continue
        out.append(0x20 if c == 0x2B and mode == _QUERY else c)
        i += 1
    return bytes(out)


def _escape(s: bytes, mode: int) -> bytes:
    out = bytearray()
    for c in s:
        if c == 0x20 and mode == _QUERY:
            out.append(0x2B)
        elif _should_escape(c, mode):
            out += b"%" + f"{c:02X}".encode()
        else:
            out.append(c)
    return bytes(out)


def _valid_optional_port(port: bytes) -> bool:
    if not port:
        return True
    return port[:1] == b":" and all(0x30 <= b <= 0x39 for b in port[1:])


def _valid_encoded(s: bytes, mode: int) -> bool:
    for c in s:
        if chr(c) in "!$&'()*+,;=:@[]%":
            continue
        if _should_escape(c, mode):
            return False
    return True


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


@dataclass(frozen=True)
class URL:
    """The fields of Go's ``url.URL`` that the CEL library reads (bytes, as Go holds them)."""

    scheme: bytes = b""
    opaque: bytes = b""
    user: bytes | None = None
    """The userinfo as written (escaped), None without one."""
    host: bytes = b""
    path: bytes = b""
    raw_path: bytes = b""
    force_query: bool = False
    raw_query: bytes = b""
    fragment: bytes = b""
    raw_fragment: bytes = b""

    def hostname(self) -> str:
        """``Hostname()``: the host without port and IPv6 brackets."""
        return _text(self._split_host_port()[0])

    def port(self) -> str:
        """``Port()``: the port without the colon, or ''."""
        return _text(self._split_host_port()[1])

    def _split_host_port(self) -> tuple[bytes, bytes]:
        host, port = self.host, b""
        colon = host.rfind(b":")
        if colon != -1 and _valid_optional_port(host[colon:]):
            host, port = host[:colon], host[colon + 1 :]
        if host.startswith(b"[") and host.endswith(b"]"):
            host = host[1:-1]
        return host, port

    def escaped_path(self) -> str:
        """``EscapedPath()``."""
        if self.raw_path and _valid_encoded(self.raw_path, _PATH):
            try:
                if _unescape(self.raw_path, _PATH) == self.path:
                    return _text(self.raw_path)
            except ValueError:
                pass
        if self.path == b"*":
            return "*"
        return _text(_escape(self.path, _PATH))

    def escaped_fragment(self) -> bytes:
        if self.raw_fragment and _valid_encoded(self.raw_fragment, _FRAGMENT):
            try:
                if _unescape(self.raw_fragment, _FRAGMENT) == self.fragment:
                    return self.raw_fragment
            except ValueError:
                pass
        return _escape(self.fragment, _FRAGMENT)

    def query(self) -> dict[str, list[str]]:
        """``Query()``: Go's ``ParseQuery``, pairs that fail to decode left out."""
        out: dict[str, list[str]] = {}
        rest = self.raw_query
        while rest:
            key, _, rest = rest.partition(b"&")
            if b";" in key or not key:
                continue
            key, _, value = key.partition(b"=")
            try:
                k, v = _unescape(key, _QUERY), _unescape(value, _QUERY)
            except ValueError:
                continue
            out.setdefault(_text(k), []).append(_text(v))
        return out

    def string(self) -> str:
        """``String()``: the URL reassembled (Kubernetes compares URLs by it)."""
        buf = bytearray()
        if self.scheme:
            buf += self.scheme + b":"
        if self.opaque:
            buf += self.opaque
        else:
            if self.scheme or self.host or self.user is not None:
                if self.host or self.path or self.user is not None:
                    buf += b"//"
                if self.user is not None:
                    buf += self.user + b"@"
                if self.host:
                    buf += _escape(self.host, _HOST)
            path = self.escaped_path().encode()
            if path and path[:1] != b"/" and self.host:
                buf += b"/"
            if not buf and b":" in path.partition(b"/")[0]:
                buf += b"./"
            buf += path
        if self.force_query or self.raw_query:
            buf += b"?" + self.raw_query
        if self.fragment:
            buf += b"#" + self.escaped_fragment()
        return _text(bytes(buf))


def _scheme(raw: bytes) -> tuple[bytes, bytes]:
    for i, c in enumerate(raw):
        ch = chr(c)
        if ch.isascii() and ch.isalpha():
            continue
        if ch.isdigit() or ch in "+-.":
            if i == 0:
                return b"", raw
            continue
        if ch == ":":
            if i == 0:
                raise ValueError("missing protocol scheme")
            return raw[:i], raw[i + 1 :]
        return b"", raw
    return b"", raw


_USERINFO_PUNCTUATION = frozenset("-._:~!$&'()*+,;=%@")


def _valid_userinfo(s: bytes) -> bool:
    return all(
        (ch.isascii() and ch.isalnum()) or ch in _USERINFO_PUNCTUATION
        for ch in _text(s)
    )


def _parse_host(host: bytes) -> bytes:
    if host.startswith(b"["):
        i = host.rfind(b"]")
        if i < 0:
            raise ValueError("missing ']' in host")
        colon_port = host[i + 1 :]
        if not _valid_optional_port(colon_port):
            raise ValueError(f"invalid port {go_quote(_text(colon_port))} after host")
        zone = host[:i].find(b"%25")
        if zone >= 0:
            return (_unescape(host[:zone], _HOST) + _unescape(host[zone:i], _ZONE)
                    + _unescape(host[i:], _HOST))
    elif (i := host.rfind(b":")) != -1:
        colon_port = host[i:]
        if not _valid_optional_port(colon_port):
            raise ValueError(f"invalid port {go_quote(_text(colon_port))} after host")
    return _unescape(host, _HOST)


def _parse_authority(authority: bytes) -> tuple[bytes | None, bytes]:
    i = authority.rfind(b"@")
    host = _parse_host(authority[i + 1 :] if i >= 0 else authority)
    if i < 0:
        return None, host
    userinfo = authority[:i]
    if not _valid_userinfo(userinfo):
        raise ValueError("net/url: invalid userinfo")
    for part in userinfo.split(b":", 1):
        _unescape(part, _USER_PASSWORD)
    return userinfo, host


def _parse(raw: bytes, via_request: bool) -> URL:
    if any(b < 0x20 or b == 0x7F for b in raw):
        raise ValueError("net/url: invalid control character in URL")
    if not raw and via_request:
        raise ValueError("empty url")
    if raw == b"*":
        return URL(path=b"*")
    scheme, rest = _scheme(raw)
    scheme = scheme.lower()
    force_query = False
    raw_query = b""
    if rest.endswith(b"?") and rest.count(b"?") == 1:
        force_query, rest = True, rest[:-1]
    else:
        rest, _, raw_query = rest.partition(b"?")
    if not rest.startswith(b"/"):
        if scheme:
            return URL(scheme=scheme, opaque=rest, force_query=force_query, raw_query=raw_query)
        if via_request:
            raise ValueError("invalid URI for request")
        if b":" in rest.partition(b"/")[0]:
            raise ValueError("first path segment in URL cannot contain colon")
    user: bytes | None = None
    host = b""
    if (scheme or (not via_request and not rest.startswith(b"///"))) and rest.startswith(b"//"):
        authority, slash, path = rest[2:].partition(b"/")
        rest = slash + path
        user, host = _parse_authority(authority)
    path = _unescape(rest, _PATH)
    raw_path = b"" if _escape(path, _PATH) == rest else rest
    return URL(scheme, b"", user, host, path, raw_path, force_query, raw_query)


def parse(text: str) -> URL:
    """Go's ``url.Parse``; raises :class:`URLError` (``parse "x": reason``)."""
    raw = text.encode("utf-8", "surrogatepass")
    head, hash_sign, frag = raw.partition(b"#")
    try:
        url = _parse(head, False)
    except ValueError as err:
        raise URLError(f"parse {go_quote(_text(head))}: {err}") from None
    if not hash_sign or not frag:
        return url
    try:
        fragment = _unescape(frag, _FRAGMENT)
    except ValueError as err:
        raise URLError(f"parse {go_quote(text)}: {err}") from None
    raw_fragment = b"" if _escape(fragment, _FRAGMENT) == frag else frag
    return URL(url.scheme, url.opaque, url.user, url.host, url.path, url.raw_path,
               url.force_query, url.raw_query, fragment, raw_fragment)


def parse_request_uri(text: str) -> URL:
    """Go's ``url.ParseRequestURI`` (absolute URIs and absolute paths only)."""
    try:
        return _parse(text.encode("utf-8", "surrogatepass"), True)
    except ValueError as err:
        raise URLError(f"parse {go_quote(text)}: {err}") from None
