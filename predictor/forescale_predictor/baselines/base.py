"""What every baseline shares: vectorised point forecasts plus an empirical band.

A baseline makes a point forecast for each origin. Its quantiles come from
its own errors on the data it was fitted on: for each horizon step and
feature, the q-quantile of `(truth - point) / scale`, and a forecast's band is
that quantile times the scale at its origin. Unfitted, the band collapses
onto the point forecast.

The scale is the window level used by the LSTM (scaling.window_levels): a
latency's noise grows with the latency. A series that counts events
(`counts=True`, the request rate) has Poisson noise, which grows as the
square root of its level, so its scale is `sqrt(level)`. Relative errors
learned at a near-idle level do not transfer to a busy one: on a synthetic
ramp from 0.5 to 40 req/s, the EWM's q0.9 band 3 minutes out, learned from
the idle start, said 76 req/s at 14 (a burst to 3 req/s over 0.6 is an error
of 4 levels), and the replay ran pool A at twice what the load needed.

A count's level is floored at the mean of the data the band was fitted on:
three minutes out, a series that sits near idle is not off by the noise of
its idle level but by the bursts it starts, whose size belongs to the series,
not to the idle minute. Without the floor a bursty service (synth-bursty,
seed 5: bursts to 40 req/s from near idle) learned residuals of ~38 req/s
over a scale near 1, and inside the next burst they were multiplied by
sqrt(40): `ewm`'s q0.9 180 s out said 82-122 req/s at a rate of 40, the
forecaster chose `ewm` on its median, and pool A went to 33 pods where the
oracle used 14 (docs/frontier.md, "The widening's cap").
"""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

from ..scaling import window_levels
from ..windowing import input_windows, target_windows

#: Steps that set a window's level for the band (same meaning as in the LSTM).
LEVEL_STEPS = 4


class Baseline(ABC):
    """A forecaster over arrays: `values` [T, F] on a regular grid, `origins` indices into it."""

    name: str = "baseline"

    def __init__(self, *, step_seconds: float, horizon: int, quantiles: tuple[float, ...] = (0.5, 0.9),
                 counts: bool = False) -> None:
        if horizon < 1:
            raise ValueError(f"horizon must be >= 1 step, got {horizon}")
        self.step_seconds = float(step_seconds)
        self.horizon = int(horizon)
        self.quantiles = tuple(quantiles)
        #: the series counts events (a request rate): its band scales with sqrt(level), not level
        self.counts = bool(counts)
        self.residual_quantiles: np.ndarray | None = None  # [Q, H, F]
        #: a count's lowest level for the band's scale [F]: the mean of the fitted data (module docstring)
        self.level_floor: np.ndarray | None = None

    @property
    def min_history(self) -> int:
        """Samples needed up to and including an origin."""
        return 1

    @property
    def label(self) -> str:
        """How this baseline names itself in results."""
        return self.name

    def stale(self, values: np.ndarray) -> bool:
        """Whether the history [T, F] calls for a refit before the next scheduled one; most never do."""
        return False

    def fit(self, values: np.ndarray, times: np.ndarray) -> "Baseline":
        """Fit parameters and the band on a training part [T, F]."""
        values = _as_2d(values)
        if self.counts:
            seen = np.isfinite(values)
            self.level_floor = np.where(seen, np.abs(values), 0.0).sum(axis=0) / np.maximum(seen.sum(axis=0), 1)
        self._fit_params(values, times)
        self._fit_band(values, times)
        return self

    def predict_origins(self, values: np.ndarray, times: np.ndarray, at: np.ndarray) -> np.ndarray:
        """Quantile forecasts [N, Q, H, F] for the origins `at` (each needs `min_history` samples)."""
        values = _as_2d(values)
        point = self._point(values, times, at)  # [N, H, F]
        out = np.repeat(point[:, None], len(self.quantiles), axis=1)
        if self.residual_quantiles is not None:
            scale = self._scale(input_windows(values, at, min(LEVEL_STEPS, int(at.min()) + 1)))
            out = out + self.residual_quantiles[None] * scale[:, None, None, :]
        return out

    def _scale(self, windows: np.ndarray) -> np.ndarray:
        """The unit [N, F] a band is measured in at each window's origin (module docstring)."""
        levels = window_levels(windows, LEVEL_STEPS)
        if not self.counts:
            return levels
        if self.level_floor is not None:
            levels = np.maximum(levels, self.level_floor[None, :])
        return np.sqrt(levels)

    @abstractmethod
    def _point(self, values: np.ndarray, times: np.ndarray, at: np.ndarray) -> np.ndarray:
        """Point forecasts [N, H, F]."""

    def _fit_params(self, values: np.ndarray, times: np.ndarray) -> None:
        """Fit whatever the baseline learns; most learn nothing."""

    def _fit_band(self, values: np.ndarray, times: np.ndarray) -> None:
        first = max(self.min_history - 1, LEVEL_STEPS - 1)
        at = np.arange(first, len(values) - self.horizon)
        if at.size < 8:
            return
        point = self._point(values, times, at)
        truth = target_windows(values, at, self.horizon)
        scale = self._scale(input_windows(values, at, LEVEL_STEPS))
        with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
            rel = (truth - point) / scale[:, None, :]
        ok = np.isfinite(rel).all(axis=(1, 2))  # windows with overflowing or missing values are left out
        if ok.sum() < 8:
            return
        self.residual_quantiles = np.quantile(rel[ok], self.quantiles, axis=0)
        median = self.quantiles.index(0.5) if 0.5 in self.quantiles else None
        if median is not None:
            # the point forecast is the baseline's median by definition
            self.residual_quantiles = self.residual_quantiles - self.residual_quantiles[median : median + 1]


def _as_2d(values: np.ndarray) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    return values[:, None] if values.ndim == 1 else values
