"""The engine with a latency model per pool: learning, incident vs overload, sizing, reserve, restart."""

from __future__ import annotations

import json
import math
import random
from dataclasses import replace

import pytest

from forescale_operator.engine import EngineParams, EngineState, PoolModel, StateError
from forescale_operator.engine.budget import DECREASE, STEP
from forescale_operator.engine.latency_model import ModelParams
from forescale_operator.engine.state import IncidentState, Learned
from forescale_operator.phase import Phase
from forescale_operator.reasons import Reason

from engine_inputs import PARAMS, build_forecast, build_obs, build_spec

#: PARAMS' prior: 50 rps per pod at the 200 ms target at fp16 (83.3 at int8), L0 guessed at 50 ms
TARGET = 200.0


def healthy_ms(per_pod: float, speed: float = 1.0) -> float:
    """What the prior model predicts for healthy fp16 pods at `per_pod` rps."""
    return PoolModel.prior(PARAMS.fallback_capacity_rps, TARGET).latency_ms(per_pod, speed)


class Scenario:
    """Drives decide() tick by tick every 15 s, feeding back weights and state."""

    def __init__(self, tick, spec=None, restart: bool = False):
        self.tick, self.spec, self.restart = tick, spec or build_spec(), restart
        self.state, self.t = EngineState(), 0.0

    def warm(self):
        """Healthy ticks until the model has learned the pods (the first tick is no sample: no fleet before it)."""
        for _ in range(PARAMS.min_model_samples + 1):
            self.at(healthy_ms(37.5))

    def at(self, latency, rate=300.0, a=(8, 8), b=(2, 2), over=None, forecast=None, a_extra=None, params=PARAMS,
           b_extra=None, median_ratio=0.8):
        w = self.state.weights
        obs = build_obs(t=self.t, rate=rate, latency=latency, a=a, b=b, weights=(w["a"], w["b"]), a_extra=a_extra,
                        b_extra=b_extra)
        if over is not None:
            from dataclasses import replace
            obs = replace(obs, over_slo_fraction=over)
        fc = build_forecast(self.t, rate if forecast is None else forecast, median_ratio=median_ratio)
        d = self.tick(self.spec, self.state, obs, fc, params)
        self.state = EngineState.from_status(json.loads(json.dumps(d.state.to_status()))) if self.restart else d.state
        self.t += 15.0
        return d


def reasons(d) -> list[Reason]:
    return [e.reason for e in d.events]


# -- rule 1: the latency model -------------------------------------------------

@pytest.mark.parametrize("l0, mu, prior", [
    (20.0, 80.0, 50.0),    # fast pods, prior too low
    (60.0, 40.0, 50.0),    # slow pods, prior too high
    (100.0, 200.0, 50.0),  # an LLM-like floor, far more capacity than the prior says
])
def test_the_model_recovers_pods_of_known_parameters(l0, mu, prior):
    rng = random.Random(7)
    model, mp = PoolModel.prior(prior, TARGET), ModelParams()
    true_capacity = mu * (1 - l0 / TARGET)
    for _ in range(400):
        rate = rng.uniform(0.2, 0.95) * true_capacity
        model, _ = model.learn(rate, l0 / (1 - rate / mu) * rng.lognormvariate(0, 0.1), 1.0, mp, TARGET)
    assert model.capacity(TARGET, health=1.0) == pytest.approx(true_capacity, rel=0.15)
    assert model.l0_ms == pytest.approx(l0, rel=0.25)
    assert 0.05 <= model.sigma <= 0.2


@pytest.mark.parametrize("factor", [1.0, 1.5, 2.5, 4.0])
def test_health_is_the_slowdown_that_puts_a_sample_on_the_curve(factor):
    model = PoolModel.prior(50.0, TARGET)
    slowed = PoolModel.prior(50.0, TARGET).latency_ms(10.0, health=factor)
    assert model.solve_health(10.0, slowed) == pytest.approx(factor, rel=1e-6)


@pytest.mark.parametrize("speed", [0.5, 1.0, 1 / 0.6])
def test_a_precision_scales_the_service_time(speed):
    model = PoolModel.prior(50.0, TARGET)
    assert model.capacity(TARGET, speed) > 0
    assert model.latency_ms(0.0, speed) == pytest.approx(model.l0_ms / speed)


@pytest.mark.parametrize("health, sized_for", [
    (1.0, TARGET),  # an unloaded pod takes 50 ms: the target
    (3.9, TARGET),  # 195 ms unloaded: the target is still reachable, just
    (4.0, 400.0),   # 200 ms unloaded: no count of pods meets 200 ms; twice the floor
    (6.0, 600.0),
])
def test_where_no_count_of_pods_meets_the_target_the_pods_are_sized_for_twice_their_floor(health, sized_for):
    model = PoolModel.prior(50.0, TARGET)
    assert model.sizing_target(TARGET, health=health) == pytest.approx(sized_for)
    cap = model.capacity(sized_for, health=health)
    assert 0 < cap < math.inf
    # M/M/1 at the floor's double: half the pods' saturation rate at this health
    if sized_for != TARGET:
        assert cap == pytest.approx(model.mu_rps / health / 2, rel=1e-6)


def test_an_outlier_is_gated_and_steps_are_bounded():
    model, mp = PoolModel.prior(50.0, TARGET), ModelParams()
    gated, learned = model.learn(20.0, 5_000.0, 1.0, mp, TARGET)
    assert not learned and gated.outliers == 1 and gated.x == model.x
    moved, learned = model.learn(20.0, healthy_ms(20.0) * 1.5, 1.0, mp, TARGET)
    assert learned and abs(moved.l0_ms / model.l0_ms - 1) <= mp.max_step + 1e-9
    assert abs(moved.x[2] / model.x[2] - 1) <= mp.max_step + 1e-9


