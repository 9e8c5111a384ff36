"""Rule 1: per-pod capacity at the SLO, learned per pool and precision, with its fallback."""

from __future__ import annotations

import pytest

from forescale_operator.engine import CapacityEstimate, EngineParams, PoolObservation
from forescale_operator.engine.capacity import after_incident, capacity_for, degraded_capacity, learn

# Probing is off here except in its own tests: the other rules are easier to read without it.
PARAMS = EngineParams(fallback_capacity_rps=50.0, min_capacity_samples=3, capacity_probe=0.0)
PROBING = EngineParams(fallback_capacity_rps=50.0, min_capacity_samples=3)
SLO = 200.0


def _pool(rate: float | None, latency: float | None, ready: int = 4) -> PoolObservation:
    return PoolObservation(replicas=ready, ready_replicas=ready, rate_rps=rate, latency_ms=latency)


def _learn_all(samples, precision="fp16", capacity=None, params=PARAMS):
    capacity = capacity or {}
    for rate, latency in samples:
        capacity = learn(capacity, "a", precision, _pool(rate, latency), SLO, params)
    return capacity


@pytest.mark.parametrize(
    "precision, want",
    [("fp16", 50.0), ("bf16", 50.0), ("int8", 50.0 / 0.6), ("fp32", 25.0)],
)
def test_fallback_before_enough_samples_scales_by_precision(precision, want):
    assert capacity_for({}, "a", precision, PARAMS) == pytest.approx(want)


@pytest.mark.parametrize(
    "samples, want",
    [
        # 4 pods at 240 rps under the SLO: 60 rps per pod proven, above the 50 fallback
        pytest.param([(240.0, 150.0)], 60.0, id="proven-rate-beats-fallback-at-once"),
        pytest.param([(80.0, 150.0)], 50.0, id="low-load-keeps-fallback"),
        pytest.param([(240.0, 150.0)] * 3, 60.0, id="learned-after-min-samples"),
        # over the SLO at 60 rps per pod: bound 60 x 200/400 = 30; three samples pull 50 towards it
        pytest.param([(240.0, 400.0)] * 3, 50.0 - 20.0 * (1 - 0.7**3), id="over-slo-pulls-down-smoothly"),
        # 10x over the SLO is bounded by min_overload_factor 0.5 x 60 = 30, not 6
        pytest.param([(240.0, 2000.0)] * 3, 50.0 - 20.0 * (1 - 0.7**3), id="saturated-queue-is-bounded"),
        pytest.param([(None, 150.0), (240.0, None), (0.0, 100.0)] * 2, 50.0, id="incomplete-samples-teach-nothing"),
    ],
)
def test_learning_from_samples(samples, want):
    capacity = _learn_all(samples)
    assert capacity_for(capacity, "a", "fp16", PARAMS) == pytest.approx(want)


def test_relaxes_back_after_an_incident_but_only_to_a_sustained_rate():
    capacity = _learn_all([(280.0, 150.0)] * 3)  # 70 rps per pod sustained
    capacity = _learn_all([(240.0, 600.0)] * 5, capacity=capacity)  # incident: pulled well under 70
    low = capacity_for(capacity, "a", "fp16", PARAMS)
    assert low < 45.0
    capacity = _learn_all([(100.0, 60.0)] * 60, capacity=capacity)  # calm: 25 rps per pod at 60 ms
    relaxed = capacity_for(capacity, "a", "fp16", PARAMS)
    assert low < relaxed <= 70.0 and relaxed == pytest.approx(70.0, abs=3.0)


def test_another_precision_borrows_the_learned_estimate():
    capacity = _learn_all([(240.0, 150.0)] * 3)
    # 60 rps per pod learned at fp16 -> 100 at int8 before int8 has its own samples
    assert capacity_for(capacity, "a", "int8", PARAMS) == pytest.approx(100.0)
    assert capacity_for(capacity, "b", "int8", PARAMS) == pytest.approx(50.0 / 0.6)  # pools never share


def test_estimates_are_kept_per_pool_and_precision():
    capacity = learn({}, "b", "int8", _pool(400.0, 100.0), SLO, PARAMS)
    assert set(capacity) == {"b/int8"}
    assert capacity["b/int8"] == CapacityEstimate(rps=100.0, ceiling=100.0, samples=1)


