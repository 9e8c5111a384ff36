import numpy as np
import pytest

from forescale_predictor.errors import TrainingError
from forescale_predictor.windowing import WindowSpec, complete, input_windows, origins, target_windows, time_split


def test_windows_take_lookback_in_and_horizon_out():
    values = np.arange(20, dtype=float)
    spec = WindowSpec(lookback=4, horizon=3)
    at = origins(len(values), spec)
    assert at[0] == 3 and at[-1] == 16
    x = input_windows(values, at, spec.lookback)
    y = target_windows(values, at, spec.horizon)
    assert x.shape == (len(at), 4, 1) and y.shape == (len(at), 3, 1)
    assert x[0, :, 0].tolist() == [0, 1, 2, 3]
    assert y[0, :, 0].tolist() == [4, 5, 6]
    assert x[-1, -1, 0] == 16 and y[-1, -1, 0] == 19


def test_complete_drops_windows_touching_nan():
    values = np.arange(20, dtype=float)
    values[10] = np.nan
    spec = WindowSpec(4, 2)
    kept = complete(values, origins(20, spec), spec)
    for o in kept:
        assert not (o - 3 <= 10 <= o + 2)
    assert 7 in kept and 8 not in kept and 13 not in kept and 14 in kept


@pytest.mark.parametrize(("lookback", "horizon"), [(1, 1), (4, 0)])
def test_spec_rejects_degenerate_shapes(lookback, horizon):
    with pytest.raises(ValueError):
        WindowSpec(lookback, horizon)


def test_too_short_series_is_a_training_error():
    with pytest.raises(TrainingError, match="longer series"):
        time_split(10, WindowSpec(8, 4), 0.7)
