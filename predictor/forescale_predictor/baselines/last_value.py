"""Last value: every horizon step repeats the latest observation."""

from __future__ import annotations

import numpy as np

from .base import Baseline


class LastValue(Baseline):
    """y[o + h] = y[o]."""

    name = "last"

    def _point(self, values: np.ndarray, times: np.ndarray, at: np.ndarray) -> np.ndarray:
        return np.repeat(values[at][:, None, :], self.horizon, axis=1)
