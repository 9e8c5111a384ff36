"""EngineState's round trip through status, and clear errors on bad input."""

from __future__ import annotations

import json

import pytest

from forescale_operator.engine import EngineParams, EngineState, StateError
from forescale_operator.phase import Phase

from conftest import build_forecast, build_obs, build_spec


@pytest.mark.parametrize("raw", [None, {}], ids=["none", "empty"])
def test_nothing_stored_gives_the_initial_state(raw):
    state = EngineState.from_status(raw)
    assert state == EngineState()
    assert state.phase is Phase.PENDING and state.weights == {"a": 100, "b": 0}


def test_round_trip_through_json_is_exact(tick):
    d = tick(build_spec(), EngineState(), build_obs(rate=300.0, latency=450.0, a=(8, 8), b=(2, 2)), build_forecast(0.0, 300.0))
    status = d.state.to_status()
    text = json.dumps(status)
    assert len(text) < 2000, "status must stay small"
    assert EngineState.from_status(json.loads(text)) == d.state
    # 450 ms over the 200 ms SLO: the estimate found the knee, and that survives a restart
    assert EngineState.from_status(json.loads(text)).capacity["a/fp16"].overloaded


def test_a_status_written_before_the_overloaded_flag_reads_as_not_overloaded():
    state = EngineState.from_status({"capacity": {"a/fp16": {"rps": 40.0, "ceiling": 40.0, "samples": 9}}})
    assert state.capacity["a/fp16"].rps == 40.0 and not state.capacity["a/fp16"].overloaded


@pytest.mark.parametrize(
    "raw, field",
    [
        pytest.param({"phase": "Sleeping"}, "phase", id="unknown-phase"),
        pytest.param({"weights": {"a": 70, "b": "thirty"}}, "weights.b", id="weight-not-int"),
        pytest.param({"weights": {"a": 170, "b": 0}}, "weights.a", id="weight-over-100"),
        pytest.param({"cutback": {"step": -1}}, "cutback.step", id="negative-step"),
        pytest.param({"history": {"a": [[1.0]]}}, "history.a[0]", id="history-entry-short"),
        pytest.param({"capacity": {"a/fp16": {"rps": "fast"}}}, "capacity.a/fp16.rps", id="capacity-not-number"),
        pytest.param({"capacity": {"a/fp16": {"rps": 5.0, "overloaded": "yes"}}}, "capacity.a/fp16.overloaded", id="overloaded-not-bool"),
        pytest.param({"metricsUnavailable": "no"}, "metricsUnavailable", id="flag-not-bool"),
        pytest.param({"underSloSince": True}, "underSloSince", id="time-is-bool"),
        pytest.param(["not", "an", "object"], "", id="not-an-object"),
    ],
)
def test_bad_state_names_the_field(raw, field):
    with pytest.raises(StateError) as err:
        EngineState.from_status(raw)
    assert err.value.field == field
    assert f"engine state {field}:" in str(err.value)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        ({"fallback_capacity_rps": 0}, "fallback_capacity_rps"),
        ({"target_utilization": 1.5}, "target_utilization"),
        ({"queue_growth_ticks": 0}, "queue_growth_ticks"),
        ({"stabilization_seconds": -1}, "stabilization_seconds"),
        ({"precision_speed": {"int8": 0}}, "precision_speed['int8']"),
    ],
)
def test_bad_params_are_refused_by_name(kwargs, name):
    with pytest.raises(ValueError) as err:
        EngineParams(**kwargs)
    assert str(err.value).startswith(f"EngineParams.{name}:")