@pytest.mark.parametrize("rate, factor", [
    (20.0, 1.5),   # light load, slower than the curve: a large step of L0
    (20.0, 0.7),   # light load, faster: the step that walked the fit down the ridge
    (45.0, 2.0),   # near the knee
    (10.0, 0.8),   # a small miss: within the bound, taken whole
])
def test_a_bounded_step_keeps_the_filters_direction(rate, factor):
    """L0 and 1/mu move by at most max_step each, the whole step scaled together: the bounded step is the
    unbounded one times one factor (clamping each on its own slid the fit along the curve's ridge)."""
    model = PoolModel.prior(50.0, TARGET)
    free, _ = model.learn(rate, healthy_ms(rate) * factor, 1.0, ModelParams(max_step=1e9, gate_sigmas=1e9), TARGET)
    bounded, _ = model.learn(rate, healthy_ms(rate) * factor, 1.0, ModelParams(gate_sigmas=1e9), TARGET)
    full = [free.x[i] - model.x[i] for i in (0, 2)]
    taken = [bounded.x[i] - model.x[i] for i in (0, 2)]
    scale = taken[0] / full[0]
    assert 0 < scale <= 1 + 1e-9 and taken[1] == pytest.approx(scale * full[1], rel=1e-9)
    assert max(abs(taken[0]) / model.x[0], abs(taken[1]) / model.x[2]) <= ModelParams().max_step + 1e-9


def test_a_constant_load_keeps_the_prior_and_says_so(tick):
    s = Scenario(tick)
    for _ in range(12):
        d = s.at(healthy_ms(37.5))
    assert any("mostly from the prior 50.0 (load constant at 37.5-37.5 rps per pod)" in r for r in d.reasons)
    assert d.capacity_rps["a"] == pytest.approx(50.0, rel=0.05)


def test_pods_that_contradict_the_prior_win_and_an_event_says_so_once(tick):
    s = Scenario(tick)
    seen = []
    for i in range(80):
        rate = 320.0 + 100.0 * (i % 5)  # 40 to 90 rps per pod on 8 pods, past the prior's 50
        per_pod = rate / 8
        # Pods twice as fast as the annotation said: L0 25 ms, mu 133 rps; within 200 ms up to 116 rps.
        d = s.at(25.0 / (1 - per_pod / 133.0), rate=rate)
        seen += [e for e in d.events if e.reason is Reason.CAPACITY_LEARNED]
        # a rate past the capacity may shift for an overload before the pods show they carry it; never the playbook
        assert Reason.EMERGENCY_STARTED not in reasons(d)
    seen = [e for e in seen if "chat-a" in e.message]  # B learns too, from the traffic an overload shift sent it
    assert len(seen) == 1 and "not the prior's 50.0" in seen[0].message
    # the pods showed more than the prior within the target: the capacity follows them past it
    assert d.capacity_rps["a"] > 60.0 and d.models["a"]["provenRps"] > 60.0


def test_the_capacity_never_goes_past_the_evidence():
    """Pods that only ever ran at low load: the curve fitted there extrapolates (an LLM's flat floor
    puts an M/M/1 knee far out), so the capacity stays at the load-tested prior until pods show more."""
    rng = random.Random(3)
    model, mp = PoolModel.prior(50.0, TARGET), ModelParams()
    for _ in range(300):
        rate = rng.uniform(5.0, 20.0)
        model, _ = model.learn(rate, 30.0 * rng.lognormvariate(0, 0.05), 1.0, mp, TARGET)  # flat: no queueing seen
    assert model._curve_capacity(TARGET, 1.0, 1.0) > 60.0  # the fit alone would promise more
    assert model.capacity(TARGET, health=1.0) == pytest.approx(50.0)
    assert model.proven_rps == pytest.approx(20.0, rel=0.05)


@pytest.mark.parametrize("queue, learned", [
    (None, True),     # no queue metric: the sample as read
    (0.0, True),
    (48.0, True),     # Little's law at 480 rps and 100 ms: 48 in the system
    (49.0, False),    # more waiting than that: the requests in the queue have not finished yet
    (300.0, False),   # an overload's onset: the queue filled, the latency read is of before
])
def test_a_tick_whose_queue_is_past_littles_law_is_no_sample(tick, queue, learned):
    """At an overload's onset the latency read is of the requests that finished, not of those the
    queue holds: 60 rps per pod at 100 ms would raise the proven rate and the capacity past the
    load test for good. A sample needs no more waiting than rate x latency."""
    s = Scenario(tick)
    s.warm()
    before = s.state.learned.models["a"]
    d = s.at(100.0, rate=480.0, a_extra={"queue_depth": queue})
    after = s.state.learned.models["a"]
    assert after.samples == before.samples + learned
    assert d.models["a"]["provenRps"] == pytest.approx(60.0 if learned else before.proven_rps)
    assert (d.capacity_rps["a"] > 50.0) is learned


@pytest.mark.parametrize("speed, health, bound", [
    (1.0 / 0.6, 1.0, "linear"),   # int8 on healthy pods: the load test's 50 rps / 0.6 = 83, not the curve's 94
    (2.0, 1.0, "linear"),
    (1.0 / 0.6, 2.5, "curve"),    # int8 on pods 2.5x slow: slower than the reference, the curve (below linear)
    (1.0, 2.0, "curve"),
    (0.5, 1.0, "curve"),          # fp32
])
def test_a_faster_precision_carries_the_evidence_no_further_than_its_speed(speed, health, bound):
    """The speed of a precision is a throughput ratio (measured at the batch sizes a loaded pod runs):
    past the evidence, the curve's lower floor at that speed would promise more than the speed itself
    (a B load-tested at int8 came back above its own load test); slower, the curve stays, below linear."""
    model = PoolModel.prior(50.0, TARGET)
    capacity = model.capacity(TARGET, speed, health)
    linear = model.capacity(TARGET, 1.0, 1.0) * speed / health
    curve = model._curve_capacity(TARGET, speed, health) * model._evidence_share()
    assert capacity == pytest.approx(linear if bound == "linear" else curve)
    assert capacity <= linear * (1 + 1e-9) and capacity <= curve * (1 + 1e-9)


