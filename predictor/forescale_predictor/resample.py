"""Put irregular samples on a fixed time grid, explicitly.

- Several samples in one step are averaged (a rate or a latency quantile read
  at a finer resolution than the model's step).
- A step with no sample is NaN first; gaps of up to `max_gap_steps` are then
  filled by linear interpolation between their neighbours, longer gaps stay
  NaN so that windowing drops them and a forecaster falls back on them.
- When the grid is finer than the samples (a 60 s series read at 15 s) the
  values are interpolated, again never across a gap longer than
  `max_gap_steps` of the source's own spacing.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from .csv_source import RawSeries
from .errors import SeriesError
from .forecast_types import History

DEFAULT_MAX_GAP_STEPS = 3
#: a grid longer than this is refused before it is allocated: a series whose
#: timestamps jump by years (a typo, a unit mix-up) must be an error, not an OOM
MAX_GRID_POINTS = 5_000_000


def native_step(times: np.ndarray) -> float:
    """The median spacing of `times` in seconds (0 for fewer than 2 samples)."""
    if len(times) < 2:
        return 0.0
    return float(np.median(np.diff(times)))


def to_grid(
    times: np.ndarray,
    values: np.ndarray,
    step_seconds: float,
    *,
    start: float | None = None,
    end: float | None = None,
    max_gap_steps: int = DEFAULT_MAX_GAP_STEPS,
) -> tuple[np.ndarray, np.ndarray]:
    """Grid times (multiples of the step) and values; see the module docstring."""
    times = np.asarray(times, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    keep = np.isfinite(times)
    times, values = times[keep], values[keep]
    if times.size == 0:
        raise SeriesError("the series has no samples")
    lo = np.floor((times[0] if start is None else start) / step_seconds) * step_seconds
    hi = np.floor((times[-1] if end is None else end) / step_seconds) * step_seconds
    n = grid_points(lo, hi, step_seconds)
    grid = lo + step_seconds * np.arange(n)
    src_step = native_step(times)
    finite = np.isfinite(values)
    if src_step > step_seconds * 1.5 and finite.sum() >= 2:
        out = _interpolate(times[finite], values[finite], grid, max_gap=src_step * max_gap_steps)
    else:
        idx = np.floor((times - lo) / step_seconds + 1e-9).astype(np.int64)
        ok = finite & (idx >= 0) & (idx < n)
        sums = np.bincount(idx[ok], weights=values[ok], minlength=n)
        counts = np.bincount(idx[ok], minlength=n)
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        out = fill_gaps(out, max_gap_steps)
    return grid, out


def grid_points(lo: float, hi: float, step_seconds: float) -> int:
    """Points of the grid from `lo` to `hi`; SeriesError when empty or absurdly long."""
    span = hi - lo
    if not np.isfinite(span):
        raise SeriesError("the series' timestamps are not finite")
    n = int(round(span / step_seconds)) + 1
    if n < 1:
        raise SeriesError("the requested time range is empty")
    if n > MAX_GRID_POINTS:
        raise SeriesError(
            f"the series spans {span:.0f} s, which at a step of {step_seconds:g} s is {n:,} points "
            f"(more than {MAX_GRID_POINTS:,}); check the timestamps for a jump, or give a larger --step"
        )
    return n


def fill_gaps(values: np.ndarray, max_gap_steps: int) -> np.ndarray:
    """Linearly fill interior NaN runs of at most `max_gap_steps`; longer runs and the edges stay NaN."""
    out = np.array(values, dtype=np.float64)
    nan = ~np.isfinite(out)
    if not nan.any() or nan.all():
        return out
    idx = np.arange(len(out))
    good = idx[~nan]
    filled = np.interp(idx, good, out[~nan])
    # length of the NaN run each sample belongs to, and whether it is interior
    run_start = np.searchsorted(good, idx, side="right") - 1
    prev_good = np.where(run_start >= 0, good[np.clip(run_start, 0, None)], -1)
    next_pos = np.searchsorted(good, idx, side="left")
    next_good = np.where(next_pos < len(good), good[np.clip(next_pos, None, len(good) - 1)], -1)
    interior = (prev_good >= 0) & (next_good >= 0)
    short = (next_good - prev_good - 1) <= max_gap_steps
    mask = nan & interior & short
    out[mask] = filled[mask]
    return out


def _interpolate(times: np.ndarray, values: np.ndarray, grid: np.ndarray, *, max_gap: float) -> np.ndarray:
    out = np.interp(grid, times, values, left=np.nan, right=np.nan)
    pos = np.searchsorted(times, grid, side="right")
    before = times[np.clip(pos - 1, 0, len(times) - 1)]
    after = times[np.clip(pos, 0, len(times) - 1)]
    exact = np.isin(grid, times)
    too_wide = (after - before > max_gap) & ~exact
    out[too_wide] = np.nan
    return out


def raw_to_history(raw: RawSeries, step_seconds: float | None = None, *, feature: str = "value") -> History:
    """One CSV series on its own (or the given) step, as a one-feature History."""
    step = step_seconds or native_step(raw.times)
    if step <= 0:
        raise SeriesError(f"{raw.name}: needs at least two samples to find its step")
    times, values = to_grid(raw.times, raw.values, step)
    return History(step_seconds=step, times=times, features={feature: values})


def align(
    series: Mapping[str, tuple[np.ndarray, np.ndarray]],
    step_seconds: float,
    *,
    start: float | None = None,
    end: float | None = None,
    max_gap_steps: int = DEFAULT_MAX_GAP_STEPS,
) -> History:
    """Several features (name -> (times, values)) on one grid from the earliest to the latest sample."""
    if not series:
        raise SeriesError("no series to align")
    firsts = [t[0] for t, _ in series.values() if len(t)]
    lasts = [t[-1] for t, _ in series.values() if len(t)]
    if not firsts:
        raise SeriesError("every series is empty")
    lo = min(firsts) if start is None else start
    hi = max(lasts) if end is None else end
    features = {}
    grid = None
    for name, (t, v) in series.items():
        if len(t) == 0:
            features[name] = np.full(grid_points(np.floor(lo / step_seconds), np.floor(hi / step_seconds), 1.0), np.nan)
            continue
        grid, features[name] = to_grid(t, v, step_seconds, start=lo, end=hi, max_gap_steps=max_gap_steps)
    assert grid is not None
    return History(step_seconds=step_seconds, times=grid, features=features)


def resample_history(history: History, step_seconds: float, *, max_gap_steps: int = DEFAULT_MAX_GAP_STEPS) -> History:
    """The same history on another step, ending at the same last grid time.

    Downsampling averages the samples of each new step (the window ending at
    each new grid time); upsampling interpolates. A History already on that
    step is returned unchanged.
    """
    if abs(history.step_seconds - step_seconds) < 1e-9 or len(history) == 0:
        return history
    times = history.times
    last = times[-1]
    if step_seconds > history.step_seconds:
        # bins (t - step, t] ending at the last sample, so the newest sample is used
        n = int(np.floor((last - times[0]) / step_seconds)) + 1
        grid = last - step_seconds * np.arange(n)[::-1]
        idx = np.ceil((times - (grid[0] - step_seconds)) / step_seconds - 1e-9).astype(np.int64) - 1
        feats = {}
        for name, values in history.features.items():
            v = np.asarray(values, dtype=np.float64)
            ok = np.isfinite(v) & (idx >= 0) & (idx < n)
            sums = np.bincount(idx[ok], weights=v[ok], minlength=n)
            counts = np.bincount(idx[ok], minlength=n)
            with np.errstate(invalid="ignore", divide="ignore"):
                feats[name] = fill_gaps(np.where(counts > 0, sums / np.maximum(counts, 1), np.nan), max_gap_steps)
        return History(step_seconds=step_seconds, times=grid, features=feats)
    n = int(np.floor((last - times[0]) / step_seconds)) + 1
    grid = last - step_seconds * np.arange(n)[::-1]
    feats = {}
    for name, values in history.features.items():
        v = np.asarray(values, dtype=np.float64)
        ok = np.isfinite(v)
        if ok.sum() < 2:
            feats[name] = np.full(n, np.nan)
            continue
        feats[name] = _interpolate(times[ok], v[ok], grid, max_gap=history.step_seconds * (max_gap_steps + 1))
    return History(step_seconds=step_seconds, times=grid, features=feats)
