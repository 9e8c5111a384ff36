"""The tick's report step: one resource's status fields and operator metrics, from what this tick read and decided.

Status goes only through `StatusUpdate`'s setters (status.py), each condition
once per tick: MetricsAvailable from the reading, ForecastReady from the
forecast source's report where it knows better than the engine (a refused
model, nothing to forecast from), the others as the engine decided them.
The operator's metrics (telemetry.py) show what status shows: in Preview,
what is live, not what Auto would set.
"""

from __future__ import annotations

from forescale_predictor.forecast_types import LATENCY_MS, RATE, Forecast

from ..children import Owner
from ..engine.types import Condition, Decision
from ..forecast_loop.memory import ResourceMemory
from ..forecast_loop.saved_state import save_state
from ..forecasting.forecast_source import ForecastReport
from ..kube.timestamps import rfc3339
from ..observe import Observation
from ..readings import Reading
from ..reasons import ConditionReason, ConditionType
from ..spec import InferenceSpec
from ..status import StatusUpdate
from ..telemetry import OperatorMetrics
from ..weights import ALL_ON_A, Weights

_TRISTATE = {"True": True, "False": False}


def record_metrics(update: StatusUpdate, reading: Reading | None) -> None:
    """MetricsAvailable: Unknown without a metric source (`reading` None), else whether this tick's sample came."""
    if reading is None:
        update.condition(ConditionType.METRICS_AVAILABLE, None, ConditionReason.NO_METRIC_SOURCE,
                         "no metric source is configured")
    elif reading.sample.available:
        update.condition(ConditionType.METRICS_AVAILABLE, True, ConditionReason.METRICS_READ, "latency and rate read")
    else:
        update.condition(ConditionType.METRICS_AVAILABLE, False, ConditionReason.METRICS_UNAVAILABLE,
                         (reading.sample.error or "no data")[:300] + "; replicas held")


def forecast_ready(decision: Decision, forecast: Forecast | None, report: ForecastReport) -> Condition:
    """The engine's ForecastReady, unless the forecast source knows why there is no usable forecast."""
    if report.problem:
        # the named model was refused: the packaged default forecasts, but the resource is not as asked
        return "False", ConditionReason.MODEL_REJECTED.value, report.problem[:300]
    if forecast is None and report.online.get("model") == "none":
        return ("False", ConditionReason.NO_FORECAST.value,
                f"no forecast: {report.online.get('reason', '')}"[:300] + "; sizing on the observed rate")
    return decision.conditions[ConditionType.FORECAST_READY.value]


def record_decision(update: StatusUpdate, decision: Decision, forecast: Forecast | None, reading: Reading,
                    report: ForecastReport, memory: ResourceMemory, now: float) -> None:
    """Pools, weights, the Preview section, the incident, lastDecision, Ready/ForecastReady/Emergency and the forecast."""
    if decision.preview:
        # Preview acts on nothing, so status.pools and status.weights keep what is live (the tick
        # observed the replicas and the route; the runtime precision is the last one applied), and
        # what Auto would set goes beside them. Switched from Auto mid-incident, the route stays
        # 70/30 and the pods int8: reporting the inert 100/0 and fp16 there would misreport both.
        would = decision.would or decision
        for pool in ("a", "b"):
            update.pool(pool, capacity_rps=round(float(decision.capacity_rps[pool]), 2), model=decision.models.get(pool))
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
    save_state(update, decision)
    update.last_decision(decision.summary)
    conditions = {**decision.conditions,
                  ConditionType.FORECAST_READY.value: forecast_ready(decision, forecast, report)}
    for ctype in (ConditionType.READY, ConditionType.FORECAST_READY, ConditionType.EMERGENCY):
        if ctype.value in conditions:
            value, reason, message = conditions[ctype.value]
            update.condition(ctype, _TRISTATE.get(value), reason, message)
    if forecast is not None:
        _record_forecast(update, forecast, reading, report, memory, now)


def _record_forecast(update: StatusUpdate, forecast: Forecast, reading: Reading, report: ForecastReport,
                     memory: ResourceMemory, now: float) -> None:
    upper = forecast.upper("latency_ms")
    memory.score(now, reading.sample.latency_ms, forecast.step_seconds / 2)
    memory.remember_forecast(forecast.step_times()[0], float(forecast.median("latency_ms")[0]), float(upper[0]))
    fields = {"peakLatencyMs": round(forecast.peak_latency_ms, 1), "peakRate": round(forecast.peak_rate, 2),
              "horizonSeconds": int(forecast.horizon_seconds), "model": forecast.model,
              "generatedAt": rfc3339(forecast.generated_at), "modelSource": report.source}
    online = report.online
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


def record_telemetry_without_metrics(telemetry: OperatorMetrics, owner: Owner, spec: InferenceSpec,
                                     seen: Observation, phase: str, phase_since: float | None) -> None:
    """A resource with no metric source still has its series: the phase (Degraded, which the dashboard's
    pickers list), what the Deployments and the route show, and metrics_available 0, which the chart's
    ForescaleMetricsUnavailable alert fires on."""
    ns, name = owner.namespace, owner.name
    telemetry.record_phase(ns, name, phase, phase_since)
    _record_live_pools(telemetry, owner, seen, ALL_ON_A.as_dict())
    telemetry.record_observed(ns, name, None, None, spec.slo.target_latency_ms, False)


def _record_live_pools(telemetry: OperatorMetrics, owner: Owner, seen: Observation, weights: dict[str, int]) -> None:
    """Replicas and weights as the Deployments and the route show them (`weights` where the route has none)."""
    live = seen.weights.as_dict() if seen.weights is not None else weights
    telemetry.record_pools(owner.namespace, owner.name, {"a": seen.a.desired, "b": seen.b.desired},
                           {"a": seen.a.ready, "b": seen.b.ready}, live)


def record_telemetry(telemetry: OperatorMetrics, owner: Owner, spec: InferenceSpec, decision: Decision,
                     forecast: Forecast | None, reading: Reading, seen: Observation, seconds: float,
                     report: ForecastReport, memory: ResourceMemory, phase_since: float | None = None) -> None:
    """The resource's series: phase (and since when: status.lastTransitionTime), replicas and weights (what is
    live, in Preview), readings, forecast and its quality."""
    ns, name = owner.namespace, owner.name
    telemetry.observe_decision_seconds(seconds)
    telemetry.record_phase(ns, name, decision.phase.value, phase_since)
    if decision.preview:  # what is live, as in status
        _record_live_pools(telemetry, owner, seen, decision.weights)
    else:
        telemetry.record_pools(ns, name, decision.desired_replicas, {"a": seen.a.ready, "b": seen.b.ready},
                               decision.weights)
    telemetry.record_observed(ns, name, reading.sample.latency_ms, reading.sample.rate_rps, spec.slo.target_latency_ms,
                              reading.sample.available)
    telemetry.record_cutback_step(ns, name, decision.state.incident.cutback_step)
    if memory.recent_error_ms() is not None:
        telemetry.record_forecast_error(ns, name, memory.recent_error_ms())
    if forecast is not None:
        telemetry.record_forecast(ns, name, forecast.latency_ms, forecast.rate, forecast.peak_latency_ms,
                                  forecast.peak_rate)
    online = report.online
    if online:
        telemetry.record_forecast_quality(ns, name, online.get("model") or "", online["nominal_coverage"],
                                          online["rolling_coverage"], online["rolling_mae"])
