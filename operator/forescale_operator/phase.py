"""The phases of an InferenceDeployment.

A plain enum with no kopf or kubernetes import, shared by the decision
engine, the status writer and the simulator. Condition types and reasons are
in `reasons.py`.
"""

from __future__ import annotations

from enum import Enum

# Only for the decision engine's `from forescale_operator.phase import ConditionType` (engine/report.py);
# everything else imports it from reasons.py, where it is defined.
from .reasons import ConditionType  # noqa: F401


class Phase(str, Enum):
    """Where an InferenceDeployment stands. Exactly one at a time."""

    #: the children exist but are not ready yet
    PENDING = "Pending"
    #: ready replicas match the desired ones, latency under the SLO
    STABLE = "Stable"
    #: desired replicas differ from ready replicas
    SCALING = "Scaling"
    #: the incident playbook is active (traffic shifted to pool B)
    EMERGENCY = "Emergency"
    #: latency is back under the SLO; waiting out cutback.stableSeconds
    RECOVERING = "Recovering"
    #: traffic moves back to pool A step by step
    CUTTING_BACK = "CuttingBack"
    #: the SLO cannot be met within maxReplicas, or metrics are unavailable
    DEGRADED = "Degraded"
    #: the spec cannot be acted on; see the InvalidSpec event
    INVALID = "Invalid"


#: the phases of an incident: the engine's to end, at a tick; never readiness's
INCIDENT_PHASES = frozenset({Phase.EMERGENCY, Phase.RECOVERING, Phase.CUTTING_BACK})
