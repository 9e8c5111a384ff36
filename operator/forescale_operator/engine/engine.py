"""`decide`: one tick of the decision engine. Pure: plain data in, a Decision out.

The order of a tick: remember start-up times; learn capacity (rule 1); check
the triggers (rule 3); start or advance the incident (rules 3 and 4); size
both pools for the resulting weights (rule 2); derive the phase, events,
conditions and summary; wrap it all as a preview when the spec says so (rule 5).
"""

from __future__ import annotations

from dataclasses import replace

from forescale_operator.phase import Phase
from forescale_operator.reasons import Reason
from forescale_operator.spec import InferenceSpec
from forescale_predictor.forecast_types import Forecast

from . import capacity as cap
from . import cutback, playbook, preview, sizing, triggers
from .report import conditions, phase_for, scale_events, summary
from .state import EngineState
from .types import Action, Decision, EngineParams, Event, Observations


def decide(
    spec: InferenceSpec,
    state: EngineState,
    obs: Observations,
    forecast: Forecast | None,
    now: float,
    params: EngineParams = EngineParams(),
) -> Decision:
    """Decide replicas, weights, runtime precision, playbook actions and phase for this tick.

    Deterministic: the same inputs give the same Decision. `now` is the tick's
    time in epoch seconds (never read from a clock here).
    """
    target = spec.slo.target_latency_ms
    startup = {
        p: obs.pool(p).startup_seconds if obs.pool(p).startup_seconds is not None else state.startup.get(p)
        for p in ("a", "b")
    }
    if not obs.metrics_available:
        return preview.wrap(spec, _hold(spec, replace(state, startup=startup), obs, forecast, params), params)

    # Rule 1: learn from what each pool ran at while measured.
    runtime_a = state.runtime_precision_a
    prec_a = runtime_a or spec.a.precision
    # During an incident A's estimate follows A as it is (Emergency, Recovering);
    # while traffic goes back to it (CuttingBack) comfortable ticks relax it again,
    # towards the fallback too, or a pool whose slowdown has ended could wait for
    # ever at a maxReplicas under the incident's estimate. A tick at which A's ready
    # pods changed mixes two fleet sizes in one rate window: it teaches nothing then.
    learned = dict(state.capacity)
    if state.incident is None or obs.a.ready_replicas == state.last_ready_a:
        learned = cap.learn(learned, "a", obs.a.precision or prec_a, obs.a, target, params,
                            incident=state.incident in (Phase.EMERGENCY, Phase.RECOVERING),
                            relax_to_fallback=state.incident is Phase.CUTTING_BACK)
    learned = cap.learn(learned, "b", obs.b.precision or spec.b.precision, obs.b, target, params)
    cap_b = cap.capacity_for(learned, "b", spec.b.precision, params)

    # Rule 3: triggers.
    check = triggers.check(spec, obs, forecast, state.queue, now, params, state.breaches)
    label = triggers.quantile_label(spec.slo.quantile)
    actions: list[Action] = []
    events: list[Event] = []
    reasons: list[str] = []
    spike = check.has(triggers.FORECAST)
    if spike and not state.forecast_spike:
        events.append(Event(Reason.FORECAST_SPIKE, "Act on the " + next(t.message for t in check.fired if t.kind == triggers.FORECAST)))

    limit = playbook.shift_limit(spec, obs, cap_b, params)
    weight_b = state.weights["b"]
    incident, trigger = state.incident, state.trigger
    emergency_started_at, emergency_weight_b = state.emergency_started_at, state.emergency_weight_b
    under_since, step, next_at = state.under_slo_since, state.cutback_step, state.cutback_next_at
    int8_rejected = state.int8_rejected
    finished_incident = False

    # A forecast spike starts the playbook when it appears, not for as long as it
    # lasts: a forecaster that keeps predicting a finished incident must not
    # restart the playbook every time a cut-back completes.
    starting = [t for t in check.fired if t.kind != triggers.FORECAST or not state.forecast_spike]
    if incident is None and starting:
        trigger = "; ".join(t.message for t in starting)
        started = playbook.start(
            spec, obs, trigger, limit,
            (cap.capacity_for(learned, "a", spec.a.precision, params),
             cap.capacity_for(learned, "a", playbook.DOWNGRADE_PRECISION, params)),
            int8_rejected, now, params,
        )
        actions += started.actions
        events += started.events
        weight_b = emergency_weight_b = started.weight_b
        runtime_a = started.runtime_precision_a
        incident, emergency_started_at, under_since, step, next_at = Phase.EMERGENCY, now, None, 0, None
    elif incident is not None:
        rejected = playbook.precision_rejected(spec, obs, runtime_a, params)
        if rejected:
            actions.append(rejected[0])
            events.append(rejected[1])
            runtime_a, int8_rejected = None, True
        if incident is Phase.EMERGENCY:
            weight_b, action, event = playbook.readjust_shift(weight_b, limit, params)
            if action:
                actions.append(action)
                events.append(event)
                emergency_weight_b = weight_b
        health = cutback.Health(triggers.overall_latency(obs), check.beyond_latency, label)
        progress = cutback.advance(
            spec,
            cutback.Progress(incident, weight_b, under_since, step, next_at, runtime_a, emergency_weight_b),
            health,
            playbook.total_rate(obs) or 0.0,
            obs.a.ready_replicas,
            cap.capacity_for(learned, "a", runtime_a or spec.a.precision, params),
            cap.degraded_capacity(learned, "a", spec.a.precision, runtime_a or spec.a.precision, params),
            limit, now, params,
        )
        actions += progress.actions
        events += progress.events
        reasons += progress.reasons
        incident, weight_b, under_since = progress.incident, progress.weight_b, progress.under_slo_since
        step, next_at, runtime_a = progress.step, progress.next_at, progress.runtime_precision_a
        emergency_weight_b = progress.emergency_weight_b
        if incident is None:
            trigger, emergency_started_at = None, None
            # A's recommendations during the incident sized a degraded pool: once
            # it carries all traffic at its template precision again they no
            # longer hold it up (B's reserve recommendations still do). What the
            # incident showed carries over to the template precision instead.
            finished_incident = True
            learned = cap.after_incident(learned, "a", spec.a.precision, state.runtime_precision_a, params)

    new_pods = playbook.apply_to_new_pods(obs, runtime_a, state.last_ready_a, params) if runtime_a == state.runtime_precision_a else None
    if new_pods:
        actions.append(new_pods)

    # Rule 2: sizing for the weights just decided.
    weights = {"a": 100 - weight_b, "b": weight_b}
    prec_a = runtime_a or spec.a.precision
    cap_a = cap.capacity_for(learned, "a", prec_a, params)
    # While traffic returns to A, size A for its share after the next step.
    if incident in (Phase.RECOVERING, Phase.CUTTING_BACK):
        share_a = min(100, weights["a"] + spec.traffic.cutback.step_percent)
        # The precision comes back with the last step only: until then A serves at its runtime precision.
        size_cap_a = cap_a if share_a < 100 else min(cap_a, cap.degraded_capacity(learned, "a", spec.a.precision, prec_a, params))
    else:
        share_a, size_cap_a = weights["a"], cap_a
    startup_a = startup["a"] if startup["a"] is not None else params.default_startup_seconds
    dem = sizing.demand(forecast, playbook.total_rate(obs), now, startup_a)
    window = sizing.stabilization_window(params, spec.forecast.step_seconds)
    history = dict(state.history)
    if finished_incident:
        # An entry at 0 replaces the window (an empty one would be seeded with the current replicas).
        history["a"] = ((now, 0),)
    desired: dict[str, int] = {}
    saturated = False
    if dem is None:
        reasons.append("no rate and no forecast: replicas held")
        desired = {p: sizing.clamp(obs.pool(p).replicas, spec.pool(p).min_replicas, spec.pool(p).max_replicas) for p in ("a", "b")}
    else:
        raw_a = sizing.pods_for(share_a / 100.0 * dem.at_ready, size_cap_a, params.target_utilization)
        raw_b = max(
            sizing.pods_for(weights["b"] / 100.0 * dem.at_ready, cap_b, params.target_utilization),
            sizing.pods_for(spec.warm_reserve_percent / 100.0 * dem.peak, cap_b),
            sizing.pods_for(spec.traffic.emergency_weight_percent / 100.0 * dem.observed, cap_b),
        )
        if raw_a > spec.a.max_replicas:
            saturated = True
            reasons.append(
                f"SLO unreachable within maxReplicas: a needs {raw_a} pods for {share_a}% of {dem.at_ready:.0f} rps "
                f"at {size_cap_a:.1f} rps per pod, max {spec.a.max_replicas}"
            )
        if raw_b > spec.b.max_replicas:
            reasons.append(
                f"b's bounds make the reserve impossible: b needs {raw_b} pods at {cap_b:.1f} rps per pod "
                f"(reserve {spec.warm_reserve_percent}% of {dem.peak:.0f} rps, emergency {spec.traffic.emergency_weight_percent}% "
                f"of {dem.observed:.0f} rps), max {spec.b.max_replicas}"
            )
        for p, raw in (("a", raw_a), ("b", raw_b)):
            pool = spec.pool(p)
            raw = sizing.clamp(raw, pool.min_replicas, pool.max_replicas)
            current = sizing.clamp(obs.pool(p).replicas, pool.min_replicas, pool.max_replicas)
            stable, history[p] = sizing.stabilize(history.get(p, ()), now, current, raw, window)
            desired[p] = sizing.clamp(stable, pool.min_replicas, pool.max_replicas)
            if stable < current or raw < current:
                if desired[p] > raw:
                    reasons.append(f"{p} held at {desired[p]} (raw {raw}) by the {window:.0f} s stabilization window")

    capacity_rps = {"a": cap_a, "b": cap_b}
    sizing_a = (size_cap_a, spec.a.precision) if size_cap_a != cap_a else None
    events += scale_events(spec, state.last_desired, obs, desired, dem, capacity_rps, prec_a, params, share_a, sizing_a)

    phase = phase_for(incident, obs, desired, saturated)
    new_state = replace(
        state,
        phase=phase,
        startup=startup,
        incident=incident,
        weights=weights,
        runtime_precision_a=runtime_a,
        trigger=trigger,
        emergency_started_at=emergency_started_at,
        emergency_weight_b=emergency_weight_b,
        under_slo_since=under_since,
        cutback_step=step,
        cutback_next_at=next_at,
        history=history,
        capacity=learned,
        metrics_unavailable=False,
        queue=check.queue,
        breaches=check.breaches,
        last_desired=desired,
        forecast_spike=spike,
        int8_rejected=int8_rejected,
        last_ready_a=obs.a.ready_replicas,
    )
    runtime_precision = {"a": prec_a, "b": spec.b.precision}
    decision = Decision(
        desired_replicas=desired,
        weights=weights,
        runtime_precision=runtime_precision,
        actions=tuple(actions),
        phase=phase,
        events=tuple(events),
        state=new_state,
        capacity_rps=capacity_rps,
        conditions=conditions(spec, phase, obs, forecast, incident, summary_reasons := tuple(reasons)),
        summary=summary(phase, obs, desired, weights, dem, label, target, summary_reasons, prec_a),
        reasons=summary_reasons,
    )
    return preview.wrap(spec, decision, params)


