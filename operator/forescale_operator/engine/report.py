"""The human side of a decision: phase, scaling events, conditions and the one-line summary."""

from __future__ import annotations

from typing import Mapping

from forescale_operator.phase import ConditionType, Phase
from forescale_operator.reasons import Reason
from forescale_operator.spec import InferenceSpec
from forescale_predictor.forecast_types import Forecast

from .sizing import Demand
from .triggers import overall_latency
from .types import Condition, EngineParams, Event, Observations


def phase_for(incident: Phase | None, obs: Observations, desired: Mapping[str, int], saturated: bool) -> Phase:
    """The phase: an active incident wins; then Pending, Degraded (saturated), Scaling, Stable."""
    if incident is not None:
        return incident
    if obs.a.ready_replicas == 0 and obs.b.ready_replicas == 0:
        return Phase.PENDING
    if saturated:
        return Phase.DEGRADED
    if desired["a"] != obs.a.ready_replicas or desired["b"] != obs.b.ready_replicas:
        return Phase.SCALING
    return Phase.STABLE


def scale_events(
    spec: InferenceSpec,
    last_desired: Mapping[str, int] | None,
    obs: Observations,
    desired: Mapping[str, int],
    demand: Demand | None,
    capacity_rps: Mapping[str, float],
    precision_a: str,
    params: EngineParams,
    share_a: int = 100,
    sizing_a: tuple[float, str] | None = None,
) -> list[Event]:
    """ScaledUp / ScaledDown when a pool's desired replicas change from the last decision: one event
    per direction, naming each pool that moved that way (B's reserve follows the band that sizes A, so
    on a ramp both move on the same tick; one event says so, and is one API write instead of two).

    `share_a` is the share of the demand A was sized for (its weight, or the
    share after the next cut-back step); `sizing_a` the per-pod capacity and
    precision A was sized at when not `capacity_rps["a"]` at `precision_a`
    (the last cut-back step sizes at the template precision).
    """
    moves: dict[Reason, list[str]] = {}
    for pool in ("a", "b"):
        before = last_desired[pool] if last_desired is not None else obs.pool(pool).replicas
        after = desired[pool]
        if after == before:
            continue
        precision = precision_a if pool == "a" else spec.b.precision
        per_pod = capacity_rps[pool]
        if pool == "a" and sizing_a is not None:
            per_pod, precision = sizing_a
        if demand is None:
            why = "bounds"
        elif pool == "a":
            when = f" in {demand.lead_seconds:.0f} s" if demand.lead_seconds is not None else " now"
            share = f", a's {share_a}% share" if share_a < 100 else ""
            why = f"{demand.source} {demand.at_ready:.0f} rps{when}{share}"
        else:
            why = f"reserve {spec.warm_reserve_percent}% of {demand.peak:.0f} rps (the upper band's peak)"
        reason = Reason.SCALED_UP if after > before else Reason.SCALED_DOWN
        verb = "up" if after > before else "down"
        moves.setdefault(reason, []).append(
            f"{params.pool_name(pool)} {verb} from {before} to {after}: {why}; {per_pod:.1f} rps per pod at {precision}")
    return [Event(reason, "Scale " + "; scale ".join(parts)) for reason, parts in moves.items()]


def conditions(
    spec: InferenceSpec,
    phase: Phase,
    obs: Observations,
    forecast: Forecast | None,
    incident: Phase | None,
    reasons: tuple[str, ...],
    metrics: bool = True,
) -> dict[str, Condition]:
    """The four typed conditions as (status, reason, message)."""
    out: dict[str, Condition] = {}
    ready = obs.a.ready_replicas >= 1 and phase not in (Phase.PENDING, Phase.DEGRADED)
    out[ConditionType.READY.value] = (
        "True" if ready else "False",
        phase.value,
        "; ".join(reasons) if reasons else f"a {obs.a.ready_replicas} ready, b {obs.b.ready_replicas} ready",
    )
    out[ConditionType.METRICS_AVAILABLE.value] = (
        ("True", "MetricsRead", "latency and rate read") if metrics
        else ("False", "MetricsUnavailable", "metrics unavailable: replicas held")
    )
    if forecast is None:
        out[ConditionType.FORECAST_READY.value] = ("False", "NoForecast", "no forecast: sizing on the observed rate")
    elif forecast.fallback_reason:
        out[ConditionType.FORECAST_READY.value] = ("True", "Fallback", f"model {forecast.model}: {forecast.fallback_reason}")
    else:
        out[ConditionType.FORECAST_READY.value] = ("True", "ModelReady", f"model {forecast.model}")
    out[ConditionType.EMERGENCY.value] = (
        ("True", incident.value, "the incident playbook is active") if incident is not None
        else ("False", "NoIncident", "no incident")
    )
    return out


def summary(
    phase: Phase,
    obs: Observations,
    desired: Mapping[str, int],
    weights: Mapping[str, int],
    demand: Demand | None,
    label: str,
    target_ms: float,
    reasons: tuple[str, ...],
    precision_a: str,
) -> str:
    """One line for status.lastDecision, e.g.
    `Scaling: a 5 (3 ready, fp16) 100%, b 2 (1 ready) 0%; demand 420 rps forecast; p99 180 ms / SLO 200 ms`."""
    latency = overall_latency(obs)
    lat = f"{label} {latency:.0f} ms" if latency is not None else f"{label} unknown"
    dem = f"demand {demand.at_ready:.0f} rps {demand.source}" if demand is not None else "demand unknown"
    text = (
        f"{phase.value}: a {desired['a']} ({obs.a.ready_replicas} ready, {precision_a}) {weights['a']}%, "
        f"b {desired['b']} ({obs.b.ready_replicas} ready) {weights['b']}%; {dem}; {lat} / SLO {target_ms:.0f} ms"
    )
    if reasons:
        text += "; " + "; ".join(reasons)
    return text
