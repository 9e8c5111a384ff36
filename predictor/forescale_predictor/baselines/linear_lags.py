"""A linear model on lags (scikit-learn Ridge), one output per horizon step.

It sees the last `lags` samples of every feature, scaled like the LSTM's
inputs (relative to the window level), and predicts each feature's change
from its last value in level units, so one fit serves any scale. Unfitted,
it forecasts the last value.
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import Ridge

from ..scaling import relative_inputs, relative_targets, window_levels
from ..windowing import input_windows, target_windows
from .base import LEVEL_STEPS, Baseline

DEFAULT_LAGS = 16
MAX_FIT_WINDOWS = 50_000


class LinearLags(Baseline):
    """Ridge regression of the next `horizon` changes on the last `lags` samples."""

    name = "linear"

    def __init__(self, *, lags: int = DEFAULT_LAGS, ridge_alpha: float = 1.0, **kwargs) -> None:
        super().__init__(**kwargs)
        self.lags = lags
        self.ridge_alpha = ridge_alpha
        self.model: Ridge | None = None

    @property
    def min_history(self) -> int:
        return self.lags

    def _fit_params(self, values: np.ndarray, times: np.ndarray) -> None:
        at = np.arange(self.lags - 1, len(values) - self.horizon)
        if at.size < 4 * self.lags:
            self.model = None
            return
        if at.size > MAX_FIT_WINDOWS:
            at = at[-MAX_FIT_WINDOWS:]
        x, levels = self._features(values, at)
        windows = input_windows(values, at, self.lags)
        y = relative_targets(windows, target_windows(values, at, self.horizon), levels).reshape(len(at), -1)
        ok = np.isfinite(x).all(axis=1) & np.isfinite(y).all(axis=1)
        if ok.sum() < 4 * self.lags:
            self.model = None
            return
        self.model = Ridge(alpha=self.ridge_alpha).fit(x[ok], y[ok])

    def _features(self, values: np.ndarray, at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        windows = input_windows(values, at, self.lags)
        levels = window_levels(windows, min(LEVEL_STEPS, self.lags))
        return relative_inputs(windows, levels).reshape(len(at), -1), levels

    def _point(self, values: np.ndarray, times: np.ndarray, at: np.ndarray) -> np.ndarray:
        last = np.repeat(values[at][:, None, :], self.horizon, axis=1)
        if self.model is None:
            return last
        x, levels = self._features(values, at)
        ok = np.isfinite(x).all(axis=1)
        deltas = np.zeros((len(at), self.horizon * values.shape[1]))
        if ok.any():
            deltas[ok] = self.model.predict(x[ok])
        return last + deltas.reshape(len(at), self.horizon, -1) * levels[:, None, :]
