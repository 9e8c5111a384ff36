"""Before the ramp measures anything: a short probe for where to start, then a
warm-up at the first rate, neither of them counted.

A server's first requests take its cold path (lazy allocations, first-batch
kernel selection for each new batch and input shape, connection set-up); a
step that includes them reports that path as its p99 and can end the ramp on
its first step. The warm-up sends the first step's load for a while and
throws its samples away.

The probe has the same problem one stage earlier: a cold server answers a
probe slowly, so the start rate read from it is too low (against the real
MiniLM server here, 3.4 req/s where the warm server takes 30-70). The probe
therefore warms the server first with its own closed-loop load, and only then
counts.
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
#: the first step offers this share of what the probe got through. The probe
#: holds the server at full load (closed loop), but open-loop arrivals break a
#: p99 SLO well before that throughput: against the real MiniLM server here the
#: p99 crossed 200 ms at 44 req/s of a probed 89 (half). A quarter leaves a
#: +10% ramp about seven steps below such a knee (enough for a slope), and a
#: knee at 90% of the probe is still reached in 14 steps
PROBE_SHARE = 0.25
#: seconds of the probe's own load before it counts: the server's cold path
PROBE_WARMUP_SECONDS = 10.0


def start_rate_from_probe(answered: int, seconds: float) -> float:
    """The first step's rate: a quarter of the throughput the probe measured (answered
    requests per second with PROBE_CONNECTIONS in flight), at least 1 request/s."""
    if answered <= 0:
        raise StressError("the probe got no successful answer: is the server up and serving this endpoint? "
                          "(or give --start-rate)")
    return max(1.0, round(PROBE_SHARE * answered / seconds, 1))


async def probe(session: aiohttp.ClientSession, url: str, next_body: Callable[[], bytes], seconds: float,
                connections: int = PROBE_CONNECTIONS, warmup_seconds: float = PROBE_WARMUP_SECONDS) -> tuple[int, float]:
    """(successful answers, seconds counted): `connections` requests kept in flight, each sent as
    soon as the previous one on its connection answered, for `warmup_seconds` and then `seconds`.
    Only answers that arrive in the last `seconds` count: the warm-up pays the server's cold path."""
    started = time.perf_counter()
    counted_from = started + warmup_seconds
    deadline = counted_from + seconds

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
    return sum(counts), seconds


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
