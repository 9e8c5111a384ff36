"""The pods' clock: device time per unit of work, learned online, and what the triggers ask it."""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import replace

import pytest

from forescale_operator.engine import EngineState
from forescale_operator.engine.learning import learn_clock
from forescale_operator.engine.pod_clock import MIN_SAMPLES, PodClock
from forescale_operator.engine.types import PoolObservation
from forescale_operator.phase import Phase
from forescale_operator.reasons import Reason

from engine_inputs import PARAMS
from test_engine_model import Scenario, healthy_ms, reasons

GATE, DRIFT = PARAMS.model.gate_sigmas, PARAMS.model.drift


def _learned(a: float, c: float, sizes, noise: float = 0.03, n: int = 200, seed: int = 0) -> PodClock:
    rng = random.Random(seed)
    clock = PodClock()
    for _ in range(n):
        size = rng.choice(sizes)
        clock = clock.learn(size, (a + c * size) * rng.uniform(1 - noise, 1 + noise), 1.0, GATE, DRIFT)
    return clock


@pytest.mark.parametrize("a, c", [(5.0, 0.8), (40.0, 0.05), (1.0, 3.0)])
def test_the_clock_recovers_a_line_of_known_parameters(a, c):
    clock = _learned(a, c, sizes=(1, 2, 4, 8, 16, 32))
    for size in (1, 8, 32):
        assert clock.predict_ms(size) == pytest.approx(a + c * size, rel=0.03)
    assert clock.sigma < 0.06


@pytest.mark.parametrize("factor", [1.0, 1.3, 2.5, 6.0])
def test_the_ratio_is_the_pods_slowdown_at_any_unit_size(factor):
    clock = _learned(5.0, 0.8, sizes=(1, 4, 16, 32))
    for size in (2, 12, 30):
        assert clock.ratio(size, factor * (5.0 + 0.8 * size)) == pytest.approx(factor, rel=0.04)


def test_the_clock_speaks_only_after_its_samples():
    clock = PodClock()
    for i in range(MIN_SAMPLES):
        assert clock.ratio(8, 10.0) is None
        clock = clock.learn(8, 10.0, 1.0, GATE, DRIFT)
    assert clock.ratio(8, 10.0) == pytest.approx(1.0)


@pytest.mark.parametrize("size, ms", [(None, 10.0), (8, None), (0, 10.0), (8, 0.0), (-1, 10.0), (8, math.nan),
                                      (math.inf, 10.0)])
def test_a_sample_without_work_teaches_nothing_and_asks_nothing(size, ms):
    clock = _learned(5.0, 0.8, sizes=(4, 16))
    assert clock.learn(size, ms, 1.0, GATE, DRIFT) == clock
    assert clock.ratio(size, ms) is None


def test_one_slow_sample_is_gated_and_a_lasting_change_is_learned():
    clock = _learned(5.0, 0.8, sizes=(4, 16))
    slow = clock.learn(8, 2.5 * 11.4, 1.0, GATE, DRIFT)
    assert slow.outliers == 1 and slow.x == clock.x
    for _ in range(20):  # five minutes of 15 s steps: an incident's length, still a change of the pods
        slow = slow.learn(8, 2.5 * 11.4, 1.0, GATE, DRIFT)
    assert slow.ratio(8, 2.5 * 11.4) == pytest.approx(2.5, rel=0.05)
    for _ in range(100):  # twenty-five more minutes: the new usual
        slow = slow.learn(8, 2.5 * 11.4, 1.0, GATE, DRIFT)
    assert slow.ratio(8, 2.5 * 11.4) == pytest.approx(1.0, abs=0.1)


@pytest.mark.parametrize("speed", [0.5, 1.0, 1 / 0.6])
def test_a_precision_is_its_speed_on_the_same_clock(speed):
    clock = _learned(5.0, 0.8, sizes=(4, 16))
    assert clock.ratio(8, 11.4 / speed, speed) == pytest.approx(1.0, rel=0.03)


