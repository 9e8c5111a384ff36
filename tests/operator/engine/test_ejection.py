"""B's ejection from the traffic shifts while its pods fail the requests they are given."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from forescale_operator.engine import EngineState
from forescale_operator.engine.ejection import BASE_SECONDS, MAX_SECONDS, Ejection, advance, judge
from forescale_operator.reasons import Reason

from engine_inputs import build_obs, build_spec
from test_engine_model import Scenario, healthy_ms, reasons


@pytest.mark.parametrize("given, b, error, verdict", [
    (True, (2, 2), 0.40, ("b errors 40.0% > 5% at 30.0 rps per pod", False)),  # over errorRatePercent (5)
    (True, (2, 2), 0.05, (None, True)),       # at the line: served
    (True, (2, 2), None, (None, False)),      # no error rate: nothing told either way
    (True, (2, 2), math.nan, (None, False)),
    (True, (2, 0), 0.40, (None, False)),      # no ready pod: the capacity gate's, not the ejection's
    (False, (2, 2), 0.40, (None, False)),     # no share since the last tick: its leftovers' errors
])
def test_b_is_judged_only_on_its_own_errors_at_a_tick_it_had_a_share(given, b, error, verdict):
    obs = build_obs(rate=300.0, weights=(80, 20), b=b, b_extra={"error_rate": error})
    assert judge(build_spec(), obs, given) == verdict


# B's device time over its clock's this tick, the clock's noise line, B's p99 (the target is 200 ms) -> the verdict
DEVICE = {
    "slower than the trigger ratio, users hurt: ejected": (
        (3.0, 1.2), 900.0,
        ("b's device at 3.00x its usual time per unit of work (> 2.00x), its p99 900 ms > 200 ms at 30.0 rps per pod",
         False)),
    "slower, but within the target: served": ((3.0, 1.2), 150.0, (None, True)),
    "over the target at its usual speed: a burst, not its pods": ((1.05, 1.2), 900.0, (None, True)),
    "under the trigger ratio: still useful capacity": ((1.8, 1.2), 900.0, (None, True)),
    "past the ratio but inside a noisy clock's line": ((2.5, 3.0), 900.0, (None, True)),
    "no clock yet: latency alone ejects nothing": ((None, math.inf), 900.0, (None, True)),
}


@pytest.mark.parametrize("device, latency, verdict", DEVICE.values(), ids=DEVICE.keys())
def test_a_b_whose_device_runs_slow_is_failing_its_share(device, latency, verdict):
    obs = build_obs(rate=300.0, weights=(80, 20), b=(2, 2), b_extra={"latency_ms": latency})
    assert judge(build_spec(), obs, True, device) == verdict
    assert judge(build_spec(), obs, False, device) == (None, False)  # no share since the last tick: leftovers


# Each step: (time, B failing, B served) -> (until, ejections in a row) after it.
ROWS = {
    "the first ejection lasts the base time": [
        (0, True, False, (60, 1))],
    "what B shows while ejected changes nothing": [
        (0, True, False, (60, 1)), (15, True, False, (60, 1)), (30, False, True, (60, 1))],
    "a probe that fails again ejects for longer": [
        (0, True, False, (60, 1)), (60, True, False, (180, 2)), (180, True, False, (360, 3))],
    "a probe that serves ends the row": [
        (0, True, False, (60, 1)), (60, False, True, (None, 0)), (75, True, False, (135, 1))],
    "nothing told after an ejection keeps the row": [
        (0, True, False, (60, 1)), (60, False, False, (60, 1)), (90, True, False, (210, 2))],
    "an ejection long after the last starts a new row": [
        (0, True, False, (60, 1)), (400, True, False, (460, 1))],
}


@pytest.mark.parametrize("steps", ROWS.values(), ids=ROWS.keys())
def test_ejections_in_a_row_last_longer_until_a_probe_serves(steps):
    state = Ejection()
    for now, fails, served, (until, count) in steps:
        state = advance(state, "b errors" if fails else None, served, float(now))
        assert (state.until, state.count) == (until, count)


def test_the_ejection_time_grows_with_the_row_up_to_its_most():
    state, now, seconds = Ejection(), 0.0, []
    for _ in range(7):
        state = advance(state, "b errors", False, now)
        seconds.append(state.until - now)
        now = state.until
    assert seconds == [BASE_SECONDS * n for n in range(1, 6)] + [MAX_SECONDS] * 2 and MAX_SECONDS == 5 * BASE_SECONDS


def _overloaded_then_b_fails(tick, restart=False):
    """A overloaded, its excess shifted to B; at the next tick B fails 40% of what it was given."""
    s = Scenario(tick, restart=restart)
    s.warm()
    d = s.at(900.0, rate=500.0, a=(12, 8))  # a ready capacity about 8 x 50 = 400 < 500, four more starting
    assert Reason.OVERLOAD in reasons(d) and d.weights["b"] > 0
    return s, s.at(900.0, rate=500.0, a=(12, 8), b_extra={"error_rate": 0.4})


@pytest.mark.parametrize("restart", [False, True])
def test_a_failing_b_leaves_the_overload_shift_until_its_ejection_ends(tick, restart):
    s, d = _overloaded_then_b_fails(tick, restart)
    ejected = next(e.message for e in d.events if e.reason is Reason.BACKUP_EJECTED)
    assert ejected.startswith("Eject chat-b from the traffic shifts for 60 s (1 in a row): b errors 40.0% > 5% at ")
    assert d.weights == {"a": 100, "b": 0}
    assert "Return all traffic to chat-a" in next(e.message for e in d.events if e.reason is Reason.TRAFFIC_SHIFTED)
    # A still overloaded for the ejection's 60 s: no shift, and the status says why
    for _ in range(3):
        d = s.at(900.0, rate=500.0, a=(12, 8))
        assert d.weights["b"] == 0 and not {Reason.OVERLOAD, Reason.BACKUP_EJECTED} & set(reasons(d))
        assert any("b ejected from the shifts for" in r for r in d.reasons)
    # the ejection over, the next overload shift is the probe
    d = s.at(900.0, rate=500.0, a=(12, 8))
    assert Reason.OVERLOAD in reasons(d) and d.weights["b"] > 0


def test_the_playbook_skips_the_shift_to_an_ejected_b(tick):
    s = Scenario(tick)
    s.warm()
    ejection = Ejection(until=s.t + 45.0, count=1, why="b errors 40.0% > 5% at 30.0 rps per pod")
    s.state = replace(s.state, learned=replace(s.state.learned, ejection=ejection))
    d = s.at(healthy_ms(37.5), rate=300.0, a_extra={"error_rate": 0.2})  # A's own requests fail: the playbook
    assert Reason.EMERGENCY_STARTED in reasons(d) and d.weights["b"] == 0
    skipped = next(e.message for e in d.events if e.reason is Reason.TRAFFIC_SHIFTED)
    assert skipped == ("Skip the shift to chat-b, keep 0%: b errors 40.0% > 5% at 30.0 rps per pod; "
                       "b ejected from the shifts for 45 s more")


def test_an_ejection_survives_a_restart_from_status(tick):
    s, _ = _overloaded_then_b_fails(tick)
    back = EngineState.from_status(json.loads(json.dumps(s.state.to_status())))
    assert back.learned.ejection == s.state.learned.ejection and back.learned.ejection.count == 1


def test_an_ejection_takes_bs_share_in_recovery_and_the_cut_back_too(tick):
    """A slowed-down A's incident, recovering with 30% on B, when B starts failing: the share comes back to A
    at once, the incident recovers and completes as before (the cut-back has nothing left to move)."""
    s = Scenario(tick)
    s.warm()
    d = s.at(healthy_ms(37.5), rate=300.0, a_extra={"error_rate": 0.2})  # A's own requests fail: the playbook
    assert Reason.EMERGENCY_STARTED in reasons(d) and d.weights["b"] == 30
    d = s.at(healthy_ms(37.5), rate=300.0)
    assert d.phase.value == "Recovering" and d.weights["b"] == 30
    d = s.at(healthy_ms(37.5), rate=300.0, b_extra={"error_rate": 0.4})
    assert Reason.BACKUP_EJECTED in reasons(d) and d.weights == {"a": 100, "b": 0}
    shifted = next(e.message for e in d.events if e.reason is Reason.TRAFFIC_SHIFTED)
    assert shifted.startswith("Shift 0% to chat-b (was 30%): b errors 40.0% > 5% at ")
    phases = [s.at(healthy_ms(37.5), rate=300.0) for _ in range(12)]
    assert all(p.weights["b"] == 0 for p in phases)
    assert any(Reason.CUTBACK_COMPLETED in reasons(p) for p in phases)


def test_bs_leftovers_after_its_share_went_eject_nothing(tick):
    """The overload shift over, B's share back on A: B's errors at the next tick are the requests it still
    held (its rate window is longer than a tick), not a shift it failed."""
    s = Scenario(tick)
    s.warm()
    d = s.at(900.0, rate=500.0)  # the excess to B
    assert d.weights["b"] > 0
    d = s.at(healthy_ms(30.0), rate=300.0, a=(12, 12))  # A's new pods carry it: all back to A
    assert d.weights["b"] == 0
    d = s.at(healthy_ms(30.0), rate=300.0, a=(12, 12), b_extra={"rate_rps": 5.0, "error_rate": 0.6})
    assert Reason.BACKUP_EJECTED not in reasons(d) and s.state.learned.ejection == Ejection()


def _b_clocked(factor: float = 1.0) -> dict:
    """B's device time: a batch of 4 items at 4 ms + 0.5 ms per item, `factor` times slower."""
    return {"service_ms": factor * (4.0 + 0.5 * 4), "service_size": 4.0}


