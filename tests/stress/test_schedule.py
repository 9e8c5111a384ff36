"""Step arithmetic, stop conditions and arrivals (forescale_stress.schedule)."""

from __future__ import annotations

import random

import pytest

from forescale_stress.errors import StressError
from forescale_stress.schedule import (
    STOP_ERROR_RATE,
    STOP_SLO,
    Bounds,
    Ramp,
    arrival_offsets,
    step_plan,
    step_stop_reason,
)


@pytest.mark.parametrize(
    "start, percent, index, expected",
    [
        (10, 10, 0, 10.0),
        (10, 10, 1, 11.0),
        (10, 10, 2, 12.1),  # compounding: +10% of the previous step
        (10, 10, 10, 10 * 1.1**10),
        (5, 0, 7, 5.0),  # 0% holds the rate
        (100, 50, 2, 225.0),
    ],
)
def test_step_rates_compound(start, percent, index, expected):
    assert Ramp(start, percent).rate(index) == pytest.approx(expected)


@pytest.mark.parametrize(
    "min_samples, max_step, expected_needed, expected_cap",
    [(100, None, 100, 30.0), (20, None, 100, 30.0), (250, 12.0, 250, 12.0)],
)
def test_needed_samples_and_cap(min_samples, max_step, expected_needed, expected_cap):
    ramp = Ramp(10, 10, 10.0, min_samples, max_step)
    assert ramp.needed_samples == expected_needed
    assert ramp.cap_seconds == expected_cap


@pytest.mark.parametrize(
    "offsets, step_s, needed, cap, expected",
    [
        # enough arrivals in the step: send those inside it, end on time
        ([0.1 * i for i in range(30)], 2.0, 10, 6.0, (20, 2.0)),
        # too few: extended until the needed-th arrival
        ([0.5 * i for i in range(12)], 2.0, 6, 6.0, (6, 2.501)),
        # too few even at the cap: sent all within the cap, ends under-sampled
        ([0.0, 1.0, 2.0, 3.0, 7.0], 2.0, 10, 6.0, (4, 6.0)),
        ([], 1.0, 5, 3.0, (0, 3.0)),
    ],
)
def test_step_plan(offsets, step_s, needed, cap, expected):
    count, end = step_plan(offsets, step_s, needed, cap)
    assert (count, round(end, 3)) == expected


@pytest.mark.parametrize(
    "ramp, message",
    [
        (Ramp(0), "--start-rate must be > 0"),
        (Ramp(-5), "--start-rate must be > 0"),
        (Ramp(float("nan")), "--start-rate must be > 0"),
        (Ramp(10, -1), "--step-percent must be >= 0"),
        (Ramp(10, 10, 0), "--step-seconds must be > 0"),
        (Ramp(10, 10, 1, 0), "--min-samples must be >= 1"),
        (Ramp(10, 10, 5, 10, 2), "--max-step-seconds must be >= --step-seconds"),
    ],
)
def test_bad_ramps(ramp, message):
    with pytest.raises(StressError, match=message):
        ramp.validate()


@pytest.mark.parametrize(
    "bounds, message",
    [
        (Bounds(slo_ms=0), "--slo-ms must be > 0"),
        (Bounds(slo_ms=-3), "--slo-ms must be > 0"),
        (Bounds(max_error_rate=1.5), r"--max-error-rate is a fraction in \[0, 1\]"),
        (Bounds(max_rate=0), "--max-rate must be > 0"),
        (Bounds(max_rate=5), "--max-rate 5 is below --start-rate 10"),
        (Bounds(max_requests=0), "--max-requests must be >= 1"),
        (Bounds(max_seconds=0), "--max-seconds must be > 0"),
    ],
)
def test_bad_bounds(bounds, message):
    with pytest.raises(StressError, match=message):
        bounds.validate(Ramp(10))


def test_default_bounds_finish_within_five_minutes():
    # DESIGN.md §3: with no bounds given, the run ends by itself within 5 min.
    bounds = Bounds()
    bounds.validate(Ramp(10))
    assert bounds.max_seconds <= 300


@pytest.mark.parametrize(
    "max_rate, rate, over",
    [(None, 1e6, False), (20.0, 19.99, False), (12.1, 10 * 1.1**2, False), (12.0, 12.1, True)],
)
def test_over_max_rate(max_rate, rate, over):
    assert Bounds(max_rate=max_rate).over_max_rate(rate) is over


@pytest.mark.parametrize(
    "max_seconds, timeout, drain", [(300, 10, 10), (8, 10, 2), (20, 1, 1)]
)
def test_drain_fits_in_the_budget(max_seconds, timeout, drain):
    assert Bounds(max_seconds=max_seconds).drain_seconds(timeout) == drain


@pytest.mark.parametrize(
    "p99, error_rate, exempt, expected",
    [
        (150.0, 0.0, False, None),
        (250.0, 0.0, False, STOP_SLO),
        (None, 0.0, False, None),  # too few samples: no verdict on latency
        (150.0, 0.2, False, STOP_ERROR_RATE),
        (250.0, 0.5, True, None),  # inside a fault window: no stop
        (200.0, 0.05, False, None),  # bounds are inclusive
    ],
)
def test_step_stop_reason(p99, error_rate, exempt, expected):
    assert step_stop_reason(p99, error_rate, Bounds(slo_ms=200, max_error_rate=0.05), exempt) == expected


@pytest.mark.parametrize("kind", ["poisson", "uniform"])
def test_arrivals_match_the_rate(kind):
    offsets = arrival_offsets(200.0, 10.0, kind, random.Random(1))
    assert abs(len(offsets) - 2000) < 150  # Poisson: 2000 +- ~3.3 sigma
    assert offsets == sorted(offsets)
    assert 0 <= offsets[0] and offsets[-1] < 10.0


def test_uniform_arrivals_are_evenly_spaced_and_poisson_is_seeded():
    assert arrival_offsets(4.0, 1.0, "uniform", random.Random(0)) == [0.0, 0.25, 0.5, 0.75]
    a = arrival_offsets(50.0, 2.0, "poisson", random.Random(7))
    b = arrival_offsets(50.0, 2.0, "poisson", random.Random(7))
    assert a == b and a != arrival_offsets(50.0, 2.0, "poisson", random.Random(8))


def test_unknown_arrival_kind():
    with pytest.raises(StressError, match="--arrivals must be one of poisson, uniform"):
        arrival_offsets(1.0, 1.0, "bursty", random.Random(0))
