"""Grouped PromQL for the `forescale` preset: one query answers for every resource.

The per-resource path (`prometheus.py`) runs ~15 instant queries per resource
per tick; 1,000 resources at a 15 s step would be ~1,000 queries a second.
These queries carry the same expressions as the preset in
`forescale_predictor.presets.FORESCALE`, but aggregate `by (namespace,
deployment[, pool])` instead of selecting one deployment, so a handful of
queries per tick interval serve them all. No value from a spec is pasted into
them: the quantile is a float formatted here, the window a validated duration.

An answer is parsed into a table {(namespace, deployment[, pool]): value};
a resource missing from a table has no such series in Prometheus.
"""

from __future__ import annotations

import math
import re
from typing import Any

from forescale_predictor.errors import MetricsUnavailable

_DURATION = re.compile(r"^(\d+(ms|s|m|h|d|w|y))+$")
_POOLS = ("a", "b")
_BY_POOL = "namespace, deployment, pool"
_BY_RESOURCE = "namespace, deployment"

#: kind -> (PromQL with $window, grouped by pool?) for the values that do not depend on the quantile
BASE_QUERIES: dict[str, tuple[str, bool]] = {
    "rate_pool": (f"sum by ({_BY_POOL}) (rate(forescale_requests_total[$window]))", True),
    "rate_total": (f"sum by ({_BY_RESOURCE}) (rate(forescale_requests_total[$window]))", False),
    "error_rate_pool": (
        f'sum by ({_BY_POOL}) (rate(forescale_requests_total{{code=~"5..|429"}}[$window]))'
        f" / sum by ({_BY_POOL}) (rate(forescale_requests_total[$window]))",
        True,
    ),
    "queue_depth_pool": (f"sum by ({_BY_POOL}) (forescale_queue_depth)", True),
    "agreement_pool": (f"min by ({_BY_POOL}) (forescale_quality_agreement)", True),
    # the pods' clock: device ms per batch, and items per batch
    "service_ms_pool": (
        f"1000 * sum by ({_BY_POOL}) (rate(forescale_device_busy_seconds_total[$window]))"
        f" / sum by ({_BY_POOL}) (rate(forescale_batch_size_count[$window]))",
        True,
    ),
    "service_size_pool": (
        f"sum by ({_BY_POOL}) (rate(forescale_batch_size_sum[$window]))"
        f" / sum by ({_BY_POOL}) (rate(forescale_batch_size_count[$window]))",
        True,
    ),
}

#: the values every resource needs: an empty answer to one of these is "no series", never a skip
REQUIRED = ("rate_pool", "rate_total")

#: the latency histogram's buckets per pool, one series per bound `le`: the share of requests over each
#: resource's SLO target is read from them (slo_share.py), so no target enters the query
BUCKETS = f'sum by ({_BY_POOL}, le) (rate(forescale_request_duration_seconds_bucket{{stage="total"}}[$window]))'

_LATENCY = '1000 * histogram_quantile({q}, sum by ({by}, le) (rate(forescale_request_duration_seconds_bucket{{stage="total"}}[$window])))'


def check_window(window: str) -> str:
    """The rate() window, validated: it is the only text besides the quantile that enters a query."""
    if not _DURATION.match(str(window)):
        raise ValueError(f"window must be a PromQL duration such as 30s or 1m, got {window!r}")
    return str(window)


def base_queries(window: str) -> dict[str, str]:
    """The quantile-free grouped queries, by kind."""
    w = check_window(window)
    return {kind: text.replace("$window", w) for kind, (text, _) in BASE_QUERIES.items()}


def latency_queries(quantile: float, window: str) -> dict[str, str]:
    """The two latency queries of one quantile (per pool, and over both pools)."""
    q = float(quantile)
    if not 0 < q < 1:
        raise ValueError(f"quantile must be in (0, 1), got {quantile!r}")
    w = check_window(window)
    return {
        "latency_pool": _LATENCY.format(q=repr(q), by=_BY_POOL).replace("$window", w),
        "latency_total": _LATENCY.format(q=repr(q), by=_BY_RESOURCE).replace("$window", w),
    }


def buckets_query(window: str) -> str:
    """The grouped query of the latency histogram's buckets per pool."""
    return BUCKETS.replace("$window", check_window(window))


def parse_buckets(result: Any, *, where: str) -> dict[tuple[str, ...], list[tuple[float, float]]]:
    """The buckets' answer as {(namespace, deployment, pool): [(le, value), ...]}; series without a pool of
    a/b, a resource's labels or a bound are ignored, as `parse_vector` ignores them."""
    out: dict[tuple[str, ...], list[tuple[float, float]]] = {}
    for series in result or []:
        labels = series.get("metric") if isinstance(series, dict) else None
        le = labels.get("le") if isinstance(labels, dict) else None
        if le is None:
            continue
        try:
            bound = float(le)
        except (TypeError, ValueError):
            raise MetricsUnavailable(f"{where}: bucket bound {le!r} is not a number") from None
        for key, value in parse_vector([series], pooled=True, where=where).items():
            out.setdefault(key, []).append((bound, value))
    return out


def by_pool(kind: str) -> bool:
    """Whether a kind's table is keyed (namespace, deployment, pool)."""
    return kind.endswith("_pool")


def parse_vector(result: Any, *, pooled: bool, where: str) -> dict[tuple[str, ...], float]:
    """An instant-vector answer as {(namespace, deployment[, pool]): value}; NaN stays NaN.

    Series without the grouping labels (or with a pool other than a/b) are
    ignored: they belong to no InferenceDeployment. A malformed answer raises
    MetricsUnavailable naming `where` (the URL and query).
    """
    if result is None:
        return {}
    if not isinstance(result, list):
        raise MetricsUnavailable(f"{where}: expected a vector, got {type(result).__name__}")
    table: dict[tuple[str, ...], float] = {}
    for series in result:
        if not isinstance(series, dict) or not isinstance(series.get("metric"), dict):
            raise MetricsUnavailable(f"{where}: malformed series {str(series)[:80]!r}")
        labels, sample = series["metric"], series.get("value")
        if not isinstance(sample, (list, tuple)) or len(sample) != 2:
            raise MetricsUnavailable(f"{where}: malformed sample {str(sample)[:80]!r}")
        try:
            value = float(sample[1])
        except (TypeError, ValueError):
            raise MetricsUnavailable(f"{where}: returned {sample[1]!r}, not a number") from None
        namespace, deployment = labels.get("namespace"), labels.get("deployment")
        if not namespace or not deployment:
            continue
        if pooled:
            pool = labels.get("pool")
            if pool not in _POOLS:
                continue
            table[(namespace, deployment, pool)] = value
        else:
            table[(namespace, deployment)] = value
    return table


def finite(value: float | None) -> float | None:
    """A usable reading, or None (unknown, held as such).

    NaN and ±Inf (histogram_quantile over no requests, or above the top
    bucket) are unknown. So is a negative value: every Forescale reading (a
    latency, a rate, an error rate, a queue depth, an agreement) is at least
    0, and a broken exporter's -50 rps read as a number looked like "no
    traffic" and scaled pool B down.
    """
    if value is None or not math.isfinite(value) or value < 0:
        return None
    return float(value)
