"""Validate loaded YAML documents into typed profiles, every error located at file:line:col."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Generic, TypeVar

from pydantic import ValidationError

from gen.errors import Finding, ModelConfigError, ProfileValidationError, SourceLocation
from gen.fleet.loader import (
    Document,
    KeyPath,
    display_path,
    format_key_path,
    load_documents,
    profile_files,
)
from gen.models import (
    Cluster,
    GPUClass,
    InferenceService,
    MIGLayout,
    ModelProfile,
    profile_adapter,
)

__all__ = ["Located", "ProfileSet", "load_profiles", "validate_documents"]

T = TypeVar("T")


@dataclass(frozen=True)
class Located(Generic[T]):
    """A validated profile and the document it came from."""

    value: T
    document: Document

    def at(self, *key_path: str | int) -> SourceLocation:
        """Location of ``key_path`` inside this document (or the closest parent)."""
        return self.document.locate(key_path)[0]


@dataclass(frozen=True)
class ProfileSet:
    """Every profile of a fleet, by kind and name, each with its source document."""

    clusters: Mapping[str, Located[Cluster]] = field(default_factory=dict)
    mig_layouts: Mapping[str, Located[MIGLayout]] = field(default_factory=dict)
    gpu_classes: Mapping[str, Located[GPUClass]] = field(default_factory=dict)
    services: Mapping[str, Located[InferenceService]] = field(default_factory=dict)
    models: Mapping[str, Located[ModelProfile]] = field(default_factory=dict)
    model_configs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Per Model profile with a ``config``: the LLMSpec values read from that config.json."""


def _pydantic_findings(err: ValidationError, doc: Document) -> list[Finding]:
    findings = []
    issues = err.errors(include_url=False)
    for issue in issues:
        loc: Sequence[str | int] = issue["loc"]
        if issue["type"] == "too_short" and any(
            len(other["loc"]) > len(loc) and tuple(other["loc"][: len(loc)]) == tuple(loc)
            for other in issues
        ):
            # pydantic counts only the tuple items that validated; the items' own
            # errors are reported, a "too short" on top of them would be wrong.
            continue
        where, path = doc.locate(loc)
        message = str(issue["msg"])
        kind = issue["type"]
        if kind == "extra_forbidden":
            # pydantic's loc ends at the unknown key, which exists in the YAML.
            message = "unknown key"
            hint = "check the spelling; 'gen schema' lists every allowed key"
        elif kind in ("union_tag_invalid", "union_tag_not_found"):
            hint = "kind must be one of: Cluster, GPUClass, InferenceService, MIGLayout, Model"
        else:
            hint = ""
        if kind == "value_error":
            message = message.removeprefix("Value error, ")
        elif kind == "string_pattern_mismatch":
            message = _pattern_message(issue, message)
        # Segments pydantic reports beyond what exists in the YAML (a missing key) are
        # still part of the path the user must fix.
        shown: list[str | int] = list(path)
        missing = [s for s in loc[len(_matched_prefix(loc, path)):] if not _is_tag(s)]
        if kind == "missing":
            shown.extend(missing)
        findings.append(
            Finding("GEN002", message, where, format_key_path(shown), hint=hint)
        )
    return findings


def _pattern_message(issue: Mapping[str, Any], message: str) -> str:
    """A pattern mismatch in words where the pattern is a known one; a value with a line
    break is said to be one (it would otherwise look like another line of output)."""
    from gen.models._types import PATTERN_WORDS

    value = issue.get("input")
    context = issue.get("ctx") or {}
    words = PATTERN_WORDS.get(str(context.get("pattern", "")))
    shown = repr(value) if isinstance(value, str) else ""
    if isinstance(value, str) and ("\n" in value or "\r" in value):
        return f"{shown} holds a line break; " + (f"use {words}" if words else message)
    if words is not None:
        return f"{shown} is not valid: use {words}"
    return message


