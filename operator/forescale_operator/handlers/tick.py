"""One tick of one resource's loop, every `forecast.stepSeconds`: the whole path, top to bottom.

Load state, observe, read, forecast, decide, write ahead, act, report. Each
step says in one comment when it runs and why, the way Flagger's scheduler
advances a canary, and each step's work is in one folder, crossed once:
`forecast_loop/` (the binding, the engine's saved state, what the loop keeps),
`observe/`, `readings/` (the sample and the pods), `forecasting/`, the pure
`engine/`, `act/` and `report/`; all of them write status through `status.py`
and reach the API through `kube/`. A tick is an observation: the next one is
the retry, and an API error ends it early without losing anything
(registration.py).

The children and pods are read from kopf's indexes (`deps.reads`,
kube/indexed.py), so a steady-state tick asks the API server only to patch
status, and only when it changed; reconcile, writes and events go to the API.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

from .. import observe as observing
from ..act.executor import Executor
from ..act.write_ahead import undo, write_ahead
from ..children import Owner
from ..engine import decide
from ..engine.types import Decision
from ..forecast_loop.loop import ForecastLoop
from ..forecast_loop.memory import ResourceMemory
from ..forecast_loop.saved_state import load_state
from ..observe import admin_readiness
from ..phase import Phase
from ..readings import build_observations, read
from ..readings.observations import PoolState
from ..readings.pods import read_pods
from ..reasons import SCALE_REASONS, Reason
from ..report.reporter import record_decision, record_metrics, record_telemetry, record_telemetry_without_metrics
from ..report.setting_problems import report_ignored_annotation, report_no_metric_source
from ..spec import SpecError
from ..status import StatusUpdate, write_status
from ..telemetry import STATUS_WRITES, OperatorMetrics, TickLaps
from .deps import HandlerDeps
from .reconcile import reconcile

logger = logging.getLogger(__name__)

#: why a tick did nothing at start-up: kopf had not listed the watched kinds yet (kube/indexed.py)
INDEXES_NOT_SYNCED = "IndexesNotSynced"
#: steps between writes of status's refreshed fields (status.py) when nothing pressing changed. Why 4: it keeps
#: status to one PATCH in four steady ticks, a quarter of the one request per tick the operator may ask of the
#: API server at 1,000 resources, and a restart then loses at most four samples of learning (a minute at the
#: default 15 s step), which the latency model regains in as many.
STATUS_REFRESH_STEPS = 4


@dataclass
class TickDeps(HandlerDeps):
    #: what the loop keeps between ticks; the default has no metric source and no forecasts (readiness only)
    loop: ForecastLoop = field(default_factory=ForecastLoop)

    @property
    def telemetry(self) -> OperatorMetrics:
        return self.loop.telemetry


@dataclass(frozen=True)
class TickContext:
    """The resource as the tick sees it: a copy of kopf's body taken when the tick started."""

    body: Mapping[str, Any]

    @property
    def owner(self) -> Owner:
        return Owner.from_body(self.body)

    @property
    def status(self) -> Mapping[str, Any]:
        return self.body.get("status") or {}


