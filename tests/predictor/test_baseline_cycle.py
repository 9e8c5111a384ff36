"""The cycle baseline: a period learned from the series itself, the next burst forecast from it, and
exactly `ewm` where the series shows no cycle.

Why it matters: a burst that recurs every few minutes (a cron job, a batch client on a timer) has a
period no window of the LSTM sees; forecast from the series' own cycle, pool A's pods are asked for a
start-up before the burst instead of after it."""

import numpy as np
import pytest

from forescale_predictor.baselines import make_baseline_model
from forescale_predictor.baselines.cycle import detect_period

STEP, HORIZON, N = 15.0, 12, 240


def counts(rate: np.ndarray, seed: int = 0) -> np.ndarray:
    """A request rate read from Poisson counts over 15 s steps."""
    return np.random.default_rng(seed).poisson(rate * STEP) / STEP


def bursts(period: int, width: int = 2, base: float = 2.0, peak: float = 20.0, offset: int = 0, n: int = N) -> np.ndarray:
    t = np.arange(n)
    return np.where(((t + offset) % period) < width, peak, base)


def bursty_family(seed: int, n: int = N) -> np.ndarray:
    """The synthetic bursty family's shape at 15 s steps: idle, active and burst spells of random length."""
    g = np.random.default_rng(seed)
    rate, i = np.zeros(n), 0
    while i < n:
        kind = g.choice(3, p=[0.35, 0.45, 0.2])
        length = int(g.integers(4, 16)) if kind < 2 else int(g.integers(1, 4))
        rate[i:i + length] = (0.0, 2.5 * g.uniform(0.6, 1.8), 40 * g.uniform(0.6, 1.0))[kind]
        i += length
    return rate


def spikes(seed: int, n: int = N) -> np.ndarray:
    g = np.random.default_rng(seed)
    rate = np.full(n, 10.0)
    for start in g.integers(8, n - 4, size=6):
        rate[start:start + int(g.integers(1, 3))] = 10 * g.uniform(3, 5)
    return rate


@pytest.mark.parametrize(("series", "period"), [
    (counts(bursts(20)), 20),                        # a 30 s burst every 5 minutes
    (counts(bursts(28, offset=5)), 28),              # every 7 minutes, starting anywhere
    (counts(bursts(40, offset=5)), 40),              # every 10 minutes: three cycles in the hour
    (counts(bursts(20, peak=4.0)), 20),              # a burst of twice the base: still seen
    (counts(np.full(N, 2.0)), None),                 # Poisson noise
    (counts(np.full(N, 40.0)), None),
    (counts(np.linspace(2, 40, N)), None),           # a ramp: its values correlate at every lag, its steps do not
    (500 + np.cumsum(np.random.default_rng(3).normal(0, 1, N)), None),  # a random walk
    (counts(bursts(20), seed=1)[:50], None),         # under three cycles of history
    (np.full(N, 7.0), None),                         # constant
    (np.full(N, np.nan), None),                      # nothing observed
])
def test_the_period_is_found_where_the_series_repeats_and_nowhere_else(series, period):
    assert detect_period(series) == period


@pytest.mark.parametrize(("family", "make"), [("bursty", bursty_family), ("spikes", spikes)])
def test_random_bursts_make_no_cycle(family, make):
    """Heavy-tailed differences scatter their autocorrelations: a cycle must show three times, not once."""
    found = [seed for seed in range(150) if detect_period(counts(make(seed), seed)) is not None]
    assert found == [], f"{family}: a period found in seeds {found}"


def test_a_gap_in_the_history_does_not_hide_the_cycle():
    series = counts(bursts(20))
    series[100:106] = np.nan  # six missing scrapes
    assert detect_period(series) == 20


def _fit(name: str, series: np.ndarray):
    times = STEP * np.arange(len(series))
    model = make_baseline_model(name, step_seconds=STEP, horizon=HORIZON, quantiles=(0.1, 0.5, 0.9), counts=True)
    return model.fit(series[:, None], times), times


def _median(model, series, times, origin):
    return model.predict_origins(series[:, None], times, np.array([origin]))[0, 1, :, 0]


def test_the_next_burst_is_forecast_at_its_phase():
    series = counts(bursts(20))
    model, times = _fit("cycle", series)
    assert model.period == 20 and model.label == "cycle 300 s"
    origin = N - 1  # phase 19: the next two steps are the burst, the ten after it are the base
    median = _median(model, series, times, origin)
    assert median[:2] == pytest.approx([20.0, 20.0], abs=2.5)
    assert median[2:] == pytest.approx(np.full(HORIZON - 2, 2.0), abs=1.0)
    ewm, _ = _fit("ewm", series)
    assert _median(ewm, series, times, origin)[0] < 8.0  # the level alone does not see it coming


def test_the_shape_repeats_on_a_level_that_moved():
    """The deviation from the level repeats: bursts of +18 over a base that doubled stay bursts of +18 over it."""
    shape = bursts(20)
    shape[150:] += 10.0  # the base goes from 2 to 12 req/s for the last 90 steps
    series = counts(shape, seed=2)
    model, times = _fit("cycle", series)
    median = _median(model, series, times, N - 1)
    assert median[:2] == pytest.approx([30.0, 30.0], abs=3.5)
    assert median[2:] == pytest.approx(np.full(HORIZON - 2, 12.0), abs=2.0)


@pytest.mark.parametrize("series", [
    counts(np.full(N, 5.0)),
    counts(bursty_family(4)),
    500 + np.cumsum(np.random.default_rng(5).normal(0, 1, N)),
])
def test_without_a_cycle_it_is_ewm_exactly(series):
    cycle, times = _fit("cycle", series)
    ewm, _ = _fit("ewm", series)
    at = np.arange(20, N)
    assert cycle.period is None and cycle.label == "cycle" and cycle.alpha == ewm.alpha
    np.testing.assert_array_equal(cycle.predict_origins(series[:, None], times, at),
                                  ewm.predict_origins(series[:, None], times, at))


def test_the_band_holds_the_noise_around_the_cycle_not_the_bursts():
    """Learned only on origins with a whole cycle behind them (min_history), the band is the Poisson noise
    around the repeated shape; `ewm`'s holds the bursts it misses."""
    series = counts(bursts(20))
    cycle, _ = _fit("cycle", series)
    ewm, _ = _fit("ewm", series)
    width = lambda m: float(m.residual_quantiles[-1, 6, 0] - m.residual_quantiles[0, 6, 0])  # noqa: E731
    assert cycle.min_history == 21 and width(cycle) < 0.6 * width(ewm)


@pytest.mark.parametrize(("fitted_on", "now", "stale"), [
    (counts(bursts(20))[:50], counts(bursts(20)), True),    # fitted before three cycles: now one shows
    (counts(bursts(20)), counts(bursts(20), seed=1), False),  # the same period in other noise
    (counts(bursts(20)), counts(bursts(28)), True),           # the period moved
    (counts(bursts(20)), counts(np.full(N, 2.0)), False),     # gone: kept to the scheduled fit (no flapping)
    (counts(np.full(N, 2.0)), counts(np.full(N, 2.0), seed=2), False),
])
def test_a_cycle_is_stale_when_the_history_shows_another_period(fitted_on, now, stale):
    model, _ = _fit("cycle", fitted_on)
    assert model.stale(now[:, None]) is stale
    ewm, _ = _fit("ewm", fitted_on)
    assert ewm.stale(now[:, None]) is False  # a baseline with nothing to find waits for its next fit
