"""Rule 2: size pool A for its share of the forecast, and pool B as the warm reserve.

- Demand is the upper forecast band of the request rate from the moment a pod
  started now would be ready (now + measured start-up) to the end of the
  horizon, never below the rate observed now. Without a forecast, the observed
  rate alone.
- Pool A needs `ceil(share_a x demand / (capacity_a x target_utilization))`.
- Pool B needs the largest of: its own share of the demand (the same way as A);
  `warmReservePercent` of the peak forecast demand over the horizon in B's
  per-pod capacity; `emergencyWeightPercent` of the current rate, so that B can
  take the emergency split at once (DESIGN.md §2).
- Each raw recommendation then goes through the HPA's stabilization
  (PEERS.md §1, `behavior` with an up window of 0): `min(max(current, raw),
  max(recommendations in the window))` — up at once, down only to the highest
  recommendation of the last window — and finally the pool's bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from forescale_predictor.forecast_types import RATE, Forecast

from .types import EngineParams


@dataclass(frozen=True)
class Demand:
    """Request rates the sizing works from, requests per second."""

    #: upper band from the moment new pods of A would be ready, through the horizon
    at_ready: float
    #: upper band peak over the whole horizon (B's reserve), never below `observed`
    peak: float
    #: the total rate observed now (0 when unknown)
    observed: float
    #: seconds from now to the step `at_ready` was taken from (None: observed rate)
    lead_seconds: float | None
    #: "forecast" or "observed"
    source: str


def demand(forecast: Forecast | None, observed_rps: float | None, now: float, startup_seconds: float) -> Demand | None:
    """The demand to size for, or None when neither a forecast nor a rate exists."""
    observed = float(observed_rps) if observed_rps is not None and math.isfinite(observed_rps) else None
    if forecast is not None:
        upper = np.asarray(forecast.upper(RATE), dtype=float)
        times = forecast.step_times()
        finite = np.isfinite(upper)
        if finite.any():
            ready_at = now + startup_seconds
            later = finite & (times >= ready_at)
            # A start-up longer than the horizon sizes for the last step we know.
            idx = np.flatnonzero(later) if later.any() else np.flatnonzero(finite)[-1:]
            best = idx[int(np.argmax(upper[idx]))]
            base = observed or 0.0
            at_ready = max(float(upper[best]), base)
            peak = max(float(np.nanmax(upper[finite])), base)
            lead = float(times[best] - now) if float(upper[best]) >= base else None
            return Demand(at_ready, peak, base, lead, "forecast" if lead is not None else "observed")
    if observed is None:
        return None
    return Demand(observed, observed, observed, None, "observed")


def pods_for(rate_rps: float, per_pod_rps: float, utilization: float = 1.0) -> int:
    """Pods needed to carry `rate_rps` at `per_pod_rps` each, loaded to `utilization`."""
    if rate_rps <= 0:
        return 0
    # A hair of tolerance so that 3.0000000001 pods stays 3 pods.
    return max(0, math.ceil(rate_rps / (per_pod_rps * utilization) - 1e-9))


def stabilize(
    history: tuple[tuple[float, int], ...],
    now: float,
    current: int,
    raw: int,
    window_seconds: float,
) -> tuple[int, tuple[tuple[float, int], ...]]:
    """HPA behavior stabilization with an up window of 0 and a down window of `window_seconds`.

    Returns the stabilized replicas and the history to keep: this
    recommendation and the earlier ones that can still be a window maximum. Like the HPA, an empty history is seeded with the current
    replicas, so a fresh start cannot scale down within the first window.
    """
    kept = [(t, n) for t, n in history if now - t < window_seconds and t <= now]
    if not history:
        kept = [(now, current)]
    kept.append((now, raw))
    down = max(n for _, n in kept)
    # Only recommendations that no later one matches can still be the window's
    # maximum (a later entry leaves the window later), so the rest are dropped:
    # same result, and the history persisted in status stays a few entries long.
    pruned: list[tuple[float, int]] = []
    for t, n in reversed(kept):
        if not pruned or n > pruned[-1][1]:
            pruned.append((t, n))
    return min(max(current, raw), down), tuple(reversed(pruned))


def clamp(replicas: int, minimum: int, maximum: int) -> int:
    """Keep replicas within the pool's bounds."""
    return max(minimum, min(maximum, replicas))


def stabilization_window(params: EngineParams, step_seconds: float) -> float:
    """The scale-down window: the parameter, else the HPA's 300 s scaled to short loops."""
    if params.stabilization_seconds is not None:
        return float(params.stabilization_seconds)
    # 20 ticks of the loop, like 300 s at the HPA's 15 s sync period.
    return min(300.0, 20.0 * step_seconds)
