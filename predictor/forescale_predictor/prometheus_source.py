"""Read a service's history from Prometheus through a metric preset.

`PrometheusSource.history(...)` runs the preset's latency and rate queries
(and queue depth when the backend has one) with `custom_query_range` and
aligns them on one grid as a History. `current(...)` runs instant queries for
the values the operator acts on now.

Every failure becomes `MetricsUnavailable` with a message naming the URL and
the query: connection refused, timeout, an HTTP error from Prometheus, an
empty result, or values that are all NaN or not numbers. Retries are few and
short by default: the operator's loop would rather report and try again on
its next tick than block.
"""

from __future__ import annotations

import math
from datetime import datetime, timezone
from typing import Any, Callable

import numpy as np

from .errors import MetricsUnavailable
from .forecast_types import LATENCY_MS, RATE, History
from .presets import MetricPreset, get_preset
from .resample import align

#: Prometheus refuses range queries of more than 11,000 points per series.
MAX_POINTS = 11_000
QUEUE_DEPTH = "queue_depth"


def _epoch(value: datetime | float | int) -> float:
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return value.timestamp()
    return float(value)


def _dt(epoch: float) -> datetime:
    return datetime.fromtimestamp(epoch, tz=timezone.utc)


#: what `current` reads besides latency and rate, where the preset has a query for it
OPTIONAL_KINDS = ("error_rate", QUEUE_DEPTH, "agreement", "service_ms", "service_size")


