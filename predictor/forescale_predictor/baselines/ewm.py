"""Exponentially weighted mean: every horizon step gets the smoothed level.

The smoothing factor is chosen on the fitted data (the one with the lowest
error at the final horizon step), 0.5 when unfitted. Missing samples carry
the previous level forward.
"""

from __future__ import annotations

import numpy as np
from scipy.signal import lfilter

from .base import Baseline

ALPHAS = (0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0)


def ewm_levels(values: np.ndarray, alpha: float) -> np.ndarray:
    """Causal EWM of each column of values [T, F]; NaN carries the previous level."""
    filled = forward_fill(values)
    out = np.empty_like(filled)
    for f in range(filled.shape[1]):
        col = filled[:, f]
        first = col[np.isfinite(col)][0] if np.isfinite(col).any() else 0.0
        col = np.where(np.isfinite(col), col, first)
        out[:, f], _ = lfilter([alpha], [1.0, alpha - 1.0], col, zi=[(1 - alpha) * first])
    return out


class EWMean(Baseline):
    """y[o + h] = EWM(y)[o]."""

    name = "ewm"

    def __init__(self, *, alpha: float | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.alpha = alpha

    def _fit_params(self, values: np.ndarray, times: np.ndarray) -> None:
        if self.alpha is not None or len(values) <= self.horizon + 2:
            return
        truth = values[self.horizon :]
        errors = [np.nanmean(np.abs(ewm_levels(values, a)[: -self.horizon] - truth)) for a in ALPHAS]
        self.alpha = ALPHAS[int(np.nanargmin(errors))] if np.isfinite(errors).any() else 0.5

    def _point(self, values: np.ndarray, times: np.ndarray, at: np.ndarray) -> np.ndarray:
        level = ewm_levels(values[: int(at.max()) + 1], self.alpha or 0.5)[at]
        return np.repeat(level[:, None, :], self.horizon, axis=1)


def forward_fill(values: np.ndarray) -> np.ndarray:
    """Each column [T, F] with a missing value carrying the last one seen (leading NaNs stay NaN)."""
    values = np.array(values, dtype=np.float64)
    for f in range(values.shape[1]):
        col = values[:, f]
        ok = np.isfinite(col)
        idx = np.where(ok, np.arange(len(col)), 0)
        np.maximum.accumulate(idx, out=idx)
        values[:, f] = np.where(ok | (np.cumsum(ok) > 0), col[idx], np.nan)
    return values
