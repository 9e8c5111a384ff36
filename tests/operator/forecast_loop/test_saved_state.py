"""Where the tick's engine state comes from: the state kept in memory while status still holds what it superseded,
else status (forecast_loop/saved_state.py, memory.py), and when status is written (handlers/tick.py status_due)."""

from __future__ import annotations

import json

import pytest

from forescale_operator.children import Owner
from forescale_operator.engine.state import EngineState
from forescale_operator.forecast_loop.memory import ResourceMemory
from forescale_operator.forecast_loop.saved_state import load_state
from forescale_operator.handlers.tick import STATUS_REFRESH_STEPS, status_due

OWNER = Owner(namespace="ml", name="chat", uid="u-1")
OLD = EngineState(weights={"a": 100, "b": 0})
NEW = EngineState(weights={"a": 70, "b": 30})
OLD_JSON, NEW_JSON = (json.dumps(s.to_status()) for s in (OLD, NEW))
NEWER = EngineState(weights={"a": 90, "b": 10})


@pytest.mark.parametrize("in_status, starts_from", [
    pytest.param(NEW_JSON, NEWER, id="status-holds-our-last-write"),
    pytest.param(OLD_JSON, NEWER, id="a-watch-event-lagging-behind-our-write"),
    pytest.param(json.dumps(EngineState(weights={"a": 50, "b": 50}).to_status()), "status", id="changed-under-us"),
    pytest.param(None, "status", id="status-emptied"),
])
def test_the_kept_state_is_used_while_status_holds_what_it_superseded(in_status, starts_from):
    memory = ResourceMemory()
    memory.keep(NEWER, NEW_JSON, OLD_JSON)  # a tick wrote NEW over OLD, then learned NEWER without a write
    state = load_state({"engine": in_status}, OWNER, memory, now=1000.0, mono=50.0, cutback_interval_s=60.0)
    want = NEWER if starts_from is NEWER else EngineState.from_status(json.loads(in_status) if in_status else None)
    assert state.weights == want.weights


STEP = 15.0


@pytest.mark.parametrize("pressing, written_ago, due", [
    pytest.param(["phase"], 0.0, True, id="pressing"),
    pytest.param([], None, True, id="never-written"),
    pytest.param([], (STATUS_REFRESH_STEPS - 1) * STEP, False, id="three-steps"),
    # the write's tick started 2 s late, this one on time: still the fourth step's refresh, not the fifth's
    pytest.param([], STATUS_REFRESH_STEPS * STEP - 2.0, True, id="fourth-step-after-a-late-tick"),
])
def test_status_is_written_when_pressing_or_every_few_steps(pressing, written_ago, due):
    memory = ResourceMemory()
    memory.status_written_at = None if written_ago is None else 500.0 - written_ago
    assert status_due(pressing, memory, 500.0, STEP) is due
