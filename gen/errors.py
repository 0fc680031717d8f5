"""Errors and findings: gen's errors are data, formatted only at the CLI edge.

The tree (every :class:`GenError` subclass gen has is defined here)::

    GenError                        exit 1, rule GEN000; carries zero or more Findings
    ├── ProfileError                profiles could not be read or are invalid
    │   ├── ProfileSyntaxError      YAML syntax, encoding, size or alias limits (GEN001)
    │   └── ProfileValidationError  pydantic errors, each mapped to file:line:col (GEN002)
    ├── UnresolvedReferenceError    a name that refers to nothing, e.g. a GPU class (GEN003)
    ├── LintError                   lint rules with severity "error" fired
    ├── TemplateError               a template failed or rendered no manifest (GEN010)
    ├── ManifestValidationError     a rendered manifest fails its schema (GEN020)
    ├── StaleOutputError            ``render --check``: out/ differs from the render
    ├── OutputError                 out/ cannot be written (read-only, disk full, ...)
    ├── CatalogLookupError          a GPU / model / MIG profile name the catalogs do not know
    ├── ModelConfigError            a Hugging Face config.json / model folder gen cannot read
    ├── ToolError                   an external tool failed
    │   ├── ToolNotFoundError       ... or is not installed
    │   └── KubeconformError        kubeconform crashed or printed no report (GEN021)
    ├── WorkerError                 a parallel render worker died
    ├── QuantityError               a string that is not a Kubernetes quantity ("1Gi", "500m")
    ├── VersionError                a string that is not a semantic version
    ├── DeviceError                 a ResourceSlice device entry that cannot be read
    ├── CELCompileError             a CEL selector Kubernetes would refuse (GEN030)
    ├── CELRuntimeError             a CEL selector that fails on a device (GEN031)
    ├── LayoutSyntaxError           a PROFILE=COUNT argument that does not parse (exit 2)
    ├── MIGLayoutError              a MIG layout used as if valid when it is not
    ├── MigPartedConfigError        a mig-parted config mig-parted would reject
    └── ClusterAccessError          ``gen verify`` cannot ask the live cluster (GEN800)

Every rule id in parentheses, and GEN000, is in :mod:`gen.rules`.

A :class:`Finding` is one located message with a rule id, used both for lint results and
for every error that points into a file. Findings and error messages are redacted when they
are built (:func:`gen.redact.redact`): no credential reaches any output.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, ClassVar

from gen.redact import redact

if TYPE_CHECKING:
    import subprocess


__all__ = [
    "CELCompileError",
    "CELRuntimeError",
    "CatalogLookupError",
    "ClusterAccessError",
    "DeviceError",
    "Finding",
    "GenError",
    "KubeconformError",
    "LayoutSyntaxError",
    "LintError",
    "MIGLayoutError",
    "ManifestValidationError",
    "MigPartedConfigError",
    "ModelConfigError",
    "OutputError",
    "ProfileError",
    "ProfileSyntaxError",
    "ProfileValidationError",
    "QuantityError",
    "Severity",
    "SourceLocation",
    "StaleOutputError",
    "TemplateError",
    "ToolError",
    "ToolNotFoundError",
    "UnresolvedReferenceError",
    "VersionError",
    "WorkerError",
    "escape_controls",
    "sort_findings",
]


class Severity(enum.StrEnum):
    """How bad a finding is."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


@dataclass(frozen=True, order=True)
class SourceLocation:
    """A position in a source file; ``line`` and ``column`` are 1-based."""

    path: str
    line: int = 0
    column: int = 0
    note: str = field(default="", compare=False)
    """What the place is to the finding, for a related location: ``used by service
    llama-70b``. Not part of equality or order."""

    def to_record(self) -> list[str | int]:
        """Every field, for an exact round trip (:meth:`from_record`): ``[path, line,
        column]``, and the note when there is one."""
        return [self.path, self.line, self.column, *([self.note] if self.note else [])]

    @classmethod
    def from_record(cls, raw: object) -> SourceLocation:
        """The location :meth:`to_record` wrote; ValueError for anything else."""
        if not (isinstance(raw, list) and len(raw) in (3, 4) and isinstance(raw[0], str)
                and type(raw[1]) is int and type(raw[2]) is int
                and all(isinstance(note, str) for note in raw[3:])):
            raise ValueError("bad location")
        return cls(raw[0], raw[1], raw[2], *raw[3:])

    def __str__(self) -> str:
        if self.line and self.column:
            return f"{self.path}:{self.line}:{self.column}"
        if self.line:
            return f"{self.path}:{self.line}"
        return self.path


