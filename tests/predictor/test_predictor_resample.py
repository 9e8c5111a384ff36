import numpy as np
import pytest

from forescale_predictor.forecast_types import History
from forescale_predictor.resample import align, fill_gaps, resample_history, to_grid


def test_to_grid_averages_and_marks_long_gaps():
    times = np.array([0, 5, 10, 15, 30, 45, 120, 135], dtype=float)
    values = np.array([1, 3, 5, 7, 9, 11, 13, 15], dtype=float)
    grid, out = to_grid(times, values, 15.0, max_gap_steps=2)
    assert grid.tolist() == [0, 15, 30, 45, 60, 75, 90, 105, 120, 135]
    assert out[:4].tolist() == [3, 7, 9, 11]  # 0,5,10 averaged
    assert np.isnan(out[4:8]).all()  # a 4-step gap is longer than 2: left missing
    assert out[8:].tolist() == [13, 15]


def test_fill_gaps_only_short_interior_runs():
    v = np.array([np.nan, 1, np.nan, 3, np.nan, np.nan, np.nan, 7, np.nan])
    out = fill_gaps(v, 2)
    assert np.isnan(out[0]) and np.isnan(out[-1])  # edges are never invented
    assert out[2] == 2
    assert np.isnan(out[4:7]).all()


def test_upsampling_interpolates():
    grid, out = to_grid(np.array([0.0, 60, 120]), np.array([0.0, 60, 0]), 15.0)
    assert out.tolist() == [0, 15, 30, 45, 60, 45, 30, 15, 0]


def test_align_puts_features_on_one_grid():
    h = align({"a": (np.array([0.0, 15, 30]), np.array([1.0, 2, 3])), "b": (np.array([15.0, 30]), np.array([5.0, 6]))}, 15.0)
    assert h.times.tolist() == [0, 15, 30]
    assert np.isnan(h.features["b"][0]) and h.features["b"][1:].tolist() == [5, 6]


@pytest.mark.parametrize(("src", "dst"), [(5.0, 15.0), (15.0, 60.0), (60.0, 15.0), (15.0, 15.0)])
def test_resample_history_ends_at_the_last_sample(src, dst):
    n = 200
    t = 1000.0 + src * np.arange(n)
    h = History(src, t, {"rate": np.linspace(1, 2, n)})
    out = resample_history(h, dst)
    assert out.step_seconds == dst
    assert out.times[-1] == t[-1]
    assert np.allclose(np.diff(out.times), dst)
    assert out.features["rate"][-1] == pytest.approx(2.0, rel=0.02)
