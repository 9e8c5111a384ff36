"""Rule 3's triggers: when the incident playbook starts.

Any one of these starts it:
- observed: the SLO quantile of latency over both pools exceeds
  `triggerRatio x target`;
- forecast: the forecast's upper latency band crosses that line within the horizon;
- errors: the share of requests rejected or failed, weighted by each pool's
  rate, exceeds `errorRatePercent`;
- queue: the total queue depth grew at every one of the last
  `queue_growth_ticks` ticks and holds at least `queue_min_depth` requests;
- sustained (an extension): latency over the SLO target itself at
  `breach_ticks` of the last `breach_window_ticks` ticks. A slowdown that keeps
  the tail over the SLO but under `triggerRatio x target` would otherwise
  never start the playbook; 0 switches it off.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from forescale_operator.spec import InferenceSpec
from forescale_predictor.forecast_types import LATENCY_MS, Forecast

from .types import EngineParams, Observations

OBSERVED, FORECAST, ERRORS, QUEUE, SUSTAINED = "observed", "forecast", "errors", "queue", "sustained"


@dataclass(frozen=True)
class Trigger:
    """One reason to start the playbook, with the numbers behind it."""

    kind: str
    message: str


@dataclass(frozen=True)
class TriggerCheck:
    """The triggers that hold now, and the queue history to remember."""

    fired: tuple[Trigger, ...]
    queue: tuple[float, ...]
    breaches: tuple[bool, ...] = ()

    def has(self, kind: str) -> bool:
        return any(t.kind == kind for t in self.fired)

    @property
    def beyond_latency(self) -> bool:
        """A trigger that latency alone does not show (errors, a piling queue) holds now."""
        return self.has(ERRORS) or self.has(QUEUE)


def quantile_label(quantile: float) -> str:
    """`p99` for 0.99, `p99.9` for 0.999, `p95` for 0.95."""
    return "p" + format(round(quantile * 100, 4), "g")


def overall_latency(obs: Observations) -> float | None:
    """The SLO quantile over both pools; without it, the worse pool's (a quantile
    over the union is at most the larger of the pools' quantiles)."""
    if obs.latency_ms is not None:
        return obs.latency_ms
    pools = [p.latency_ms for p in (obs.a, obs.b) if p.latency_ms is not None]
    return max(pools) if pools else None


def error_rate(obs: Observations) -> float | None:
    """Share of requests rejected or failed over both pools, weighted by rate."""
    pairs = [(p.rate_rps, p.error_rate) for p in (obs.a, obs.b) if p.error_rate is not None]
    if not pairs:
        return None
    weighted = [(r, e) for r, e in pairs if r is not None and r > 0]
    if weighted:
        return sum(r * e for r, e in weighted) / sum(r for r, _ in weighted)
    return max(e for _, e in pairs)


def check(
    spec: InferenceSpec,
    obs: Observations,
    forecast: Forecast | None,
    queue_history: tuple[float, ...],
    now: float,
    params: EngineParams,
    breach_history: tuple[bool, ...] = (),
) -> TriggerCheck:
    """Evaluate every trigger for this tick."""
    target = spec.slo.target_latency_ms
    ratio = spec.emergency.trigger_ratio
    line = ratio * target
    q = quantile_label(spec.slo.quantile)
    fired: list[Trigger] = []

    latency = overall_latency(obs)
    if latency is not None and latency > line:
        fired.append(Trigger(OBSERVED, f"{q} {latency:.0f} ms > {float(ratio)} x SLO {target:.0f} ms"))
    breaches = breach_history
    if latency is not None:
        breaches = (breach_history + (latency > target,))[-params.breach_window_ticks:]
    over = sum(breaches)
    if params.breach_ticks and over >= params.breach_ticks and latency is not None and latency > target:
        fired.append(Trigger(
            SUSTAINED,
            f"{q} over SLO {target:.0f} ms at {over} of the last {len(breaches)} ticks ({latency:.0f} ms now)",
        ))

    if forecast is not None:
        upper = np.asarray(forecast.upper(LATENCY_MS), dtype=float)
        over = np.flatnonzero(np.isfinite(upper) & (upper > line))
        if over.size:
            i = int(over[0])
            lead = float(forecast.step_times()[i] - now)
            fired.append(Trigger(
                FORECAST,
                f"forecast {q} upper band {upper[i]:.0f} ms > {float(ratio)} x SLO {target:.0f} ms in {max(lead, 0):.0f} s",
            ))

    err = error_rate(obs)
    limit = spec.emergency.error_rate_percent / 100.0
    if err is not None and err > limit:
        fired.append(Trigger(ERRORS, f"errors {err * 100:.1f}% > {spec.emergency.error_rate_percent:g}%"))

    depths = [p.queue_depth for p in (obs.a, obs.b) if p.queue_depth is not None and math.isfinite(p.queue_depth)]
    n = params.queue_growth_ticks
    if depths:
        queue = (queue_history + (float(sum(depths)),))[-(n + 1):]
    else:
        queue = ()  # a gap in the data breaks the run of growth
    if len(queue) == n + 1 and all(b > a for a, b in zip(queue, queue[1:])) and queue[-1] >= params.queue_min_depth:
        fired.append(Trigger(QUEUE, f"queue grew {queue[0]:.0f} -> {queue[-1]:.0f} requests over {n} ticks"))

    return TriggerCheck(tuple(fired), queue, breaches)
