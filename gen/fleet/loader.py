"""Load profile YAML with the source position of every key path, then validate it.

Safe loading only. Every ``*.yaml`` / ``*.yml`` under the profiles folder is read
(recursively, multi-document). Each document keeps a map from key path (the same tuple
pydantic reports as ``loc``) to its :class:`SourceLocation`, so a validation error reads
``profiles/x.yaml:12:5: services[0].gpu.count: <message>``. All errors of all files are
collected before anything is raised.

Limits keep hostile input cheap: file size (never read past the limit), nesting depth and
alias expansion (the "billion laughs" bomb, measured before it is walked) are bounded,
duplicate keys are errors, bytes that are not UTF-8 and NUL bytes are reported with their
line and column, a scalar YAML cannot convert (``!!float x``, ``2024-02-30``) is a located
syntax error, and a file name that cannot be shown in messages and rendered headers (not
UTF-8, control or line-break characters) is refused.

Speed: PyYAML's C parser still resolves and constructs every scalar in Python. A fleet
repeats the same few hundred scalars (keys, kinds, GPU names) thousands of times, so the
loader remembers each scalar's tag by its text and implicit flags (the safe resolver has no
path resolvers: nothing else decides it), and each str, int, bool and null value by its tag
and text (immutable, so one value serves every use). A scalar PyYAML cannot construct is
never remembered and fails as before, at its node. A test compares every document,
position and finding with the caches on and off.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from gen.errors import Finding, ProfileSyntaxError, SourceLocation
from gen.fleet.discovery import (
    CONFIG_FILE,
    MAX_FILE_BYTES,
    discover,
    display_path,
    fleet_config_repo,
    json_files,
    profile_files,
)
from gen.rules import finding

__all__ = [
    "CONFIG_FILE",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "Document",
    "KeyPath",
    "Marker",
    "ParsedFiles",
    "discover",
    "display_path",
    "fleet_config_repo",
    "format_key_path",
    "json_files",
    "load_documents",
    "parse_text",
    "profile_files",
]

KeyPath = tuple[str | int, ...]

MAX_NODES = 200_000
"""Most YAML nodes one document may expand to, aliases counted at every use."""
MAX_DEPTH = 64
"""Deepest nesting of mappings and sequences."""

_BaseLoader: type[Any] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


_CACHED_TEXT = 256
"""Longest scalar text whose tag and value are remembered across documents and files."""
_CACHED_ENTRIES = 200_000
"""Most scalars remembered (a bound on memory for hostile input)."""
_RESOLVED: dict[tuple[str, bool, bool], str] = {}
"""(text, plain implicit, quoted implicit) → the tag PyYAML's safe resolver gives it."""
_PLAIN_TAGS = frozenset({"tag:yaml.org,2002:str", "tag:yaml.org,2002:int",
                         "tag:yaml.org,2002:bool", "tag:yaml.org,2002:null"})
_CONSTRUCTED: dict[tuple[str, str], Any] = {}
"""(tag, text) → the value the safe constructor makes of a scalar with one of
:data:`_PLAIN_TAGS` (str, int, bool, None: immutable, so shared)."""
_NOT_YET = object()


