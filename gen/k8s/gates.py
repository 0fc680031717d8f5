"""Kubernetes' DRA feature gates and resource.k8s.io API lifecycles, by minor: data from upstream.

The facts live in ``gen/data/k8s-gates.yaml``, which ``tools/k8s_gates.py`` extracts from
kubernetes/kubernetes ``pkg/features/kube_features.go`` at each minor's release tag (each row
names its file, tag and line). A gate is a list of versioned specs; a component of release
1.N uses the last spec whose version is at most 1.N and whose ``MinCompatibilityVersion``, if
any, is at most 1.(N−1), the default compatibility version; with none, the gate is
*pre-alpha* there (k8s.io/component-base ``featuregate/feature_gate.go``@v0.37.2,
``featureSpecAtEmulationAndMinCompatVersion``).

Setting a gate (``--feature-gates``, or a component's config) is refused by that file's
``unsafeSetFromMap``, and the component does not start:

* a gate the binary does not know: ``unrecognized feature gate: NAME``;
* a gate locked to its default (``LockToDefault``), set to the other value: ``cannot set feature
  gate NAME to V, feature is locked to D``;
* a gate pre-alpha at the binary's version: ``... feature is PreAlpha at emulated version``.

Setting a GA or deprecated gate to its locked value is accepted (with a warning in the log).

Minors the table does not hold are answered from the nearest one it does: below the oldest,
from the oldest release's specs (each gate's history goes back to its alpha), so a gate the
oldest release has is known not to exist before its first spec; above the newest, from the
newest release's specs, without a verdict on whether the gate still exists.

An API version is served until its removal release (``APILifecycleRemoved``): at that minor
the API server drops it unless started with ``KUBE_APISERVER_SERVE_REMOVED_APIS_FOR_ONE_RELEASE``
(k8s.io/apiserver ``pkg/server/deleted_kinds.go``@v0.38.0-beta.0, ``ShouldServeForVersion``);
``--runtime-config`` cannot bring it back.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gen._data import load_data
from gen.caches import once

__all__ = [
    "APILifecycle",
    "GateSpec",
    "GateState",
    "GateTable",
    "Release",
    "gate_table",
    "gates_markdown",
]

PRE_ALPHA = "PRE-ALPHA"


def _minor(text: str) -> int:
    """``'1.37'`` → 37."""
    major, minor = text.split(".")
    if major != "1":
        raise ValueError(f"gen/data/k8s-gates.yaml: version {text!r} is not 1.x")
    return int(minor)


@dataclass(frozen=True)
class Release:
    """The tag a minor's facts were read at."""

    minor: int
    tag: str
    prerelease: bool


@dataclass(frozen=True)
class GateSpec:
    """One versioned spec of a gate (``featuregate.FeatureSpec``)."""

    minor: int
    stage: str
    """ALPHA, BETA, GA or DEPRECATED."""
    default: bool
    locked: bool = False
    min_compatibility: int | None = None


@dataclass(frozen=True)
class GateState:
    """A gate as the components of one Kubernetes minor see it."""

    name: str
    minor: int
    exists: bool | None
    """False: the binary rejects the name (unknown, or pre-alpha there); None: the table has
    no verdict (a minor past the newest release the table holds)."""
    stage: str
    default: bool
    locked: bool
    since: int | None
    """The minor of the gate's first spec (its alpha, or its first recorded stage); None for
    a name no release of the table has."""
    source: str
    """``kubernetes/kubernetes PATH@TAG:LINE`` of the row the state was read from."""

    def refusal(self, value: bool) -> str | None:
        """The error a component of this minor refuses ``NAME=value`` with, or None."""
        if self.exists is False:
            if self.since is None:
                return (f"unrecognized feature gate: {self.name} (no Kubernetes release "
                        f"through 1.{self.minor} has it)")
            if self.minor < self.since:
                return (f"unrecognized feature gate: {self.name} (Kubernetes 1.{self.minor} "
                        f"does not have it; it arrived in 1.{self.since})")
            return (f"unrecognized feature gate: {self.name} (Kubernetes 1.{self.minor} "
                    "has removed it)")
        if self.locked and self.default != value:
            return (f"cannot set feature gate {self.name} to {str(value).lower()}, feature is "
                    f"locked to {str(self.default).lower()} ({self.stage} on 1.{self.minor})")
        return None