class PrometheusSource:
    """A metric source over one Prometheus server and one preset.

    `client` may be injected (anything with `custom_query_range` and
    `custom_query` like `prometheus_api_client.PrometheusConnect`); by
    default one is built for `url` with `timeout` seconds per request and
    `retries` retries.
    """

    def __init__(
        self,
        url: str,
        preset: MetricPreset | str = "forescale",
        *,
        timeout: float = 5.0,
        retries: int = 1,
        headers: dict[str, str] | None = None,
        client: Any = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.preset = get_preset(preset) if isinstance(preset, str) else preset
        self.timeout = timeout
        self._client = client if client is not None else self._connect(retries, headers)

    def _connect(self, retries: int, headers: dict[str, str] | None):
        from prometheus_api_client import PrometheusConnect
        from urllib3.util.retry import Retry

        retry = Retry(total=retries, backoff_factor=0.2, status_forcelist=(502, 503, 504), allowed_methods=None)
        return PrometheusConnect(url=self.url, headers=headers, retry=retry, timeout=self.timeout)

    # -- range queries -----------------------------------------------------

    def query_range(self, query: str, *, start: datetime | float, end: datetime | float, step: float) -> tuple[np.ndarray, np.ndarray]:
        """Times and values of a query that returns one series; MetricsUnavailable otherwise."""
        t0, t1 = _epoch(start), _epoch(end)
        if not t1 > t0:
            raise ValueError(f"end must be after start (start={t0}, end={t1})")
        if step <= 0:
            raise ValueError(f"step must be > 0 seconds, got {step}")
        times: list[np.ndarray] = []
        values: list[np.ndarray] = []
        chunk = step * (MAX_POINTS - 1)
        lo = t0
        while lo <= t1:
            hi = min(t1, lo + chunk)
            result = self._call(
                lambda: self._client.custom_query_range(query=query, start_time=_dt(lo), end_time=_dt(hi), step=f"{step:g}s"),
                query,
            )
            t, v = self._one_series(result, query, matrix=True)
            times.append(t)
            values.append(v)
            lo = hi + step
        t_all, v_all = np.concatenate(times), np.concatenate(values)
        if t_all.size == 0:
            raise MetricsUnavailable(f"Prometheus at {self.url} has no data for {query!r} between {_dt(t0):%Y-%m-%d %H:%M:%S} and {_dt(t1):%H:%M:%S} UTC")
        _, keep = np.unique(t_all, return_index=True)
        return t_all[keep], v_all[keep]

    def history(
        self,
        namespace: str,
        deployment: str,
        pool: str | None = None,
        *,
        start: datetime | float,
        end: datetime | float,
        step: float,
        quantile: float = 0.99,
        window: str = "1m",
        with_queue_depth: bool = True,
    ) -> History:
        """Latency (ms), rate (req/s) and, if available, queue depth on one grid of `step` seconds."""
        labels = dict(namespace=namespace, deployment=deployment, pool=pool, quantile=quantile, window=window)
        series: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for feature, kind in ((LATENCY_MS, "latency"), (RATE, "rate")):
            query = self.preset.query(kind, **labels)
            t, v = self.query_range(query, start=start, end=end, step=step)
            if not np.isfinite(v).any():
                raise MetricsUnavailable(f"the {kind} query returned only NaN from {self.url}: {query}")
            series[feature] = (t, v)
        if with_queue_depth and self.preset.queue_depth:
            try:
                series[QUEUE_DEPTH] = self.query_range(self.preset.query("queue_depth", **labels), start=start, end=end, step=step)
            except MetricsUnavailable:
                pass  # queue depth is optional: an idle or older server may not export it
        return align(series, step, start=_epoch(start), end=_epoch(end))

    # -- instant queries ---------------------------------------------------

    def instant(self, query: str) -> float:
        """The value of a query that returns one sample now; MetricsUnavailable otherwise."""
        result = self._call(lambda: self._client.custom_query(query=query), query)
        _, values = self._one_series(result, query, matrix=False)
        if values.size == 0:
            raise MetricsUnavailable(f"Prometheus at {self.url} returned no sample for {query!r}")
        return float(values[-1])

    def current(self, namespace: str, deployment: str, pool: str | None = None, *, quantile: float = 0.99, window: str = "1m") -> dict[str, float]:
        """Current latency_ms, rate and, where the preset has them, error_rate, queue_depth, agreement,
        service_ms and service_size.

        Latency and rate are required (MetricsUnavailable when missing); the
        others are left out when Prometheus has no sample for them.
        """
        labels = dict(namespace=namespace, deployment=deployment, pool=pool, quantile=quantile, window=window)
        out = {LATENCY_MS: self.instant(self.preset.query("latency", **labels)), RATE: self.instant(self.preset.query("rate", **labels))}
        for kind in OPTIONAL_KINDS:
            query = self.preset.query(kind, **labels)
            if query:
                try:
                    out[kind] = self.instant(query) if kind != "agreement" else self._min_of(query)
                except MetricsUnavailable:
                    continue
        return out

    def buckets(self, namespace: str, deployment: str, pool: str | None = None, *, window: str = "1m") -> list[tuple[float, float]]:
        """The latency histogram's `(le, requests per second at or under le)` pairs now (`le` in seconds, the
        last one inf), or [] where the preset has no histogram or Prometheus holds no series for it."""
        query = self.preset.query("latency_buckets", namespace=namespace, deployment=deployment, pool=pool, window=window)
        if not query:
            return []
        result = self._call(lambda: self._client.custom_query(query=query), query)
        pairs = []
        for series in result or []:
            le = (series.get("metric") or {}).get("le") if isinstance(series, dict) else None
            sample = series.get("value") if isinstance(series, dict) else None
            if le is None or not isinstance(sample, (list, tuple)) or len(sample) != 2:
                raise MetricsUnavailable(f"Prometheus at {self.url} returned a series without a bucket bound for {query!r}")
            pairs.append((self._number(le, query), self._number(sample[1], query)))
        return sorted(pairs)

    def _min_of(self, query: str) -> float:
        result = self._call(lambda: self._client.custom_query(query=query), query)
        values = [self._number(s.get("value", [None, None])[1], query) for s in result or []]
        values = [v for v in values if math.isfinite(v)]
        if not values:
            raise MetricsUnavailable(f"Prometheus at {self.url} returned no sample for {query!r}")
        return min(values)

    # -- helpers -----------------------------------------------------------

    def _call(self, fn: Callable[[], Any], query: str) -> Any:
        import requests
        from prometheus_api_client.exceptions import PrometheusApiClientException

        try:
            return fn()
        except requests.exceptions.Timeout:
            raise MetricsUnavailable(f"Prometheus at {self.url} did not answer within {self.timeout:g} s (query {query!r})") from None
        except requests.exceptions.ConnectionError as exc:
            text = str(exc).lower()
            if "timed out" in text or "timeout" in text:
                # with retries, urllib3 wraps a read timeout into a ConnectionError
                raise MetricsUnavailable(f"Prometheus at {self.url} did not answer within {self.timeout:g} s (query {query!r})") from None
            reason = "connection refused" if "refused" in text else _short(exc)
            raise MetricsUnavailable(f"cannot reach Prometheus at {self.url}: {reason}") from None
        except requests.exceptions.JSONDecodeError as exc:  # a proxy's HTML error page, say
            raise MetricsUnavailable(f"Prometheus at {self.url} sent an unreadable answer to {query!r}: {_short(exc)}") from None
        except requests.exceptions.RequestException as exc:
            raise MetricsUnavailable(f"request to Prometheus at {self.url} failed: {_short(exc)}") from None
        except PrometheusApiClientException as exc:
            raise MetricsUnavailable(f"Prometheus at {self.url} rejected the query {query!r}: {_short(exc)}") from None
        except ValueError as exc:  # a non-JSON body, e.g. a proxy's HTML error page
            raise MetricsUnavailable(f"Prometheus at {self.url} sent an unreadable answer to {query!r}: {_short(exc)}") from None

    def _one_series(self, result: Any, query: str, *, matrix: bool) -> tuple[np.ndarray, np.ndarray]:
        if result is None or (isinstance(result, list) and not result):
            return np.empty(0), np.empty(0)
        if not isinstance(result, list) or not all(isinstance(s, dict) for s in result):
            raise MetricsUnavailable(f"Prometheus at {self.url} returned an unexpected result type for {query!r}")
        if len(result) > 1:
            raise MetricsUnavailable(
                f"{query!r} returned {len(result)} series; the forecaster needs one (aggregate it, e.g. with sum(...))"
            )
        series = result[0]
        samples = series.get("values") if matrix else [series.get("value")]
        if not isinstance(samples, list) or any(not isinstance(s, (list, tuple)) or len(s) != 2 for s in samples):
            raise MetricsUnavailable(f"Prometheus at {self.url} returned malformed samples for {query!r}")
        times = np.array([self._number(s[0], query) for s in samples], dtype=np.float64)
        values = np.array([self._number(s[1], query) for s in samples], dtype=np.float64)
        values[~np.isfinite(values)] = np.nan  # +Inf from histogram_quantile means "above the top bucket": unknown
        return times, values

    def _number(self, raw: Any, query: str) -> float:
        try:
            return float(raw)
        except (TypeError, ValueError):
            raise MetricsUnavailable(f"Prometheus at {self.url} returned {raw!r}, not a number, for {query!r}") from None


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text[:300]
