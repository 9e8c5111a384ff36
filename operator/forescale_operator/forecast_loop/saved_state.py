"""The engine's state as the tick starts from it and saves it: read back from status, with the wall clock's jumps
taken out (`load_state`), and written into a status update (`save_state`: the tick's write-ahead and its report).

The engine is pure; what it remembers between ticks lives in
`status.engine` (compact JSON, engine/state.py), written at most every few
steps unless something pressing changed (status.py): between writes the
operator starts from the state it kept in memory, as long as status still
holds what that state superseded. A state that cannot be read
(hand-edited, or from a newer operator) is logged and started afresh rather
than stopping the loop. Times are then moved by a wall-clock jump since the
last tick, and bounded after a restart (clock_jumps.py).
"""

from __future__ import annotations

import json
import logging
from typing import Any, Mapping

from ..children import Owner
from ..engine.state import EngineState, StateError
from ..engine.types import Decision
from ..kube.timestamps import rfc3339
from ..status import StatusUpdate
from .clock_jumps import bound_times, shift_times
from .memory import ResourceMemory

logger = logging.getLogger(__name__)


def load_state(status: Mapping[str, Any], owner: Owner, memory: ResourceMemory, *, now: float, mono: float,
               cutback_interval_s: float) -> EngineState:
    """The state saved in `status.engine`, moved by the wall clock's jump since the last tick and bounded to `now`."""
    raw = status.get("engine")
    state = memory.kept_state(raw)
    if state is None:
        try:
            state = EngineState.from_status(json.loads(raw) if isinstance(raw, str) and raw else None)
        except (StateError, ValueError) as exc:
            logger.warning("%s/%s: unreadable engine state in status (%s); starting afresh", owner.namespace,
                           owner.name, exc)
            state = EngineState()
    jumped = memory.clock.jump(now, mono)
    if jumped:
        logger.warning("%s/%s: the wall clock jumped %+.0f s; the incident's times move with it", owner.namespace,
                       owner.name, jumped)
        state = shift_times(state, jumped)
    return bound_times(state, now, cutback_interval_s)


def save_state(update: StatusUpdate, decision: Decision) -> None:
    """What a restart resumes from: the phase, the engine's state and the cut-back step."""
    state = decision.state
    update.phase(decision.phase)
    update.engine_state(state.to_status())
    update.cutback(state.incident.cutback_step, rfc3339(state.incident.cutback_next_at))