def test_a_load_test_at_bs_precision_comes_back_as_itself():
    """B's own load test at int8 (250 rps per pod) is carried back to fp16 by its speed; at int8 again
    the capacity is the load test's figure, not more."""
    params = replace(PARAMS, fallback_capacity_rps_b=250.0)
    model = PoolModel.prior(params.prior_rps("b", "int8"), TARGET)
    assert model.capacity(TARGET, params.speed("int8"), 1.0) == pytest.approx(250.0, rel=1e-6)


# -- rule 3: incident or overload --------------------------------------------------

def test_a_burst_on_healthy_pods_scales_and_starts_no_playbook(tick):
    s = Scenario(tick)
    for _ in range(4):
        s.at(healthy_ms(37.5))
    for _ in range(2):  # 600 rps on 8 pods: 75 rps per pod, past the model's 50
        d = s.at(900.0, rate=600.0, over=0.4)
        assert Reason.EMERGENCY_STARTED not in reasons(d)
        assert d.phase is not Phase.EMERGENCY
    assert d.desired_replicas["a"] > 8


def test_an_overload_sends_the_excess_to_bs_reserve_and_takes_it_back(tick):
    s = Scenario(tick)
    s.warm()
    d = s.at(900.0, rate=500.0)  # a ready capacity about 8 x 50 = 400 < 500: the excess to B
    assert Reason.OVERLOAD in reasons(d) and 10 <= d.weights["b"] <= 30
    assert "a ready capacity" in d.events[0].message and "< 500 rps" in d.events[0].message
    assert not any(e.reason in (Reason.PRECISION_DOWNGRADED, Reason.DEBUG_LOGGING_ENABLED) for e in d.events)
    d = s.at(healthy_ms(30.0), rate=300.0, a=(12, 12))
    assert d.weights == {"a": 100, "b": 0} and "overload over" in d.events[0].message


@pytest.mark.parametrize("a_after, rate_after, held", [
    ((12, 8), 300.0, True),    # the load fits the ready pods again, but the new ones are still starting: held
    ((12, 12), 300.0, False),  # the new pods are ready and carry it: all back to A
    ((8, 8), 300.0, False),    # nothing on its way (the scale-up was undone): back to A
])
def test_an_overload_shift_holds_until_as_new_pods_are_ready(tick, a_after, rate_after, held):
    s = Scenario(tick)
    s.warm()
    d = s.at(900.0, rate=500.0, a=(12, 8))  # the excess to B while four more pods of A start
    shifted = d.weights["b"]
    assert Reason.OVERLOAD in reasons(d) and shifted > 0
    d = s.at(healthy_ms(30.0), rate=rate_after, a=a_after)
    if held:
        assert d.weights["b"] == shifted
        assert not any(e.reason is Reason.TRAFFIC_SHIFTED for e in d.events)
    else:
        assert d.weights == {"a": 100, "b": 0}
        assert "overload over" in next(e.message for e in d.events if e.reason is Reason.TRAFFIC_SHIFTED)


@pytest.mark.parametrize("most, shifted, bound", [
    (100, (10, 30), "b ready capacity"),       # the default: B's ready capacity is the only bound
    (10, (10, 10), "traffic.overloadMaxPercent 10"),  # the user's bound holds below what B could take
    (0, (0, 0), None),                          # overloads answered by scaling alone: no shift, no Overload
])
def test_overload_max_percent_bounds_the_shift_outside_an_incident(tick, most, shifted, bound):
    def overloaded(spec):
        s = Scenario(tick, spec=spec)
        s.warm()
        return s.at(900.0, rate=500.0, a=(12, 8))  # a ready capacity about 8 x 50 = 400 < 500, four more starting

    d = overloaded(build_spec(traffic={"overloadMaxPercent": most}))
    assert shifted[0] <= d.weights["b"] <= shifted[1]
    assert d.desired_replicas == overloaded(build_spec()).desired_replicas  # A is sized for it all either way
    if bound is None:
        assert Reason.OVERLOAD not in reasons(d) and Reason.EMERGENCY_STARTED not in reasons(d)
    else:
        assert bound in next(e.message for e in d.events if e.reason is Reason.OVERLOAD)


def test_overload_max_percent_lowered_to_0_during_a_shift_returns_the_traffic(tick):
    s = Scenario(tick)
    s.warm()
    assert s.at(900.0, rate=500.0, a=(12, 8)).weights["b"] > 0
    s.spec = build_spec(traffic={"overloadMaxPercent": 0})
    d = s.at(900.0, rate=500.0, a=(12, 8))  # still overloaded, still starting: only the bound moved
    assert d.weights == {"a": 100, "b": 0}
    message = next(e.message for e in d.events if e.reason is Reason.TRAFFIC_SHIFTED)
    assert "traffic.overloadMaxPercent 0, the overload is answered by scaling alone" in message


@pytest.mark.parametrize("reserve, latency_ratio, shifted", [
    (20, 1.9, 20),  # over the target at a load the model says A carries: B's reserve takes its 20% of A's load
    (40, 1.9, 40),  # a larger reserve takes a larger share
    (0, 1.9, 0),    # no reserve: nothing to take it
    (20, 1.5, 0),   # slower than the curve, within the target: nobody is hurt
])
def test_a_miss_within_the_models_capacity_hands_b_the_reserves_share(tick, reserve, latency_ratio, shifted):
    s = Scenario(tick, spec=build_spec(warmReservePercent=reserve))
    s.warm()
    d = s.at(healthy_ms(37.5) * latency_ratio)  # 37.5 of the model's 50 rps per pod
    assert d.weights["b"] == shifted
    if shifted:
        message = next(e.message for e in d.events if e.reason is Reason.OVERLOAD)
        assert f"a missed its target ({healthy_ms(37.5) * latency_ratio:.0f} ms > 200 ms) at 37.5 rps per pod" in message
        assert f"b's reserve takes {reserve}% of a's 300 rps" in message


