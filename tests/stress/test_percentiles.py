"""Percentiles and per-step summaries (forescale_stress.percentiles)."""

from __future__ import annotations

import numpy as np
import pytest

from forescale_stress.percentiles import (
    StepWindow,
    nearest_rank,
    reported_quantile,
    required_samples,
    summarize_step,
)
from forescale_stress.samples import Sample, SampleTable

from synthetic import constant_load


@pytest.mark.parametrize(
    "q, min_samples, needed", [(0.5, 100, 100), (0.99, 20, 100), (0.99, 150, 150), (0.999, 100, 1000), (0.5, 1, 2)]
)
def test_required_samples(q, min_samples, needed):
    assert required_samples(q, min_samples) == needed


@pytest.mark.parametrize(
    "values, q, expected",
    [
        (range(1, 101), 0.99, 99.0),
        (range(1, 101), 0.5, 50.0),
        (range(1, 1001), 0.999, 999.0),
        (range(1, 51), 0.99, 50.0),  # under 100 samples the p99 is the maximum
        ([5.0], 0.5, 5.0),
        ([1.0, np.inf, 2.0], 0.99, np.inf),
    ],
)
def test_nearest_rank(values, q, expected):
    assert nearest_rank(np.array(list(values), dtype=float), q) == expected


@pytest.mark.parametrize("n, q, reported", [(99, 0.99, False), (100, 0.99, True), (999, 0.999, False), (1000, 0.999, True)])
def test_never_a_p99_from_too_few_samples(n, q, reported):
    value = reported_quantile(np.arange(n, dtype=float), q, min_samples=50)
    assert (value is not None) is reported


def test_step_summary_separates_offered_sent_and_achieved():
    # 100 rps offered for 2 s, but the server answers everything 1.5 s late:
    # only answers arriving inside the step count for the achieved rate.
    samples = constant_load(100, 0.0, 2.0, lambda t: 1500.0)
    samples += [Sample(0, 1.0, 1.0, 11.0, False, 0, "timeout")]
    table = SampleTable.of(samples)
    stats = summarize_step(StepWindow(0, 100.0, 0.0, 2.0, cpu_seconds=0.3), table, min_samples=100)
    assert stats.sent == 201 and stats.samples == 200 and stats.errors == 1
    assert stats.sent_rate == pytest.approx(100.5)
    assert stats.achieved_rate == pytest.approx(25.0)  # scheduled in [0, 0.5) -> done in [1.5, 2.0)
    assert stats.p50_ms == pytest.approx(1500.0) and stats.p99_ms == pytest.approx(1500.0)
    assert stats.p999_ms is None and not stats.under_sampled
    assert stats.generator_cpu_seconds == 0.3


def test_under_sampled_step_reports_no_tail():
    table = SampleTable.of(constant_load(30, 0.0, 2.0, lambda t: 10.0, step=3))
    stats = summarize_step(StepWindow(3, 30.0, 0.0, 2.0, 0.0), table, min_samples=20)
    assert stats.samples == 60
    assert stats.p50_ms == pytest.approx(10.0)
    assert stats.p99_ms is None and stats.under_sampled
    assert stats.as_json()["p99_ms"] is None


def test_latency_counts_from_the_scheduled_time():
    # sent 40 ms late by a busy generator: that wait is part of the latency
    sample = Sample(0, scheduled=1.0, sent=1.04, done=1.05, ok=True, status=200)
    table = SampleTable.of([sample])
    assert table.latency_ms[0] == pytest.approx(50.0)
    assert table.lag_ms[0] == pytest.approx(40.0)
