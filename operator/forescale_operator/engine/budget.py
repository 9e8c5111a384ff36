"""Rule 2's stretch: how much more per pod than its latency model's capacity pool A is sized for,
learned from the SLO's error budget.

Why. The latency model is fitted where the pods run, and they run below their capacity: its
capacity at the SLO is an extrapolation. For a batching server the M/M/1 curve reads the early
rise of latency (batches forming) as a queue filling, and puts the knee short of where it is: on
the ServeGen m-mid replay at 1x the model said 400-460 rps per pod where an HPA's pods carried 600
within the SLO (docs/frontier.md). Learning the knee's shape from the same low-load samples was
tried twice and went wrong both ways (docs/engine.md, "The curve"). The error budget measures the
thing sizing is for directly, at the operating point: did the pods hold the SLO at the load they
were given?

The rule, additive increase and a reset (TCP's congestion window finds the edge of a link the
same way):
- a tick that spent more than its share of the budget (the share of requests over the SLO above
  1 - quantile) sets the stretch back to 1: the stretch, or the load, went too far, and the model's
  capacity is the point to find the edge from again (halving the stretch instead met two goals
  fewer on the frontier, with 2% more violation seconds);
- a tick that tested the stretch, its pods carrying at least `TESTED_LOAD` of the per-pod rate A
  was sized for, raises it by `STEP` while the last `burn_long_ticks` ticks spent at most
  `SPEND_SHARE` of the budget;
- never past the evidence: the load-tested point or the highest rate the pods served within the
  target (`PoolModel.evidence_rps`), nor under 1 (a model that is optimistic is the
  latency model's to correct, through the pods' health and the overload shift).
It moves outside incidents only, and A's sizing and its overload shift use it; the diagnosis does
not (a slowdown is judged against the model alone).

The constants, and why each has its value:
- `TESTED_LOAD` 0.9: A at n pods runs at about (n - 1/2) / n of what it was sized for after
  rounding up, 0.9 from n = 5; a lighter tick says nothing about whether more would hold.
- `SPEND_SHARE` 0.5: the stretch grows only while half the budget is left over, so that the
  bursts and forecast misses it did not cause still have the other half.
- `STEP` 0.01 of the model's capacity per tick: from 1 to 1.3 (the gap above) in 30 tested
  ticks, 7.5 minutes of 15 s ticks, longer than the 5-minute long window that must stay within
  `SPEND_SHARE`, and far smaller than one pod's share of A (1/n), so the pod count changes only
  after several ticks agree.
Measured on the frontier's 72 cases of seeds 0-2 (docs/frontier.md, "The stretch"), against these
values: `STEP` 0.02 met one goal more for 6% more violation seconds; `TESTED_LOAD` 0.8 and
`SPEND_SHARE` 0.25 one goal fewer each, within 4% of the violation seconds.
"""

from __future__ import annotations

from dataclasses import dataclass

TESTED_LOAD = 0.9
SPEND_SHARE = 0.5
STEP = 0.01


@dataclass(frozen=True)
class Spend:
    """One tick of A's pool against its budget."""

    #: share of the tick's requests over the SLO
    over_fraction: float
    #: the error budget, 1 - the SLO's quantile
    budget: float
    #: A's per-pod rate, and its latency model's capacity at the SLO (same precision, healthy)
    per_pod_rps: float
    capacity_rps: float
    #: the most the stretch may reach: the evidence over the model's capacity (>= 1)
    ceiling: float


def next_stretch(stretch: float, spent: tuple[float, ...], tick: Spend, window: int) -> tuple[float, tuple[float, ...]]:
    """The stretch after this tick, and the window of recent over-SLO shares (oldest first)."""
    spent = (spent + (tick.over_fraction,))[-window:]
    if tick.over_fraction > tick.budget:
        stretch = 1.0
    elif (tick.per_pod_rps >= TESTED_LOAD * stretch * tick.capacity_rps
          and sum(spent) / len(spent) <= SPEND_SHARE * tick.budget):
        stretch += STEP
    return max(1.0, min(stretch, tick.ceiling)), spent


def ceiling(evidence_rps: float, capacity_rps: float) -> float:
    """How far the evidence (the load test, or what the pods served within the target) lets the
    stretch go past the model's capacity: at least 1."""
    return max(1.0, evidence_rps / capacity_rps) if capacity_rps > 0 else 1.0
