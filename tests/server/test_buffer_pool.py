"""The pre-allocated batch buffer pool."""

from __future__ import annotations

import pytest

from forescale_server.buffer_pool import BufferPool


def test_steady_use_allocates_nothing_after_start():
    made = []
    pool = BufferPool(lambda: made.append(object()) or made[-1], size=2)
    assert pool.allocations == 2
    for _ in range(100):
        buffer = pool.acquire()
        pool.release(buffer)
    assert pool.allocations == 2 and len(made) == 2
    assert pool.acquisitions == 100


def test_buffers_are_reused_not_copied():
    pool = BufferPool(lambda: bytearray(8), size=1)
    first = pool.acquire()
    pool.release(first)
    assert pool.acquire() is first


def test_an_exhausted_pool_grows_and_counts_it():
    pool = BufferPool(lambda: bytearray(8), size=1)
    a, b = pool.acquire(), pool.acquire()
    assert a is not b and pool.allocations == 2
    pool.release(a)
    pool.release(b)
    assert pool.free == 2


def test_size_must_be_positive():
    with pytest.raises(ValueError, match="pool size"):
        BufferPool(lambda: None, size=0)
