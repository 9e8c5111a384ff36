"""Scaling of windows, so that one model works for services of any size.

Two stages, both free of look-ahead:

1. **Per window, by level.** Each feature of a window is divided by its
   *level*: the mean absolute value of the window's last `level_steps`
   samples (or of the whole window when those are all zero; 1 when everything
   is zero). Inputs become relative deviations `x / level - 1`; targets become
   the change from the last observed value in level units,
   `(y - x_last) / level`. A model that outputs zero therefore forecasts the
   last value, and a rate of 10 req/s looks like one of 10,000 req/s. The
   level is computed from the window alone.
2. **Across windows, standardisation.** scikit-learn `StandardScaler`s, fitted
   on the training windows only, bring inputs and targets to unit variance.
   Their parameters are stored in the model file as plain arrays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from sklearn.preprocessing import StandardScaler

#: Inputs beyond this many levels from the window level are clipped: a
#: ten-fold burst stays visible without destabilising the network.
CLIP = 10.0


def window_levels(windows: np.ndarray, level_steps: int) -> np.ndarray:
    """Level [N, F] of each window [N, L, F]; see the module docstring."""
    recent = np.abs(windows[:, -level_steps:, :]).mean(axis=1)
    whole = np.abs(windows).mean(axis=1)
    level = np.where(recent > 0, recent, whole)
    return np.where(level > 0, level, 1.0)


def relative_inputs(windows: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Inputs as deviations from the level, clipped to +-CLIP."""
    return np.clip(windows / levels[:, None, :] - 1.0, -CLIP, CLIP)


def relative_targets(windows: np.ndarray, targets: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Targets [N, H, F] as change from the window's last value, in level units."""
    return np.clip((targets - windows[:, -1:, :]) / levels[:, None, :], -CLIP, CLIP)


def absolute_targets(windows: np.ndarray, deltas: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """Undo `relative_targets`: deltas [N, ..., H, F] back to values."""
    last = windows[:, -1, :]
    shape = (deltas.shape[0],) + (1,) * (deltas.ndim - 3) + (1, last.shape[-1])
    return last.reshape(shape) + deltas * levels.reshape(shape)


@dataclass(frozen=True)
class Standardiser:
    """Per-feature mean and scale, fitted by scikit-learn on training data only."""

    mean: np.ndarray
    scale: np.ndarray

    @classmethod
    def fit(cls, samples: np.ndarray) -> "Standardiser":
        """Fit on samples [..., F] (flattened over all leading axes)."""
        flat = samples.reshape(-1, samples.shape[-1])
        scaler = StandardScaler().fit(flat)
        scale = np.where(scaler.scale_ > 1e-8, scaler.scale_, 1.0)
        return cls(mean=scaler.mean_.astype(np.float64), scale=scale.astype(np.float64))

    def transform(self, values: np.ndarray) -> np.ndarray:
        return (values - self.mean) / self.scale

    def inverse(self, values: np.ndarray) -> np.ndarray:
        return values * self.scale + self.mean
