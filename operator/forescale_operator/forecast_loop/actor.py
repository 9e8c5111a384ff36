"""The tick's decide seam: run the engine, carry its decision out, report it.

Order within a tick: scale up before shifting (new pods take start-up time),
then the playbook actions in the engine's order (shift, downgrade, warm,
debug logging, snapshot), then weights the engine still wants, then scale
down; events are posted as the actions happen, each with its numbers and, for
admin calls, how many pods answered. Preview acts on nothing: the engine's
Decision is already the preview (minimums, 100/0, no actions) and its events
say "Preview: would ...".
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import time
from typing import Any, Callable, Mapping

from forescale_predictor.forecast_types import LATENCY_MS, RATE, Forecast

from ..admin_client import AdminClient, summarize
from ..capacity_annotation import engine_params
from ..children import Owner
from ..engine import decide
from ..engine.state import EngineState, StateError
from ..engine.types import Action, ActionKind, Decision, Event
from ..phase import ConditionType
from ..readings.observations import PoolState, build_observations
from ..reasons import Reason
from ..snapshot import snapshot_configmap
from ..spec import InferenceSpec
from ..kube.refs import INFERENCE_DEPLOYMENTS
from ..status import StatusUpdate, write_status
from ..weights import Weights
from .admin_token import read_admin_token
from .clock_jumps import bound_times, shift_times
from .forecaster import CONFIG_MAPS, ForecastReport
from .memory import ResourceMemory
from .metrics import LoopReadings
from .pods import PoolPods, read_pods

logger = logging.getLogger(__name__)

#: action kind -> the model-server admin endpoint that carries it out
_ADMIN = {
    ActionKind.DOWNGRADE_PRECISION: "/admin/precision",
    ActionKind.RESTORE_PRECISION: "/admin/precision",
    ActionKind.WARM_CACHE: "/admin/warmup",
    ActionKind.ENABLE_DEBUG_LOGGING: "/admin/log-level",
}


#: action kind -> the event reasons that report it (the engine orders events and actions alike)
_REPORTED_BY = {
    ActionKind.SHIFT_TRAFFIC: frozenset({Reason.TRAFFIC_SHIFTED, Reason.CUTBACK_STEP, Reason.CUTBACK_ABORTED}),
    ActionKind.DOWNGRADE_PRECISION: frozenset({Reason.PRECISION_DOWNGRADED}),
    ActionKind.RESTORE_PRECISION: frozenset({Reason.PRECISION_RESTORED}),
    ActionKind.WARM_CACHE: frozenset({Reason.CACHE_WARMED}),
    ActionKind.ENABLE_DEBUG_LOGGING: frozenset({Reason.DEBUG_LOGGING_ENABLED}),
    ActionKind.SAVE_SNAPSHOT: frozenset({Reason.SNAPSHOT_SAVED}),
}


def _forecast_report(deps: Any, owner: Owner) -> ForecastReport | None:
    """The forecaster seam's report on this resource (None for a seam without one, e.g. a test fake)."""
    report = getattr(getattr(deps, "forecaster", None), "report", None)
    return report(owner.uid) if callable(report) else None


