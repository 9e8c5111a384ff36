"""The result cache: interface, key and factory.

Keyed by model, precision and input, so a precision switch can never serve a
stale vector even before the cache is emptied (which it also is). One policy
per file: `cache_lru`, `cache_hotness`, `cache_window`, `cache_turn`, and
`cache_none` for benchmarks that must time compute.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Hashable, Protocol

CacheKey = tuple[str, str, Hashable]

POLICIES = ("lru", "hotness", "window", "turn", "none")


def cache_key(model: str, precision: str, item: Hashable) -> CacheKey:
    """The key of one result: model, precision, input."""
    return (model, precision, item)


class ResultCache(Protocol):
    """What the server needs from a cache policy."""

    def get(self, key: CacheKey) -> Any | None:
        """The cached value, or None (counted as a miss)."""

    def put(self, key: CacheKey, value: Any, conversation: str | None = None, turn: int | None = None) -> None:
        """Store a value, evicting by the policy when full."""

    def clear(self) -> None:
        """Drop everything (precision switch, `cache_flush` fault)."""

    def __len__(self) -> int: ...


def make_cache(
    policy: str,
    capacity: int = 10_000,
    window_s: float = 300.0,
    keep_turns: int = 2,
    clock: Callable[[], float] = time.monotonic,
) -> ResultCache:
    """Build the cache for a policy name; a clear error for an unknown one."""
    if capacity < 1:
        raise ValueError(f"cache capacity must be >= 1, got {capacity}")
    if policy == "lru":
        from .cache_lru import LRUCache

        return LRUCache(capacity)
    if policy == "hotness":
        from .cache_hotness import HotnessCache

        return HotnessCache(capacity)
    if policy == "window":
        from .cache_window import WindowCache

        if window_s <= 0:
            raise ValueError(f"cache window must be > 0 seconds, got {window_s}")
        return WindowCache(capacity, window_s, clock)
    if policy == "turn":
        from .cache_turn import TurnCache

        if keep_turns < 1:
            raise ValueError(f"keep_turns must be >= 1, got {keep_turns}")
        return TurnCache(capacity, keep_turns)
    if policy == "none":
        from .cache_none import NoCache

        return NoCache()
    raise ValueError(f"unknown cache policy {policy!r}; expected one of {', '.join(POLICIES)}")
