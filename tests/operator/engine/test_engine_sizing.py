"""Rule 2: predictive sizing of A, B's warm reserve, stabilization, bounds, missing data."""

from __future__ import annotations

import pytest

from forescale_operator.engine import EngineParams, EngineState
from forescale_operator.phase import Phase
from forescale_operator.reasons import Reason

from conftest import build_forecast, build_obs, build_spec

# A's fallback capacity is 50 rps per pod at fp16, sized to 85%: 42.5 rps per pod.
# B's is 50 / 0.6 = 83.3 rps per pod at int8.


@pytest.mark.parametrize(
    "rate_upper, startup, want_a",
    [
        pytest.param(400.0, None, 10, id="flat-forecast-400rps"),
        pytest.param([600, 600] + [100] * 10, 0.0, 15, id="spike-at-30s-startup-0-is-sized"),
        pytest.param([600, 600] + [100] * 10, 90.0, 3, id="spike-over-before-pods-ready-is-ignored"),
        pytest.param([600, 600] + [100] * 10, None, 3, id="default-startup-90s"),
        pytest.param([100] * 11 + [800], 90.0, 19, id="peak-late-in-horizon-counts"),
        pytest.param([100] * 11 + [800], 500.0, 19, id="startup-past-horizon-uses-last-step"),
    ],
)
def test_pool_a_is_sized_for_the_upper_band_from_ready_time(tick, rate_upper, startup, want_a):
    obs = build_obs(rate=100.0, a_extra={"startup_seconds": startup})
    d = tick(build_spec(), EngineState(), obs, build_forecast(0.0, rate_upper))
    assert d.desired_replicas["a"] == want_a
    assert d.phase is Phase.SCALING
    assert [e.reason for e in d.events][:1] == [Reason.SCALED_UP]
    assert "chat-a" in d.events[0].message and f"to {want_a}" in d.events[0].message


def test_observed_rate_is_a_floor_under_a_low_forecast(tick):
    d = tick(build_spec(), EngineState(), build_obs(rate=300.0, a=(8, 8), latency=120.0), build_forecast(0.0, 50.0))
    # 300 rps over 8 pods at 120 ms: 37.5 rps per pod proven, fallback 50 -> 42.5 per pod sized
    assert d.desired_replicas["a"] == 8


@pytest.mark.parametrize(
    "warm, emergency, rate, forecast_peak, want_b",
    [
        pytest.param(20, 30, 100.0, 100.0, 1, id="both-small-min-1"),
        pytest.param(50, 30, 100.0, 1000.0, 6, id="reserve-50pct-of-1000rps-forecast"),
        pytest.param(0, 50, 800.0, 800.0, 5, id="emergency-50pct-of-800rps-now"),
        pytest.param(20, 30, 800.0, 1000.0, 3, id="emergency-part-dominates"),
    ],
)
def test_pool_b_holds_the_warm_reserve(tick, warm, emergency, rate, forecast_peak, want_b):
    spec = build_spec(warmReservePercent=warm, traffic={"emergencyWeightPercent": emergency},
                      pools={"a": {"maxReplicas": 40}})
    obs = build_obs(rate=rate, a=(20, 20))
    d = tick(spec, EngineState(), obs, build_forecast(0.0, forecast_peak))
    # reserve: ceil(warm% x peak / 83.3); emergency: ceil(emergency% x rate / 83.3)
    assert d.desired_replicas["b"] == want_b
    assert not any("reserve impossible" in r for r in d.reasons)


def test_b_bounds_that_make_the_reserve_impossible_are_reported(tick):
    spec = build_spec(pools={"b": {"maxReplicas": 2}, "a": {"maxReplicas": 40}})
    d = tick(spec, EngineState(), build_obs(rate=1000.0, a=(24, 24)), build_forecast(0.0, 1000.0))
    assert d.desired_replicas["b"] == 2
    reason = next(r for r in d.reasons if "reserve impossible" in r)
    assert "b needs 4 pods" in reason and "max 2" in reason
    assert reason in d.summary
    assert d.phase is not Phase.DEGRADED  # A still meets the SLO


@pytest.mark.parametrize(
    "later, want_a",
    [
        pytest.param(100.0, 10, id="inside-window-holds"),
        pytest.param(299.0, 10, id="just-inside-window-holds"),
        pytest.param(301.0, 3, id="after-window-scales-down"),
    ],
)
def test_scale_down_only_after_the_stabilization_window(tick, later, want_a):
    spec = build_spec()
    first = tick(spec, EngineState(), build_obs(t=0.0, rate=400.0, a=(10, 10), b=(2, 2)), build_forecast(0.0, 400.0))
    assert first.desired_replicas["a"] == 10
    d = tick(spec, first.state, build_obs(t=later, rate=100.0, a=(10, 10), b=(2, 2)), build_forecast(later, 100.0))
    assert d.desired_replicas["a"] == want_a
    assert (Reason.SCALED_DOWN in [e.reason for e in d.events]) is (want_a < 10)


def test_a_fresh_start_cannot_scale_below_current_within_the_window(tick):
    # Like the HPA, the first recommendation stored is the current replica count.
    d = tick(build_spec(), EngineState(), build_obs(rate=50.0, a=(8, 8)), build_forecast(0.0, 50.0))
    assert d.desired_replicas["a"] == 8
    assert any("stabilization window" in r for r in d.reasons)


