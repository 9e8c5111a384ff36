"""The oracle: it knows the future arrivals, the incidents and the start-up
time, and runs the fewest pods of pool A that keep every 10 s window under
the SLO, with no reserve.

How: for each window it needs `ceil(rate / capacity)` ready pods, where the
rate is the window's true arrival rate and the capacity is the calibrated
per-pod capacity at the SLO under that window's slowdown. Pods are
scheduled exactly one start-up ahead of the first window that needs them
and removed as soon as no window within one start-up needs them. The replay
then checks every window and adds a pod to each window still over the SLO
(bursts inside a window, queues carried across windows), up to a few
rounds: `refine`. What remains over after the last round is reported.
"""

from __future__ import annotations

import math

import numpy as np

from .base import Command, View

WINDOW_SECONDS = 10


class OraclePolicy:
    """Clairvoyant pool A."""

    name = "oracle"
    interval_seconds = 1.0

    def __init__(self, target_per_pod: float, window_rates: np.ndarray, window_capacity: np.ndarray,
                 startup_seconds: float, min_replicas: int = 1) -> None:
        self.target_per_pod = target_per_pod
        cap = np.maximum(window_capacity, 1e-9)
        self.need = np.maximum(min_replicas, np.ceil(window_rates / cap)).astype(int)
        self.startup = int(math.ceil(startup_seconds))
        self.rounds = 0

    def replicas_at(self, now: float) -> int:
        """Pods scheduled at `now`: enough for every window that starts within one start-up."""
        w_lo = int(now // WINDOW_SECONDS)
        w_hi = int((now + self.startup) // WINDOW_SECONDS)
        return int(self.need[w_lo : w_hi + 1].max()) if w_lo < self.need.size else int(self.need[-1])

    def start(self, view: View) -> Command:
        """Pods needed before the first start-up could finish are there, warm, at time 0."""
        return Command({"a": self.replicas_at(0.0), "b": 0})

    def decide(self, view: View) -> Command:
        return Command({"a": self.replicas_at(view.now), "b": 0})

    def refine(self, windows_over: np.ndarray) -> bool:
        """Add a pod to each window over the SLO (and the one before it, whose
        queue it inherits). True when anything changed."""
        over = np.flatnonzero(windows_over[: self.need.size])
        if over.size == 0:
            return False
        self.need[over] += 1
        self.need[np.maximum(over - 1, 0)] += 1
        self.rounds += 1
        return True