class _Loader(_BaseLoader):  # type: ignore[misc]
    """The safe loader, with every constructor failure reported at its node.

    PyYAML's constructors raise plain Python errors for scalars they cannot convert:
    ``!!float x`` (ValueError), ``!!bool maybe`` (KeyError), ``!!int`` (IndexError),
    ``!!timestamp x`` (AttributeError), ``2024-02-30`` (ValueError, untagged).
    """

    def resolve(self, kind: type[yaml.Node], value: Any, implicit: tuple[bool, bool]) -> str:
        """PyYAML's tag for a node, a scalar's looked up in :data:`_RESOLVED` first. The
        safe resolver has no path resolvers, so a scalar's tag depends on its text and its
        two implicit flags alone (:meth:`yaml.resolver.BaseResolver.resolve`)."""
        if kind is not yaml.ScalarNode or self.yaml_path_resolvers:
            return super().resolve(kind, value, implicit)  # type: ignore[no-any-return]
        key = (value, implicit[0], implicit[1])
        tag = _RESOLVED.get(key)
        if tag is None:
            tag = super().resolve(kind, value, implicit)
            if len(value) <= _CACHED_TEXT and len(_RESOLVED) < _CACHED_ENTRIES:
                _RESOLVED[key] = tag
        return tag

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        if type(node) is yaml.ScalarNode and node.tag in _PLAIN_TAGS:
            # A str, int, bool or null scalar is a function of its tag and text alone,
            # and immutable: the value constructed once is the value every time.
            key = (node.tag, node.value)
            found = _CONSTRUCTED.get(key, _NOT_YET)
            if found is not _NOT_YET:
                return found
            value = self._construct_object(node, deep)
            if len(node.value) <= _CACHED_TEXT and len(_CONSTRUCTED) < _CACHED_ENTRIES:
                _CONSTRUCTED[key] = value
            return value
        return self._construct_object(node, deep)

    def _construct_object(self, node: yaml.Node, deep: bool) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, LookupError, TypeError, AttributeError, ArithmeticError) as err:
            tag = str(node.tag).replace("tag:yaml.org,2002:", "!!")
            what = f"{node.value!r}" if isinstance(node, yaml.ScalarNode) else "the value"
            why = f": {err}" if isinstance(err, (ValueError, ArithmeticError)) else ""
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot read {what} as {tag}{why}", node.start_mark,
            ) from None


@dataclass(frozen=True)
class Marker:
    """An inline suppression comment: ``# gen: ignore[GEN301,GEN303] reason``.

    At the end of a line it covers that line; alone on a line it covers the next line
    that is neither blank nor a comment.
    """

    rules: tuple[str, ...]
    reason: str
    location: SourceLocation
    """Where the comment is."""
    line: int
    """The line it covers."""


MARKER = re.compile(r"(?:^|\s)#\s*gen:\s*ignore\[([^\]]*)\][ \t]*(.*?)\s*$")
"""An inline suppression: ``# gen: ignore[RULE,RULE] reason``."""


def scan_markers(text: str, path: str) -> list[Marker]:
    """Every inline suppression comment of a file's text."""
    if "gen:" not in text:
        return []
    lines = text.splitlines()
    markers: list[Marker] = []
    for number, line in enumerate(lines, 1):
        match = MARKER.search(line)
        if match is None:
            continue
        target = number
        if line[: match.start()].strip() == "":
            target = next(
                (n for n in range(number + 1, len(lines) + 1)
                 if lines[n - 1].strip() and not lines[n - 1].lstrip().startswith("#")),
                number,
            )
        rules = tuple(r.strip() for r in match.group(1).split(",") if r.strip())
        column = match.start() + (0 if line[match.start()] == "#" else 1) + 1
        markers.append(Marker(rules, match.group(2), SourceLocation(path, number, column),
                              target))
    return markers


@dataclass(frozen=True)
class Document:
    """One YAML document of a profile file, with positions."""

    path: str
    index: int
    data: Any
    positions: Mapping[KeyPath, SourceLocation]
    end_line: int = 0
    """The last line of the document (0: unknown)."""
    scalars: Mapping[KeyPath, str] = field(default_factory=dict)
    """The text of every plain scalar YAML did not read as a string (``yes``, ``1.30``,
    ``2024-01-01``), by key path: what the user wrote, for messages."""
    markers: tuple[Marker, ...] = ()
    """The inline suppression comments covering a line of this document."""

    @property
    def location(self) -> SourceLocation:
        """Where the document starts."""
        return self.positions.get((), SourceLocation(self.path, 1, 1))

    def locate(self, loc: Sequence[str | int]) -> tuple[SourceLocation, KeyPath]:
        """The best position for a pydantic ``loc``; segments absent from the YAML are skipped.

        Discriminated unions put the tag value (``"Cluster"``) into ``loc``; such segments
        do not exist in the document and are dropped, so the returned key path is the one
        the user wrote.
        """
        path: KeyPath = ()
        best = self.location
        for segment in loc:
            candidate = (*path, segment)
            if candidate in self.positions:
                path = candidate
                best = self.positions[candidate]
        return best, path


def format_key_path(path: Sequence[str | int]) -> str:
    """``("services", 0, "gpu")`` → ``services[0].gpu``."""
    out = ""
    for segment in path:
        if isinstance(segment, int):
            out += f"[{segment}]"
        else:
            out += f".{segment}" if out else str(segment)
    return out


