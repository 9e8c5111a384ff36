"""Read every resource's metrics from a few grouped Prometheus queries, shared by all ticks.

With many resources, most of the per-resource queries repeat the same work:
each is a `sum(rate(...))` over one deployment's series. Here one grouped
query per kind (`grouped_queries.py`) answers for all resources at once; the
answers are kept for a short time (half the reader's step, at most
`max_age`) and every resource's `sample()` reads its values from them; when
they expire, one reader refreshes them while the others go on reading the
previous ones (up to two steps old) rather than wait. The latency queries are
fetched once per distinct SLO quantile.

What is batched: the `forescale` preset without query overrides. Everything
else (the pod-name presets, `custom` user templates, overridden queries) goes
through the per-resource `PrometheusMetricSource`, which keeps escaping spec
values through the presets.

Semantics match the per-resource path:
- Prometheus down, timing out or answering garbage: every resource is
  unavailable with the same error until the next fetch (the failure is kept
  as long as an answer would be, so 1,000 ticks do not each wait for a timeout);
- a resource with no series at all: unavailable, "no series" (the loop holds);
  the other resources are unaffected;
- a pool with no series (b before it ever served): no values for that pool;
- NaN or ±Inf: None.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from forescale_predictor.errors import MetricsUnavailable

from forescale_operator.spec import InferenceSpec

from . import grouped_queries as gq
from . import slo_share
from .base import MetricSample, PoolSample
from .prometheus import DEFAULT_WINDOW, PrometheusMetricSource, unreachable

#: answers are refreshed after this share of the reader's step...
DEFAULT_FRACTION = 1 / 2
#: ...or this many seconds, whichever is shorter
DEFAULT_MAX_AGE = 10.0
#: while one reader refreshes, the others read the previous answers if they are
#: less than this many steps old. With 1,000 resources the two grouped latency
#: queries took 6-10 s on a busy 2-core machine: with one step, readers still
#: queued behind the refresh and held every shared worker thread.
STALE_STEPS = 2


@dataclass
class Batch:
    """One round of grouped answers: tables by kind (latency ones by quantile), or the error that stopped it."""

    started: float
    tables: dict[str, dict[tuple[str, ...], float]] = field(default_factory=dict)
    latency: dict[float, dict[str, dict[tuple[str, ...], float]]] = field(default_factory=dict)
    #: the latency histogram's buckets per pool: [(le, requests per second at or under it), ...]
    buckets: dict[tuple[str, ...], list[tuple[float, float]]] = field(default_factory=dict)
    error: str | None = None


class BatchedPrometheusMetricSource:
    """A `MetricSource` whose queries per tick interval do not grow with the number of resources.

    `client` is anything with `custom_query(query=...) -> list[dict]`
    (`prometheus_api_client.PrometheusConnect`; a fake in tests). `clock` is
    monotonic seconds. `fallback` serves the specs that cannot be batched.
    """

    name = "prometheus-batched"

    def __init__(self, url: str, *, timeout: float = 3.0, window: str = DEFAULT_WINDOW,
                 fraction: float = DEFAULT_FRACTION, max_age: float = DEFAULT_MAX_AGE,
                 client: Any = None, clock: Callable[[], float] = time.monotonic,
                 fallback: Any = None) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.window = gq.check_window(window)
        self.fraction = fraction
        self.max_age = max_age
        self._client = client
        self._clock = clock
        self._fallback = fallback
        self._lock = threading.Lock()
        self._batch: Batch | None = None

    # -- the MetricSource interface ------------------------------------------

    def sample(self, namespace: str, name: str, spec: InferenceSpec, now: float) -> MetricSample:
        """This resource's values from the shared answers (fetched first when too old)."""
        if not batchable(spec):
            return self.fallback().sample(namespace, name, spec, now)
        quantile = float(spec.slo.quantile)
        step = float(spec.forecast.step_seconds)
        batch, sent = self._fresh(quantile, min(self.max_age, self.fraction * step), STALE_STEPS * step)
        if batch.error is not None:
            return MetricSample(time=now, available=False, error=batch.error, queries=sent)
        return _read(batch, quantile, spec.slo.target_latency_ms / 1000.0, namespace, name, now, sent, self.url)

    # -- answers -------------------------------------------------------------

    def fallback(self) -> Any:
        """The per-resource source for specs that cannot be grouped (built on first use)."""
        if self._fallback is None:
            self._fallback = PrometheusMetricSource(self.url, timeout=self.timeout, window=self.window)
        return self._fallback

    def _fresh(self, quantile: float, max_age: float, stale_age: float) -> tuple[Batch, int]:
        now = self._clock()
        batch = self._batch
        if _usable(batch, quantile, now, max_age):
            return batch, 0
        if batch is not None and batch.error is None and _usable(batch, quantile, now, stale_age):
            # Stale but recent enough: one reader refreshes, the others keep reading
            # the previous answers instead of queueing behind it. The grouped latency
            # queries take seconds on a large Prometheus; blocking every reader for
            # that long would stall the worker threads the whole loop shares.
            if not self._lock.acquire(blocking=False):
                return batch, 0
            try:
                return self._refresh(quantile, max_age)
            finally:
                self._lock.release()
        # No usable answer at all: wait for the reader that is fetching, or fetch.
        with self._lock:
            return self._refresh(quantile, max_age)

    def _refresh(self, quantile: float, max_age: float) -> tuple[Batch, int]:
        """Under the lock: fetch what is missing or too old (another reader may just have done it)."""
        sent = 0
        batch = self._batch
        if batch is None or not 0 <= self._clock() - batch.started <= max_age:
            batch, sent = self._fetch_base(self._clock())
            self._batch = batch
        if batch.error is None and quantile not in batch.latency:
            sent += self._fetch_latency(batch, quantile)
        return batch, sent

    def _fetch_base(self, now: float) -> tuple[Batch, int]:
        batch = Batch(started=now)
        sent = 0
        for kind, query in gq.base_queries(self.window).items():
            sent += 1
            try:
                batch.tables[kind] = self._vector(query, pooled=gq.by_pool(kind))
            except MetricsUnavailable as exc:
                if kind in gq.REQUIRED or unreachable(exc):
                    batch.error = str(exc)
                    break
                batch.tables[kind] = {}  # optional values (queue, agreement, errors) may be missing
        if batch.error is None:
            sent += 1
            query = gq.buckets_query(self.window)
            try:
                batch.buckets = gq.parse_buckets(self._answer(query), where=f"Prometheus at {self.url} ({query!r})")
            except MetricsUnavailable as exc:
                if unreachable(exc):
                    batch.error = str(exc)  # optional otherwise: without buckets, no share over the SLO
        return batch, sent

    def _fetch_latency(self, batch: Batch, quantile: float) -> int:
        tables: dict[str, dict[tuple[str, ...], float]] = {}
        sent = 0
        for kind, query in gq.latency_queries(quantile, self.window).items():
            sent += 1
            try:
                tables[kind] = self._vector(query, pooled=gq.by_pool(kind))
            except MetricsUnavailable as exc:
                batch.error = str(exc)
                return sent
        batch.latency[quantile] = tables
        return sent

    def _vector(self, query: str, *, pooled: bool) -> dict[tuple[str, ...], float]:
        return gq.parse_vector(self._answer(query), pooled=pooled, where=f"Prometheus at {self.url} ({query!r})")

    def _answer(self, query: str) -> Any:
        try:
            return self._connect().custom_query(query=query)
        except MetricsUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - every client failure becomes "unavailable" with its reason
            raise MetricsUnavailable(_describe(exc, self.url, self.timeout, query)) from None

    def _connect(self) -> Any:
        if self._client is None:
            from prometheus_api_client import PrometheusConnect
            from urllib3.util.retry import Retry

            # No retries: a failed round is kept until the next one, which is the retry.
            self._client = PrometheusConnect(url=self.url, retry=Retry(total=0), timeout=self.timeout)
        return self._client


