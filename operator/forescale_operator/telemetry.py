"""The operator's own Prometheus metrics, served on FORESCALE_METRICS_PORT.

- `OperatorMetrics`: per resource, the forecast per horizon step, desired and
  ready replicas, weights, phase, decision time, forecast error and the
  root-cause diagnosis's scores (the tick's report step writes them);
- the counters of handler runs and ticks, with the ticks' lag and duration
  (registration.py counts them), process-wide.

The chart's dashboard and alert rules query exactly these names
(charts/forescale/files/); renaming one breaks them, and tests/chart checks
the expressions parse. Pure prometheus_client: no kopf, no kubernetes.
"""

from __future__ import annotations

import time
from typing import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from forescale_operator.phase import Phase

_SECONDS = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
#: create/update/resume handler runs, by result (ok, invalid, retry)
RECONCILES = Counter("forescale_operator_reconciles_total", "Create/resume/update handler runs", ["result"])
#: loop ticks run, by result (ok, error)
TICKS = Counter("forescale_operator_ticks_total", "Loop ticks run", ["result"])
#: status PATCHes the tick made, by cause: "pressing" (phase, replicas, weights, a condition's status, ...) or
#: "refresh" (only the learned state, forecast and summary moved, written every few steps: handlers/tick.py)
STATUS_WRITES = Counter("forescale_operator_status_writes_total", "Status PATCHes made by the tick", ["cause"])
#: how late each tick starts against its schedule (previous start + step); timers on schedule keep this near 0
TICK_LAG = Histogram("forescale_operator_tick_lag_seconds", "Delay of a tick's start past its scheduled time",
                     buckets=_SECONDS)
#: wall time of one tick: API reads, Prometheus, forecast, engine, actions, status write (waits included)
TICK_DURATION = Histogram("forescale_operator_tick_duration_seconds", "Wall time of one tick, waits included",
                          buckets=_SECONDS)
#: the same wall time by step of the tick (handlers/tick.py's names): where a late tick waited, read from outside
TICK_STEP = Histogram("forescale_operator_tick_step_seconds", "Wall time of one step of a tick, waits included",
                      ["step"], buckets=_SECONDS)


class TickLaps:
    """A lap clock for one tick: `lap("read")` records the wall time since the previous lap (or the start) as
    that step's. One line at each step's end keeps the driver reading top to bottom."""

    def __init__(self, clock=time.monotonic) -> None:
        self._clock = clock
        self._last = clock()

    def __call__(self, step: str) -> None:
        now = self._clock()
        TICK_STEP.labels(step).observe(max(0.0, now - self._last))
        self._last = now

PHASES = tuple(p.value for p in Phase)
_RESOURCE = ("namespace", "name")


