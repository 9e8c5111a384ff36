"""Before the ramp measures anything: a short probe for where to start, then a
warm-up at the first rate, neither of them counted.

A server's first requests take its cold path (lazy allocations, first-batch
kernel selection, connection set-up); a step that includes them reports that
path as its p99 and can end the ramp on its first step. The warm-up sends the
first step's load for a while and throws its samples away.
"""

from __future__ import annotations

import asyncio
import random
import time
from typing import Callable

import aiohttp

from forescale_stress.errors import StressError
from forescale_stress.loadgen import LoadGenerator
from forescale_stress.schedule import arrival_offsets

#: requests the probe keeps in flight: enough for a batching server to form batches
PROBE_CONNECTIONS = 8
#: the first step offers this share of what the probe got through: the probe
#: holds the server at full load, so half of it starts the ramp below the knee
PROBE_SHARE = 0.5


def start_rate_from_probe(answered: int, seconds: float) -> float:
    """The first step's rate: half the throughput the probe measured (answered
    requests per second with PROBE_CONNECTIONS in flight), at least 1 request/s."""
    if answered <= 0:
        raise StressError("the probe got no successful answer: is the server up and serving this endpoint? "
                          "(or give --start-rate)")
    return max(1.0, round(PROBE_SHARE * answered / seconds, 1))


async def probe(session: aiohttp.ClientSession, url: str, next_body: Callable[[], bytes], seconds: float,
                connections: int = PROBE_CONNECTIONS) -> tuple[int, float]:
    """(successful answers, seconds) of the probe's second half, with `connections`
    requests kept in flight, each sent as soon as the previous one on its connection
    answered. The first half only pays the server's cold path and is not counted."""
    started = time.perf_counter()
    counted_from, deadline = started + seconds / 2, started + seconds

    async def worker() -> int:
        answered = 0
        while time.perf_counter() < deadline:
            try:
                async with session.post(url, data=next_body(), headers={"Content-Type": "application/json"}) as resp:
                    await resp.read()
                    ok = 200 <= resp.status < 300
            except (TimeoutError, aiohttp.ClientError):
                ok = False
            answered += ok and counted_from <= time.perf_counter() <= deadline
        return answered

    counts = await asyncio.gather(*(worker() for _ in range(connections)))
    return sum(counts), seconds - seconds / 2


async def warm_up(session: aiohttp.ClientSession, url: str, next_body: Callable[[], bytes], rate: float, seconds: float,
                  arrivals: str, rng: random.Random, sleep) -> int:
    """Offer `rate` for `seconds` and wait (bounded) for the answers; the samples
    are dropped. Returns how many requests were sent."""
    t0 = time.perf_counter()
    clock = lambda: time.perf_counter() - t0  # noqa: E731
    gen = LoadGenerator(session, url, next_body, clock)
    for offset in arrival_offsets(rate, seconds, arrivals, rng):
        wait = offset - clock()
        if wait > 0:
            await sleep(wait)
        gen.fire(-1, offset)
    await gen.drain(max(1.0, seconds / 3))
    return gen.sent_total
