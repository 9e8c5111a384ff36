"""The status vocabulary: phases and condition types (DESIGN.md §2).

Plain enums with no kopf or kubernetes import, shared by the decision engine,
the status writer and the simulator.
"""

from __future__ import annotations

from enum import Enum


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


class ConditionType(str, Enum):
    """Typed conditions in status.conditions. Each starts as Unknown."""

    READY = "Ready"
    METRICS_AVAILABLE = "MetricsAvailable"
    FORECAST_READY = "ForecastReady"
    EMERGENCY = "Emergency"