@pytest.mark.parametrize("slowdown_latency", [900.0, 5000.0])
def test_a_slowed_pool_does_not_spiral_down_as_pods_are_added(slowdown_latency):
    # 60 rps per pod proven under the SLO; then a slowdown keeps latency high whatever the
    # load, and each added pod lowers the rate per pod. The estimate stops at ceiling / 3.
    capacity = _learn_all([(240.0, 150.0)] * 3)
    for ready in range(4, 30):
        capacity = learn(capacity, "a", "fp16", _pool(240.0, slowdown_latency, ready=ready), SLO, PARAMS)
    assert capacity_for(capacity, "a", "fp16", PARAMS) == pytest.approx(60.0 / PARAMS.max_slowdown, rel=0.02)


def test_ceiling_carries_across_precisions():
    # fp16 sustained 60 rps per pod; int8 (1/0.6 as fast) has sustained only 10 so far,
    # yet an int8 slowdown cannot push int8 below 60 / 0.6 / 3.
    capacity = _learn_all([(240.0, 150.0)] * 3)
    capacity = _learn_all([(40.0, 150.0)] * 3, precision="int8", capacity=capacity)
    for ready in range(4, 30):
        capacity = learn(capacity, "a", "int8", _pool(40.0, 2000.0, ready=ready), SLO, PARAMS)
    assert capacity_for(capacity, "a", "int8", PARAMS) >= 60.0 / 0.6 / 3 - 1e-6


def test_an_incident_right_after_start_does_not_spiral_either():
    # Barely any load proven yet (1 rps per pod), then a slowdown: the fallback anchors the floor.
    capacity = _learn_all([(4.0, 150.0)] * 3)
    for ready in range(4, 30):
        capacity = learn(capacity, "a", "fp16", _pool(40.0, 3000.0, ready=ready), SLO, PARAMS)
    assert capacity_for(capacity, "a", "fp16", PARAMS) == pytest.approx(PARAMS.fallback_capacity_rps / PARAMS.max_slowdown, rel=0.02)


# --- during an incident on the pool ------------------------------------------------------

def _learn_incident(samples, precision="int8", capacity=None, params=PARAMS):
    capacity = capacity or {}
    for rate, latency in samples:
        capacity = learn(capacity, "a", precision, _pool(rate, latency), SLO, params, incident=True)
    return capacity


@pytest.mark.parametrize(
    "samples, want",
    [
        # int8 fallback 83.3; 4 pods at 100 rps (25 each) and 300 ms: the bound 25 x 200/300 at once
        pytest.param([(100.0, 300.0)], 25.0 * 200 / 300, id="over-slo-takes-the-bound-at-once"),
        # near the target (190 ms > 0.8 x 200): the point estimate 25 x 200/190, used from the first sample
        pytest.param([(100.0, 190.0)], 25.0 * 200 / 190, id="knee-sample-sets-the-point-estimate"),
        # comfortably under the target: nothing learned about the slowed pool, the estimate stays
        pytest.param([(100.0, 100.0)], 50.0 / 0.6, id="comfortable-sample-keeps-the-estimate"),
        # 20x over the target is floored at the anchor / incident_max_slowdown (83.3 / 6), not 12.5
        pytest.param([(100.0, 4000.0)] * 3, 50.0 / 0.6 / 6, id="floored-at-incident-max-slowdown"),
    ],
)
def test_learning_during_an_incident(samples, want):
    capacity = _learn_incident(samples)
    assert capacity_for(capacity, "a", "int8", PARAMS) == pytest.approx(want, rel=1e-6)


def test_no_relaxing_back_up_while_the_incident_lasts():
    proven = _learn_all([(280.0, 150.0)] * 3)  # 70 rps per pod at fp16 before the incident
    capacity = _learn_incident([(100.0, 300.0)], capacity=proven)
    low = capacity_for(capacity, "a", "int8", PARAMS)
    calm = _learn_incident([(40.0, 60.0)] * 30, capacity=capacity)
    assert capacity_for(calm, "a", "int8", PARAMS) == pytest.approx(low)
    # The same calm samples outside an incident relax the estimate towards what was proven.
    relaxed = capacity
    for _ in range(30):
        relaxed = learn(relaxed, "a", "int8", _pool(40.0, 60.0), SLO, PARAMS)
    assert capacity_for(relaxed, "a", "int8", PARAMS) > low


@pytest.mark.parametrize(
    "int8_samples, want_fp16",
    [
        # nothing learned at int8: fp16 is its own estimate (60 rps per pod proven before)
        pytest.param([], 60.0, id="no-incident-estimate"),
        # A showed 16.7 rps per pod at int8 during the incident: 10 at fp16, under the 60 proven
        pytest.param([(100.0, 300.0)], 25.0 * 200 / 300 * 0.6, id="slowed-at-int8-is-slowed-at-fp16"),
    ],
)
def test_degraded_capacity_carries_the_incident_across_precisions(int8_samples, want_fp16):
    capacity = _learn_incident(int8_samples, capacity=_learn_all([(240.0, 150.0)] * 3))
    assert degraded_capacity(capacity, "a", "fp16", "int8", PARAMS) == pytest.approx(want_fp16)
    assert degraded_capacity(capacity, "a", "fp16", "fp16", PARAMS) == pytest.approx(60.0)


