"""Before the ramp measures anything: a short probe for where to start, then a
warm-up at the first rate, neither of them counted.

A server's first requests take its cold path (lazy allocations, first-batch
kernel selection, connection set-up); a step that includes them reports that
path as its p99 and can end the ramp on its first step. The warm-up sends the
first step's load for a while and throws its samples away.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Callable

import aiohttp

from forescale_stress.errors import StressError
from forescale_stress.loadgen import LoadGenerator
from forescale_stress.schedule import arrival_offsets

#: the probe's start rate is this share of what one connection gets through one
#: request at a time: a batching server's knee is at or above that rate, so
#: half of it starts the ramp below the knee
PROBE_SHARE = 0.5


def start_rate_from_probe(latencies_ms: list[float]) -> float:
    """The first step's rate from the latencies of sequential probe requests:
    half the serial rate, taken from the median (the probe's first requests
    are cold), at least 1 request/s."""
    if not latencies_ms:
        raise StressError("the probe got no successful answer: is the server up and serving this endpoint? "
                          "(or give --start-rate)")
    median_s = statistics.median(latencies_ms) / 1000.0
    return max(1.0, round(PROBE_SHARE / max(median_s, 1e-4), 1))


async def probe(session: aiohttp.ClientSession, url: str, next_body: Callable[[], bytes], seconds: float) -> list[float]:
    """Latencies (ms) of successful requests sent one after another for `seconds`."""
    latencies = []
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        sent = time.perf_counter()
        try:
            async with session.post(url, data=next_body(), headers={"Content-Type": "application/json"}) as resp:
                await resp.read()
                ok = 200 <= resp.status < 300
        except (TimeoutError, aiohttp.ClientError):
            ok = False
        if ok:
            latencies.append((time.perf_counter() - sent) * 1000.0)
    return latencies


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
