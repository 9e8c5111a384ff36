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
    "ramp, rate, seconds",
    [
        (Ramp(10, 10, 10.0, 100), 20.0, 10.0),  # 200 arrivals in 10 s: no extension
        (Ramp(10, 10, 2.0, 100), 20.0, 5.0),  # extended to offer 100 requests
        (Ramp(10, 10, 2.0, 300), 100.0, 3.0),  # min-samples above 100 counts
        (Ramp(10, 10, 2.0, 100), 10.0, 6.0),  # capped at 3 x step: under-sampled
        (Ramp(10, 10, 2.0, 100, 4.0), 10.0, 4.0),  # explicit cap
    ],
)
def test_step_duration(ramp, rate, seconds):
    assert ramp.duration(rate) == pytest.approx(seconds)


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


@pytest.mark.parametrize("kind", ["poisson", "uniform", "gamma:1", "gamma:3", "gamma:0.5", "gamma:10"])
@pytest.mark.parametrize("rate, seconds, count", [(200.0, 10.0, 2000), (42.8, 4.0, 171), (0.5, 3.0, 2)])
def test_arrivals_offer_exactly_the_rate(kind, rate, seconds, count):
    offsets = arrival_offsets(rate, seconds, kind, random.Random(1))
    assert len(offsets) == count
    assert offsets == sorted(offsets)
    assert 0 <= offsets[0] and offsets[-1] < seconds


def test_poisson_gaps_are_exponential():
    # Given the count, Poisson arrival times are uniform order statistics: the
    # gaps are then close to exponential, with a coefficient of variation ~1.
    offsets = arrival_offsets(1000.0, 10.0, "poisson", random.Random(3))
    gaps = [b - a for a, b in zip(offsets, offsets[1:])]
    mean = sum(gaps) / len(gaps)
    sd = (sum((g - mean) ** 2 for g in gaps) / len(gaps)) ** 0.5
    assert mean == pytest.approx(0.001, rel=0.01)
    assert 0.95 < sd / mean < 1.05


def test_uniform_arrivals_are_evenly_spaced_and_poisson_is_seeded():
    assert arrival_offsets(4.0, 1.0, "uniform", random.Random(0)) == [0.0, 0.25, 0.5, 0.75]
    a = arrival_offsets(50.0, 2.0, "poisson", random.Random(7))
    b = arrival_offsets(50.0, 2.0, "poisson", random.Random(7))
    assert a == b and a != arrival_offsets(50.0, 2.0, "poisson", random.Random(8))


def _gap_cv(offsets: list[float]) -> float:
    gaps = [b - a for a, b in zip(offsets, offsets[1:])]
    mean = sum(gaps) / len(gaps)
    return (sum((g - mean) ** 2 for g in gaps) / len(gaps)) ** 0.5 / mean


@pytest.mark.parametrize("cv", [0.5, 1.0, 2.0, 4.0])
def test_gamma_gaps_have_the_asked_coefficient_of_variation(cv):
    offsets = arrival_offsets(1000.0, 20.0, f"gamma:{cv:g}", random.Random(5))
    assert len(offsets) == 20000
    assert _gap_cv(offsets) == pytest.approx(cv, rel=0.1)


def test_gamma_clumps_where_poisson_does_not():
    # the busiest 100 ms of a 10 s step at 1,000 req/s (a mean of 100): a count's variance is about
    # CV^2 times its mean, so the busiest tenth of a second is near 125 for Poisson and 180 at CV 3
    def busiest(offsets):
        counts = [0] * 100
        for t in offsets:
            counts[int(t * 10)] += 1
        return max(counts)
    assert busiest(arrival_offsets(1000.0, 10.0, "poisson", random.Random(2))) < 150
    assert busiest(arrival_offsets(1000.0, 10.0, "gamma:3", random.Random(2))) > 165


@pytest.mark.parametrize("kind, words", [
    ("bursty", "--arrivals must be one of poisson, uniform, gamma:CV, got 'bursty'"),
    ("gamma", "--arrivals must be one of poisson, uniform, gamma:CV, got 'gamma'"),
    ("gamma:", "--arrivals must be one of poisson, uniform, gamma:CV, got 'gamma:'"),
    ("weibull:2", "--arrivals must be one of poisson, uniform, gamma:CV, got 'weibull:2'"),
    ("gamma:0", "gap coefficient of variation in (0, 10], got 'gamma:0'"),
    ("gamma:-1", "gap coefficient of variation in (0, 10], got 'gamma:-1'"),
    ("gamma:nan", "gap coefficient of variation in (0, 10], got 'gamma:nan'"),
    ("gamma:inf", "gap coefficient of variation in (0, 10], got 'gamma:inf'"),
    ("gamma:two", "gap coefficient of variation in (0, 10], got 'gamma:two'"),
    ("gamma:11", "gap coefficient of variation in (0, 10], got 'gamma:11'"),
])
def test_bad_arrival_kind_is_named(kind, words):
    with pytest.raises(StressError) as err:
        arrival_offsets(1.0, 1.0, kind, random.Random(0))
    assert words in str(err.value)
