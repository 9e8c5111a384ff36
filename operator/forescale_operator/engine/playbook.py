"""Rule 3's playbook: what the engine does when an incident starts, and while it lasts.

In order: shift `emergencyWeightPercent` to pool B (never more than B's ready
capacity can take, never to B when its agreement is under `minAgreement`);
downgrade pool A to int8 (when `precisionFallback`, and unless A already
reported int8 agreement under `minAgreement`); warm the caches (a precision
switch empties A's); raise the log level for `debugLogSeconds`; save the
incident scene.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from forescale_operator.reasons import Reason
from forescale_operator.spec import InferenceSpec

from forescale_operator.weights import Weights
from .types import (Action, DowngradePrecision, EnableDebugLogging, EngineParams, Event, Observations, RestorePrecision,
                    SaveSnapshot, ShiftTraffic, WarmCache)

DOWNGRADE_PRECISION = "int8"


def total_rate(obs: Observations) -> float | None:
    """The total request rate: the observed total, else the sum of the pools' rates."""
    if obs.rate_rps is not None:
        return obs.rate_rps
    rates = [p.rate_rps for p in (obs.a, obs.b) if p.rate_rps is not None]
    return sum(rates) if rates else None


@dataclass(frozen=True)
class ShiftLimit:
    """How much of the traffic B may take now, and what limits it."""

    percent: int
    #: the gate that limits it below emergencyWeightPercent, with numbers; None when not limited
    limited_by: str | None
    #: B's ready capacity, requests per second
    ready_capacity: float
    #: B is ejected (ejection.py): the gate holds in every stage of an incident, not only the emergency
    ejected: bool = False


def shift_limit(spec: InferenceSpec, obs: Observations, cap_b: float, params: EngineParams,
                wanted: int | None = None, ejected: str | None = None) -> ShiftLimit:
    """The share of traffic B can take now, up to `wanted` (the emergency split by default):
    the ejection gate (`ejected` says why B is out, ejection.py), the agreement gate, then the
    capacity gate."""
    wanted = spec.traffic.emergency_weight_percent if wanted is None else wanted
    ready_capacity = obs.b.ready_replicas * cap_b
    if ejected:
        return ShiftLimit(0, ejected, ready_capacity, ejected=True)
    min_agreement = spec.emergency.min_agreement
    agreement = obs.b.agreement
    if agreement is not None and agreement < min_agreement:
        return ShiftLimit(0, f"b agreement {agreement:.3f} < minAgreement {min_agreement:g}", ready_capacity)
    if agreement is None and params.require_agreement:
        return ShiftLimit(0, "b agreement not reported", ready_capacity)
    rate = total_rate(obs)
    # A vanishing rate (Prometheus can answer 1e-310) makes the ratio overflow: B can then take everything.
    ratio = 100.0 * ready_capacity / rate if rate is not None and rate > 0 else math.inf
    if math.isfinite(ratio):
        cap_percent = math.floor(ratio + 1e-9)
    else:
        cap_percent = 100 if obs.b.ready_replicas > 0 else 0
    if cap_percent < wanted:
        return ShiftLimit(
            max(0, cap_percent),
            f"b ready capacity {ready_capacity:.0f} rps ({obs.b.ready_replicas} pods) takes {max(0, cap_percent)}% of {rate or 0:.0f} rps",
            ready_capacity,
        )
    return ShiftLimit(wanted, None, ready_capacity)


def shift_action(weight_b: int, message: str) -> Action:
    """The route change to `100 - weight_b` / `weight_b`."""
    return ShiftTraffic(weights=Weights(100 - weight_b, weight_b), message=message)


@dataclass
class PlaybookStart:
    """What starting the playbook decided."""

    weight_b: int
    runtime_precision_a: str | None
    actions: list[Action] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)


