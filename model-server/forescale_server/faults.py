"""Injected faults for chaos tests and the demo (`--enable-faults` only).

Latency and slowdown act on the compute stage of every batch, as a slow or
throttled GPU would: the batch occupies the worker for longer, so queueing
builds up behind it exactly as in a real incident.

A cache flush with `seconds` also keeps the result cache from holding
anything for that long (a cache that stopped working: every lookup misses),
so the hit ratio stays down instead of refilling within seconds.

Memory pressure takes a share of the device's room: a batch whose items do
not fit in what is left is refused as a real allocator refuses it (the
server logs an out-of-memory warning and counts it), and the batcher retries
its halves, so smaller batches still run and throughput falls; at share 1
every allocation is refused and requests fail with 503 "out of memory".
"""

from __future__ import annotations

import time
from typing import Callable

_PAGE = 4096


class FaultState:
    """The faults now in force, each with its own expiry."""

    def __init__(self, max_leak_mb: int = 512, clock: Callable[[], float] = time.monotonic):
        self._clock = clock
        self.max_leak_mb = max_leak_mb
        self._latency_ms = 0.0
        self._latency_until = 0.0
        self._slowdown = 1.0
        self._slowdown_until = 0.0
        self._leaks: list[bytearray] = []
        self._pressure = 0.0
        self._pressure_until = 0.0
        self._cache_off_until = 0.0

    def add_latency(self, ms: float, seconds: float) -> None:
        self._latency_ms, self._latency_until = ms, self._clock() + seconds

    def add_slowdown(self, factor: float, seconds: float) -> None:
        self._slowdown, self._slowdown_until = factor, self._clock() + seconds

    def add_memory_pressure(self, share: float, seconds: float) -> None:
        self._pressure, self._pressure_until = share, self._clock() + seconds

    def add_cache_off(self, seconds: float) -> None:
        self._cache_off_until = self._clock() + seconds

    def cache_off(self) -> bool:
        """True while the result cache is to hold nothing (every lookup misses)."""
        return self._clock() < self._cache_off_until

    def memory_pressure(self) -> float:
        """Share (0..1) of the device's room held by the memory-pressure fault now."""
        return self._pressure if self._clock() < self._pressure_until else 0.0

    def batch_room(self, max_batch: int) -> int:
        """Items a batch may hold before its allocation is refused (`max_batch` without pressure)."""
        return int(max_batch * (1.0 - self.memory_pressure()))

    def latency_s(self) -> float:
        """Extra seconds added to each batch now."""
        return self._latency_ms / 1000.0 if self._clock() < self._latency_until else 0.0

    def slowdown(self) -> float:
        """Factor on compute time now (1.0 when none)."""
        return self._slowdown if self._clock() < self._slowdown_until else 1.0

    def leak(self, mb: int) -> int:
        """Hold `mb` more MiB (touched, so it is resident); 0 frees everything.
        Bounded by `max_leak_mb` in total. Returns the MiB now held."""
        if mb == 0:
            self._leaks.clear()
            return 0
        held = self.leaked_mb
        if held + mb > self.max_leak_mb:
            raise ValueError(f"leak of {mb} MiB would hold {held + mb} MiB; the bound is {self.max_leak_mb} MiB")
        block = bytearray(mb << 20)
        # bytearray memory may be mapped lazily; writing one byte a page makes it count.
        for offset in range(0, len(block), _PAGE):
            block[offset] = 1
        self._leaks.append(block)
        return self.leaked_mb

    @property
    def leaked_mb(self) -> int:
        return sum(len(b) for b in self._leaks) >> 20

    def clear(self) -> None:
        """Lift every fault and free leaked memory."""
        self._latency_until = self._slowdown_until = self._pressure_until = self._cache_off_until = 0.0
        self._leaks.clear()

    def describe(self) -> dict:
        """The faults in force, for the admin answer."""
        now = self._clock()
        return {
            "latency_ms": self._latency_ms if now < self._latency_until else 0.0,
            "latency_seconds_left": max(0.0, round(self._latency_until - now, 3)),
            "slowdown": self.slowdown(),
            "slowdown_seconds_left": max(0.0, round(self._slowdown_until - now, 3)),
            "leaked_mb": self.leaked_mb,
            "memory_pressure": self.memory_pressure(),
            "memory_pressure_seconds_left": max(0.0, round(self._pressure_until - now, 3)),
            "cache_off_seconds_left": max(0.0, round(self._cache_off_until - now, 3)),
        }