@pytest.mark.parametrize("ratio, hurt_latency, starts_at", [
    (1.5, False, None),  # slower than the model, but within the trigger ratio
    (3.0, True, 1),      # 3x the prediction and over the target: the second tick
    (3.0, False, None),  # 3x the prediction, yet under the target and no budget burned: nobody is hurt
])
def test_a_slowdown_at_constant_load_starts_the_playbook(tick, ratio, hurt_latency, starts_at):
    s = Scenario(tick)
    s.warm()
    rate = 300.0 if hurt_latency else 80.0  # 10 rps per pod predicts ~59 ms: 3x is 178 ms < 200
    per_pod = rate / 8
    started = None
    for i in range(3):
        d = s.at(healthy_ms(per_pod) * ratio, rate=rate)
        if Reason.EMERGENCY_STARTED in reasons(d) and started is None:
            started = i
            assert "x the model's" in d.events[0].message and "rps per pod" in d.events[0].message
    assert started == starts_at


@pytest.mark.parametrize("over, ticks, fires", [
    (0.05, 10, True),   # 5x the budget: the long window (20 ticks) passes 2x at the ninth tick (2.25x)
    (0.05, 7, False),   # 1.75x over the long window: not yet
    (0.005, 12, False),  # within the budget
])
def test_the_burn_rate_trigger_catches_a_slowdown_under_the_target(tick, over, ticks, fires):
    s = Scenario(tick)
    for _ in range(PARAMS.burn_long_ticks):
        s.at(healthy_ms(37.5), over=0.0)
    fired = False
    for _ in range(ticks):  # p99 190 ms < 200, 1.7x the prediction: no deviation trigger
        d = s.at(190.0, over=over)
        fired |= any(e.reason is Reason.EMERGENCY_STARTED and "burn" in e.message for e in d.events)
    assert fired is fires


@pytest.mark.parametrize("healthy_ticks, fires", [
    (3, False),  # a young resource: the ticks its long window does not hold yet burned nothing
    (PARAMS.burn_long_ticks, False),
])
def test_one_bad_tick_fills_neither_burn_window(tick, healthy_ticks, fires):
    """One tick with 16% of its requests over the SLO (6 of 38 on one pod) is 4x the budget over the short
    window and 0.8x over the long one, however few ticks came before it."""
    s = Scenario(tick)
    for _ in range(healthy_ticks):
        s.at(healthy_ms(37.5), over=0.0)
    d = s.at(healthy_ms(37.5) * 2.5, over=0.16)
    assert (Reason.EMERGENCY_STARTED in reasons(d)) is fires


def test_budget_burned_in_an_overload_is_the_overloads(tick):
    s = Scenario(tick)
    for _ in range(6):
        d = s.at(900.0, rate=600.0, over=0.3)
        assert Reason.EMERGENCY_STARTED not in reasons(d)


def test_the_queue_of_an_overload_draining_is_not_an_incident(tick):
    s = Scenario(tick)
    s.warm()
    s.at(5_000.0, rate=700.0)
    # The burst is over; requests queued in it still finish slow for a tick or two.
    for _ in range(2):
        d = s.at(5_000.0, rate=100.0)
        assert Reason.EMERGENCY_STARTED not in reasons(d)


@pytest.mark.parametrize("queue_now, starts", [
    (0.0, False),   # the burst's backlog drained: the requests finishing now waited in it
    (34.0, True),   # 34 requests held at no load: the pods are not serving, whatever the burst was
])
def test_a_burst_backlog_draining_past_the_overload_window_is_not_an_incident(tick, queue_now, starts):
    """Synthetic bursty trace, seed 1: 347 -> 34 -> 0 queued after a burst, the fleet grown so that the per-pod
    load was within capacity for the trigger window, and the last step's requests all over the SLO at no load."""
    s = Scenario(tick)
    s.warm()
    for _ in range(2):
        s.at(15_000.0, rate=1_200.0, over=0.7, a_extra={"queue_depth": 300.0})
    for queue in (300.0, 34.0):
        d = s.at(15_000.0, rate=100.0, over=0.5, a_extra={"queue_depth": queue})
        assert Reason.EMERGENCY_STARTED not in reasons(d)
    d = s.at(14_000.0, rate=0.0, over=1.0, a_extra={"queue_depth": queue_now})
    assert (Reason.EMERGENCY_STARTED in reasons(d)) is starts
    if starts:
        assert "burn" in next(e.message for e in d.events if e.reason is Reason.EMERGENCY_STARTED)


@pytest.mark.parametrize("ratios, starts", [
    ((3.0, 3.0), True),         # a slowdown holds its latency: two ticks running
    ((3.0, 4.5, 7.0), True),    # saturated, its queue grows tick after tick
    ((12.0, 5.0), False),       # a burst inside the step queued, and the next step drained it
    ((3.0, 1.0, 3.0), False),   # near the knee, slow and back again: never two ticks running
])
def test_a_deviation_needs_its_ticks_in_a_row_without_draining(tick, ratios, starts):
    s = Scenario(tick)
    s.warm()
    started = False
    for r in ratios:
        per_pod = 300.0 * s.state.weights["a"] / 100 / 8  # A's share (an overload shift moves some to B)
        d = s.at(healthy_ms(per_pod) * r)
        started |= Reason.EMERGENCY_STARTED in reasons(d)
    assert started is starts


