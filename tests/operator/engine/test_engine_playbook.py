"""Rule 3: the triggers and the playbook, step by step and in order."""

from __future__ import annotations

import pytest

from forescale_operator.engine import ActionKind, EngineParams, EngineState
from forescale_operator.phase import Phase
from forescale_operator.reasons import Reason

from conftest import build_forecast, build_obs, build_spec

# Steady traffic: 300 rps over 8 A pods; B has 2 ready int8 pods = 166.7 rps of capacity.
STEADY = dict(rate=300.0, a=(8, 8), b=(2, 2))
PLAYBOOK_EVENTS = [
    Reason.EMERGENCY_STARTED, Reason.TRAFFIC_SHIFTED, Reason.PRECISION_DOWNGRADED,
    Reason.CACHE_WARMED, Reason.DEBUG_LOGGING_ENABLED, Reason.SNAPSHOT_SAVED,
]
PLAYBOOK_ACTIONS = [
    ActionKind.SHIFT_TRAFFIC, ActionKind.DOWNGRADE_PRECISION, ActionKind.WARM_CACHE,
    ActionKind.ENABLE_DEBUG_LOGGING, ActionKind.SAVE_SNAPSHOT,
]


def _start(tick, spec=None, **over):
    kwargs = {**STEADY, "latency": 450.0, **over}
    return tick(spec or build_spec(), EngineState(), build_obs(**kwargs), build_forecast(0.0, 300.0))


@pytest.mark.parametrize(
    "obs_over, latency_band, trigger_text",
    [
        pytest.param({"latency": 450.0}, 100.0, "p99 450 ms > 2.0 x SLO 200 ms", id="observed"),
        pytest.param({"latency": 150.0}, [150.0] * 3 + [500.0] * 9, "forecast p99 upper band 500 ms > 2.0 x SLO 200 ms in 60 s",
                     id="forecast"),
        pytest.param({"latency": 150.0, "a_extra": {"error_rate": 0.08}}, 100.0, "errors 8.0% > 5%", id="errors"),
    ],
)
def test_each_trigger_starts_the_playbook(tick, obs_over, latency_band, trigger_text):
    d = tick(build_spec(), EngineState(), build_obs(**{**STEADY, **obs_over}), build_forecast(0.0, 300.0, latency_band))
    assert d.phase is Phase.EMERGENCY
    started = next(e for e in d.events if e.reason is Reason.EMERGENCY_STARTED)
    assert trigger_text in started.message and started.type == "Warning"
    assert d.conditions["Emergency"][0] == "True"
    if "forecast" in trigger_text:
        assert d.events[0].reason is Reason.FORECAST_SPIKE
        assert d.events[0].message.startswith("Act on the forecast p99 upper band 500 ms")


@pytest.mark.parametrize(
    "queues, fires",
    [
        pytest.param([1, 2, 3, 4], True, id="grows-3-ticks-running"),
        pytest.param([1, 2, 2, 3], False, id="plateau-breaks-the-run"),
        pytest.param([0, 0.2, 0.4, 0.6], False, id="under-min-depth"),
        pytest.param([1, 2, None, 3, 4], False, id="gap-breaks-the-run"),
    ],
)
def test_queue_piling_up_triggers(tick, queues, fires):
    spec, state, d = build_spec(), EngineState(), None
    for i, q in enumerate(queues):
        obs = build_obs(t=15.0 * i, latency=150.0, **STEADY, a_extra={"queue_depth": q}, b_extra={"queue_depth": None})
        d = tick(spec, state, obs, build_forecast(15.0 * i, 300.0))
        state = d.state
    assert (d.phase is Phase.EMERGENCY) is fires
    if fires:
        assert "queue grew 1 -> 4 requests over 3 ticks" in d.events[0].message


def test_no_trigger_no_playbook(tick):
    d = tick(build_spec(), EngineState(), build_obs(**STEADY, latency=390.0), build_forecast(0.0, 300.0, 390.0))
    assert d.phase is not Phase.EMERGENCY and d.actions == ()


def test_playbook_steps_run_in_order_with_their_numbers(tick):
    d = _start(tick)
    assert [e.reason for e in d.events] == PLAYBOOK_EVENTS
    assert [a.kind for a in d.actions] == PLAYBOOK_ACTIONS
    assert d.weights == {"a": 70, "b": 30}
    shift = d.actions[0]
    assert shift.params == {"weights": {"a": 70, "b": 30}}
    assert shift.message == "Shift 30% to chat-b: p99 450 ms > 2.0 x SLO 200 ms; b ready capacity 167 rps"
    assert d.actions[1].params == {"precision": "int8"} and d.actions[1].pool == "a"
    assert "Downgrade chat-a from fp16 to int8" in d.events[2].message
    assert d.actions[2].params == {"top": 100, "pools": ["a", "b"]}
    assert d.actions[3].params == {"level": "DEBUG", "seconds": 300, "pools": ["a", "b"]}
    assert d.actions[4].params["window_seconds"] == 600.0 and "p99 450 ms" in d.actions[4].params["trigger"]
    assert d.runtime_precision == {"a": "int8", "b": "int8"}
    assert d.state.runtime_precision_a == "int8"


