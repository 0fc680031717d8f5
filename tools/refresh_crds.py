"""Refresh gen's bundled CRDs (``gen/data/crd-schemas/``) from the upstream releases.

Each upstream CRD manifest named in :data:`SOURCES` (repository, path, release tag) is read,
reduced by :func:`gen.emit.crd_convert.compact_crd` (names, scope, each version's
``openAPIV3Schema`` without descriptions) and written as ``<crd name>.json.gz`` with its
source and the SHA-256 of the upstream file. Each served version's JSON Schema
(:func:`gen.emit.crd_convert.to_json_schema`) is written beside them, in ``json-schema/``
(:func:`gen.emit.crd_schemas.json_schema_files`), so that gen does not convert the bundled CRDs
in every process. Files are written deterministically (sorted keys, gzip without a time
stamp), so an unchanged release rewrites identical bytes.

The releases are the pins of ``gen/data/pins.yaml`` (one row a project; :data:`CRDS` names the
manifests of each), so the tags are never written twice.

Usage (a developer's command; gen itself never downloads anything)::

    python tools/refresh_crds.py                  # from raw.githubusercontent.com
    python tools/refresh_crds.py --go-modules     # from each release's Go module zip
                                                  # (go mod download; the module proxy)
    python tools/refresh_crds.py --git argoproj/argo-cd=../argo-cd --git ...
                                                  # from local clones (git show TAG:PATH);
                                                  # a clone wins over the other two
    python tools/refresh_crds.py --only gateway-api --only llm-d-router ...
                                                  # only those pins' CRDs; the others
                                                  # stay as bundled
    python tools/refresh_crds.py --check          # exit 1 when the data differs
    python tools/refresh_crds.py --convert        # only json-schema/, from the bundled CRDs
                                                  # at hand (no download): after a change
                                                  # to gen/emit/crd_convert.py

To move a project to a new release, change its version in ``gen/data/pins.yaml``, run the command,
run the tests (``tests/emit/test_crd_schemas.py`` renders the example fleet against the new
schemas) and commit ``gen/data/crd-schemas/`` with the new tag in the message.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import subprocess
import sys
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gen.emit.crd_convert import compact_crd  # noqa: E402 - after the path is set
from gen.emit.crd_schemas import json_schema_files  # noqa: E402 - after the path is set
from gen.pins import pin  # noqa: E402 - after the path is set

DATA = ROOT / "gen" / "data" / "crd-schemas"
CONVERTED = DATA / "json-schema"

CRDS: tuple[tuple[str, str], ...] = (
    ("argo-cd", "manifests/crds/application-crd.yaml"),
    ("argo-cd", "manifests/crds/applicationset-crd.yaml"),
    ("argo-cd", "manifests/crds/appproject-crd.yaml"),
    ("flux-source-controller", "config/crd/bases/source.toolkit.fluxcd.io_gitrepositories.yaml"),
    ("flux-source-controller", "config/crd/bases/source.toolkit.fluxcd.io_helmrepositories.yaml"),
    ("flux-source-controller", "config/crd/bases/source.toolkit.fluxcd.io_ocirepositories.yaml"),
    ("flux-source-controller", "config/crd/bases/source.toolkit.fluxcd.io_helmcharts.yaml"),
    ("flux-kustomize-controller",
     "config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml"),
    ("flux-helm-controller", "config/crd/bases/helm.toolkit.fluxcd.io_helmreleases.yaml"),
    ("keda", "config/crd/bases/keda.sh_scaledobjects.yaml"),
    ("keda", "config/crd/bases/keda.sh_triggerauthentications.yaml"),
    ("prometheus-operator",
     "example/prometheus-operator-crd-full/monitoring.coreos.com_servicemonitors.yaml"),
    ("prometheus-operator",
     "example/prometheus-operator-crd-full/monitoring.coreos.com_podmonitors.yaml"),
    ("gateway-api", "config/crd/standard/gateway.networking.k8s.io_gateways.yaml"),
    ("gateway-api", "config/crd/standard/gateway.networking.k8s.io_httproutes.yaml"),
    ("gateway-api-inference-extension",
     "config/crd/bases/inference.networking.k8s.io_inferencepools.yaml"),
    ("llm-d-router", "config/crd/bases/llm-d.ai_inferenceobjectives.yaml"),
)
"""(pin id in ``gen/data/pins.yaml``, path of the CRD manifest in the project's repository)."""


@dataclass(frozen=True)
class Source:
    """One upstream CRD manifest at the pinned release."""

    repo: str
    """``owner/name`` on GitHub (from the pin's source page)."""
    tag: str
    path: str
    go_module: str | None
    """The Go module whose zip holds ``path`` at ``tag``, when the project publishes one."""


def _repository(url: str) -> str:
    parts = url.removeprefix("https://github.com/").split("/")
    if not url.startswith("https://github.com/") or len(parts) < 2:
        raise SystemExit(f"{url}: a CRD pin's source must be a GitHub page of the release")
    return f"{parts[0]}/{parts[1]}"


def sources() -> tuple[Source, ...]:
    """Every bundled CRD's upstream manifest, at the release its pin names."""
    found = []
    for pin_id, path in CRDS:
        release = pin(pin_id)
        found.append(Source(_repository(release.source), release.version, path,
                            release.go_module))
    return tuple(found)


def _go_module_zip(module: str, version: str) -> Path:
    """The module zip of ``module@version`` in the Go module cache (``go mod download``).

    ``GOTOOLCHAIN`` defaults to ``auto`` here, so a release whose ``go.mod`` needs a newer
    Go than the one installed is still downloaded (through the newer toolchain's module)."""
    env = {**os.environ, "GOFLAGS": "-mod=mod"}
    env.setdefault("GOTOOLCHAIN", "auto")
    done = subprocess.run(["go", "mod", "download", "-json", f"{module}@{version}"],
                          capture_output=True, text=True, env=env, check=False)
    try:
        info = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise SystemExit(f"go mod download {module}@{version}: {done.stderr.strip()}") from None
    if "Error" in info or "Zip" not in info:
        raise SystemExit(f"go mod download {module}@{version}: {info.get('Error', 'no zip')}")
    return Path(info["Zip"])


def _read(source: Source, clones: dict[str, Path], go_modules: bool) -> bytes:
    repo, tag, path = source.repo, source.tag, source.path
    if repo in clones:
        return subprocess.run(["git", "-C", str(clones[repo]), "show", f"{tag}:{path}"],
                              check=True, capture_output=True).stdout
    if go_modules:
        if source.go_module is None:
            raise SystemExit(f"{repo}@{tag} has no Go module zip on the proxy: "
                             f"read it from a clone (--git {repo}=DIR)")
        with zipfile.ZipFile(_go_module_zip(source.go_module, tag)) as archive:
            return archive.read(f"{source.go_module}@{tag}/{path}")
    url = f"https://raw.githubusercontent.com/{repo}/{tag}/{path}"
    with urllib.request.urlopen(url, timeout=60) as response:
        data: bytes = response.read()
    return data


def data_file(repo: str, tag: str, path: str, raw: bytes) -> tuple[str, bytes]:
    """The file name and bytes gen keeps for one upstream CRD manifest."""
    crds = [d for d in yaml.safe_load_all(raw) if d]
    if len(crds) != 1 or crds[0].get("kind") != "CustomResourceDefinition":
        raise SystemExit(f"{repo} {path}@{tag}: expected one CustomResourceDefinition")
    crd: dict[str, Any] = crds[0]
    content = {
        "source": {"repository": repo, "path": path, "tag": tag,
                   "sha256": hashlib.sha256(raw).hexdigest()},
        "crd": compact_crd(crd),
    }
    text = json.dumps(content, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return f"{crd['metadata']['name']}.json.gz", gzip.compress(text.encode(), 9, mtime=0)


def main(argv: list[str] | None = None) -> int:
    """Refresh (or with --check, compare) every bundled CRD; the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--git", action="append", default=[], metavar="OWNER/NAME=DIR",
                        help="read that repository from a local clone instead of GitHub")
    parser.add_argument("--go-modules", action="store_true",
                        help="read each release from its Go module zip (go mod download)")
    parser.add_argument("--only", action="append", default=[], metavar="PIN",
                        help="refresh only the CRDs of this pin (repeatable); keep the others")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 on change")
    parser.add_argument("--convert", action="store_true",
                        help="only rewrite json-schema/ from the bundled CRDs (no download)")
    args = parser.parse_args(argv)
    clones = {k: Path(v) for k, _, v in (g.partition("=") for g in args.git)}
    current = {p.name: p.read_bytes() for p in DATA.glob("*.json.gz")}
    if args.convert:
        wanted = current
    else:
        only = {_repository(pin(p).source) for p in args.only}
        wanted = dict(current) if only else {}
        for source in sources():
            if only and source.repo not in only:
                continue
            raw = _read(source, clones, args.go_modules)
            name, data = data_file(source.repo, source.tag, source.path, raw)
            wanted[name] = data
    converted = json_schema_files(wanted)
    have = {p.name: p.read_bytes() for p in CONVERTED.glob("*.json.gz")} \
        if CONVERTED.is_dir() else {}
    stale = sorted(n for n in wanted.keys() | current.keys() if wanted.get(n) != current.get(n))
    stale += sorted(f"json-schema/{n}" for n in converted.keys() | have.keys()
                    if converted.get(n) != have.get(n))
    if args.check:
        for name in stale:
            print(f"{name}: differs from {'the bundled CRDs' if args.convert else 'upstream'}")
        return 1 if stale else 0
    CONVERTED.mkdir(exist_ok=True)
    for folder, old, new in ((DATA, current, wanted), (CONVERTED, have, converted)):
        for name in old.keys() - new.keys():
            (folder / name).unlink()
        for name, data in sorted(new.items()):
            if old.get(name) != data:
                (folder / name).write_bytes(data)
            print(f"{folder.relative_to(DATA.parent)}/{name}: {len(data)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
