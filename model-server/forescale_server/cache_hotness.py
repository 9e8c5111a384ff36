"""Hit-count (hotness) weighted eviction: the coldest entry goes first.

A heap of (hits, last use, key) with lazy deletion keeps eviction O(log n);
stale heap rows are skipped when popped and the heap is rebuilt when it grows
past four times the live entries.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Any

from .result_cache import CacheKey


class HotnessCache:
    """Evicts the entry with the fewest hits; ties go to the least recently used."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._data: dict[CacheKey, list] = {}  # key -> [value, hits, tick]
        self._heap: list[tuple[int, int, CacheKey]] = []
        self._tick = itertools.count()

    def get(self, key: CacheKey) -> Any | None:
        entry = self._data.get(key)
        if entry is None:
            return None
        entry[1] += 1
        entry[2] = next(self._tick)
        self._push(key, entry)
        return entry[0]

    def hits(self, key: CacheKey) -> int:
        """How often a cached entry was hit (0 when absent)."""
        entry = self._data.get(key)
        return entry[1] if entry else 0

    def put(self, key: CacheKey, value: Any, conversation: str | None = None, turn: int | None = None) -> None:
        entry = self._data.get(key)
        if entry is not None:
            entry[0] = value
            return
        while len(self._data) >= self.capacity:
            self._evict_one()
        entry = [value, 0, next(self._tick)]
        self._data[key] = entry
        self._push(key, entry)

    def _push(self, key: CacheKey, entry: list) -> None:
        heapq.heappush(self._heap, (entry[1], entry[2], key))
        if len(self._heap) > 4 * max(len(self._data), 16):
            self._heap = [(e[1], e[2], k) for k, e in self._data.items()]
            heapq.heapify(self._heap)

    def _evict_one(self) -> None:
        while self._heap:
            hits, tick, key = heapq.heappop(self._heap)
            entry = self._data.get(key)
            if entry is not None and entry[1] == hits and entry[2] == tick:
                del self._data[key]
                return

    def clear(self) -> None:
        self._data.clear()
        self._heap.clear()

    def __len__(self) -> int:
        return len(self._data)