def _usable(batch: Batch | None, quantile: float, now: float, age: float) -> bool:
    if batch is None or not 0 <= now - batch.started <= age:
        return False
    return batch.error is not None or quantile in batch.latency


def batchable(spec: InferenceSpec) -> bool:
    """Only the `forescale` preset with its own queries selects by labels that can be grouped on."""
    m = spec.metrics
    return m.preset == "forescale" and not m.latency_query and not m.rate_query


def _read(batch: Batch, quantile: float, target_s: float, namespace: str, name: str, now: float, sent: int,
          url: str) -> MetricSample:
    latency = batch.latency[quantile]
    total = (namespace, name)
    if total not in batch.tables["rate_total"] or total not in latency["latency_total"]:
        return MetricSample(
            time=now, available=False, queries=sent,
            error=f"Prometheus at {url} has no forescale_* series for {namespace}/{name} (no model-server pod scraped yet?)",
        )
    pools: dict[str, PoolSample] = {}
    shares: list[tuple[float | None, float | None]] = []
    for pool in ("a", "b"):
        key = (namespace, name, pool)
        if key not in batch.tables["rate_pool"] or key not in latency["latency_pool"]:
            pools[pool] = PoolSample()  # a pool that never served has no series: no traffic
            continue
        pools[pool] = PoolSample(
            latency_ms=gq.finite(latency["latency_pool"][key]),
            rate_rps=gq.finite(batch.tables["rate_pool"][key]),
            error_rate=gq.finite(batch.tables["error_rate_pool"].get(key)),
            queue_depth=gq.finite(batch.tables["queue_depth_pool"].get(key)),
            agreement=gq.finite(batch.tables["agreement_pool"].get(key)),
            service_ms=gq.finite(batch.tables["service_ms_pool"].get(key)),
            service_size=gq.finite(batch.tables["service_size_pool"].get(key)),
        )
        if key in batch.buckets:
            shares.append((slo_share.over_target(batch.buckets[key], target_s, pools[pool].error_rate), pools[pool].rate_rps))
    return MetricSample(
        time=now, available=True, pools=pools, queries=sent,
        latency_ms=gq.finite(latency["latency_total"][total]),
        rate_rps=gq.finite(batch.tables["rate_total"][total]),
        over_slo_fraction=slo_share.weighted(shares),
    )


def _describe(exc: Exception, url: str, timeout: float, query: str) -> str:
    """The client's failure in the per-resource path's words (so events read the same)."""
    import requests

    text = str(exc).lower()
    if isinstance(exc, requests.exceptions.Timeout) or "timed out" in text or "timeout" in text:
        return f"Prometheus at {url} did not answer within {timeout:g} s (query {query!r})"
    if isinstance(exc, requests.exceptions.ConnectionError):
        reason = "connection refused" if "refused" in text else (str(exc).splitlines() or [type(exc).__name__])[0][:300]
        return f"cannot reach Prometheus at {url}: {reason}"
    if isinstance(exc, ValueError):  # a non-JSON body, e.g. a proxy's HTML error page
        return f"Prometheus at {url} sent an unreadable answer to {query!r}: {str(exc)[:200]}"
    return f"Prometheus at {url} rejected or failed the query {query!r}: {(str(exc) or type(exc).__name__)[:300]}"
