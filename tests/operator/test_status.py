"""Status setters: conditions start Unknown, transitions keep or move their time, the patch holds changes only."""

from __future__ import annotations

import pytest

from forescale_operator.phase import Phase
from forescale_operator.reasons import ConditionType
from forescale_operator.status import StatusUpdate
from forescale_operator.weights import Weights


def test_a_new_status_starts_every_condition_unknown():
    patch = StatusUpdate(None).patch
    assert [c["type"] for c in patch["conditions"]] == ["Ready", "MetricsAvailable", "ForecastReady", "Emergency",
                                                        "AdminReady"]
    assert {c["status"] for c in patch["conditions"]} == {"Unknown"}


def test_setters_fill_the_patch_and_unchanged_values_are_left_out():
    update = StatusUpdate(None, generation=3)
    update.phase(Phase.STABLE)
    update.pool("a", replicas=2, ready=2, desired=2, precision="fp16")
    update.weights(Weights(100, 0))
    update.observed_generation(3)
    patch = update.patch
    assert patch["phase"] == "Stable" and patch["weights"] == {"a": 100, "b": 0} and patch["observedGeneration"] == 3
    assert patch["pools"]["a"] == {"replicas": 2, "readyReplicas": 2, "desiredReplicas": 2, "precision": "fp16",
                                   "summary": "2/2"}
    again = StatusUpdate({**patch}, generation=3)
    again.phase(Phase.STABLE)
    again.pool("a", replicas=2, ready=2, desired=2, precision="fp16")
    again.weights(Weights(100, 0))
    assert again.patch == {}