@dataclass(frozen=True)
class Finding:
    """One located message: a lint result, a schema error, a reference error."""

    rule: str
    message: str
    location: SourceLocation | None = None
    key_path: str = ""
    severity: Severity = Severity.ERROR
    hint: str = ""
    related: tuple[SourceLocation, ...] = field(default=())
    service: str = ""
    """The service the finding is about, when it is about one (not shown, not in JSON)."""
    cluster: str = ""
    """The cluster the finding is about, when it is about one (not shown, not in JSON)."""

    def __post_init__(self) -> None:
        # Credentials never reach a finding's text (so neither its JSON nor SARIF form):
        # a value echoed into a message is redacted here, once (gen.redact).
        for name in ("message", "key_path", "hint"):
            text = getattr(self, name)
            clean = redact(text)
            if clean != text:
                object.__setattr__(self, name, clean)
        if any(r.note and redact(r.note) != r.note for r in self.related):
            object.__setattr__(self, "related", tuple(
                replace(r, note=redact(r.note)) for r in self.related))

    def sort_key(self) -> tuple[str, int, int, str, str]:
        """Stable order: file, line, column, rule, message."""
        loc = self.location or SourceLocation("")
        return (loc.path, loc.line, loc.column, self.rule, self.message)

    def format(self) -> str:
        """``path:line:col: severity RULE: key.path: message``, then indented related
        locations and the hint. Control characters of echoed values are escaped, so a
        value with a line break cannot print a line that looks like another finding."""
        parts = []
        if self.location is not None:
            parts.append(f"{self.location}: ")
        parts.append(f"{self.severity.value} {self.rule}: ")
        if self.key_path:
            parts.append(f"{self.key_path}: ")
        parts.append(self.message)
        text = escape_controls("".join(parts))
        for related in self.related:
            note = f"{related.note} at " if related.note else "see "
            text += "\n    " + escape_controls(f"{note}{related}")
        if self.hint:
            text += "\n    hint: " + escape_controls(self.hint)
        return text

    def to_record(self) -> dict[str, object]:
        """Every field, for an exact round trip (:meth:`from_record`; :meth:`to_json`
        drops some): what the render cache keeps of a finding."""
        return {
            "rule": self.rule, "message": self.message,
            "location": None if self.location is None else self.location.to_record(),
            "key_path": self.key_path, "severity": self.severity.value, "hint": self.hint,
            "related": [r.to_record() for r in self.related],
            "service": self.service, "cluster": self.cluster,
        }

    @classmethod
    def from_record(cls, raw: object) -> Finding:
        """The finding :meth:`to_record` wrote; ValueError for anything else."""
        if not isinstance(raw, dict) or set(raw) != _RECORD_FIELDS:
            raise ValueError("bad finding")
        texts = ("rule", "message", "key_path", "hint", "service", "cluster")
        if not all(isinstance(raw[k], str) for k in texts) or not isinstance(raw["related"], list):
            raise ValueError("bad finding")
        location = raw["location"]
        return cls(raw["rule"], raw["message"],
                   None if location is None else SourceLocation.from_record(location),
                   raw["key_path"], Severity(raw["severity"]), raw["hint"],
                   tuple(SourceLocation.from_record(r) for r in raw["related"]),
                   raw["service"], raw["cluster"])

    def to_json(self) -> dict[str, object]:
        """The documented JSON form of a finding (``gen lint --format json``)."""
        loc = self.location
        return {
            "rule": self.rule,
            "severity": self.severity.value,
            "message": self.message,
            "path": loc.path if loc else None,
            "line": loc.line if loc and loc.line else None,
            "column": loc.column if loc and loc.column else None,
            "key_path": self.key_path or None,
            "hint": self.hint or None,
            "related": [
                {"path": r.path, "line": r.line or None, "column": r.column or None,
                 "note": r.note or None}
                for r in self.related
            ],
        }


_RECORD_FIELDS = frozenset({"rule", "message", "location", "key_path", "severity", "hint",
                            "related", "service", "cluster"})
"""The keys of :meth:`Finding.to_record`."""

_CONTROL_ESCAPES = {
    i: ascii(chr(i))[1:-1] for i in (*range(0x20), 0x7F, 0x85, 0x2028, 0x2029)
}


def escape_controls(text: str) -> str:
    """``text`` with control and line-break characters written as escapes (``\\n``)."""
    return text.translate(_CONTROL_ESCAPES)


def sort_findings(findings: Iterable[Finding]) -> list[Finding]:
    """Findings in a deterministic order, duplicates removed."""
    return sorted(set(findings), key=Finding.sort_key)