@pytest.mark.parametrize("queues, fires", [
    ((0.0, 20.0, 60.0, 120.0), True),  # 120 queued: more than 300 rps x the model's 114 ms (34) allows
    ((0.0, 2.0, 5.0, 9.0), False),     # 9 queued over 8 pods: within the model's in-system count
])
def test_a_queue_the_model_allows_at_this_load_is_the_loads(tick, queues, fires):
    s = Scenario(tick, spec=build_spec(warmReservePercent=0))  # no reserve to take a miss: the load stays on A
    s.warm()
    fired = False
    for q in queues:
        # 1.9x the prediction (under the trigger ratio) and over the target: only the queue can start anything
        d = s.at(healthy_ms(37.5) * 1.9, a_extra={"queue_depth": q})
        fired |= any(e.reason is Reason.EMERGENCY_STARTED and "queue grew" in e.message for e in d.events)
    assert fired is fires


@pytest.mark.parametrize("latency_ratio, answered", [
    (1.9, True),   # over the target, under the trigger ratio: the pods carry less than the curve says
    (1.5, False),  # slower, but within the target: nobody is hurt, the healthy curve sizes
])
def test_a_miss_that_starts_no_playbook_is_an_overload_at_the_pods_health(tick, latency_ratio, answered):
    s = Scenario(tick)
    s.warm()
    seen, most = set(), 8
    for _ in range(4):  # 37.5 of the model's 50 rps per pod: no overload while healthy
        per_pod = 300.0 * s.state.weights["a"] / 100 / 8  # A's share (B's reserve takes some of a miss)
        d = s.at(healthy_ms(per_pod) * latency_ratio)
        seen |= set(reasons(d))
        most = max(most, d.desired_replicas["a"])
    assert Reason.EMERGENCY_STARTED not in seen
    assert (Reason.OVERLOAD in seen) is answered
    assert (most > 8) is answered


# -- rule 2: sizing -------------------------------------------------------------------

@pytest.mark.parametrize("replicas, ready, want", [
    (10, 10, 10),  # nothing pending
    (10, 4, 10),   # six pods starting: counted as capacity on its way, not asked for again
])
def test_pods_still_starting_are_capacity_on_its_way(tick, replicas, ready, want):
    s = Scenario(tick, spec=build_spec(warmReservePercent=0))
    d = s.at(healthy_ms(20.0), rate=80.0, a=(replicas, ready), forecast=430.0)
    # 430 rps at the band, + the 10 s window's noise, at 50 rps per pod: 10 pods (or at most that).
    assert d.desired_replicas["a"] == want


@pytest.mark.parametrize("current, want", [(2, 6), (10, 20)])
def test_scale_up_is_bounded_per_tick_and_says_so(tick, current, want):
    s = Scenario(tick, spec=build_spec(warmReservePercent=0))
    d = s.at(healthy_ms(10.0), rate=current * 10.0, a=(current, current), forecast=2000.0)
    assert d.desired_replicas["a"] == want
    if want < 20:
        assert any("scale-up bounded to 6" in r and "+4 pods per tick" in r for r in d.reasons)


@pytest.mark.parametrize("reserve, a_pods, b_pods", [
    (0, 19, 1),    # A carries the whole band (900 rps + a window's noise), B at its minimum
    (20, 15, 3),   # A carries 80%, B holds 20% of the band ready (at int8, 50 / 0.6 = 83 rps per pod)
])
def test_the_reserve_is_as_headroom_not_an_extra(tick, reserve, a_pods, b_pods):
    s = Scenario(tick, spec=build_spec(warmReservePercent=reserve))
    d = s.at(healthy_ms(30.0), rate=300.0, a=(10, 10), b=(1, 1), forecast=900.0)
    assert (d.desired_replicas["a"], d.desired_replicas["b"]) == (a_pods, b_pods)



@pytest.mark.parametrize("reserve, median_ratio, a_pods", [
    (20, 0.5, 15),   # a wide band: A carries 80% of it, B's reserve the rest
    (20, 0.8, 15),   # the median at 80% of the band: the same
    (20, 0.97, 18),  # a tight band (a cycle the forecast knows): A carries the expected load, 873 rps
    (40, 0.5, 11),   # a larger reserve takes more of a wide band
    (40, 0.97, 18),  # but never the expected load itself
    (0, 0.97, 19),   # no reserve: the whole band
])
def test_a_carries_the_expected_load_and_the_reserve_the_band_above_it(tick, reserve, median_ratio, a_pods):
    """B's reserve is A's headroom for what the forecast is unsure of. Sized at 80% of a band only a few
    req/s wide, A was short on every rise of a smooth cycle the forecast knew, and each miss met a knee
    sharper than the model's before the overload shift came (docs/engine.md, section 5)."""
    s = Scenario(tick, spec=build_spec(warmReservePercent=reserve))
    d = s.at(healthy_ms(30.0), rate=300.0, a=(10, 10), b=(1, 1), forecast=900.0, median_ratio=median_ratio)
    assert d.desired_replicas["a"] == a_pods


@pytest.mark.parametrize("prior_b, b_pods", [
    (None, 3),    # B serves A's model at int8: 50 / 0.6 = 83 rps per pod at the SLO, not more (the speed is a throughput ratio)
    (250.0, 1),   # a lighter model's own load test at int8 (3x A's): one pod holds B's 20% of the band
])
def test_bs_own_prior_sizes_bs_reserve(tick, prior_b, b_pods):
    params = replace(PARAMS, fallback_capacity_rps_b=prior_b)
    d = Scenario(tick, spec=build_spec(warmReservePercent=20)).at(
        healthy_ms(30.0), rate=300.0, a=(10, 10), b=(1, 1), forecast=900.0, params=params)
    assert d.desired_replicas == {"a": 15, "b": b_pods}
    assert d.models["b"]["priorRps"] == pytest.approx(prior_b or PARAMS.fallback_capacity_rps / 0.6, rel=1e-3)

