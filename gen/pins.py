"""Every upstream release gen pins or defaults to, read from ``gen/data/pins.yaml``.

One row a component (chart, image, CRD release, tool): its version, release date, the page a
user can open for it, how the version was confirmed and what gen uses it for. Defaults
elsewhere in gen (chart versions, images, the bundled CRDs' releases, the judge's components)
are read from here, so a pin is changed in one place; ``docs/versions.md`` is generated from
the same file (``tools/versions_doc.py``). The file is parsed once, on first use.
"""

from __future__ import annotations

import datetime
import difflib
from dataclasses import dataclass
from typing import Any, Literal

from gen._data import load_data
from gen.caches import once
from gen.errors import CatalogLookupError

__all__ = ["KubernetesMinor", "Pin", "kubernetes_minors", "pin", "pins"]

Confirmation = Literal["upstream", "third-party"]


@dataclass(frozen=True)
class Pin:
    """One pinned upstream release."""

    id: str
    """The key code looks it up by (``gpu-operator``, ``argo-cd``)."""
    component: str
    version: str
    released: datetime.date
    source: str
    """An ``https://`` page of that release (tag, release page or package page)."""
    confirmed: Confirmation
    evidence: str
    use: str
    """What gen uses it for."""
    go_module: str | None = None
    """The Go module whose zip holds the release's files (CRD manifests), when it has one."""


@dataclass(frozen=True)
class KubernetesMinor:
    """A Kubernetes minor the project supports today, with its newest patch release."""

    minor: str
    released: datetime.date
    end_of_life: datetime.date
    patch: str
    patch_released: datetime.date
    source: str


def _date(value: Any, where: str) -> datetime.date:
    if isinstance(value, datetime.date):
        return value
    try:
        return datetime.date.fromisoformat(str(value))
    except ValueError:
        raise CatalogLookupError(f"gen/data/pins.yaml: {where}: not a date: {value!r}") from None


def _pin(key: str, row: dict[str, Any]) -> Pin:
    return Pin(
        id=key,
        component=str(row["component"]),
        version=str(row["version"]),
        released=_date(row["released"], f"{key}.released"),
        source=str(row["source"]),
        confirmed=row["confirmed"],
        evidence=" ".join(str(row["evidence"]).split()),
        use=" ".join(str(row["use"]).split()),
        go_module=row.get("go_module"),
    )


def _minor(row: dict[str, Any]) -> KubernetesMinor:
    where = f"kubernetes {row['minor']}"
    return KubernetesMinor(
        minor=str(row["minor"]),
        released=_date(row["released"], f"{where}.released"),
        end_of_life=_date(row["end_of_life"], f"{where}.end_of_life"),
        patch=str(row["patch"]),
        patch_released=_date(row["patch_released"], f"{where}.patch_released"),
        source=str(row["source"]),
    )


@once
def _data() -> tuple[dict[str, Pin], tuple[KubernetesMinor, ...]]:
    raw = load_data("pins.yaml")
    table = {key: _pin(key, row) for key, row in raw["pins"].items()}
    minors = tuple(_minor(row) for row in raw["kubernetes"])
    return table, minors


def pins() -> tuple[Pin, ...]:
    """Every pin, in the order of the data file."""
    return tuple(_data()[0].values())


def pin(component_id: str) -> Pin:
    """The pin of one component.

    Raises:
        CatalogLookupError: no pin has that id (the message names the closest ones).
    """
    table = _data()[0]
    found = table.get(component_id)
    if found is None:
        close = difflib.get_close_matches(component_id, table, n=3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise CatalogLookupError(f"no pinned component {component_id!r}{hint}")
    return found


def kubernetes_minors() -> tuple[KubernetesMinor, ...]:
    """The supported Kubernetes minors, newest first."""
    return _data()[1]
