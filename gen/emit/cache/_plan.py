"""Which fields of the resolved plan's records the cache keys hash: every field of a
:class:`~gen.fleet.plan.ServicePlan` (derived from the dataclass, its pools by name), and
of a :class:`~gen.fleet.plan.PoolPlan` the inputs, the derived fields left out by name."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from gen.fleet.plan import PoolPlan, ServicePlan

__all__ = ["POOL_DERIVED", "POOL_INPUTS", "pool_inputs", "service_inputs"]

POOL_INPUTS = ("pool", "gpu", "mig_layout")
"""The fields of a pool a fingerprint hashes: the profile, its catalog GPU and MIG layout."""

POOL_DERIVED = frozenset({"located_at", "mig_checks", "refused_classes"})
"""The fields it leaves out: where the pool is written (lines reach messages only; its
file is the cluster profile's, hashed there), and what the resolver derived from the
hashed inputs (the layout's placement checks, the classes whose CEL selects none of the
pool's devices). A test fails when a field is in neither set."""


_SERVICE_FIELDS = tuple(field.name for field in dataclasses.fields(ServicePlan))


def service_inputs(service: ServicePlan, pool: Callable[[PoolPlan], Any]) -> dict[str, Any]:
    """Every field of ``service``, in declaration order, with each of its pools as
    ``pool`` writes it (a key hashes the pools themselves once, with the cluster)."""
    return {name: ([pool(p) for p in service.pools] if name == "pools"
                   else getattr(service, name))
            for name in _SERVICE_FIELDS}


def pool_inputs(pool: PoolPlan) -> tuple[Any, ...]:
    """The :data:`POOL_INPUTS` of ``pool``, in that order."""
    return tuple(getattr(pool, name) for name in POOL_INPUTS)
