"""Knee, slope, recovery and degradation effect (forescale_stress.analysis)."""

from __future__ import annotations

import pytest

from forescale_stress.analysis import (
    degradation_effect,
    find_knee,
    latency_slope,
    least_squares_slope,
    recovery_time,
)
from forescale_stress.samples import SampleTable

from synthetic import constant_load, row


@pytest.mark.parametrize(
    "rows, knee_rps, knee_index, crossed, under",
    [
        # p99 grows with load; step 3 breaks the 200 ms SLO
        ([row(0, 10, 10, 50), row(1, 11, 11, 60), row(2, 12.1, 12, 90), row(3, 13.3, 12.5, 400)],
         12, 2, True, (0, 1, 2)),
        # never over the SLO: the knee is a lower bound
        ([row(0, 10, 10, 50), row(1, 11, 10.8, 60)], 10.8, 1, False, (0, 1)),
        # under-sampled and fault-window steps are skipped
        ([row(0, 10, 10, 50), row(1, 11, 11, None), row(2, 12, 12, 900, during_fault=True),
          row(3, 13, 13, 80), row(4, 14, 13.5, 300)], 13, 3, True, (0, 3)),
        # first step already over: no knee
        ([row(0, 10, 10, 500), row(1, 11, 11, 50)], None, None, True, ()),
        # the knee is the last step under the SLO, at the rate it achieved
        # (a noisy, higher achieved rate earlier does not inflate it)
        ([row(0, 10, 9.9, 50), row(1, 11, 10.9, 60), row(2, 12, 10.2, 150), row(3, 13, 10, 250)],
         10.2, 2, True, (0, 1, 2)),
        # a breach the repeat at the same rate did not confirm is noise: skipped, the ramp went on
        ([row(0, 10, 10, 50), row(1, 11, 11, 260, slo_unconfirmed=True), row(2, 11, 11, 70),
          row(3, 12.1, 12, 90), row(4, 13.3, 13, 300), row(5, 13.3, 13, 320)], 12, 3, True, (0, 2, 3)),
    ],
)
def test_knee(rows, knee_rps, knee_index, crossed, under):
    knee = find_knee(rows, slo_ms=200)
    assert (knee.rps, knee.index, knee.crossed, knee.under_knee) == (knee_rps, knee_index, crossed, under)


@pytest.mark.parametrize(
    "xs, ys, slope",
    [([1, 2, 3], [10, 12, 14], 2.0), ([10, 20], [5, 5], 0.0), ([1, 2, 3, 4], [1, 3, 2, 4], 0.8),
     ([5], [1], None), ([5, 5], [1, 2], None)],
)
def test_least_squares_slope(xs, ys, slope):
    got = least_squares_slope(xs, ys)
    assert got == (None if slope is None else pytest.approx(slope))


def test_no_slope_from_a_held_rate():
    rows = [row(0, 20, 19, 90), row(1, 20, 23, 60), row(2, 20, 18, 120)]
    knee = find_knee(rows, slo_ms=200)
    assert knee.under_knee == (0, 1, 2)
    assert latency_slope(rows, knee) is None


def test_slope_uses_only_steps_under_the_knee():
    rows = [row(0, 10, 10, 20), row(1, 11, 11, 25), row(2, 12, 12, 30), row(3, 13, 13, 900)]
    knee = find_knee(rows, slo_ms=200)
    assert latency_slope(rows, knee) == pytest.approx(5.0)  # step 3 would make it ~250


def _fault_trace(recover_at: float, fault_ms: float = 100.0, ok=lambda t: True):
    # 40 rps; 10 ms normally, `fault_ms` from t=20 s until `recover_at`
    lat = lambda t: fault_ms if 20.0 <= t < recover_at else 10.0  # noqa: E731
    return SampleTable.of(constant_load(40, 0.0, 40.0, lat, ok=ok))


@pytest.mark.parametrize(
    "fault_end, recover_at, expected",
    [
        (25.0, 25.0, 0.0),  # latency back right at the fault's end
        (25.0, 28.0, 3.0),  # 3 s of lingering slowness
        (20.0, 31.5, 11.5),  # instantaneous fault (cache flush) at t=20
        (25.0, 40.0, None),  # never back before the load ended
    ],
)
def test_recovery_time(fault_end, recover_at, expected):
    rec = recovery_time(_fault_trace(recover_at), 20.0, fault_end, load_end=40.0, min_samples=20)
    assert rec.baseline_p99_ms == pytest.approx(10.0)
    assert rec.seconds == (None if expected is None else pytest.approx(expected, abs=0.051))
    if expected is None:
        assert "not back within 1.2x" in rec.note


def test_recovery_counts_failures_as_slow():
    # a killed server: every request fails from t=20 until a restart at t=30
    table = _fault_trace(recover_at=0.0, ok=lambda t: not 20.0 <= t < 30.0)
    rec = recovery_time(table, 20.0, 20.0, load_end=40.0, min_samples=20)
    assert rec.seconds == pytest.approx(10.0, abs=0.051)


def test_recovery_needs_a_baseline():
    table = SampleTable.of(constant_load(1, 0.0, 40.0, lambda t: 10.0))
    rec = recovery_time(table, 20.0, 25.0, load_end=40.0, min_samples=20)
    assert rec.seconds is None and "only 10 requests in the 10s before the fault" in rec.note


@pytest.mark.parametrize(
    "called, answered, load_end, before, after, note",
    [
        (20.0, 20.5, 40.0, 50.0, 20.0, None),
        (20.0, 20.5, 25.0, 50.0, None, "the load ended less than 10s after the action"),
        (5.0, 5.5, 40.0, None, 20.0, "less than a 10s window before it"),
    ],
)
def test_degradation_effect(called, answered, load_end, before, after, note):
    table = SampleTable.of(constant_load(40, 0.0, 40.0, lambda t: 50.0 if t < called else 20.0))
    eff = degradation_effect(table, called, answered, load_end, window=10.0, min_samples=20)
    approx = lambda v: None if v is None else pytest.approx(v)  # noqa: E731
    assert (eff.p99_before_ms, eff.p99_after_ms) == (approx(before), approx(after))
    assert eff.samples_before == (400 if called >= 10 else int(called * 40))
    if note:
        assert note in eff.note
    else:
        assert eff.note is None