def _hold(spec: InferenceSpec, state: EngineState, obs: Observations, forecast: Forecast | None, params: EngineParams) -> Decision:
    """Metrics unavailable: hold replicas, weights and precision; Degraded; one event on the transition."""
    desired = {p: sizing.clamp(obs.pool(p).replicas, spec.pool(p).min_replicas, spec.pool(p).max_replicas) for p in ("a", "b")}
    events = []
    if not state.metrics_unavailable:
        events.append(Event(
            Reason.METRICS_UNAVAILABLE,
            f"Hold replicas at a {desired['a']}, b {desired['b']} and weights at {state.weights['a']}/{state.weights['b']}: "
            "metrics unavailable",
        ))
    reason = "metrics unavailable: replicas and weights held"
    new_state = replace(state, metrics_unavailable=True, phase=Phase.DEGRADED, last_desired=desired)
    prec_a = state.runtime_precision_a or spec.a.precision
    weights = dict(state.weights)
    return Decision(
        desired_replicas=desired,
        weights=weights,
        runtime_precision={"a": prec_a, "b": spec.b.precision},
        actions=(),
        phase=Phase.DEGRADED,
        events=tuple(events),
        state=new_state,
        capacity_rps={
            "a": cap.capacity_for(state.capacity, "a", prec_a, params),
            "b": cap.capacity_for(state.capacity, "b", spec.b.precision, params),
        },
        conditions=conditions(spec, Phase.DEGRADED, obs, forecast, state.incident, (reason,), metrics=False),
        summary=summary(Phase.DEGRADED, obs, desired, weights, None, triggers.quantile_label(spec.slo.quantile),
                        spec.slo.target_latency_ms, (reason,), prec_a),
        reasons=(reason,),
    )

