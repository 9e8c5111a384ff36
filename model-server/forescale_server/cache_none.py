"""The no-op cache, for benchmarks that must time compute."""

from __future__ import annotations

from typing import Any

from .result_cache import CacheKey


class NoCache:
    """Stores nothing; every lookup misses."""

    def get(self, key: CacheKey) -> Any | None:
        return None

    def put(self, key: CacheKey, value: Any, conversation: str | None = None, turn: int | None = None) -> None:
        return None

    def clear(self) -> None:
        return None

    def __len__(self) -> int:
        return 0