@dataclass(frozen=True)
class APILifecycle:
    """When a resource.k8s.io version was introduced, deprecated and removed."""

    group_version: str
    introduced: int
    deprecated: int | None
    removed: int | None
    source: str

    def served(self, minor: int) -> bool:
        """Whether a ``1.minor`` API server (run as released) serves it at all."""
        return minor >= self.introduced and (self.removed is None or minor < self.removed)


@dataclass(frozen=True)
class _Row:
    source: str
    specs: tuple[GateSpec, ...]


class GateTable:
    """The gates and API lifecycles of ``gen/data/k8s-gates.yaml``."""

    def __init__(self, data: Mapping[str, Any]) -> None:
        """Parse the data file's mapping (see tools/k8s_gates.py for its shape)."""
        self.releases: dict[int, Release] = {
            _minor(k): Release(_minor(k), str(v["tag"]), bool(v["prerelease"]))
            for k, v in data["releases"].items()
        }
        self._rows: dict[str, dict[int, _Row]] = {}
        for name, by_release in data["gates"].items():
            rows = self._rows.setdefault(str(name), {})
            for release, row in by_release.items():
                specs = tuple(
                    GateSpec(_minor(s["version"]), str(s["stage"]), bool(s["default"]),
                             bool(s.get("locked", False)),
                             _minor(s["min_compatibility"]) if "min_compatibility" in s
                             else None)
                    for s in row["specs"]
                )
                rows[_minor(release)] = _Row(f"{row['source']}:{row['line']}", specs)
        self._apis: dict[str, dict[int, APILifecycle]] = {}
        for group_version, by_release in data["api_versions"].items():
            for release, row in by_release.items():
                self._apis.setdefault(str(group_version), {})[_minor(release)] = APILifecycle(
                    str(group_version), _minor(row["introduced"]),
                    _minor(row["deprecated"]) if "deprecated" in row else None,
                    _minor(row["removed"]) if "removed" in row else None, str(row["source"]),
                )

    @property
    def oldest(self) -> int:
        """The oldest minor the table was read at."""
        return min(self.releases)

    @property
    def newest(self) -> int:
        """The newest minor the table was read at."""
        return max(self.releases)

    def _release_for(self, minor: int) -> int:
        return min(max(minor, self.oldest), self.newest)

    def names(self, minor: int) -> list[str]:
        """The gates a ``1.minor`` release has (of the family the table holds)."""
        release = self._release_for(minor)
        return sorted(n for n in self._rows if self.state(n, minor).exists is not False
                      and release in self._rows[n])

    def gates(self) -> list[str]:
        """Every gate the table has a row for, at any minor."""
        return sorted(self._rows)

    def holds(self, name: str) -> bool:
        """Whether the name is of the family the table holds (``DRA*`` and
        ``DynamicResourceAllocation``), so that an absent one is unknown to Kubernetes."""
        return name.startswith("DRA") or name == "DynamicResourceAllocation"

    def state(self, name: str, minor: int) -> GateState:
        """The gate at ``1.minor``; ``exists`` False for a family name the release lacks."""
        release = self._release_for(minor)
        rows = self._rows.get(name, {})
        row = rows.get(release)
        if row is None:
            # Not in that release: removed (an older release has it), not yet added (a newer
            # one has it), or a name Kubernetes never had. Past the newest release there is
            # no verdict.
            since = min((r.specs[0].minor for r in rows.values()), default=None)
            tag = self.releases[release].tag
            return GateState(name, minor, None if minor > self.newest else False, PRE_ALPHA,
                             False, False, since,
                             f"kubernetes/kubernetes pkg/features/kube_features.go@{tag}")
        spec = _spec_at(row.specs, minor)
        since = row.specs[0].minor
        if spec is None:
            return GateState(name, minor, False, PRE_ALPHA, False, False, since, row.source)
        return GateState(name, minor, True, spec.stage, spec.default, spec.locked, since,
                         row.source)

    def enabled(self, name: str, minor: int, declared: Mapping[str, bool]) -> bool:
        """Whether the gate is on in a ``1.minor`` cluster that sets ``declared`` (a locked
        gate keeps its default; a gate the release lacks is off)."""
        state = self.state(name, minor)
        if state.exists is False:
            return False
        if state.locked:
            return state.default
        return declared.get(name, state.default)

    def close_match(self, name: str, minor: int) -> str | None:
        """The gate of that release a misspelt name most likely means."""
        close = difflib.get_close_matches(name, self.names(minor), n=1)
        return close[0] if close else None

    def api_versions(self, minor: int) -> list[APILifecycle]:
        """Each resource.k8s.io version's lifecycle, as the release nearest ``minor`` says."""
        release = self._release_for(minor)
        return [rows[release] for _, rows in sorted(self._apis.items()) if release in rows]

    def api_version(self, group_version: str, minor: int) -> APILifecycle | None:
        """The lifecycle of one resource.k8s.io version, or None when the table lacks it."""
        return self._apis.get(group_version, {}).get(self._release_for(minor))


