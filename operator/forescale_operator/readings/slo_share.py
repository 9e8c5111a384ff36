"""The share of requests over the SLO target, from a latency histogram: the error budget's reading.

The engine spends and refills an error budget (engine/budget.py, the stretch) and fires its
burn-rate trigger (engine/triggers.py) on one number per tick: the share of the tick's requests
over the SLO target, rejected and failed included. Prometheus holds it in the latency histogram
the latency quantile is read from, as counts at or under each bucket bound `le`:

- the count at the target is interpolated linearly inside the bucket that holds it, the same
  assumption `histogram_quantile` makes (the model server's buckets are 1.2x apart, so the
  share is off by at most a fifth of one bucket's requests); a target past the last finite
  bound counts the requests above that bound as over it;
- the histogram holds the requests that were served; a failed or rejected request is over the
  SLO whatever its time (it served no one within it), so with `e` the share of requests that
  failed (the preset's error rate): `e + (1 - e) x (served over the target) / served`;
- a resource's share is its pools' shares weighted by their rates.

Without a histogram (a preset that gives a mean, a custom latency query) there is no share: the
stretch holds at its last value and the burn-rate trigger has no data, as the engine documents.
"""

from __future__ import annotations

import math
from typing import Iterable, Sequence


def over_target(buckets: Sequence[tuple[float, float]], target_s: float, error_rate: float | None) -> float | None:
    """The share 0..1 of a pool's requests over `target_s` seconds, from its histogram's
    `(le, requests per second at or under le)` pairs (any order; `le` may be inf), or None
    when it served and failed nothing (or the histogram is empty)."""
    e = min(1.0, max(0.0, error_rate)) if error_rate is not None and math.isfinite(error_rate) else 0.0
    pairs = sorted((float(le), float(v)) for le, v in buckets if math.isfinite(float(v)) and float(v) >= 0)
    if not pairs:
        return None if e == 0.0 else e
    served = pairs[-1][1]
    if served <= 0:
        return e if e > 0 else None
    within, below_le, below_n = 0.0, 0.0, 0.0
    for le, count in pairs:
        count = max(count, below_n)  # a counter reset inside the window makes a bucket dip: never below the last
        if le >= target_s:
            if math.isfinite(le) and le > below_le:
                within = below_n + (count - below_n) * (target_s - below_le) / (le - below_le)
            else:
                within = below_n
            break
        below_le, below_n = le, count
    else:
        within = below_n
    over_served = min(1.0, max(0.0, 1.0 - within / served))
    return e + (1.0 - e) * over_served


def weighted(shares: Iterable[tuple[float | None, float | None]]) -> float | None:
    """The share over several pools: each `(share, rate)` weighted by its rate; None when no pool
    with traffic has a share."""
    total = weight = 0.0
    for share, rate in shares:
        if share is None or rate is None or not math.isfinite(rate) or rate <= 0:
            continue
        total += share * rate
        weight += rate
    return total / weight if weight > 0 else None