def test_condition_time_moves_only_when_its_status_flips():
    first = StatusUpdate(None)
    first.condition(ConditionType.READY, False, "PoolsNotReady", "a 0/2 ready")
    status = {"conditions": first.patch["conditions"]}
    status["conditions"][0]["lastTransitionTime"] = "2020-01-01T00:00:00Z"
    same = StatusUpdate(status)
    same.condition(ConditionType.READY, False, "PoolsNotReady", "a 1/2 ready")
    ready = next(c for c in same.patch["conditions"] if c["type"] == "Ready")
    assert ready["lastTransitionTime"] == "2020-01-01T00:00:00Z" and ready["message"] == "a 1/2 ready"
    flipped = StatusUpdate(status)
    flipped.condition(ConditionType.READY, True, "PoolsReady", "a 2/2 ready")
    ready = next(c for c in flipped.patch["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True" and ready["lastTransitionTime"] != "2020-01-01T00:00:00Z"


def test_weights_must_sum_to_one_hundred():
    import pytest
    with pytest.raises(ValueError, match="sum to 100"):
        Weights(70, 20)
    assert str(Weights(70, 30)) == "70/30"


@pytest.mark.parametrize("before", [
    pytest.param({"phase": "Stable", "engine": "{}", "cutback": {"step": 0, "nextAt": None}}, id="all-set"),
    pytest.param({"phase": "Stable"}, id="engine-and-cutback-absent"),
])
def test_an_update_undone_puts_back_exactly_what_it_changed(before):
    ahead = StatusUpdate(before)
    ahead.phase(Phase.EMERGENCY)
    ahead.engine_state({"incident": {"stage": "Emergency"}})
    ahead.cutback(0, None)
    back = ahead.undone().patch
    written = {**before, **ahead.patch}
    assert {key: back.get(key, written.get(key)) for key in ("phase", "engine", "cutback")} == {
        key: before.get(key) for key in ("phase", "engine", "cutback")}
    assert "conditions" not in back  # only what the update wrote goes back


def test_a_condition_set_twice_in_one_update_ending_as_it_was_is_not_written():
    """The tick sets Ready from readiness, then from the engine: True in between, False (Degraded) at the end.
    Measured against the object, not the value in between, Ready did not transition: same time, no write."""
    first = StatusUpdate(None)
    first.condition(ConditionType.READY, False, "Degraded", "metrics unavailable: replicas and weights held")
    status = {"conditions": first.patch["conditions"]}
    status["conditions"][0]["lastTransitionTime"] = "2020-01-01T00:00:00Z"
    tick = StatusUpdate(status)
    tick.condition(ConditionType.READY, True, "PoolsReady", "a 2/2 ready, b 0/0 ready")
    tick.condition(ConditionType.READY, False, "Degraded", "metrics unavailable: replicas and weights held")
    assert tick.patch == {}
    flips = StatusUpdate(status)
    flips.condition(ConditionType.READY, False, "PoolsNotReady", "a 0/2 ready")
    flips.condition(ConditionType.READY, True, "PoolsReady", "a 2/2 ready")
    ready = next(c for c in flips.patch["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True" and ready["lastTransitionTime"] != "2020-01-01T00:00:00Z"


_STEADY = {
    "phase": "Stable", "lastTransitionTime": "2020-01-01T00:00:00Z", "engine": '{"v":1}', "forecast": {"peakRate": 40.0, "model": "lstm"}, "lastDecision": "Stable",
    "weights": {"a": 100, "b": 0},
    "pools": {"a": {"desiredReplicas": 2, "readyReplicas": 2, "summary": "2/2", "capacityRps": 20.0,
                    "model": {"health": 1.0}}},
    "conditions": [{"type": t.value, "status": "True", "reason": "Seen", "message": "p99 40 ms",
                    "lastTransitionTime": "2020-01-01T00:00:00Z", "observedGeneration": 3} for t in ConditionType],
}


@pytest.mark.parametrize("change, pressing", [
    pytest.param(lambda u: None, False, id="nothing"),
    pytest.param(lambda u: u.engine_state({"v": 2}), False, id="learned-state"),
    pytest.param(lambda u: u.forecast(peakRate=41.0), False, id="forecast-numbers"),
    pytest.param(lambda u: u.last_decision("Stable, 41 rps"), False, id="summary"),
    pytest.param(lambda u: u.pool("a", capacity_rps=21.0, model={"health": 1.1}), False, id="fitted-model"),
    pytest.param(lambda u: u.condition(ConditionType.READY, True, "Seen", "p99 41 ms"), False, id="condition-message"),
    pytest.param(lambda u: u.condition(ConditionType.READY, False, "Seen", "p99 41 ms"), True, id="condition-status"),
    pytest.param(lambda u: u.condition(ConditionType.READY, True, "Other", "p99 40 ms"), True, id="condition-reason"),
    pytest.param(lambda u: u.phase(Phase.SCALING), False, id="phase-stable-to-scaling-observed"),
    pytest.param(lambda u: u.phase(Phase.EMERGENCY), True, id="phase-into-an-incident"),
    pytest.param(lambda u: u.phase(Phase.DEGRADED), True, id="phase-degraded"),
    pytest.param(lambda u: u.pool("a", desired=3), False, id="decided-replicas-on-the-deployment"),
    pytest.param(lambda u: u.pool("b", capacity_rps=5.0), True, id="a-pool's-first-value"),
    pytest.param(lambda u: u.weights(Weights(70, 30)), True, id="weights"),
    pytest.param(lambda u: u.cutback(1, None), True, id="cutback-step"),
    pytest.param(lambda u: u.preview({"weights": {"a": 100, "b": 0}}), True, id="preview"),
])
def test_only_what_an_sre_or_a_restart_needs_now_is_pressing(change, pressing):
    update = StatusUpdate(_STEADY, generation=3)
    change(update)
    assert bool(update.pressing_fields()) is pressing


@pytest.mark.parametrize("field", ["engine", "forecast", "lastDecision"])
def test_a_refreshed_fields_first_value_is_pressing(field):
    update = StatusUpdate({k: v for k, v in _STEADY.items() if k != field}, generation=3)
    {"engine": lambda: update.engine_state({"v": 1}), "forecast": lambda: update.forecast(peakRate=1.0),
     "lastDecision": lambda: update.last_decision("Stable")}[field]()
    assert update.pressing_fields()


def test_a_new_generation_is_pressing_through_the_conditions():
    update = StatusUpdate(_STEADY, generation=4)
    update.condition(ConditionType.READY, True, "Seen", "p99 40 ms")
    assert update.pressing_fields() and update.value("phase") == "Stable"


@pytest.mark.parametrize("before, phases, moved", [
    ({"phase": "Stable", "lastTransitionTime": "2020-01-01T00:00:00Z"}, [Phase.STABLE], False),
    ({"phase": "Stable", "lastTransitionTime": "2020-01-01T00:00:00Z"}, [Phase.EMERGENCY], True),
    # readiness first, then the engine's phase, ending as the object has it: no transition
    ({"phase": "Emergency", "lastTransitionTime": "2020-01-01T00:00:00Z"}, [Phase.STABLE, Phase.EMERGENCY], False),
    ({"phase": "Stable"}, [Phase.STABLE], True),  # an object from before the field: filled in once
    (None, [Phase.PENDING], True),                # a new object
])
def test_the_phases_transition_time_moves_only_when_the_phase_does(before, phases, moved):
    update = StatusUpdate(before)
    for phase in phases:
        update.phase(phase)
    since = update.value("lastTransitionTime")
    assert ("lastTransitionTime" in update.patch) is moved
    assert since is not None and (since != "2020-01-01T00:00:00Z") is moved


T0, T1 = "2020-01-01T00:00:00Z", 1_600_000_000.0  # the object's transition time; this tick's clock


@pytest.mark.parametrize("phase, unwritten, since", [
    (Phase.SCALING, None, "2020-09-13T12:26:40Z"),                      # a move: this tick's clock, not the wall's
    (Phase.SCALING, ("Scaling", "2020-09-13T12:26:25Z"), "2020-09-13T12:26:25Z"),  # moved last tick, not written
    (Phase.EMERGENCY, ("Scaling", "2020-09-13T12:26:25Z"), "2020-09-13T12:26:40Z"),  # another move than that one
    (Phase.STABLE, ("Scaling", "2020-09-13T12:26:25Z"), T0),                   # moved back: no transition at all
])
def test_a_move_a_tick_did_not_write_keeps_its_time_at_the_next(phase, unwritten, since):
    """Stable -> Scaling waits for the refresh: the tick that writes it says when the phase moved, not when it wrote."""
    update = StatusUpdate({"phase": "Stable", "lastTransitionTime": T0}, now=T1, unwritten_phase=unwritten)
    update.phase(phase)
    assert update.value("lastTransitionTime") == since
    assert update.unwritten_transition() == (None if since == T0 else (phase.value, since))


@pytest.mark.parametrize("observed, decided", [
    pytest.param(lambda u: u.weights(Weights(100, 0)), lambda u: u.weights(Weights(70, 30)), id="weights"),
    pytest.param(lambda u: u.phase(Phase.SCALING), lambda u: u.phase(Phase.STABLE), id="phase"),
    pytest.param(lambda u: u.pool("a", desired=3), lambda u: u.pool("a", desired=2), id="pool-replicas"),
    pytest.param(lambda u: u.forecast(peakRate=1.0), lambda u: u.forecast(peakRate=41.0), id="section"),
])
def test_the_last_setter_wins_even_when_it_sets_the_objects_value_back(observed, decided):
    """The tick sets weights from the route it observed (100/0 with `router: none`), then from the engine (70/30,
    as status already holds during an overload shift): the engine's value stands, so nothing is written. Before,
    the observed value stayed in the patch and status flipped between the two on every tick."""
    status = {**_STEADY, "weights": {"a": 70, "b": 30}, "forecast": {"peakRate": 41.0, "model": "lstm"}}
    update = StatusUpdate(status, generation=3)
    observed(update)
    decided(update)
    assert update.patch == {} and not update.pressing_fields()


def test_a_pools_summary_counts_what_was_set_earlier_in_the_same_update():
    update = StatusUpdate(_STEADY, generation=3)
    update.pool("a", ready=3, desired=2)
    update.pool("a", desired=4)
    assert update.patch["pools"]["a"] == {"readyReplicas": 3, "desiredReplicas": 4, "summary": "3/4"}
    assert update.pressing_fields() == []  # all refreshed: the scale is on the Deployment and in its event


@pytest.mark.parametrize("ready, desired, first, pressing", [
    (3, 2, False, []),  # a pod came ready: the Deployment shows it at once; status at the refresh
    (2, 3, False, []),  # the operator decided: on the Deployment and in a ScaledUp event now, status at the refresh
    (2, 3, True, ["pools.b.desiredReplicas", "pools.b.readyReplicas", "pools.b.summary"]),  # a pool's first values
])
def test_replica_counts_are_refreshed_once_a_pool_has_them(ready, desired, first, pressing):
    update = StatusUpdate(_STEADY, generation=3)
    update.pool("b" if first else "a", ready=ready, desired=desired)
    assert sorted(update.pressing_fields()) == pressing


@pytest.mark.parametrize("preview, pressing", [
    ({"weights": {"a": 100, "b": 0}, "desiredReplicas": {"a": 2, "b": 1}}, ["lastDecision"]),  # Preview
    (None, []),  # Auto: the summary waits for the refresh
])
def test_in_preview_each_decisions_summary_is_written(preview, pressing):
    """DESIGN.md, Preview mode: each decision is reported in status.lastDecision (nothing else acts)."""
    update = StatusUpdate({**_STEADY, "preview": preview}, generation=3)
    update.preview(preview)
    update.last_decision("Preview: would scale chat-a from 2 to 3")
    assert update.pressing_fields() == pressing


@pytest.mark.parametrize("phase, pressing", [
    (Phase.SCALING, False),     # the Deployments catching up with a scale: observed, refreshed
    (Phase.STABLE, False),
    (Phase.EMERGENCY, True),    # the playbook: written on the tick
    (Phase.DEGRADED, True),
])
def test_readys_reason_is_pressing_as_the_phase_it_names(phase, pressing):
    steady = {**_STEADY, "conditions": [{**c, "reason": "Stable"} if c["type"] == ConditionType.READY.value else c
                                        for c in _STEADY["conditions"]]}
    update = StatusUpdate(steady, generation=3)
    update.phase(phase)
    update.condition(ConditionType.READY, True, phase.value, "p99 40 ms")
    assert bool(update.pressing_fields()) is pressing
