"""The series' own cycle when its history shows one, else the EWM level.

Traffic that repeats (a cron job's burst every five minutes, a batch client
that polls on a timer) has a period longer than any window the LSTM reads
(16 steps, four minutes at 15 s) and shorter than the day a seasonal naive
looks back. Neither sees the next burst coming, so the engine answers each
one after it has begun, with pods that are ready when it is over.

The period is learned from the series itself, each fit:

- The autocorrelation of the first differences at every lag from
  `MIN_PERIOD_STEPS` to a third of the history.
  Differences, because a level that drifts or a burst that lasts makes the
  values themselves correlate at every short lag; the differences of a
  repeating shape correlate at its period and nowhere else, and those of
  Poisson noise nowhere but lag 1.
- A period P is a local peak of that autocorrelation whose value, and the
  value at 2P, are both at least `max(MIN_ACF, 4 / sqrt(n))`: four standard
  errors of an autocorrelation of n values of noise, at least 0.3. Seen at
  one and at two periods, the cycle has shown itself three times: a few
  large random bursts that happen to line up once (the differences of bursty
  traffic are heavy-tailed, so its autocorrelations scatter far wider than
  noise's) do not make one. Of the peaks, the smallest within 10% of the
  highest (a cycle of P also peaks at 2P and 3P).

With a period P the forecast of step h is the EWM level at the origin plus
the mean, over the last `CYCLES` cycles, of how far the value at the same
phase stood from the level at that cycle's origin:
`L[o] + mean_j(y[o + h - jP] - L[o - jP])`. The shape repeats, the level may
move. Without a period (or before one cycle of history at an origin) it is
the EWM level: this baseline is then `ewm` exactly, with the same fitted
smoothing factor.
"""

from __future__ import annotations

import math

import numpy as np

from .ewm import EWMean, forward_fill, ewm_levels

#: the shortest period looked for: 4 steps (a minute at 15 s); shorter repeats are noise to a pod that starts in 90 s
MIN_PERIOD_STEPS = 4
#: the autocorrelation a period needs at least (and at least four standard errors of noise's: module docstring)
MIN_ACF = 0.3
#: how many past cycles are averaged: each is one noisy sample of the shape, and the history holds an hour
CYCLES = 3


def detect_period(values: np.ndarray, min_steps: int = MIN_PERIOD_STEPS) -> int | None:
    """The period, in steps, of a 1-D series, or None when it shows none (module docstring)."""
    filled = forward_fill(np.asarray(values, dtype=np.float64).reshape(-1, 1))[:, 0]
    filled = filled[np.isfinite(filled)]
    d = np.diff(filled)
    n = len(d)
    if n // 3 < min_steps:
        return None
    d = d - d.mean()
    power = float(d @ d)
    if power <= 0:
        return None
    # all lags at once (np.correlate): cheap enough to look for a period on every tick (`Cycle.stale`)
    acf = np.correlate(d, d, mode="full")[n : n + 2 * (n // 3) + 1] / power  # acf[lag - 1] is lag's
    line = max(MIN_ACF, 4.0 / math.sqrt(n))
    # a period is a local peak of the autocorrelation, over the line at one and at two periods: three cycles seen
    peaks = [lag for lag in range(min_steps, n // 3 + 1)
             if acf[lag - 1] >= line and acf[lag - 1] >= acf[lag - 2] and acf[lag - 1] >= acf[lag]
             and acf[2 * lag - 1] >= line]
    if not peaks:
        return None
    best = max(acf[lag - 1] for lag in peaks)
    return next(lag for lag in peaks if acf[lag - 1] >= 0.9 * best)


class Cycle(EWMean):
    """y[o + h] = L[o] + mean_j (y[o + h - jP] - L[o - jP]), or L[o] without a period."""

    name = "cycle"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        #: the learned period in steps; None: no cycle found (the forecast is the EWM level)
        self.period: int | None = None

    @property
    def min_history(self) -> int:
        """One whole cycle before an origin, once a period is found: the band is fitted on origins that see one."""
        return self.period + 1 if self.period else 1

    @property
    def label(self) -> str:
        return f"cycle {self.period * self.step_seconds:g} s" if self.period else self.name

    def stale(self, values: np.ndarray) -> bool:
        """The history now shows a period, and not the one fitted: refit now rather than at the next
        scheduled fit. Checked every tick, the next burst is forecast from the tick its cycle shows itself,
        not up to a refit interval later. A period no longer seen waits for the scheduled fit: near its
        line the autocorrelation crosses it back and forth as the window slides, and refitted on each
        crossing the forecast flapped between the cycle and the level (the 3-hour periodic trace at
        seed 2: the rate's model changed 32 times in 3 hours, 4 times now, and 1,010 violation s against 570)."""
        period = detect_period(values[:, 0])
        return period is not None and period != self.period

    def _fit_params(self, values: np.ndarray, times: np.ndarray) -> None:
        super()._fit_params(values, times)
        # one period per fit, from the first column (the loop fits one target per model)
        self.period = detect_period(values[:, 0])

    def _point(self, values: np.ndarray, times: np.ndarray, at: np.ndarray) -> np.ndarray:
        level = ewm_levels(values[: int(at.max()) + 1], self.alpha or 0.5)
        point = np.repeat(level[at][:, None, :], self.horizon, axis=1)
        if not self.period:
            return point
        filled = forward_fill(values[: int(at.max()) + 1])
        p = self.period
        steps = np.arange(1, self.horizon + 1)
        # for step h, the cycles j = first..first+CYCLES-1 back, first the nearest whose value at h's phase is known
        back = (-(-steps // p))[:, None] + np.arange(CYCLES)[None, :]  # [H, J]
        base = at[:, None, None] - back[None] * p  # [N, H, J]: that cycle's origin
        src = base + steps[None, :, None]  # [N, H, J]: that cycle's value at h's phase
        known = base >= 0
        dev = filled[np.where(known, src, 0)] - level[np.where(known, base, 0)]  # [N, H, J, F]
        dev[~known] = np.nan
        seen = np.isfinite(dev).sum(axis=2)
        mean = np.where(seen > 0, np.nansum(dev, axis=2) / np.maximum(seen, 1), 0.0)
        return point + mean