def _pessimistic_start() -> EngineState:
    """A's model puts the capacity at 40 rps per pod where the load test said 50 (the M/M/1 curve
    reading a batching server's early rise as a queue)."""
    prior = PoolModel.prior(PARAMS.fallback_capacity_rps, TARGET)
    model = replace(prior, x=(prior.x[0], prior.x[1], prior.x[2] * 1.25))
    assert model.capacity(TARGET, health=1.0) == pytest.approx(40.0)
    return EngineState(learned=Learned(models={"a": model}))


@pytest.mark.parametrize("restart", [False, True])
def test_a_budget_that_holds_stretches_as_capacity_and_a_tick_over_it_resets(tick, restart):
    """Pods carrying 37.5 rps each (over 90% of the model's 40) within the budget: A's sizing capacity
    grows by STEP a tick, the reason says so; one tick over the budget at that load, which A was sized
    for, sets it back to the model's and DECREASE under it, and the reason says that too."""
    s = Scenario(tick, spec=build_spec(warmReservePercent=0), restart=restart)
    s.state = _pessimistic_start()
    on_its_curve = s.state.learned.models["a"].latency_ms(37.5)  # the model has nothing to relearn
    ticks = [s.at(on_its_curve, over=0.0) for _ in range(4)]
    stretches = [d.models["a"]["stretch"] for d in ticks]
    assert stretches == pytest.approx([1.0 + STEP * (i + 1) for i in range(4)])
    assert any("a sized at 1.04x its model's capacity" in r and "50.0 rps per pod" in r for r in ticks[-1].reasons)
    d = s.at(on_its_curve, over=0.05)
    assert d.models["a"]["stretch"] == pytest.approx(DECREASE)
    assert any("a sized at 0.95x its model's capacity: the error budget was overspent" in r for r in d.reasons)


@pytest.mark.parametrize("over", [0.0, 0.5])
def test_an_incident_holds_the_stretch(tick, over):
    """In an incident the budget is the slowdown's, not a test of the stretch: it is held either way."""
    state = _pessimistic_start()
    state = replace(state, learned=replace(state.learned, stretch=1.2),
                    incident=IncidentState(stage=Phase.EMERGENCY, trigger="a slowdown", started_at=0.0))
    obs = replace(build_obs(t=15.0, rate=300.0, latency=400.0, a=(8, 8), b=(2, 2), weights=(70, 30)),
                  over_slo_fraction=over)
    d = tick(build_spec(), state, obs, build_forecast(15.0, 300.0))
    assert d.state.incident.stage is not None and d.state.learned.stretch == 1.2


@pytest.mark.parametrize("stage, b_pods", [
    (None, 2),             # an overload shift: B's two ready pods take it; pods started now would come too late
    (Phase.EMERGENCY, 3),  # the incident's split: B carries it for minutes, sized for 30% of the band's 700 rps
])
def test_b_is_sized_for_the_incidents_split_not_for_an_overload_shift(tick, stage, b_pods):
    """The same tick with 30% on B, the band rising from 500 to 700 rps: in an overload shift (held while A's
    four new pods start) B keeps its reserve, 10% of 700 rps on two int8 pods of 83 rps (held at two, not
    grown to three); in an incident B is sized for its share of the band."""
    incident = IncidentState(stage=stage, trigger="a slowdown", started_at=0.0) if stage else IncidentState(overload=True)
    state = replace(EngineState(), weights={"a": 70, "b": 30}, incident=incident)
    obs = build_obs(t=0.0, rate=500.0, latency=150.0, a=(12, 8), b=(2, 2), weights=(70, 30))
    d = tick(build_spec(warmReservePercent=10), state, obs, build_forecast(0.0, 700.0))
    assert d.weights["b"] == 30
    assert d.desired_replicas["b"] == b_pods


def test_the_stretch_is_what_a_is_sized_at(tick):
    """The same tick with and without a stretch learned: A is sized at the stretched per-pod rate."""
    state = _pessimistic_start()
    stretched = replace(state, learned=replace(state.learned, stretch=1.25))
    spec = build_spec(warmReservePercent=0)
    obs = build_obs(t=0.0, rate=300.0, latency=healthy_ms(37.5), a=(5, 5), b=(1, 1), weights=(100, 0))
    plain = tick(spec, state, obs, build_forecast(0.0, 300.0))
    wide = tick(spec, stretched, obs, build_forecast(0.0, 300.0))
    assert plain.desired_replicas["a"] == 8  # ~310 rps at 40 per pod
    assert wide.desired_replicas["a"] == 7  # at 50 per pod


def test_scale_down_waits_one_start_up(tick):
    s = Scenario(tick, spec=build_spec(warmReservePercent=0))
    p = EngineParams(name="chat", fallback_capacity_rps=50.0, default_startup_seconds=60.0)
    first = s.at(healthy_ms(40.0), rate=400.0, a=(10, 10), params=p).desired_replicas["a"]
    held = [s.at(healthy_ms(10.0), rate=100.0, a=(10, 10), params=p).desired_replicas["a"] for _ in range(5)]
    assert first == 10 and held[:3] == [10, 10, 10] and held[-1] < 10


@pytest.mark.parametrize("latency, a_min_in_emergency", [
    (600.0, 8),  # the playbook: A keeps its 8 pods however low its raw need reads
    (None, None),  # control, no incident: the same window lets A shrink to its need
])
def test_an_emergency_never_shrinks_a(tick, latency, a_min_in_emergency):
    """With no scale-down window, A's raw need at the playbook's start (70% of the load, at int8's speed, on a
    health still catching up) is below its pods; the emergency holds them, and says so."""
    p = EngineParams(name="chat", fallback_capacity_rps=PARAMS.fallback_capacity_rps, stabilization_seconds=0.0)
    s = Scenario(tick)
    for _ in range(PARAMS.min_model_samples + 1):
        s.at(healthy_ms(37.5), params=p)
    ticks = [s.at(latency if latency is not None else healthy_ms(12.5), rate=300.0 if latency else 100.0, params=p)
             for _ in range(8)]
    emergency = [d for d in ticks if d.phase is Phase.EMERGENCY]
    if a_min_in_emergency is None:
        assert not emergency and min(d.desired_replicas["a"] for d in ticks) < 8
        return
    assert len(emergency) >= 6
    assert min(d.desired_replicas["a"] for d in emergency) == a_min_in_emergency
    assert any("during the emergency" in r for d in emergency for r in d.reasons)


