"""`HttpPromQuery`: the diagnosis's `PromQuery` over Prometheus's HTTP API (`/api/v1/query`).

The diagnosis runs its ~40 instant queries at once (`diagnosis.gather`), so it
needs an async client; the tick's readers use the synchronous
`prometheus_api_client` in worker threads instead. Every failure raises
`MetricsUnavailable` in the words the readers use ("cannot reach Prometheus
at URL: connection refused", "did not answer within 5 s", "rejected the
query"), which `gather_evidence` records as the reason a field is missing.
Every query is evaluated at one instant (`at`), so the windows compared are
the same for all of them however long the others take.
"""

from __future__ import annotations

import asyncio
import errno
import json
import time
from typing import Any, Callable

import aiohttp

from forescale_predictor.errors import MetricsUnavailable

#: queries in flight at once: the diagnosis sends ~40 together, and a busy Prometheus should not see them all
DEFAULT_CONCURRENCY = 8


class HttpPromQuery:
    """Instant queries against one Prometheus, evaluated at `at` (epoch seconds; default: when built).

    Use it inside a running loop and `close()` it (or `async with`) when done.
    """

    def __init__(self, url: str, *, timeout_s: float = 5.0, at: float | None = None,
                 concurrency: int = DEFAULT_CONCURRENCY, clock: Callable[[], float] = time.time) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"the Prometheus URL must be http(s), got {url!r}")
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.at = clock() if at is None else at
        self._slots = asyncio.Semaphore(concurrency)
        self._session: aiohttp.ClientSession | None = None

    async def __aenter__(self) -> HttpPromQuery:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def scalar(self, query: str) -> float | None:
        """The query's one value; None when it returned no series; MetricsUnavailable for several."""
        kind, result = await self._query(query)
        if kind == "scalar":
            return _number(result, self.url, query)
        if not result:
            return None
        if len(result) > 1:
            raise MetricsUnavailable(f"Prometheus at {self.url} returned {len(result)} series for {query!r}; expected one")
        return _number(result[0].get("value"), self.url, query)

    async def vector(self, query: str) -> dict[str, float]:
        """The query's series keyed by their `pod` label (or, without one, their label values joined)."""
        kind, result = await self._query(query)
        if kind != "vector":
            raise MetricsUnavailable(f"Prometheus at {self.url} answered a {kind}, not a vector, to {query!r}")
        out: dict[str, float] = {}
        for series in result:
            labels = series.get("metric") or {}
            key = labels.get("pod") or ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if k != "__name__")
            out[key] = _number(series.get("value"), self.url, query)
        return out

    async def _query(self, query: str) -> tuple[str, Any]:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout_s))
        params = {"query": query, "time": f"{self.at:.3f}"}
        try:
            async with self._slots, self._session.post(f"{self.url}/api/v1/query", data=params) as response:
                text = await response.text()
                status = response.status
        except asyncio.TimeoutError:
            raise MetricsUnavailable(f"Prometheus at {self.url} did not answer within {self.timeout_s:g} s (query {query!r})") from None
        except aiohttp.ClientConnectionError as exc:
            raise MetricsUnavailable(f"cannot reach Prometheus at {self.url}: {_why_unreachable(exc)}") from None
        try:
            body = json.loads(text)
        except ValueError:
            raise MetricsUnavailable(f"Prometheus at {self.url} sent an unreadable answer (HTTP {status}) to {query!r}: "
                                     f"{text[:120]!r}") from None
        if not isinstance(body, dict) or body.get("status") != "success":
            error = body.get("error") if isinstance(body, dict) else None
            raise MetricsUnavailable(f"Prometheus at {self.url} rejected the query {query!r} (HTTP {status}): "
                                     f"{str(error or text)[:300]}")
        data = body.get("data") or {}
        kind, result = data.get("resultType"), data.get("result")
        if kind == "vector" and isinstance(result, list) and all(isinstance(s, dict) for s in result):
            return kind, result
        if kind == "scalar":
            return kind, result
        raise MetricsUnavailable(f"Prometheus at {self.url} answered a {kind or 'malformed result'} to {query!r}")


def _why_unreachable(exc: aiohttp.ClientConnectionError) -> str:
    """"connection refused" as the readers say it; aiohttp's own words otherwise."""
    cause = getattr(exc, "os_error", None)
    if isinstance(cause, ConnectionRefusedError) or getattr(cause, "errno", None) == errno.ECONNREFUSED:
        return "connection refused"
    return (str(exc).splitlines() or [type(exc).__name__])[0][:300]


def _number(sample: Any, url: str, query: str) -> float:
    """The value of a `[time, "value"]` sample; NaN and ±Inf pass through (the diagnosis reads them as missing)."""
    if not isinstance(sample, (list, tuple)) or len(sample) != 2:
        raise MetricsUnavailable(f"Prometheus at {url} sent a malformed sample {str(sample)[:80]!r} for {query!r}")
    try:
        return float(sample[1])
    except (TypeError, ValueError):
        raise MetricsUnavailable(f"Prometheus at {url} returned {sample[1]!r}, not a number, for {query!r}") from None