async def tick(ctx: TickContext, deps: TickDeps) -> str:
    """Run one tick for one resource; returns a summary for the log."""
    body, status, loop = ctx.body, ctx.status, deps.loop
    lap = TickLaps()  # each step's wall time (forescale_operator_tick_step_seconds): where a late tick waited
    generation = body["metadata"].get("generation")
    # Invalid: reconcile re-checks it (the router's API may have been installed since, with no spec change).
    if status.get("phase") == Phase.INVALID.value:
        return await reconcile(body, deps)

    # Load state: this generation's binding, kept to the tick's end; a spec that no longer parses waits for reconcile.
    try:
        binding = loop.bindings.bind(body, deps.api)
    except SpecError as err:
        return f"skipped: {err}"
    owner, spec = binding.owner, binding.spec
    memory = loop.memory(owner)
    # A phase the last tick moved to without writing it keeps its time, for this tick only: whatever this tick
    # does, it writes status or hands its own move on.
    unwritten_phase, memory.unwritten_phase = memory.unwritten_phase, None
    now, mono = loop.clock(), loop.monotonic()
    state = load_state(status, owner, memory, now=now, mono=mono,
                       cutback_interval_s=spec.traffic.cutback.interval_seconds)
    lap("load")

    # Read the children (an adopted pool: its targetRef) from kopf's indexes, not the API server; until they
    # are synced, wait: a child that only seems missing must not send the tick to reconcile or act on nothing.
    if deps.reads is not None and not deps.reads.synced:
        return f"waiting: {INDEXES_NOT_SYNCED}: {deps.reads.not_synced} not listed yet; nothing read or done"
    reader = deps.reader
    seen = await observing.observe(reader, owner, binding.router, spec)
    # One deleted, never made or not ours goes back to reconcile, which reads and writes through the API itself.
    read_only = spec.preview and spec.adopts  # Preview with a targetRef creates nothing: no Service to check
    if not seen.complete_for(spec) or not (read_only or await observing.services_intact(reader, owner, spec)):
        return await reconcile(body, deps)
    lap("observe")
    update = StatusUpdate(status, generation, now=now, unwritten_phase=unwritten_phase)
    # Readiness, without the phase: the engine's where it runs (an incident outlives readiness), set below where not.
    observing.record(update, spec, seen)
    # The admin token of both pools' pods, every tick: an adopted Deployment's template can change under us
    # (its Secrets read at most once a minute per namespace: kube/indexed.py).
    admin = await admin_readiness.check(reader, owner, spec, seen, deps.actuators.admin_secret,
                                        deps.actuators.admin_copy_from)
    admin_readiness.record(update, admin)
    warned = await admin_readiness.report(deps.events, status, admin, owner)
    lap("admin")

    # Without a metric source (neither the spec's Prometheus URL nor the operator's) status is all: Degraded once
    # pool A serves, and one MetricsUnavailable Warning naming the setting; the tick ends at its report.
    if not binding.reads_metrics:
        await report_ignored_annotation(deps.events, binding, memory)
        await report_no_metric_source(deps.events, status)
        update.phase(seen.phase_without_metrics(spec))
        record_metrics(update, None)
        record_telemetry_without_metrics(loop.telemetry, owner, spec, seen, update.value("phase"),
                                         update.phase_since())
        await write_status(deps.api, owner.namespace, owner.name, update)
        return f"observed: {seen.summary()}; no metrics"
    # Read the metrics, then the pods (admin endpoints, start-up times; an adopted pool's found by its Deployment's
    # selector), and join them into the engine's observations.
    reading = await read(binding.metric_source, owner.namespace, owner.name, spec, memory.history, now)
    lap("read")
    pods = await read_pods(reader, owner, {p.name: seen.pool(p.name).selector for p in (spec.a, spec.b) if p.adopted})
    observations = build_observations(
        reading.sample,
        # A's precision as its pods show it, so that one restarted at its template's is switched again (engine),
        # and how many run each where they differ, so that A's speed is its pods' mix.
        PoolState(seen.a.desired, seen.a.ready,
                  pods["a"].precision_shown(memory.switched, state.incident.runtime_precision_a, spec.a.precision),
                  pods["a"].startup_seconds,
                  pods["a"].precision_pods(memory.switched, state.incident.runtime_precision_a, spec.a.precision)),
        PoolState(seen.b.desired, seen.b.ready, spec.b.precision, pods["b"].startup_seconds),
    )
    lap("pods")

    # Decide: a forecast only from a sample read this tick (without one the engine holds); the engine is pure.
    forecast = await loop.forecasts.forecast(owner, spec, reading.history) if reading.sample.available else None
    report = loop.forecasts.report(owner.uid)
    lap("forecast")  # waits for the forecast thread included: its CPU time is in decision_seconds
    started = time.thread_time()  # decision time: the engine's and the forecast's CPU time, no API waits
    decision = decide(spec, state, observations, forecast, now, binding.params)
    decision_seconds = time.thread_time() - started + report.seconds
    memory.record(decision, now)
    lap("decide")

    # Act: first write ahead when the incident moves (never in Preview), so an operator killed while acting resumes
    # it; then the actions (Preview: only its "would" events; a bad admin port reported once per pod, skipped for
    # admin calls). Failing before any event, undo the write-ahead so the retry redoes all.
    ahead = await write_ahead(deps.api, owner, status, generation, state, decision)
    lap("write_ahead")
    executor = Executor(deps.api, deps.actuators, deps.events, binding, memory, pods, admin_timeout=loop.admin_timeout)
    await executor.report_pod_problems()
    try:
        await executor.carry_out(decision, seen, reading, forecast, body.get("spec") or {}, now)
    except Exception:
        if ahead is not None and not executor.posted:
            await undo(deps.api, owner, ahead)
        raise
    lap("act")

    # Diagnose beside the relief, on the tick that started it (the playbook, or B taking an overload's excess);
    # a task of its own, never awaited here; its pods and Deployment come from the indexes too.
    trigger = _diagnosis_trigger(decision)
    if not decision.preview and trigger is not None:
        loop.diagnoses.start(api=reader, events=deps.events, telemetry=loop.telemetry, owner=owner,
                             prometheus_url=binding.prometheus_url, status=status, now=now, trigger=trigger,
                             admin_secret=binding.admin_secret, health=(decision.models.get("a") or {}).get("health"))

    # Report, always: status (scoring past forecasts) and the operator's metrics; status is written when something
    # pressing changed or a refresh is due, and the engine's state is kept in memory for the next tick either way.
    record_metrics(update, reading)
    record_decision(update, decision, forecast, reading, report, memory, now)
    # A capacity annotation the binding had to ignore is said once per bad value, as a Warning event.
    await report_ignored_annotation(deps.events, binding, memory)
    record_telemetry(loop.telemetry, owner, spec, decision, forecast, reading, seen, decision_seconds, report, memory,
                     update.phase_since())
    pressing = update.pressing_fields()
    if warned or any(e.reason not in SCALE_REASONS for e in decision.events):
        # What keeps an event from being posted again is in status (the engine's `contradicted` and
        # `forecastSpike`, AdminReady's finding): a tick that posted one writes it on the same tick. A scale's
        # event needs no such guard (SCALE_REASONS), and the scale itself is on the Deployment.
        pressing.append("an event posted")
    if status_due(pressing, memory, mono, spec.forecast.step_seconds):
        if await write_status(deps.api, owner.namespace, owner.name, update):
            logger.debug("%s/%s: status written (%s)", owner.namespace, owner.name, ", ".join(pressing) or "refresh")
            STATUS_WRITES.labels("pressing" if pressing else "refresh").inc()
        memory.status_written_at = mono
        memory.keep(decision.state, update.value("engine"), status.get("engine"))
    else:
        memory.carry(decision.state, status.get("engine"))
        memory.unwritten_phase = update.unwritten_transition()
    lap("report")
    return f"observed: {seen.summary()}"


def status_due(pressing: list[str], memory: ResourceMemory, mono: float, step_seconds: float) -> bool:
    """Write status now: something pressing changed, or the refresh is due.

    On the monotonic clock (a wall clock set back an hour must not hold the refresh for an hour), and half a step
    early: ticks start up to a fraction of a step late, and a write whose tick ran late would otherwise slip the
    next refresh to the fifth step.
    """
    return bool(pressing) or memory.refresh_due(mono, (STATUS_REFRESH_STEPS - 0.5) * step_seconds)


def _diagnosis_trigger(decision: Decision) -> Reason | None:
    """EmergencyStarted (the playbook starts), else Overload (B takes the excess), else None.

    Why an overload too: the engine answers an overload without the playbook, so an SRE would never see
    "overload suspected" at an incident; the Overload event is where that relief starts.
    """
    reasons = {e.reason for e in decision.events}
    for reason in (Reason.EMERGENCY_STARTED, Reason.OVERLOAD):
        if reason in reasons:
            return reason
    return None