def _b_in_an_emergency(tick, b_slow: float):
    """An emergency on A; B's 2 pods then carry B's share of 400 rps at `b_slow` x the latency B's prior curve
    gives at int8, for 6 ticks. Returns the last decision."""
    s = Scenario(tick)
    s.warm()
    for _ in range(3):
        d = s.at(600.0, rate=300.0)  # A's pods slow: the playbook starts
    assert d.phase is Phase.EMERGENCY and d.weights["b"] > 0
    b_curve = PoolModel.prior(PARAMS.fallback_capacity_rps, TARGET)
    for _ in range(6):
        b_per_pod = 400.0 * d.weights["b"] / 100 / 2
        d = s.at(600.0, rate=400.0, b_extra={"latency_ms": b_slow * b_curve.latency_ms(b_per_pod, 1 / 0.6)})
    return d


def test_b_carrying_the_shift_is_sized_at_its_health(tick):
    """B's pods slower than their curve while they carry B's share get more pods, as A's do in an incident, and a
    reason says so with the health; on their curve B keeps its pods."""
    on_curve, slow = _b_in_an_emergency(tick, 1.0), _b_in_an_emergency(tick, 3.0)
    assert on_curve.models["b"]["health"] < 1.1 and on_curve.desired_replicas["b"] == 2
    # the curve takes part of a slowdown B shows from its first samples (it learns while it carries)
    assert slow.models["b"]["health"] > 1.2
    assert slow.desired_replicas["b"] > on_curve.desired_replicas["b"]
    said = [r for r in slow.reasons if r.startswith("b sized at health")]
    assert said and f"carries {slow.weights['b']}%" in said[0] and f"{slow.models['b']['health']:.2f}" in said[0]


def test_b_idle_is_sized_healthy_whatever_health_it_showed_last(tick):
    slow_b = replace(PoolModel.prior(PARAMS.fallback_capacity_rps / 0.6, TARGET), health=3.0)
    s = Scenario(tick, spec=build_spec(warmReservePercent=20))
    s.state = EngineState(learned=Learned(models={"b": slow_b}))
    d = s.at(healthy_ms(30.0), rate=300.0, a=(10, 10), b=(1, 1), forecast=900.0)
    assert d.weights["b"] == 0 and d.desired_replicas["b"] == 2  # the reserve at B's healthy int8 capacity
    assert not any(r.startswith("b sized at health") for r in d.reasons)


def test_pods_too_slow_for_any_count_to_meet_the_target_are_not_sized_to_the_maximum(tick):
    """A slowdown past what any count of pods can answer (an unloaded pod over the target): sizing at a
    capacity of 0 asked for maxReplicas; the pods are sized for twice their floor instead, and a reason says so."""
    s = Scenario(tick, spec=build_spec(emergency={"precisionFallback": False}))  # A stays at fp16
    s.warm()
    ticks = [s.at(8000.0, rate=60.0) for _ in range(12)]  # health ~4.6: an unloaded pod 230 ms
    assert all(d.phase is Phase.EMERGENCY for d in ticks[1:])
    last = ticks[-1]
    assert last.capacity_rps["a"] == 0.0  # at the target, honestly none
    # ~45 rps for A at mu / h / 2 ~ 7 rps per pod: held at its 8 (sized at 0: the scale-up bound, 16, every tick)
    assert max(d.desired_replicas["a"] for d in ticks[4:]) <= 10
    assert any("no count of a's pods meets 200 ms" in r and "twice that" in r for r in last.reasons)


# -- rules 3 and 4 end to end, and a restart from status at every tick ---------------------

def _incident(tick, restart):
    s = Scenario(tick, restart=restart)
    int8 = {"precision": "int8"}
    s.warm()
    s.at(600.0)
    d = s.at(600.0)
    story = [(d.phase, dict(d.weights), tuple(reasons(d)))]
    for i in range(30):
        d = s.at(healthy_ms(37.5 * 0.7, 1 / 0.6) if i != 14 else 260.0, a_extra=int8 if i < 25 else None)
        story.append((d.phase, dict(d.weights), tuple(reasons(d))))
    return story


def test_the_incident_runs_its_course_and_a_restart_changes_nothing(tick):
    live, restarted = _incident(tick, False), _incident(tick, True)
    assert live == restarted
    phases = [p for p, _, _ in live]
    first = live[0]
    assert first[0] is Phase.EMERGENCY and first[1] == {"a": 70, "b": 30}
    assert first[2][:6] == (Reason.EMERGENCY_STARTED, Reason.TRAFFIC_SHIFTED, Reason.PRECISION_DOWNGRADED,
                            Reason.CACHE_WARMED, Reason.DEBUG_LOGGING_ENABLED, Reason.SNAPSHOT_SAVED)
    assert Phase.RECOVERING in phases and Phase.CUTTING_BACK in phases
    everything = [r for _, _, rs in live for r in rs]
    assert Reason.CUTBACK_STEP in everything and Reason.CUTBACK_ABORTED in everything
    assert everything.count(Reason.EMERGENCY_STARTED) == 1


# -- state and parameters --------------------------------------------------------------

def test_a_state_round_trips_through_json_exactly(tick):
    s = Scenario(tick)
    s.warm()
    s.at(600.0)
    d = s.at(600.0)
    raw = json.loads(json.dumps(d.state.to_status()))
    assert EngineState.from_status(raw) == d.state
    assert set(raw) == {"weights", "incident", "learned"}
    assert raw["incident"]["stage"] == "Emergency" and "a" in raw["learned"]["models"]
    # a state saved while EngineState still had a `phase` field loads the same: the codec ignores unknown keys
    assert EngineState.from_status({**raw, "phase": "Emergency"}) == d.state


