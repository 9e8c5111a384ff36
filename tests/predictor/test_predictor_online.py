"""The loop's forecaster for one series: scores past forecasts from the history, picks the model ahead,
calibrates its band, and says which model forecast and why."""

import numpy as np
import pytest

from forescale_predictor import Forecast, History, LATENCY_MS, RATE
from forescale_predictor.online_forecaster import OnlineForecaster

STEP, HORIZON = 15.0, 12


class FakeLSTM:
    """Forecasts the last value plus `bias`, with a band of +-`half` (an LSTM stand-in we can make good or bad)."""

    name = "lstm"
    step_seconds, horizon_seconds, quantiles = STEP, STEP * HORIZON, (0.1, 0.5, 0.9)

    def __init__(self, bias=0.0, half=1.0):
        self.bias, self.half = bias, half

    def forecast(self, history):
        parts = {}
        for t in (LATENCY_MS, RATE):
            last = float(np.asarray(history.features[t])[np.isfinite(history.features[t])][-1]) + self.bias
            parts[t] = {0.1: np.full(HORIZON, last - self.half), 0.5: np.full(HORIZON, last),
                        0.9: np.full(HORIZON, last + self.half)}
        return Forecast(float(history.times[-1]), STEP, STEP * HORIZON, self.quantiles, parts[LATENCY_MS], parts[RATE], "lstm")


def run(primary, n=400, noise=5.0, seed=0):
    rng = np.random.default_rng(seed)
    latency = 100 + rng.normal(0, noise, n)
    rate = 20 + rng.normal(0, noise / 5, n)
    times = 1_700_000_000.0 + STEP * np.arange(n)
    online = OnlineForecaster(primary)
    models = []
    for i in range(20, n):
        lo = max(0, i - 239)
        f = online.forecast(History(STEP, times[lo : i + 1], {LATENCY_MS: latency[lo : i + 1], RATE: rate[lo : i + 1]}))
        models.append(f.model)
    return online, models


@pytest.mark.parametrize("bias, leader, reason", [
    # last value on white noise: the rival's smoothed level is ahead (white noise has no cycle: it is ewm)
    (0.0, "cycle", "cycle: rolling MAE"),
    (-0.5, "cycle", "cycle: rolling MAE"),
    (None, "lstm", "lstm: rolling MAE"),   # an LSTM that knows the mean beats the level
])
def test_the_model_ahead_forecasts_and_status_says_why(bias, leader, reason):
    primary = FakeLSTM(0.0 if bias is None else bias)
    if bias is None:
        primary.forecast = _oracle(primary.forecast)
    online, models = run(primary)
    status = online.status()
    assert status["model"] == leader and status["reason"].startswith(reason) and " over " in status["reason"]
    assert models[:30] == ["lstm"] * 30  # nothing is scored yet: the LSTM forecasts
    assert models[-1] == leader


def _oracle(forecast, rate=20.0):
    """The forecast pinned at a level (+-1): the series' mean (what `run` draws around), or any other."""
    def at_level(history):
        f = forecast(history)
        for t, level in ((LATENCY_MS, 100.0), (RATE, rate)):
            for q, off in ((0.1, -1.0), (0.5, 0.0), (0.9, 1.0)):
                f._target(t)[q][:] = level + off
        return f
    return at_level


@pytest.mark.parametrize("half", [0.5, 30.0])
def test_the_issued_band_is_calibrated_whatever_the_raw_band(half):
    primary = FakeLSTM(0.0, half)
    primary.forecast = _oracle_band(primary.forecast, half)
    online, _ = run(primary, n=800)
    coverage = online.status()["rolling_coverage"][LATENCY_MS]
    assert coverage == pytest.approx(0.8, abs=0.07)


def _oracle_band(forecast, half):
    def at_mean(history):
        f = forecast(history)
        for t, mean in ((LATENCY_MS, 100.0), (RATE, 20.0)):
            f._target(t)[0.1][:], f._target(t)[0.5][:], f._target(t)[0.9][:] = mean - half, mean, mean + half
        return f
    return at_mean


def test_status_reports_rolling_mae_at_the_horizon():
    online, _ = run(FakeLSTM(0.0), n=300, noise=0.0)  # a flat series: every forecast is exact
    status = online.status()
    assert status["rolling_mae"][LATENCY_MS] == pytest.approx(0.0, abs=1e-9)
    assert status["scored"][LATENCY_MS] > 200 and status["nominal_coverage"] == 0.8


