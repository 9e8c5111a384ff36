"""The rolling history the forecaster reads."""

from __future__ import annotations

import math

import numpy as np
import pytest

from forescale_operator.readings import HistoryBuffer
from forescale_predictor.forecast_types import LATENCY_MS, RATE


def _filled(times, lat=50.0, rate=10.0) -> HistoryBuffer:
    buf = HistoryBuffer(keep_seconds=1000)
    for t in times:
        buf.append(t, lat, rate)
    return buf


@pytest.mark.parametrize(
    "times, step, expected_len, expected_nans",
    [
        ([0, 5, 10, 15, 20], 5, 5, 0),          # one sample per step
        ([0, 2, 4, 6, 8, 10], 5, 3, 0),         # faster ticks: resampled to the step
        ([0, 5, 25, 30], 5, 7, 3),              # missed ticks are gaps, not copies
        ([100], 15, 1, 0),
    ],
)
def test_grid(times, step, expected_len, expected_nans):
    h = _filled(times).history(step)
    assert len(h) == expected_len
    assert h.times[-1] == times[-1]
    assert int(np.isnan(h.features[RATE]).sum()) == expected_nans


def test_none_becomes_nan_and_old_rows_are_dropped():
    buf = HistoryBuffer(keep_seconds=10)
    buf.append(0, None, 1.0)
    buf.append(5, 40.0, None)
    buf.append(20, 41.0, 2.0)
    assert len(buf) == 1  # rows older than 10 s before t=20 are gone
    h = buf.history(5)
    assert h.features[LATENCY_MS][-1] == 41.0


def test_repeated_instant_is_ignored():
    buf = _filled([0, 5])
    buf.append(5, 999.0, 999.0)
    assert len(buf) == 2
    assert buf.history(5).features[LATENCY_MS][-1] == 50.0


def test_empty_buffer_gives_empty_history():
    h = HistoryBuffer().history(15)
    assert len(h) == 0 and math.isclose(h.step_seconds, 15)
