"""Per-process caches: one rule for every module-level cache of clustergym.

A :class:`Cache` maps a hashable key to a value built on a miss and keeps at most ``size`` entries,
dropping the least recently used one first.  Where a cache is defined, one line says what its key
is and why its size is what it is.  A cache never changes a result, only how often it is computed:
keys hold everything the value depends on (arrays as bytes, files as path, size and mtime).
:func:`clear_caches` empties every cache of the process (tests, long interactive sessions).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["Cache", "clear_caches"]

V = TypeVar("V")

_ALL: list[Cache] = []


class Cache(Generic[V]):
    """At most ``size`` values by key, least recently used out first."""

    def __init__(self, size: int):
        if size < 1:
            raise ValueError(f"a cache holds at least one entry, got size {size}")
        self.size = size
        self._data: OrderedDict[Hashable, V] = OrderedDict()
        _ALL.append(self)

    def get(self, key: Hashable, build: Callable[[], V]) -> V:
        """The value under ``key``, built by ``build()`` (and kept) on a miss."""
        try:
            self._data.move_to_end(key)
            return self._data[key]
        except KeyError:
            pass
        value = build()
        self._data[key] = value
        if len(self._data) > self.size:
            self._data.popitem(last=False)
        return value

    def clear(self) -> None:
        self._data.clear()

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: Hashable) -> bool:
        return key in self._data


def clear_caches() -> None:
    """Empty every :class:`Cache` of this process."""
    for cache in _ALL:
        cache.clear()
