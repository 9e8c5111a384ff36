"""No value from the validation or test part may reach a training window or a scaler."""

import numpy as np

from forescale_predictor.backtest import run_backtest
from forescale_predictor.model_config import ModelConfig
from forescale_predictor.scaling import Standardiser, relative_inputs, window_levels
from forescale_predictor.training import Segment, TrainOptions, build_windows, train
from forescale_predictor.windowing import WindowSpec, time_split

from predictor_fixtures import synthetic


def test_time_split_keeps_training_targets_before_validation_inputs():
    spec = WindowSpec(lookback=8, horizon=4)
    n, fraction = 200, 0.7
    train, valid = time_split(n, spec, fraction)
    cut = int(n * fraction)
    assert (train + spec.horizon).max() < cut  # last training target
    assert (valid - spec.lookback + 1).min() >= cut  # first validation input


def test_training_windows_never_hold_a_value_after_the_split():
    # mark each value with its own index: any index >= cut inside a training window is a leak
    n = 300
    values = np.arange(n, dtype=float)[:, None] + 1.0
    config = ModelConfig(features=("v",), targets=("v",), step_seconds=1.0, lookback=10, horizon=5, ar_steps=4)
    train_set, valid_set = build_windows([Segment(np.arange(n, dtype=float), values)], config, valid_fraction=0.2)
    cut = int(n * 0.8)
    assert train_set.inputs.max() <= cut and train_set.targets.max() <= cut
    assert valid_set.inputs.min() >= cut + 1


def test_scalers_do_not_change_when_the_future_changes():
    """Train twice on series that differ only after the training cut: identical scalers and weights."""
    t, base = synthetic(700)
    changed = base.copy()
    cut = int(len(base) * 0.7)
    changed[cut:] *= 50.0  # a wildly different future
    config = ModelConfig(step_seconds=15.0, lookback=16, horizon=12, hidden=8)
    options = TrainOptions(max_epochs=2, windows_per_epoch=256, min_windows_per_epoch=256, progress=False, threads=1)
    a = train([Segment(t[:cut], base[:cut])], config, options)
    b = train([Segment(t[:cut], changed[:cut])], config, options)
    assert np.array_equal(a.input_scaler.mean, b.input_scaler.mean)
    assert np.array_equal(a.target_scaler.scale, b.target_scaler.scale)
    for k, v in a.net.state_dict().items():
        assert np.array_equal(v.numpy(), b.net.state_dict()[k].numpy())


def test_backtest_forecasts_do_not_depend_on_later_values():
    """Changing values after an origin's horizon must not change that origin's forecast."""
    t, values = synthetic(800)
    series = values[:, 1]
    kwargs = dict(step_seconds=15.0, horizon_steps=4, models=("lstm", "linear", "ewm"),
                  options=TrainOptions(max_epochs=2, windows_per_epoch=256, min_windows_per_epoch=256, progress=False, threads=1))
    a = run_backtest(t, series, **kwargs)
    changed = series.copy()
    changed[-50:] += 1000.0
    b = run_backtest(t, changed, **kwargs)
    safe = a.origins + 4 < len(series) - 50
    for name in ("lstm", "linear", "ewm"):
        assert np.allclose(a.models[name].predictions[safe], b.models[name].predictions[safe])


def test_window_scaling_uses_the_window_only():
    windows = np.random.default_rng(0).uniform(1, 2, size=(5, 8, 1))
    levels = window_levels(windows, 4)
    assert np.allclose(levels[:, 0], np.abs(windows[:, -4:, 0]).mean(axis=1))
    scaler = Standardiser.fit(relative_inputs(windows, levels))
    assert scaler.mean.shape == (1,)
