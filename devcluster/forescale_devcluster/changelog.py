"""The change history behind watch streams: every ADDED/MODIFIED/DELETED event, by resourceVersion.

A watch that names a resourceVersion gets every later event of its kind; one
older than the kept history gets `410 Expired`, as from a real server after
compaction, and must re-list. `drop_watches()` ends every open stream.
"""

from __future__ import annotations

import asyncio
import bisect
import copy
from typing import Any, AsyncIterator, Callable, Mapping

#: how many change events are kept for watches that resume from a resourceVersion
HISTORY_LIMIT = 20_000

Key = tuple[str, str, str]


class ChangeLog:
    """Events in resourceVersion order, with a condition that wakes the watchers."""

    def __init__(self, limit: int = HISTORY_LIMIT) -> None:
        self._limit = limit
        self._changes: list[tuple[int, Key, dict[str, Any]]] = []
        self._changed: asyncio.Condition | None = None  # created in the server's loop, on first use
        self._epoch = 0

    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    async def record(self, key: Key, event_type: str, obj: Mapping[str, Any]) -> None:
        """Append one event (the object's resourceVersion orders it) and wake the watchers."""
        async with self._condition():
            rv = int(obj["metadata"]["resourceVersion"])
            self._changes.append((rv, key, {"type": event_type, "object": copy.deepcopy(dict(obj))}))
            if len(self._changes) > self._limit:
                del self._changes[: self._limit // 4]
            self._condition().notify_all()

    def expired(self, rv: int) -> bool:
        """Whether events after `rv` are no longer all kept."""
        return bool(self._changes) and rv < self._changes[0][0] - 1

    def compact(self, keep: int) -> None:
        """Forget all but the last `keep` events (tests: as if the server had compacted)."""
        del self._changes[: max(0, len(self._changes) - keep)]

    async def drop_watches(self) -> None:
        """End every open watch stream now, as a restarting API server or a proxy timeout would."""
        async with self._condition():
            self._epoch += 1
            self._condition().notify_all()

    async def follow(self, key: Key, wanted: Callable[[Mapping[str, Any]], bool], since: int,
                     timeout: float) -> AsyncIterator[dict[str, Any]]:
        """Events of one kind after `since` that pass `wanted`, until the timeout or a drop."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        epoch = self._epoch
        condition = self._condition()
        while True:
            async with condition:
                index = bisect.bisect_right(self._changes, since, key=lambda c: c[0])
                pending = self._changes[index:]
                if not pending:
                    remaining = deadline - loop.time()
                    if remaining <= 0 or self._epoch != epoch:
                        return
                    try:
                        await asyncio.wait_for(condition.wait(), timeout=remaining)
                    except asyncio.TimeoutError:
                        return
                    if self._epoch != epoch:
                        return
                    continue
            for rv, event_key, event in pending:
                since = rv
                if event_key == key and wanted(event["object"]):
                    yield event
