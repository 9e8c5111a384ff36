"""Dynamic batching with a bounded queue.

One worker task takes queued items and hands them to `run_batch` in batches.
A batch goes to the model when

- it holds `max_batch` items, or
- its oldest item has waited `max_wait_s`, or
- traffic is low: at the recent arrival rate fewer than `min_batch` items
  would be in the batch by that deadline, so waiting would only add latency.

A lone request therefore never waits longer than `max_wait_s` (and at low
traffic not at all). While a batch runs, new arrivals queue up and form the
next batch, so under load batches fill by themselves. The queue is bounded:
`submit` raises `QueueFull` (HTTP 429 with Retry-After) beyond `max_queue`.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable


class QueueFull(Exception):
    """The queue is at its bound; retry after `retry_after_s`."""

    def __init__(self, depth: int, retry_after_s: int):
        super().__init__(f"queue is full ({depth} items waiting); retry after {retry_after_s} s")
        self.depth = depth
        self.retry_after_s = retry_after_s


@dataclass
class Pending:
    """One queued item and the future its submitter awaits."""

    item: Any
    future: asyncio.Future
    enqueued: float
    #: seconds between enqueueing and the start of its batch, set by the worker
    queue_s: float = 0.0
    meta: dict = field(default_factory=dict)


RunBatch = Callable[[list[Pending]], Awaitable[list[Any]]]


class DynamicBatcher:
    """Groups submitted items into batches for one `run_batch` coroutine at a time."""

    def __init__(
        self,
        run_batch: RunBatch,
        max_batch: int = 32,
        max_wait_s: float = 0.005,
        min_batch: int = 4,
        max_queue: int = 1024,
        clock: Callable[[], float] = time.perf_counter,
        on_dispatch: Callable[[int], None] | None = None,
    ):
        if max_batch < 1 or min_batch < 1 or max_queue < 1 or max_wait_s < 0:
            raise ValueError("max_batch, min_batch and max_queue must be >= 1 and max_wait_s >= 0")
        self._run_batch = run_batch
        self.max_batch = max_batch
        self.max_wait_s = max_wait_s
        self.min_batch = min(min_batch, max_batch)
        self.max_queue = max_queue
        self._clock = clock
        self._on_dispatch = on_dispatch
        self._queue: asyncio.Queue[Pending] = asyncio.Queue()
        self._worker: asyncio.Task | None = None
        self._last_arrival: float | None = None
        #: EWMA of the gap between arrivals, seconds (starts "slow")
        self._gap_s = 1.0
        #: EWMA of the time a batch takes per item, for Retry-After
        self._item_s = 0.01
        self.batches = 0
        #: failed batches that were split to find the failing item
        self.splits = 0
        self.running = 0

    @property
    def depth(self) -> int:
        """Items waiting, not counting the batch that is running."""
        return self._queue.qsize()

    def start(self) -> None:
        if self._worker is None:
            self._worker = asyncio.get_running_loop().create_task(self._loop(), name="forescale-batcher")

    async def stop(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            try:
                await self._worker
            except asyncio.CancelledError:
                pass
            self._worker = None
        while not self._queue.empty():
            pending = self._queue.get_nowait()
            if not pending.future.done():
                pending.future.set_exception(RuntimeError("server is shutting down"))

    def submit_nowait(self, item: Any, meta: dict | None = None) -> Pending:
        """Queue one item; its `future` resolves to the result. Raises QueueFull."""
        depth = self._queue.qsize()
        if depth >= self.max_queue:
            retry = max(1, math.ceil((depth + self.running) * self._item_s))
            raise QueueFull(depth, retry)
        now = self._clock()
        if self._last_arrival is not None:
            self._gap_s = 0.8 * self._gap_s + 0.2 * max(now - self._last_arrival, 1e-6)
        self._last_arrival = now
        pending = Pending(item, asyncio.get_running_loop().create_future(), now, meta=meta or {})
        self._queue.put_nowait(pending)
        return pending

    async def submit(self, item: Any, meta: dict | None = None) -> Any:
        """Queue one item and wait for its result."""
        return await self.submit_nowait(item, meta).future

    def _should_wait(self, size: int, remaining_s: float) -> bool:
        if size >= self.max_batch or remaining_s <= 0:
            return False
        expected = size + remaining_s / self._gap_s
        return expected >= self.min_batch

    async def _collect(self) -> list[Pending]:
        first = await self._queue.get()
        batch = [first]
        deadline = first.enqueued + self.max_wait_s
        while len(batch) < self.max_batch:
            while len(batch) < self.max_batch and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            remaining = deadline - self._clock()
            if not self._should_wait(len(batch), remaining):
                break
            try:
                batch.append(await asyncio.wait_for(self._queue.get(), remaining))
            except asyncio.TimeoutError:
                break
        return batch

    async def _run_isolated(self, batch: list[Pending]) -> None:
        """Run `batch`; when it fails, run its halves apart, down to the item that fails.

        Why: one input the model cannot take (whatever validation missed) must
        fail its own request only, not every request that shared its batch.
        One failing item among n costs about 2·log2(n) more runs; a backend that
        fails every item costs 2n-1 runs, each failing as fast as the first.
        """
        try:
            results = await self._run_batch(batch)
            if len(results) != len(batch):
                raise RuntimeError(f"run_batch returned {len(results)} results for {len(batch)} items")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - every waiter must hear about it
            if len(batch) > 1:
                self.splits += 1
                half = len(batch) // 2
                await self._run_isolated(batch[:half])
                await self._run_isolated(batch[half:])
                return
            if not batch[0].future.done():
                batch[0].future.set_exception(exc)
            return
        for pending, result in zip(batch, results):
            if not pending.future.done():
                pending.future.set_result(result)

    async def _loop(self) -> None:
        while True:
            batch = await self._collect()
            # A client that went away needs no compute.
            batch = [p for p in batch if not p.future.done()]
            if not batch:
                continue
            start = self._clock()
            for pending in batch:
                pending.queue_s = start - pending.enqueued
            self.running = len(batch)
            self.batches += 1
            if self._on_dispatch is not None:
                self._on_dispatch(len(batch))
            try:
                await self._run_isolated(batch)
            except asyncio.CancelledError:
                for pending in batch:
                    if not pending.future.done():
                        pending.future.set_exception(RuntimeError("server is shutting down"))
                raise
            finally:
                self.running = 0
            elapsed = self._clock() - start
            self._item_s = 0.8 * self._item_s + 0.2 * elapsed / len(batch)
