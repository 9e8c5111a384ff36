"""Dynamic batching: batch bounds, the wait bound, the min-batch rule, back-pressure."""

from __future__ import annotations

import asyncio
import time

import pytest

from forescale_server.batcher import DynamicBatcher, QueueFull


def _runner(sizes: list[int], delay: float = 0.0):
    async def run(batch):
        sizes.append(len(batch))
        if delay:
            await asyncio.sleep(delay)
        return [p.item * 2 for p in batch]

    return run


@pytest.mark.parametrize("max_batch,requests", [(4, 10), (8, 30), (32, 40)])
async def test_batches_never_exceed_max_and_results_match(max_batch, requests):
    sizes: list[int] = []
    batcher = DynamicBatcher(_runner(sizes, 0.01), max_batch=max_batch, max_wait_s=0.01, min_batch=2, max_queue=1000)
    batcher.start()
    try:
        results = await asyncio.gather(*(batcher.submit(i) for i in range(requests)))
    finally:
        await batcher.stop()
    assert results == [i * 2 for i in range(requests)]
    assert max(sizes) <= max_batch
    assert sum(sizes) == requests
    # Under a burst the queue fills while a batch runs, so batches are not all singletons.
    assert max(sizes) > 1


async def test_lone_request_at_low_traffic_goes_at_once():
    sizes: list[int] = []
    batcher = DynamicBatcher(_runner(sizes), max_batch=32, max_wait_s=0.5, min_batch=4, max_queue=10)
    batcher.start()
    try:
        started = time.perf_counter()
        assert await batcher.submit(21) == 42
        waited = time.perf_counter() - started
    finally:
        await batcher.stop()
    # min-batch rule: at the (idle) arrival rate nobody else would join, so no 0.5 s wait.
    assert waited < 0.25
    assert sizes == [1]


async def test_wait_is_bounded_when_traffic_is_steady():
    sizes: list[int] = []
    batcher = DynamicBatcher(_runner(sizes), max_batch=64, max_wait_s=0.05, min_batch=8, max_queue=1000)
    batcher.start()
    waits = []
    try:
        for i in range(30):  # steady arrivals every 2 ms: the batcher expects company and waits
            pending = batcher.submit_nowait(i)
            await asyncio.sleep(0.002)
            waits.append(pending)
        await asyncio.gather(*(p.future for p in waits))
    finally:
        await batcher.stop()
    assert max(p.queue_s for p in waits) < 0.05 + 0.15  # the bound, plus scheduling slack on a shared, loaded CPU
    assert max(sizes) > 1


async def test_full_queue_raises_with_retry_after():
    sizes: list[int] = []
    batcher = DynamicBatcher(_runner(sizes, 0.2), max_batch=1, max_wait_s=0, min_batch=1, max_queue=3)
    batcher.start()
    try:
        first = [batcher.submit_nowait(i) for i in range(3)]
        await asyncio.sleep(0.01)  # the worker took one; two wait
        batcher.submit_nowait(3)
        with pytest.raises(QueueFull) as info:
            batcher.submit_nowait(4)
        assert info.value.retry_after_s >= 1
        assert "queue is full" in str(info.value)
        await asyncio.gather(*(p.future for p in first))
    finally:
        await batcher.stop()


async def test_backend_error_reaches_every_waiter_and_worker_survives():
    calls = []

    async def run(batch):
        calls.append(len(batch))
        if len(calls) == 1:
            raise RuntimeError("boom")
        return [p.item for p in batch]

    batcher = DynamicBatcher(run, max_batch=4, max_wait_s=0.001, min_batch=1, max_queue=10)
    batcher.start()
    try:
        with pytest.raises(RuntimeError, match="boom"):
            await batcher.submit(1)
        assert await batcher.submit(7) == 7
    finally:
        await batcher.stop()


@pytest.mark.parametrize("kwargs", [dict(max_batch=0), dict(min_batch=0), dict(max_queue=0), dict(max_wait_s=-1)])
def test_bad_settings_are_rejected(kwargs):
    async def run(batch):
        return []

    with pytest.raises(ValueError):
        DynamicBatcher(run, **kwargs)