def _spec_at(specs: tuple[GateSpec, ...], minor: int) -> GateSpec | None:
    """The spec a ``1.minor`` binary uses at its default compatibility version 1.(minor−1)."""
    for spec in reversed(specs):
        if spec.minor > minor:
            continue
        if spec.min_compatibility is not None and minor - 1 < spec.min_compatibility:
            continue
        return spec
    return None


@once
def gate_table() -> GateTable:
    """The built-in table, parsed once."""
    return GateTable(load_data("k8s-gates.yaml"))


def _cell(state: GateState) -> str:
    if state.exists is False:
        return "removed" if state.since is not None and state.minor > state.since else "—"
    default = "on" if state.default else "off"
    return f"{state.stage} ({default}{', locked' if state.locked else ''})"


def gates_markdown(table: GateTable | None = None) -> str:
    """``docs/feature-gates.md``: the gate × minor table and the API versions, generated."""
    table = table or gate_table()
    minors = sorted(table.releases)
    lines = [
        "# Kubernetes DRA feature gates and resource.k8s.io versions, by minor",
        "",
        "Generated from `gen/data/k8s-gates.yaml` (`python -m gen.k8s.gates > "
        "docs/feature-gates.md`), which `tools/k8s_gates.py` reads from kubernetes/kubernetes",
        "`pkg/features/kube_features.go` and `staging/src/k8s.io/api/resource/*/"
        "zz_generated.prerelease-lifecycle.go` at these tags:",
        "",
    ]
    for minor in minors:
        release = table.releases[minor]
        suffix = f" (a pre-release: 1.{minor} is not released yet)" if release.prerelease else ""
        lines.append(f"* 1.{minor}: `{release.tag}`{suffix}")
    lines += [
        "",
        "A cell is the gate's stage and default as that release's components run it (at "
        "their default compatibility version, the previous minor); *locked* gates cannot be "
        "set to the other value, and — means the release does not know the gate. `gen lint` "
        "reports a declared `feature_gates` entry that the cluster's release refuses (GEN220) "
        "and applies each gate's state to the fields behind it (GEN202, GEN112).",
        "",
        "| gate | " + " | ".join(f"1.{m}" for m in minors) + " |",
        "|---|" + "---|" * len(minors),
    ]
    for name in table.gates():
        cells = [_cell(table.state(name, m)) for m in minors]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## resource.k8s.io versions",
        "",
        "The API server stops serving a version at its removal release, whatever "
        "`--runtime-config` says (GEN221 for a `runtime_config` entry past it). gen renders "
        "`resource.k8s.io/v1` from 1.34 on.",
        "",
        "| version | introduced | deprecated | removed |",
        "|---|---|---|---|",
    ]
    for api in table.api_versions(table.newest):
        lines.append(f"| `{api.group_version}` | 1.{api.introduced} | "
                     + (f"1.{api.deprecated}" if api.deprecated else "—") + " | "
                     + (f"1.{api.removed}" if api.removed else "—") + " |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(gates_markdown())
