"""A baseline's band carries its fitted errors to another level: by the level for a
latency, by the square root of the level for a count of events (the request rate).

Why it matters: relative errors learned at a near-idle rate blew the band up at a
busy one (a synthetic ramp's EWM band said 76 req/s at 14) and the loop sized
pool A for twice the load.
"""

import numpy as np
import pytest

from forescale_predictor import LATENCY_MS, RATE, History
from forescale_predictor.baseline_forecaster import BaselineForecaster
from forescale_predictor.baselines import make_baseline_model

STEP = 15.0
HORIZON = 4


def _idle_then_busy(low: float = 1.0, high: float = 100.0, n_low: int = 240, n_high: int = 8) -> np.ndarray:
    """Noisy steps around `low` (seeded), then a flat stretch at `high`; both end on 4 exact steps
    so the level at each probe origin is exactly `low` or `high`."""
    rng = np.random.default_rng(0)
    noisy = low + rng.exponential(low, n_low - 4) - low * 0.5
    return np.concatenate([noisy, np.full(4, low), np.full(n_high, high)])


def _width(model, values: np.ndarray, origin: int) -> float:
    times = np.arange(len(values)) * STEP
    pred = model.predict_origins(values[:, None], times, np.array([origin]))  # [1, Q, H, F]
    return float(pred[0, -1, -1, 0] - pred[0, 0, -1, 0])


@pytest.mark.parametrize(("name", "counts"), [
    ("last", False),  # a latency's noise grows with it: 100x the level, 100x the band
    ("last", True),   # Poisson counts: the band grows as the square root of the level
    ("ewm", False),
    ("ewm", True),
])
def test_band_moves_with_the_level_or_its_square_root(name, counts):
    values = _idle_then_busy()
    n_low = 240
    model = make_baseline_model(name, step_seconds=STEP, horizon=HORIZON, quantiles=(0.1, 0.5, 0.9), counts=counts)
    model.fit(values[:n_low, None], np.arange(n_low) * STEP)
    low, high = _width(model, values, n_low - 1), _width(model, values, len(values) - 1)
    assert low > 0
    if counts:
        # from the count's floor, the fitted data's mean (1.5 here), not from the idle probe's 1.0
        floor = float(model.level_floor[0])
        assert floor == pytest.approx(float(values[:n_low].mean()))
        assert high / low == pytest.approx(np.sqrt(100.0 / floor), rel=1e-6)
    else:
        assert model.level_floor is None
        assert high / low == pytest.approx(100.0, rel=1e-6)


def _bursty(n: int = 400, every: int = 45, size: float = 40.0) -> np.ndarray:
    """Poisson counts near idle (mean 0.3) with a 6-step burst at `size` every `every` steps (seeded)."""
    rng = np.random.default_rng(0)
    values = rng.poisson(0.3, n).astype(float)
    for start in range(20, n, every):
        values[start:start + 6] = size + rng.normal(0.0, 2.0, 6)
    return values


@pytest.mark.parametrize("level", [0.0, 0.2, 1.0])
@pytest.mark.parametrize("name", ["last", "ewm"])
def test_a_count_band_near_idle_is_read_at_the_series_level(name, level):
    """Three minutes out, a near-idle count is off by the bursts it starts, not by its idle noise:
    at any level under the fitted mean the band has the width it has at the mean."""
    values = _bursty()
    model = make_baseline_model(name, step_seconds=STEP, horizon=12, quantiles=(0.1, 0.5, 0.9), counts=True)
    model.fit(values[:300, None], np.arange(300) * STEP)
    floor = float(model.level_floor[0])
    assert 4.0 < floor < 8.0  # 13% of the steps at 40 around 0.3
    probe = np.concatenate([values[:300], np.full(4, level)])
    at_mean = np.concatenate([values[:300], np.full(4, floor)])
    assert _width(model, probe, len(probe) - 1) == pytest.approx(_width(model, at_mean, len(at_mean) - 1), rel=1e-9)


def test_the_loop_baseline_treats_the_rate_as_counts_and_the_latency_as_relative():
    # The same numbers as both features: only the scale of their bands differs.
    values = _idle_then_busy()
    times = 1_000_000.0 + np.arange(len(values)) * STEP
    history = History(times=times, step_seconds=STEP, features={RATE: values, LATENCY_MS: values.copy()})
    fc = BaselineForecaster("last", step_seconds=STEP, horizon_seconds=HORIZON * STEP, quantiles=(0.1, 0.5, 0.9))
    forecast = fc.forecast(history)
    rate_width = float(forecast.upper(RATE)[-1] - np.asarray(forecast.rate[0.1])[-1])
    latency_width = float(forecast.upper(LATENCY_MS)[-1] - np.asarray(forecast.latency_ms[0.1])[-1])
    assert rate_width > 0
    # fitted on the whole history, idle and busy alike, so the two bands' quantiles differ too;
    # what must hold is that the rate's band is the narrower by about the square root of the level
    assert 5.0 < latency_width / rate_width < 20.0  # 7.9 measured; sqrt(100) = 10 in the table above
