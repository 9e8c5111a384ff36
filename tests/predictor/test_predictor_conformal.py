"""Adaptive conformal inference: the issued band converges to its nominal coverage whatever the raw band's error."""

import numpy as np
import pytest
from scipy import stats

from forescale_predictor.conformal import AdaptiveConformal, HorizonConformal, calibrate_backtest


def _run(noise, raw_half_width, steps=4000, coverage=0.8, delay=0, seed=0):
    """Outcomes y = 100 + noise around a raw band 100 +- raw_half_width; coverage of the issued band after warm-up."""
    rng = np.random.default_rng(seed)
    aci = AdaptiveConformal(coverage=coverage, gamma=0.02, window=300)
    queue, hits = [], []
    for i in range(steps):
        raw = (100.0 - raw_half_width, 100.0, 100.0 + raw_half_width)
        lo, hi = aci.band(np.array([raw[0]]), np.array([raw[1]]), np.array([raw[2]]))
        y = 100.0 + noise(rng)
        queue.append((raw, (float(lo[0]), float(hi[0])), y))
        if len(queue) > delay:  # the outcome arrives `delay` forecasts later
            r, issued, outcome = queue.pop(0)
            aci.update(r, issued, outcome)
            if i > 1000:
                hits.append(issued[0] <= outcome <= issued[1])
    return float(np.mean(hits))


GAUSS = lambda rng: rng.normal(0, 10)  # noqa: E731
HEAVY = lambda rng: 10 * rng.standard_t(3)  # noqa: E731
SKEWED = lambda rng: rng.exponential(10) - 10  # noqa: E731


@pytest.mark.parametrize("noise, half_width, delay", [
    (GAUSS, 2.0, 0),     # raw band far too narrow (the 53% case)
    (GAUSS, 40.0, 0),    # far too wide
    (GAUSS, 12.8, 12),   # right, with the horizon's 12-step delay
    (HEAVY, 5.0, 12),    # heavy tails, delayed
    (SKEWED, 5.0, 0),    # skewed noise
])
def test_aci_converges_to_nominal_coverage(noise, half_width, delay):
    assert _run(noise, half_width, delay=delay) == pytest.approx(0.8, abs=0.03)


def test_raw_band_coverage_is_what_the_noise_says_without_calibration():
    # sanity of the synthetic setup: a +-2 band around N(0, 10) noise covers ~16%
    assert stats.norm.cdf(0.2) - stats.norm.cdf(-0.2) == pytest.approx(0.16, abs=0.01)


@pytest.mark.parametrize("coverage", [0.5, 0.8, 0.9])
def test_other_nominal_levels(coverage):
    assert _run(GAUSS, 5.0, coverage=coverage) == pytest.approx(coverage, abs=0.03)


def test_backtest_calibration_learns_only_from_known_outcomes():
    rng = np.random.default_rng(1)
    n, horizon = 600, 12
    at = np.arange(n)
    truth = 100 + rng.normal(0, 10, (n, horizon))
    pred = np.tile(np.array([98.0, 100.0, 102.0])[:, None], (n, 1, horizon))
    out, hits = calibrate_backtest(pred, truth, at, horizon)
    # the first origin has no outcome known yet: its band is the raw one; step k's from origin k + 1 on is not
    np.testing.assert_array_equal(out[0], pred[0])
    for k in (0, 5, horizon - 1):
        np.testing.assert_array_equal(out[: k + 1, :, k], pred[: k + 1, :, k])
        assert not np.array_equal(out[k + 1, :, k], pred[k + 1, :, k])
    # changing an outcome changes nothing issued before that outcome was known, at its own step only
    for k in (0, horizon - 1):
        later = truth.copy()
        later[300, k] += 1000
        out2, _ = calibrate_backtest(pred, later, at, horizon)
        np.testing.assert_array_equal(out[: 300 + k + 1], out2[: 300 + k + 1])
        assert not np.array_equal(out[300 + k + 1, :, k], out2[300 + k + 1, :, k])  # known from origin 300 + k + 1 on
        others = [j for j in range(horizon) if j != k]
        np.testing.assert_array_equal(out[:, :, others], out2[:, :, others])
    assert np.nanmean(hits[200:], axis=0) == pytest.approx(np.full(horizon, 0.8), abs=0.06)