def _mark(path: str, mark: Any) -> SourceLocation:
    return SourceLocation(path, mark.line + 1, mark.column + 1)


_STR_TAG = "tag:yaml.org,2002:str"
_TAG_WORDS = {
    "tag:yaml.org,2002:int": "a number", "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:bool": "a boolean", "tag:yaml.org,2002:null": "null (nothing)",
    "tag:yaml.org,2002:timestamp": "a date",
}


def _key_problem(key_node: yaml.Node, path: KeyPath, here: SourceLocation) -> Finding | None:
    """A finding for a mapping key YAML does not read as a string (``8:``, ``yes:``,
    ``~:``): every key of a profile is a name."""
    if isinstance(key_node, yaml.ScalarNode):
        if key_node.tag in (_STR_TAG, "tag:yaml.org,2002:merge"):
            return None
        raw = key_node.value
        what = _TAG_WORDS.get(str(key_node.tag), f"a {key_node.tag}")
        return finding(
            "GEN002", f"key {raw!r} is read by YAML as {what}, not as a name",
            here, key_path=format_key_path(path),
            hint=f"quote it: '{raw}':" if "'" not in raw else f'quote it: "{raw}":',
        )
    return finding(
        "GEN002", "a key must be a name, not a list or a mapping", here,
        key_path=format_key_path(path),
    )


def _walk(
    node: yaml.Node, path: KeyPath, file: str, out: dict[KeyPath, SourceLocation],
    budget: list[int], depth: int, findings: list[Finding],
    scalars: dict[KeyPath, str] | None = None,
) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise _TooBig
    if depth > MAX_DEPTH:
        raise _TooDeep(_mark(file, node.start_mark))
    if path not in out:  # a mapping's value is already placed at its key
        out[path] = _mark(file, node.start_mark)
    if isinstance(node, yaml.ScalarNode):
        if scalars is not None and not node.style and node.tag != _STR_TAG:
            scalars.setdefault(path, node.value)
    elif isinstance(node, yaml.MappingNode):
        seen: dict[str, SourceLocation] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.value)
            here = _mark(file, key_node.start_mark)
            problem = _key_problem(key_node, path, here)
            if problem is not None:
                findings.append(problem)
            if key in seen and key != "<<":
                findings.append(finding(
                    "GEN001", f"duplicate key {key!r} (first at line {seen[key].line})",
                    here, key_path=format_key_path((*path, key)),
                    hint="YAML keeps only the last value; remove one of them",
                ))
            seen[key] = here
            child = (*path, key)
            out.setdefault(child, here)
            _walk(value_node, child, file, out, budget, depth + 1, findings, scalars)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            child = (*path, i)
            _walk(item, child, file, out, budget, depth + 1, findings, scalars)


class _TooBig(Exception):
    pass


def _expanded_size(root: yaml.Node, cap: int) -> int:
    """Nodes the document expands to, aliases counted at every use; at most ``cap``.

    Shared (aliased) nodes are sized once, so a "billion laughs" bomb is measured in
    microseconds instead of being walked node by node. Iterative: alias chains can be
    deeper than Python's recursion limit. A node that contains itself counts as ``cap``.
    """
    sizes: dict[int, int] = {}
    open_: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        children = _children(node)
        if finished:
            open_.discard(key)
            sizes[key] = min(cap, 1 + sum(sizes[id(c)] for c in children))
            continue
        if key in sizes:
            continue
        if key in open_:
            return cap  # a recursive alias: infinite
        open_.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in children if id(c) not in sizes)
    return sizes[id(root)]


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [value for _, value in node.value]  # keys are not walked (nor counted)
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


class _TooDeep(Exception):
    def __init__(self, where: SourceLocation) -> None:
        self.where = where


