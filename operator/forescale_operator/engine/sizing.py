"""Rule 2: size pool A for its share of the forecast, and pool B as the warm reserve.

- Demand is the upper forecast band of the request rate at the step a pod
  started now would be ready (now + measured start-up; the last step when the
  start-up outlasts the horizon): later steps are asked for at later ticks, and
  a burst shorter than a start-up is over before the pods are ready (B's
  reserve and the overload shift take it). Without a forecast, the observed
  rate alone. The band covers a step's mean rate; the SLO is judged on
  shorter windows, whose counts add Poisson noise: `window_margin` adds it at
  the band's own quantile. Poisson's, not the traffic's measured dispersion
  (ServeGen's 10 s counts have a Fano factor near 100): the band is calibrated
  on the ticks' rates and already holds most of that noise, and counted twice
  it cost 21 of the frontier's 432 goals for +4.1% GPU-hours (docs/frontier.md,
  "The violation goal and the traffic's own noise").
- Pool A carries its share of the largest of the observed rate, the median
  forecast at that step (the expected load) and `(1 - warmReservePercent)` of
  the upper band: B's ready reserve is A's headroom (an overload shift moves
  the excess to it at once), not an extra, and headroom for what the forecast
  is unsure of, never for the load it expects (docs/engine.md, section 5).
- Pool B holds `warmReservePercent` of the upper band, or its share of the
  demand during an incident.
- A pool needs the fewest pods whose predicted latency at that load meets the
  target: `ceil(load / capacity)`, capacity from its latency model (rule 1).
- Scale-up is bounded per tick like the HPA's default `behavior`: to the
  larger of +`scale_up_percent`% and +`scale_up_pods` pods.
- Each raw recommendation then goes through the HPA's stabilization
  (its `behavior` with an up window of 0): `min(max(current, raw),
  max(recommendations in the window))` — up at once, down only to the highest
  recommendation of the last window — and finally the pool's bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from forescale_predictor.forecast_types import RATE, Forecast

from .types import EngineParams

#: the quantile the window margin is taken at without a forecast (with one, the band's own upper
#: quantile): the forecasters' default upper band, q0.9, so that sizing on the observed rate asks
#: for as rare a window as sizing on a forecast does
OBSERVED_QUANTILE = 0.9


@dataclass(frozen=True)
class Demand:
    """Request rates the sizing works from, requests per second."""

    #: the upper band at the first step new pods of A would serve (the step ending after they are ready)
    at_ready: float
    #: the median forecast at that step (the observed rate without a forecast)
    expected: float
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
            later = np.flatnonzero(finite & (times > ready_at))
            # The first step a pod asked for now would serve (the last one known when a start-up
            # outlasts the horizon): later steps are asked for at later ticks. A step's rate is the
            # load of the 15 s that end at its time, so a pod ready at `ready_at` serves from the step
            # ending after it; the step ending at it is load from before the pod was ready. Taken at
            # or after `ready_at` (until 7 December 2026), a start-up of a whole number of steps (90 s
            # at 15 s) sized every pod one step late: on a burst every few minutes that the forecast
            # saw coming, the pods came 15 s into it (docs/engine.md, section 5).
            best = int(later[0]) if later.size else int(np.flatnonzero(finite)[-1])
            base = observed or 0.0
            # Pods asked for now serve from `ready_at` on: what the load is then is what they
            # are for, not the load now (a burst shorter than a start-up is over before they
            # are ready; B's reserve and the overload shift take it meanwhile).
            at_ready = float(upper[best])
            median = float(np.asarray(forecast.median(RATE), dtype=float)[best])
            expected = median if math.isfinite(median) else at_ready
            peak = max(float(np.nanmax(upper[finite])), base)
            return Demand(at_ready, expected, peak, base, float(times[best] - now), "forecast")
    if observed is None:
        return None
    return Demand(observed, observed, observed, observed, None, "observed")


def window_margin(rate_rps: float, window_seconds: float, quantile: float) -> float:
    """The rate plus the Poisson noise of one SLO window's count at `quantile`:
    a window of `w` seconds at rate r holds r*w requests +- sqrt(r*w)."""
    if rate_rps <= 0:
        return 0.0
    z = NormalDist().inv_cdf(min(max(quantile, 0.5), 0.999))
    return rate_rps + z * math.sqrt(rate_rps / window_seconds)


def pods_for(rate_rps: float, per_pod_rps: float) -> int:
    """Pods needed to carry `rate_rps` at `per_pod_rps` each (a pod that meets no SLO: none helps)."""
    if rate_rps <= 0:
        return 0
    if per_pod_rps <= 0:
        return 10**6
    # A hair of tolerance so that 3.0000000001 pods stays 3 pods.
    return max(0, math.ceil(rate_rps / per_pod_rps - 1e-9))


def scale_up_bound(current: int, percent: float, pods: int) -> int:
    """The most replicas one tick may ask for: the larger of +percent% and +pods (HPA behavior, selectPolicy Max)."""
    return max(math.floor(current * (1.0 + percent / 100.0)), current + pods)


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


def stabilization_window(params: EngineParams, startup_seconds: float) -> float:
    """The scale-down window: the parameter, else one start-up of the pool.

    A pod removed now and needed again within a start-up cannot be back in
    time: that is the risk the window guards against. Past one start-up, a
    scale-down risks no more than the scale-up that would undo it. (The HPA's
    300 s is a fixed guess at the same thing; Knative's stable window is 60 s.)
    """
    if params.stabilization_seconds is not None:
        return float(params.stabilization_seconds)
    return max(float(startup_seconds), 0.0)