def test_short_loops_get_a_shorter_default_window(tick):
    spec = build_spec(forecast={"stepSeconds": 2, "horizonSeconds": 180})
    params = EngineParams(name="chat", fallback_capacity_rps=50.0, target_utilization=0.85)
    state = tick(spec, EngineState(), build_obs(t=0.0, rate=400.0, a=(10, 10)), None, params).state
    held = tick(spec, state, build_obs(t=39.0, rate=100.0, a=(10, 10)), None, params)
    after = tick(spec, held.state, build_obs(t=41.0, rate=100.0, a=(10, 10)), None, params)
    assert (held.desired_replicas["a"], after.desired_replicas["a"]) == (10, 3)  # window 20 x 2 s = 40 s


@pytest.mark.parametrize(
    "rate, ready_a, want_a, degraded",
    [
        pytest.param(0.0, 2, 2, False, id="no-traffic-stays-at-min"),
        pytest.param(800.0, 19, 19, False, id="within-bounds"),
        # 250 rps per pod sustained under the SLO: still 24 pods needed, max 20
        pytest.param(5000.0, 20, 20, True, id="saturates-at-max"),
    ],
)
def test_bounds_and_degraded_at_max(tick, rate, ready_a, want_a, degraded):
    obs = build_obs(rate=rate, a=(ready_a, ready_a), b=(10, 10), latency=150.0)
    d = tick(build_spec(), EngineState(), obs, build_forecast(0.0, rate))
    assert d.desired_replicas["a"] == want_a
    assert (d.phase is Phase.DEGRADED) is degraded
    if degraded:
        reason = next(r for r in d.reasons if r.startswith("SLO unreachable"))
        assert "max 20" in reason and "a needs" in reason
        assert d.conditions["Ready"][0] == "False"


def test_missing_metrics_hold_replicas_and_report_once(tick):
    spec = build_spec()
    state = tick(spec, EngineState(), build_obs(t=0.0, rate=400.0, a=(10, 10), b=(2, 2)), build_forecast(0.0, 400.0)).state
    first = tick(spec, state, build_obs(t=15.0, rate=None, latency=None, a=(10, 10), b=(2, 2), available=False))
    second = tick(spec, first.state, build_obs(t=30.0, rate=None, latency=None, a=(10, 10), b=(2, 2), available=False))
    for d in (first, second):
        assert d.desired_replicas == {"a": 10, "b": 2}
        assert d.phase is Phase.DEGRADED
        assert d.conditions["MetricsAvailable"][0] == "False"
        assert d.actions == ()
    assert [e.reason for e in first.events] == [Reason.METRICS_UNAVAILABLE]
    assert "Hold replicas at a 10, b 2" in first.events[0].message
    assert second.events == ()
    back = tick(spec, second.state, build_obs(t=45.0, rate=400.0, a=(10, 10), b=(2, 2)), build_forecast(45.0, 400.0))
    assert back.phase is Phase.STABLE and back.conditions["MetricsAvailable"][0] == "True"


@pytest.mark.parametrize("replicas, want", [(0, 2), (1, 2), (5, 5), (25, 20)], ids=["zero", "under-min", "inside", "over-max"])
def test_missing_data_never_scales_to_zero_and_stays_in_bounds(tick, replicas, want):
    d = tick(build_spec(), EngineState(), build_obs(rate=None, latency=None, a=(replicas, replicas), available=False))
    assert d.desired_replicas["a"] == want


def test_no_rate_and_no_forecast_holds(tick):
    d = tick(build_spec(), EngineState(), build_obs(rate=None, latency=120.0, a=(6, 6)))
    assert d.desired_replicas == {"a": 6, "b": 1}
    assert any("no rate and no forecast" in r for r in d.reasons)


def test_pending_until_pods_are_ready(tick):
    d = tick(build_spec(), EngineState(), build_obs(rate=None, latency=None, a=(2, 0), b=(1, 0)))
    assert d.phase is Phase.PENDING
    assert d.conditions["Ready"][0] == "False"


def test_stable_when_ready_matches_desired(tick):
    d = tick(build_spec(), EngineState(), build_obs(rate=80.0, a=(2, 2), b=(1, 1)), build_forecast(0.0, 80.0))
    assert d.phase is Phase.STABLE and d.events == ()
    assert d.summary.startswith("Stable: a 2 (2 ready, fp16) 100%, b 1 (1 ready) 0%")


@pytest.mark.parametrize(
    "recommendations, want",
    [
        # (raw per tick, 15 s apart, current 10) -> stabilized at the last tick
        pytest.param([10, 4, 4, 4], 10, id="max-of-window-holds"),
        pytest.param([10] + [4] * 20, 4, id="after-window-the-max-leaves"),
        pytest.param([10, 8, 6] + [3] * 19, 6, id="steps-down-one-expiry-at-a-time"),
        pytest.param([3, 12], 12, id="up-at-once"),
    ],
)
def test_stabilize_matches_the_hpa_window_and_keeps_a_short_history(recommendations, want):
    from forescale_operator.engine.sizing import stabilize

    history: tuple = ()
    full: list[tuple[float, int]] = [(0.0, 10)]
    got = None
    for i, raw in enumerate(recommendations):
        now = 15.0 * i
        got, history = stabilize(history, now, 10, raw, 300.0)
        full.append((now, raw))
        reference = min(max(10, raw), max(n for t, n in full if now - t < 300.0))
        assert got == reference
        assert len(history) <= 3 + len(set(recommendations))
    assert got == want