def parse_text(text: str, path: str) -> tuple[list[Document], list[Finding]]:
    """Parse one file's text into documents; syntax problems come back as findings."""
    documents: list[Document] = []
    findings: list[Finding] = []
    markers = scan_markers(text, path)
    loader = _Loader(text)
    may_alias = "*" in text
    try:
        index = 0
        while loader.check_node():
            node = loader.get_node()
            if node is None:  # pragma: no cover - check_node said there is one
                break
            positions: dict[KeyPath, SourceLocation] = {}
            scalars: dict[KeyPath, str] = {}
            where = _mark(path, node.start_mark)
            try:
                # Without an alias ("*name") the walk's own budget bounds the size.
                if may_alias and _expanded_size(node, MAX_NODES + 1) > MAX_NODES:
                    raise _TooBig
                _walk(node, (), path, positions, [MAX_NODES], 0, findings, scalars)
            except _TooBig:
                findings.append(finding(
                    "GEN001", f"document expands to more than {MAX_NODES} nodes",
                    where, hint="YAML aliases that expand exponentially are refused",
                ))
                index += 1
                continue
            except _TooDeep as deep:
                findings.append(finding(
                    "GEN001", f"nesting deeper than {MAX_DEPTH} levels", deep.where,
                ))
                index += 1
                continue
            data = loader.construct_document(node)
            if data is not None:
                end = node.end_mark.line + (1 if node.end_mark.column else 0)
                first = where.line
                documents.append(Document(
                    path, index, data, positions, max(end, first), scalars,
                    tuple(m for m in markers if first <= m.line <= max(end, first)),
                ))
            index += 1
    except yaml.MarkedYAMLError as err:
        findings.append(_syntax_finding(err, path, text))
    except (yaml.YAMLError, RecursionError) as err:
        findings.append(finding("GEN001", f"YAML error: {err}", SourceLocation(path)))
    finally:
        loader.dispose()
    return documents, findings


def _syntax_finding(err: yaml.MarkedYAMLError, path: str, text: str = "") -> Finding:
    """A YAML syntax error where the problem starts: an unclosed quote, block or bracket
    where it opens, not further down where the parser noticed."""
    context = err.context or ""
    opens = err.context_mark is not None and context.startswith(
        ("while scanning a", "while parsing a flow"))
    mark = (err.context_mark if opens else None) or err.problem_mark or err.context_mark
    loc = _mark(path, mark) if mark is not None else SourceLocation(path)
    problem = err.problem or "invalid YAML"
    if "quoted scalar" in context and err.context_mark is not None:
        end = err.problem_mark
        reached = f" (reached line {end.line + 1})" if end is not None else ""
        return finding(
            "GEN001", f"YAML syntax error: the quoted string that starts here is never "
            f"closed{reached}", loc, hint="close the quote on the same value",
        )
    runaway = _runaway_quote(text, err.problem_mark) if text else None
    if runaway is not None:
        start, end_line = runaway
        return finding(
            "GEN001", f"YAML syntax error: the quoted string that starts here runs on to "
            f"line {end_line}, over lines that look like keys: a closing quote is missing",
            _mark(path, start),
            hint=f"close the quote on this line (the parser then stopped: {problem})",
        )
    if context:
        problem = f"{problem} ({context})"
    return finding("GEN001", f"YAML syntax error: {problem}", loc)


_KEY_LINE = re.compile(r"\n[ \t]*[-\w./]+:[ \t]")


def _runaway_quote(text: str, until: Any) -> tuple[Any, int] | None:
    """The start mark and last line of the last quoted string before ``until`` that spans
    lines holding ``key: value`` text (a closing quote missing on its first line)."""
    found = None
    try:
        for token in yaml.scan(text, Loader=yaml.SafeLoader):
            if until is not None and token.start_mark.index >= until.index:
                break
            if (isinstance(token, yaml.ScalarToken) and token.style in ('"', "'")
                    and token.end_mark.line > token.start_mark.line
                    and _KEY_LINE.search(text, token.start_mark.index, token.end_mark.index)):
                found = (token.start_mark, token.end_mark.line + 1)
    except yaml.YAMLError:
        pass
    return found


def _position(raw: bytes, offset: int, path: str) -> SourceLocation:
    """The line and column (1-based, in bytes) of ``offset`` in ``raw``."""
    line = raw.count(b"\n", 0, offset) + 1
    column = offset - (raw.rfind(b"\n", 0, offset) + 1) + 1
    return SourceLocation(path, line, column)