def test_a_state_written_before_the_model_keeps_its_incident():
    old = {"phase": "CuttingBack", "incident": "CuttingBack", "weights": {"a": 80, "b": 20},
           "cutback": {"step": 1, "nextAt": 99.0}, "capacity": {"a/fp16": {"rps": 3.0}}}
    state = EngineState.from_status(old)
    assert state.incident.stage is Phase.CUTTING_BACK and state.incident.cutback_step == 1
    assert state.weights == {"a": 80, "b": 20} and state.learned.models == {}


@pytest.mark.parametrize("raw, field", [
    ({"learned": {}, "weights": {"a": "x", "b": 0}}, "weights.a"),
    ({"learned": {}, "incident": {"cutbackStep": "two"}}, "incident.cutbackStep"),
    ({"learned": {}, "incident": {"stage": "Exploding"}}, "incident.stage"),
    ({"learned": {"models": {"a": {"x": [1, 2], "p": [1, 0, 0, 1, 0, 1]}}}}, "learned.models.a.x"),
    ({"learned": {"history": {"a": [[1.0]]}}}, "learned.history.a[0]"),
    ({"learned": {"forecastSpike": 1}}, "learned.forecastSpike"),
    ({"learned": {"queue": [True]}}, "learned.queue[0]"),
    ({"learned": "no"}, "learned"),
])
def test_a_bad_state_names_the_field(raw, field):
    with pytest.raises(StateError) as err:
        EngineState.from_status(raw)
    assert err.value.field == field and field in str(err.value)


@pytest.mark.parametrize("kwargs, name", [
    ({"gate_sigmas": 0}, "gate_sigmas"),
    ({"max_step": 1.5}, "max_step"),
    ({"max_slowdown": 0.5}, "max_slowdown"),
    ({"burn_long_ticks": 2}, "burn_long_ticks"),
    ({"scale_up_pods": 0}, "scale_up_pods"),
    ({"fallback_capacity_rps": 0}, "fallback_capacity_rps"),
])
def test_bad_params_are_refused_by_name(kwargs, name):
    with pytest.raises(ValueError, match=f"EngineParams.{name}"):
        EngineParams(**kwargs)


def test_preview_computes_the_incident_and_acts_on_nothing(tick):
    s = Scenario(tick, spec=build_spec(mode="Preview"))
    s.warm()
    s.at(600.0)
    d = s.at(600.0)
    assert d.preview and d.actions == () and d.weights == {"a": 100, "b": 0}
    assert d.would is not None and d.would.weights == {"a": 70, "b": 30}
    assert all(e.message.startswith("Preview: would ") for e in d.events) and d.events
    assert not math.isnan(d.capacity_rps["a"])


def test_a_pool_held_at_one_operating_point_keeps_a_bounded_covariance():
    """Regression: at one constant load nothing is learned along the curve's other direction, and
    drift grew that variance without end (e^4 in 2,000 ticks, then overflow to NaN replicas)."""
    from forescale_operator.engine.latency_model import MAX_RELATIVE_SIGMA

    model, mp = PoolModel.prior(10.0, 200.0), ModelParams()
    for _ in range(5000):
        model, _ = model.learn(6.67, 60.0, 1.0, mp, 200.0)
    assert all(math.isfinite(v) for v in model.p)
    assert math.sqrt(model.p[0]) <= MAX_RELATIVE_SIGMA * model.x[0] * 1.0001
    assert math.sqrt(model.p[5]) <= MAX_RELATIVE_SIGMA * model.x[2] * 1.0001
    assert 0 < model.capacity(200.0) < math.inf


@pytest.mark.parametrize("a_ready, b_ready, reserve, forecast, events", [
    # A and B both grow with the band: one ScaledUp naming both pools
    (10, 1, 20, 900.0, [(Reason.SCALED_UP, ("Scale chat-a up from 10 to 15: forecast", "; scale chat-b up from 1 to 3: reserve 20%"))]),
    # A grows, B (no reserve) shrinks to what the emergency share needs: one event per direction
    (10, 4, 0, 900.0, [(Reason.SCALED_UP, ("Scale chat-a up from 10 to 19",)), (Reason.SCALED_DOWN, ("Scale chat-b down from 4 to",))]),
    # A had more than the band needs and shrinks while B grows: again one event per direction
    (20, 1, 20, 900.0, [(Reason.SCALED_DOWN, ("Scale chat-a down from 20 to 15",)), (Reason.SCALED_UP, ("Scale chat-b up from 1 to 3",))]),
])
def test_one_scale_event_per_direction(tick, a_ready, b_ready, reserve, forecast, events):
    s = Scenario(tick, spec=build_spec(warmReservePercent=reserve))
    params = replace(PARAMS, stabilization_seconds=0.0)  # no window: a pool may shrink from the second tick
    s.at(healthy_ms(30.0), rate=300.0, a=(a_ready, a_ready), b=(b_ready, b_ready), forecast=300.0, params=params)
    s.state = replace(s.state, learned=replace(s.state.learned, last_desired={"a": a_ready, "b": b_ready}))
    d = s.at(healthy_ms(30.0), rate=300.0, a=(a_ready, a_ready), b=(b_ready, b_ready), forecast=forecast, params=params)
    scaled = [(e.reason, e.message) for e in d.events if e.reason in (Reason.SCALED_UP, Reason.SCALED_DOWN)]
    assert [r for r, _ in scaled] == [r for r, _ in events], scaled
    for (_, message), (_, parts) in zip(scaled, events):
        assert all(p in message for p in parts) and message.count("Scale ") == 1, message