def test_bs_clock_learns_while_it_serves_a_share_and_a_slow_b_is_ejected(tick):
    """B's clock learns from ticks it carries a share within its target (not from its leftovers); B 3x slower
    per unit of work and over the target while carrying an overload shift leaves the shifts, as failing B does."""
    s = Scenario(tick)
    s.warm()
    s.at(healthy_ms(37.5), rate=300.0, b_extra=_b_clocked())  # no share: nothing learned
    assert s.state.learned.clocks.get("b") is None or s.state.learned.clocks["b"].samples == 0
    for _ in range(5):
        s.state = replace(s.state, weights={"a": 80, "b": 20})
        d = s.at(healthy_ms(37.5), rate=300.0, b_extra=_b_clocked())
    clock = s.state.learned.clocks["b"]
    assert clock.ready and d.models["b"]["clock"]["samples"] == clock.samples and d.models["b"]["clock"]["ratio"] == 1.0
    back = EngineState.from_status(json.loads(json.dumps(s.state.to_status())))
    assert back.learned.clocks["b"] == clock
    s.state = replace(s.state, weights={"a": 80, "b": 20})
    d = s.at(healthy_ms(37.5), rate=300.0, b_extra={**_b_clocked(3.0), "latency_ms": 900.0})
    ejected = next(e.message for e in d.events if e.reason is Reason.BACKUP_EJECTED)
    assert ejected.startswith("Eject chat-b from the traffic shifts for 60 s (1 in a row): b's device at 3.00x its "
                              "usual time per unit of work (> 2.00x), its p99 900 ms > 200 ms at ")
    assert d.weights["b"] == 0 and s.state.learned.clocks["b"] == clock  # the slow tick is not learned, nor gated