def test_a_pool_held_at_one_unit_size_keeps_a_bounded_covariance():
    clock = PodClock()
    for _ in range(20_000):
        clock = clock.learn(12, 14.6, 1.0, GATE, DRIFT)
    assert all(math.isfinite(v) for v in clock.p)
    assert clock.ratio(12, 14.6) == pytest.approx(1.0, rel=0.01)


# (the pool's ready pods, the ready pods at the last tick, its device time reported, the caller holds it) -> learned
LEARN = {
    "a steady fleet reporting device time": ((4, 4, True, False), True),
    "held by the caller (an incident, a miss, B without a share)": ((4, 4, True, True), False),
    "the fleet changed since the last tick": ((5, 4, True, False), False),
    "no ready pod": ((0, 0, True, False), False),
    "no device time reported": ((4, 4, False, False), False),
}


@pytest.mark.parametrize("case, learned", LEARN.values(), ids=LEARN.keys())
def test_a_pool_clock_learns_a_sample_only_when_nothing_holds_it(case, learned):
    ready, before, reported, hold = case
    pool = PoolObservation(replicas=ready, ready_replicas=ready, rate_rps=40.0, latency_ms=100.0,
                           **({"service_ms": 8.2, "service_size": 4.0} if reported else {}))
    clock = learn_clock(None, pool, before, 1.0, hold, PARAMS)
    assert (clock is not None and clock.samples == 1) == learned
    assert (clock is None) == (not reported)  # a clock exists once its pods report device time, learned or not


# -- what the triggers ask it ---------------------------------------------------

def _clocked(per_pod: float, factor: float = 1.0) -> dict:
    """A's device time: a batch of `per_pod / 4` items at 5 ms + 0.8 ms per item, `factor` times slower."""
    size = max(1.0, per_pod / 4)
    return {"service_ms": factor * (5.0 + 0.8 * size), "service_size": size}


def _warm(s: Scenario) -> None:
    for i in range(PARAMS.min_model_samples + 1):
        per_pod = 30.0 + (i % 3) * 5.0
        s.at(healthy_ms(per_pod), rate=8 * per_pod, a_extra=_clocked(per_pod))


@pytest.mark.parametrize("factor, starts", [
    (1.0, False),  # latency 3x the model at healthy device speed: the knee, or a burst inside the step
    (1.1, False),  # within the clock's noise
    (2.5, True),   # the device 2.5x slower per unit: the pods changed
])
def test_latency_over_the_model_starts_the_playbook_only_when_the_clock_agrees(tick, factor, starts):
    s = Scenario(tick)
    _warm(s)
    per_pod = 37.5
    ds = [s.at(healthy_ms(per_pod) * 3.0, rate=8 * per_pod, over=0.05, a_extra=_clocked(per_pod, factor))
          for _ in range(3)]
    started = [d for d in ds if Reason.EMERGENCY_STARTED in reasons(d)]
    assert bool(started) == starts
    if starts:
        assert "its usual time per unit" in started[0].events[0].message and "device 2.5" in started[0].events[0].message
    else:
        assert any("the device runs at" in r and "load, answered by pods" in r for d in ds for r in d.reasons)


def test_without_a_clock_latency_alone_decides_as_before(tick):
    s = Scenario(tick)
    s.warm()
    ds = [s.at(healthy_ms(37.5) * 3.0, rate=300.0) for _ in range(3)]
    assert any(Reason.EMERGENCY_STARTED in reasons(d) for d in ds)


# (A's latency at the two ticks (None: healthy), its queue, the clock's slowdown (None: no clock), starts)
ERRORS = [
    ((None, None), (0, 0), (1.0, 1.0), True),          # fast failures at a healthy latency: the clock cannot see them
    ((15000, 15000), (400, 50), (1.0, 1.0), False),    # timeouts behind a burst's queue, which drains; usual speed: load
    ((15000, 15000), (100, 150), (1.0, 1.0), True),    # timeouts while the queue grows: a hung pod, clock or not
    ((None, 15000), (400, 50), (1.0, 2.5), True),      # timeouts with the device 2.5x slower per unit: the pods changed
    ((None, 15000), (400, 50), (None, None), True),    # timeouts and no clock to ask: as before the clock
]


