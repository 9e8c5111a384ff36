"""`decide`: one tick of the decision engine. Pure: plain data in, a Decision out.

The order of a tick:
1. learn: fold the tick into each pool's latency model (rule 1), and A's stretch into its budget (rule 2);
2. diagnose: incident or overload (rule 3);
3. incident: start the playbook, or advance recovery and the cut-back (rules 3, 4);
4. overload: outside an incident, move A's excess to B's reserve while A's pods start (rule 2);
5. size both pools for the weights just decided (rule 2);
6. report: phase, events, conditions, summary; wrapped as a preview when the spec says so (rule 5).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from forescale_operator.phase import Phase
from forescale_operator.reasons import Reason
from forescale_operator.spec import InferenceSpec
from forescale_predictor.forecast_types import Forecast

from . import budget, cutback, ejection, learning, playbook, preview, sizing, triggers
from .latency_model import PoolModel
from .pod_clock import PodClock
from .report import conditions, phase_for, scale_events, summary
from .state import EngineState, IncidentState, Learned
from .types import Action, Decision, EngineParams, Event, Observations


@dataclass
class Tick:
    """What one tick has decided so far (filled step by step)."""

    incident: IncidentState
    weight_b: int
    actions: list[Action] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    finished_incident: bool = False


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
    startup = {p: obs.pool(p).startup_seconds if obs.pool(p).startup_seconds is not None else state.learned.startup.get(p)
               for p in ("a", "b")}
    if not obs.metrics_available:
        held = replace(state, learned=replace(state.learned, startup=startup))
        return preview.wrap(spec, _hold(spec, held, obs, forecast, params), params)
    target = spec.slo.target_latency_ms
    inc = state.incident
    tick = Tick(incident=inc, weight_b=state.weights["b"])

    # 1. Learn: each pool's latency model (A learns only its health during an incident).
    precision = {"a": inc.runtime_precision_a or spec.a.precision, "b": spec.b.precision}
    models = learning.learn(spec, state.learned.models, obs, state.learned.last_ready, precision,
                            inc.stage is not None, any(x > 1.0 for x in state.learned.loads), params)
    contradiction_events, contradicted = learning.contradictions(models, state.learned.contradicted, target, params)
    tick.events += contradiction_events
    stretch, spent = _stretch(spec, state, obs, models["a"], precision["a"], params)

    # 2. Diagnose: is A doing worse than its model predicts at the load it carries, and is its
    # device slower than its clock? (The clock is asked before this tick's sample, then learns it.)
    clock = state.learned.clocks.get("a")
    health = _health(obs, models["a"], clock, precision["a"], target, state.learned.loads, params)
    check = triggers.check(spec, obs, forecast, health, state.learned.queue, state.learned.ratios,
                           state.learned.burn, now, params, state.learned.slow)
    missed = health.latency_ms is not None and health.latency_ms > target and not health.explained
    clock = learning.learn_clock(clock, obs.a, state.learned.last_ready.get("a"),
                                 params.pool_speed(obs.a, precision["a"]), inc.stage is not None or missed, params)
    if check.load_note:
        tick.reasons.append(check.load_note)
    spike = check.has(triggers.FORECAST)
    if spike and not state.learned.forecast_spike:
        tick.events.append(Event(Reason.FORECAST_SPIKE, "Size for the " + next(
            t.message for t in check.fired if t.kind == triggers.FORECAST)))

    # B out of the shifts while its pods fail the requests they are given, or its device runs slow (ejection.py).
    ejected, clock_b, device_b = _judge_b(spec, state, obs, models["b"], precision["b"], now, params)
    b_out = ejected.gate(now)
    if b_out and ejected is not state.learned.ejection:
        tick.events.append(Event(Reason.BACKUP_EJECTED, (
            f"Eject {params.pool_name('b')} from the traffic shifts for {ejected.until - now:.0f} s "
            f"({ejected.count} in a row): {ejected.why}")))
    if b_out:
        tick.reasons.append(b_out)

    # 3. Incident: start the playbook, or move recovery and the cut-back on.
    cap_b = models["b"].capacity(target, params.speed(spec.b.precision), health=1.0)
    limit = playbook.shift_limit(spec, obs, cap_b, params, ejected=b_out)
    if inc.stage is None and check.starting:
        _start_incident(spec, tick, check, obs, models["a"], limit, now, params)
    elif inc.stage is not None:
        _advance_incident(spec, tick, check, obs, models["a"], _pods_health(models["a"], health), limit, now, params)

    # A over its target this tick (its own latency; the overload shift and A's health read it)
    a_missed = obs.a.latency_ms is not None and obs.a.latency_ms > target
    h_now = _missed_health(models["a"], health, a_missed)

    # 4. Overload: outside an incident, B's reserve takes what A's ready pods cannot, until they can.
    if tick.incident.stage is None and not tick.finished_incident:
        cap_a = models["a"].capacity(target, params.speed(precision["a"]), health=h_now)
        ready_a, missed_note = _ready_capacity_a(spec, obs, obs.a.ready_replicas * cap_a * stretch, target, a_missed)
        weight_b, actions, events = playbook.overload_shift(spec, obs, tick.weight_b, ready_a, cap_b, params,
                                                            missed_note, b_out)
        tick.weight_b = weight_b
        tick.actions += actions
        tick.events += events
        tick.incident = replace(tick.incident, overload=weight_b > 0)

    new_pods = (playbook.apply_to_new_pods(obs, tick.incident.runtime_precision_a, state.learned.last_ready.get("a", 0), params)
                if tick.incident.runtime_precision_a == inc.runtime_precision_a else None)
    if new_pods:
        tick.actions.append(new_pods)

    # 5. Size both pools for the weights just decided.
    runtime_a = tick.incident.runtime_precision_a
    prec_a = runtime_a or spec.a.precision
    in_incident = tick.incident.stage is not None
    h = _pods_health(models["a"], health) if in_incident else h_now
    if h > 1.0:
        source = "its device clock" if health.clock_slow else "its latency against its model"
        tick.reasons.append(f"a sized at health {h:.2f}: its pods take {h:.2f}x their curve's time ({source})")
    cap_a = models["a"].capacity(target, params.speed(prec_a), health=h)
    weights = {"a": 100 - tick.weight_b, "b": tick.weight_b}
    share_a = weights["a"]
    size_prec_a = prec_a
    if tick.incident.stage in (Phase.RECOVERING, Phase.CUTTING_BACK):
        # A's pods must be ready before the next step needs them; the last step restores the template precision.
        share_a = min(100, weights["a"] + spec.traffic.cutback.step_percent)
        if share_a >= 100 and params.speed(spec.a.precision) < params.speed(prec_a):
            size_prec_a = spec.a.precision
    elif tick.incident.overload:
        share_a = 100  # the overload shift is A's until its pods are ready
    size_cap_a = _sizing_capacity(models["a"], "a", target, size_prec_a, h, tick, params) * stretch
    if stretch > 1.0:
        tick.reasons.append(f"a sized at {stretch:.2f}x its model's capacity: the error budget held at that load "
                            f"(bounded by the load test or the pods' best within the target, "
                            f"{models['a'].evidence_rps:.1f} rps per pod)")
    elif stretch < 1.0:
        tick.reasons.append(f"a sized at {stretch:.2f}x its model's capacity: the error budget was overspent at "
                            f"a load a was sized for ({size_cap_a:.1f} rps per pod)")
    startup_a = startup["a"] if startup["a"] is not None else params.default_startup_seconds
    dem = sizing.demand(forecast, playbook.total_rate(obs), now, startup_a)
    # B at its health while it carries traffic, as A is in an incident: B's share is the engine's to give,
    # and pods slower than their curve (a lighter model under a load its test never saw) need more of them.
    # Sized healthy, B stayed overloaded, and so did the overall p99 that recovery waits on (Mooncake at 30x
    # with the incident, bench.unseen_traffic: 940 s over the SLO against 160). Without traffic B's health is
    # the last it showed, not its pods' now, and the reserve is sized healthy.
    h_b = models["b"].health if weights["b"] > 0 else 1.0
    if h_b > 1.0:
        tick.reasons.append(f"b sized at health {h_b:.2f} while it carries {weights['b']}%: its pods take "
                            f"{h_b:.2f}x their curve's time")
    size_cap_b = _sizing_capacity(models["b"], "b", target, spec.b.precision, h_b, tick, params)
    desired, saturated, learned_history = _size(spec, state, obs, dem, forecast, share_a, size_cap_a, size_cap_b,
                                                weights, tick, now, params)
    capacity_rps = {"a": cap_a, "b": cap_b}
    sizing_a = (size_cap_a, size_prec_a) if size_cap_a != cap_a else None
    tick.events += scale_events(spec, state.learned.last_desired, obs, desired, dem, capacity_rps, prec_a, params,
                                share_a, sizing_a)
    for pool in ("a", "b"):
        why = learning.prior_reason(pool, models[pool], target, params)
        if why and (pool == "a" or models["b"].samples):
            tick.reasons.append(why)

    # 6. Report.
    phase = phase_for(tick.incident.stage, obs, desired, saturated)
    learned = Learned(
        models=models,
        clocks={p: c for p, c in (("a", clock), ("b", clock_b)) if c is not None},
        history=learned_history,
        startup=startup,
        last_ready={"a": obs.a.ready_replicas, "b": obs.b.ready_replicas},
        last_desired=desired,
        queue=check.queue,
        loads=check.loads,
        ratios=check.ratios,
        burn=check.burn,
        slow=check.slow,
        forecast_spike=spike,
        metrics_unavailable=False,
        contradicted=contradicted,
        stretch=stretch,
        spent=spent,
        ejection=ejected,
    )
    new_state = EngineState(weights=weights, incident=tick.incident, learned=learned)
    label = triggers.quantile_label(spec.slo.quantile)
    reasons = tuple(tick.reasons)
    decision = Decision(
        desired_replicas=desired,
        weights=weights,
        runtime_precision={"a": prec_a, "b": spec.b.precision},
        actions=tuple(tick.actions),
        phase=phase,
        events=tuple(tick.events),
        state=new_state,
        capacity_rps=capacity_rps,
        conditions=conditions(spec, phase, obs, forecast, tick.incident.stage, reasons),
        summary=summary(phase, obs, desired, weights, dem, label, target, reasons, prec_a),
        reasons=reasons,
        models=_model_reports(models, {"a": (clock, health.clock_ratio, health.clock_line), "b": (clock_b, *device_b)}, target,
                              precision, stretch, params),
    )
    return preview.wrap(spec, decision, params)


def _judge_b(spec: InferenceSpec, state: EngineState, obs: Observations, model: PoolModel, precision: str, now: float,
             params: EngineParams) -> tuple[ejection.Ejection, PodClock | None, tuple[float | None, float]]:
    """B's ejection after this tick, B's clock after it, and this tick's ratio to the clock before it
    with that clock's line.

    What B was given is the share in force since the last tick: a reading of B without one is its
    leftovers'. Its clock is asked before this tick's sample, as A's is, but not at a tick its fleet
    changed (new pods' first batches run cold). It learns as A's does: from a tick B served a share
    with the same fleet, unless B was over the target at a load its model says it carries (a late B
    there may already be slow). B over the target in an overload is taken: a queue makes requests
    wait, not the device slower, and those ticks' larger batches are the sizes B is asked at when a
    shift overloads it (a line learned from one batch size n0 starts as half fixed, half per item,
    and reads 2n / (n0 + n) at size n on a healthy device: 1.3x at twice n0, 1.9x at 16 times)."""
    b = obs.b
    given = state.weights["b"] > 0
    clock = state.learned.clocks.get("b")
    speed = params.pool_speed(b, precision)
    steady = b.ready_replicas > 0 and b.ready_replicas == state.learned.last_ready.get("b")
    ratio = clock.ratio(b.service_size, b.service_ms, speed) if clock is not None and steady else None
    line = clock.line(params.gate_sigmas) if clock is not None else math.inf
    target = spec.slo.target_latency_ms
    late = b.latency_ms is None or not math.isfinite(b.latency_ms) or b.latency_ms > target
    per_pod = b.rate_rps / b.ready_replicas if b.ready_replicas and b.rate_rps is not None else None
    overloaded = per_pod is not None and per_pod > model.capacity(target, speed, health=1.0)
    learned = learning.learn_clock(clock, b, state.learned.last_ready.get("b"), speed,
                                   not given or (late and not overloaded), params)
    failing, served = ejection.judge(spec, obs, given=given, device=(ratio, line))
    return ejection.advance(state.learned.ejection, failing, served, now), learned, (ratio, line)


def _model_reports(models: dict[str, PoolModel], clocks: dict[str, tuple[PodClock | None, float | None, float]],
                   target: float, precision: dict[str, str], stretch: float, params: EngineParams) -> dict[str, dict]:
    """`Decision.models`: each pool's fitted latency model, A's stretch, and each pool's clock under
    `clock`, with this tick's ratio and the line it was judged against (a clock that starts at this
    tick was judged against none: its own line is shown)."""
    out: dict[str, dict] = {p: learning.summary(models[p], target, params.speed(precision[p]), params) for p in ("a", "b")}
    out["a"]["stretch"] = round(stretch, 3)
    for pool, (clock, ratio, line) in clocks.items():
        if clock is not None:
            shown = line if math.isfinite(line) else clock.line(params.gate_sigmas)
            out[pool]["clock"] = learning.clock_summary(clock, ratio, shown)
    return out


def _stretch(spec: InferenceSpec, state: EngineState, obs: Observations, model: PoolModel, precision: str,
             params: EngineParams) -> tuple[float, tuple[float, ...]]:
    """A's stretch after this tick (budget.py): it moves on ticks outside an incident with a measured
    share of requests over the SLO, and is held otherwise."""
    learned = state.learned
    over = obs.over_slo_fraction
    if state.incident.stage is not None or over is None or not math.isfinite(over):
        return learned.stretch, learned.spent
    a = obs.a
    target = spec.slo.target_latency_ms
    per_pod = a.rate_rps / a.ready_replicas if a.ready_replicas and a.rate_rps else 0.0
    tick = budget.Spend(
        over_fraction=min(1.0, max(0.0, over)), budget=1.0 - spec.slo.quantile, per_pod_rps=per_pod,
        capacity_rps=model.capacity(target, params.pool_speed(a, precision), health=1.0),
        ceiling=budget.ceiling(model.evidence_rps, model.capacity(target, health=1.0)))
    return budget.next_stretch(learned.stretch, learned.spent, tick, params.burn_long_ticks)


def _health(obs: Observations, model: PoolModel, clock: PodClock | None, precision: str, target: float,
            loads: tuple[float, ...], params: EngineParams) -> triggers.Health:
    """Pool A's observed latency and load against what its healthy model predicts, and its
    device time against its clock."""
    a = obs.a
    latency = a.latency_ms if a.latency_ms is not None else triggers.overall_latency(obs)
    per_pod = a.rate_rps / a.ready_replicas if a.ready_replicas and a.rate_rps is not None else None
    speed = params.pool_speed(a, precision)
    predicted = model.latency_ms(per_pod or 0.0, speed, health=1.0)
    capacity = model.capacity(target, speed, health=1.0)
    # No ready pod of A with traffic on it is an overload too: nothing can carry it.
    load = (per_pod / capacity if capacity > 0 else float("inf")) if per_pod is not None else (
        float("inf") if not a.ready_replicas and (a.rate_rps or 0) > 0 else 0.0)
    # A tick past the capacity whose latency stayed within the target is no overload: the pods
    # carried it (and it is learned: the evidence that lets the capacity grow past the prior).
    if latency is not None and latency <= target:
        load = min(load, 1.0)
    recent = (loads + (load,))[-params.breach_window_ticks:]
    clock_ratio = clock.ratio(a.service_size, a.service_ms, speed) if clock is not None else None
    clock_line = clock.line(params.gate_sigmas) if clock is not None else math.inf
    return triggers.Health(latency, per_pod, predicted, capacity, sigma=model.sigma, loads=recent,
                           clock_ratio=clock_ratio, clock_line=clock_line)


def _pods_health(model: PoolModel, health: triggers.Health) -> float:
    """How many times their healthy curve's time A's pods take. Where the pods report a clock, the
    clock says: its ratio past its line, their usual speed (1) within it. Without one (or while it
    learns), the latency model's tracked health.

    The clock times the pods' own work, so it is right from the first tick of a slowdown and counts
    no queue. The tracked health is fitted from latency: it lags a step change (1.22, 1.45, 2.06 in
    the first three ticks of a 2.5x slowdown, Azure conv at 10x, seed 2) and then reads the queue
    built meanwhile as slowness (4.05), so A was sized short, then twice over. Outside an incident
    the same: on ServeGen m-small at 10x, seed 1, a ramp's queue took the tracked health to 2.32
    with the clock at 1.00, and A went from 22 to 74 pods (the oracle's peak 32); a miss with the
    device at its usual speed is load, which B's reserve takes (`_ready_capacity_a`).
    """
    if health.clock_ratio is None:
        return model.health
    return max(1.0, health.clock_ratio) if health.clock_slow else 1.0


def _ready_capacity_a(spec: InferenceSpec, obs: Observations, modelled_rps: float, target: float,
                      missed: bool) -> tuple[float, str | None]:
    """What A's ready pods carry within the target, for the overload shift: their model's capacity,
    and, on a tick A missed its target, no more than `1 - warmReservePercent` of what they carry now.

    A miss at a load the model says the pods carry (a burst inside the tick, a knee sharper than the
    curve's) is what the reserve is kept for: B takes the reserve's share of A's load at once, again
    at each tick A still misses, and keeps it while A's new pods start (`playbook.overload_shift`).
    Sizing learns the rest more slowly (the error budget's stretch). On the frontier's 144 cases,
    with the pods' clock deciding their health: 333 -> 334 goals, GPU-h -0.9%, violation s -4.1%;
    counted at 0.9 or 0.7 of the load instead of the reserve's 0.8: 333 and 335 goals, the latter
    with 3 false emergencies (docs/frontier.md).
    """
    a = obs.a
    if not missed or not a.rate_rps or not a.ready_replicas:
        return modelled_rps, None
    keep = 1.0 - spec.warm_reserve_percent / 100.0
    if keep * a.rate_rps >= modelled_rps:
        return modelled_rps, None
    return keep * a.rate_rps, (f"a missed its target ({a.latency_ms:.0f} ms > {target:.0f} ms) at "
                               f"{a.rate_rps / a.ready_replicas:.1f} rps per pod; b's reserve takes "
                               f"{spec.warm_reserve_percent}% of a's {a.rate_rps:.0f} rps")


def _missed_health(model: PoolModel, health: triggers.Health, missed: bool) -> float:
    """The health outside an incident: the pods' (`_pods_health`) while A misses the target, else 1.

    A miss that starts no playbook (a burst inside the step, a knee sharper than the model's, a
    slowdown too small to call) still shows the pods carry less than the healthy curve says: it is
    an overload at the health they show, answered by B's reserve at once and by pods. The smoothed
    h, not this tick's own: sized on one sample's h, A overshot (peak A over 1.5x the oracle's in 5
    of 24 seed-0 frontier cases, against 0) and two false emergencies came back.
    """
    return _pods_health(model, health) if missed else 1.0


def _start_incident(spec: InferenceSpec, tick: Tick, check: triggers.TriggerCheck, obs: Observations,
                    model_a: PoolModel, limit: playbook.ShiftLimit, now: float, params: EngineParams) -> None:
    """Rule 3: the playbook's five steps (an overload shift in force becomes the emergency split)."""
    target = spec.slo.target_latency_ms
    trigger = "; ".join(t.message for t in check.starting)
    caps = (model_a.capacity(target, params.speed(spec.a.precision)),
            model_a.capacity(target, params.speed(playbook.DOWNGRADE_PRECISION)))
    started = playbook.start(spec, obs, trigger, limit, caps, tick.incident.int8_rejected, now, params)
    tick.actions += started.actions
    tick.events += started.events
    tick.weight_b = started.weight_b
    tick.incident = replace(tick.incident, stage=Phase.EMERGENCY, trigger=trigger, started_at=now,
                            emergency_weight_b=started.weight_b, under_slo_since=None, cutback_step=0,
                            cutback_next_at=None, runtime_precision_a=started.runtime_precision_a, overload=False)


def _advance_incident(spec: InferenceSpec, tick: Tick, check: triggers.TriggerCheck, obs: Observations,
                      model_a: PoolModel, h: float, limit: playbook.ShiftLimit, now: float, params: EngineParams) -> None:
    """Rules 3 and 4: follow B's gates during the emergency; recover; cut back; finish."""
    target = spec.slo.target_latency_ms
    inc = tick.incident
    runtime_a = inc.runtime_precision_a
    rejected = playbook.precision_rejected(spec, obs, runtime_a, params)
    if rejected:
        tick.actions.append(rejected[0])
        tick.events.append(rejected[1])
        inc = replace(inc, runtime_precision_a=None, int8_rejected=True)
    emergency_weight_b = inc.emergency_weight_b
    # The emergency follows B's gates each tick; recovery and the cut-back follow only the ejection's,
    # which takes B's share at once (a B failing what it is given helps no stage of an incident).
    if inc.stage is Phase.EMERGENCY or (limit.ejected and limit.percent < tick.weight_b):
        weight_b, action, event = playbook.readjust_shift(tick.weight_b, limit, params)
        if action:
            tick.actions.append(action)
            tick.events.append(event)
            tick.weight_b = weight_b
            if inc.stage is Phase.EMERGENCY:
                emergency_weight_b = weight_b
    health = cutback.Health(triggers.overall_latency(obs), check.beyond_latency, triggers.quantile_label(spec.slo.quantile),
                            device_ratio=check.slow[-1] if check.slow and check.slow[-1] > 0 else None)
    progress = cutback.advance(
        spec,
        cutback.Progress(inc.stage, tick.weight_b, inc.under_slo_since, inc.cutback_step, inc.cutback_next_at,
                         inc.runtime_precision_a, emergency_weight_b),
        health,
        playbook.total_rate(obs) or 0.0,
        obs.a.ready_replicas,
        model_a.capacity(target, params.speed(inc.runtime_precision_a or spec.a.precision), health=h),
        model_a.capacity(target, params.speed(spec.a.precision), health=h),
        limit, now, params,
    )
    tick.actions += progress.actions
    tick.events += progress.events
    tick.reasons += progress.reasons
    tick.weight_b = progress.weight_b
    if progress.incident is None:
        tick.finished_incident = True
        tick.incident = IncidentState(int8_rejected=inc.int8_rejected)
        return
    tick.incident = replace(inc, stage=progress.incident, under_slo_since=progress.under_slo_since,
                            cutback_step=progress.step, cutback_next_at=progress.next_at,
                            runtime_precision_a=progress.runtime_precision_a,
                            emergency_weight_b=progress.emergency_weight_b)


def _sizing_capacity(model: PoolModel, pool: str, target: float, precision: str, health: float,
                     tick: Tick, params: EngineParams) -> float:
    """The per-pod rate to size a pool for: its capacity at the target, or where no count of pods
    meets the target at this health and precision, at the latency the pods can still give
    (`PoolModel.sizing_target`), said in a reason."""
    speed = params.speed(precision)
    sized_for = model.sizing_target(target, speed, health)
    if sized_for != target:
        tick.reasons.append(
            f"no count of {pool}'s pods meets {target:.0f} ms: an unloaded pod takes {model.floor_ms(speed, health):.0f} ms "
            f"(health {health:.2f}, {precision}); sized for {sized_for:.0f} ms, twice that")
    return model.capacity(sized_for, speed, health)


def _size(spec: InferenceSpec, state: EngineState, obs: Observations, dem: sizing.Demand | None,
          forecast: Forecast | None, share_a: int, cap_a: float, cap_b: float, weights: dict[str, int],
          tick: Tick, now: float, params: EngineParams) -> tuple[dict[str, int], bool, dict]:
    """Rule 2: raw needs from the demand and the models, then the scale-up bound,
    stabilization and the pool bounds. Returns (desired, A saturated, history)."""
    startup_a = state.learned.startup.get("a") or obs.a.startup_seconds or params.default_startup_seconds
    window = sizing.stabilization_window(params, startup_a)
    history = dict(state.learned.history)
    if tick.finished_incident:
        # A's recommendations during the incident sized a degraded pool: an entry at 0
        # replaces the window (an empty one would be seeded with the current replicas).
        history["a"] = ((now, 0),)
    if dem is None:
        tick.reasons.append("no rate and no forecast: replicas held")
        return ({p: sizing.clamp(obs.pool(p).replicas, spec.pool(p).min_replicas, spec.pool(p).max_replicas)
                 for p in ("a", "b")}, False, history)
    q = forecast.upper_quantile if forecast is not None else sizing.OBSERVED_QUANTILE
    upper = sizing.window_margin(dem.at_ready, params.slo_window_seconds, q)
    observed = sizing.window_margin(dem.observed, params.slo_window_seconds, q)
    reserve = spec.warm_reserve_percent / 100.0
    expected = sizing.window_margin(dem.expected, params.slo_window_seconds, q)
    # B's reserve is headroom for the band above the expected load, never the expected load itself: sized at
    # (1 - reserve) x upper alone, A was short of what a narrow band expected, and every rise of a cycle the
    # forecast knew met a miss before the overload shift (docs/engine.md, section 5)
    load_a = share_a / 100.0 * max(observed, expected, (1.0 - reserve) * upper)
    # B is sized for the incident's split, not for an overload shift: that shift lasts until A's starting
    # pods are ready, when pods started for B now would be ready too, and are no longer wanted. B's reserve
    # is what takes it. Sized for the shift as well, B started pods for shifts that were over when they came:
    # on the frontier's 144 replays 345 -> 347 goals at -0.1% GPU-h and +0.4% violation s (docs/engine.md, section 5).
    split_b = weights["b"] if tick.incident.stage is not None else 0
    load_b = max(split_b / 100.0 * upper, reserve * sizing.window_margin(dem.peak, params.slo_window_seconds, q))
    raw = {"a": sizing.pods_for(load_a, cap_a), "b": sizing.pods_for(load_b, cap_b)}
    saturated = raw["a"] > spec.a.max_replicas
    if saturated:
        tick.reasons.append(
            f"SLO unreachable within maxReplicas: a needs {raw['a']} pods for {load_a:.0f} rps "
            f"at {cap_a:.1f} rps per pod, max {spec.a.max_replicas}")
    if raw["b"] > spec.b.max_replicas:
        tick.reasons.append(
            f"b's bounds make the reserve impossible: b needs {raw['b']} pods for {load_b:.0f} rps at {cap_b:.1f} rps "
            f"per pod (reserve {spec.warm_reserve_percent}% of {dem.peak:.0f} rps), max {spec.b.max_replicas}")
    desired: dict[str, int] = {}
    for p in ("a", "b"):
        pool = spec.pool(p)
        current = sizing.clamp(obs.pool(p).replicas, pool.min_replicas, pool.max_replicas)
        want = sizing.clamp(raw[p], pool.min_replicas, pool.max_replicas)
        if p == "a" and tick.incident.stage is Phase.EMERGENCY and want < current:
            # The playbook relieves A's pods, it does not retire them: the cut-back needs them back within
            # minutes, the diagnosis reads them, and the bad-pod remedy needs two ready. Sized on a health
            # still catching up with the slowdown (it moves half-way a tick) and at int8's speed, A's raw
            # need at the start is low: the demo's seed 1 went from 3 pods to 2 as the playbook began.
            tick.reasons.append(f"a held at {current} (raw {want}) during the emergency: the playbook relieves "
                                f"A's pods, it does not shrink the pool")
            want = current
        bound = sizing.scale_up_bound(current, params.scale_up_percent, params.scale_up_pods)
        if want > bound:
            tick.reasons.append(f"{p} scale-up bounded to {bound} (needs {want}): at most +{params.scale_up_percent:g}% "
                                f"or +{params.scale_up_pods} pods per tick")
            want = bound
        stable, history[p] = sizing.stabilize(history.get(p, ()), now, current, want, window)
        desired[p] = sizing.clamp(stable, pool.min_replicas, pool.max_replicas)
        if desired[p] > want and (stable < current or want < current):
            tick.reasons.append(f"{p} held at {desired[p]} (raw {want}) by the {window:.0f} s stabilization window")
    return desired, saturated, history


def _hold(spec: InferenceSpec, state: EngineState, obs: Observations, forecast: Forecast | None, params: EngineParams) -> Decision:
    """Metrics unavailable: hold replicas, weights and precision; Degraded; one event on the transition."""
    desired = {p: sizing.clamp(obs.pool(p).replicas, spec.pool(p).min_replicas, spec.pool(p).max_replicas) for p in ("a", "b")}
    events = []
    if not state.learned.metrics_unavailable:
        events.append(Event(
            Reason.METRICS_UNAVAILABLE,
            f"Hold replicas at a {desired['a']}, b {desired['b']} and weights at {state.weights['a']}/{state.weights['b']}: "
            "metrics unavailable",
        ))
    reason = "metrics unavailable: replicas and weights held"
    new_state = replace(state, learned=replace(state.learned, metrics_unavailable=True, last_desired=desired))
    prec_a = state.incident.runtime_precision_a or spec.a.precision
    target = spec.slo.target_latency_ms
    models = {p: state.learned.models.get(p) or PoolModel.prior(params.prior_rps(p, spec.pool(p).precision), target) for p in ("a", "b")}
    weights = dict(state.weights)
    return Decision(
        desired_replicas=desired,
        weights=weights,
        runtime_precision={"a": prec_a, "b": spec.b.precision},
        actions=(),
        phase=Phase.DEGRADED,
        events=tuple(events),
        state=new_state,
        capacity_rps={"a": models["a"].capacity(target, params.speed(prec_a)),
                      "b": models["b"].capacity(target, params.speed(spec.b.precision))},
        conditions=conditions(spec, Phase.DEGRADED, obs, forecast, state.incident.stage, (reason,), metrics=False),
        summary=summary(Phase.DEGRADED, obs, desired, weights, None, triggers.quantile_label(spec.slo.quantile),
                        target, (reason,), prec_a),
        reasons=(reason,),
    )
