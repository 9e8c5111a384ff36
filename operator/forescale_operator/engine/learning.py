"""Rule 1 applied to a tick: fold each pool's observation into its latency model.

- A pool's first tick starts its model from the prior (the load-tested capacity).
- A sample needs ready pods, a rate, a finite latency, and a fleet that did not
  change since the last tick (its rate window would mix two fleet sizes). A's
  samples also wait out the trigger window after an overload: requests queued
  then still finish, slow, and would read as slow pods. The curve (and the
  proven rate) learns only from a tick whose queue is within Little's law at its
  rate and latency (`_steady`): at an overload's onset the latency read is of
  the requests that finished, not of those waiting.
- Pool A during an incident learns only its health h (the curve moved); the
  healthy curve is learned outside incidents only, and only from samples the
  Kalman gate accepts.
- A learned sample served within the target raises the pool's proven rate:
  with the prior, the evidence that bounds the capacity (latency_model.py).
- Each pool's clock (pod_clock.py) learns from the device time its pods report
  (`learn_clock`): A's not during an incident, nor while A misses its target at
  a load its model says it carries; B's only while it serves a share, and not
  while it misses its target at a load its model says it carries (ejection.py
  asks it).
- Once a pool's fitted capacity departs from the prior by more than
  `contradiction_ratio` after `min_model_samples` samples, one event says the
  pods win over the annotation or load test (rule 1's "bad input").
"""

from __future__ import annotations

import math
from typing import Mapping

from forescale_operator.reasons import Reason
from forescale_operator.spec import InferenceSpec

from .latency_model import PoolModel
from .pod_clock import PodClock
from .types import EngineParams, Event, Observations, PoolObservation


def learn(
    spec: InferenceSpec,
    models: Mapping[str, PoolModel],
    obs: Observations,
    last_ready: Mapping[str, int],
    precision: Mapping[str, str],
    incident_on_a: bool,
    draining_a: bool,
    params: EngineParams,
) -> dict[str, PoolModel]:
    """The models after this tick's samples. `draining_a`: A was overloaded within the
    trigger window, so its latency still shows the queue of then, not the pods of now."""
    target = spec.slo.target_latency_ms
    out = {}
    for pool in ("a", "b"):
        model = models.get(pool) or PoolModel.prior(params.prior_rps(pool, spec.pool(pool).precision), target)
        o = obs.pool(pool)
        valid = (
            not (draining_a and pool == "a")
            and o.ready_replicas > 0 and o.ready_replicas == last_ready.get(pool)
            and o.rate_rps is not None and math.isfinite(o.rate_rps) and o.rate_rps > 0
            and o.latency_ms is not None and math.isfinite(o.latency_ms) and o.latency_ms > 0
        )
        if valid:
            per_pod = o.rate_rps / o.ready_replicas
            speed = params.pool_speed(o, precision[pool])
            if not (incident_on_a and pool == "a") and _steady(o, params):
                model, _ = model.learn(per_pod, o.latency_ms, speed, params.model, target)
            model = model.track_health(per_pod, o.latency_ms, speed, params.model)
        out[pool] = model
    return out


def _steady(o: PoolObservation, params: EngineParams) -> bool:
    """The tick's latency is the pods' at its load: no more requests waiting than Little's law puts in
    the system at that load and latency (rate x the quantile's latency, more than the mean's).

    Why: latency is read from the requests that finished. At an overload's onset the queue fills at
    once, but the requests in it finish later, so the tick shows a rate the pods cannot hold next to
    the latency of before. Learned, that sample raised the curve and the proven rate for good: a step
    from 5 to 20 req/s (synthetic, seed 0) put 5.5 req/s per pod within the target on 2 LLM pods whose
    capacity is 2.7, A was sized at 4.6 per pod from then on and stayed over the SLO for 160 s."""
    if o.queue_depth is None or not math.isfinite(o.queue_depth):
        return True
    return o.queue_depth <= max(params.queue_min_depth, o.rate_rps * o.latency_ms / 1000.0)