def _random_walk_steps(horizon: int, n: int = 3000, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random walk forecast by its last value with a fixed +-1 raw band: step k's error has a standard
    deviation of sqrt(k + 1), so one band for every step is too narrow late and too wide early."""
    walk = np.cumsum(np.random.default_rng(seed).normal(0.0, 1.0, n + horizon))
    at = np.arange(n)
    truth = np.stack([walk[at + k + 1] for k in range(horizon)], axis=1)
    last = walk[at][:, None, None]
    pred = np.repeat(last, horizon, axis=2) + np.array([-1.0, 0.0, 1.0])[None, :, None]
    return pred, truth, at


def test_each_step_is_calibrated_on_its_own_errors():
    horizon = 12
    pred, truth, at = _random_walk_steps(horizon)
    out, hits = calibrate_backtest(pred, truth, at, horizon)
    coverage = np.nanmean(hits[500:], axis=0)
    # every step holds its nominal share, not only the horizon's
    assert coverage == pytest.approx(np.full(horizon, 0.8), abs=0.04)
    width = np.median(out[500:, -1] - out[500:, 0], axis=0)
    # the widths follow the error's growth with the lead time: sqrt(12) ~ 3.5 from the first step to the last
    assert width[-1] / width[0] == pytest.approx(np.sqrt(horizon), rel=0.25)
    assert width[0] < width[horizon // 2] < width[-1]


@pytest.mark.parametrize("steps, shape, message", [
    (0, None, "steps must be >= 1"),
    (3, (2,), "need 3 steps per quantile"),
])
def test_horizon_conformal_refuses_a_bad_shape(steps, shape, message):
    with pytest.raises(ValueError, match=message):
        HorizonConformal(steps).band(*(np.zeros(shape),) * 3)


@pytest.mark.parametrize("kwargs", [{"coverage": 0.0}, {"coverage": 1.0}, {"gamma": 0.0}, {"window": 0}])
def test_bad_settings_are_refused(kwargs):
    with pytest.raises(ValueError):
        AdaptiveConformal(**kwargs)


def test_a_bursty_series_with_idle_steps_keeps_a_bounded_band():
    """Regression: scores in band widths ran away on idle-then-burst series (a collapsed raw band at an idle
    step made the next burst score hundreds of widths): the issued upper band reached 100x the median."""
    rng = np.random.default_rng(3)
    aci = AdaptiveConformal(coverage=0.8, gamma=0.02, window=300)
    uppers, hits = [], []
    for i in range(3000):
        kind = rng.choice(["idle", "active", "burst"], p=[0.35, 0.59, 0.06])
        y = {"idle": 0.0, "active": rng.uniform(2, 6), "burst": rng.uniform(25, 40)}[kind]
        median = 0.0 if kind == "idle" else 3.5  # a model that knows idle from active, not the bursts
        raw = (0.8 * median, median, 1.3 * median)
        lo, hi = aci.band(np.array([raw[0]]), np.array([raw[1]]), np.array([raw[2]]))
        aci.update(raw, (float(lo[0]), float(hi[0])), y)
        if i > 500:
            uppers.append(float(hi[0]))
            hits.append(lo[0] <= y <= hi[0])
    assert max(uppers) <= 40.0 + 1.3 * 3.5  # never past what the series has shown
    assert np.mean(hits) == pytest.approx(0.8, abs=0.05)
    assert np.median(uppers) < 15.0  # bursts (6% of steps) are not what an 80% band is sized for


# -- Q read from a sorted copy of the window: the same number np.quantile gives, to the last bit --------------

@pytest.mark.parametrize("values, level", [
    ([3.0], 0.8),
    ([1.0, 2.0], 0.5),                      # t = 0.5 takes numpy's upper-side formula
    ([1.0, 2.0, 3.0, 4.0], 0.8),
    ([-5.0, -5.0, 0.1, 0.1, 7.0], 0.3),     # ties
    ([0.0, 1e-300, 1e300], 0.999999),
    ([2.0, 1.0, 3.0], 0.0),
    ([2.0, 1.0, 3.0], 1.0),
])
def test_linear_quantile_is_numpys(values: list[float], level: float) -> None:
    from forescale_predictor.conformal import linear_quantile

    assert linear_quantile(sorted(values), level) == float(np.quantile(values, level))


def test_linear_quantile_matches_numpy_on_random_windows() -> None:
    from forescale_predictor.conformal import linear_quantile

    rng = np.random.default_rng(3)
    for _ in range(2000):
        values = rng.normal(0.0, rng.choice([1e-3, 1.0, 1e3]), int(rng.integers(1, 320)))
        level = float(rng.random())
        assert linear_quantile(sorted(values.tolist()), level) == float(np.quantile(values, level))


def test_the_sorted_copy_follows_the_window() -> None:
    aci = AdaptiveConformal(window=25)
    rng = np.random.default_rng(4)
    for _ in range(300):
        aci.update((-1.0, 0.0, 1.0), (-1.2, 1.2), float(rng.normal(0.0, 2.0)))
        assert aci._sorted == sorted(aci.scores) and len(aci.scores) <= 25
    aci.seed(np.array([[-1.0, 0.0, 1.0]] * 40), rng.normal(0.0, 1.0, 40))
    assert aci._sorted == sorted(aci.scores)


# -- the cap: the forecasts in flight never set the widening alone ------------------------------------------

@pytest.mark.parametrize("in_flight, large, widened_to_large", [
    (12, 12, False),  # one burst onset: every forecast in flight misses, and alpha_t falls to 0
    (12, 13, False),  # in_flight + 1 scores are still excluded
    (12, 14, True),   # one more and the widening is the large score
    (12, 60, True),   # a new regime that fills a fifth of the window sets it
    (0, 1, False),    # even with one forecast in flight, the single largest score is not the band
    (0, 2, True),
])
def test_a_run_of_misses_sets_the_widening_only_past_the_forecasts_in_flight(in_flight, large, widened_to_large):
    aci = AdaptiveConformal(coverage=0.8, gamma=0.02, window=300, in_flight=in_flight)
    raw = (-1.0, 0.0, 1.0)
    for _ in range(300 - large):
        aci.update(raw, (-1.0, 1.0), 0.5)        # inside: score -0.5
    for _ in range(large):
        aci.update(raw, (-1.0, 1.0), 51.0)       # a burst: score 50, a miss
    aci.alpha_t = 0.0                            # where a run of misses leaves it
    if widened_to_large:
        assert aci.q() == 50.0
    else:  # the quantile's interpolation may lean towards the burst, by a fraction of a step at most
        assert aci.q() < 2.0


@pytest.mark.parametrize("window, in_flight", [(25, 12), (300, 12), (300, 0)])
def test_the_cap_never_reads_q_under_the_nominal_level(window, in_flight):
    aci = AdaptiveConformal(coverage=0.8, window=window, in_flight=in_flight)
    rng = np.random.default_rng(5)
    for y in rng.normal(0.0, 2.0, window):
        aci.update((-1.0, 0.0, 1.0), (-1.0, 1.0), float(y))
    aci.alpha_t = 0.2  # at the nominal level the cap does not bind, whatever the window
    assert aci.q() == pytest.approx(float(np.quantile(list(aci.scores), 0.8)))


def test_a_negative_in_flight_is_refused():
    with pytest.raises(ValueError, match="in_flight"):
        AdaptiveConformal(in_flight=-1)
