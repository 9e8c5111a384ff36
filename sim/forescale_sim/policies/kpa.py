"""Knative Serving's KPA in RPS mode, as defined in
knative/serving pkg/autoscaler/scaling/autoscaler.go.

Modelled: decisions every 2 s; 1 s buckets of observed requests per second;
a 60 s stable window and a 6 s panic window (10%); target = the per-pod
target (`autoscaling.knative.dev/metric: rps`, target x 0.70 utilization);
`dspc = ceil(stable/target)`, `dppc = ceil(panic/target)`; scale-up at most
1000x ready and scale-down at most to ready/2 per decision (max-scale-down
rate 2); panic when `dppc / ready >= 2`, lasting until 60 s after the last
over-threshold decision, never scaling down while panicking; an autoscaler
that starts with more than one ready pod starts in panic.
Simplified: the scraper sees every pod (no sampling above 3 pods); the
activator is never in the path (min-scale 1, no scale to zero, so burst
capacity is moot); averages divide by the buckets since the replay started
until the windows fill.
"""

from __future__ import annotations

import math

from .base import Command, View

TICK_SECONDS = 2.0
STABLE_WINDOW_SECONDS = 60.0
PANIC_WINDOW_SECONDS = 6.0  # round(60 x 10%)
PANIC_THRESHOLD = 2.0
MAX_SCALE_UP_RATE = 1000.0
MAX_SCALE_DOWN_RATE = 2.0


class KpaDecider:
    """The autoscaler's pure arithmetic: observed rates in, desired pods out."""

    def __init__(self, target: float, min_scale: int = 1, max_scale: int = 0) -> None:
        self.target = max(0.01, target)
        self.min_scale = min_scale
        self.max_scale = max_scale  # 0 = unbounded, as in Knative
        self.panic_time: float | None = None
        self.max_panic_pods = 0

    def start(self, now: float, ready_pods: int) -> None:
        if ready_pods > 1:  # "a new autoscaler that already sees >1 ready pod starts in panic"
            self.panic_time = now
            self.max_panic_pods = ready_pods

    @property
    def panicking(self) -> bool:
        return self.panic_time is not None

    def scale(self, now: float, stable_rps: float, panic_rps: float, ready_pods: int) -> int:
        """Desired pods at `now` (autoscaler.go Scale, RPS metric)."""
        ready = max(1, ready_pods)
        dspc = math.ceil(stable_rps / self.target)
        dppc = math.ceil(panic_rps / self.target)
        max_up = math.ceil(MAX_SCALE_UP_RATE * ready)
        max_down = math.floor(ready / MAX_SCALE_DOWN_RATE)
        stable_pods = min(max(dspc, max_down), max_up)
        panic_pods = min(max(dppc, max_down), max_up)
        if dppc / ready >= PANIC_THRESHOLD:
            if self.panic_time is None:
                self.max_panic_pods = ready_pods
            self.panic_time = now
        elif self.panic_time is not None and now > self.panic_time + STABLE_WINDOW_SECONDS:
            self.panic_time = None
            self.max_panic_pods = 0
        if self.panic_time is not None:
            self.max_panic_pods = max(self.max_panic_pods, stable_pods, panic_pods)
            want = self.max_panic_pods
        else:
            want = stable_pods
        want = max(want, self.min_scale)
        return min(want, self.max_scale) if self.max_scale else want


class KpaPolicy:
    """Knative KPA on pool A."""

    name = "kpa"
    interval_seconds = TICK_SECONDS

    def __init__(self, target_per_pod: float, min_scale: int = 1, max_scale: int = 0) -> None:
        self.target_per_pod = target_per_pod
        self.decider = KpaDecider(target_per_pod, min_scale, max_scale)

    def start(self, view: View) -> Command:
        n = max(self.decider.min_scale, math.ceil(view.rate("a", STABLE_WINDOW_SECONDS) / self.target_per_pod))
        self.decider.start(view.now, n)
        return Command({"a": n, "b": 0})

    def decide(self, view: View) -> Command:
        elapsed = max(1.0, view.now)
        stable = view.rate("a", min(STABLE_WINDOW_SECONDS, elapsed))
        panic = view.rate("a", min(PANIC_WINDOW_SECONDS, elapsed))
        return Command({"a": self.decider.scale(view.now, stable, panic, view.ready("a")), "b": 0})