def start(
    spec: InferenceSpec,
    obs: Observations,
    trigger: str,
    limit: ShiftLimit,
    cap_a: tuple[float, float],
    int8_rejected: bool,
    now: float,
    params: EngineParams,
) -> PlaybookStart:
    """The five playbook steps, in order, with one event each.

    `cap_a` is A's per-pod capacity at its template precision and at int8.
    """
    a, b = params.pool_name("a"), params.pool_name("b")
    result = PlaybookStart(weight_b=limit.percent, runtime_precision_a=None)
    result.events.append(Event(Reason.EMERGENCY_STARTED, f"Start the incident playbook: {trigger}"))

    # 1. Shift to B, within its gates.
    wanted = spec.traffic.emergency_weight_percent
    if limit.percent > 0:
        if limit.limited_by:
            msg = f"Shift {limit.percent}% to {b}: {trigger}; {limit.limited_by}, not {wanted}%"
        else:
            msg = f"Shift {limit.percent}% to {b}: {trigger}; b ready capacity {limit.ready_capacity:.0f} rps"
        result.actions.append(shift_action(limit.percent, msg))
        result.events.append(Event(Reason.TRAFFIC_SHIFTED, msg))
    elif wanted > 0:
        result.events.append(Event(Reason.TRAFFIC_SHIFTED, f"Skip the shift to {b}, keep 0%: {limit.limited_by}"))

    # 2. Downgrade A to int8; new A pods get it too (Decision.runtime_precision).
    template = spec.a.precision
    if spec.emergency.precision_fallback and template != DOWNGRADE_PRECISION and not int8_rejected:
        msg = (
            f"Downgrade {a} from {template} to {DOWNGRADE_PRECISION}: {trigger}; "
            f"per-pod capacity {cap_a[0]:.0f} -> {cap_a[1]:.0f} rps"
        )
        result.actions.append(DowngradePrecision(precision=DOWNGRADE_PRECISION, message=msg))
        result.events.append(Event(Reason.PRECISION_DOWNGRADED, msg))
        result.runtime_precision_a = DOWNGRADE_PRECISION

    # 3. Warm caches: B is about to take traffic cold, and a precision switch empties A's cache.
    if spec.emergency.cache_warmup:
        msg = f"Warm the top {params.warm_top} recent inputs on {a} and {b}"
        result.actions.append(WarmCache(top=params.warm_top, pools=("a", "b"), message=msg))
        result.events.append(Event(Reason.CACHE_WARMED, msg))

    # 4. Debug logging, bounded in time so that it cannot be forgotten on.
    seconds = spec.emergency.debug_log_seconds
    msg = f"Enable debug logging on {a} and {b} for {seconds} s"
    result.actions.append(EnableDebugLogging(level="DEBUG", seconds=seconds, pools=("a", "b"), message=msg))
    result.events.append(Event(Reason.DEBUG_LOGGING_ENABLED, msg))

    # 5. The scene for the post-mortem.
    window = params.snapshot_window_seconds
    msg = f"Save the incident scene: the last {window:.0f} s of metrics and decisions ({trigger})"
    result.actions.append(SaveSnapshot(window_seconds=window, started_at=now, trigger=trigger, message=msg))
    result.events.append(Event(Reason.SNAPSHOT_SAVED, msg))
    return result


def readjust_shift(current_b: int, limit: ShiftLimit, params: EngineParams) -> tuple[int, Action | None, Event | None]:
    """During the emergency: follow B's gates as its ready capacity or agreement changes."""
    if limit.percent == current_b:
        return current_b, None, None
    b = params.pool_name("b")
    why = limit.limited_by or f"b ready capacity {limit.ready_capacity:.0f} rps"
    msg = f"Shift {limit.percent}% to {b} (was {current_b}%): {why}"
    return limit.percent, shift_action(limit.percent, msg), Event(Reason.TRAFFIC_SHIFTED, msg)


def precision_rejected(spec: InferenceSpec, obs: Observations, runtime_a: str | None, params: EngineParams) -> tuple[Action, Event] | None:
    """A's servers run int8 but report agreement under minAgreement: undo the downgrade."""
    agreement = obs.a.agreement
    if runtime_a != DOWNGRADE_PRECISION or obs.a.precision != DOWNGRADE_PRECISION or agreement is None:
        return None
    if agreement >= spec.emergency.min_agreement:
        return None
    a = params.pool_name("a")
    msg = (
        f"Restore {a} from {DOWNGRADE_PRECISION} to {spec.a.precision}: int8 agreement {agreement:.3f} "
        f"< minAgreement {spec.emergency.min_agreement:g}"
    )
    return RestorePrecision(precision=spec.a.precision, message=msg), Event(Reason.PRECISION_RESTORED, msg)


