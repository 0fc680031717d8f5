"""Extract Kubernetes' DRA feature gates and resource.k8s.io API lifecycles, per minor, into
``gen/data/k8s-gates.yaml``.

For each minor in :data:`RELEASES` the script downloads the release's Go modules through the
Go module proxy (``go mod download -json k8s.io/kubernetes@TAG`` and the staging modules at
the matching ``v0.N`` tag) and reads, from the zips:

* every gate of the DRA family (``DRA*``, ``DynamicResourceAllocation``) in the versioned
  gate tables of the files in :data:`GATE_FILES` (``map[featuregate.Feature]
  featuregate.VersionedSpecs``): each spec's version, default, stage, ``LockToDefault`` and
  ``MinCompatibilityVersion``, with the file, tag and line of the gate's entry;
* the lifecycle of each ``resource.k8s.io`` API version (``APILifecycleIntroduced``,
  ``Deprecated``, ``Removed`` of ``DeviceClass`` in k8s.io/api ``resource/<version>/
  zz_generated.prerelease-lifecycle.go``), which the API server uses to stop serving a beta
  version at its removal release (k8s.io/apiserver ``pkg/server/deleted_kinds.go``).

gen reads the data file at lint time (:mod:`gen.k8s.gates`); it never downloads anything.

Usage (a developer's command)::

    python tools/k8s_gates.py           # rewrite gen/data/k8s-gates.yaml
    python tools/k8s_gates.py --check   # exit 1 when the committed file differs

To move a minor to a newer patch, or to add a minor, change :data:`RELEASES` (the newest tag
of each minor the proxy serves: ``go list -m -versions k8s.io/kubernetes``), run the script,
run ``tests/k8s/test_gates.py`` and the corpus, and commit the data with the tags in the
message.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "gen" / "data" / "k8s-gates.yaml"

RELEASES: dict[int, str] = {
    35: "v1.35.4",
    36: "v1.36.3",
    37: "v1.37.2",
    38: "v1.38.0-beta.0",
}
"""Minor → the k8s.io/kubernetes tag read for it: the newest one the Go module proxy serves
(2026-12-02). A tag with a pre-release suffix is recorded as a pre-release."""

GATE_FILES: tuple[tuple[str, str], ...] = (
    ("k8s.io/kubernetes", "pkg/features/kube_features.go"),
    ("k8s.io/kube-scheduler", "pkg/features/kube_features.go"),
)
"""(module, path) of the versioned gate tables; a file absent at a tag is skipped (the
scheduler's staging module has no gate table at the tags above)."""

API_GROUP = "resource.k8s.io"
API_VERSIONS = ("v1alpha3", "v1beta1", "v1beta2", "v1")
API_LIFECYCLE = "resource/{version}/zz_generated.prerelease-lifecycle.go"

FAMILY = re.compile(r"^(?:DRA[A-Za-z0-9]*|DynamicResourceAllocation)$")
"""The gates this table holds."""

_CONST = re.compile(r'^\s*(\w+)\s+featuregate\.Feature\s*=\s*"(\w+)"', re.MULTILINE)
_TABLE = re.compile(r"map\[featuregate\.Feature\]featuregate\.VersionedSpecs\{")
_ENTRY = re.compile(r"^\t(\w+(?:\.\w+)?): \{\s*$")
_SPEC = re.compile(r"\{([^{}]*Version:[^{}]*)\}")
_FIELD = re.compile(r"(\w+):\s*([^,]+?)\s*(?:,|$)")
_MUST_PARSE = re.compile(r'version\.MustParse\("(\d+\.\d+)"\)')
_LIFECYCLE = re.compile(
    r"func \(in \*DeviceClass\) APILifecycle(Introduced|Deprecated|Removed)\(\) "
    r"\(major, minor int\) \{\s*return (\d+), (\d+)"
)


class ExtractError(Exception):
    """The upstream source is not what the parser expects."""


@dataclass(frozen=True)
class Spec:
    """One ``featuregate.FeatureSpec``."""

    version: str
    default: bool
    stage: str
    locked: bool
    min_compatibility: str | None

    def as_data(self) -> dict[str, Any]:
        """The spec as the data file writes it (false/None fields left out)."""
        out: dict[str, Any] = {"version": self.version, "stage": self.stage,
                               "default": self.default}
        if self.locked:
            out["locked"] = True
        if self.min_compatibility is not None:
            out["min_compatibility"] = self.min_compatibility
        return out


def parse_spec(text: str) -> Spec:
    """``Version: version.MustParse("1.34"), Default: true, PreRelease: featuregate.Beta``."""
    fields = dict(_FIELD.findall(text.replace("\n", " ")))
    try:
        version = _MUST_PARSE.fullmatch(fields["Version"])
        stage = fields["PreRelease"].removeprefix("featuregate.")
        default = fields["Default"]
    except KeyError as err:
        raise ExtractError(f"spec without {err}: {text.strip()!r}") from None
    if version is None or default not in ("true", "false"):
        raise ExtractError(f"unexpected spec: {text.strip()!r}")
    minimum = fields.get("MinCompatibilityVersion")
    min_match = _MUST_PARSE.fullmatch(minimum) if minimum else None
    if minimum and min_match is None:
        raise ExtractError(f"unexpected MinCompatibilityVersion: {text.strip()!r}")
    stage = {"Alpha": "ALPHA", "Beta": "BETA", "GA": "GA", "Deprecated": "DEPRECATED",
             "PreAlpha": "PRE-ALPHA"}.get(stage)
    if stage is None:
        raise ExtractError(f"unknown PreRelease in {text.strip()!r}")
    return Spec(version[1], default == "true", stage, fields.get("LockToDefault") == "true",
                min_match[1] if min_match else None)


def parse_gate_table(source: str) -> dict[str, tuple[int, list[Spec]]]:
    """Gate name → (line of its entry, specs) for every entry of the versioned gate tables
    in a Go file; a name whose identifier the file does not declare keeps the identifier."""
    names = dict(_CONST.findall(source))
    lines = source.splitlines()
    gates: dict[str, tuple[int, list[Spec]]] = {}
    for table in _TABLE.finditer(source):
        start = source.count("\n", 0, table.start())
        i = start + 1
        while i < len(lines) and lines[i] != "}":
            entry = _ENTRY.match(lines[i])
            if entry is None:
                i += 1
                continue
            ident = entry[1]
            first = i
            body = []
            i += 1
            while i < len(lines) and lines[i] != "\t},":
                body.append(lines[i].split("//", 1)[0])
                i += 1
            specs = [parse_spec(m) for m in _SPEC.findall("\n".join(body))]
            if not specs:
                raise ExtractError(f"gate {ident} at line {first + 1} has no spec")
            name = names.get(ident.rsplit(".", 1)[-1], ident.rsplit(".", 1)[-1])
            gates[name] = (first + 1, specs)
            i += 1
    return gates


def parse_lifecycle(source: str) -> dict[str, str]:
    """``introduced``/``deprecated``/``removed`` → ``1.N`` of DeviceClass in one version."""
    return {kind.lower(): f"{major}.{minor}" for kind, major, minor in _LIFECYCLE.findall(source)}


def _module_zip(module: str, version: str) -> Path:
    env = {**os.environ, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "local"}
    done = subprocess.run(["go", "mod", "download", "-json", f"{module}@{version}"],
                          capture_output=True, text=True, env=env, check=False)
    info = json.loads(done.stdout or "{}")
    # A module needing a newer Go still downloads its zip (the error is about building).
    if not info.get("Zip") or not Path(info["Zip"]).is_file():
        raise ExtractError(f"{module}@{version}: {info.get('Error') or done.stderr.strip()}")
    return Path(info["Zip"])


def _read(archive: Path, module: str, version: str, path: str) -> str | None:
    with zipfile.ZipFile(archive) as z:
        try:
            return z.read(f"{module}@{version}/{path}").decode("utf-8")
        except KeyError:
            return None


def _staging(tag: str) -> str:
    return "v0." + tag.removeprefix("v1.")


def extract() -> dict[str, Any]:
    """The whole data file, read from the modules of :data:`RELEASES`."""
    releases: dict[str, Any] = {}
    gates: dict[str, dict[str, Any]] = {}
    apis: dict[str, dict[str, Any]] = {}
    for minor, tag in sorted(RELEASES.items()):
        release = f"1.{minor}"
        releases[release] = {"tag": tag, "prerelease": "-" in tag}
        for module, path in GATE_FILES:
            version = tag if module == "k8s.io/kubernetes" else _staging(tag)
            text = _read(_module_zip(module, version), module, version, path)
            if text is None:
                continue
            for name, (line, specs) in sorted(parse_gate_table(text).items()):
                if not FAMILY.match(name):
                    continue
                gates.setdefault(name, {})[release] = {
                    "source": f"kubernetes/kubernetes {_repo_path(module, path)}@{tag}",
                    "line": line,
                    "specs": [s.as_data() for s in specs],
                }
        api_version = _staging(tag)
        archive = _module_zip("k8s.io/api", api_version)
        for group_version in API_VERSIONS:
            path = API_LIFECYCLE.format(version=group_version)
            text = _read(archive, "k8s.io/api", api_version, path)
            if text is None:
                continue
            lifecycle = parse_lifecycle(text)
            if lifecycle:
                apis.setdefault(f"{API_GROUP}/{group_version}", {})[release] = {
                    "source": f"kubernetes/kubernetes {_repo_path('k8s.io/api', path)}@{tag}",
                    **lifecycle,
                }
    return {"releases": releases, "gates": gates, "api_versions": apis}


def _repo_path(module: str, path: str) -> str:
    if module == "k8s.io/kubernetes":
        return path
    return f"staging/src/{module}/{path}"


HEADER = """\
# Kubernetes' DRA feature gates and resource.k8s.io API lifecycles, per minor: generated by
# tools/k8s_gates.py from kubernetes/kubernetes at each release's tag (the Go modules
# k8s.io/kubernetes@v1.N.P and its staging modules @v0.N.P). Do not edit by hand: change the
# tags in the script and run it. A release with `prerelease: true` is read from a pre-release
# tag (the minor is not released yet).
"""


def render(data: dict[str, Any]) -> str:
    """The data file's text (deterministic)."""
    return HEADER + yaml.safe_dump(data, sort_keys=True, default_flow_style=None, width=100)


def main(argv: list[str] | None = None) -> int:
    """Write or check the data file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when the data differs")
    args = parser.parse_args(argv)
    try:
        text = render(extract())
    except ExtractError as err:
        print(f"k8s_gates: {err}", file=sys.stderr)
        return 2
    if args.check:
        current = DATA.read_text("utf-8") if DATA.is_file() else ""
        if current != text:
            print(f"k8s_gates: {DATA.relative_to(ROOT)} is stale; run tools/k8s_gates.py",
                  file=sys.stderr)
            return 1
        print(f"k8s_gates: {DATA.relative_to(ROOT)} is current")
        return 0
    DATA.write_text(text, "utf-8")
    print(f"k8s_gates: wrote {DATA.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
