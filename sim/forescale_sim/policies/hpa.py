"""The Kubernetes HPA (autoscaling/v2) on a requests-per-second Pods metric,
as its source defines it.

Modelled: a sync every 15 s; the per-pod rate of each ready pod (a Pods
metric served by a Prometheus adapter, `rate(requests[1m])`) against the
per-pod target; tolerance 0.1; pods still starting count as unready and use
nothing when scaling up; no `spec.behavior`, so the legacy normalization
(5-minute downscale stabilization, scale-up at most to max(2 x current, 4)).
Simplified: every ready pod reports the same per-pod rate (the gateway
balances identical pods), the metric is the last 60 s of arrivals with no
further scrape or adapter delay, and the HPA scales pool A only.
"""

from __future__ import annotations

import math

from .base import Command, View
from .hpa_math import LegacyNormalizer, TOLERANCE, pods_metric_proposal

SYNC_SECONDS = 15.0
METRIC_WINDOW_SECONDS = 60.0


class HpaPolicy:
    """Kubernetes HPA on pool A."""

    name = "hpa"
    interval_seconds = SYNC_SECONDS

    def __init__(self, target_per_pod: float, min_replicas: int = 1, max_replicas: int = 100,
                 tolerance: float = TOLERANCE) -> None:
        self.target_per_pod = target_per_pod
        self.min_replicas = min_replicas
        self.max_replicas = max_replicas
        self.tolerance = tolerance
        self.normalizer = LegacyNormalizer(min_replicas, max_replicas)

    def start(self, view: View) -> Command:
        """Start at the replicas the first minute's rate needs, as an HPA that has been running."""
        n = max(self.min_replicas, math.ceil(view.rate("a", METRIC_WINDOW_SECONDS) / self.target_per_pod))
        self.normalizer.start(view.now, n)
        return Command({"a": n, "b": 0})

    def decide(self, view: View) -> Command:
        current = view.replicas("a")
        if current == 0 and self.min_replicas != 0:
            return Command({"a": current, "b": 0})  # scaling is disabled at 0
        ready = view.ready("a")
        per_pod = view.rate("a", METRIC_WINDOW_SECONDS) / ready if ready else 0.0
        proposal = pods_metric_proposal(current, [per_pod] * ready, current - ready, self.target_per_pod, self.tolerance)
        if proposal is None:
            return Command({"a": current, "b": 0})
        return Command({"a": self.normalizer.normalize(view.now, current, proposal), "b": 0})
