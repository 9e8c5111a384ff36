"""The operator's metrics carry the names the chart's dashboard and alerts query."""

from __future__ import annotations

import numpy as np
import pytest
from prometheus_client import REGISTRY, generate_latest

from forescale_operator.telemetry import OperatorMetrics, TickLaps


def _exposition(metrics: OperatorMetrics) -> str:
    return generate_latest(metrics.registry).decode()


def test_phase_is_one_hot():
    m = OperatorMetrics()
    m.record_phase("ml", "chat", "Emergency", since=1000.0)
    text = _exposition(m)
    assert 'forescale_operator_phase{name="chat",namespace="ml",phase="Emergency"} 1.0' in text
    assert 'forescale_operator_phase{name="chat",namespace="ml",phase="Stable"} 0.0' in text
    assert 'forescale_operator_phase_since_seconds{name="chat",namespace="ml"} 1000.0' in text


@pytest.mark.parametrize(
    "series",
    [
        'forescale_operator_forecast_latency_ms{name="chat",namespace="ml",quantile="0.9",step="3"} 130.0',
        'forescale_operator_forecast_rate_rps{name="chat",namespace="ml",quantile="0.5",step="1"} 10.0',
        'forescale_operator_forecast_peak_latency_ms{name="chat",namespace="ml"} 130.0',
        'forescale_operator_weight_percent{name="chat",namespace="ml",pool="b"} 30.0',
        'forescale_operator_desired_replicas{name="chat",namespace="ml",pool="a"} 4.0',
        'forescale_operator_metrics_available{name="chat",namespace="ml"} 1.0',
    ],
)
def test_recorded_series(series):
    m = OperatorMetrics()
    m.record_forecast("ml", "chat", {0.5: np.array([50, 60, 70]), 0.9: np.array([90, 110, 130])},
                      {0.5: np.array([10, 11, 12]), 0.9: np.array([12, 13, 14])}, 130.0, 14.0)
    m.record_pools("ml", "chat", {"a": 4, "b": 2}, {"a": 3, "b": 2}, {"a": 70, "b": 30})
    m.record_observed("ml", "chat", 80.0, 11.0, 200.0, True)
    assert series in _exposition(m)


def test_forget_drops_every_series_of_the_resource():
    m = OperatorMetrics()
    m.record_phase("ml", "chat", "Stable")
    m.record_pools("ml", "chat", {"a": 2, "b": 1}, {"a": 2, "b": 1}, {"a": 100, "b": 0})
    m.record_phase("ml", "other", "Stable")
    m.forget("ml", "chat")
    text = _exposition(m)
    assert 'name="chat"' not in text
    assert 'name="other"' in text


def test_a_diagnosis_is_one_score_per_cause_and_forget_drops_it():
    from forescale_operator.diagnosis import CAUSES, Evidence, diagnose

    diagnosis = diagnose(Evidence(input_tokens_mean=(300.0, 100.0), output_tokens_mean=(50.0, 50.0)))  # 3x: score 1
    m = OperatorMetrics()
    m.record_diagnosis("ml", "chat", "a", {f.cause: f.score for f in diagnosis.findings})
    text = _exposition(m)
    assert 'forescale_operator_root_cause_suspected{cause="request-mix",name="chat",namespace="ml",pool="a"} 1.0' in text
    for cause in set(CAUSES) - {"request-mix"}:
        assert f'forescale_operator_root_cause_suspected{{cause="{cause}",name="chat",namespace="ml",pool="a"}} 0.0' in text
    m.forget("ml", "chat")
    assert "forescale_operator_root_cause_suspected{" not in _exposition(m)


@pytest.mark.parametrize("score", [float("nan"), float("inf"), -0.5, 1.5, True, "high", None])
def test_a_score_that_is_not_a_share_is_written_as_zero(score):
    m = OperatorMetrics()
    m.record_diagnosis("ml", "chat", "a", {"overload": score})
    assert 'forescale_operator_root_cause_suspected{cause="overload",name="chat",namespace="ml",pool="a"} 0.0' in _exposition(m)


@pytest.mark.parametrize("laps, expected", [
    ([("read", 0.5)], {"read": 0.5}),
    ([("read", 0.5), ("decide", 0.25)], {"read": 0.5, "decide": 0.25}),
    ([("act", 2.0), ("act", 1.0)], {"act": 3.0}),  # a step's laps add up
    ([("report", -1.0)], {"report": 0.0}),  # a clock that steps back records nothing negative
])
def test_tick_laps_record_the_time_since_the_previous_lap(laps, expected):
    def total(step):
        return REGISTRY.get_sample_value("forescale_operator_tick_step_seconds_sum", {"step": step}) or 0.0

    before = {s: total(s) for s in expected}
    t = [100.0]
    lap = TickLaps(clock=lambda: t[0])
    for step, seconds in laps:
        t[0] += seconds
        lap(step)
    assert {s: round(total(s) - before[s], 9) for s in expected} == expected
