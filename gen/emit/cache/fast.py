"""The fleet fast path as a render takes it: the render's input digest, the files of out/
the fleet record vouches for, and the fleet record a render writes for the next one."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import NamedTuple

from gen.emit.cache.fleet import FleetRecord, fleet_record_bytes, input_digest
from gen.emit.cache.layout import FLEET_RECORD
from gen.emit.cache.stat import VerifiedFiles
from gen.emit.files import FileMap
from gen.errors import Finding

__all__ = ["FastPath", "fast_path", "fleet_record_of", "render_digest", "vouched_outputs"]


class FastPath(NamedTuple):
    """A whole render read from out/: its fleet record and the files it lists (less the
    index and the cache records), proved to be the bytes a render writes."""

    record: FleetRecord
    outputs: VerifiedFiles


def render_digest(
    profiles_dir: Path, templates_dir: Path | None, base: Path | None,
    clusters: Sequence[str], validator: str, crds_dir: Path | None = None,
) -> str | None:
    """The fleet input digest (:func:`~gen.emit.cache.fleet.input_digest`) of a render with
    these arguments; None when kubeconform would run (it is never skipped) or an input
    cannot be vouched for."""
    from gen.emit.kubeconform import find_kubeconform

    if validator == "kubeconform" or (validator == "auto" and find_kubeconform() is not None):
        return None
    # ``base`` reaches the output only through the profile paths shown, hashed as shown;
    # it is not hashed itself, so a fleet rendered with and without it, or moved, keeps
    # the same record. The out/ label reaches only the messages of a failed render (a
    # template or schema error), which a recorded render, being a success, cannot have.
    options = {"validator": validator, "clusters": list(clusters)}
    return input_digest(profiles_dir, templates_dir, base, options, crds_dir=crds_dir)


def vouched_outputs(out_dir: Path, digest: str) -> FastPath | None:
    """The whole render from out/ when the fleet record vouches for it: the same input
    digest, every recorded file (the index and the other records too) in out/ with the
    bytes recorded, and nothing a render would remove or replace. None otherwise."""
    from gen.emit.output import fast_outputs

    found = fast_outputs(out_dir, digest)
    return None if found is None else FastPath(*found)


def fast_path(
    profiles_dir: Path, out_dir: Path, *, templates_dir: Path | None, validator: str,
    base: Path | None, crds_dir: Path | None,
) -> FastPath | None:
    """What a whole render with these arguments (no ``--cluster``) would find in out/ when
    the fleet record vouches for it, without loading anything; None when it does not."""
    digest = render_digest(profiles_dir, templates_dir, base, (), validator, crds_dir)
    return None if digest is None else vouched_outputs(out_dir, digest)


def fleet_record_of(
    digest: str, clusters: Iterable[str], objects: int, warnings: tuple[Finding, ...],
    outputs: Mapping[PurePosixPath, bytes], records: Mapping[str, bytes],
) -> bytes:
    """The fleet record of a render about to be written, listing what out/ will then hold:
    every output, the index of them, and the other cache files (``records``)."""
    from gen.emit.output import INDEX_NAME, index_bytes

    files = ({rel: outputs.sha256_at(rel) for rel in outputs.rels()}
             if isinstance(outputs, FileMap)
             else {str(p): hashlib.sha256(data).hexdigest() for p, data in outputs.items()})
    files[INDEX_NAME] = hashlib.sha256(index_bytes(list(files))).hexdigest()
    files.update({rel: hashlib.sha256(data).hexdigest() for rel, data in records.items()
                  if rel != FLEET_RECORD})
    return fleet_record_bytes(FleetRecord(digest, tuple(clusters), objects, files, warnings))
