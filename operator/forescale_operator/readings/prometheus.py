"""Read a resource's metrics from Prometheus through the predictor's presets.

Queries are built by `forescale_predictor.presets`, which escapes every label
value taken from a spec or a name, so no string from a spec reaches PromQL
unescaped.
"""

from __future__ import annotations

from typing import Any, Callable

from forescale_predictor.errors import MetricsUnavailable
from forescale_predictor.forecast_types import LATENCY_MS, RATE
from forescale_predictor.presets import MetricPreset, get_preset
from forescale_predictor.prometheus_source import OPTIONAL_KINDS, PrometheusSource

from forescale_operator.spec import InferenceSpec

from . import slo_share
from .base import MetricSample, PoolSample
from .grouped_queries import finite

#: PromQL rate() window: long enough to hold several scrapes, short enough to react.
DEFAULT_WINDOW = "30s"


def preset_for(spec: InferenceSpec) -> MetricPreset:
    m = spec.metrics
    return get_preset(m.preset, latency_query=m.latency_query, rate_query=m.rate_query)


def unreachable(exc: MetricsUnavailable) -> bool:
    """Prometheus itself is down or too slow (not: it answered, without the series or with garbage)."""
    text = str(exc)
    return "cannot reach" in text or "did not answer" in text


def _queries_per_call(preset: MetricPreset) -> int:
    """Instant queries one `current` call sends: latency, rate, and each optional kind the preset has."""
    return 2 + sum(1 for kind in OPTIONAL_KINDS if getattr(preset, kind))


class PrometheusMetricSource:
    """Six to twenty-three instant queries per resource per tick: per pool and over
    both pools, latency and rate, and errors, queue, agreement and the pods'
    clock (device time per unit of work, unit size) where the preset has them;
    and per pool the latency histogram's buckets, for the share of requests over
    the SLO target (slo_share.py)."""

    name = "prometheus"

    def __init__(self, url: str, *, timeout: float = 3.0, window: str = DEFAULT_WINDOW,
                 source_factory: Callable[..., Any] = PrometheusSource) -> None:
        self.url = url
        self.timeout = timeout
        self.window = window
        self._factory = source_factory
        self._sources: dict[str, Any] = {}

    def _source(self, spec: InferenceSpec):
        preset = preset_for(spec)
        key = f"{preset.name}|{preset.latency}|{preset.rate}"
        if key not in self._sources:
            self._sources[key] = self._factory(self.url, preset, timeout=self.timeout, retries=0)
        return self._sources[key]

    def _share(self, source: Any, namespace: str, name: str, pool: str, target_s: float,
               error_rate: float | None) -> float | None:
        """A pool's share of requests over the target (None when its histogram cannot be read: the share is
        optional, and an answer the other queries parsed is not made unavailable by it). Prometheus
        unreachable is re-raised, as the pools' values do."""
        try:
            buckets = source.buckets(namespace, name, pool, window=self.window)
        except MetricsUnavailable as exc:
            if unreachable(exc):
                raise
            return None
        return slo_share.over_target(buckets, target_s, error_rate)

    def sample(self, namespace: str, name: str, spec: InferenceSpec, now: float) -> MetricSample:
        source = self._source(spec)
        preset = preset_for(spec)
        per_call = _queries_per_call(preset)
        q = spec.slo.quantile
        target_s = spec.slo.target_latency_ms / 1000.0
        pools: dict[str, PoolSample] = {}
        shares: list[tuple[float | None, float | None]] = []
        queries = 0
        try:
            for pool in ("a", "b"):
                try:
                    values = source.current(namespace, name, pool, quantile=q, window=self.window)
                    queries += per_call
                except MetricsUnavailable as exc:
                    queries += 1
                    # A pool that has never served (b at 0 weight) has no series; that
                    # is "no traffic", not "Prometheus is down". A refused or timed-out
                    # connection is re-raised by the overall query below.
                    if unreachable(exc):
                        raise
                    pools[pool] = PoolSample()
                    continue
                pools[pool] = PoolSample(
                    latency_ms=finite(values.get(LATENCY_MS)),
                    rate_rps=finite(values.get(RATE)),
                    error_rate=finite(values.get("error_rate")),
                    queue_depth=finite(values.get("queue_depth")),
                    agreement=finite(values.get("agreement")),
                    service_ms=finite(values.get("service_ms")),
                    service_size=finite(values.get("service_size")),
                )
                if preset.latency_buckets:
                    queries += 1
                    shares.append((self._share(source, namespace, name, pool, target_s, pools[pool].error_rate),
                                   pools[pool].rate_rps))
            overall = source.current(namespace, name, None, quantile=q, window=self.window)
            queries += per_call
        except MetricsUnavailable as exc:
            return MetricSample(time=now, available=False, pools=pools, error=str(exc), queries=queries)
        return MetricSample(
            time=now,
            available=True,
            pools=pools,
            latency_ms=finite(overall.get(LATENCY_MS)),
            rate_rps=finite(overall.get(RATE)),
            over_slo_fraction=slo_share.weighted(shares),
            queries=queries,
        )
