"""Seasonal naive: the value one period before each target time.

The period is a day when the fitted data span at least two days, else an
hour when they span two hours, else ten minutes (the request traces here are
about an hour long). A fixed `period_seconds` overrides that choice.
"""

from __future__ import annotations

import numpy as np

from .base import Baseline

CANDIDATE_PERIODS = (86400.0, 3600.0, 600.0)


class SeasonalNaive(Baseline):
    """y[o + h] = y[o + h - P]."""

    name = "seasonal"

    def __init__(self, *, period_seconds: float | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.period_seconds = period_seconds

    @property
    def period_steps(self) -> int:
        period = self.period_seconds or CANDIDATE_PERIODS[0]
        return max(self.horizon, int(round(period / self.step_seconds)))

    @property
    def min_history(self) -> int:
        return self.period_steps

    def choose_period(self, span_seconds: float) -> None:
        """Pick the longest candidate period that fits twice in `span_seconds`."""
        if self.period_seconds is None:
            fits = [p for p in CANDIDATE_PERIODS if span_seconds >= 2 * p]
            self.period_seconds = fits[0] if fits else CANDIDATE_PERIODS[-1]

    def _fit_params(self, values: np.ndarray, times: np.ndarray) -> None:
        self.choose_period(float(times[-1] - times[0]) if len(times) > 1 else 0.0)

    def _point(self, values: np.ndarray, times: np.ndarray, at: np.ndarray) -> np.ndarray:
        period = self.period_steps
        steps = np.arange(1, self.horizon + 1)
        src = at[:, None] + steps[None, :] - period
        # more than one period ahead would need unseen values: repeat the cycle
        src = np.where(src > at[:, None], src - period, src)
        return values[np.clip(src, 0, None)]
