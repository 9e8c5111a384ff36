"""The act step's first move: the incident's state written to status before the actions that carry it out.

Why: an operator killed between posting EmergencyStarted (or moving a
cut-back step) and the tick's report would otherwise restart from the old
state and start the same incident, or take the same step, again. With the
state written first, a restart resumes; what the kill interrupted is
re-asserted by the next tick (weights, replicas, the runtime precision).
Only when the incident moves, so a steady tick writes nothing here; never in
Preview, which acts on nothing.
"""

from __future__ import annotations

import logging
from typing import Any, Mapping

from ..children import Owner
from ..engine.state import EngineState
from ..engine.types import Decision
from ..forecast_loop.saved_state import save_state
from ..kube.client import KubeApi
from ..status import StatusUpdate, write_status

logger = logging.getLogger(__name__)


def moves_the_incident(before: EngineState, after: EngineState) -> bool:
    """An incident starts, changes stage or ends, or the cut-back takes a step."""
    return (before.incident.stage != after.incident.stage
            or before.incident.cutback_step != after.incident.cutback_step)


async def write_ahead(api: KubeApi, owner: Owner, status: Mapping[str, Any], generation: Any, before: EngineState,
                      decision: Decision) -> StatusUpdate | None:
    """Write the decided state when the incident moves (not in Preview); the update written, or None."""
    if decision.preview or not moves_the_incident(before, decision.state):
        return None
    ahead = StatusUpdate(status, generation)
    save_state(ahead, decision)
    await write_status(api, owner.namespace, owner.name, ahead)
    return ahead


async def undo(api: KubeApi, owner: Owner, ahead: StatusUpdate) -> None:
    """Put back what `ahead` wrote (the actions failed before any event: the retry redoes them all)."""
    try:
        await write_status(api, owner.namespace, owner.name, ahead.undone())
    except Exception as exc:  # noqa: BLE001 - the original error is the one to raise
        logger.warning("%s/%s: could not undo the status written ahead: %s", owner.namespace, owner.name, exc)