def apply_to_new_pods(obs: Observations, runtime_a: str | None, last_ready_a: int, params: EngineParams) -> Action | None:
    """Keep the runtime precision on A pods that became ready since the last tick (or report another)."""
    if runtime_a is None:
        return None
    grew = obs.a.ready_replicas > last_ready_a
    drifted = obs.a.precision is not None and obs.a.precision != runtime_a
    if not (grew or drifted):
        return None
    new = obs.a.ready_replicas - last_ready_a
    why = f"{new} new ready pods" if grew else f"pods report {obs.a.precision}"
    msg = f"Apply runtime precision {runtime_a} to {params.pool_name('a')}: {why}"
    return DowngradePrecision(precision=runtime_a, new_pods=max(new, 0), message=msg)


def overload_shift(
    spec: InferenceSpec,
    obs: Observations,
    current_b: int,
    ready_capacity_a: float,
    cap_b: float,
    params: EngineParams,
    missed: str | None = None,
    ejected: str | None = None,
) -> tuple[int, list[Action], list[Event]]:
    """Rule 2's overload answer: while A's ready pods cannot carry the load, send the
    excess to B's idle reserve (within B's gates), never less while A's new pods are
    still starting; all of it back once they are ready and carry it. `missed` says why
    A's ready capacity was counted below its model's (a tick over the target).

    No playbook: no int8, no debug logs. The model says the pods are healthy and
    only too few; the pods being added will carry it when ready.
    """
    rate = total_rate(obs) or 0.0
    a, b = params.pool_name("a"), params.pool_name("b")
    excess = rate - ready_capacity_a
    # Pods of A still starting are the ones the overload asked for: the shift holds until they are
    # ready. Handed back as soon as one tick's rate fitted A's ready capacity, the shift flapped
    # (5, 9, 0, 2, 0, 12% a tick apart on ServeGen m-mid at 1x, 2 pods at 85% of their capacity),
    # and each return met the next burst with A alone.
    coming = obs.a.replicas > obs.a.ready_replicas
    wanted = min(100, math.ceil(100.0 * excess / rate - 1e-9)) if excess > 1e-9 and rate > 0 else 0
    if coming and current_b > 0:
        wanted = max(wanted, current_b)
    # The user's bound on B's share outside an incident: B's model may answer less well than A's.
    most = spec.traffic.overload_max_percent
    bounded = f"traffic.overloadMaxPercent {most}" if wanted > most else None
    wanted = min(wanted, most)
    if wanted > 0:
        limit = shift_limit(spec, obs, cap_b, params, wanted, ejected)
        new_b = limit.percent
        if new_b == current_b:
            return current_b, [], []
        load = (missed or f"a ready capacity {ready_capacity_a:.0f} rps < {rate:.0f} rps" if excess > 1e-9 else
                f"{a}'s new pods still starting ({obs.a.ready_replicas} of {obs.a.replicas} ready)")
        why = f"{load}; {limit.limited_by or bounded or f'b ready capacity {limit.ready_capacity:.0f} rps'}"
        if current_b == 0:
            msg = f"Overload: shift {new_b}% to {b} until {a} has pods for it: {why}"
            return new_b, [shift_action(new_b, msg)], [Event(Reason.OVERLOAD, msg)]
        msg = (f"Shift {new_b}% to {b} (was {current_b}%), overload: {why}" if new_b else
               f"Return all traffic to {a} (b was {current_b}%), overload: {why}")
        return new_b, [shift_action(new_b, msg)], [Event(Reason.TRAFFIC_SHIFTED, msg)]
    if current_b == 0:
        return 0, [], []
    if bounded:  # overloadMaxPercent lowered to 0 during a shift
        msg = f"Return all traffic to {a} (b was {current_b}%): {bounded}, the overload is answered by scaling alone"
        return 0, [shift_action(0, msg)], [Event(Reason.TRAFFIC_SHIFTED, msg)]
    msg = (f"Return all traffic to {a} (b was {current_b}%): overload over, a ready capacity {ready_capacity_a:.0f} rps "
           f">= {rate:.0f} rps with its {obs.a.ready_replicas} pods ready")
    return 0, [shift_action(0, msg)], [Event(Reason.TRAFFIC_SHIFTED, msg)]
