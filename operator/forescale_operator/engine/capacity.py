"""Rule 1: learn each pool's per-pod capacity at the SLO, per precision.

Each tick with traffic on a pool gives one sample: the rate per ready pod and
the pool's latency.
- Under the SLO, the pods sustained that rate: the estimate is raised to it at
  once (a lower bound), and when latency is comfortably low the estimate relaxes
  a little back up towards the highest rate ever sustained under the SLO (its
  ceiling), so one incident does not shrink it for good.
- Over the SLO, the pods could not: the latency curve bounds capacity by
  `rate x target / latency` (never below `min_overload_factor x rate`, since a
  saturated queue makes latency grow without bound), and the estimate moves
  part of the way (`capacity_smoothing`) towards that bound. It never goes
  below the proven ceiling (or, before more is proven, the fallback) divided
  by `max_slowdown`: when a pool is that much
  slower than it has proven to be (a slowdown, a fragmented cache), latency no
  longer follows load, every added pod lowers the rate per pod, and learning
  from it would add pods without end. That is a fault for the playbook.
- Ceilings carry across precisions through the precision speeds, so a pool
  downgraded to int8 during an incident knows what it sustained at fp16.
Before `min_capacity_samples` samples, the documented fallback is used: the
same pool's estimate at another precision scaled by the precision speeds, else
`fallback_capacity_rps` scaled from fp16; never below a rate already sustained.
"""

from __future__ import annotations

from typing import Mapping

from .state import CapacityEstimate
from .types import EngineParams, PoolObservation


def key(pool: str, precision: str) -> str:
    """The capacity map key, e.g. `a/fp16`."""
    return f"{pool}/{precision}"


def learn(
    capacity: Mapping[str, CapacityEstimate],
    pool: str,
    precision: str,
    obs: PoolObservation,
    target_ms: float,
    params: EngineParams,
    incident: bool = False,
    relax_to_fallback: bool = False,
) -> dict[str, CapacityEstimate]:
    """Fold one observation of `pool` running `precision` into the estimates.

    `relax_to_fallback` (while an incident's traffic is handed back) lets
    comfortable samples relax the estimate towards the documented fallback too,
    not only towards a rate already sustained: a pool that was measured slow
    during the incident and now carries its share with room must be able to
    earn the next step, or a maxReplicas under the incident's estimate would
    hold the cut-back for ever.

    During an incident on the pool (`incident`), the estimate tracks the pool as
    it is now: an over-SLO sample sets it to its bound at once, the floor is the
    anchor / `incident_max_slowdown`, and comfortable samples do not relax it
    back up (the slowdown has not been shown to be over until the pool carries
    more).

    Ticks without ready pods, rate or latency teach nothing and leave the map as is.
    """
    out = dict(capacity)
    if not obs.ready_replicas or obs.rate_rps is None or obs.latency_ms is None or obs.rate_rps <= 0:
        return out
    per_pod = obs.rate_rps / obs.ready_replicas
    k = key(pool, precision)
    old = out.get(k, CapacityEstimate())
    prior = capacity_for(capacity, pool, precision, params)
    current = old.rps if old.rps is not None else prior
    ceiling = old.ceiling
    samples = old.samples + 1
    if incident:
        # The estimate is used at once: the fallback describes the pool before it slowed.
        samples = max(samples, params.min_capacity_samples)
    if obs.latency_ms <= target_ms:
        rps = max(current, per_pod)
        ceiling = max(ceiling, per_pod)
        if incident and obs.latency_ms > params.incident_knee_ratio * target_ms:
            # Close to the target, latency is near proportional to load: the point
            # estimate, never under the rate the pods just sustained nor under the floor.
            rps = max(per_pod, min(current, per_pod * target_ms / obs.latency_ms), min(current, _floor(out, pool, precision, ceiling, True, params)))
        comfortable = obs.latency_ms <= params.relax_latency_ratio * target_ms
        room = obs.latency_ms <= params.probe_latency_ratio * target_ms
        planned = params.probe_load_ratio * params.target_utilization * current
        if room and not incident and not old.overloaded and per_pod >= planned:
            # Additive increase until the first overload (EngineParams.capacity_probe),
            # never past what the latency curve allows at this load.
            rps = max(rps, min(current * (1.0 + params.capacity_probe), per_pod * target_ms / obs.latency_ms))
        # Handing traffic back, any room under the target lets the estimate relax:
        # waiting for a comfortable pool could hold the cut-back for good.
        if not incident and (comfortable or (relax_to_fallback and room)):
            # Only upwards, as far as a rate the pods have actually sustained (or,
            # handing traffic back, the documented fallback).
            anchor = proven_ceiling(out, pool, precision, params, own=ceiling)
            if relax_to_fallback:
                anchor = max(anchor, fallback_for(precision, params))
            rps += params.capacity_relax * max(0.0, anchor - rps)
    else:
        bound = per_pod * max(params.min_overload_factor, target_ms / obs.latency_ms)
        smoothing = 1.0 if incident else params.capacity_smoothing
        rps = current + smoothing * (min(current, bound) - current)
        rps = max(rps, min(current, _floor(out, pool, precision, ceiling, incident, params)))
    overloaded = old.overloaded or obs.latency_ms > target_ms
    out[k] = CapacityEstimate(rps=rps, ceiling=ceiling, samples=samples, overloaded=overloaded)
    return out


