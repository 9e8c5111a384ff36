"""act/write_ahead.py: the incident's state is written before its actions only when the incident moves, never in
Preview, and an undo puts back exactly what it wrote."""

from __future__ import annotations

from dataclasses import replace

import pytest

from forescale_operator.act.write_ahead import moves_the_incident, undo, write_ahead
from forescale_operator.children import Owner
from forescale_operator.engine.state import EngineState, IncidentState
from forescale_operator.engine.types import Decision
from forescale_operator.phase import Phase

OWNER = Owner(namespace="ml", name="chat", uid="u-1")
STEADY = EngineState()
EMERGENCY = replace(STEADY, incident=IncidentState(stage=Phase.EMERGENCY, started_at=100.0, emergency_weight_b=30))
CUTTING = replace(STEADY, incident=IncidentState(stage=Phase.CUTTING_BACK, started_at=100.0, cutback_step=1))
CUT_MORE = replace(CUTTING, incident=replace(CUTTING.incident, cutback_step=2))


class RecordingApi:
    def __init__(self, fail: bool = False) -> None:
        self.patches: list[dict] = []
        self.fail = fail

    async def patch(self, ref, namespace, name, body, subresource=None):
        if self.fail:
            raise RuntimeError("API down")
        self.patches.append(body["status"])
        return {}


def decision(state: EngineState, phase: Phase, preview: bool = False) -> Decision:
    return Decision(desired_replicas={"a": 2, "b": 1}, weights={"a": 70, "b": 30}, runtime_precision={"a": "int8"},
                    actions=(), phase=phase, events=(), state=state, capacity_rps={"a": 10.0, "b": 10.0},
                    conditions={}, summary="test", preview=preview)


@pytest.mark.parametrize("before, after, moves", [
    (STEADY, STEADY, False),
    (STEADY, EMERGENCY, True),       # an incident starts
    (EMERGENCY, CUTTING, True),      # changes stage
    (CUTTING, CUT_MORE, True),       # the cut-back takes a step
    (CUT_MORE, STEADY, True),        # ends
    (EMERGENCY, replace(EMERGENCY, learned=replace(EMERGENCY.learned, forecast_spike=True)), False),  # learning only
])
def test_moves_the_incident(before: EngineState, after: EngineState, moves: bool) -> None:
    assert moves_the_incident(before, after) is moves


@pytest.mark.parametrize("before, after, phase, preview, written", [
    (STEADY, STEADY, Phase.STABLE, False, False),
    (STEADY, EMERGENCY, Phase.EMERGENCY, False, True),
    (STEADY, EMERGENCY, Phase.EMERGENCY, True, False),  # Preview acts on nothing, so nothing is written ahead
])
async def test_write_ahead_only_when_the_incident_moves(before, after, phase, preview, written) -> None:
    api = RecordingApi()
    ahead = await write_ahead(api, OWNER, {"phase": "Stable"}, 3, before, decision(after, phase, preview))
    assert (ahead is not None) is written
    assert len(api.patches) == int(written)
    if written:
        assert api.patches[0]["phase"] == "Emergency" and "engine" in api.patches[0]


async def test_undo_puts_back_what_was_written_and_never_raises() -> None:
    api = RecordingApi()
    ahead = await write_ahead(api, OWNER, {"phase": "Stable"}, 3, STEADY, decision(EMERGENCY, Phase.EMERGENCY))
    await undo(api, OWNER, ahead)
    assert api.patches[-1]["phase"] == "Stable"
    await undo(RecordingApi(fail=True), OWNER, ahead)  # logged, not raised: the actions' error is the one to raise