def _b_warm(tick):
    s = Scenario(tick)
    s.warm()
    for _ in range(5):
        s.state = replace(s.state, weights={"a": 80, "b": 20})
        s.at(healthy_ms(37.5), rate=300.0, b_extra=_b_clocked())
    s.state = replace(s.state, weights={"a": 80, "b": 20})
    return s


def test_bs_device_is_not_asked_at_a_tick_its_fleet_changed(tick):
    """New pods' first batches run cold: a slow reading then ejects nothing, and is not learned."""
    s = _b_warm(tick)
    clock = s.state.learned.clocks["b"]
    d = s.at(healthy_ms(37.5), rate=300.0, b=(3, 3), b_extra={**_b_clocked(3.0), "latency_ms": 900.0})
    assert Reason.BACKUP_EJECTED not in reasons(d) and d.models["b"]["clock"]["ratio"] is None
    assert s.state.learned.clocks["b"] == clock


def test_bs_clock_learns_an_overload_tick_over_the_target_as_as_does(tick):
    """B over the target at a load past its model's capacity: a queue, not a slower device, so the tick is a sample."""
    s = _b_warm(tick)
    before = s.state.learned.clocks["b"].samples
    s.at(healthy_ms(37.5), rate=3000.0, b_extra={**_b_clocked(), "latency_ms": 900.0})  # 20% of 3,000 on 2 B pods
    assert s.state.learned.clocks["b"].samples == before + 1
