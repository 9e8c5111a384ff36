"""Per-conversation-turn eviction for chat sessions.

A chat client resends the earlier turns of a conversation, so results of the
last few turns are likely hits; once a conversation has moved `keep_turns`
turns past an entry, that entry is dropped. Entries without a conversation
and overflow beyond `capacity` fall back to least-recently-used.
"""

from __future__ import annotations

from collections import OrderedDict, defaultdict
from typing import Any

from .result_cache import CacheKey


class TurnCache:
    """Keeps each conversation's last `keep_turns` turns."""

    def __init__(self, capacity: int, keep_turns: int):
        self.capacity = capacity
        self.keep_turns = keep_turns
        self._data: OrderedDict[CacheKey, tuple[Any, str | None, int | None]] = OrderedDict()
        self._turns: dict[str, dict[int, set[CacheKey]]] = defaultdict(lambda: defaultdict(set))
        self._latest: dict[str, int] = {}

    def get(self, key: CacheKey) -> Any | None:
        entry = self._data.get(key)
        if entry is None:
            return None
        self._data.move_to_end(key)
        return entry[0]

    def put(self, key: CacheKey, value: Any, conversation: str | None = None, turn: int | None = None) -> None:
        if key in self._data:
            self._forget(key)
        self._data[key] = (value, conversation, turn)
        if conversation is not None and turn is not None:
            self._turns[conversation][turn].add(key)
            latest = max(turn, self._latest.get(conversation, turn))
            self._latest[conversation] = latest
            for old in [t for t in self._turns[conversation] if t <= latest - self.keep_turns]:
                for stale in self._turns[conversation].pop(old):
                    self._data.pop(stale, None)
        while len(self._data) > self.capacity:
            oldest = next(iter(self._data))
            self._forget(oldest)
            del self._data[oldest]

    def _forget(self, key: CacheKey) -> None:
        _, conversation, turn = self._data[key]
        if conversation is None or turn is None:
            return
        turns = self._turns.get(conversation)
        if turns and turn in turns:
            turns[turn].discard(key)
            if not turns[turn]:
                del turns[turn]
            if not turns:
                del self._turns[conversation]
                self._latest.pop(conversation, None)

    def clear(self) -> None:
        self._data.clear()
        self._turns.clear()
        self._latest.clear()

    def __len__(self) -> int:
        return len(self._data)
