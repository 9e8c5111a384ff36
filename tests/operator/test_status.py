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
