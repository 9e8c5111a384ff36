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


@pytest.mark.parametrize("share,room", [(0.0, 32), (0.25, 24), (0.5, 16), (0.99, 0), (1.0, 0)])
def test_memory_pressure_leaves_room_for_smaller_batches(share, room):
    faults = FaultState()
    faults.add_memory_pressure(share, seconds=10)
    assert faults.batch_room(32) == room
    assert faults.describe()["memory_pressure"] == share


def test_memory_pressure_expires_and_is_cleared():
    clock = Clock()
    faults = FaultState(clock=clock)
    faults.add_memory_pressure(1.0, seconds=10)
    assert faults.batch_room(8) == 0
    clock.now = 11
    assert faults.memory_pressure() == 0.0 and faults.batch_room(8) == 8
    faults.add_memory_pressure(0.5, seconds=10)
    faults.clear()
    assert faults.batch_room(8) == 8