def test_the_emergency_starts_once(tick):
    first = _start(tick)
    again = tick(build_spec(), first.state, build_obs(t=15.0, weights=(70, 30), latency=450.0, **STEADY), build_forecast(15.0, 300.0))
    assert again.phase is Phase.EMERGENCY
    assert Reason.EMERGENCY_STARTED not in [e.reason for e in again.events]
    assert ActionKind.SAVE_SNAPSHOT not in [a.kind for a in again.actions]


@pytest.mark.parametrize(
    "spec_over, missing_event, missing_action",
    [
        pytest.param({"emergency": {"precisionFallback": False}}, Reason.PRECISION_DOWNGRADED, ActionKind.DOWNGRADE_PRECISION,
                     id="no-precision-fallback"),
        pytest.param({"pools": {"a": {"precision": "int8"}}}, Reason.PRECISION_DOWNGRADED, ActionKind.DOWNGRADE_PRECISION,
                     id="a-already-int8"),
        pytest.param({"emergency": {"cacheWarmup": False}}, Reason.CACHE_WARMED, ActionKind.WARM_CACHE, id="no-cache-warmup"),
    ],
)
def test_optional_steps_are_skipped_when_switched_off(tick, spec_over, missing_event, missing_action):
    d = _start(tick, build_spec(**spec_over))
    reasons, kinds = [e.reason for e in d.events], [a.kind for a in d.actions]
    assert missing_event not in reasons and missing_action not in kinds
    assert [r for r in PLAYBOOK_EVENTS if r is not missing_event] == reasons


@pytest.mark.parametrize(
    "b_ready, b_agreement, rate, want_b, text",
    [
        pytest.param(2, 0.99, 300.0, 30, "b ready capacity 167 rps", id="full-shift"),
        pytest.param(1, 0.99, 400.0, 20, "b ready capacity 83 rps (1 pods) takes 20% of 400 rps, not 30%", id="capacity-caps"),
        pytest.param(0, 0.99, 300.0, 0, "Skip the shift to chat-b, keep 0%: b ready capacity 0 rps", id="b-not-ready"),
        pytest.param(2, 0.95, 300.0, 0, "Skip the shift to chat-b, keep 0%: b agreement 0.950 < minAgreement 0.97",
                     id="agreement-gate"),
    ],
)
def test_shift_gates(tick, b_ready, b_agreement, rate, want_b, text):
    d = _start(tick, rate=rate, b=(2, b_ready), b_extra={"agreement": b_agreement})
    assert d.weights == {"a": 100 - want_b, "b": want_b}
    shifted = next(e for e in d.events if e.reason is Reason.TRAFFIC_SHIFTED)
    assert text in shifted.message
    assert (ActionKind.SHIFT_TRAFFIC in [a.kind for a in d.actions]) is (want_b > 0)


def test_shift_grows_as_b_becomes_ready(tick):
    first = _start(tick, rate=400.0, b=(3, 1))
    assert first.weights["b"] == 20
    d = tick(build_spec(), first.state, build_obs(t=15.0, rate=400.0, a=(8, 8), b=(3, 3), weights=(80, 20), latency=450.0),
             build_forecast(15.0, 400.0))
    assert d.weights == {"a": 70, "b": 30}
    assert d.actions[0].kind is ActionKind.SHIFT_TRAFFIC
    assert "Shift 30% to chat-b (was 20%)" in d.events[0].message
    assert d.state.emergency_weight_b == 30


def test_runtime_precision_is_applied_to_a_pods_that_become_ready_later(tick):
    spec = build_spec()
    first = _start(tick)
    int8 = {"precision": "int8"}
    grown = tick(spec, first.state, build_obs(t=15.0, a=(10, 10), b=(2, 2), rate=300.0, weights=(70, 30), latency=450.0,
                                              a_extra=int8), build_forecast(15.0, 300.0))
    apply = [a for a in grown.actions if a.kind is ActionKind.DOWNGRADE_PRECISION]
    assert apply and apply[0].params == {"precision": "int8", "new_pods": 2}
    assert grown.runtime_precision["a"] == "int8"
    same = tick(spec, grown.state, build_obs(t=30.0, a=(10, 10), b=(2, 2), rate=300.0, weights=(70, 30), latency=450.0,
                                             a_extra=int8), build_forecast(30.0, 300.0))
    assert not [a for a in same.actions if a.kind is ActionKind.DOWNGRADE_PRECISION]
    assert same.runtime_precision["a"] == "int8"


