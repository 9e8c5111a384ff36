"""Forecasting through gaps: idle steps, missing scrapes up to the limit, a gap past it, and bad series."""

import numpy as np
import pytest

from forescale_predictor import History, LATENCY_MS, RATE
from forescale_predictor.gaps import MAX_MISSING_STEPS, carry_forward, window_ok, window_problem
from forescale_predictor.lstm_forecaster import LSTMForecaster
from forescale_predictor.model_config import ModelConfig
from forescale_predictor.online_forecaster import OnlineForecaster
from forescale_predictor.training import Segment, TrainOptions, build_windows, train

from predictor_fixtures import synthetic

NAMES = (LATENCY_MS, RATE)


@pytest.fixture(scope="module")
def gap_model():
    """A small two-feature gap-channel model trained on a series with idle steps and missing scrapes."""
    t, values = synthetic(900)
    values = values.copy()
    values[100:140, 1] = 0.0  # idle: no requests, so no latency
    values[100:140, 0] = np.nan
    values[300:305] = np.nan  # a missing scrape run
    config = ModelConfig(step_seconds=15.0, lookback=16, horizon=12, hidden=8, ar_steps=8, gap_channels=True)
    options = TrainOptions(max_epochs=2, windows_per_epoch=512, min_windows_per_epoch=512, progress=False)
    return train([Segment(t, values, "gappy")], config, options)


def _history(values: np.ndarray, step: float = 15.0) -> History:
    t = 1_700_000_000.0 + step * np.arange(len(values))
    return History(step, t, {LATENCY_MS: values[:, 0], RATE: values[:, 1]})


def _series(n=64):
    return synthetic(n)[1].copy()


def idle_tail(v):  # the last 10 steps had no requests: rate 0, latency undefined
    v[-10:, 1], v[-10:, 0] = 0.0, np.nan
    return v


def idle_window(v):  # the whole window idle, latency carried from before it
    v[-30:, 1], v[-30:, 0] = 0.0, np.nan
    return v


def missing_inside(v):  # scrapes missing for the limit, in the middle of the window
    v[-12 : -12 + MAX_MISSING_STEPS] = np.nan
    return v


def missing_last(v):  # the newest scrapes have not landed (limit-long trailing run)
    v[-MAX_MISSING_STEPS:] = np.nan
    return v


def missing_inside_past_limit(v):  # an older run longer than the limit, then fresh scrapes
    v[-(MAX_MISSING_STEPS + 3) : -1] = np.nan
    return v


def stale_past_limit(v):  # the newest scrape is one step too old
    v[-(MAX_MISSING_STEPS + 1) :] = np.nan
    return v


def mostly_unscraped(v):  # 3 of 16 steps scraped (under a quarter), no run past the limit
    keep = v[[-16, -8, -1]].copy()
    v[-16:] = np.nan
    v[[-16, -8, -1]] = keep
    return v


def latency_never_seen(v):
    v[:, 0] = np.nan
    return v


def short(v):
    return v[-5:]


@pytest.mark.parametrize("damage, model, reason", [
    (lambda v: v, "lstm", None),
    (idle_tail, "lstm", None),
    (idle_window, "lstm", None),
    (missing_inside, "lstm", None),
    (missing_last, "lstm", None),
    (missing_inside_past_limit, "lstm", None),
    (stale_past_limit, "ewm", f"no scrape for the last {MAX_MISSING_STEPS + 1} steps"),
    (mostly_unscraped, "ewm", "only 3 of the last 16 steps were scraped"),
    (latency_never_seen, "ewm", "'latency_ms' has no observed value"),
    (short, "ewm", "history too short"),
])
def test_gap_model_forecasts_through_gaps_up_to_the_limit(gap_model, damage, model, reason):
    f = LSTMForecaster(gap_model).forecast(_history(damage(_series())))
    assert f.model == model
    if reason is None:
        assert f.fallback_reason is None
        assert np.isfinite(f.upper(LATENCY_MS)).all() and np.isfinite(f.upper(RATE)).all()
    else:
        assert reason in f.fallback_reason


