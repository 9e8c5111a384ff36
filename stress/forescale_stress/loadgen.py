"""The open-loop sender: fires one request per scheduled arrival, whatever
the server's state, over a bounded aiohttp connection pool, and records a
`Sample` for each."""

from __future__ import annotations

import asyncio
from collections import defaultdict
from typing import Callable

import aiohttp
import numpy as np

from forescale_stress.percentiles import reported_quantile
from forescale_stress.samples import Sample

#: past this many requests in flight, new arrivals are counted as failed
#: (`error: saturated`) instead of piling up memory in the generator
MAX_IN_FLIGHT = 20000


class LoadGenerator:
    """Sends requests to one URL and keeps their samples.

    `clock` returns seconds since the load started, the time base of every
    sample. The session (and its connection pool) belongs to the caller.
    """

    def __init__(self, session: aiohttp.ClientSession, url: str, next_body: Callable[[], bytes],
                 clock: Callable[[], float]):
        self._session = session
        self._url = url
        self._next_body = next_body
        self._clock = clock
        self._headers = {"Content-Type": "application/json"}
        self.samples: list[Sample] = []
        self._tasks: dict[asyncio.Task, tuple[int, float, float]] = {}
        self._ok_ms: dict[int, list[float]] = defaultdict(list)
        self._errors: dict[int, int] = defaultdict(int)
        self._sent: dict[int, int] = defaultdict(int)

    @property
    def sent_total(self) -> int:
        return sum(self._sent.values())

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    def fire(self, step: int, scheduled: float) -> None:
        """Start one request scheduled at `scheduled` (seconds from load start)."""
        self._sent[step] += 1
        if len(self._tasks) >= MAX_IN_FLIGHT:
            now = self._clock()
            self._record(Sample(step, scheduled, now, now, False, 0, "saturated"))
            return
        task = asyncio.ensure_future(self._one(step, scheduled, self._next_body()))
        self._tasks[task] = (step, scheduled, self._clock())
        task.add_done_callback(self._tasks.pop)

    async def _one(self, step: int, scheduled: float, body: bytes) -> None:
        sent = self._clock()
        status, error = 0, None
        try:
            async with self._session.post(self._url, data=body, headers=self._headers,
                                          allow_redirects=False) as resp:
                await resp.read()
                status = resp.status
            if not 200 <= status < 300:
                error = f"http_{status}"
        except TimeoutError:
            error = "timeout"
        except aiohttp.ClientError:
            error = "connection"
        except asyncio.CancelledError:
            self._record(Sample(step, scheduled, sent, self._clock(), False, 0, "unfinished"))
            raise
        self._record(Sample(step, scheduled, sent, self._clock(), error is None, status, error))

    def _record(self, sample: Sample) -> None:
        self.samples.append(sample)
        if sample.ok:
            self._ok_ms[sample.step].append(sample.latency_ms)
        else:
            self._errors[sample.step] += 1

    def step_check(self, step: int, min_samples: int) -> tuple[float | None, float]:
        """(p99 ms, error rate) of a step that just ended, for the stop
        conditions. Requests still in flight count with their age so far, a
        lower bound of their latency: the p99 is never overstated, and a
        server that stopped answering still shows up as slow."""
        now = self._clock()
        ages = [(now - scheduled) * 1000.0 for s, scheduled, _ in self._tasks.values() if s == step]
        latencies = np.array(self._ok_ms[step] + ages, dtype=np.float64)
        sent = self._sent[step]
        error_rate = self._errors[step] / sent if sent else 0.0
        return reported_quantile(latencies, 0.99, min_samples), error_rate

    async def drain(self, seconds: float) -> None:
        """Wait up to `seconds` for requests in flight, then cancel the rest
        (recorded as `unfinished` failures)."""
        pending = list(self._tasks)
        if not pending:
            return
        _, still = await asyncio.wait(pending, timeout=max(0.0, seconds))
        for task in still:
            task.cancel()
        if still:
            await asyncio.gather(*still, return_exceptions=True)
