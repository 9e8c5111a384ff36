"""A spec the schema could not catch: phase Invalid, Ready=False, one Warning event; nothing touched."""

from __future__ import annotations

import logging
from typing import Any, Mapping

from ..phase import Phase
from ..reasons import ConditionType, Reason
from ..spec import SpecError
from ..status import StatusUpdate, write_status
from .deps import HandlerDeps

logger = logging.getLogger(__name__)


async def mark_invalid(body: Mapping[str, Any], error: SpecError | ValueError | Exception, deps: HandlerDeps,
                       reason: Reason = Reason.INVALID_SPEC) -> None:
    """Report the bad field; post the event only when the problem is new (not on every retry or resume)."""
    meta = body["metadata"]
    status = body.get("status") or {}
    message = str(error)
    ready = next((c for c in status.get("conditions") or [] if c.get("type") == ConditionType.READY.value), {})
    is_new = status.get("phase") != Phase.INVALID.value or ready.get("message") != message
    update = StatusUpdate(status, meta.get("generation"))
    update.phase(Phase.INVALID)
    update.condition(ConditionType.READY, False, reason.value, message)
    update.observed_generation(meta.get("generation", 1))
    await write_status(deps.api, meta["namespace"], meta["name"], update)
    if deps.telemetry is not None:
        # Its series say Invalid too: left at the phase before (an Emergency, say), the chart's
        # ForescaleEmergencyTooLong would fire for a resource the operator no longer acts on.
        deps.telemetry.record_phase(meta["namespace"], meta["name"], Phase.INVALID.value,
                                    update.phase_since())
    if is_new:
        logger.warning("%s/%s: invalid spec: %s", meta["namespace"], meta["name"], message)
        prefix = {Reason.INVALID_SPEC: "Invalid spec", Reason.ADOPTION_REFUSED: "Cannot adopt"}.get(reason, "Cannot converge")
        await deps.events.post(reason, f"{prefix}, no child changed: {message}")