@pytest.mark.parametrize("field, value", [("incident_max_slowdown", 0.5), ("incident_knee_ratio", 0.0), ("incident_knee_ratio", 1.5)])
def test_incident_params_are_range_checked(field, value):
    with pytest.raises(ValueError, match=f"EngineParams.{field}: out of range"):
        EngineParams(**{field: value})


# --- probing upwards until the first overload ------------------------------------------

@pytest.mark.parametrize(
    "samples, want",
    [
        # 4 pods at 160 rps: 40 per pod = 0.8 x the 50 fallback, at a comfortable 100 ms: +5%
        pytest.param([(160.0, 100.0)], 50.0 * 1.05, id="loaded-and-comfortable-probes"),
        # and again at every tick while the pods carry 0.75 x the planned 85% of the estimate
        pytest.param([(160.0, 100.0)] * 3, 50.0 * 1.05**3, id="probes-while-the-pods-carry-the-plan"),
        pytest.param([(160.0, 100.0)] * 6, 50.0 * 1.05**5, id="stops-when-the-pods-carry-less-than-the-plan"),
        # never past the latency curve: 40 per pod at 150 ms allows 40 x 200/150 = 53.3
        pytest.param([(160.0, 150.0)] * 3, 40.0 * 200 / 150, id="capped-by-the-latency-curve"),
        # 20 per pod is not load enough to say anything about 50
        pytest.param([(80.0, 100.0)], 50.0, id="light-load-does-not-probe"),
        # 150 ms (0.75 x 200) still leaves room; 170 ms (> 0.8 x 200) does not
        pytest.param([(160.0, 150.0)], 50.0 * 1.05, id="room-under-the-target-probes"),
        pytest.param([(160.0, 170.0)], 50.0, id="near-the-target-does-not-probe"),
        # an overload found the knee: no probing after it, only relaxing to what was sustained
        # (50 pulled 30% towards the bound 60 x 200/400 = 30 gives 44; 40 per pod then sustained is under it)
        pytest.param([(240.0, 400.0), (160.0, 100.0)], 44.0, id="no-probe-after-an-overload"),
    ],
)
def test_probing_upwards(samples, want):
    capacity = _learn_all(samples, params=PROBING)
    assert capacity["a/fp16"].rps == pytest.approx(want)


def test_probing_can_be_switched_off():
    capacity = {}
    for _ in range(3):
        capacity = learn(capacity, "a", "fp16", _pool(160.0, 100.0), SLO, PARAMS)
    assert capacity["a/fp16"].rps == pytest.approx(50.0) and not capacity["a/fp16"].overloaded


@pytest.mark.parametrize("field, value", [("capacity_probe", -0.1), ("capacity_probe", 1.5), ("probe_load_ratio", 0.0),
                                          ("probe_latency_ratio", 1.2)])
def test_probe_params_are_range_checked(field, value):
    with pytest.raises(ValueError, match=f"EngineParams.{field}: out of range"):
        EngineParams(**{field: value})


# --- after the incident's cut-back ---------------------------------------------------

def test_after_an_incident_the_template_starts_from_what_the_incident_showed():
    proven = _learn_all([(280.0, 150.0)] * 3)  # 70 rps per pod at fp16
    # int8: the bound 16.7 is under the floor 70 / 0.6 / 6 = 19.4 (the proven ceiling carried to int8)
    during = _learn_incident([(100.0, 300.0)], capacity=proven)
    after = after_incident(during, "a", "fp16", "int8", PARAMS)
    assert after["a/fp16"].rps == pytest.approx(70.0 / 0.6 / 6 * 0.6)
    assert after["a/fp16"].ceiling == proven["a/fp16"].ceiling  # what was proven stays, to relax back to
    assert "a/int8" not in after  # the next incident learns its own
    # comfortable ticks at fp16 relax it back up towards the 70 proven
    relaxed = _learn_all([(40.0, 60.0)] * 20, capacity=after)
    assert 10.0 < relaxed["a/fp16"].rps < 70.0


@pytest.mark.parametrize("runtime", [None, "fp16"])
def test_after_an_incident_without_a_downgrade_nothing_changes(runtime):
    proven = _learn_all([(280.0, 150.0)] * 3)
    assert after_incident(proven, "a", "fp16", runtime, PARAMS) == proven
