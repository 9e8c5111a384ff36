"""Metric sources: the factory's choice, the no-op, and the Prometheus source over an injected client."""

from __future__ import annotations

import pytest

from forescale_operator.readings import PoolSample, build_observations, make_metric_source
from forescale_operator.readings.noop import NoopMetricSource
from forescale_operator.readings.observations import PoolState
from forescale_operator.readings.prometheus import PrometheusMetricSource
from forescale_operator.spec import parse_spec
from forescale_predictor.errors import MetricsUnavailable

TEMPLATE = {"spec": {"containers": [{"name": "server", "image": "forescale/server:dev"}]}}


def _spec(**metrics):
    return parse_spec({
        "slo": {"targetLatencyMs": 200},
        "pools": {"a": {"minReplicas": 1, "maxReplicas": 4, "template": TEMPLATE}, "b": {"template": TEMPLATE}},
        "traffic": {"router": "none"},
        "metrics": metrics,
    })


@pytest.mark.parametrize(
    "spec_url, default_url, expected",
    [
        (None, None, "none"),
        (None, "http://prom:9090", "http://prom:9090"),
        ("http://mine:9090", "http://prom:9090", "http://mine:9090"),
    ],
)
def test_factory_prefers_the_spec(spec_url, default_url, expected):
    spec = _spec(**({"prometheusUrl": spec_url} if spec_url else {}))
    built = []
    source = make_metric_source(spec, default_url, build=lambda url: built.append(url) or NoopMetricSource(url))
    assert (built[0] if built else source.name) == expected


def test_factory_caches_per_url():
    cache = {}
    spec = _spec()
    first = make_metric_source(spec, "http://p:9090", cache=cache, build=lambda url: NoopMetricSource(url))
    second = make_metric_source(spec, "http://p:9090", cache=cache, build=lambda url: NoopMetricSource("other"))
    assert first is second


def test_noop_is_unavailable_with_a_reason():
    sample = NoopMetricSource().sample("ml", "chat", _spec(), 10.0)
    assert not sample.available and "FORESCALE_PROMETHEUS_URL" in sample.error


class FakeSource:
    """Stands in for forescale_predictor's PrometheusSource: answers per pool from a table."""

    def __init__(self, answers, buckets=None):
        self.answers = answers
        self.bucket_answers = buckets or {}
        self.calls = []

    def buckets(self, namespace, deployment, pool, *, window):
        answer = self.bucket_answers.get(pool, [])
        if isinstance(answer, Exception):
            raise answer
        return answer

    def current(self, namespace, deployment, pool, *, quantile, window):
        self.calls.append((namespace, deployment, pool, quantile))
        answer = self.answers[pool]
        if isinstance(answer, Exception):
            raise answer
        return answer


@pytest.mark.parametrize(
    "answers, available, pool_b, error_part",
    [
        ({"a": {"latency_ms": 80.0, "rate": 20.0, "agreement": 0.99}, "b": {"latency_ms": 40.0, "rate": 5.0},
          None: {"latency_ms": 75.0, "rate": 25.0}}, True, PoolSample(latency_ms=40.0, rate_rps=5.0), None),
        # pool b has served nothing yet: no series, but Prometheus is up
        ({"a": {"latency_ms": 80.0, "rate": 20.0}, "b": MetricsUnavailable("Prometheus at x returned no sample for 'q'"),
          None: {"latency_ms": 80.0, "rate": 20.0}}, True, PoolSample(), None),
        # Prometheus down: unavailable, with the reason
        ({"a": MetricsUnavailable("cannot reach Prometheus at http://p:9090: connection refused"), "b": {}, None: {}},
         False, PoolSample(), "connection refused"),
        # NaN latency (no requests in the window) is "unknown", not a number
        ({"a": {"latency_ms": float("nan"), "rate": 0.0}, "b": {"latency_ms": float("inf"), "rate": 0.0},
          None: {"latency_ms": float("nan"), "rate": 0.0}}, True, PoolSample(rate_rps=0.0), None),
    ],
)
def test_prometheus_source(answers, available, pool_b, error_part):
    fake = FakeSource(answers)
    source = PrometheusMetricSource("http://p:9090", source_factory=lambda *a, **k: fake)
    sample = source.sample("ml", "chat", _spec(), 100.0)
    assert sample.available is available
    assert sample.pool("b") == pool_b
    if error_part:
        assert error_part in sample.error
    assert all(call[:2] == ("ml", "chat") and call[3] == 0.99 for call in fake.calls)


