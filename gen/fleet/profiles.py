"""Validate loaded YAML documents into typed profiles, every error located at file:line:col."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gen.errors import Finding, ModelConfigError, ProfileValidationError
from gen.fleet.loader import (
    Document,
    ParsedFiles,
    display_path,
    format_key_path,
    load_documents,
    profile_files,
)
from gen.fleet.profile_set import Located, ProfileSet
from gen.fleet.schema_findings import did_you_mean, pydantic_findings
from gen.fleet.suppress import (
    document_suppressions,
    fleet_config_repo,
    load_fleet_config,
)
from gen.fleet.suppression import Suppression
from gen.models import ModelProfile, profile_adapter
from gen.rules import finding

__all__ = [
    "Located",
    "ProfileSet",
    "did_you_mean",
    "load_profiles",
    "pydantic_findings",
    "secret_findings",
    "validate_documents",
]


def secret_findings(doc: Document) -> list[Finding]:
    """GEN501 for every value of ``doc`` that looks like a credential: profiles are
    committed to Git. Run before a failing document's schema errors are worded, so that the
    real reason comes first and no error echoes the token."""
    from gen.redact import literal_secrets

    return [
        finding(
            "GEN501",
            f"this value looks like {what}; profiles are committed to Git and must not hold "
            "secrets",
            doc.locate(path)[0], key_path=format_key_path(path),
            hint="revoke it, and keep it in a Secret: a service references its own by name "
            "(auth.hf_token / auth.api_key: {name, key}); a Git repository's credentials go "
            "in the GitOps engine's repository Secret",
        )
        for path, what in literal_secrets(doc.data)
    ]


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
    suppressions: list[Suppression] = []
    for doc in documents:
        if not isinstance(doc.data, dict):
            findings.append(finding(
                "GEN002", "a profile document must be a mapping with a 'kind' key",
                doc.location,
            ))
            continue
        try:
            value = adapter.validate_python(doc.data)
        except ValidationError as err:
            secrets = secret_findings(doc)
            # A token where a name belongs fails the name's syntax too: the secret is the
            # reason, and the schema error at the same place is not shown.
            taken = {(f.location, f.key_path) for f in secrets}
            findings.extend(secrets)
            findings.extend(f for f in pydantic_findings(err, doc)
                            if (f.location, f.key_path) not in taken)
            continue
        slot = slots[_SLOTS[value.kind]]
        if value.name in slot:
            first = slot[value.name].document.location
            findings.append(finding(
                "GEN002", f"duplicate {value.kind} {value.name!r} (first defined at {first})",
                doc.locate(("name",))[0], key_path="name",
            ))
            continue
        slot[value.name] = Located(value, doc)
        suppressions.extend(document_suppressions(doc, value))
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
        suppressions=tuple(suppressions),
    )


def load_profiles(root: Path, *, base: Path | None = None,
                  parsed: ParsedFiles | None = None) -> ProfileSet:
    """Read and validate every profile under ``root``, the config.json files that Model
    profiles name, and the fleet-wide suppressions of ``gen.yaml`` in the fleet repository
    (``base``, else the folder holding ``root``). ``parsed``: as for
    :func:`gen.fleet.loader.load_documents`."""
    profiles = validate_documents(load_documents(root, base=base, parsed=parsed))
    if any(m.value.config is not None for m in profiles.models.values()):
        profiles = replace(profiles, model_configs=_model_configs(root, base, profiles.models))
    fleet = load_fleet_config(fleet_config_repo(root, base))
    if fleet:
        profiles = replace(profiles, suppressions=(*profiles.suppressions, *fleet))
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
            findings.append(finding(
                "GEN002", f"{config!r} is outside the profiles folder",
                located.at("config"), key_path="config",
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
