"""What policies may see: only completed requests, only the past."""

from __future__ import annotations

import math

import pytest

from forescale_sim.recorder import Recorder


def test_latency_is_visible_once_the_first_token_is_out() -> None:
    rec = Recorder(ticks=100, n_requests=3, quantile=0.99, slo_ms=1000, timeout_s=15)
    rec.request(0, "a", 10.0, 0.5)  # done at 10.5
    rec.request(1, "a", 11.0, 8.0)  # done at 19.0
    rec.request(2, "b", 12.0, None)  # rejected: seen at the timeout, 27.0
    assert rec.latency_q("a", 15.0, 15.0) == pytest.approx(500.0)
    assert rec.latency_q("a", 20.0, 15.0) == pytest.approx(8000.0)
    assert rec.latency_q("b", 20.0, 15.0) is None
    assert rec.latency_q("b", 30.0, 15.0) == pytest.approx(15000.0)
    # the rejection is seen when its timeout expires (27 s), not when it arrived
    assert rec.error_rate("b", 15.0, 15.0) is None and rec.error_rate("b", 30.0, 15.0) == 1.0
    assert rec.error_rate("a", 15.0, 15.0) == 0.0
    assert rec.queue_depth("a", 12.0) == 1  # request 1 still waits for its first token
    assert rec.rate(None, 15.0, 10.0) == pytest.approx(0.3)


def test_crash_failures_count_as_rejected_and_over() -> None:
    rec = Recorder(ticks=20, n_requests=2, quantile=0.99, slo_ms=1000, timeout_s=15)
    rec.request(0, "a", 1.0, 0.2)
    rec.request(1, "a", 2.0, 0.3)
    rec.fail([1], 5.0)
    requests, over, _ = rec.window_counts()
    assert (requests[0], over[0]) == (2, 1)
    assert rec.rejected.sum() == 1


# --- fluid pools: the quantile of a step is taken over its ticks' mixture ---------------

def _fluid(ticks):
    """A recorder whose pool A had `ticks` = [(arrivals, rejected, base_ms, scale_ms)] at seconds 0..n-1."""
    rec = Recorder(len(ticks) + 1, 0, 0.99, 200.0, 15.0)
    for t, (n, rejected, base, scale) in enumerate(ticks):
        q = base + scale * -math.log(0.01) if n > rejected else math.inf
        rec.tick(t, "a", n, 0.0, rejected, q, 0.0, base, scale)
    return rec


@pytest.mark.parametrize(
    "ticks, want",
    [
        # one kind of second: the step's p99 is the tick's own (base + scale x ln 100)
        pytest.param([(100.0, 0.0, 10.0, 5.0)] * 10, 10.0 + 5.0 * math.log(100), id="uniform-seconds"),
        # no tail: every request at its base
        pytest.param([(100.0, 0.0, 30.0, 0.0)] * 10, 30.0, id="no-tail"),
        # 2 of 100 requests rejected: the p99 is the timeout
        pytest.param([(100.0, 2.0, 10.0, 1.0)], 15000.0, id="rejections-at-the-timeout"),
    ],
)
def test_fluid_step_quantile(ticks, want):
    assert _fluid(ticks).latency_q("a", float(len(ticks)), float(len(ticks))) == pytest.approx(want, rel=1e-6)


def test_one_bad_second_shows_in_the_step_quantile():
    # 14 calm seconds (p99 ~33 ms) and one at 400 ms: 1/15 of the requests are over
    # 400 ms, so the step's p99 is at least 400 ms, where the mean of the ticks' p99
    # (what the replay used to report) is ~58 ms.
    calm = (100.0, 0.0, 10.0, 5.0)
    bad = (100.0, 0.0, 400.0, 0.0)
    rec = _fluid([calm] * 14 + [bad])
    p99 = rec.latency_q("a", 15.0, 15.0)
    assert p99 == pytest.approx(400.0, rel=1e-6)
    assert p99 > 5 * float(rec.latency_ms[0, :15].mean())


@pytest.mark.parametrize("work, now, seconds, want", [
    ([], 20.0, 15.0, (None, None)),                                       # no work: nothing to read
    ([(5, 100.0, 10.0, 80.0)], 20.0, 15.0, (10.0, 8.0)),                  # 10 batches of 8 items, 10 ms each
    ([(5, 100.0, 10.0, 80.0), (6, 300.0, 10.0, 240.0)], 20.0, 15.0, (20.0, 16.0)),  # weighted by batches
    ([(2, 100.0, 10.0, 80.0)], 20.0, 15.0, (None, None)),                 # older than the window
    ([(25, 100.0, 10.0, 80.0)], 20.0, 15.0, (None, None)),                # not yet happened
])
def test_the_pods_clock_reads_device_time_per_unit_over_the_window(work, now, seconds, want) -> None:
    rec = Recorder(ticks=100, n_requests=0, quantile=0.99, slo_ms=200, timeout_s=15)
    for t, ms, units, size in work:
        rec.work(t, "a", ms, units, size)
    assert rec.service("a", now, seconds) == want
    assert rec.service("b", now, seconds) == (None, None)