def test_a_missing_outcome_is_not_scored():
    primary = FakeLSTM(0.0)
    online = OnlineForecaster(primary)
    times = 1_700_000_000.0 + STEP * np.arange(60)
    latency = np.full(60, 100.0)
    latency[40:] = np.nan  # idle: no latency to score against
    for i in range(20, 60):
        online.forecast(History(STEP, times[: i + 1], {LATENCY_MS: latency[: i + 1], RATE: np.full(i + 1, 5.0)}))
    scored = online.status()["scored"]
    assert scored[RATE] > scored[LATENCY_MS]


def test_each_step_of_the_band_is_calibrated_on_its_own_lead_time():
    """On a random walk, an error grows with the lead time: the band a pod started now is sized on (an early
    step) must not be widened by the horizon's error, and every step holds its nominal share."""
    rng = np.random.default_rng(7)
    n = 900
    walk = 500 + np.cumsum(rng.normal(0, 2.0, n))
    times = 1_700_000_000.0 + STEP * np.arange(n)
    online = OnlineForecaster(FakeLSTM(0.0, half=0.5))
    issued = {}
    for i in range(20, n - HORIZON):
        lo = max(0, i - 239)
        f = online.forecast(History(STEP, times[lo : i + 1], {LATENCY_MS: walk[lo : i + 1], RATE: walk[lo : i + 1]}))
        issued[i] = (np.asarray(f._target(RATE)[min(f.quantiles)]), np.asarray(f.upper(RATE)))
    late = range(400, n - HORIZON)
    inside = np.array([[issued[i][0][k] <= walk[i + k + 1] <= issued[i][1][k] for k in range(HORIZON)] for i in late])
    assert inside.mean(axis=0) == pytest.approx(np.full(HORIZON, 0.8), abs=0.08)
    width = np.median([issued[i][1] - issued[i][0] for i in late], axis=0)
    assert width[0] < width[HORIZON // 2] < width[-1] and width[-1] / width[0] > 2.0


def test_a_burst_that_recurs_is_forecast_from_its_cycle():
    """A 30 s burst every 5 minutes: no LSTM window holds a whole period, the rival learns it and takes over,
    and the forecast issued a start-up (6 steps) before a burst holds it."""
    rng = np.random.default_rng(4)
    n, period = 480, 20
    t = np.arange(n)
    rate = rng.poisson(np.where(t % period < 2, 20.0, 2.0) * STEP) / STEP
    latency = 100 + 400 * (t % period < 2) + rng.normal(0, 5, n)
    times = 1_700_000_000.0 + STEP * t
    online = OnlineForecaster(FakeLSTM(0.0))
    before_burst = {}
    for i in range(20, n):
        lo = max(0, i - 239)
        f = online.forecast(History(STEP, times[lo : i + 1], {LATENCY_MS: latency[lo : i + 1], RATE: rate[lo : i + 1]}))
        if (i + 6) % period == 0:
            before_burst[i] = (f.model, float(f.median(RATE)[5]), float(f.upper(RATE)[5]))
    status = online.status()
    assert status["model"] == "cycle" and status["reason"].startswith("cycle: rolling MAE")
    assert status["reason"].endswith("rate cycle 300 s")  # the period it learned, named where it forecasts
    late = [v for i, v in before_burst.items() if i > 360]
    assert late and all(model == "cycle" and median > 12.0 and upper > 17.0 for model, median, upper in late)


def test_where_the_lstm_cannot_forecast_the_rival_does_with_the_reason():
    """A history shorter than the LSTM's window: the rival forecasts (calibrated like any of its forecasts) and
    says why; the LSTM's own answers to series it should not forecast keep their labels (test_predictor_gaps)."""
    class Short(FakeLSTM):
        fallback = type("Fallback", (), {"name": "ewm"})()

        def forecast(self, history):
            f = super().forecast(history)
            if len(history.times) < 16:
                return Forecast(f.generated_at, STEP, STEP * HORIZON, f.quantiles, f.latency_ms, f.rate, "ewm",
                                fallback_reason="history too short")
            return f

    online = OnlineForecaster(Short())
    times = 1_700_000_000.0 + STEP * np.arange(10)
    f = online.forecast(History(STEP, times, {LATENCY_MS: np.full(10, 100.0), RATE: np.full(10, 5.0)}))
    assert f.model == "cycle" and f.fallback_reason == "history too short"
    assert online.status()["reason"] == "cycle: the LSTM could not forecast: history too short"


def test_the_rival_is_refitted_whenever_its_history_has_doubled():
    """Fitted on the first sample and kept 40 forecasts, the rival was scored for 10 minutes with no band."""
    from forescale_predictor.baseline_forecaster import BaselineForecaster

    rival = BaselineForecaster("cycle", step_seconds=STEP, horizon_seconds=STEP * HORIZON, refit_every=40)
    times = 1_700_000_000.0 + STEP * np.arange(100)
    fitted_at = []
    for n in range(1, 100):
        rival.forecast(History(STEP, times[:n], {LATENCY_MS: np.full(n, 100.0), RATE: np.full(n, 5.0)}))
        uses, length, _ = rival._fitted[1]
        if uses == 1:
            fitted_at.append(length)
    assert fitted_at == [1, 2, 4, 8, 16, 32, 64]  # and every 40 forecasts past that: 72 would be next


def _periodic(n=480, period=20, seed=4):
    rng = np.random.default_rng(seed)
    t = np.arange(n)
    rate = rng.poisson(np.where(t % period < 2, 20.0, 2.0) * STEP) / STEP
    latency = 100 + rng.normal(0, 5, n)  # the pods hold the bursts: latency shows no cycle
    return 1_700_000_000.0 + STEP * t, latency, rate


def test_the_rival_leads_from_the_tick_its_cycle_shows():
    """Refitted on the tick the period shows (not at the next scheduled fit) and re-scored as the model it now
    is (not carrying the errors of the level it was), the cycle forecasts the next burst from then on. Before,
    on this series, it led 121 ticks after its period showed: thirty minutes, six whole cycles."""
    from forescale_predictor.baselines.cycle import detect_period

    times, latency, rate = _periodic()
    primary = FakeLSTM(0.0)
    primary.forecast = _oracle(primary.forecast, rate=2.0)  # the base between bursts, blind to them: an LSTM's window
    online = OnlineForecaster(primary)
    shown = led = None
    for i in range(20, len(times)):
        lo = max(0, i - 239)
        f = online.forecast(History(STEP, times[lo : i + 1], {LATENCY_MS: latency[lo : i + 1], RATE: rate[lo : i + 1]}))
        if shown is None and detect_period(rate[lo : i + 1]) == 20:
            shown = i
            assert online.baseline.fitted_labels() == {RATE: "cycle 300 s"}  # refitted on this very tick
        if led is None and f.model == "cycle":
            led = i
    assert shown is not None and led is not None and led - shown <= 1


@pytest.mark.parametrize(("cut", "count"), [(200, 50), (239, 500), (120, 0)])
def test_a_rescored_rival_reads_only_the_history_before_each_origin(cut, count):
    """Each re-scored error is the kept model's forecast from its origin's past against the outcome a horizon
    later: changing what follows an outcome changes no error before it."""
    from forescale_predictor.baseline_forecaster import BaselineForecaster

    times, latency, rate = _periodic(n=240)
    rival = BaselineForecaster("cycle", step_seconds=STEP, horizon_seconds=STEP * HORIZON, quantiles=(0.1, 0.5, 0.9),
                               refit_every=40)
    history = History(STEP, times, {LATENCY_MS: latency, RATE: rate})
    rival.forecast(history)
    errors = rival.horizon_errors(history, RATE, count)
    assert len(errors) == min(count, 240 - HORIZON - 20)  # origins from one whole cycle on (min_history 21)
    changed = rate.copy()
    changed[cut:] += 50.0
    again = rival.horizon_errors(History(STEP, times, {LATENCY_MS: latency, RATE: changed}), RATE, count)
    # the origins whose outcome (origin + HORIZON) is before the cut keep their errors
    unchanged = len(errors) - (240 - cut)
    if unchanged > 0:
        np.testing.assert_array_equal(again[:unchanged], errors[:unchanged])
    assert len(again) == len(errors) and (len(errors) == 0 or not np.array_equal(again, errors))
