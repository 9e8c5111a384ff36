"""Fault state: expiry, the slowdown factor, the bounded leak."""

from __future__ import annotations

import pytest

from forescale_server.faults import FaultState


class Clock:
    now = 0.0

    def __call__(self):
        return self.now


def test_latency_and_slowdown_expire():
    clock = Clock()
    faults = FaultState(clock=clock)
    faults.add_latency(250, seconds=10)
    faults.add_slowdown(2.5, seconds=20)
    assert faults.latency_s() == 0.25 and faults.slowdown() == 2.5
    clock.now = 15
    assert faults.latency_s() == 0.0 and faults.slowdown() == 2.5
    clock.now = 25
    assert faults.slowdown() == 1.0


def test_leak_is_bounded_and_freed():
    faults = FaultState(max_leak_mb=3)
    assert faults.leak(2) == 2
    with pytest.raises(ValueError, match="bound is 3 MiB"):
        faults.leak(2)
    assert faults.leaked_mb == 2
    assert faults.leak(0) == 0


def test_clear_lifts_everything():
    faults = FaultState(max_leak_mb=4)
    faults.add_slowdown(3, 100)
    faults.leak(1)
    faults.clear()
    assert faults.describe()["slowdown"] == 1.0 and faults.leaked_mb == 0
