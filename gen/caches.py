"""Every process-wide cache of gen, in one registry: :func:`clear` empties them all.

Why process-wide. A fleet repeats itself: the same quantities, versions, CEL selectors,
MIG layouts, fit questions, YAML keys and scalars come back in every cluster and every
object. gen answers each distinct question once per process and keeps the answer for the
next cluster, the next lint, the next render in the same process (tests, a long-lived
library user, each parallel render worker). A cache per call or per Plan would throw the
answers away where they are most often asked again.

What is safe to cache. Only pure functions of immutable values: the key is the whole
input, compared by value (strings, numbers, tuples, frozen dataclasses, frozen pydantic
models), never by identity (``id()`` values are reused once an object dies), and the
answer is never mutated by a caller. A function that reads anything besides its arguments
(the file system, the environment, the clock) is not cached here; the built-in catalogs
are package data, read once.

Limits. Every cache has one, as data (``stats()`` shows it): a :func:`memoize` cache
evicts the least recently used entry (``functools.lru_cache``); a :class:`BoundedCache`
is emptied when a store finds it full, which bounds its memory with no per-lookup cost
and lets the working set of the current input refill it; a :func:`once` loader holds one
value.

Three kinds:

* :func:`memoize` — ``functools.lru_cache``, registered under the function's qualified
  name (``gen.k8s.quantity.parse_quantity``).
* :class:`BoundedCache` — a plain ``dict`` (``.data``) for hot loops that look up a
  value per YAML scalar: read ``cache.data`` directly (a bare dict lookup, as fast as a
  module dict), store through :meth:`BoundedCache.put` on a miss.
* :func:`once` — a zero-argument loader of package data (the GPU, model and Apple
  catalogs, the CEL environments): read on first use and kept. Its value depends on no
  input, so there is nothing to invalidate, and callers keep its objects and compare them
  by identity; :func:`clear` leaves it alone, :func:`stats` lists it.

:func:`clear` empties every other registered cache and resets its counters (tests that
need a cold cache call it); :func:`stats` reports name → size, limit, hits and misses
where they are counted without cost on the hot path. The registry holds caches weakly: a
cache that is no longer referenced leaves it.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any, Generic, Literal, NamedTuple, TypeVar

__all__ = ["BoundedCache", "CacheStats", "clear", "memoize", "names", "once", "stats"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
T = TypeVar("T")


class CacheStats(NamedTuple):
    """One cache's counters; ``None`` where the cache does not count it."""

    size: int
    limit: int | None
    """Most entries it holds (None: unbounded, for one-entry loaders)."""
    hits: int | None
    misses: int | None
    kind: Literal["memoize", "bounded", "once"]


class BoundedCache(Generic[K, V]):
    """A dict cache with a size limit, registered under ``name``.

    Hot paths read :attr:`data` (a plain dict, cleared in place, never replaced, so a
    module may bind it once) and store with :meth:`put`. When a store finds the cache
    full it empties it first. Hits are not counted (a bare dict lookup has no hook);
    ``misses`` counts the stores since the last :meth:`clear`.
    """

    __slots__ = ("__weakref__", "data", "limit", "misses", "name")

    def __init__(self, name: str, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"cache {name!r}: limit must be at least 1, got {limit}")
        self.name = name
        self.limit = limit
        self.data: dict[K, V] = {}
        self.misses = 0
        _register(name, self)

    def get(self, key: K) -> V | None:
        """The cached value, or None."""
        return self.data.get(key)

    def put(self, key: K, value: V) -> V:
        """Store ``value`` (emptying the cache first when it is full); return it."""
        data = self.data
        if len(data) >= self.limit and key not in data:
            data.clear()
        data[key] = value
        self.misses += 1
        return value

    def __contains__(self, key: object) -> bool:
        return key in self.data

    def __len__(self) -> int:
        return len(self.data)

    def clear(self) -> None:
        """Empty the cache and reset its counter."""
        self.data.clear()
        self.misses = 0

    def stats(self) -> CacheStats:
        """Size, limit and stores."""
        return CacheStats(len(self.data), self.limit, None, self.misses, "bounded")


if TYPE_CHECKING:
    _Registered = BoundedCache[Any, Any] | functools._lru_cache_wrapper[Any]
_registry: weakref.WeakValueDictionary[str, _Registered] = weakref.WeakValueDictionary()
_loaders: weakref.WeakSet[functools._lru_cache_wrapper[Any]] = weakref.WeakSet()
"""The :func:`once` loaders among the registered caches (kept by :func:`clear`)."""


def _register(name: str, cache: _Registered) -> None:
    existing = _registry.get(name)
    if existing is not None and existing is not cache:
        raise ValueError(f"a cache named {name!r} is already registered")
    _registry[name] = cache


def memoize(
    *, maxsize: int | None, name: str | None = None
) -> Callable[[Callable[..., T]], functools._lru_cache_wrapper[T]]:
    """``functools.lru_cache(maxsize)``, registered under the function's qualified name.

    Arguments must be hashable and compared by value; see the module docstring for what
    may be cached. ``name`` overrides the registered name (for a wrapped callable that is
    not defined here, such as a class).
    """

    def decorate(function: Callable[..., T]) -> functools._lru_cache_wrapper[T]:
        wrapper = functools.lru_cache(maxsize=maxsize)(function)
        _register(name or f"{function.__module__}.{function.__qualname__}", wrapper)
        return wrapper

    return decorate


def once(function: Callable[[], T]) -> functools._lru_cache_wrapper[T]:
    """A zero-argument loader of constant data, run on first use; never cleared."""
    wrapper = functools.lru_cache(maxsize=None)(function)
    _register(f"{function.__module__}.{function.__qualname__}", wrapper)
    _loaders.add(wrapper)
    return wrapper


def names() -> list[str]:
    """The registered caches' names, sorted."""
    return sorted(_registry.keys())


def clear() -> None:
    """Empty every registered cache but the :func:`once` loaders; reset the counters."""
    for cache in list(_registry.values()):
        if isinstance(cache, BoundedCache):
            cache.clear()
        elif cache not in _loaders:
            cache.cache_clear()


def stats() -> dict[str, CacheStats]:
    """Name → size, limit, hits and misses of every registered cache, sorted by name."""
    out: dict[str, CacheStats] = {}
    for name in names():
        cache = _registry.get(name)
        if cache is None:
            continue
        if isinstance(cache, BoundedCache):
            out[name] = cache.stats()
        else:
            info = cache.cache_info()
            if cache in _loaders:
                out[name] = CacheStats(info.currsize, 1, info.hits, info.misses, "once")
            else:
                out[name] = CacheStats(info.currsize, info.maxsize, info.hits, info.misses,
                                       "memoize")
    return out
