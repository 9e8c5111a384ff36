"""KEDA's ScaledObject with the Prometheus scaler, as KEDA's source defines it.

Modelled: the query `sum(rate(requests_total[1m]))` against `threshold`
(= the per-pod target) as an External AverageValue metric of the generated
HPA, synced every 15 s and queried live (no `useCachedMetrics`); tolerance
0.1 on `v / (threshold x status.replicas)`; the legacy HPA normalization
(no `advanced.horizontalPodAutoscalerConfig`); and KEDA's own loop every
30 s (`pollingInterval`) for activation (`v > activationThreshold`, strict)
and the scale to zero after `cooldownPeriod` (300 s) when minReplicaCount is 0.
Simplified: the replay uses minReplicaCount 1 (a GPU service with a 90 s
start-up is not scaled to zero), which makes activation moot in the replay
(the unit tests exercise it with 0); no fallback (metrics never fail here).
"""

from __future__ import annotations

import math

from .base import Command, View
from .hpa_math import LegacyNormalizer, TOLERANCE, external_average_value_proposal

SYNC_SECONDS = 15.0
POLLING_SECONDS = 30.0
COOLDOWN_SECONDS = 300.0
QUERY_WINDOW_SECONDS = 60.0


class KedaPolicy:
    """KEDA (ScaledObject + Prometheus scaler) on pool A."""

    name = "keda"
    interval_seconds = SYNC_SECONDS

    def __init__(self, target_per_pod: float, min_replica_count: int = 1, max_replica_count: int = 100,
                 activation_threshold: float = 0.0, cooldown_seconds: float = COOLDOWN_SECONDS,
                 tolerance: float = TOLERANCE) -> None:
        self.target_per_pod = target_per_pod
        self.min_replica_count = min_replica_count
        self.activation_threshold = activation_threshold
        self.cooldown_seconds = cooldown_seconds
        self.tolerance = tolerance
        # the generated HPA: minReplicas = max(minReplicaCount, 1)
        self.normalizer = LegacyNormalizer(max(1, min_replica_count), max_replica_count)
        self.last_active: float | None = None
        self.next_poll = 0.0

    def start(self, view: View) -> Command:
        n = max(self.min_replica_count, math.ceil(view.rate("a", QUERY_WINDOW_SECONDS) / self.target_per_pod))
        self.normalizer.start(view.now, n)
        self.last_active = view.now
        self.next_poll = view.now + POLLING_SECONDS
        return Command({"a": n, "b": 0})

    def operator_poll(self, now: float, current: int, value: float) -> int:
        """KEDA's own loop: activation from 0 and deactivation to 0. Returns replicas."""
        active = value > self.activation_threshold
        if active:
            self.last_active = now
            if current == 0:
                return max(self.min_replica_count, 1)
            return current
        if current > 0 and self.min_replica_count == 0:
            since = self.last_active if self.last_active is not None else now
            if since + self.cooldown_seconds < now:
                return 0
        if current < self.min_replica_count:
            return self.min_replica_count
        return current

    def hpa_sync(self, now: float, current: int, value: float) -> int:
        """The generated HPA's sync. At 0 replicas it is disabled (KEDA owns 0 <-> 1)."""
        if current == 0:
            return 0
        proposal = external_average_value_proposal(value, self.target_per_pod, current, self.tolerance)
        return self.normalizer.normalize(now, current, proposal)

    def decide(self, view: View) -> Command:
        value = view.rate("a", QUERY_WINDOW_SECONDS)
        current = view.replicas("a")
        if view.now >= self.next_poll:
            self.next_poll += POLLING_SECONDS
            polled = self.operator_poll(view.now, current, value)
            if polled != current:
                return Command({"a": polled, "b": 0})
        return Command({"a": self.hpa_sync(view.now, current, value), "b": 0})
