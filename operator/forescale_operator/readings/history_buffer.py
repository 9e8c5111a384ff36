"""A rolling per-resource history of the values the forecaster needs.

The loop appends each tick's observation; the forecaster resamples to its own
step, so ticks may come every few seconds. Holding history in memory keeps the
per-tick cost at a few instant queries instead of a range query; after an
operator restart the buffer starts empty and the forecaster declares its
fallback until it has seen enough.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from forescale_predictor.forecast_types import LATENCY_MS, RATE, History


class HistoryBuffer:
    """Samples of (time, latency_ms, rate) kept for `keep_seconds`."""

    def __init__(self, keep_seconds: float = 3600.0) -> None:
        self.keep_seconds = keep_seconds
        self._rows: deque[tuple[float, float, float]] = deque()

    def __len__(self) -> int:
        return len(self._rows)

    def append(self, time: float, latency_ms: float | None, rate_rps: float | None) -> None:
        """Add one tick; None becomes NaN (a gap the forecaster fills or falls back on)."""
        if self._rows and time <= self._rows[-1][0]:
            return  # a tick at the same instant (retry) adds nothing
        self._rows.append((time, _nan(latency_ms), _nan(rate_rps)))
        while self._rows and self._rows[0][0] < time - self.keep_seconds:
            self._rows.popleft()

    def history(self, step_seconds: float) -> History:
        """The buffer on a regular grid of `step_seconds` (last sample in each bin)."""
        if not self._rows:
            return History(step_seconds, np.empty(0), {LATENCY_MS: np.empty(0), RATE: np.empty(0)})
        rows = np.array(self._rows, dtype=float)
        end = rows[-1, 0]
        n = int((end - rows[0, 0]) // step_seconds) + 1
        grid = end - step_seconds * np.arange(n)[::-1]
        idx = np.searchsorted(rows[:, 0], grid, side="right") - 1
        lat, rate = np.full(n, np.nan), np.full(n, np.nan)
        ok = idx >= 0
        # a grid point takes the newest sample at or before it, if that sample is
        # less than one step old; older means the loop missed ticks: a gap.
        fresh = ok & (grid - rows[np.clip(idx, 0, None), 0] < step_seconds)
        lat[fresh] = rows[idx[fresh], 1]
        rate[fresh] = rows[idx[fresh], 2]
        return History(step_seconds, grid, {LATENCY_MS: lat, RATE: rate})


def _nan(value: float | None) -> float:
    return float("nan") if value is None else float(value)