@pytest.mark.parametrize("latency, queue, factor, starts", ERRORS)
def test_errors_start_the_playbook_unless_they_are_a_draining_queues_timeouts(tick, latency, queue, factor, starts):
    """The second tick has 20% of A's requests failed or timed out, the first none. Where the playbook
    starts, the errors start it (one tick of latency or of a slow clock starts nothing else)."""
    s = Scenario(tick)
    if factor[0] is None:
        s.warm()
    else:
        _warm(s)
    ds = [s.at(ms or healthy_ms(37.5), rate=300.0,
               a_extra={**({} if f is None else _clocked(37.5, f)), "queue_depth": float(depth), "error_rate": err})
          for ms, depth, f, err in zip(latency, queue, factor, (0.0, 0.2))]
    assert Reason.EMERGENCY_STARTED not in reasons(ds[0])
    started = [e.message for e in ds[1].events if e.reason == Reason.EMERGENCY_STARTED]
    assert bool(started) == starts
    if starts:
        assert "playbook: errors" in started[0]
    else:
        # 20%: A's own share (B's requests are not A's pods)
        assert any("and 20.0% of its requests timed out behind a draining queue, but the device runs at" in r
                   for r in ds[1].reasons)


@pytest.mark.parametrize("pool, starts", [
    ("a", True),   # A's own requests failing: its pods changed
    ("b", False),  # B's, while it carries 20% (an overload shift): not A's pods; 10% over both pools
])
def test_only_as_own_errors_start_the_playbook(tick, pool, starts):
    s = Scenario(tick)
    s.warm()
    s.state = replace(s.state, weights={"a": 80, "b": 20})
    failing = {"error_rate": 0.5}
    d = s.at(healthy_ms(37.5), rate=300.0, a_extra=failing if pool == "a" else None,
             b_extra=failing if pool == "b" else None)
    assert (Reason.EMERGENCY_STARTED in reasons(d)) == starts
    if starts:
        assert d.events[0].message.startswith("Start the incident playbook: errors 50.0% > 5% at ")
    else:  # B's errors are B's: it leaves the shifts (ejection.py), A's pods are left alone
        assert Reason.BACKUP_EJECTED in reasons(d) and d.weights == {"a": 100, "b": 0}


def test_the_clock_survives_a_restart_from_status(tick):
    s = Scenario(tick)
    _warm(s)
    clock = s.state.learned.clocks["a"]
    back = EngineState.from_status(json.loads(json.dumps(s.state.to_status())))
    assert back.learned.clocks["a"] == clock and clock.ready


def test_a_clock_still_learning_leaves_latency_to_decide_and_learns_no_slow_tick(tick):
    """A slowdown in the operator's first minute, before the clock has its samples: latency alone
    calls it (as without a clock), and the clock does not take the slow ticks for the usual."""
    s = Scenario(tick)
    s.warm()  # the latency model has learned; the pods report device time only from now on
    ds = [s.at(healthy_ms(37.5) * 3.0, rate=300.0, over=0.05, a_extra=_clocked(37.5, 2.5)) for _ in range(3)]
    assert any(Reason.EMERGENCY_STARTED in reasons(d) for d in ds)
    assert s.state.learned.clocks["a"].samples == 0


@pytest.mark.parametrize("latency_ratio, rate, learned", [
    (1.0, 300.0, True),    # healthy: a sample
    (3.0, 300.0, False),   # over the target at a load the model says the pods carry: maybe an incident
    (3.0, 600.0, True),    # over the target in an overload: the device is not slower for a queue
])
def test_the_clock_learns_only_what_cannot_be_an_incident(tick, latency_ratio, rate, learned):
    s = Scenario(tick)
    _warm(s)
    before = s.state.learned.clocks["a"].samples
    per_pod = rate / 8
    s.at(healthy_ms(min(per_pod, 37.5)) * latency_ratio if rate <= 300 else 900.0, rate=rate, a_extra=_clocked(per_pod))
    assert (s.state.learned.clocks["a"].samples > before) == learned


