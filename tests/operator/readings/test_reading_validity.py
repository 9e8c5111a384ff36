"""Defect 11 of issue 19: a negative rate (a broken exporter, a custom preset) was read as a number.

Every reading is at least 0; a negative one is unknown, held as NaN is, on
both metric paths (per resource and batched).
"""

from __future__ import annotations

import math

import pytest

from forescale_operator.readings.grouped_queries import finite
from forescale_operator.readings.prometheus import PrometheusMetricSource
from forescale_operator.spec import parse_spec

VALUES = [
    (-50.0, None), (-1e-9, None), (-math.inf, None), (math.nan, None), (math.inf, None), (None, None),
    (0.0, 0.0), (-0.0, 0.0), (5, 5.0), (1e-310, 1e-310),
]


@pytest.mark.parametrize("value,expected", VALUES)
def test_only_finite_non_negative_values_are_readings(value, expected):
    assert finite(value) == expected


class _Source:
    """The predictor's PrometheusSource, as the per-resource path calls it, answering `value` for the rates."""

    def __init__(self, value: float) -> None:
        self.value = value

    def current(self, namespace, name, pool, *, quantile, window):
        return {"latency_ms": 80.0, "rate": self.value, "error_rate": 0.0, "queue_depth": 0.0, "agreement": 0.99}

    def buckets(self, namespace, name, pool, *, window):
        return [(0.1, 1.0), (float("inf"), 1.0)]


@pytest.mark.parametrize("rate", [-50.0, math.nan, -1.0])
def test_per_resource_path_holds_a_negative_rate_as_unknown(example, rate):
    spec = parse_spec(example("minimal")["spec"])
    source = PrometheusMetricSource("http://prom:9090", source_factory=lambda *a, **k: _Source(rate))
    sample = source.sample("default", "chat", spec, 0.0)
    assert sample.available and sample.rate_rps is None and sample.pool("a").rate_rps is None
    assert sample.latency_ms == 80.0
