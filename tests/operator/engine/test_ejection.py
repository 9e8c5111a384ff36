"""B's ejection from the traffic shifts while its pods fail the requests they are given."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import pytest

from forescale_operator.engine import EngineState
from forescale_operator.engine.ejection import BASE_SECONDS, MAX_SECONDS, Ejection, advance, failing
from forescale_operator.reasons import Reason

from engine_inputs import build_obs, build_spec
from test_engine_model import Scenario, healthy_ms, reasons


@pytest.mark.parametrize("weights, b, error, fails", [
    ((80, 20), (2, 2), 0.40, True),       # B's own requests fail over errorRatePercent (5)
    ((80, 20), (2, 2), 0.05, False),      # at the line, not over it
    ((80, 20), (2, 2), None, False),      # B reports no errors
    ((80, 20), (2, 2), math.nan, False),  # nor a number
    ((100, 0), (2, 2), 0.40, False),      # B carries nothing: nothing of this tick to tell
    ((80, 20), (2, 0), 0.40, False),      # no ready pod of B
])
def test_b_fails_only_on_its_own_errors_at_a_tick_it_carries_traffic(weights, b, error, fails):
    why = failing(build_spec(), build_obs(rate=300.0, weights=weights, b=b, b_extra={"error_rate": error}))
    assert (why is not None) == fails
    if fails:
        assert why == "b errors 40.0% > 5% at 30.0 rps per pod"


# Each step: (time, B failing, B carrying traffic) -> (until, ejections in a row) after it.
ROWS = {
    "the first ejection lasts the base time": [
        (0, True, True, (60, 1))],
    "what B shows while ejected changes nothing": [
        (0, True, True, (60, 1)), (15, True, True, (60, 1)), (30, False, True, (60, 1))],
    "a probe that fails again doubles the time": [
        (0, True, True, (60, 1)), (60, True, True, (180, 2)), (180, True, True, (420, 3))],
    "a probe that holds ends the row": [
        (0, True, True, (60, 1)), (60, False, True, (None, 0)), (75, True, True, (135, 1))],
    "no traffic after an ejection keeps the row": [
        (0, True, True, (60, 1)), (60, False, False, (60, 1)), (90, True, True, (210, 2))],
}


@pytest.mark.parametrize("steps", ROWS.values(), ids=ROWS.keys())
def test_ejections_in_a_row_double_until_a_probe_holds(steps):
    state = Ejection()
    for now, fails, carrying, (until, count) in steps:
        state = advance(state, "b errors" if fails else None, carrying, float(now))
        assert (state.until, state.count) == (until, count)


def test_the_ejection_time_stops_doubling_at_its_most():
    state, now, seconds = Ejection(), 0.0, []
    for _ in range(7):
        state = advance(state, "b errors", True, now)
        seconds.append(state.until - now)
        now = state.until
    assert seconds == [BASE_SECONDS, 2 * BASE_SECONDS, 4 * BASE_SECONDS, 8 * BASE_SECONDS, MAX_SECONDS, MAX_SECONDS,
                       MAX_SECONDS]


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