def test_status_shows_the_clock_with_its_numbers(tick):
    s = Scenario(tick)
    _warm(s)
    d = s.at(healthy_ms(37.5), rate=300.0, a_extra=_clocked(37.5, 2.0))
    clock = d.models["a"]["clock"]
    assert clock["ratio"] == pytest.approx(2.0, rel=0.05) and clock["line"] == pytest.approx(math.exp(3 * 0.05), rel=0.2)
    assert clock["samples"] >= MIN_SAMPLES and clock["msPerUnit"] > 0 and clock["msPerItem"] > 0
    assert "clock" not in d.models["b"]
    assert "clock" not in Scenario(tick).at(healthy_ms(37.5)).models["a"]  # pods that report no device time


def test_the_tick_a_clock_starts_reports_a_finite_line(tick):
    """The first tick with device time creates the clock: status shows it with its own line (JSON has no infinity)."""
    s = Scenario(tick)
    s.warm()
    d = s.at(healthy_ms(37.5), rate=300.0, a_extra=_clocked(37.5))
    clock = d.models["a"]["clock"]
    assert clock["ratio"] is None and math.isfinite(clock["line"])
    json.dumps(d.models, allow_nan=False)


@pytest.mark.parametrize("factor, latency, slow_ticks, starts", [
    (2.5, 800.0, 3, True),    # an overload that also slowed the device: the pods changed, the load does not excuse it
    (1.0, 800.0, 3, False),   # an overload at the device's usual speed: answered by pods and B, not the playbook
    (1.5, 800.0, 3, False),   # slower, but under the trigger ratio (2x): left to the latency triggers
    (2.5, 150.0, 3, False),   # the device slower but users not hurt (under the 200 ms target, no budget burned)
    (2.5, 800.0, 1, False),   # one slow tick, then the usual speed: a tick is no trend
])
def test_a_device_slower_by_the_trigger_ratio_starts_the_playbook_even_in_an_overload(tick, factor, latency, slow_ticks,
                                                                                      starts):
    s = Scenario(tick)
    _warm(s)
    per_pod = 150.0  # far past the model's capacity: the load alone explains any latency
    ds = [s.at(latency, rate=8 * per_pod, a_extra=_clocked(per_pod, factor if i < slow_ticks else 1.0))
          for i in range(3)]
    if latency > 200.0:  # (under the target a tick past the capacity counts as carried)
        assert ds[0].state.learned.loads[-1] > 1.0, "the case must be an overload by the model"
    started = [d for d in ds if Reason.EMERGENCY_STARTED in reasons(d)]
    assert bool(started) == starts
    if starts:
        message = started[0].events[0].message
        assert re.search(r"the device at 2\.[4-6]\dx its usual time per unit of work \(> 2\.00x\) for 2 ticks running", message)


def _device_incident(s: Scenario) -> None:
    """Warm, then a 2.5x slower device with users hurt until the playbook starts."""
    _warm(s)
    for _ in range(3):
        d = s.at(healthy_ms(37.5) * 3.0, rate=300.0, over=0.05, a_extra=_clocked(37.5, 2.5))
        if Reason.EMERGENCY_STARTED in reasons(d):
            return
    raise AssertionError("the playbook did not start")


def test_no_recovery_while_the_device_is_still_slow(tick):
    """The shift and int8 bring latency under the target while the pods are still 2.5x slow: the incident holds
    until the device is back, then recovers and cuts back as before."""
    s = Scenario(tick)
    _device_incident(s)
    slow = [s.at(healthy_ms(37.5), rate=300.0, a_extra=_clocked(37.5, 2.5)) for _ in range(12)]
    assert {d.phase for d in slow} == {Phase.EMERGENCY}
    assert not any(Reason.RECOVERED in reasons(d) for d in slow)
    back = [s.at(healthy_ms(37.5), rate=300.0, a_extra=_clocked(37.5)) for _ in range(12)]
    assert back[0].phase is Phase.RECOVERING
    assert any(Reason.RECOVERED in reasons(d) for d in back)