def _floor(capacity: Mapping[str, CapacityEstimate], pool: str, precision: str, ceiling: float, incident: bool,
           params: EngineParams) -> float:
    """The lowest estimate a sample may set: the proven ceiling (or the fallback) / the slowdown bound."""
    anchor = max(proven_ceiling(capacity, pool, precision, params, own=ceiling), fallback_for(precision, params))
    return anchor / (params.incident_max_slowdown if incident else params.max_slowdown)


def proven_ceiling(
    capacity: Mapping[str, CapacityEstimate],
    pool: str,
    precision: str,
    params: EngineParams,
    own: float | None = None,
) -> float:
    """The highest per-pod rate `pool` sustained under the SLO, at `precision` or at
    another precision scaled by the precision speeds."""
    best = own if own is not None else (capacity.get(key(pool, precision)) or CapacityEstimate()).ceiling
    for k, est in capacity.items():
        if k.startswith(f"{pool}/") and k != key(pool, precision) and est.ceiling > 0:
            other = k.split("/", 1)[1]
            best = max(best, est.ceiling * params.speed(precision) / params.speed(other))
    return best


def capacity_for(
    capacity: Mapping[str, CapacityEstimate],
    pool: str,
    precision: str,
    params: EngineParams,
) -> float:
    """Per-pod capacity at the SLO of `pool` at `precision`, requests per second.

    The learned estimate once it has `min_capacity_samples` samples; otherwise
    the best-sampled estimate of the same pool at another precision, scaled by
    the precision speeds; otherwise `fallback_capacity_rps` scaled from fp16.
    """
    own = capacity.get(key(pool, precision))
    if own is not None and own.rps is not None and own.samples >= params.min_capacity_samples:
        return own.rps
    # A rate the pods already sustained under the SLO is a proven lower bound.
    proven = own.ceiling if own is not None else 0.0
    others = [
        (est.samples, k.split("/", 1)[1], est.rps)
        for k, est in capacity.items()
        if k.startswith(f"{pool}/") and k != key(pool, precision) and est.rps is not None
        and est.samples >= params.min_capacity_samples
    ]
    if others:
        _, other_precision, rps = max(others)
        return max(proven, rps * params.speed(precision) / params.speed(other_precision))
    return max(proven, fallback_for(precision, params))


def fallback_for(precision: str, params: EngineParams) -> float:
    """The documented fallback capacity (`fallback_capacity_rps`, at fp16) at `precision`."""
    return params.fallback_capacity_rps * params.speed(precision) / params.speed("fp16")


def degraded_capacity(
    capacity: Mapping[str, CapacityEstimate],
    pool: str,
    precision: str,
    runtime: str,
    params: EngineParams,
) -> float:
    """Per-pod capacity of `pool` back at `precision` while it runs `runtime`
    during an incident: what it showed at `runtime`, carried over by the
    precision speeds, when that is lower than its estimate at `precision`
    (a pool slowed 2.5x at int8 is slowed at fp16 too)."""
    own = capacity_for(capacity, pool, precision, params)
    if runtime == precision:
        return own
    shown = capacity_for(capacity, pool, runtime, params) * params.speed(precision) / params.speed(runtime)
    return min(own, shown)


def after_incident(
    capacity: Mapping[str, CapacityEstimate],
    pool: str,
    template: str,
    runtime: str | None,
    params: EngineParams,
) -> dict[str, CapacityEstimate]:
    """The estimates once an incident's cut-back has completed.

    The pool is back at its template precision: its estimate there starts from
    what the incident showed (`degraded_capacity`), so a slowdown that is still
    there is not forgotten with the restore, and relaxes back up as the pool
    stays comfortable. The runtime precision's estimate described this incident
    only and is dropped: the next incident learns its own.
    """
    out = dict(capacity)
    if runtime is None or runtime == template:
        return out
    degraded = degraded_capacity(out, pool, template, runtime, params)
    own = out.get(key(pool, template), CapacityEstimate())
    if own.rps is None or degraded < own.rps or own.samples < params.min_capacity_samples:
        out[key(pool, template)] = CapacityEstimate(
            rps=degraded, ceiling=own.ceiling, samples=max(own.samples, params.min_capacity_samples), overloaded=True,
        )
    out.pop(key(pool, runtime), None)
    return out