def learn_clock(
    clock: PodClock | None,
    pool: PoolObservation,
    ready_before: int | None,
    speed: float,
    hold: bool,
    params: EngineParams,
) -> PodClock | None:
    """A pool's clock after this tick (None while its pods never reported device time).

    A sample needs the device time and the unit's size and, as a latency sample, a fleet that
    did not change since the last tick. The caller holds it (`hold`) where the tick may show pods
    that are not their usual: A during an incident, or while it misses its target at a load the
    latency model says it carries (a tick like that may be an incident not yet called: a clock
    learned then, in the first minutes of an operator, took a slowdown for the usual); B without
    a share since the last tick (its leftovers), or over its target at a load its model says it
    carries. An overload's ticks are taken: a queue makes requests wait, not the device slower."""
    if pool.service_ms is None or pool.service_size is None:
        return clock
    clock = clock or PodClock()
    if hold or not pool.ready_replicas or pool.ready_replicas != ready_before:
        return clock
    return clock.learn(pool.service_size, pool.service_ms, speed, params.model.gate_sigmas, params.model.drift)


def contradictions(
    models: Mapping[str, PoolModel],
    reported: tuple[str, ...],
    target_ms: float,
    params: EngineParams,
) -> tuple[list[Event], tuple[str, ...]]:
    """One CapacityLearned event per pool whose fit contradicts its prior."""
    events = []
    for pool, model in sorted(models.items()):
        if pool in reported or model.samples < params.min_model_samples or model.prior_rps <= 0:
            continue
        fitted = model.capacity(target_ms, health=1.0)
        if abs(fitted / model.prior_rps - 1.0) > params.contradiction_ratio:
            events.append(Event(Reason.CAPACITY_LEARNED, (
                f"The pods of {params.pool_name(pool)} show {fitted:.1f} rps per pod at {target_ms:.0f} ms, not the "
                f"prior's {model.prior_rps:.1f} (annotation or load test): sizing follows the pods; "
                f"{model.describe(target_ms)}")))
            reported = tuple(sorted(reported + (pool,)))
    return events, reported


def clock_summary(clock: PodClock, ratio: float | None, line: float) -> dict[str, float | int | None]:
    """A pool's clock for status (`status.pools.*.model.clock`), at the reference precision: the
    line's two terms, this tick's ratio to it (None when not measured or still learning), the
    ratio past which the pods changed, and its samples."""
    return {
        "msPerUnit": round(clock.x[0], 4),
        "msPerItem": round(clock.x[1], 5),
        "ratio": None if ratio is None else round(ratio, 3),
        "line": round(line, 3),
        "samples": clock.samples,
        "outliers": clock.outliers,
    }


def summary(model: PoolModel, target_ms: float, speed: float, params: EngineParams) -> dict[str, float]:
    """The fitted parameters for status (`status.pools.*.model`)."""
    return {
        "l0Ms": round(model.l0_ms / speed, 3),
        "muRps": round(model.mu_rps * speed, 3),
        "capacityRps": round(model.capacity(target_ms, speed, health=1.0), 3),
        "health": round(model.health, 3),
        "samples": model.samples,
        "outliers": model.outliers,
        "priorRps": round(model.prior_rps * speed, 3),
        "provenRps": round(model.proven_rps * speed, 3),
    }


def prior_reason(pool: str, model: PoolModel, target_ms: float, params: EngineParams) -> str | None:
    """Why a pool's capacity still comes from the prior (too few samples, or a constant load), or None."""
    if model.samples >= params.min_model_samples and model.rate_hi >= 1.5 * model.rate_lo:
        return None
    if model.samples < params.min_model_samples:
        why = f"{model.samples} of {params.min_model_samples} samples"
    else:
        why = f"load constant at {model.rate_lo:.1f}-{model.rate_hi:.1f} rps per pod"
    return (f"{params.pool_name(pool)} latency model: capacity {model.capacity(target_ms, health=1.0):.1f} rps per pod "
            f"mostly from the prior {model.prior_rps:.1f} ({why})")
