"""Time-window eviction: an entry lives `window_s` after its last use."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable

from .result_cache import CacheKey


class WindowCache:
    """Keeps what was used within the last `window_s` seconds (a sliding
    window: a hit renews it); beyond `capacity`, the least recently used goes."""

    def __init__(self, capacity: int, window_s: float, clock: Callable[[], float]):
        self.capacity = capacity
        self.window_s = window_s
        self._clock = clock
        self._data: OrderedDict[CacheKey, tuple[Any, float]] = OrderedDict()  # oldest use first

    def get(self, key: CacheKey) -> Any | None:
        entry = self._data.get(key)
        if entry is None:
            return None
        now = self._clock()
        if now - entry[1] > self.window_s:
            del self._data[key]
            return None
        self._data[key] = (entry[0], now)
        self._data.move_to_end(key)
        return entry[0]

    def put(self, key: CacheKey, value: Any, conversation: str | None = None, turn: int | None = None) -> None:
        now = self._clock()
        self._data[key] = (value, now)
        self._data.move_to_end(key)
        self._expire(now)
        while len(self._data) > self.capacity:
            self._data.popitem(last=False)

    def _expire(self, now: float) -> None:
        # Entries are ordered by last use, so the expired ones are at the front.
        while self._data:
            key, (_, used) = next(iter(self._data.items()))
            if now - used <= self.window_s:
                break
            del self._data[key]

    def clear(self) -> None:
        self._data.clear()

    def __len__(self) -> int:
        return len(self._data)