def _is_tag(segment: str | int) -> bool:
    return isinstance(segment, str) and segment in (
        "Cluster", "GPUClass", "InferenceService", "MIGLayout", "Model",
    )


def _matched_prefix(loc: Sequence[str | int], path: KeyPath) -> Sequence[str | int]:
    """The part of ``loc`` that produced ``path`` (tags skipped)."""
    i = 0
    matched = 0
    for n, segment in enumerate(loc):
        if i < len(path) and segment == path[i]:
            i += 1
            matched = n + 1
    return loc[:matched]


_SLOTS = {
    "Cluster": "clusters",
    "MIGLayout": "mig_layouts",
    "GPUClass": "gpu_classes",
    "InferenceService": "services",
    "Model": "models",
}


def validate_documents(documents: Iterable[Document]) -> ProfileSet:
    """Validate every document; raise one error with all findings of all files."""
    adapter = profile_adapter()
    findings: list[Finding] = []
    slots: dict[str, dict[str, Located[Any]]] = {slot: {} for slot in _SLOTS.values()}
    for doc in documents:
        if not isinstance(doc.data, dict):
            findings.append(Finding(
                "GEN002", "a profile document must be a mapping with a 'kind' key",
                doc.location,
            ))
            continue
        try:
            value = adapter.validate_python(doc.data)
        except ValidationError as err:
            findings.extend(_pydantic_findings(err, doc))
            continue
        slot = slots[_SLOTS[value.kind]]
        if value.name in slot:
            first = slot[value.name].document.location
            findings.append(Finding(
                "GEN002", f"duplicate {value.kind} {value.name!r} (first defined at {first})",
                doc.locate(("name",))[0], "name",
            ))
            continue
        slot[value.name] = Located(value, doc)
    if findings:
        raise ProfileValidationError(
            f"{len(findings)} problem(s) in profiles", findings=findings
        )
    return ProfileSet(
        clusters=dict(sorted(slots["clusters"].items())),
        mig_layouts=dict(sorted(slots["mig_layouts"].items())),
        gpu_classes=dict(sorted(slots["gpu_classes"].items())),
        services=dict(sorted(slots["services"].items())),
        models=dict(sorted(slots["models"].items())),
    )


def load_profiles(root: Path, *, base: Path | None = None) -> ProfileSet:
    """Read and validate every profile under ``root``, and the config.json files that Model
    profiles name."""
    profiles = validate_documents(load_documents(root, base=base))
    if any(m.value.config is not None for m in profiles.models.values()):
        profiles = replace(profiles, model_configs=_model_configs(root, base, profiles.models))
    return profiles


def _model_configs(root: Path, base: Path | None,
                   models: Mapping[str, Located[ModelProfile]]) -> dict[str, Mapping[str, Any]]:
    """The LLMSpec values of each Model profile's ``config``; one error for all that fail."""
    from gen.serving.hf_config import find_model_files, model_values

    shown_base = base if base is not None else root.resolve().parent
    files = {display_path(f, shown_base): f for f in profile_files(root)}
    inside = root.resolve()
    out: dict[str, Mapping[str, Any]] = {}
    findings: list[Finding] = []
    for name, located in models.items():
        config = located.value.config
        source = files.get(located.document.path)
        if config is None or source is None:
            continue
        target = (source.parent / config).resolve()
        if Path(config).is_absolute() or not target.is_relative_to(inside):
            findings.append(Finding(
                "GEN002", f"{config!r} is outside the profiles folder",
                located.at("config"), "config",
                hint="keep the config.json in the fleet repository, under profiles/, and "
                "give its path relative to this file",
            ))
            continue
        try:
            out[name] = model_values(find_model_files(target, display_path(target, shown_base)),
                                     read_safetensors=False)
        except ModelConfigError as err:
            findings.extend(err.findings)
    if findings:
        raise ProfileValidationError(f"{len(findings)} problem(s) in profiles", findings=findings)
    return out
