"""The batched Prometheus source: grouped answers shared by every resource, over an injected fake client."""

from __future__ import annotations

import math
import threading

import pytest
import requests

from forescale_operator.readings import PoolSample, make_metric_source
from forescale_operator.readings import grouped_queries as gq
from forescale_operator.readings.prometheus import PrometheusMetricSource
from forescale_operator.readings.prometheus_batched import BatchedPrometheusMetricSource, batchable
from forescale_operator.spec import parse_spec

TEMPLATE = {"spec": {"containers": [{"name": "server", "image": "forescale/server:dev"}]}}


#: one round of queries: every grouped base kind, the histogram's buckets and the two latency queries of one quantile
ROUND = len(gq.BASE_QUERIES) + 1 + 2

def _spec(quantile=0.99, step=15, **metrics):
    return parse_spec({
        "slo": {"targetLatencyMs": 200, "quantile": quantile},
        "pools": {"a": {"minReplicas": 1, "maxReplicas": 4, "template": TEMPLATE}, "b": {"template": TEMPLATE}},
        "traffic": {"router": "none"},
        "forecast": {"stepSeconds": step},
        "metrics": metrics,
    })


def _series(value, namespace="ml", deployment="chat", pool=None):
    labels = {"namespace": namespace, "deployment": deployment}
    if pool:
        labels["pool"] = pool
    return {"metric": labels, "value": [1700000000.0, str(value)]}


#: what Prometheus holds: ml/chat serves on both pools, ml/idle has pods but no requests, ml/new serves on a only
WORLD = {
    "rate_pool": [_series(20.0, pool="a"), _series(5.0, pool="b"), _series(0.0, deployment="idle", pool="a"),
                  _series(3.0, deployment="new", pool="a")],
    "rate_total": [_series(25.0), _series(0.0, deployment="idle"), _series(3.0, deployment="new")],
    "error_rate_pool": [_series(0.01, pool="a"), _series(0.0, pool="b"), _series("NaN", deployment="idle", pool="a")],
    "queue_depth_pool": [_series(4.0, pool="a")],
    "agreement_pool": [_series(0.99, pool="a"), _series(0.98, pool="b")],
    "service_ms_pool": [_series(12.5, pool="a")],
    "service_size_pool": [_series(8.0, pool="a")],
    "latency_pool": [_series(80.0, pool="a"), _series(40.0, pool="b"), _series("NaN", deployment="idle", pool="a"),
                     _series(30.0, deployment="new", pool="a")],
    "latency_total": [_series(75.0), _series("NaN", deployment="idle"), _series(30.0, deployment="new")],
}


class FakeClient:
    """Answers grouped queries from a table of vectors by kind; records every query."""

    def __init__(self, world=WORLD, fail=None):
        self.world = world
        self.fail = fail
        self.queries: list[str] = []
        self._kinds = {text: kind for kind, text in gq.base_queries("30s").items()}
        self._kinds[gq.buckets_query("30s")] = "buckets"

    def custom_query(self, query):
        self.queries.append(query)
        if self.fail is not None:
            raise self.fail
        kind = self._kinds.get(query) or ("latency_pool" if "pool, le" in query else "latency_total")
        return self.world.get(kind, [])


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def _source(client, clock=None, **kwargs):
    return BatchedPrometheusMetricSource("http://p:9090", client=client, clock=clock or Clock(), **kwargs)


@pytest.mark.parametrize(
    "name, available, pool_a, pool_b, overall, error_part",
    [
        ("chat", True, PoolSample(80.0, 20.0, 0.01, 4.0, 0.99, 12.5, 8.0), PoolSample(40.0, 5.0, 0.0, None, 0.98),
         (75.0, 25.0), None),
        # pods scraped, no requests in the window: rate 0, latency unknown; that is data, not an outage
        ("idle", True, PoolSample(rate_rps=0.0), PoolSample(), (None, 0.0), None),
        # pool b has never served: no series for it, pool a's values stand
        ("new", True, PoolSample(latency_ms=30.0, rate_rps=3.0), PoolSample(), (30.0, 3.0), None),
        # nothing at all for this resource: unavailable with "no series", not "Prometheus down"
        ("ghost", False, PoolSample(), PoolSample(), (None, None), "no forescale_* series for ml/ghost"),
    ],
)
def test_each_resource_reads_its_values_from_the_grouped_answers(name, available, pool_a, pool_b, overall, error_part):
    sample = _source(FakeClient()).sample("ml", name, _spec(), 5.0)
    assert (sample.available, sample.pool("a"), sample.pool("b")) == (available, pool_a, pool_b)
    assert (sample.latency_ms, sample.rate_rps) == overall
    assert sample.time == 5.0
    if error_part:
        assert error_part in sample.error and "cannot reach" not in sample.error