@pytest.mark.parametrize("values, problem", [
    (np.array([[1.0, 2.0]] * 20), None),
    (np.vstack([[[1.0, 2.0]]] * 10 + [[[np.nan, 0.0]]] * 10).reshape(20, 2), None),  # idle: rate seen
    (np.vstack([[[1.0, 2.0]]] * 10 + [[[np.nan, np.nan]]] * 9 + [[[1.0, 2.0]]]).reshape(20, 2), None),  # older run
    (np.vstack([[[1.0, 2.0]]] * 11 + [[[np.nan, np.nan]]] * 9).reshape(20, 2), "no scrape for the last 9 steps"),
    (np.vstack([[[1.0, 2.0]]] * 5 + [[[np.nan, np.nan]]] * 7 + [[[1.0, 2.0]]] + [[[np.nan, np.nan]]] * 7).reshape(20, 2),
     "only 2 of the last 16"),
    (np.vstack([[[np.nan, 2.0]]] * 20).reshape(20, 2), "'latency_ms' has no observed value"),
])
def test_window_problem_table(values, problem):
    got = window_problem(values, NAMES, 16, 15.0)
    assert (got is None) if problem is None else (problem in got)


@pytest.mark.parametrize("column, filled, observed", [
    ([np.nan, 1.0, np.nan, np.nan, 3.0], [np.nan, 1.0, 1.0, 1.0, 3.0], [0, 1, 0, 0, 1]),
    ([2.0, np.nan], [2.0, 2.0], [1, 0]),
    ([np.nan, np.nan], [np.nan, np.nan], [0, 0]),
])
def test_carry_forward_is_causal(column, filled, observed):
    f, o = carry_forward(np.array(column))
    np.testing.assert_array_equal(f[:, 0], filled)
    np.testing.assert_array_equal(o[:, 0], observed)


def test_window_ok_agrees_with_window_problem():
    rng = np.random.default_rng(3)
    v = np.ones((300, 2))
    i = 20
    while i < 300:  # runs of 1-14 missing steps
        n = int(rng.integers(1, 15))
        v[i : i + n] = np.nan
        i += n + int(rng.integers(1, 12))
    filled, observed = carry_forward(v)
    at = np.arange(15, 300)
    ok = window_ok(filled, observed, at, 16)
    expected = [window_problem(v[: o + 1], NAMES, 16, 15.0) is None for o in at]
    np.testing.assert_array_equal(ok, expected)
    assert ok.any() and not ok.all()


def test_training_keeps_windows_with_gaps_and_masks_missing_targets():
    t, values = synthetic(300)
    values = values.copy()
    values[100:110, 0] = np.nan  # latency undefined while idle
    values[100:110, 1] = 0.0
    config = ModelConfig(step_seconds=15.0, lookback=16, horizon=12, hidden=8, ar_steps=8, gap_channels=True)
    plain = ModelConfig(step_seconds=15.0, lookback=16, horizon=12, hidden=8, ar_steps=8)
    with_gaps, _ = build_windows([Segment(t, values)], config, 0.0)
    without, _ = build_windows([Segment(t, values)], plain, 0.0)
    assert len(with_gaps) > len(without)  # the plain model drops every window touching the idle run
    assert np.isfinite(with_gaps.inputs).all() and (with_gaps.observed == 0).any()
    assert np.isnan(with_gaps.targets).any()


@pytest.mark.parametrize("values, model, reason", [
    (np.full((30, 2), np.nan), "none", "NaN"),                       # all gaps
    (np.array([[12.0, 3.0]]), "last", "a single observation"),        # a single value
    (np.tile([[20.0, 5.0]], (40, 1)), "last", "constant over 40"),    # constant
    (np.column_stack([np.full(40, np.nan), np.zeros(40)]), "last", "rate 0"),  # idle since it began
])
def test_bad_series_get_a_labelled_fallback_never_an_exception(gap_model, values, model, reason):
    online = OnlineForecaster(LSTMForecaster(gap_model))
    f = online.forecast(_history(values))
    assert f.model == model and reason in f.fallback_reason
    assert online.status()["model"] == model