def _decode(raw: bytes, path: str, size: int = 0) -> tuple[str | None, Finding | None]:
    if len(raw) > MAX_FILE_BYTES:
        return None, finding(
            "GEN001", f"file is {max(size, len(raw))} bytes; the limit is {MAX_FILE_BYTES}",
            SourceLocation(path),
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        return None, finding(
            "GEN001", f"not UTF-8: byte 0x{raw[err.start]:02x} at offset {err.start}",
            _position(raw, err.start, path),
        )
    if "\x00" in text:
        return None, finding(
            "GEN001", "file contains NUL bytes", _position(raw, raw.index(b"\x00"), path),
        )
    return text, None


def _read(file: Path) -> tuple[bytes, int]:
    """The file's bytes and size; never more than one byte over the limit is read, so a
    huge file (or a link to an endless one) is not read into memory."""
    with file.open("rb") as handle:
        return handle.read(MAX_FILE_BYTES + 1), os.fstat(handle.fileno()).st_size


_LINE_BREAKS = frozenset("\x85\u2028\u2029")


def _bad_name(shown: str) -> str | None:
    """Why a file name cannot be used in messages and rendered headers, or None."""
    try:
        shown.encode("utf-8")
    except UnicodeEncodeError:
        return "file name is not UTF-8"
    if any(ch < " " or ch == "\x7f" or ch in _LINE_BREAKS for ch in shown):
        return "file name contains control or line-break characters"
    return None


def _missing_folder(root: Path) -> Finding | None:
    """A located finding when ``root`` is not a folder of profiles (absent, or a file)."""
    shown = root.as_posix()
    if root.is_dir():
        return None
    if root.exists():
        return finding(
            "GEN001", f"{shown!r} is a file, not a folder of profiles", SourceLocation(shown),
            hint="profiles live in a folder of *.yaml files; give it with --profiles DIR",
        )
    return finding(
        "GEN001", f"profiles folder {shown!r} does not exist", SourceLocation(shown),
        hint="run gen in a fleet repository (one with a profiles/ folder), give "
        "--profiles DIR, or create one with 'gen init DIR'",
    )


class ParsedFiles(Protocol):
    """Where :func:`load_documents` may find a file's documents parsed before
    (:class:`gen.emit.cache.parsed.ParseCache`): by its shown path and exact bytes."""

    def get(self, shown: str, raw: bytes) -> list[Document] | None:
        """The documents a parse of exactly ``raw`` gives, or None when not known."""

    def put(self, shown: str, raw: bytes, documents: Sequence[Document]) -> None:
        """Remember the documents of a file that parsed without a finding."""


def load_documents(root: Path, *, base: Path | None = None,
                   parsed: ParsedFiles | None = None) -> list[Document]:
    """Parse every profile file under ``root``; raise one error listing all syntax problems.

    ``parsed``: documents parsed before, by shown path and bytes; a file found there is
    not parsed again (it parsed without a finding then, so it does now), and one parsed
    here without a finding is handed to it."""
    missing = _missing_folder(root)
    if missing is not None:
        raise ProfileSyntaxError(missing.message, findings=[missing])
    documents: list[Document] = []
    files, findings = discover(root, base)
    for file in files:
        # Paths are shown relative to the folder holding the profiles folder (the fleet
        # repository), never to the working directory: they end up in rendered files.
        shown = display_path(file, base if base is not None else root.resolve().parent)
        bad = _bad_name(shown)
        if bad is not None:
            # The path goes into messages and into every rendered file's header.
            printable = "".join(
                ch if _bad_name(ch) is None else ascii(ch)[1:-1]
                for ch in os.fsencode(shown).decode("utf-8", "backslashreplace")
            )
            findings.append(finding(
                "GEN001", bad, SourceLocation(printable), hint="rename the file",
            ))
            continue
        try:
            raw, size = _read(file)
        except OSError as err:
            findings.append(
                finding("GEN001", f"cannot read: {err.strerror}", SourceLocation(shown))
            )
            continue
        known = parsed.get(shown, raw) if parsed is not None else None
        if known is not None:
            documents.extend(known)
            continue
        text, problem = _decode(raw, shown, size)
        if problem is not None:
            findings.append(problem)
            continue
        assert text is not None
        docs, problems = parse_text(text, shown)
        documents.extend(docs)
        findings.extend(problems)
        if parsed is not None and not problems:
            parsed.put(shown, raw, docs)
    if findings:
        raise ProfileSyntaxError(f"{len(findings)} problem(s) reading profiles", findings=findings)
    return documents