def test_int8_under_min_agreement_is_undone_and_not_retried(tick):
    spec = build_spec()
    first = _start(tick)
    bad = {"precision": "int8", "agreement": 0.90}
    d = tick(spec, first.state, build_obs(t=15.0, weights=(70, 30), latency=450.0, **STEADY, a_extra=bad),
             build_forecast(15.0, 300.0))
    assert [a.kind for a in d.actions][:1] == [ActionKind.RESTORE_PRECISION]
    restored = next(e for e in d.events if e.reason is Reason.PRECISION_RESTORED)
    assert "int8 agreement 0.900 < minAgreement 0.97" in restored.message
    assert d.runtime_precision["a"] == "fp16" and d.state.int8_rejected
    # A later incident does not downgrade A again.
    later = tick(spec, EngineState.from_status({**d.state.to_status(), "incident": None, "phase": "Stable"}),
                 build_obs(t=30.0, latency=450.0, **STEADY), build_forecast(30.0, 300.0))
    assert Reason.EMERGENCY_STARTED in [e.reason for e in later.events]
    assert ActionKind.DOWNGRADE_PRECISION not in [a.kind for a in later.actions]


def test_scale_up_during_the_emergency(tick):
    # A is overloaded: its latency bounds its per-pod capacity, so A grows while B takes 30%.
    spec, state = build_spec(), EngineState()
    d, scaled_up = None, []
    for i in range(6):
        weights = (state.weights["a"], state.weights["b"])
        d = tick(spec, state, build_obs(t=15.0 * i, rate=300.0, a=(8, 8), b=(2, 2), weights=weights, latency=900.0),
                 build_forecast(15.0 * i, 300.0))
        state = d.state
        scaled_up += [e.message for e in d.events if e.reason is Reason.SCALED_UP and "chat-a" in e.message]
    assert d.phase is Phase.EMERGENCY
    assert d.desired_replicas["a"] > 8
    assert scaled_up, "A grew without a ScaledUp event"


@pytest.mark.parametrize(
    "overall, a_latency, b_latency, fires",
    [
        pytest.param(None, 450.0, None, True, id="no-overall-uses-a"),
        pytest.param(None, 150.0, 420.0, True, id="no-overall-uses-the-worse-pool"),
        pytest.param(None, 150.0, 180.0, False, id="no-overall-both-fine"),
        pytest.param(150.0, 450.0, None, False, id="overall-wins-when-given"),
    ],
)
def test_pool_latencies_stand_in_for_a_missing_overall_quantile(tick, overall, a_latency, b_latency, fires):
    obs = build_obs(**STEADY, latency=overall, a_extra={"latency_ms": a_latency}, b_extra={"latency_ms": b_latency})
    d = tick(build_spec(), EngineState(), obs, build_forecast(0.0, 300.0))
    assert (d.phase is Phase.EMERGENCY) is fires


@pytest.mark.parametrize(
    "latencies, breach_ticks, fires_at",
    [
        pytest.param([250, 250], 2, 1, id="two-ticks-over-the-slo"),
        pytest.param([250, 150, 250], 2, 2, id="two-of-the-last-three"),
        pytest.param([250, 150, 150, 250], 2, None, id="too-far-apart"),
        pytest.param([250, 250, 150], 2, 1, id="fires-on-the-second-breach"),
        pytest.param([250, 250, 250, 250], 0, None, id="switched-off"),
        pytest.param([250, 250, 250], 3, 2, id="three-of-three"),
    ],
)
def test_sustained_breach_of_the_slo_triggers(tick, latencies, breach_ticks, fires_at):
    # Over the 200 ms target, well under the 2.0 x trigger line: only the sustained trigger can fire.
    params = EngineParams(name="chat", fallback_capacity_rps=50.0, breach_ticks=breach_ticks, breach_window_ticks=3)
    spec, state, fired = build_spec(), EngineState(), None
    for i, latency in enumerate(latencies):
        d = tick(spec, state, build_obs(t=15.0 * i, latency=float(latency), **STEADY), build_forecast(15.0 * i, 300.0), params)
        if d.phase is Phase.EMERGENCY and fired is None:
            fired = i
            started = next(e for e in d.events if e.reason is Reason.EMERGENCY_STARTED)
            assert f"p99 over SLO 200 ms at {breach_ticks} of the last" in started.message
        state = d.state
    assert fired == fires_at


def test_a_lasting_forecast_spike_does_not_restart_the_playbook(tick):
    spec, spike = build_spec(), [150.0] * 3 + [500.0] * 9
    first = tick(spec, EngineState(), build_obs(latency=150.0, **STEADY), build_forecast(0.0, 300.0, spike))
    assert first.phase is Phase.EMERGENCY
    # The incident is over (state cleared as after a completed cut-back) but the forecast still says spike.
    after = EngineState.from_status({**first.state.to_status(), "incident": None, "phase": "Stable",
                                     "weights": {"a": 100, "b": 0}, "runtimePrecisionA": None})
    d = tick(spec, after, build_obs(t=15.0, latency=150.0, **STEADY), build_forecast(15.0, 300.0, spike))
    assert d.phase is not Phase.EMERGENCY and d.events == ()
    # It starts again once the spike went away and came back.
    calm = tick(spec, d.state, build_obs(t=30.0, latency=150.0, **STEADY), build_forecast(30.0, 300.0, 150.0))
    again = tick(spec, calm.state, build_obs(t=45.0, latency=150.0, **STEADY), build_forecast(45.0, 300.0, spike))
    assert again.phase is Phase.EMERGENCY
    assert [e.reason for e in again.events][:2] == [Reason.FORECAST_SPIKE, Reason.EMERGENCY_STARTED]
