"""What policies may see: only completed requests, only the past."""

from __future__ import annotations

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
