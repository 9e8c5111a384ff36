"""The Forecaster API: resampling, batching and every declared fallback."""

import numpy as np
import pytest

import forescale_predictor as fp
from forescale_predictor import History, LATENCY_MS, RATE
from forescale_predictor.errors import SeriesError
from forescale_predictor.lstm_forecaster import LSTMForecaster
from forescale_predictor import model_file

from predictor_fixtures import synthetic


def history(n=200, step=15.0, seed=0, **drop) -> History:  # drop: feature=None removes it
    t, values = synthetic(n, step=step, seed=seed)
    feats = {LATENCY_MS: values[:, 0], RATE: values[:, 1]}
    for name in drop:
        feats.pop(name)
    return History(step, t, feats)


@pytest.fixture
def forecaster(tiny_model):
    return LSTMForecaster(tiny_model, fallback="ewm")


def test_forecast_shape_and_label(forecaster):
    f = forecaster.forecast(history())
    assert f.model == "lstm" and f.fallback_reason is None
    assert f.horizon_seconds == 180 and f.step_seconds == 15 and f.steps == 12
    for target in (LATENCY_MS, RATE):
        assert f.upper(target).shape == (12,) and np.isfinite(f.upper(target)).all()
        assert (f.upper(target) >= f.median(target)).all()
    assert f.peak_latency_ms > 0 and f.peak_rate > 0


@pytest.mark.parametrize("loop_step", [2.0, 5.0, 60.0])
def test_history_on_another_step_is_resampled(forecaster, loop_step):
    n = int(30 * 60 / loop_step)  # half an hour of history on the loop's step
    f = forecaster.forecast(history(n=n, step=loop_step))
    assert f.model == "lstm" and f.step_seconds == 15
    assert f.generated_at == pytest.approx(1_700_000_000.0 + loop_step * (n - 1))


def test_forecast_many_matches_single_forecasts(forecaster):
    hs = [history(seed=s) for s in range(5)]
    many = forecaster.forecast_many(hs)
    for h, f in zip(hs, many):
        single = forecaster.forecast(h)
        assert np.allclose(f.upper(RATE), single.upper(RATE))


@pytest.mark.parametrize(
    ("make", "reason"),
    [
        (lambda: history(n=10), "history too short"),
        (lambda: history(latency_ms=None), "feature 'latency_ms' is missing"),
        (lambda: _with_gap(history(), 190, 199), "missing samples"),
        (lambda: _all_nan(history(), LATENCY_MS), "feature 'latency_ms' is missing"),
    ],
    ids=["too-short", "no-latency-feature", "long-gap", "latency-all-nan"],
)
def test_fallbacks_are_declared(forecaster, make, reason):
    f = forecaster.forecast(make())
    assert f.model == "ewm"
    assert reason in f.fallback_reason
    assert f.steps == 12 and np.isfinite(f.upper(RATE)).all()


def test_fallback_in_a_batch_keeps_order(forecaster):
    hs = [history(), history(n=5), history(seed=3)]
    out = forecaster.forecast_many(hs)
    assert [f.model for f in out] == ["lstm", "ewm", "lstm"]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: History(15.0, np.array([]), {RATE: np.array([])}), "empty"),
        (lambda: History(15.0, np.arange(50.0) * 15, {RATE: np.full(50, np.nan), LATENCY_MS: np.full(50, np.nan)}), "NaN"),
        (lambda: History(15.0, np.array([0.0, 15, 15, 30]), {RATE: np.ones(4)}), "repeated"),
        (lambda: History(15.0, np.array([0.0, 30, 15, 45]), {RATE: np.ones(4)}), "out of order"),
    ],
    ids=["empty", "all-nan", "duplicate-times", "non-monotonic"],
)
def test_unusable_histories_raise_clear_errors(forecaster, make, message):
    with pytest.raises(SeriesError, match=message):
        forecaster.forecast(make())


def test_constant_history_forecasts_the_constant(forecaster):
    n = 100
    h = History(15.0, np.arange(n) * 15.0, {LATENCY_MS: np.full(n, 80.0), RATE: np.full(n, 12.0)})
    f = forecaster.forecast(h)
    # a constant series is a labelled fallback to the last value, which is exact
    assert f.model == "last" and "constant over 100 observed steps" in f.fallback_reason
    assert np.allclose(f.median(RATE), 12.0) and np.allclose(f.median(LATENCY_MS), 80.0)