def test_a_device_slow_again_aborts_the_cut_back_and_says_so(tick):
    s = Scenario(tick)
    _device_incident(s)
    for _ in range(20):
        d = s.at(healthy_ms(37.5), rate=300.0, a_extra=_clocked(37.5))
        if d.phase is Phase.CUTTING_BACK:
            break
    assert d.phase is Phase.CUTTING_BACK
    d = s.at(healthy_ms(37.5), rate=300.0, a_extra=_clocked(37.5, 2.5))
    assert Reason.CUTBACK_ABORTED in reasons(d) and d.phase is Phase.EMERGENCY
    message = next(e.message for e in d.events if e.reason is Reason.CUTBACK_ABORTED)
    assert re.search(r"the device at 2\.[4-6]\dx its usual time per unit of work again", message)


@pytest.mark.parametrize("clocked, source", [
    (True, "its device clock"),                  # the clock's 2.5x from the first tick
    (False, "its latency against its model"),    # no clock: the latency model's tracked health
])
def test_in_an_incident_a_is_sized_at_the_health_the_pods_show(tick, clocked, source):
    s = Scenario(tick)
    _warm(s) if clocked else s.warm()
    extra = _clocked(37.5, 2.5) if clocked else {}
    for _ in range(3):
        d = s.at(healthy_ms(37.5) * 3.0, rate=300.0, over=0.05, a_extra=extra)
        if Reason.EMERGENCY_STARTED in reasons(d):
            break
    assert d.phase is Phase.EMERGENCY
    line = next(r for r in d.reasons if r.startswith("a sized at health"))
    h = float(re.search(r"health (\d+\.\d+)", line).group(1))
    assert source in line
    if clocked:
        assert h == pytest.approx(2.5, rel=0.05)
    else:
        assert h == pytest.approx(d.state.learned.models["a"].health, abs=0.01)
    model = d.state.learned.models["a"]
    assert d.capacity_rps["a"] == pytest.approx(model.capacity(200.0, PARAMS.speed("int8"), health=h), rel=0.02)


@pytest.mark.parametrize("clocked, sized_at_health", [
    (True, False),   # the clock says the device runs at its usual speed: the miss is load, A is sized healthy
    (False, True),   # no clock: the latency model's tracked health sizes A, as before
])
def test_a_miss_with_the_device_at_its_usual_speed_sizes_a_healthy(tick, clocked, sized_at_health):
    s = Scenario(tick)
    _warm(s) if clocked else s.warm()
    lines = []
    for _ in range(3):
        per_pod = 300.0 * s.state.weights["a"] / 100 / 8
        d = s.at(healthy_ms(per_pod) * 1.9, a_extra=_clocked(per_pod) if clocked else None)
        lines += [r for r in d.reasons if r.startswith("a sized at health")]
    assert bool(lines) is sized_at_health
    if sized_at_health:
        assert "its latency against its model" in lines[0]


@pytest.mark.parametrize("case, precision, pods, time_share", [
    ("every pod at int8", "int8", {}, 0.6),
    # a pod ready during the incident runs fp16 until it is switched: the pool shows its template's
    # precision, and its device time is its pods' mix, (7 x 0.6 + 1) / 8 of fp16's
    ("one new pod not yet switched", "fp16", {"int8": 7, "fp16": 1}, (7 * 0.6 + 1) / 8),
])
def test_a_pool_of_mixed_precisions_is_read_at_its_pods_mix(tick, case, precision, pods, time_share):
    s = Scenario(tick)
    _device_incident(s)
    clocked = _clocked(37.5, 2.5 * time_share)
    d = s.at(healthy_ms(37.5), rate=300.0, a_extra={**clocked, "precision": precision, "precision_pods": pods})
    assert d.phase is Phase.EMERGENCY, case
    line = next(r for r in d.reasons if r.startswith("a sized at health"))
    assert float(re.search(r"health (\d+\.\d+)", line).group(1)) == pytest.approx(2.5, rel=0.05), case
