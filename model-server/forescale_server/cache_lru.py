"""Least-recently-used eviction."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

from .result_cache import CacheKey


class LRUCache:
    """Evicts the entry used longest ago."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._data: OrderedDict[CacheKey, Any] = OrderedDict()

    def get(self, key: CacheKey) -> Any | None:
        value = self._data.get(key)
        if value is not None:
            self._data.move_to_end(key)
        return value

    def put(self, key: CacheKey, value: Any, conversation: str | None = None, turn: int | None = None) -> None:
        self._data[key] = value
        self._data.move_to_end(key)
        while len(self._data) > self.capacity:
            self._data.popitem(last=False)

    def clear(self) -> None:
        self._data.clear()

    def __len__(self) -> int:
        return len(self._data)
