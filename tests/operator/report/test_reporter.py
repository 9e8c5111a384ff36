"""The report step: each condition written once per tick, through a named reason."""

from __future__ import annotations

import numpy as np
import pytest

from forescale_operator.forecasting.forecast_source import ForecastReport
from forescale_operator.report.reporter import forecast_ready, record_metrics
from forescale_operator.readings import Reading
from forescale_operator.readings.base import MetricSample
from forescale_operator.reasons import ConditionReason, ConditionType
from forescale_operator.status import StatusUpdate
from forescale_predictor.forecast_types import History

EMPTY = History(15.0, np.empty(0), {"latency_ms": np.empty(0), "rate": np.empty(0)})


def _condition(update: StatusUpdate, ctype: ConditionType) -> tuple[str, str, str]:
    condition = next(c for c in update.patch["conditions"] if c["type"] == ctype.value)
    return condition["status"], condition["reason"], condition["message"]


@pytest.mark.parametrize("sample, expected", [
    pytest.param(None, ("Unknown", ConditionReason.NO_METRIC_SOURCE, "no metric source is configured"), id="no-source"),
    pytest.param(MetricSample(time=0.0, available=True), ("True", ConditionReason.METRICS_READ, "latency and rate read"),
                 id="read"),
    pytest.param(MetricSample(time=0.0, available=False, error="cannot reach Prometheus at http://p:9090"),
                 ("False", ConditionReason.METRICS_UNAVAILABLE, "cannot reach Prometheus at http://p:9090; replicas held"),
                 id="unavailable"),
    pytest.param(MetricSample(time=0.0, available=False, error="x" * 400),
                 ("False", ConditionReason.METRICS_UNAVAILABLE, "x" * 300 + "; replicas held"), id="long-error-cut"),
])
def test_metrics_available_follows_the_reading(sample, expected):
    update = StatusUpdate({})
    record_metrics(update, None if sample is None else Reading(sample, EMPTY))
    status, reason, message = expected
    assert _condition(update, ConditionType.METRICS_AVAILABLE) == (status, reason.value, message)


class _Decision:
    """The part of a Decision `forecast_ready` reads: the engine's conditions."""

    conditions = {ConditionType.FORECAST_READY.value: ("True", "ModelReady", "model lstm")}


@pytest.mark.parametrize("report, forecast, expected", [
    pytest.param(ForecastReport(), "a forecast", ("True", "ModelReady", "model lstm"), id="engine-says"),
    pytest.param(ForecastReport(problem="ConfigMap chat-model not found; using the packaged default model"), "a forecast",
                 ("False", "ModelRejected", "ConfigMap chat-model not found; using the packaged default model"),
                 id="model-rejected"),
    pytest.param(ForecastReport(online={"model": "none", "reason": "nothing observed yet"}), None,
                 ("False", "NoForecast", "no forecast: nothing observed yet; sizing on the observed rate"),
                 id="nothing-to-forecast-from"),
])
def test_forecast_ready_names_why_the_forecast_is_not_used(report, forecast, expected):
    assert forecast_ready(_Decision(), forecast, report) == expected