def _iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return dt.datetime.fromtimestamp(epoch, dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _moves_the_incident(before: EngineState, after: EngineState) -> bool:
    """An incident starts, changes stage or ends, or the cut-back takes a step."""
    return (before.incident.stage != after.incident.stage
            or before.incident.cutback_step != after.incident.cutback_step)


class Actor:
    """One per operator; keeps a `ResourceMemory` per resource uid."""

    def __init__(self, *, admin_token_secret: str | None, telemetry: Any = None,
                 clock: Callable[[], float] = time.time, admin_timeout: float = 5.0,
                 monotonic: Callable[[], float] | None = None) -> None:
        self.admin_token_secret = admin_token_secret
        self.telemetry = telemetry
        self.clock = clock
        # The wall clock's jumps are measured against this one. An injected wall clock (a test's)
        # without a monotonic one of its own is its own reference: it never jumps.
        self.monotonic = monotonic or (time.monotonic if clock is time.time else clock)
        self.admin_timeout = admin_timeout
        self.memory: dict[str, ResourceMemory] = {}

    def forget(self, owner: Owner) -> None:
        self.memory.pop(owner.uid, None)
        if self.telemetry is not None:
            self.telemetry.forget(owner.namespace, owner.name)

    async def __call__(self, *, ctx: Any, spec: InferenceSpec, observation: Any, observations: LoopReadings,
                      forecast: Forecast | None, update: Any, deps: Any) -> Decision:
        owner: Owner = ctx.owner
        status: Mapping[str, Any] = ctx.status
        memory = self.memory.setdefault(owner.uid, ResourceMemory())
        now = self.clock()

        try:
            raw_state = status.get("engine")
            state = EngineState.from_status(json.loads(raw_state) if isinstance(raw_state, str) and raw_state else None)
        except (StateError, ValueError) as exc:
            logger.warning("%s/%s: unreadable engine state in status (%s); starting afresh", owner.namespace, owner.name, exc)
            state = EngineState()
        jumped = memory.clock.jump(now, self.monotonic())
        if jumped:
            logger.warning("%s/%s: the wall clock jumped %+.0f s; the incident's times move with it", owner.namespace,
                           owner.name, jumped)
            state = shift_times(state, jumped)
        state = bound_times(state, now, spec.traffic.cutback.interval_seconds)
        pods = await read_pods(deps.api, owner)
        await self._report_pod_problems(pods, memory, deps)
        runtime_a = state.incident.runtime_precision_a or spec.a.precision
        obs = build_observations(
            observations.sample,
            PoolState(observation.a.desired, observation.a.ready, runtime_a, pods["a"].startup_seconds),
            PoolState(observation.b.desired, observation.b.ready, spec.b.precision, pods["b"].startup_seconds),
        )
        # Decision time = engine + forecast compute, in CPU time of the thread (the issue's
        # goal); API reads and waits for the CPU or the GIL are in the tick's own metrics.
        started = time.thread_time()
        params, problem = engine_params(owner.name, ((ctx.body or {}).get("metadata") or {}).get("annotations"))
        if problem and memory.annotation_problem != problem:
            logger.warning("%s/%s: %s", owner.namespace, owner.name, problem)
        memory.annotation_problem = problem
        decision = decide(spec, state, obs, forecast, now, params)
        decided = time.thread_time()
        forecast_seconds = getattr(getattr(deps, "forecaster", None), "seconds", {}).pop(owner.uid, 0.0)
        memory.record(decision, now)

        if not decision.preview:
            wrote_ahead = _moves_the_incident(state, decision.state)
            if wrote_ahead:
                await self._write_ahead(ctx, owner, decision, deps)
            raw_spec = (ctx.body or {}).get("spec") or {}
            posted: list[str] = []
            try:
                await self._carry_out(owner, spec, raw_spec, decision, observation, observations, forecast, pods, memory,
                                      deps, now, posted)
            except Exception:
                if wrote_ahead and not posted:
                    # Nothing was reported yet: put the old state back so the retry does the whole step, events included.
                    await self._undo_write_ahead(ctx, owner, deps)
                raise
        else:
            for event in decision.events:
                await deps.events.post(event.reason, event.message)

        report = _forecast_report(deps, owner)
        self._record_status(update, spec, decision, forecast, observations, memory, now, owner, report)
        self._record_telemetry(owner, spec, decision, forecast, observations, observation,
                               decided - started + forecast_seconds, report)
        return decision

    # -- acting ------------------------------------------------------------

    async def _report_pod_problems(self, pods: dict[str, PoolPods], memory: ResourceMemory, deps: Any) -> None:
        """One Warning event per pod and problem; the pod is skipped for admin calls, the loop goes on."""
        current = set()
        for pool, pool_pods in pods.items():
            for name, problem in sorted(pool_pods.problems.items()):
                current.add((name, problem))
                if (name, problem) not in memory.pod_problems:
                    memory.pod_problems.add((name, problem))
                    await deps.events.post(Reason.ADMIN_PORT_INVALID, f"Skip pod {name} (pool {pool}) for admin calls: {problem}")
        memory.pod_problems &= current  # pods come and go: remember only the ones still there

    async def _write_ahead(self, ctx: Any, owner: Owner, decision: Decision, deps: Any) -> None:
        """Record the incident stage and cut-back step before acting on them.

        Why: an operator killed between posting EmergencyStarted (or moving a
        cut-back step) and the tick's status write would otherwise restart from
        the old state and start the same incident, or take the same step,
        again. With the state written first, a restart resumes; what the kill
        interrupted is re-asserted by the next tick (weights, replicas, the
        runtime precision on pods that report another).
        """
        ahead = StatusUpdate(ctx.status, (ctx.body.get("metadata") or {}).get("generation"))
        ahead.phase(decision.phase)
        ahead.engine_state(decision.state.to_status())
        ahead.cutback(decision.state.incident.cutback_step, _iso(decision.state.incident.cutback_next_at))
        await write_status(deps.api, owner.namespace, owner.name, ahead)

    async def _undo_write_ahead(self, ctx: Any, owner: Owner, deps: Any) -> None:
        old = {key: ctx.status.get(key) for key in ("phase", "engine", "cutback")}
        try:
            await deps.api.patch(INFERENCE_DEPLOYMENTS, owner.namespace, owner.name, {"status": old}, subresource="status")
        except Exception as exc:  # noqa: BLE001 - the original error is the one to raise
            logger.warning("%s/%s: could not undo the status written ahead: %s", owner.namespace, owner.name, exc)

    async def _carry_out(self, owner: Owner, spec: InferenceSpec, raw_spec: Mapping[str, Any], decision: Decision, observation: Any,
                         readings: LoopReadings, forecast: Forecast | None, pods: dict[str, PoolPods],
                         memory: ResourceMemory, deps: Any, now: float, posted: list[str]) -> None:
        current = {"a": observation.a.desired, "b": observation.b.desired}
        desired = decision.desired_replicas
        pending_events: list[Event] = list(decision.events)

        async def post_through(reasons: frozenset, suffix: str = "") -> None:
            """Post pending events in the engine's order up to the first of `reasons`, which gets `suffix`."""
            while pending_events:
                event = pending_events.pop(0)
                done = event.reason in reasons
                await deps.events.post(event.reason, event.message + (suffix if done else ""))
                posted.append(event.reason.value)
                if done:
                    return

        # Scale up first: the new pods need their start-up time.
        for pool in ("a", "b"):
            if desired[pool] > current[pool]:
                await deps.actuators.scale(owner, spec.pool(pool), desired[pool])

        admin: AdminClient | None = None
        seen = observation.weights
        route_weights = (seen.a, seen.b) if seen is not None else None
        for action in decision.actions:
            suffix = ""
            if action.kind == ActionKind.SHIFT_TRAFFIC:
                weights = action.params["weights"]
                route_weights = (int(weights["a"]), int(weights["b"]))
                await deps.actuators.set_weights(owner, spec.traffic, Weights(*route_weights))
            elif action.kind == ActionKind.SAVE_SNAPSHOT:
                await self._save_snapshot(owner, raw_spec, readings, forecast, memory, deps, now)
            elif action.kind in _ADMIN:
                if admin is None:
                    token = await read_admin_token(deps.api, owner.namespace, self.admin_token_secret)
                    admin = AdminClient(token, timeout=self.admin_timeout)
                suffix = await self._admin(action, spec, pods, admin, memory)
            await post_through(_REPORTED_BY[action.kind], suffix)

        # Weights the engine wants without an explicit action (a route edited by hand, say).
        wanted = (decision.weights["a"], decision.weights["b"])
        if spec.traffic.router != "none" and route_weights != wanted:
            await deps.actuators.set_weights(owner, spec.traffic, Weights(*wanted))

        for pool in ("a", "b"):
            if desired[pool] < current[pool]:
                await deps.actuators.scale(owner, spec.pool(pool), desired[pool])

        for event in pending_events:
            await deps.events.post(event.reason, event.message)
            posted.append(event.reason.value)

    async def _admin(self, action: Action, spec: InferenceSpec, pods: dict[str, PoolPods], admin: AdminClient,
                     memory: ResourceMemory) -> str:
        path = _ADMIN[action.kind]
        pools = action.params.get("pools") or [action.pool or "a"]
        if action.kind in (ActionKind.DOWNGRADE_PRECISION, ActionKind.RESTORE_PRECISION):
            body = {"precision": action.params["precision"]}
            pool_pods = pods[action.pool or "a"]
            # Keyed by incarnation: a container restarted under the same pod name is back at its template precision.
            targets = {pool_pods.incarnation(n): e for n, e in pool_pods.endpoints.items()
                       if memory.switched.get(pool_pods.incarnation(n)) != body["precision"]}
        elif action.kind == ActionKind.WARM_CACHE:
            body = {"top": int(action.params.get("top", 100))}
            targets = {n: e for p in pools for n, e in pods[p].endpoints.items()}
        else:
            body = {"level": action.params.get("level", "DEBUG"), "seconds": int(action.params.get("seconds", 300))}
            targets = {n: e for p in pools for n, e in pods[p].endpoints.items()}
        if not targets:
            return " (no ready pod to call)" if action.kind != ActionKind.DOWNGRADE_PRECISION or not memory.switched else ""
        results = await admin.post_all(list(targets.values()), path, body)
        if "precision" in body:
            for (name, _), result in zip(targets.items(), results):
                if result.ok:
                    memory.switched[name] = body["precision"]
        return f" ({summarize(results)})"

    async def _save_snapshot(self, owner: Owner, raw_spec: Mapping[str, Any], readings: LoopReadings,
                             forecast: Forecast | None, memory: ResourceMemory, deps: Any, now: float) -> None:
        sample = readings.sample
        body = snapshot_configmap(
            namespace=owner.namespace, name=owner.name, uid=owner.uid, at=now, history=readings.history,
            decisions=list(memory.decisions), forecast=forecast, spec=raw_spec,
            observations={"latency_ms": sample.latency_ms, "rate_rps": sample.rate_rps,
                          "pools": {p: vars(s) for p, s in sample.pools.items()}},
        )
        try:
            await deps.api.create(CONFIG_MAPS, owner.namespace, body)
        except Exception as exc:  # noqa: BLE001 - a snapshot is a report; never stop the playbook for it
            logger.warning("%s/%s: could not save the incident snapshot: %s", owner.namespace, owner.name, exc)

    # -- reporting ---------------------------------------------------------

    def _record_status(self, update: Any, spec: InferenceSpec, decision: Decision, forecast: Forecast | None,
                       readings: LoopReadings, memory: ResourceMemory, now: float, owner: Owner,
                       report: ForecastReport | None = None) -> None:
        update.phase(decision.phase)
        if decision.preview:
            # Preview acts on nothing, so status.pools and status.weights keep what is live (the tick
            # observed the replicas and the route; the runtime precision is the last one applied), and
            # what Auto would set goes beside them. Switched from Auto mid-incident, the route stays
            # 70/30 and the pods int8: reporting the inert 100/0 and fp16 there would misreport both.
            would = decision.would or decision
            for pool in ("a", "b"):
                update.pool(pool, capacity_rps=round(float(decision.capacity_rps[pool]), 2),
                            model=decision.models.get(pool))
            update.preview({
                "weights": {p: int(would.weights[p]) for p in ("a", "b")},
                "desiredReplicas": {p: int(would.desired_replicas[p]) for p in ("a", "b")},
                "runtimePrecision": dict(would.runtime_precision),
            })
        else:
            for pool in ("a", "b"):
                update.pool(pool, desired=decision.desired_replicas[pool], runtime_precision=decision.runtime_precision[pool],
                            capacity_rps=round(float(decision.capacity_rps[pool]), 2), model=decision.models.get(pool))
            update.weights(Weights(decision.weights["a"], decision.weights["b"]))
            update.preview(None)
        state = decision.state
        update.cutback(state.incident.cutback_step, _iso(state.incident.cutback_next_at))
        update.last_decision(decision.summary)
        update.engine_state(state.to_status())
        for ctype in ConditionType:
            if ctype.value in decision.conditions:
                value, reason, message = decision.conditions[ctype.value]
                update.condition(ctype, {"True": True, "False": False}.get(value), reason, message)
        if not readings.sample.available:
            update.condition(ConditionType.METRICS_AVAILABLE, False, "MetricsUnavailable",
                             (readings.sample.error or "no data")[:300] + "; replicas held")
        online = report.online if report is not None else {}
        if report is not None and report.problem:
            # the named model was refused: the packaged default forecasts, but the resource is not as asked
            update.condition(ConditionType.FORECAST_READY, False, "ModelRejected", report.problem[:300])
        elif forecast is None and online.get("model") == "none":
            update.condition(ConditionType.FORECAST_READY, False, "NoForecast",
                             f"no forecast: {online.get('reason', '')}"[:300] + "; sizing on the observed rate")
        if forecast is not None:
            upper = forecast.upper("latency_ms")
            memory.score(now, readings.sample.latency_ms, forecast.step_seconds / 2)
            memory.remember_forecast(forecast.step_times()[0], float(forecast.median("latency_ms")[0]), float(upper[0]))
            fields = {"peakLatencyMs": round(forecast.peak_latency_ms, 1), "peakRate": round(forecast.peak_rate, 2),
                      "horizonSeconds": int(forecast.horizon_seconds), "model": forecast.model,
                      "generatedAt": _iso(forecast.generated_at)}
            if report is not None:
                fields["modelSource"] = report.source
            if online:
                # rolling figures of the forecasts actually used, scored at the horizon (OnlineForecaster)
                fields["selection"] = str(online.get("reason", ""))[:300]
                fields["nominalCoverage"] = online["nominal_coverage"]
                for key, value, digits in (
                        ("recentErrorMs", online["rolling_mae"].get(LATENCY_MS), 1),
                        ("bandCoverage", online["rolling_coverage"].get(LATENCY_MS), 3),
                        ("recentErrorRate", online["rolling_mae"].get(RATE), 3),
                        ("rateBandCoverage", online["rolling_coverage"].get(RATE), 3)):
                    if value is not None:
                        fields[key] = round(value, digits)
            else:
                error, coverage = memory.recent_error_ms(), memory.band_coverage()
                if error is not None:
                    fields["recentErrorMs"] = round(error, 1)
                if coverage is not None:
                    fields["bandCoverage"] = round(coverage, 3)
            update.forecast(**fields)

    def _record_telemetry(self, owner: Owner, spec: InferenceSpec, decision: Decision, forecast: Forecast | None,
                          readings: LoopReadings, observation: Any, seconds: float,
                          report: ForecastReport | None = None) -> None:
        t = self.telemetry
        if t is None:
            return
        ns, name = owner.namespace, owner.name
        t.observe_decision_seconds(seconds)
        t.record_phase(ns, name, decision.phase.value)
        desired, weights = decision.desired_replicas, decision.weights
        if decision.preview:  # what is live, as in status
            desired = {"a": observation.a.desired, "b": observation.b.desired}
            seen = observation.weights
            weights = {"a": seen.a, "b": seen.b} if seen is not None else weights
        t.record_pools(ns, name, desired, {"a": observation.a.ready, "b": observation.b.ready}, weights)
        t.record_observed(ns, name, readings.sample.latency_ms, readings.sample.rate_rps, spec.slo.target_latency_ms,
                          readings.sample.available)
        t.record_cutback_step(ns, name, decision.state.incident.cutback_step)
        memory = self.memory.get(owner.uid)
        if memory is not None and memory.recent_error_ms() is not None:
            t.record_forecast_error(ns, name, memory.recent_error_ms())
        if forecast is not None:
            t.record_forecast(ns, name, forecast.latency_ms, forecast.rate, forecast.peak_latency_ms, forecast.peak_rate)
        online = report.online if report is not None else {}
        if online and hasattr(t, "record_forecast_quality"):
            t.record_forecast_quality(ns, name, online.get("model") or "", online["nominal_coverage"],
                                      online["rolling_coverage"], online["rolling_mae"])
