"""Rule 5: Preview computes everything and acts on nothing."""

from __future__ import annotations

from forescale_operator.engine import ActionKind, EngineState
from forescale_operator.phase import Phase
from forescale_operator.reasons import Reason

from conftest import build_forecast, build_obs, build_spec


def test_preview_reports_what_it_would_do_and_returns_an_inert_decision(tick):
    spec = build_spec(mode="Preview")
    d = tick(spec, EngineState(), build_obs(rate=300.0, latency=450.0, a=(2, 2), b=(2, 2)), build_forecast(0.0, 600.0))
    # What the operator applies in Preview: the minimums, 100/0, template precision, nothing else.
    assert d.preview
    assert d.desired_replicas == {"a": 2, "b": 1}  # the spec minimums
    assert d.weights == {"a": 100, "b": 0}
    assert d.runtime_precision == {"a": "fp16", "b": "int8"}
    assert d.actions == ()
    # What Auto would do, in full.
    assert d.would is not None and not d.would.preview
    assert d.would.desired_replicas["a"] > 2
    assert [a.kind for a in d.would.actions][:2] == [ActionKind.SHIFT_TRAFFIC, ActionKind.DOWNGRADE_PRECISION]
    assert d.phase is Phase.EMERGENCY
    assert d.events and all(e.message.startswith("Preview: would ") for e in d.events)
    assert [e.reason for e in d.events] == [e.reason for e in d.would.events]
    shift = next(e for e in d.events if e.reason is Reason.TRAFFIC_SHIFTED)
    assert shift.message.startswith("Preview: would shift 30% to chat-b: p99 450 ms > 2.0 x SLO 200 ms")
    assert d.summary.startswith("Preview: would be Emergency: ")


def test_preview_events_only_on_transitions(tick):
    spec = build_spec(mode="Preview")
    first = tick(spec, EngineState(), build_obs(t=0.0, rate=300.0, latency=450.0), build_forecast(0.0, 300.0))
    second = tick(spec, first.state, build_obs(t=15.0, rate=300.0, latency=450.0), build_forecast(15.0, 300.0))
    assert Reason.EMERGENCY_STARTED in [e.reason for e in first.events]
    assert Reason.EMERGENCY_STARTED not in [e.reason for e in second.events]
    assert second.actions == () and second.weights == {"a": 100, "b": 0}


def test_auto_is_not_a_preview(tick):
    d = tick(build_spec(), EngineState(), build_obs(rate=300.0, latency=450.0), build_forecast(0.0, 300.0))
    assert not d.preview and d.would is None and d.actions


def test_a_preview_decision_serialises_with_what_it_would_do(tick):
    import json

    spec = build_spec(mode="Preview")
    d = tick(spec, EngineState(), build_obs(rate=300.0, latency=450.0, a=(2, 2), b=(2, 2)), build_forecast(0.0, 600.0))
    out = json.loads(json.dumps(d.to_dict()))
    assert out["preview"] is True and out["actions"] == []
    assert out["would"]["actions"][0] == {"kind": "SHIFT_TRAFFIC", "pool": None,
                                          "params": {"weights": {"a": 70, "b": 30}},
                                          "message": d.would.actions[0].message}
    assert out["events"][0]["type"] == "Warning" and out["events"][0]["reason"] == "EmergencyStarted"