class OperatorMetrics:
    """One set of series per InferenceDeployment; `forget` drops a deleted one's series."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.phase = Gauge("forescale_operator_phase", "1 for the resource's current phase, 0 otherwise", _RESOURCE + ("phase",), registry=r)
        self.phase_since = Gauge("forescale_operator_phase_since_seconds", "Unix time the current phase began", _RESOURCE, registry=r)
        self.forecast_latency = Gauge("forescale_operator_forecast_latency_ms", "Forecast SLO-quantile latency per horizon step and forecast quantile", _RESOURCE + ("quantile", "step"), registry=r)
        self.forecast_rate = Gauge("forescale_operator_forecast_rate_rps", "Forecast request rate per horizon step and forecast quantile", _RESOURCE + ("quantile", "step"), registry=r)
        self.forecast_peak_latency = Gauge("forescale_operator_forecast_peak_latency_ms", "Peak of the upper latency band over the horizon", _RESOURCE, registry=r)
        self.forecast_peak_rate = Gauge("forescale_operator_forecast_peak_rate_rps", "Peak of the upper rate band over the horizon", _RESOURCE, registry=r)
        self.observed_latency = Gauge("forescale_operator_observed_latency_ms", "Observed SLO-quantile latency over both pools", _RESOURCE, registry=r)
        self.observed_rate = Gauge("forescale_operator_observed_rate_rps", "Observed request rate over both pools", _RESOURCE, registry=r)
        self.slo_target = Gauge("forescale_operator_slo_target_ms", "The resource's latency SLO target", _RESOURCE, registry=r)
        self.desired = Gauge("forescale_operator_desired_replicas", "Desired replicas per pool", _RESOURCE + ("pool",), registry=r)
        self.ready = Gauge("forescale_operator_ready_replicas", "Ready replicas per pool", _RESOURCE + ("pool",), registry=r)
        self.weight = Gauge("forescale_operator_weight_percent", "Traffic weight per pool, percent", _RESOURCE + ("pool",), registry=r)
        self.forecast_error = Gauge("forescale_operator_forecast_error_ms", "Recent absolute error of the median latency forecast", _RESOURCE, registry=r)
        self.forecast_coverage = Gauge("forescale_operator_forecast_band_coverage", "Rolling share of outcomes inside the calibrated forecast band, scored at the horizon", _RESOURCE + ("target",), registry=r)
        self.forecast_nominal = Gauge("forescale_operator_forecast_band_nominal_coverage", "The band's nominal coverage (what ACI keeps it at)", _RESOURCE, registry=r)
        self.forecast_mae = Gauge("forescale_operator_forecast_rolling_mae", "Rolling absolute error of the median forecast at the horizon (ms for latency_ms, req/s for rate)", _RESOURCE + ("target",), registry=r)
        self.forecast_model = Gauge("forescale_operator_forecast_model", "1 for the model that forecast last (lstm or the baseline ahead of it), 0 otherwise", _RESOURCE + ("model",), registry=r)
        self.metrics_available = Gauge("forescale_operator_metrics_available", "1 when the resource's metrics could be read", _RESOURCE, registry=r)
        self.cutback_step = Gauge("forescale_operator_cutback_step", "Current cut-back step (0 outside a cut-back)", _RESOURCE, registry=r)
        self.root_cause = Gauge("forescale_operator_root_cause_suspected",
                                "The last diagnosis's score per cause: 0.5..1 when suspected, 0 when clear or unknown",
                                _RESOURCE + ("pool", "cause"), registry=r)
        self.decision_duration = Histogram(
            "forescale_operator_decision_duration_seconds",
            "Forecast plus engine time per resource per tick",
            buckets=(0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
            registry=r,
        )
        self._series: dict[tuple[str, str], set[tuple[Gauge, tuple[str, ...]]]] = {}

    def _set(self, gauge: Gauge, labels: tuple[str, ...], value: float) -> None:
        gauge.labels(*labels).set(value)
        self._series.setdefault(labels[:2], set()).add((gauge, labels))

    def record_phase(self, namespace: str, name: str, phase: str, since: float | None = None) -> None:
        for p in PHASES:
            self._set(self.phase, (namespace, name, p), 1.0 if p == phase else 0.0)
        if since is not None:
            self._set(self.phase_since, (namespace, name), since)

    def record_pools(self, namespace: str, name: str, desired: Mapping[str, int], ready: Mapping[str, int], weights: Mapping[str, int]) -> None:
        for pool in ("a", "b"):
            self._set(self.desired, (namespace, name, pool), desired.get(pool, 0))
            self._set(self.ready, (namespace, name, pool), ready.get(pool, 0))
            self._set(self.weight, (namespace, name, pool), weights.get(pool, 0))

    def record_forecast(self, namespace: str, name: str, latency_ms: Mapping[float, "object"], rate: Mapping[float, "object"],
                        peak_latency_ms: float, peak_rate: float) -> None:
        for gauge, bands in ((self.forecast_latency, latency_ms), (self.forecast_rate, rate)):
            for q, values in bands.items():
                for i, v in enumerate(values, start=1):
                    self._set(gauge, (namespace, name, f"{q:g}", str(i)), float(v))
        self._set(self.forecast_peak_latency, (namespace, name), peak_latency_ms)
        self._set(self.forecast_peak_rate, (namespace, name), peak_rate)

    def record_observed(self, namespace: str, name: str, latency_ms: float | None, rate_rps: float | None, slo_ms: float, available: bool) -> None:
        if latency_ms is not None:
            self._set(self.observed_latency, (namespace, name), latency_ms)
        if rate_rps is not None:
            self._set(self.observed_rate, (namespace, name), rate_rps)
        self._set(self.slo_target, (namespace, name), slo_ms)
        self._set(self.metrics_available, (namespace, name), 1.0 if available else 0.0)

    def record_forecast_error(self, namespace: str, name: str, error_ms: float) -> None:
        self._set(self.forecast_error, (namespace, name), error_ms)

    def record_forecast_quality(self, namespace: str, name: str, model: str, nominal: float,
                                coverage: Mapping[str, float | None], mae: Mapping[str, float | None]) -> None:
        """The model in use, the band's nominal and rolling coverage, and rolling MAE at the horizon, per target."""
        for known in {m for g, labels in self._series.get((namespace, name), set()) if g is self.forecast_model
                      for m in labels[2:]} | {model}:
            self._set(self.forecast_model, (namespace, name, known), 1.0 if known == model else 0.0)
        self._set(self.forecast_nominal, (namespace, name), nominal)
        for target, value in coverage.items():
            if value is not None:
                self._set(self.forecast_coverage, (namespace, name, target), value)
        for target, value in mae.items():
            if value is not None:
                self._set(self.forecast_mae, (namespace, name, target), value)

    def record_cutback_step(self, namespace: str, name: str, step: int) -> None:
        self._set(self.cutback_step, (namespace, name), step)

    def record_diagnosis(self, namespace: str, name: str, pool: str, scores: Mapping[str, float]) -> None:
        """One diagnosis: every cause of the checklist with its score (0 unless suspected).

        Plain data, so this module needs nothing of the diagnosis package; the caller passes
        `{f.cause: f.score for f in diagnosis.findings}`. A score that is not a finite number in
        [0, 1] is written as 0: a broken diagnosis must not paint a cause on the dashboard.
        """
        for cause, score in scores.items():
            usable = isinstance(score, (int, float)) and not isinstance(score, bool) and 0.0 <= score <= 1.0
            self._set(self.root_cause, (namespace, name, pool, str(cause)), float(score) if usable else 0.0)

    def observe_decision_seconds(self, seconds: float) -> None:
        self.decision_duration.observe(seconds)

    def forget(self, namespace: str, name: str) -> None:
        """Drop every series of a deleted resource, so dashboards do not show ghosts."""
        for gauge, labels in self._series.pop((namespace, name), set()):
            try:
                gauge.remove(*labels)
            except KeyError:
                pass