def test_one_round_of_queries_serves_every_resource_within_the_age_limit():
    client, clock = FakeClient(), Clock()
    source = _source(client, clock)
    for name in ("chat", "idle", "new", "ghost") * 50:
        source.sample("ml", name, _spec(), clock.now)
    assert len(client.queries) == ROUND
    clock.now += 7.4  # max age for a 15 s step: min(10 s, 15 s / 2)
    source.sample("ml", "chat", _spec(), clock.now)
    assert len(client.queries) == ROUND
    clock.now += 0.2
    again = source.sample("ml", "chat", _spec(), clock.now)
    assert len(client.queries) == 2 * ROUND and again.queries == ROUND


@pytest.mark.parametrize("step, after, refetched", [(15, 7.0, False), (15, 8.0, True), (60, 9.5, False), (60, 10.5, True),
                                                    (3, 1.4, False), (3, 1.6, True), (1, 0.6, True)])
def test_answers_expire_after_a_fraction_of_the_readers_step(step, after, refetched):
    client, clock = FakeClient(), Clock()
    source = _source(client, clock)
    source.sample("ml", "chat", _spec(step=step), clock.now)
    clock.now += after
    source.sample("ml", "chat", _spec(step=step), clock.now)
    assert (len(client.queries) > ROUND) is refetched


def test_a_clock_going_backwards_refetches():
    client, clock = FakeClient(), Clock()
    source = _source(client, clock)
    source.sample("ml", "chat", _spec(), clock.now)
    clock.now -= 1.0
    source.sample("ml", "chat", _spec(), clock.now)
    assert len(client.queries) == 2 * ROUND


def test_each_distinct_quantile_adds_its_two_latency_queries_once():
    client = FakeClient()
    source = _source(client)
    for q in (0.99, 0.95, 0.99, 0.95, 0.5):
        assert source.sample("ml", "chat", _spec(quantile=q), 0.0).available
    latency = [q for q in client.queries if "histogram_quantile" in q]
    assert len(latency) == 6
    assert {q.split("(", 2)[1].split(",")[0] for q in latency} == {"0.99", "0.95", "0.5"}


@pytest.mark.parametrize(
    "failure, error_part",
    [
        (requests.exceptions.ConnectionError("Connection refused"), "cannot reach Prometheus at http://p:9090: connection refused"),
        (requests.exceptions.ReadTimeout("read timed out"), "did not answer within 3 s"),
        (ValueError("Expecting value: line 1 column 1"), "unreadable answer"),
        (RuntimeError("HTTP 400 bad_data"), "rejected or failed the query"),
    ],
)
def test_prometheus_failing_makes_every_resource_unavailable_with_the_reason_until_the_next_round(failure, error_part):
    client, clock = FakeClient(fail=failure), Clock()
    source = _source(client, clock)
    samples = [source.sample("ml", name, _spec(), clock.now) for name in ("chat", "idle", "ghost")]
    assert all(not s.available and error_part in s.error for s in samples)
    assert len(client.queries) == 1  # the failure is kept: the other resources do not wait for a timeout each
    client.fail = None
    clock.now += 8
    assert source.sample("ml", "chat", _spec(), clock.now).available


@pytest.mark.parametrize(
    "kind, answer, available",
    [
        ("rate_total", {"status": "error"}, False),  # not a vector: unavailable
        ("rate_pool", [{"metric": {"namespace": "ml", "deployment": "chat", "pool": "a"}, "value": [0, "x"]}], False),
        ("rate_pool", [{"metric": "nope"}], False),
        # an optional kind that Prometheus answers badly leaves only that value missing
        ("queue_depth_pool", [{"metric": {}, "value": "bad"}], True),
        # series outside any InferenceDeployment (no labels, another pool name) are ignored
        ("rate_pool", WORLD["rate_pool"] + [{"metric": {"namespace": "ml", "deployment": "chat", "pool": "c"}, "value": [0, "9"]},
                                            {"metric": {}, "value": [0, "1"]}], True),
    ],
)
def test_malformed_answers(kind, answer, available):
    world = dict(WORLD, **{kind: answer})
    sample = _source(FakeClient(world)).sample("ml", "chat", _spec(), 0.0)
    assert sample.available is available
    if available:
        assert sample.pool("a").rate_rps == 20.0
    else:
        assert "http://p:9090" in sample.error


class Fallback:
    def __init__(self):
        self.calls = []

    def sample(self, namespace, name, spec, now):
        self.calls.append((namespace, name, spec.metrics.preset))
        return PrometheusMetricSource  # any marker: the test checks it is passed through


@pytest.mark.parametrize(
    "metrics, grouped",
    [
        ({}, True),
        ({"preset": "vllm"}, False),
        ({"preset": "triton"}, False),
        ({"preset": "custom", "latencyQuery": "my_latency{$selector}", "rateQuery": "my_rate{$selector}"}, False),
        ({"preset": "forescale", "latencyQuery": "other{$selector}"}, False),
    ],
)
def test_specs_that_cannot_be_grouped_go_per_resource(metrics, grouped):
    spec = _spec(**metrics)
    client, fallback = FakeClient(), Fallback()
    result = _source(client, fallback=fallback).sample("ml", 'we"ird', spec, 0.0)
    assert batchable(spec) is grouped
    assert (result is PrometheusMetricSource) is (not grouped)
    assert bool(client.queries) is grouped and bool(fallback.calls) is (not grouped)


