"""Fault windows and the generator's step check (runner, loadgen), with the
HTTP session injected."""

from __future__ import annotations

import asyncio

import pytest

from forescale_stress.faults import parse_degrade, parse_fault
from forescale_stress.loadgen import LoadGenerator
from forescale_stress.runner import exempt_step, holds_rate

FAULTS = (parse_fault("at=30s,slowdown=2,seconds=10"), parse_fault("at=90s,cache_flush"))


@pytest.mark.parametrize(
    "start, end, grace, exempt",
    [
        (0, 10, 10, False),
        (25, 30, 10, False),  # ends as the fault starts
        (25, 31, 10, True),
        (45, 50, 10, True),  # inside the grace after the slowdown (ends at 40)
        (50, 55, 10, False),
        (50, 55, 0, False),
        (89, 91, 0, True),  # an instantaneous fault inside the step
        (99, 105, 10, True),
        (100, 105, 10, False),
    ],
)
def test_exempt_step(start, end, grace, exempt):
    assert exempt_step(start, end, FAULTS, grace) is exempt


DEGRADE = (parse_degrade("at=60s,precision=int8"),)


@pytest.mark.parametrize(
    "start, end, holds",
    [
        (0, 10, False),
        (35, 40, True),  # fault window
        (44, 49, True),  # its grace
        (20, 29.9, False),
        (49, 51, True),  # overlaps the 10 s before the degradation
        (65, 70, True),  # the 10 s after it (plus 1 s for the call)
        (71, 75, False),
    ],
)
def test_holds_rate(start, end, holds):
    assert holds_rate(start, end, FAULTS[:1], DEGRADE, grace=10, window=10) is holds


class _Answer:
    def __init__(self, status: int, delay: float):
        self.status, self._delay = status, delay

    async def __aenter__(self):
        await asyncio.sleep(self._delay)
        return self

    async def __aexit__(self, *exc):
        return False

    async def read(self) -> bytes:
        return b"{}"


class FakeSession:
    """Answers the n-th request with `plan[n]` = (status, delay)."""

    def __init__(self, plan):
        self._plan = list(plan)

    def post(self, url, **kwargs):
        return _Answer(*self._plan.pop(0))


async def test_step_check_counts_requests_in_flight_by_their_age():
    now = [0.0]
    # 100 fast answers and two that never come back in time
    gen = LoadGenerator(FakeSession([(200, 0)] * 100 + [(200, 3600)] * 2), "http://x", lambda: b"{}",
                        lambda: now[0])
    for _ in range(102):
        gen.fire(0, 0.0)
    await asyncio.sleep(0.05)
    now[0] = 5.0  # the step ends 5 s after the requests were scheduled
    p99, error_rate = gen.step_check(0, min_samples=100)
    # the finished requests took 0 s of fake time; the two stuck ones count at
    # their age, 5000 ms, and the p99 of 102 samples is rank 101: one of them
    assert gen.in_flight == 2 and error_rate == 0.0
    assert p99 == pytest.approx(5000.0)
    await gen.drain(0.01)
    assert gen.in_flight == 0
    assert [s.error for s in gen.samples].count("unfinished") == 2


async def test_step_check_error_rate_and_unanswered_p99():
    now = [0.0]
    gen = LoadGenerator(FakeSession([(503, 0)] * 10 + [(200, 3600)] * 100), "http://x", lambda: b"{}", lambda: now[0])
    for _ in range(110):
        gen.fire(2, 1.0)
    await asyncio.sleep(0.05)
    now[0] = 3.0
    p99, error_rate = gen.step_check(2, min_samples=100)
    # a server that stopped answering still shows as slow: 100 requests 2 s old
    assert p99 == pytest.approx(2000.0)
    assert error_rate == pytest.approx(10 / 110)
    await gen.drain(0.01)
