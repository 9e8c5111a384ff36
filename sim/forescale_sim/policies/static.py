"""Static peak provisioning: pool A sized once, for the trace's peak 60 s
rate at the peers' per-pod target, and never changed. What many GPU
services run today; the cost ceiling of the comparison."""

from __future__ import annotations

import math

from .base import Command, View


class StaticPolicy:
    """A fixed pool A."""

    name = "static"
    interval_seconds = 3600.0 * 24 * 365

    def __init__(self, target_per_pod: float, peak_rps: float, min_replicas: int = 1) -> None:
        self.target_per_pod = target_per_pod
        self.replicas = max(min_replicas, math.ceil(peak_rps / target_per_pod))

    def start(self, view: View) -> Command:
        return Command({"a": self.replicas, "b": 0})

    def decide(self, view: View) -> Command:
        return Command({"a": self.replicas, "b": 0})