class GenError(Exception):
    """Base of every error gen reports to a user."""

    exit_code: ClassVar[int] = 1
    default_rule: ClassVar[str] = "GEN000"

    def __init__(self, message: str = "", *, findings: Sequence[Finding] = ()) -> None:
        message = redact(message)
        self.message = message
        self.findings: tuple[Finding, ...] = tuple(sort_findings(findings))
        super().__init__(message or (self.findings[0].message if self.findings else ""))

    def format_message(self) -> str:
        """All findings, one per line, then the summary message."""
        lines = [f.format() for f in self.findings]
        if self.message:
            lines.append(self.message)
        return "\n".join(lines)


class ProfileError(GenError):
    """The profiles could not be read or are invalid."""


class ProfileSyntaxError(ProfileError):
    """YAML that does not parse, is not UTF-8, or breaks the size and alias limits."""

    default_rule = "GEN001"


class ProfileValidationError(ProfileError):
    """Profiles that parse but do not match the schema."""

    default_rule = "GEN002"


class UnresolvedReferenceError(GenError):
    """A profile refers to something that does not exist."""

    default_rule = "GEN003"


class LintError(GenError):
    """Lint rules of severity ``error`` fired."""


class TemplateError(GenError):
    """A template failed to render, or rendered something that is not a manifest."""

    default_rule = "GEN010"


class ManifestValidationError(GenError):
    """A rendered manifest does not match the schema of its cluster's Kubernetes version."""

    default_rule = "GEN020"


class StaleOutputError(GenError):
    """``gen render --check``: out/ is not the render of profiles/."""


class OutputError(GenError):
    """out/ could not be written."""


class CatalogLookupError(GenError):
    """A GPU, model or MIG profile name that the catalogs do not know."""


class ModelConfigError(GenError):
    """A Hugging Face ``config.json``, model folder or cache entry that cannot be read into a
    model description (``gen model import``, a ``kind: Model`` profile's ``config``)."""

    default_rule = "GEN002"


class ToolError(GenError):
    """An external tool (kubeconform) failed."""


class ToolNotFoundError(ToolError):
    """An external tool is not installed."""


class KubeconformError(ToolError):
    """kubeconform crashed, or printed something that is not its JSON report."""

    default_rule = "GEN021"
    stderr_tail_lines: ClassVar[int] = 20
    """How many of kubeconform's last stderr lines the message quotes."""

    def __init__(
        self,
        message: str,
        *,
        command: Sequence[str] = (),
        returncode: int | None = None,
        stderr_tail: str = "",
    ) -> None:
        super().__init__(message)
        self.command = tuple(command)
        self.returncode = returncode
        self.stderr_tail = stderr_tail

    @classmethod
    def from_process(
        cls, process: subprocess.CompletedProcess[str], reason: str
    ) -> KubeconformError:
        """Build the error from a finished kubeconform run: reason, exit code, stderr tail."""
        lines = (process.stderr or "").strip().splitlines()
        tail = "\n".join(lines[-cls.stderr_tail_lines:])
        message = f"kubeconform {reason} (exit code {process.returncode})"
        if tail:
            message += "; stderr:\n" + tail
        args = process.args
        command = [str(a) for a in args] if isinstance(args, list | tuple) else [str(args)]
        return cls(message, command=command, returncode=process.returncode, stderr_tail=tail)


class WorkerError(GenError):
    """A worker process of a parallel render died (killed, out of memory)."""

    task: int | None = None
    """The index of the task (cluster) the worker was on, when known."""


class QuantityError(GenError):
    """A string that is not a Kubernetes quantity."""


class VersionError(GenError):
    """A string that is not a semantic version."""


class DeviceError(GenError):
    """A ResourceSlice device entry that cannot be read."""


class CELCompileError(GenError):
    """A selector that Kubernetes would refuse: syntax, types, length or cost."""

    default_rule = "GEN030"


class CELRuntimeError(GenError):
    """A selector that fails on a device ("CEL runtime error: no such key: memory")."""

    default_rule = "GEN031"


class LayoutSyntaxError(GenError):
    """A ``PROFILE=COUNT`` argument that does not parse (a usage error)."""

    exit_code = 2


class MIGLayoutError(GenError):
    """A MIG layout was used as if valid when it is not."""


class MigPartedConfigError(GenError):
    """A mig-parted configuration that mig-parted would reject, or that gen must not emit."""


class ClusterAccessError(GenError):
    """``gen verify`` cannot ask the live cluster: a kubeconfig that cannot be read, an unknown
    context, an unreachable server, refused credentials (401), an RBAC refusal of a read (403),
    a timeout. The message never holds a credential."""

    default_rule = "GEN800"