@pytest.mark.parametrize("name", fp.BASELINE_NAMES)
def test_make_baseline(name):
    b = fp.make_baseline(name, step_seconds=15, horizon_seconds=180)
    f = b.forecast(history(n=400))
    assert f.model == name and f.fallback_reason is None
    assert f.quantiles == (0.5, 0.9)
    assert f.rate[0.5].shape == (12,) and np.isfinite(f.rate[0.9]).all()
    assert (f.rate[0.9] >= f.rate[0.5] - 1e-9).all()


def test_baseline_with_one_feature_leaves_the_other_nan():
    f = fp.make_baseline("last", step_seconds=15, horizon_seconds=60).forecast(history(latency_ms=None))
    assert np.isnan(f.latency_ms[0.5]).all() and np.isfinite(f.rate[0.5]).all()


def test_unknown_baseline():
    with pytest.raises(ValueError, match="unknown baseline 'arima'"):
        fp.make_baseline("arima", step_seconds=15, horizon_seconds=180)


def test_load_forecaster_from_bytes_and_path(tiny_model, tmp_path):
    content = model_file.to_bytes(tiny_model)
    assert fp.load_forecaster(content).forecast(history()).model == "lstm"
    path = tmp_path / "m.pt"
    path.write_bytes(content)
    assert fp.load_forecaster(path, fallback="last").forecast(history(n=5)).model == "last"
    assert fp.load_forecaster(str(path)).step_seconds == 15


def test_load_forecaster_rejects_a_non_model(tmp_path):
    bad = tmp_path / "config.yaml"
    bad.write_text("not: a model\n")
    with pytest.raises(fp.ModelFormatError, match="not a Forescale model file"):
        fp.load_forecaster(bad)
    with pytest.raises(fp.ModelFormatError, match="cannot read"):
        fp.load_forecaster(tmp_path / "missing.pt")


def test_packaged_default_model():
    if not fp.DEFAULT_MODEL_PATH.is_file():
        pytest.fail(f"the default model is not shipped at {fp.DEFAULT_MODEL_PATH}")
    assert fp.DEFAULT_MODEL_PATH.stat().st_size < 2_000_000
    f = fp.load_forecaster()
    assert f.config.features == (LATENCY_MS, RATE) and f.horizon_seconds == 180
    assert "derived" in f.metadata["data"] and "service model" in f.metadata["data"]
    out = f.forecast(history(n=100, step=5.0))
    assert out.model == "lstm" and np.isfinite(out.upper(LATENCY_MS)).all()


def test_importing_the_package_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, forescale_predictor, forescale_predictor.presets, forescale_predictor.prometheus_source; " \
           "fp = forescale_predictor.make_baseline('ewm', step_seconds=15, horizon_seconds=180); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def _with_gap(h: History, lo: int, hi: int) -> History:
    feats = {k: v.copy() for k, v in h.features.items()}
    feats[RATE][lo:hi] = np.nan
    return History(h.step_seconds, h.times, feats)


def _all_nan(h: History, name: str) -> History:
    feats = {k: v.copy() for k, v in h.features.items()}
    feats[name][:] = np.nan
    return History(h.step_seconds, h.times, feats)


def test_a_one_target_model_gets_the_other_from_the_fallback():
    from forescale_predictor.model_config import ModelConfig
    from forescale_predictor.training import Segment, TrainOptions, train

    t, values = synthetic(500)
    config = ModelConfig(features=(LATENCY_MS,), targets=(LATENCY_MS,), step_seconds=15.0, lookback=16, horizon=12, hidden=8)
    model = train([Segment(t, values[:, :1])], config,
                  TrainOptions(max_epochs=1, windows_per_epoch=256, min_windows_per_epoch=256, progress=False))
    f = LSTMForecaster(model).forecast(history())
    assert f.model == "lstm+ewm" and "rate" in f.fallback_reason
    assert np.isfinite(f.upper(RATE)).all() and np.isfinite(f.upper(LATENCY_MS)).all()


@pytest.mark.parametrize(("missing", "model"), [(1, "lstm"), (3, "lstm"), (8, "ewm")])
def test_trailing_missing_samples(forecaster, missing, model):
    h = history()
    feats = {k: v.copy() for k, v in h.features.items()}
    feats[LATENCY_MS][-missing:] = np.nan  # the newest scrapes have not landed
    f = forecaster.forecast(History(h.step_seconds, h.times, feats))
    assert f.model == model
    assert np.isfinite(f.upper(LATENCY_MS)).all()
