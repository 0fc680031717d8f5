"""Refresh gen's bundled CRDs (``gen/data/crd-schemas/``) from the upstream releases.

Each upstream CRD manifest named in :data:`SOURCES` (repository, path, release tag) is read,
reduced by :func:`gen.emit.crd_convert.compact_crd` (names, scope, each version's
``openAPIV3Schema`` without descriptions) and written as ``<crd name>.json.gz`` with its
source and the SHA-256 of the upstream file. Each served version's JSON Schema
(:func:`gen.emit.crd_convert.to_json_schema`) is written beside them, in ``json-schema/``
(:func:`gen.emit.crd_schemas.json_schema_files`), so that gen does not convert the bundled CRDs
in every process. Files are written deterministically (sorted keys, gzip without a time
stamp), so an unchanged release rewrites identical bytes.

Usage (a developer's command; gen itself never downloads anything)::

    python tools/refresh_crds.py                  # from raw.githubusercontent.com
    python tools/refresh_crds.py --git argoproj/argo-cd=../argo-cd --git ...
                                                  # from local clones (git show TAG:PATH)
    python tools/refresh_crds.py --check          # exit 1 when the data differs
    python tools/refresh_crds.py --convert        # only json-schema/, from the bundled CRDs
                                                  # at hand (no download): after a change
                                                  # to gen/emit/crd_convert.py

To move a project to a new release, change its tag in :data:`SOURCES`, run the command,
run the tests (``tests/emit/test_crd_schemas.py`` renders the example fleet against the new
schemas) and commit ``gen/data/crd-schemas/`` with the new tag in the message.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gen.emit.crd_convert import compact_crd  # noqa: E402 - after the path is set
from gen.emit.crd_schemas import json_schema_files  # noqa: E402 - after the path is set

DATA = ROOT / "gen" / "data" / "crd-schemas"
CONVERTED = DATA / "json-schema"

SOURCES: tuple[tuple[str, str, str], ...] = (
    ("argoproj/argo-cd", "v3.5.1", "manifests/crds/application-crd.yaml"),
    ("argoproj/argo-cd", "v3.5.1", "manifests/crds/applicationset-crd.yaml"),
    ("argoproj/argo-cd", "v3.5.1", "manifests/crds/appproject-crd.yaml"),
    ("fluxcd/source-controller", "v1.9.1",
     "config/crd/bases/source.toolkit.fluxcd.io_gitrepositories.yaml"),
    ("fluxcd/source-controller", "v1.9.1",
     "config/crd/bases/source.toolkit.fluxcd.io_helmrepositories.yaml"),
    ("fluxcd/source-controller", "v1.9.1",
     "config/crd/bases/source.toolkit.fluxcd.io_ocirepositories.yaml"),
    ("fluxcd/source-controller", "v1.9.1",
     "config/crd/bases/source.toolkit.fluxcd.io_helmcharts.yaml"),
    ("fluxcd/kustomize-controller", "v1.9.4",
     "config/crd/bases/kustomize.toolkit.fluxcd.io_kustomizations.yaml"),
    ("fluxcd/helm-controller", "v1.6.3",
     "config/crd/bases/helm.toolkit.fluxcd.io_helmreleases.yaml"),
    ("kedacore/keda", "v2.20.2", "config/crd/bases/keda.sh_scaledobjects.yaml"),
    ("kedacore/keda", "v2.20.2", "config/crd/bases/keda.sh_triggerauthentications.yaml"),
    ("prometheus-operator/prometheus-operator", "v0.93.0",
     "example/prometheus-operator-crd-full/monitoring.coreos.com_servicemonitors.yaml"),
    ("prometheus-operator/prometheus-operator", "v0.93.0",
     "example/prometheus-operator-crd-full/monitoring.coreos.com_podmonitors.yaml"),
)
"""(repository, release tag, path of the CRD manifest in it)."""


def _read(repo: str, tag: str, path: str, clones: dict[str, Path]) -> bytes:
    if repo in clones:
        return subprocess.run(["git", "-C", str(clones[repo]), "show", f"{tag}:{path}"],
                              check=True, capture_output=True).stdout
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
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 on change")
    parser.add_argument("--convert", action="store_true",
                        help="only rewrite json-schema/ from the bundled CRDs (no download)")
    args = parser.parse_args(argv)
    clones = {k: Path(v) for k, _, v in (g.partition("=") for g in args.git)}
    current = {p.name: p.read_bytes() for p in DATA.glob("*.json.gz")}
    if args.convert:
        wanted = current
    else:
        wanted = {}
        for repo, tag, path in SOURCES:
            name, data = data_file(repo, tag, path, _read(repo, tag, path, clones))
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
