"""The Kubernetes HPA's arithmetic, from its source
(kubernetes/kubernetes pkg/controller/podautoscaler/replica_calculator.go and
horizontal.go). Pure functions, tested against hand-computed tables.

Only the paths the replay uses are modelled: the Pods metric (AverageValue
per pod) for the HPA, the External AverageValue metric for KEDA, and the
legacy normalization an HPA takes when `spec.behavior` is omitted (KEDA's
generated HPA without `advanced.horizontalPodAutoscalerConfig` too).
"""

from __future__ import annotations

import math
from typing import Sequence

TOLERANCE = 0.1
DOWNSCALE_STABILIZATION_SECONDS = 300.0
SCALE_UP_LIMIT_FACTOR = 2.0
SCALE_UP_LIMIT_MINIMUM = 4


def within(ratio: float, tolerance: float = TOLERANCE) -> bool:
    """`1-tol <= r <= 1+tol`, inclusive, as `isWithin` in replica_calculator.go."""
    return 1.0 - tolerance <= ratio <= 1.0 + tolerance


def pods_metric_proposal(current: int, ready_values: Sequence[float], unready: int, target: float,
                         tolerance: float = TOLERANCE) -> int | None:
    """Replica proposal for a Pods metric (mean of per-pod values vs target).

    `ready_values` holds one sample per ready pod; `unready` counts pods still
    starting (Pending). None when no pod has a sample: the HPA then does nothing.
    """
    if not ready_values:
        return None
    usage = sum(ready_values)
    ratio = usage / len(ready_values) / target
    if unready == 0 or ratio <= 1.0:
        return current if within(ratio, tolerance) else math.ceil(ratio * len(ready_values))
    # Scaling up with pods still starting: they count as using nothing.
    count = len(ready_values) + unready
    ratio2 = usage / (target * count)
    if within(ratio2, tolerance) or (ratio > 1.0) != (ratio2 > 1.0):
        return current
    proposal = math.ceil(ratio2 * count)
    if (ratio2 > 1.0 and proposal < current) or (ratio2 < 1.0 and proposal > current):
        return current
    return proposal


def external_average_value_proposal(value: float, target: float, status_replicas: int,
                                    tolerance: float = TOLERANCE) -> int:
    """Replica proposal for an External metric with an AverageValue target
    (KEDA's default): readiness is ignored, the total is divided by the target."""
    if status_replicas > 0 and within(value / (target * status_replicas), tolerance):
        return status_replicas
    return math.ceil(value / target)


class LegacyNormalizer:
    """`normalizeDesiredReplicas` without `spec.behavior`: the highest
    recommendation of the last 300 s (so scale-down waits 5 minutes), then
    clamped to [min, min(max, max(2 x current, 4))]. The first stored
    recommendation is the replica count when the HPA starts."""

    def __init__(self, min_replicas: int, max_replicas: int, window_seconds: float = DOWNSCALE_STABILIZATION_SECONDS) -> None:
        self.min_replicas = min_replicas
        self.max_replicas = max_replicas
        self.window_seconds = window_seconds
        self.recommendations: list[tuple[float, int]] = []

    def start(self, now: float, current: int) -> None:
        self.recommendations = [(now, current)]

    def normalize(self, now: float, current: int, proposal: int) -> int:
        """The replicas the HPA writes after this sync."""
        self.recommendations = [(t, r) for t, r in self.recommendations if t > now - self.window_seconds]
        self.recommendations.append((now, proposal))
        stabilized = max(r for _, r in self.recommendations)
        up_limit = max(int(SCALE_UP_LIMIT_FACTOR * current), SCALE_UP_LIMIT_MINIMUM)
        return max(self.min_replicas, min(stabilized, self.max_replicas, up_limit))