def test_observations_join_api_and_metrics():
    fake = FakeSource({"a": {"latency_ms": 300.0, "rate": 50.0, "error_rate": 0.01, "queue_depth": 4.0}, "b": {"latency_ms": 30.0, "rate": 1.0},
                       None: {"latency_ms": 290.0, "rate": 51.0}})
    sample = PrometheusMetricSource("http://p:9090", source_factory=lambda *a, **k: fake).sample("ml", "chat", _spec(), 5.0)
    obs = build_observations(sample, PoolState(3, 2, "fp16", 12.0), PoolState(1, 1, "int8"))
    assert (obs.a.replicas, obs.a.ready_replicas, obs.a.latency_ms, obs.a.queue_depth, obs.a.startup_seconds) == (3, 2, 300.0, 4.0, 12.0)
    assert (obs.b.precision, obs.rate_rps, obs.latency_ms, obs.metrics_available) == ("int8", 51.0, 290.0, True)


#: a pool's histogram: 10 req/s served, 6 within 0.1 s, 9 within 0.3 s (the target, 200 ms, inside that bucket)
HISTOGRAM = [(0.1, 6.0), (0.3, 9.0), (float("inf"), 10.0)]


@pytest.mark.parametrize("buckets, errors, expected", [
    ({"a": HISTOGRAM}, 0.0, 0.25),                         # 6 + 3 x (0.1 / 0.2) = 7.5 of 10 within: 25% over
    ({"a": HISTOGRAM}, 0.2, 0.2 + 0.8 * 0.25),             # the failed are over whatever their time
    ({"a": HISTOGRAM, "b": [(0.1, 5.0), (float("inf"), 5.0)]}, 0.0, (0.25 * 20 + 0.0 * 5) / 25),  # weighted by rate
    ({}, 0.0, None),                                       # no histogram series: no share (the budget holds)
])
def test_the_share_over_the_slo_is_read_from_each_pools_histogram(buckets, errors, expected):
    fake = FakeSource({"a": {"latency_ms": 80.0, "rate": 20.0, "error_rate": errors}, "b": {"latency_ms": 40.0, "rate": 5.0},
                       None: {"latency_ms": 75.0, "rate": 25.0}}, buckets)
    sample = PrometheusMetricSource("http://p:9090", source_factory=lambda *a, **k: fake).sample("ml", "chat", _spec(), 5.0)
    assert sample.over_slo_fraction == (None if expected is None else pytest.approx(expected))
    obs = build_observations(sample, PoolState(3, 2, "fp16", 12.0), PoolState(1, 1, "int8"))
    assert obs.over_slo_fraction == sample.over_slo_fraction


def test_a_preset_without_a_histogram_reads_no_share_and_sends_no_bucket_query():
    fake = FakeSource({"a": {"latency_ms": 80.0, "rate": 20.0}, "b": {"latency_ms": 40.0, "rate": 5.0},
                       None: {"latency_ms": 75.0, "rate": 25.0}}, {"a": HISTOGRAM})
    spec = _spec(preset="triton")
    sample = PrometheusMetricSource("http://p:9090", source_factory=lambda *a, **k: fake).sample("ml", "chat", spec, 5.0)
    assert sample.available and sample.over_slo_fraction is None


@pytest.mark.parametrize("failure, available", [
    (MetricsUnavailable("Prometheus at x returned a series without a bucket bound for 'q'"), True),  # optional: no share
    (MetricsUnavailable("cannot reach Prometheus at http://p:9090: connection refused"), False),     # down is down
])
def test_a_histogram_that_cannot_be_read_leaves_the_share_unknown_unless_prometheus_is_down(failure, available):
    fake = FakeSource({"a": {"latency_ms": 80.0, "rate": 20.0}, "b": {"latency_ms": 40.0, "rate": 5.0},
                       None: {"latency_ms": 75.0, "rate": 25.0}}, {"a": failure})
    sample = PrometheusMetricSource("http://p:9090", source_factory=lambda *a, **k: fake).sample("ml", "chat", _spec(), 5.0)
    assert sample.available is available and sample.over_slo_fraction is None
    if available:
        assert sample.pool("a").rate_rps == 20.0