def test_grouped_queries_carry_no_resource_name():
    texts = list(gq.base_queries("30s").values()) + list(gq.latency_queries(0.99, "30s").values())
    assert all("deployment=" not in t and "namespace=" not in t for t in texts)
    assert all("by (namespace, deployment" in t for t in texts)


@pytest.mark.parametrize("window, quantile", [("30s; drop", 0.99), ("30s", 1.5), ("30s", 0.0), ('1m"}', 0.9)])
def test_bad_window_or_quantile_is_refused(window, quantile):
    with pytest.raises(ValueError, match="window|quantile"):
        gq.latency_queries(quantile, window)


def test_concurrent_readers_share_one_fetch():
    client = FakeClient()
    source = _source(client)
    samples = []

    def read(name):
        samples.append(source.sample("ml", name, _spec(), 0.0))

    threads = [threading.Thread(target=read, args=(n,)) for n in ("chat", "idle", "new") * 10]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(client.queries) == ROUND and len(samples) == 30
    assert sum(s.queries for s in samples) == ROUND


@pytest.mark.parametrize("batch, kind", [(True, BatchedPrometheusMetricSource), (False, PrometheusMetricSource)])
def test_factory_batches_by_default(batch, kind):
    assert isinstance(make_metric_source(_spec(), "http://p:9090", batch=batch), kind)


def test_nan_and_inf_become_none():
    assert [gq.finite(v) for v in (math.nan, math.inf, -math.inf, 2.5, None)] == [None, None, None, 2.5, None]


class BlockingClient(FakeClient):
    """Answers the first round at once; later rounds wait until released (a slow Prometheus)."""

    def __init__(self):
        super().__init__()
        self.release = threading.Event()
        self.entered = threading.Event()

    def custom_query(self, query):
        if len(self.queries) >= ROUND:
            self.entered.set()
            assert self.release.wait(5)
        return super().custom_query(query)


def test_while_one_reader_refreshes_the_others_read_the_previous_answers():
    client, clock = BlockingClient(), Clock()
    source = _source(client, clock)
    assert source.sample("ml", "chat", _spec(), clock.now).rate_rps == 25.0
    clock.now += 8  # stale (> 7.5 s) but within two steps
    refresher = threading.Thread(target=source.sample, args=("ml", "chat", _spec(), clock.now))
    refresher.start()
    assert client.entered.wait(5)
    other = source.sample("ml", "idle", _spec(), clock.now)  # does not wait for the slow round
    assert other.available and other.queries == 0 and not client.release.is_set()
    client.release.set()
    refresher.join(5)
    clock.now += 10  # stale again, and nobody refreshing: this reader refreshes
    client.release.set()
    assert source.sample("ml", "chat", _spec(), clock.now).queries == ROUND


def test_answers_older_than_two_steps_make_readers_wait_for_a_fresh_round():
    client, clock = FakeClient(), Clock()
    source = _source(client, clock)
    source.sample("ml", "chat", _spec(step=3), clock.now)
    clock.now += 6.5  # more than two 3 s steps: nothing usable, this reader fetches before it reads
    assert source.sample("ml", "chat", _spec(step=3), clock.now).queries == ROUND


def _bucket(le, value, pool="a", deployment="chat"):
    series = _series(value, deployment=deployment, pool=pool)
    series["metric"]["le"] = le
    return series


def test_the_share_over_the_slo_comes_from_the_grouped_histogram():
    """ml/chat's pool a: 20 req/s, 1% failed; 12 served within 0.1 s, 18 within 0.3 s, 20 in all (the
    target, 200 ms, halfway through that bucket: 15 within). Pool b serves all 5 within 0.1 s. The
    resource's share is the pools' weighted by rate; ml/new has no histogram series, so no share."""
    world = dict(WORLD, buckets=[_bucket("0.1", 12.0), _bucket("0.3", 18.0), _bucket("+Inf", 20.0),
                                 _bucket("0.1", 5.0, pool="b"), _bucket("+Inf", 5.0, pool="b")])
    source = _source(FakeClient(world))
    share_a = 0.01 + 0.99 * (1 - 15.0 / 20.0)
    assert source.sample("ml", "chat", _spec(), 0.0).over_slo_fraction == pytest.approx(share_a * 20 / 25)
    assert source.sample("ml", "new", _spec(), 0.0).over_slo_fraction is None


def test_a_malformed_bucket_bound_leaves_the_share_unknown_and_the_rest_readable():
    world = dict(WORLD, buckets=[_bucket("fast", 12.0)])
    sample = _source(FakeClient(world)).sample("ml", "chat", _spec(), 0.0)
    assert sample.available and sample.over_slo_fraction is None and sample.rate_rps == 25.0
