"""B's ejection: the backup pool taken out of the traffic shifts while its pods fail what they are given.

Why. Every shift to B (the playbook's split, the overload shift) assumes B's pods serve as their
latency model says. A backup whose pods have degraded too (the same GPU type, the same driver
roll-out, the same noisy neighbour) turns each shift into failed requests: on ServeGen m-mid at 10x,
B 3x slower than its curve for 10 minutes, the overload shifts sent it 20% at each of A's misses and
B timed 40% of them out (410 violation s against the HPA's 280, which has no B; 330 with the
ejection, 250 without the slowdown).

The test: at a tick B had a share since the last one, its own requests fail (rejected, or timed
out) over `errorRatePercent`, the playbook's error line, or its device runs slower per unit of work
than `triggerRatio x` its clock's usual (and past the clock's noise) while its p99 is over the
target: the two ways A's own triggers tell pods that changed (triggers.py), asked of B's pods.

Latency alone does not eject B. B is a batching server as A is, and its p99 over `triggerRatio x`
its model's prediction at a load the model says it carries is as often a burst inside the step as
a changed pod: asked that (before B had a clock), the overload shifts' ordinary misses ejected B on
ServeGen m-mid at 10x without any incident (250 -> 280 violation s), and with A's slowdown
(270 -> 310 s); asked at two ticks running, outside incidents only, it still ejected a healthy B
there at 93% of its capacity in 6 of the frontier's 144 cases (349 -> 348 goals). B's clock
(pod_clock.py, learned from ticks B serves a share, as A's is: engine._judge_b) tells the two apart, as
A's does: a queue makes requests wait, not the device slower. A B 3x slower per unit that fails
nothing (Mooncake at 10x, 10 minutes) took the overload shifts at 440 violation s, 340 with the
clock (290 without the slowdown, the HPA 130); 2x slower, 360 -> 300. With A 2.5x slower as well,
Mooncake with B 3x went 620 -> 400 s and m-mid with B 2x 520 -> 420; Mooncake with B 2x, 390 -> 400
(its clock at 2.01x: the split's 30% went back to A at once; docs/engine.md section 4b). The frontier's 144 cases and
`bench.unseen_traffic` did not move (349 goals; 55, 28 and 22 of 56): no healthy B was ejected.
One tick is enough, where A's device trigger waits for `breach_ticks`: B's share is the engine's to
give, and a shift withheld for 60 s costs what an overload shift would have saved, not a playbook.

What follows is outlier ejection as Envoy does it for a host: out for `base_ejection_time`
multiplied by the number of times ejected, at most `max_ejection_time`. B takes 0% in every shift,
and in every stage of an incident (the emergency's split, recovery, the cut-back), for
`BASE_SECONDS x n` at its n-th ejection in a row, at most `MAX_SECONDS`; then the gates open again,
and the next shift is the probe. A probe at which B serves within the line ends the row, and so
does time: an ejection `MAX_SECONDS` after the last one ended starts a new row (Envoy lowers its
multiplier while a host stays healthy; without traffic B shows nothing, so time stands in). What B
reports without a share since the last tick (the requests it still held when its share went, in a
rate window longer than a tick) tells nothing: it neither ejects B nor ends the row.

The constants, and why:
- `BASE_SECONDS` 60: four 15 s ticks, the cut-back's default interval (a step of traffic is judged
  over a minute there too); a B that is still failing then costs one tick of its share per probe;
- `MAX_SECONDS` 300: Envoy's default `max_ejection_time`, reached at the fifth ejection in a row
  (60, 120, 180, 240, 300 s); a lasting failure is then probed every 5 minutes, and a repaired B is
  back within 5.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from forescale_operator.spec import InferenceSpec

if TYPE_CHECKING:  # types.py holds EngineState, whose Learned holds an Ejection
    from .types import Observations

BASE_SECONDS = 60.0
MAX_SECONDS = 300.0


@dataclass(frozen=True)
class Ejection:
    """B's ejection state (kept in `Learned`)."""

    #: B takes no shift before this time; None: not ejected
    until: float | None = None
    #: ejections in a row (a probe at which B serves within the line ends it)
    count: int = 0
    #: why B was last ejected, with its numbers
    why: str | None = None

    def active(self, now: float) -> bool:
        return self.until is not None and now < self.until

    def gate(self, now: float) -> str | None:
        """Why every shift gate reads 0% now, with its numbers (None: B is not ejected)."""
        if not self.active(now):
            return None
        return f"{self.why}; b ejected from the shifts for {self.until - now:.0f} s more"


def judge(spec: InferenceSpec, obs: Observations, given: bool,
          device: tuple[float | None, float] = (None, math.inf)) -> tuple[str | None, bool]:
    """What this tick showed of B: why it failed the requests it was given (None: it did not, or
    nothing can be told), and whether it served them within the line. `given`: B had a share since
    the last tick; without one, what B reports is its leftovers', and tells nothing either way.
    Without a known error rate, or without a ready pod, nothing can be told either (the capacity
    gate already gives a B with no ready pod nothing). `device`: B's device time per unit over its
    clock's this tick (None: no clock yet) and the line past which that is its pods, not noise."""
    b = obs.b
    if not given or not b.ready_replicas or not b.rate_rps or b.rate_rps <= 0:
        return None, False
    per_pod = b.rate_rps / b.ready_replicas
    ratio, line = device
    target = spec.slo.target_latency_ms
    slow_line = max(spec.emergency.trigger_ratio, line)
    if ratio is not None and ratio > slow_line and b.latency_ms is not None and b.latency_ms > target:
        return (f"b's device at {ratio:.2f}x its usual time per unit of work (> {slow_line:.2f}x), its p99 "
                f"{b.latency_ms:.0f} ms > {target:g} ms at {per_pod:.1f} rps per pod"), False
    if b.error_rate is None or not math.isfinite(b.error_rate):
        return None, False
    limit = spec.emergency.error_rate_percent / 100.0
    if b.error_rate > limit:
        return (f"b errors {b.error_rate * 100:.1f}% > {spec.emergency.error_rate_percent:g}% at "
                f"{per_pod:.1f} rps per pod"), False
    return None, True


def advance(state: Ejection, failing: str | None, served: bool, now: float) -> Ejection:
    """The ejection after this tick: B ejected (once more in the row, or first again where the
    last ejection ended over `MAX_SECONDS` ago) where it failed its requests outside an ejection;
    the row ended where it served them."""
    if state.active(now):
        return state
    if failing is not None:
        recent = state.until is not None and now - state.until <= MAX_SECONDS
        count = state.count + 1 if recent else 1
        return Ejection(until=now + min(MAX_SECONDS, BASE_SECONDS * count), count=count, why=failing)
    return Ejection() if served else state
