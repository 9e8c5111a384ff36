"""What no policy that keeps the warm reserve, and serves its traffic
on pool A at A's precision outside incidents (the 100/0 steady state), can spend
less than.

The reserve rule keeps pool B's ready capacity at `warmReservePercent` of the
forecast's upper band (docs/concepts.md, "The warm reserve"), within B's
bounds, so B holds at least one pod (its minReplicas) whenever requests
arrive. Pool A, however well forecast, needs `ceil(rate / capacity)` ready
pods in each window at the calibrated per-pod capacity at the SLO (its
minReplicas at least). Summing both with no start-up, no margin and no
incident gives a floor on GPU-hours: a policy with the reserve cannot beat
it, only approach it. (A policy that served part of the steady traffic from B
at int8, or ran A at int8, could: that trades answer quality for GPU-hours,
which Forescale does only during an incident.) Comparing it with the HPA's
GPU-hours says whether "no more GPU-hours than the HPA" is reachable at all
on a trace for such a policy.
"""

from __future__ import annotations

import math

import numpy as np


def reserve_floor_gpu_hours(arrivals_per_second: np.ndarray, capacity_rps: float, window_seconds: int = 10,
                            a_min: int = 1, b_min: int = 1, b_cost_weight: float = 1.0) -> float:
    """GPU-hours of A at exactly `ceil(window rate / capacity_rps)` pods plus B at `b_min` pods.

    `arrivals_per_second` holds the requests that arrived in each second of the replay.
    """
    if capacity_rps <= 0 or not math.isfinite(capacity_rps):
        raise ValueError(f"capacity_rps: must be a positive number, got {capacity_rps!r}")
    if window_seconds < 1:
        raise ValueError(f"window_seconds: must be >= 1, got {window_seconds!r}")
    counts = np.asarray(arrivals_per_second, dtype=float)
    if counts.size == 0:
        return 0.0
    n = math.ceil(counts.size / window_seconds)
    padded = np.zeros(n * window_seconds)
    padded[: counts.size] = counts
    per_window = padded.reshape(n, window_seconds)
    seconds = np.full(n, float(window_seconds))
    seconds[-1] = counts.size - (n - 1) * window_seconds  # the last window may be short
    rate = per_window.sum(axis=1) / seconds
    a_pods = np.maximum(np.ceil(rate / capacity_rps - 1e-9), a_min)
    b_pods = np.where(rate > 0, max(b_min, 1), b_min)
    return float(((a_pods + b_cost_weight * b_pods) * seconds).sum() / 3600.0)
