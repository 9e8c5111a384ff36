"""The most frequent recent inputs, for `POST /admin/warmup {"top": N}`."""

from __future__ import annotations

from collections import Counter, deque
from typing import Hashable


class HotInputs:
    """Counts the last `window` inputs seen (a sliding window, so yesterday's
    hot set fades)."""

    def __init__(self, window: int = 10_000):
        self._recent: deque[Hashable] = deque()
        self._counts: Counter[Hashable] = Counter()
        self.window = window

    def record(self, item: Hashable) -> None:
        self._recent.append(item)
        self._counts[item] += 1
        if len(self._recent) > self.window:
            old = self._recent.popleft()
            self._counts[old] -= 1
            if not self._counts[old]:
                del self._counts[old]

    def top(self, n: int) -> list[Hashable]:
        """The `n` most frequent recent inputs, most frequent first."""
        return [item for item, _ in self._counts.most_common(n)]
